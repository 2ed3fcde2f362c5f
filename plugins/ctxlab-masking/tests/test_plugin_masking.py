"""ctxlab-masking: the last N tool results verbatim, older ones as placeholders; no L2."""

from __future__ import annotations

import asyncio

import pytest
from deepagents.backends import FilesystemBackend
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.runtime import Runtime

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.replay import make_lab_manager, strategies

cm = pytest.importorskip("ctxlab_masking")
from ctxlab_masking import (  # noqa: E402
    MASK_MARKER,
    NoSummaryCutoff,
    ObservationMasking,
    keep_from_env,
    masking_plugins,
)


class _Model(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "test-refuses"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="summary"))])


def output(i: int, chars: int = 2400) -> str:
    line = f"step {i}: tests/test_mod.py::test_case_{i} PASSED in 0.{i:02d}s and the log goes on\n"
    return (line * (chars // len(line) + 1))[:chars]


def history(n_results: int, *, observations: bool = False, big_write: bool = False) -> list[BaseMessage]:
    msgs: list[BaseMessage] = [HumanMessage(content="Fix the failing tests.", id="u0")]
    for i in range(n_results):
        args = {"command": f"pytest -k case_{i}"}
        name = "bash"
        if big_write and i == n_results - 1:
            name, args = "write_file", {"file_path": "/src/mod.py", "content": "x = 1\n" * 1000}
        msgs.append(
            AIMessage(
                content=f"run {i}", id=f"a{i}", tool_calls=[{"name": name, "args": args, "id": f"c{i}"}]
            )
        )
        if observations:
            msgs.append(
                HumanMessage(content=output(i), id=f"o{i}", additional_kwargs={"ctxlab_observation": True})
            )
        else:
            msgs.append(ToolMessage(content=output(i), tool_call_id=f"c{i}", name=name, id=f"t{i}"))
    return msgs


def run(mw, msgs, *, mode="sync"):
    """One model call through ``mw`` with a real ModelRequest; returns (view, result, events)."""
    seen: dict = {}
    events: list = []

    def handler(request):
        seen["view"] = list(request.messages)
        return ModelResponse(result=[AIMessage(content="ok", id="resp")])

    request = ModelRequest(
        model=_Model(),
        messages=list(msgs),
        system_message=SystemMessage(content="You fix code."),
        tools=[],
        state={"messages": list(msgs)},
        runtime=Runtime(context=None, store=None, stream_writer=events.append),
    )
    if mode == "sync":
        result = mw.wrap_model_call(request, handler)
    else:

        async def ahandler(req):
            return handler(req)

        result = asyncio.run(mw.awrap_model_call(request, ahandler))
    return seen["view"], result, [e for e in events if isinstance(e, dict)]


def middleware(tmp_path, plugins, threshold=2.0):
    settings = CompressionSettings(summary_threshold=threshold)
    backend = FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True)
    return CompressionMiddleware(settings=settings, backend=backend, plugins=plugins)


def dump(msgs):
    return [(type(m).__name__, m.id, m.content, getattr(m, "tool_calls", None)) for m in msgs]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_masking_strategy_keeps_exactly_n_results_and_leaves_state_alone(tmp_path, mode):
    msgs = history(14)
    before = dump(msgs)
    mw = middleware(tmp_path, masking_plugins(keep=4))
    view, result, events = run(mw, msgs, mode=mode)

    results = [m for m in view if isinstance(m, ToolMessage)]
    assert len(results) == 14 and len(view) == len(msgs)
    verbatim = [m for m in results if not m.content.startswith(MASK_MARKER)]
    masked = [m for m in results if m.content.startswith(MASK_MARKER)]
    # the last 4 verbatim (not offloaded, although each is above the 300-token limit) ...
    assert [m.id for m in verbatim] == ["t10", "t11", "t12", "t13"]
    assert all(m.content == output(int(m.id[1:])) for m in verbatim)
    # ... the 10 older ones as placeholders that keep their pairing
    assert [m.tool_call_id for m in masked] == [f"c{i}" for i in range(10)]
    assert all("lines" in m.content and m.name == "bash" for m in masked)
    # state unchanged: no Command, the input messages untouched
    assert not isinstance(result, ExtendedModelResponse)
    assert dump(msgs) == before
    completed = [e for e in events if e.get("phase") == "completed"]
    assert completed and completed[-1]["level"] == "L1"
    # no L2 by the strategy's design: a decision, not R13's "no valid cutoff" (no declined summary)
    assert completed[-1]["stats"]["l2_decision"] == "masking strategy: no L2"
    assert "no_cutoff" not in completed[-1]["stats"]
    # nothing offloaded or summarized
    assert not list(tmp_path.rglob("*.txt")) and not list(tmp_path.rglob("*.md"))


def test_text_observations_are_masked_like_tool_messages(tmp_path):
    msgs = history(6, observations=True)
    view, _, _ = run(middleware(tmp_path, masking_plugins(keep=2)), msgs)
    obs = [m for m in view if m.additional_kwargs.get("ctxlab_observation")]
    assert [m.content.startswith(MASK_MARKER) for m in obs] == [True] * 4 + [False] * 2
    assert all(isinstance(m, HumanMessage) for m in obs)


def test_below_the_entry_threshold_nothing_is_masked(tmp_path):
    msgs = history(14)
    view, _, events = run(middleware(tmp_path, masking_plugins(keep=4), threshold=100), msgs)
    assert dump(view) == dump(msgs)
    assert not events


def test_masking_strategy_leaves_tool_call_arguments_whole(tmp_path):
    msgs = history(8, big_write=True)
    view, _, _ = run(middleware(tmp_path, masking_plugins(keep=4)), msgs)
    write = next(m for m in view if isinstance(m, AIMessage) and m.tool_calls[0]["name"] == "write_file")
    assert write.tool_calls[0]["args"]["content"] == "x = 1\n" * 1000


def test_as_a_plain_trimmer_it_composes_with_ars(tmp_path):
    """Without the strategy's protections, ARS offload still shortens large recent results."""
    msgs = history(8)
    view, result, _ = run(middleware(tmp_path, [ObservationMasking(3)], threshold=4.0), msgs)
    assert not isinstance(result, ExtendedModelResponse)  # masked + offloaded view within T2: L1 only
    results = [m for m in view if isinstance(m, ToolMessage)]
    assert all(m.content.startswith(MASK_MARKER) for m in results[:5])
    assert all(m.content.startswith("[ctxlab: tool result offloaded]") for m in results[5:])


def test_masked_copies_are_reused_across_calls(tmp_path):
    msgs = history(8)
    mw = middleware(tmp_path, masking_plugins(keep=2))
    first, _, _ = run(mw, msgs)
    second, _, _ = run(mw, msgs)
    masked_first = [m for m in first if isinstance(m, ToolMessage) and m.content.startswith(MASK_MARKER)]
    masked_second = [m for m in second if isinstance(m, ToolMessage) and m.content.startswith(MASK_MARKER)]
    assert masked_first and all(a is b for a, b in zip(masked_first, masked_second, strict=True))


def test_keep_zero_masks_every_result_and_negative_is_refused(tmp_path):
    view, _, _ = run(middleware(tmp_path, masking_plugins(keep=0)), history(5))
    assert all(m.content.startswith(MASK_MARKER) for m in view if isinstance(m, ToolMessage))
    with pytest.raises(ValueError, match="keep=-1"):
        ObservationMasking(-1)


def test_keep_from_the_environment(monkeypatch):
    monkeypatch.delenv("CTXLAB_MASKING_KEEP", raising=False)
    assert keep_from_env() == 10
    monkeypatch.setenv("CTXLAB_MASKING_KEEP", "3")
    assert keep_from_env() == 3
    assert masking_plugins()[0].keep == 3
    monkeypatch.setenv("CTXLAB_MASKING_KEEP", "many")
    with pytest.raises(ValueError, match="CTXLAB_MASKING_KEEP"):
        keep_from_env()


def test_entry_point_registers_only_the_strategy():
    pm = make_lab_manager(load_entrypoints=True)
    assert pm.get_plugin("masking") is cm  # the entry point names the module: its hook is top-level
    names = {type(p).__name__ for p in pm.get_plugins()}
    assert "ObservationMasking" not in names and "NoSummaryCutoff" not in names
    plugins = strategies(pm)["masking"].factory(CompressionSettings())
    assert [type(p) for p in plugins] == [ObservationMasking, NoSummaryCutoff]
    assert plugins[0].keep == 10 and plugins[0].protect_recent and plugins[0].protect_calls


def test_replay_of_the_masking_strategy(tmp_path):
    """Through the replay engine by name: every call from T on sends N verbatim results."""
    from ctxlab.replay import replay
    from ctxlab.transcripts.base import Transcript

    msgs = [SystemMessage(content="You fix code.", id="s"), *history(12)]
    msgs.append(AIMessage(content="done", id="final"))
    t = Transcript(messages=msgs, source="synthetic", run_id="masking-test", format="test")
    res = replay(
        t, "masking", settings=CompressionSettings(summary_threshold=2.0), out_dir=tmp_path, keep_views=True
    )
    assert not res.errors
    masked_rows = [r for r in res.rows if r["level"] == "L1"]
    assert masked_rows, "the run never reached T"
    keep = 10
    for r in masked_rows:
        view = res.views[(r["transcript"], "masking", r["call_index"])].messages
        results = [m for m in view if isinstance(m, ToolMessage)]
        verbatim = [m for m in results if not m.content.startswith(MASK_MARKER)]
        assert len(verbatim) == min(keep, len(results))
        assert verbatim == results[-len(verbatim) :]
    assert all(r["level"] != "L2" for r in res.rows)
