"""The typed hook façade (ctxlab.core.hooks.CompressionHooks): one method per core hook, calling it
with the right arguments and returning what pluggy returns."""

from __future__ import annotations

import inspect

from langchain_core.messages import AIMessage, HumanMessage

from ctxlab import CompressionSettings, hookimpl, make_plugin_manager
from ctxlab.core import hookspecs
from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.cutoff import CutoffContext, CutoffDecision, SummarizeContext, SummarizeDecision
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.events import make_event
from ctxlab.core.hooks import CompressionHooks
from ctxlab.core.l1 import TrimContext, TrimReport

SETTINGS = CompressionSettings()


def _specs() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in vars(hookspecs).items()
        if name.startswith("ctxlab_") and callable(fn)
    }


def test_every_core_hook_has_a_typed_method_with_its_arguments() -> None:
    specs = _specs()
    assert len(specs) == 8
    for name, spec in specs.items():
        method = getattr(CompressionHooks, name.removeprefix("ctxlab_"))
        params = list(inspect.signature(method).parameters)[1:]  # without self
        assert params == list(spec.parameters), name


class Recorder:
    """Answers every core hook and records the arguments it was called with."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, object]] = {}

    @hookimpl(tryfirst=True)
    def ctxlab_estimate_message(self, message):
        self.seen["estimate_message"] = {"message": message}
        return 42

    @hookimpl(tryfirst=True)
    def ctxlab_estimate_tools(self, tools):
        self.seen["estimate_tools"] = {"tools": tools}
        return 7

    @hookimpl
    def ctxlab_l1_trim(self, view, ctx):
        self.seen["l1_trim"] = {"view": view, "ctx": ctx}
        view[0] = HumanMessage("trimmed")
        return None  # a trimmer with nothing to report

    @hookimpl(tryfirst=True)
    def ctxlab_should_summarize(self, view, ctx):
        self.seen["should_summarize"] = {"view": view, "ctx": ctx}
        return SummarizeDecision(ctx.tokens > 100, f"{ctx.tokens} tokens")

    @hookimpl(tryfirst=True)
    def ctxlab_select_cutoff(self, messages, ctx):
        return CutoffDecision(1, f"{len(messages)} messages")

    @hookimpl(tryfirst=True)
    def ctxlab_get_summarizer(self, model, settings):
        self.seen["get_summarizer"] = {"model": model, "settings": settings}
        return StructuredSummarizer()

    @hookimpl
    def ctxlab_on_event(self, event):
        self.seen["on_event"] = {"event": event}


def test_the_facade_calls_each_hook_and_returns_its_result() -> None:
    rec = Recorder()
    hooks = CompressionHooks(make_plugin_manager([rec]))
    msg = HumanMessage("hello")
    assert hooks.estimate_message(msg) == 42 and rec.seen["estimate_message"]["message"] is msg
    assert hooks.estimate_tools([{"name": "t"}]) == 7
    view = [HumanMessage("long"), AIMessage("ok")]
    ctx = TrimContext(
        settings=SETTINGS, estimate=len, save_tool_result=lambda n, t: "/outputs/x", token_limit=9
    )
    reports = hooks.l1_trim(view, ctx)
    # the recorder reported None (left out); the two built-in trimmers report
    assert sorted(r.trimmer for r in reports) == ["arg-truncation", "tool-result-offload"]
    assert all(isinstance(r, TrimReport) for r in reports) and view[0].content == "trimmed"
    sctx = SummarizeContext(
        tokens=150,
        threshold_tokens=307.2,
        l2_threshold_tokens=122.88,
        keep_messages=1,
        has_previous_summary=False,
        estimate=len,
    )
    assert hooks.should_summarize(view, sctx) == SummarizeDecision(True, "150 tokens")
    assert rec.seen["should_summarize"] == {"view": view, "ctx": sctx}
    decision = hooks.select_cutoff(
        view, CutoffContext(keep_messages=1, has_previous_summary=False, estimate=len, target_tokens=10.0)
    )
    assert decision == CutoffDecision(1, "2 messages")
    assert isinstance(hooks.get_summarizer(None, SETTINGS), StructuredSummarizer)
    assert rec.seen["get_summarizer"] == {"model": None, "settings": SETTINGS}
    event = make_event("started", tokens_before=5)
    assert hooks.on_event(event) is None and rec.seen["on_event"]["event"] is event


def test_firstresult_hooks_answer_none_when_no_plugin_does() -> None:
    hooks = CompressionHooks(make_plugin_manager(defaults=False))
    msg = HumanMessage("hello")
    assert hooks.estimate_message(msg) is None and hooks.estimate_tools([]) is None
    assert hooks.get_summarizer(None, SETTINGS) is None
    sctx = SummarizeContext(
        tokens=500,
        threshold_tokens=1024,
        l2_threshold_tokens=409.6,
        keep_messages=0,
        has_previous_summary=False,
        estimate=len,
    )
    assert hooks.should_summarize([msg], sctx) is None
    # with the defaults, the ARS rule answers: strictly above T2 summarizes (R8)
    ars = CompressionHooks(make_plugin_manager()).should_summarize([msg], sctx)
    assert ars is not None and ars.summarize and ars.reason.startswith("ars:")
    assert hooks.l1_trim([msg], TrimContext(SETTINGS, len, lambda n, t: "", 1)) == []
    # with the defaults, the built-in estimator answers
    assert CompressionHooks(make_plugin_manager()).estimate_message(
        msg
    ) == CharClassEstimator().message_tokens(msg)


def test_resummarize_guard_decides_as_the_full_sum_and_stops_summing_once_the_span_holds_enough() -> None:
    # issue 31: the guard needs the span's tokens only up to its need; its decisions and reasons
    # are those of summing the whole span (the reason of a decline names the whole sum)
    from langchain_core.messages import HumanMessage

    from ctxlab.core.builtin.decision import MIN_GAIN_SHARE, ResummarizeGuard
    from ctxlab.core.cutoff import SummarizeContext

    sizes = [0, 30, 10, 50, 40, 5, 5, 5]  # view[0] is the previous summary
    view = [HumanMessage(content=f"m{i}", id=f"m{i}") for i in range(len(sizes))]
    tokens_of = {m.id: s for m, s in zip(view, sizes, strict=True)}
    guard = ResummarizeGuard()
    for total in (1_030, 1_500, 2_000, 4_000):
        asked: list[str] = []

        def estimate(m: object, asked: list[str] = asked) -> int:
            asked.append(m.id)  # type: ignore[attr-defined]
            return tokens_of[m.id]  # type: ignore[attr-defined]

        ctx = SummarizeContext(
            tokens=total,
            threshold_tokens=1_250,
            l2_threshold_tokens=1_000,
            keep_messages=3,
            has_previous_summary=True,
            estimate=estimate,
        )
        decision = guard.ctxlab_should_summarize(view=view, ctx=ctx)
        span = sizes[1 : len(sizes) - 3]  # what a cutoff could summarize beyond the summary: 130 tokens
        need = MIN_GAIN_SHARE * (total - 1_000)
        if sum(span) < need:
            assert decision is not None and not decision.summarize
            assert decision.reason.startswith(f"resummarize-guard: {sum(span)} tokens of new messages")
            assert asked == ["m1", "m2", "m3", "m4"]
        else:
            assert decision is None
            enough = next(k for k in range(1, len(span) + 1) if sum(span[:k]) >= need)
            assert asked == [f"m{i}" for i in range(1, enough + 1)]
