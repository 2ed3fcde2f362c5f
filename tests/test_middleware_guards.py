"""Guards of a compression round that a history can meet (issue 30, item 7): the request that
overflowed is never sent again as it was — below T too; an L2 whose span *equals* an empty
summary message is attempted (only a smaller one is declined); and during a summarizer outage
every summarized user request stays reachable from the view through the chain of history files.

Real parts: the middleware's own round driven through ``ctxlab.replay.ModelNodeHarness`` (a real
``ModelRequest``, the ``Command`` applied as LangGraph's model node does), real
``FilesystemBackend`` files.  Only the chat models are fakes.
"""

from __future__ import annotations

import re

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.hookspecs import hookimpl


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


class ProviderError(ContextOverflowError):
    """A provider's own overflow exception, with an attribute of its own."""

    def __init__(self, message: str, request_id: str) -> None:
        super().__init__(message)
        self.request_id = request_id


# ------------------------------------------------------------------------------------------------
# the identical resend below T
# ------------------------------------------------------------------------------------------------


def test_below_t_an_overflow_with_nothing_to_shrink_is_not_sent_again(mw_kit, tmp_path, mode):
    # spec: R12, R13 — below T the effective messages are sent; when they overflow and nothing
    # smaller can be built (one user message: no cutoff, nothing to trim), the provider's own
    # error propagates without a second, identical request
    settings = CompressionSettings(summary_threshold=50, summary_keep_messages=2)
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path))
    msgs = [HumanMessage(mw_kit.fill(3000, "FACT-ONLY-REQUEST", seed=3), id="h0")]
    d = mw_kit.Driver(mw, msgs, mode=mode)
    raised = ProviderError("prompt is too long: 250000 tokens > 200000 maximum", "req-1")
    rec = d.round(overflow=lambda n, view, system: raised)
    assert rec["exc"] is raised and rec["exc"].request_id == "req-1"
    assert len(rec["calls"]) == 1, [len(c["messages"]) for c in rec["calls"]]
    assert [e["phase"] for e in mw_kit.ctx_events(rec)][-1] == "failed"
    assert rec["update"] is None and d.event is None


def test_below_t_an_overflow_that_l1_can_shrink_is_retried_once(mw_kit, tmp_path, mode):
    # spec: R12 — the counterpart: below T, an overflow whose L1 view is smaller is retried with it
    settings = CompressionSettings(summary_threshold=50, summary_keep_messages=4)
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path))
    msgs = [
        HumanMessage("Read the log.", id="h0"),
        *mw_kit.tool_pair("c1", "read_log", mw_kit.fill(6000, "FACT-LOG", seed=4), ai_id="a0", tool_id="t0"),
    ]
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(overflow=lambda n, view, system: n == 1)
    assert rec["exc"] is None and len(rec["calls"]) == 2
    retry = rec["calls"][1]["messages"]
    assert "[ctxlab: tool result offloaded]" in mw_kit.text(retry[-1])


# ------------------------------------------------------------------------------------------------
# l2.py: a span *equal* to an empty summary message is summarized
# ------------------------------------------------------------------------------------------------


class FlatEstimate:
    """Every message costs ``tokens``; tool schemas nothing."""

    name = "flat"

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens

    @hookimpl
    def ctxlab_estimate_message(self, message):
        return self.tokens

    @hookimpl
    def ctxlab_estimate_tools(self, tools):
        return 0


def test_a_span_equal_to_an_empty_summary_is_summarized(mw_kit, tmp_path, mode):
    # spec: R8, R10 — "an L2 whose span is smaller than an empty summary message is not
    # attempted": with every message at 60 tokens, a one-message span equals the empty summary
    # (60 tokens) and is summarized; the summary (60 tokens) is not bigger, so it is committed
    settings = CompressionSettings(
        summary_threshold=0.1, summary_keep_messages=1, summary_l2_trigger_ratio=0.4
    )
    summarizer = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(
        settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summarizer, plugins=[FlatEstimate(60)]
    )
    msgs = [HumanMessage("FACT-SPAN first request", id="h0"), AIMessage("noted", id="a0")]
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None
    assert len(summarizer.calls) == 1
    event = rec["update"]["_summarization_event"]
    assert event["cutoff_index"] == 1 and "FACT-SPAN" in mw_kit.text(event["summary_message"])
    assert rec["calls"][0]["messages"][1].id == "a0"


def test_a_span_smaller_than_an_empty_summary_is_not_summarized(mw_kit, tmp_path, mode):
    # the counterpart: a span of 59 tokens against an empty summary of 60 is declined
    settings = CompressionSettings(
        summary_threshold=0.1, summary_keep_messages=1, summary_l2_trigger_ratio=0.4
    )

    class Smaller(FlatEstimate):
        @hookimpl
        def ctxlab_estimate_message(self, message):
            return 59 if getattr(message, "id", None) == "h0" else 60

    summarizer = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(
        settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summarizer, plugins=[Smaller(60)]
    )
    msgs = [HumanMessage("FACT-SPAN first request", id="h0"), AIMessage("noted", id="a0")]
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None and rec["update"] is None and summarizer.calls == []
    stats = mw_kit.ctx_events(rec)[-1]["stats"]
    assert "smaller than an empty summary message" in stats["summary_rejected"]


# ------------------------------------------------------------------------------------------------
# the outage chain: every summarized request is reachable through the chain of history files
# ------------------------------------------------------------------------------------------------

PATH_RE = re.compile(r"/?outputs/conversation_history/[^\s\"'<>()\[\]{}`,;|\\]+")


def files_away(view, root) -> dict[str, int]:
    """Each history file reachable from ``view``, with how many files must be read to get there
    (1: named by the view itself); what a model can read back, one file at a time."""
    depth: dict[str, int] = {}
    frontier = [(p, 1) for p in PATH_RE.findall("\n".join(str(m.content) for m in view))]
    while frontier:
        path, d = frontier.pop(0)
        path = path.lstrip("/").rstrip(".:")
        if path in depth:
            continue
        depth[path] = d
        body = (root / path).read_text(encoding="utf-8")
        frontier += [(p, d + 1) for p in PATH_RE.findall(body)]
    return depth


def test_an_outage_keeps_every_request_reachable_through_the_chain(mw_kit, tmp_path, mode):
    # spec: R10 — four failed summaries in a row: each holds the previous summary's body inline,
    # and its history file holds the previous summary verbatim, which names that one's file.
    # Every summarized request is in the view or in a history file reachable through that chain
    # (docs/middleware.md says so; the request of the first failed round is more than one file
    # away, which is why the docs no longer promise "a history file the summary names")
    settings = CompressionSettings(
        summary_threshold=0.25, summary_keep_messages=2, summary_l2_trigger_ratio=0.4
    )
    summ = mw_kit.FakeSummarizer(sequence=["echo", "raises", "raises", "raises", "raises"])
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summ)
    requests = {}

    def turn(i):
        requests[i] = f"FACT-REQ{i:02d} please handle ticket {i}: " + mw_kit.fill(300, seed=40 + i)
        return [
            HumanMessage(requests[i], id=f"h{i}"),
            AIMessage(mw_kit.fill(300, f"Done {i}.", seed=i), id=f"a{i}"),
        ]

    d = mw_kit.Driver(mw, [m for i in range(3) for m in turn(i)], mode=mode)
    deepest = 0
    for r in range(5):
        if r:
            d.append(*turn(2 + 2 * r), *turn(3 + 2 * r))
        rec = d.round()
        assert rec["exc"] is None and rec["update"], r
        assert (rec["update"]["_summarization_event"]["summary_error"] is None) == (r == 0)
        view = rec["calls"][-1]["messages"]
        depth = files_away(view, tmp_path)
        for i, text in requests.items():
            in_view = any(text in mw_kit.text(m) for m in view)
            where = [d_ for p, d_ in depth.items() if text in (tmp_path / p).read_text(encoding="utf-8")]
            assert in_view or where, (r, i)
            if not in_view:
                deepest = max(deepest, min(where))
    assert deepest >= 3  # after the outage, the earliest requests are several files down the chain
