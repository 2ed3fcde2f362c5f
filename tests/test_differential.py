"""Replay equals a live agent, call by call (issue 10): the differential test.

The same transcript runs twice with the same ``CompressionMiddleware`` settings:

* **live**: ``langchain.agents.create_agent`` with an ``InMemorySaver`` checkpointer, on thread
  ``thread_id_for(label)``; the model is :class:`~ctxlab.replay.RecordedChatModel` (it answers with
  the recorded assistant messages in order and, given a context window, raises
  ``ContextOverflowError`` above it, counted with the same counter as replay's provider
  stand-in); the tools are real ``BaseTool`` objects run by LangGraph's tool node, each returning
  the recorded ``ToolMessage`` of the call's ``tool_call_id``; a user turn ends the agent loop and
  the next turn's messages are the next ``invoke`` on the same thread;
* **replay**: :func:`ctxlab.replay.replay` (``keep_views=True``).

For every model call the test compares what the model received (every request: a refused one
and its retry too, system message and messages), the ``context_compression`` events, and the
state writes of the model node besides the model's answer (``_summarization_event``, the
tail-trimmed messages); at the end, every file the middlewares wrote (history and offloads).

"The same transcript": messages without an id get the ids replay gives them, and the tool schemas
both sides count are the live tools' (``convert_to_openai_tool``), since a live agent's tools are
tool objects.  Only transcripts a live loop can follow are used (tool results answer their calls
in order; an assistant message without tool calls is followed by a user turn or ends the run).

The figures (calls compared, identical) are printed with ``-s``; :data:`FIGURES` holds them.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import pytest
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.middleware import CompressionMiddleware
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import ContextWindow, RecordedChatModel, replay, thread_id_for
from ctxlab.replay.models import ScriptExhaustedError
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import Transcript
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

REPO = Path(__file__).resolve().parents[1]
RAW = REPO.parent / "shared" / "transcripts" / "raw"
#: (format, file, run name or None) — short public runs a live loop can follow
PUBLIC = {
    "mini_swe_agent": (
        "mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-16255/"
        "django__django-16255.traj.json"
    ),
    "swe_agent": (
        "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__xml_sys-env_"
        "window100__t-0.20__p-0.95__c-2.00__install-1/marshmallow-code__marshmallow-1867.traj"
    ),
    "claude_code": "claude-code/snapshot-tests/tests/python-to-rust-port/transcript.jsonl",
    "openhands_eval": "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
}
#: small settings: T = 2,048 tokens, so that short runs reach L1 and L2
SMALL = CompressionSettings(summary_threshold=2, summary_keep_messages=4, summary_tool_result_token_limit=120)
#: settings under which only an overflow compresses (T far above the window)
LARGE = CompressionSettings(summary_threshold=64, summary_keep_messages=4)

#: (case, calls compared, calls identical, overflow refusals, L1 rounds, L2 rounds) per test
CHECKPOINTER: Any = InMemorySaver
FIGURES: list[tuple[str, int, int, int, int, int]] = []


# --- the transcript both sides run ---------------------------------------------------------------


class RecordedTool(BaseTool):
    """A real tool for LangGraph's tool node: it returns the recorded ``ToolMessage`` of the
    ``tool_call_id`` it is called with."""

    results: dict[str, ToolMessage]

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - invoke answers
        raise NotImplementedError

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        if input["id"] not in self.results:  # the recording ends before this result
            raise ScriptExhaustedError(f"no recorded result for tool call {input['id']}")
        return self.results[input["id"]].model_copy(deep=True)


class StopAtTheEnd(AgentMiddleware):
    """Ends the live run before a model call the recording does not have, so that the
    compression middleware does not start a round (and write files) replay never runs."""

    def __init__(self, model: RecordedChatModel) -> None:
        super().__init__()
        self.model = model

    def before_model(self, state: Any, runtime: Any) -> None:
        if self.model.cursor[0] >= len(self.model.answers):
            raise ScriptExhaustedError("the recording ends here")


def live_tools(t: Transcript) -> list[BaseTool]:
    """One tool per name the transcript declares or calls, with its recorded schema when known."""
    results = {m.tool_call_id: m for m in t.messages if isinstance(m, ToolMessage)}
    schemas: dict[str, dict[str, Any]] = {}
    for d in t.tools:
        f = d.get("function", d)
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            schemas[f["name"]] = f
    for m in t.messages:
        for tc in getattr(m, "tool_calls", None) or []:
            schemas.setdefault(tc["name"], {"name": tc["name"]})
    tools: list[BaseTool] = []
    for name, f in schemas.items():
        params = f.get("parameters") or f.get("input_schema") or {"type": "object", "properties": {}}
        tools.append(
            RecordedTool(
                name=name, description=f.get("description") or name, args_schema=params, results=results
            )
        )
    return tools


def prepared(t: Transcript, limit_calls: int | None = None) -> tuple[Transcript, list[BaseTool]]:
    """The transcript both sides run: ids as replay gives them, tool schemas of the live tools,
    cut after ``limit_calls`` model calls."""
    messages: list[BaseMessage] = []
    calls = 0
    for pos, m in enumerate(t.messages):
        if isinstance(m, AIMessage):
            if limit_calls is not None and calls >= limit_calls:
                break
            calls += 1
        messages.append(m if m.id is not None else m.model_copy(update={"id": f"{t.run_id}-{pos}"}))
    tools = live_tools(t)
    return dataclasses.replace(t, messages=messages, tools=[convert_to_openai_tool(x) for x in tools]), tools


def followable(t: Transcript) -> str | None:
    """Why a live loop cannot follow ``t`` (``None``: it can)."""
    rest = t.messages[1:] if t.messages and isinstance(t.messages[0], SystemMessage) else t.messages
    prev: AIMessage | None = None
    pending: list[BaseMessage] = []
    for m in [*rest, None]:
        if m is not None and not isinstance(m, AIMessage):
            pending.append(m)
            continue
        if prev is not None and prev.tool_calls and (pending or m is not None):
            got = [p.tool_call_id if isinstance(p, ToolMessage) else None for p in pending]
            if got != [tc["id"] for tc in prev.tool_calls]:
                return f"results {got} do not answer calls {[tc['id'] for tc in prev.tool_calls]} in order"
        elif any(isinstance(p, ToolMessage) for p in pending):
            return "a tool result without a call before it"
        elif prev is not None and m is not None and not pending:
            return "two assistant messages in a row"
        if m is not None and m.invalid_tool_calls:
            return "invalid tool calls"
        prev, pending = m, []
    return None


# --- the live agent ------------------------------------------------------------------------------


@dataclasses.dataclass
class LiveCall:
    requests: list[list[BaseMessage]]
    events: list[dict[str, Any]]
    update: dict[str, Any]


def run_live(
    t: Transcript,
    tools: list[BaseTool],
    settings: CompressionSettings,
    window: ContextWindow | None,
    root: Path,
) -> list[LiveCall]:
    """``create_agent`` over ``t``: one :class:`LiveCall` per model-node run."""
    system = t.messages[0] if t.messages and isinstance(t.messages[0], SystemMessage) else None
    rest = t.messages[1:] if system is not None else list(t.messages)
    answers = [m for m in rest if isinstance(m, AIMessage)]
    model = RecordedChatModel(answers=answers, window=window)
    mw = CompressionMiddleware(
        settings=settings,
        backend=FilesystemBackend(root_dir=str(root), virtual_mode=True),
        summarizer=StructuredSummarizer(),
        read_tool=False,  # as replay builds it: the recorded agent never had ctxlab's read tool
    )
    agent = create_agent(
        model,
        tools=tools,
        system_prompt=system,
        middleware=[StopAtTheEnd(model), mw],
        checkpointer=CHECKPOINTER(),
    )
    config: Any = {"configurable": {"thread_id": thread_id_for(t.name)}}
    # user turns: the messages before the first assistant message, and those after each
    # assistant message without tool calls (tool results are written by the tool node)
    turns: list[list[BaseMessage]] = [[]]
    for i, m in enumerate(rest):
        if isinstance(m, (AIMessage, ToolMessage)):
            continue
        if i > 0 and isinstance(rest[i - 1], AIMessage):
            turns.append([])
        turns[-1].append(m)
    calls: list[LiveCall] = []
    events: list[dict[str, Any]] = []
    seen = 0
    for turn in turns:
        if len(calls) >= len(answers):
            break
        try:
            for mode, chunk in agent.stream({"messages": turn}, config, stream_mode=["updates", "custom"]):
                if mode == "custom":
                    events.append(chunk)
                elif "model" in chunk:
                    calls.append(LiveCall(model.requests[seen:], events, merged(chunk["model"])))
                    seen, events = len(model.requests), []
        except ScriptExhaustedError:
            break
        except ContextOverflowError as exc:  # the strategy could not fit: the live run fails here
            raise LiveFailure(len(calls), exc) from exc
    return calls


class LiveFailure(Exception):
    """The live run failed at model call ``index`` with ``error``."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(f"call {index}: {error}")
        self.index, self.error = index, error


def merged(update: Any) -> dict[str, Any]:
    """The model node's writes as one dict: LangGraph's ``updates`` stream shows one dict, or a
    list of them when several writes set the same key (the answer and the tail-trimmed
    messages); ``messages`` are concatenated in order, other keys take the last value."""
    out: dict[str, Any] = {}
    for part in update if isinstance(update, list) else [update]:
        for key, value in part.items():
            if key == "messages":
                out["messages"] = [*out.get("messages", []), *(value if isinstance(value, list) else [value])]
            else:
                out[key] = value
    return out


# --- the comparison ------------------------------------------------------------------------------


def replay_update(original: AIMessage, items: list[tuple[str, Any]]) -> dict[str, Any]:
    """A replayed call's writes as LangGraph's ``updates`` stream shows the model node's: the
    model's answer first, then the ``Command`` update (messages appended, other keys set)."""
    out: dict[str, Any] = {"messages": [original]}
    for key, value in items:
        if key == "messages":
            out["messages"] = [*out["messages"], *(value if isinstance(value, list) else [value])]
        else:
            out[key] = value
    return out


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def compare(
    case: str,
    t: Transcript,
    tools: list[BaseTool],
    settings: CompressionSettings,
    window: ContextWindow | None,
) -> tuple[int, int]:
    """Run both sides and assert they are equal call by call; returns (calls, overflow refusals)."""
    with tempfile.TemporaryDirectory() as tmp:
        live_root = Path(tmp) / "live"
        live = run_live(t, tools, settings, window, live_root)
        # the live agent sends the transcript's own system message: no unrecorded prefix here
        # (tests/test_prefix.py checks the block every strategy's request carries)
        result = replay(
            t,
            "ars",
            settings=settings,
            out_dir=Path(tmp) / "replay",
            context_window=window,
            keep_views=True,
            unrecorded_prefix="off",
        )
        label = t.name
        rows = result.rows
        answers = [m for m in t.messages if isinstance(m, AIMessage)]
        assert len(live) == len(rows) == len(answers), (len(live), len(rows), len(answers))
        identical = 0
        for i, (lc, row) in enumerate(zip(live, rows, strict=True)):
            key = (label, "ars", i)
            sent = [
                [*([v.system] if v.system is not None else []), *v.messages] for v in result.requests[key]
            ]
            assert lc.requests == sent, f"{case}: call {i}: the requests differ"
            mine = [
                {k: v for k, v in e.items() if k not in ("transcript", "strategy", "call_index")}
                for e in result.events
                if e["call_index"] == i
            ]
            assert lc.events == mine, f"{case}: call {i}: the events differ"
            assert lc.update == replay_update(answers[i], result.updates[key]), (
                f"{case}: call {i}: state writes"
            )
            assert row["overflow_errors"] == len(lc.requests) - 1
            identical += 1
        assert result.files_dir is not None
        assert files(live_root) == files(result.files_dir), f"{case}: the files written differ"
        refusals = sum(r["overflow_errors"] for r in rows)
        levels = [r["level"] for r in rows]
        FIGURES.append((case, len(rows), identical, refusals, levels.count("L1"), levels.count("L2")))
        print(
            f"{case}: {len(rows)} calls compared, {identical} identical; {refusals} overflow refusals; "
            f"L1 {levels.count('L1')}, L2 {levels.count('L2')}"
        )
        return len(rows), refusals


# --- the cases -----------------------------------------------------------------------------------


def sample() -> Transcript:
    return load_transcripts(SAMPLE_TRANSCRIPT)[0]


def public(fmt: str) -> Transcript:
    path = RAW / PUBLIC[fmt]
    assert path.is_file(), f"shared transcript missing: {path} (../shared must sit beside the repo)"
    loaded = load_transcripts(path)
    assert loaded and loaded[0].format == fmt, [x.format for x in loaded]
    return loaded[0]


def test_sample_without_a_window_equals_a_live_agent() -> None:
    t, tools = prepared(sample())
    assert followable(t) is None
    calls, refusals = compare("sample, defaults", t, tools, CompressionSettings(), None)
    assert calls == 225 and refusals == 0


def test_sample_with_a_24k_window_overflows_as_a_live_agent() -> None:
    t, tools = prepared(sample())
    calls, refusals = compare("sample, 24K window", t, tools, CompressionSettings(), ContextWindow(24_000))
    assert calls == 225 and refusals > 0  # forced compression and tail trimming are reproduced


def test_sample_small_settings_reach_l1_and_l2_like_a_live_agent() -> None:
    t, tools = prepared(sample(), limit_calls=60)
    compare("sample, T=2K, 60 calls", t, tools, SMALL, None)
    assert FIGURES[-1][4] > 0 and FIGURES[-1][5] > 0


@pytest.mark.parametrize("fmt", sorted(PUBLIC))
def test_public_runs_equal_a_live_agent(fmt: str) -> None:
    t, tools = prepared(public(fmt))
    assert followable(t) is None, followable(t)
    compare(f"{fmt}, T=2K", t, tools, SMALL, None)
    assert FIGURES[-1][5] > 0  # L2 reached


#: per format, a window (tokens, tiktoken) that the run overflows and ARS recovers from
WINDOWS = {"claude_code": 3_000, "mini_swe_agent": 4_000, "openhands_eval": 6_500, "swe_agent": 3_000}


@pytest.mark.parametrize("fmt", sorted(PUBLIC))
def test_public_runs_with_overflow_equal_a_live_agent(fmt: str) -> None:
    t, tools = prepared(public(fmt))
    _, refusals = compare(
        f"{fmt}, {WINDOWS[fmt] // 1000}K window", t, tools, LARGE, ContextWindow(WINDOWS[fmt])
    )
    assert refusals > 0


def test_char_class_counter_overflows_alike() -> None:
    t, tools = prepared(public("claude_code"))
    window = ContextWindow(3_000, counter="char-class")
    _, refusals = compare("claude_code, 3K char-class window", t, tools, LARGE, window)
    assert refusals > 0


@pytest.mark.parametrize(("fmt", "tokens"), [("claude_code", 2_000), ("mini_swe_agent", 2_500)])
def test_a_window_too_small_fails_at_the_same_call_as_a_live_agent(
    fmt: str, tokens: int, tmp_path: Path
) -> None:
    t, tools = prepared(public(fmt))
    window = ContextWindow(tokens)
    with pytest.raises(LiveFailure) as live:
        run_live(t, tools, LARGE, window, tmp_path / "live")
    with pytest.raises(ContextOverflowError) as replayed:
        replay(
            t,
            "ars",
            settings=LARGE,
            out_dir=tmp_path / "replay",
            context_window=window,
            unrecorded_prefix="off",
        )
    assert live.value.index > 0  # it failed mid-run, after compressing
    assert str(replayed.value) == str(live.value.error)
    assert any(f"at call {live.value.index} " in n for n in replayed.value.__notes__)
