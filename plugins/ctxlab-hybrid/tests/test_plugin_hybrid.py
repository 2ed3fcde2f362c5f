"""ctxlab-hybrid: masking first; the ARS L2 summary only when the masked view still reaches T."""

from __future__ import annotations

import pytest
from deepagents.backends import FilesystemBackend
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.runtime import Runtime

from ctxlab import CompressionMiddleware, CompressionSettings, hookimpl
from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.replay import make_lab_manager, strategies

pytest.importorskip("ctxlab_masking")
ch = pytest.importorskip("ctxlab_hybrid")
from ctxlab_hybrid import HybridMasking, hybrid_plugins  # noqa: E402
from ctxlab_masking import MASK_MARKER  # noqa: E402

SETTINGS = CompressionSettings(summary_threshold=4.0, summary_keep_messages=4)  # T = 4096, T2 = 1638


class _Model(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "test"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="x"))])


def history(ai_chars: int, n: int = 12) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage(content="Fix the failing parser tests.", id="u0")]
    for i in range(n):
        thought = (f"Step {i}: I read the output and decide what to change next in the parser. " * 40)[
            :ai_chars
        ]
        msgs.append(
            AIMessage(
                content=thought,
                id=f"a{i}",
                tool_calls=[{"name": "bash", "args": {"cmd": f"t{i}"}, "id": f"c{i}"}],
            )
        )
        body = (f"case {i} line PASSED with a long explanation of what happened in the run\n" * 40)[:2400]
        msgs.append(ToolMessage(content=body, tool_call_id=f"c{i}", name="bash", id=f"t{i}"))
    return msgs


def run(tmp_path, msgs, *, keep=2, overflow_first=False):
    mw = CompressionMiddleware(
        settings=SETTINGS,
        backend=FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True),
        summarizer=StructuredSummarizer(),
        plugins=hybrid_plugins(SETTINGS, keep=keep),
    )
    views: list[list[BaseMessage]] = []
    events: list[dict] = []

    def handler(request):
        views.append(list(request.messages))
        if overflow_first and len(views) == 1:
            raise ContextOverflowError("prompt is too long (injected)")
        return ModelResponse(result=[AIMessage(content="ok", id="resp")])

    request = ModelRequest(
        model=_Model(),
        messages=list(msgs),
        system_message=SystemMessage(content="You fix code."),
        tools=[],
        state={"messages": list(msgs)},
        runtime=Runtime(context=None, store=None, stream_writer=events.append),
    )
    result = mw.wrap_model_call(request, handler)
    completed = [e for e in events if isinstance(e, dict) and e.get("phase") == "completed"]
    return views, result, completed[-1] if completed else None


def test_masking_is_enough_between_t2_and_t(tmp_path):
    views, result, completed = run(tmp_path, history(ai_chars=500))
    assert not isinstance(result, ExtendedModelResponse)  # no summary, state unchanged
    assert completed["level"] == "L1"
    assert completed["stats"]["tokens_l1"] > SETTINGS.l2_threshold_tokens  # ARS alone would summarize
    assert completed["stats"]["l2_decision"].startswith("hybrid: masking is enough")
    results = [m for m in views[-1] if isinstance(m, ToolMessage)]
    assert sum(m.content.startswith(MASK_MARKER) for m in results) == 10


def test_summary_when_masking_is_not_enough(tmp_path):
    views, result, completed = run(tmp_path, history(ai_chars=1800))
    assert isinstance(result, ExtendedModelResponse)
    event = result.command.update["_summarization_event"]
    assert completed["level"] == "L2" and event["cutoff_index"] > 0
    view = views[-1]
    assert view[0].additional_kwargs.get("lc_source") == "summarization"
    assert "Task:" in view[0].content
    kept = view[1:]
    assert len(kept) >= SETTINGS.summary_keep_messages


def test_overflow_of_a_view_within_t2_forces_the_ars_summary(tmp_path):
    views, result, completed = run(tmp_path, history(ai_chars=100), overflow_first=True)
    assert len(views) == 2 and views[0][0].id == "u0"  # the masked view first, then the retry
    assert isinstance(result, ExtendedModelResponse)
    assert completed["level"] == "L2" and completed["forced_by_overflow"]
    assert views[-1][0].additional_kwargs.get("lc_source") == "summarization"


def test_overflow_of_a_view_between_t2_and_t_forces_the_ars_summary(tmp_path):
    _views, result, completed = run(tmp_path, history(ai_chars=500), overflow_first=True)
    assert isinstance(result, ExtendedModelResponse)
    assert completed["level"] == "L2" and completed["forced_by_overflow"]


def test_strategy_builds_the_hybrid_plugin():
    pm = make_lab_manager(load_entrypoints=True)
    assert not any(isinstance(p, HybridMasking) for p in pm.get_plugins())
    (plugin,) = strategies(pm)["hybrid"].factory(SETTINGS)
    assert isinstance(plugin, HybridMasking) and plugin.keep == 10


def test_the_decision_weighs_the_whole_masked_request(tmp_path):
    # spec: R8, R16 — the hybrid's L2 decision is the ctxlab_should_summarize hook: it is given
    # the masked L1 view and the estimate of the whole request (system message and tool schemas
    # count), not a cached estimate of the masked messages alone
    msgs = history(ai_chars=500)
    seen = []

    class Spy:
        name = "spy"

        @hookimpl(tryfirst=True)
        def ctxlab_should_summarize(self, view, ctx):
            masked = sum(m.content.startswith(MASK_MARKER) for m in view if isinstance(m, ToolMessage))
            seen.append((masked, ctx.tokens))

    for system_chars, summarized in ((20, False), (9000, True)):
        mw = CompressionMiddleware(
            settings=SETTINGS,
            backend=FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True),
            summarizer=StructuredSummarizer(),
            plugins=[*hybrid_plugins(SETTINGS, keep=2), Spy()],
        )
        events: list[dict] = []
        request = ModelRequest(
            model=_Model(),
            messages=list(msgs),
            system_message=SystemMessage(content=("You fix code. " * 700)[:system_chars]),
            tools=[],
            state={"messages": list(msgs)},
            runtime=Runtime(context=None, store=None, stream_writer=events.append),
        )
        result = mw.wrap_model_call(
            request, lambda r: ModelResponse(result=[AIMessage(content="ok", id="resp")])
        )
        assert isinstance(result, ExtendedModelResponse) is summarized
        decision = next(e for e in events if e["phase"] == "completed")["stats"]["l2_decision"]
        assert decision.startswith("hybrid: masking is enough") is not summarized
    assert [masked for masked, _ in seen] == [10, 10]  # the decision saw the masked view
    assert seen[0][1] < SETTINGS.entry_threshold_tokens <= seen[1][1]
