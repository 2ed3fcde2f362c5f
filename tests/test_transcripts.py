"""Tests of ctxlab.transcripts against the public transcript set and crafted bad input.

The expected numbers come from ``tests/transcript_counts.json``, written by
``tests/count_raw.py`` (plain json/regex on the raw files, independent of the loaders).
The public set must be present at ``<repo>/../shared/transcripts/raw``: when it is missing the
tests FAIL (they never skip).
"""

from __future__ import annotations

import json
import re
import shutil
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pluggy
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab.core.hookspecs
from ctxlab.core.hookspecs import hookimpl
from ctxlab.transcripts import (
    OBSERVATION_KEY,
    Transcript,
    TranscriptError,
    TranscriptWarning,
    available_formats,
    detect_format,
    formats_plugin,
    iter_transcript_files,
    load_many,
    load_transcripts,
)

REPO = Path(__file__).resolve().parents[1]
RAW = (REPO / ".." / "shared" / "transcripts" / "raw").resolve()
ALL_COUNTS: dict[str, Any] = json.loads(Path(__file__).with_name("transcript_counts.json").read_text())
COUNTS: dict[str, Any] = ALL_COUNTS["raw"]
FILES = sorted(COUNTS)

#: formats whose sources record tool-call ids (the rest have none, or ids made up by the loader)
FORMATS_WITH_IDS = {
    "swe_agent",
    "openhands_events",
    "openhands_eval",
    "openai_chat",
    "litellm_log",
    "tau_bench",
    "claude_code",
    "deer_flow",
    "agent_tars_events",
}
ALL_FORMATS = FORMATS_WITH_IDS | {
    "mini_swe_agent",
    "opencode_md",
    "agent_tars_request",
    "agent_tars_session",
    "codex_rollout",
    "aider_history",
    "gemini_cli",
    "anthropic_messages",
    "cline_task",
    "openai_responses",
    "kimi_cli",
    "inspect_eval",
    "sharegpt",
    "openhands_resolver",
    "langchain_messages",
    "opencode_storage",
    "generic_messages",
    # issue 29
    "gemini_contents",
    "claude_stream_json",
    "codex_exec_json",
    "gemini_json_output",
    "atif",
    "pydantic_ai",
    "smolagents_memory",
    "specstory_md",
    "openhands_v1",
}


def _require_raw() -> Path:
    if not RAW.is_dir():
        pytest.fail(
            f"public transcript set not found at {RAW} (expected <repo>/../shared/transcripts/raw); "
            "these tests need it and must not be skipped",
            pytrace=False,
        )
    return RAW


@pytest.fixture(scope="session")
def pm() -> pluggy.PluginManager:
    manager = pluggy.PluginManager("ctxlab")
    manager.add_hookspecs(ctxlab.core.hookspecs)
    manager.register(formats_plugin)
    return manager


@pytest.fixture(scope="session")
def loaded(pm: pluggy.PluginManager) -> dict[str, list[Transcript]]:
    """Every raw file loaded once with auto-detection (rel path -> transcripts)."""
    raw = _require_raw()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        out = {rel: load_transcripts(raw / rel, pm=pm) for rel in FILES}
    # the doubts in the public set: a SWE-agent history that stops before its final call, and two
    # DeerFlow runs whose coordinator's hand-off call has no result (the next agent answers
    # instead): said by the one pairing check of every format (s40 trial item 5)
    assert sorted(str(w.message).rsplit("/", 1)[1][:45] for w in said) == [
        "6e44b9__sweagenttestrepo-1c2844.traj: history",
        "china-food-delivery.txt: tool call 'call_33d7",
        "rag.txt: tool call 'call_o21h2oqmfs95n3hfxlmh",
    ]
    return out


def _stats(t: Transcript) -> dict[str, int]:
    calls: list[str | None] = []
    seen: set[str | None] = set()
    answered: set[str] = set()
    pairs = orphans = 0
    for m in t.messages:
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                calls.append(c["id"])
                seen.add(c["id"])
        elif isinstance(m, ToolMessage):
            if m.tool_call_id in seen:
                pairs += 1
                answered.add(m.tool_call_id)
            else:
                orphans += 1
    return {
        "messages": len(t.messages),
        "tool_calls": len(calls),
        "pairs": pairs,
        "orphan_results": orphans,
        "unanswered_calls": sum(1 for c in calls if c not in answered),
        "observations": len(t.observations),
    }


# --- the public set -----------------------------------------------------------------------------


def test_public_set_is_present_and_fully_counted() -> None:
    raw = _require_raw()
    found = [p.relative_to(raw).as_posix() for p in iter_transcript_files(raw)]
    assert found == FILES, "tests/transcript_counts.json is stale: rerun tests/count_raw.py"
    assert len(FILES) == 39  # the 44 files of SOURCES.md minus the 5 withdrawn agent-tars files


def test_stored_counts_are_reproducible() -> None:
    _require_raw()
    import importlib.util

    spec = importlib.util.spec_from_file_location("count_raw", Path(__file__).with_name("count_raw.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.count_sets() == ALL_COUNTS


@pytest.mark.parametrize("rel", FILES)
def test_file_loads_with_expected_format(rel: str, loaded: dict[str, list[Transcript]], pm: Any) -> None:
    expected = COUNTS[rel]["format"]
    transcripts = loaded[rel]
    assert transcripts, rel
    assert {t.format for t in transcripts} == {expected}
    assert detect_format(RAW / rel, pm=pm) == expected
    assert all(t.source == str(RAW / rel) for t in transcripts)


@pytest.mark.parametrize("rel", FILES)
def test_counts_match_independent_count(rel: str, loaded: dict[str, list[Transcript]]) -> None:
    got = {t.run_id: _stats(t) for t in loaded[rel]}
    assert got == COUNTS[rel]["runs"]


@pytest.mark.parametrize("rel", FILES)
def test_messages_are_well_formed(rel: str, loaded: dict[str, list[Transcript]]) -> None:
    for t in loaded[rel]:
        ids = [m.id for m in t.messages]
        assert ids == [f"{t.run_id}-{i}" for i in range(len(t.messages))]
        for i, m in enumerate(t.messages):
            assert isinstance(m, SystemMessage | HumanMessage | AIMessage | ToolMessage)
            assert isinstance(m.content, str | list)
            if isinstance(m, AIMessage):
                for call in m.tool_calls:
                    assert isinstance(call["name"], str) and call["name"]
                    assert isinstance(call["args"], dict)
                    assert call["type"] == "tool_call"
            if isinstance(m, ToolMessage):
                assert m.name, f"{t.name} message {i}: ToolMessage without a tool name"
            marked = bool(m.additional_kwargs.get(OBSERVATION_KEY))
            assert marked == (i in t.observations)
            if marked:
                assert isinstance(m, HumanMessage)


@pytest.mark.parametrize("rel", FILES)
def test_no_orphan_tool_results(rel: str, loaded: dict[str, list[Transcript]]) -> None:
    """Every ToolMessage answers a call of an earlier AIMessage (the counted orphans are 0)."""
    for t in loaded[rel]:
        assert COUNTS[rel]["runs"][t.run_id]["orphan_results"] == 0
        calls: set[str | None] = set()
        for m in t.messages:
            if isinstance(m, AIMessage):
                calls.update(c["id"] for c in m.tool_calls)
            elif isinstance(m, ToolMessage):
                assert m.tool_call_id in calls, f"{t.name}: orphan result {m.id}"
        if t.format not in FORMATS_WITH_IDS:
            assert t.format in {"mini_swe_agent", "opencode_md"}


def test_sanity_against_sources_md(loaded: dict[str, list[Transcript]]) -> None:
    tau = loaded["tau-bench/historical_trajectories/gpt-4o-airline.json"]
    assert len(tau) == 200  # 50 tasks x 4 trials
    assert sum(len(t.messages) for t in tau) == 5308
    assert len({t.run_id for t in tau}) == 200
    assert Counter(t.metadata["task_id"] for t in tau) == dict.fromkeys(range(50), 4)

    mini = {rel.rsplit("/", 1)[1]: ts[0] for rel, ts in loaded.items() if rel.startswith("mini-swe-agent/")}
    assert len(mini["django__django-16255.traj.json"].messages) == 36
    assert len(mini["django__django-13297.traj.json"].messages) == 192
    assert len(mini["psf__requests-1142.traj.json"].messages) == 144
    biggest = max(len(m.content) for m in mini["psf__requests-1142.traj.json"].messages)
    assert biggest == 868_167  # "largest single tool output" of file 22

    swe = loaded[
        "swe-agent/tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__"
        "p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj"
    ][0]
    assert len(swe.messages) == 26  # 26 history msgs

    oh = loaded["openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"]
    assert [t.metadata["events"] for t in oh] == [49, 70, 103]
    assert [t.run_id for t in oh] == ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]

    deer = {rel.rsplit("/", 1)[1]: ts[0] for rel, ts in loaded.items() if rel.startswith("deer-flow/")}
    assert len(deer["china-food-delivery.txt"].messages) == 25
    assert len(deer["rag.txt"].messages) == 19  # the interrupt prompt is not a message
    assert deer["rag.txt"].metadata["events"] == {
        "message_chunk": 3232,
        "tool_call_chunks": 135,
        "tool_calls": 12,
        "tool_call_result": 5,
        "interrupt": 1,
    }
    longest = max(
        len(m.content) for m in deer["china-food-delivery.txt"].messages if isinstance(m, ToolMessage)
    )
    assert longest == 40_190

    tars = next(ts[0] for rel, ts in loaded.items() if rel.startswith("agent-tars/"))
    kinds = Counter(type(m).__name__ for m in tars.messages)
    assert kinds == {"HumanMessage": 1, "AIMessage": 7, "ToolMessage": 7}  # not the "is finished" message

    oc = {rel.rsplit("/", 1)[1]: ts[0] for rel, ts in loaded.items() if rel.startswith("opencode/")}
    assert oc["session-ses_434e.md"].metadata["turns"] == 13 + 15
    assert (
        sum(len(m.tool_calls) for m in oc["session-ses_434e.md"].messages if isinstance(m, AIMessage)) == 19
    )
    calls = [
        c["name"]
        for m in oc["session-ses_4313.md"].messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]
    assert Counter(calls) == {"bash": 55, "read": 24, "edit": 14, "write": 11, "todowrite": 10}


def test_text_is_kept_faithfully(loaded: dict[str, list[Transcript]]) -> None:
    raw = _require_raw()
    rel = "mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-21930/sympy__sympy-21930.traj.json"
    source = json.loads((raw / rel).read_text())
    t = loaded[rel][0]
    assert [m.content for m in t.messages] == [m["content"] for m in source["messages"]]
    # observations: every user message after the first assistant message, nothing else
    roles = [m["role"] for m in source["messages"]]
    first_ai = roles.index("assistant")
    assert t.observations == [i for i, r in enumerate(roles) if r == "user" and i > first_ai]
    assert t.model == "google/gemini-3-pro-preview"
    assert t.metadata["exit_status"] == "Submitted"

    rel = "tau-bench/historical_trajectories/gpt-4o-airline.json"
    source = json.loads((raw / rel).read_text())
    for run, t in zip(source[:20], loaded[rel][:20], strict=True):
        assert [m.content for m in t.messages] == [m["content"] or "" for m in run["traj"]]


def test_claude_code_merges_streamed_turns(loaded: dict[str, list[Transcript]]) -> None:
    t = loaded["claude-code/snapshot-tests/tests/coverage-test-fix/transcript.jsonl"][0]
    first_ai = t.messages[1]
    assert isinstance(first_ai, AIMessage)
    assert first_ai.content == "I'll start by exploring the codebase to understand its structure."
    assert [c["name"] for c in first_ai.tool_calls] == ["Glob"]
    two_reads = t.messages[3]
    assert [c["name"] for c in two_reads.tool_calls] == ["Read", "Read"]
    assert all(isinstance(m, ToolMessage) for m in t.messages[4:6])
    assert t.model == "claude-opus-4-5-20251101"
    assert t.metadata["sessionId"] == "c64cc478-3430-40fe-8e9c-4ee9986e9754"
    assert any(m.additional_kwargs.get("is_meta") for m in t.messages)  # stop-hook feedback
    assert any(getattr(m, "status", None) == "error" for m in t.messages)  # is_error result


def test_deer_flow_stitches_tool_call_chunks(loaded: dict[str, list[Transcript]]) -> None:
    t = loaded["deer-flow/web/public/replay/rag.txt"][0]
    handoff = t.messages[1]
    assert handoff.tool_calls == [
        {
            "name": "handoff_to_planner",
            "args": {"task_title": "奔驰汽车如何换玻璃水", "locale": "zh-CN"},
            "id": "call_o21h2oqmfs95n3hfxlmhvqkh",
            "type": "tool_call",
        }
    ]
    assert t.messages[2].content.startswith('{\n    "locale": "zh-CN"')  # the planner's JSON plan
    # the human-feedback prompt is not a model call: kept in metadata, not as a message
    assert t.metadata["interrupts"] == [
        {
            "id": "human_feedback:21b90fc3-9880-8d69-bee9-864b63211427",
            "content": "Please Review the Plan.",
            "options": [
                {"text": "Edit plan", "value": "edit_plan"},
                {"text": "Start research", "value": "accepted"},
            ],
        }
    ]
    assert not any(m.additional_kwargs.get("deerflow_event") for m in t.messages)
    assert "Please Review the Plan." not in [m.content for m in t.messages]


def test_swe_agent_function_calling_pairs(loaded: dict[str, list[Transcript]]) -> None:
    rel = next(r for r in FILES if "6e44b9" in r)
    t = loaded[rel][0]
    assert t.model == "gpt-4o"
    tools = [m for m in t.messages if isinstance(m, ToolMessage)]
    assert [m.name for m in tools] == ["find_file", "open", "edit", "bash"]
    assert t.messages[2].tool_calls[0]["args"] == {"file_name": "missing_colon.py"}
    assert t.metadata["exit_status"] == "submitted"


def test_load_time_of_whole_set(pm: Any) -> None:
    raw = _require_raw()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TranscriptWarning)
        transcripts, errors = load_many(raw, pm=pm)
    elapsed = time.perf_counter() - start
    assert errors == []
    assert len(transcripts) == sum(len(v["runs"]) for v in COUNTS.values()) == 240
    assert elapsed < 30, f"loading the public set took {elapsed:.1f}s"


# --- formats and plugins ------------------------------------------------------------------------


def test_available_formats(pm: Any) -> None:
    formats = available_formats(pm)
    assert set(formats) == ALL_FORMATS
    assert list(formats)[-2:] == ["openai_chat", "generic_messages"]  # the most generic shapes last
    assert set(available_formats()) >= ALL_FORMATS  # default manager (or its fallback)


def test_plugin_format_is_registered_and_sniffed_first(tmp_path: Path) -> None:
    class Lines:
        name = "lines"
        description = "one user message per line"

        def sniff(self, path: Path, head: str) -> bool:
            return path.suffix == ".lines"

        def load(self, path: Path) -> list[Transcript]:
            msgs = [HumanMessage(line, id=f"x-{i}") for i, line in enumerate(path.read_text().splitlines())]
            return [Transcript(messages=msgs, source=str(path), run_id=path.name, format=self.name)]

    class Plugin:
        @hookimpl
        def ctxlab_register_transcript_formats(self, register: Any) -> None:
            register(Lines())

    manager = pluggy.PluginManager("ctxlab")
    manager.add_hookspecs(ctxlab.core.hookspecs)
    manager.register(formats_plugin)
    manager.register(Plugin())
    assert next(iter(available_formats(manager))) == "lines"
    f = tmp_path / "a.lines"
    f.write_text("hello\nworld\n")
    [t] = load_transcripts(f, pm=manager)
    assert t.format == "lines" and len(t.messages) == 2
    # a manager without formats_plugin still gets the built-ins
    bare = pluggy.PluginManager("ctxlab")
    bare.add_hookspecs(ctxlab.core.hookspecs)
    bare.register(Plugin())
    assert set(available_formats(bare)) == ALL_FORMATS | {"lines"}


def test_format_can_be_named(tmp_path: Path, pm: Any) -> None:
    f = tmp_path / "chat.data"
    f.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
    [t] = load_transcripts(f, format="openai_chat", pm=pm)
    assert [type(m) for m in t.messages] == [HumanMessage, AIMessage]
    with pytest.raises(TranscriptError, match=r"unknown format 'nope'"):
        load_transcripts(f, format="nope", pm=pm)


def test_openai_chat_legacy_function_call_and_raw_args(tmp_path: Path, pm: Any) -> None:
    msgs = [
        {"content": "sys", "role": "system"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
        },
        {"role": "function", "name": "weather", "content": "rain"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    ]
    f = tmp_path / "x.json"
    f.write_text(json.dumps(msgs))
    [t] = load_transcripts(f, pm=pm)
    assert t.format == "openai_chat"
    assert t.messages[1].content == "weather?"
    fc = t.messages[2].tool_calls[0]
    assert fc["name"] == "weather" and fc["args"] == {"city": "Oslo"}
    assert t.messages[3].tool_call_id == fc["id"] and t.messages[3].name == "weather"
    assert t.messages[4].tool_calls[0]["args"] == {"_raw": "{not json"}
    assert t.messages[5].name == "f"
    assert isinstance(t.messages[5].content, list) and len(t.messages[5].content) == 2


def test_agent_tars_request_snapshot_f11(tmp_path: Path, pm: Any) -> None:
    body = {
        "provider": "volcengine",
        "baseURL": "https://example.invalid/api/v3",
        "request": {
            "model": "ep-1",
            "messages": [
                {"role": "system", "content": "You are an agent"},
                {"role": "user", "content": "调研一下"},
                {"role": "assistant", "content": "searching"},
                {"role": "system", "content": "Current plan status:\n1. search"},
                {"role": "user", "content": 'Tool: web-search\nResult:\n{"results": []}'},
            ],
            "temperature": 0,
            "stream": True,
        },
    }
    loop = tmp_path / "loop-1"
    loop.mkdir()
    f = loop / "llm-request.jsonl"
    f.write_text(json.dumps(body, ensure_ascii=False, indent=2))
    [t] = load_transcripts(f, pm=pm)
    assert t.format == "agent_tars_request" and t.model == "ep-1"
    assert t.observations == [4]
    assert not t.messages[1].additional_kwargs


def test_agent_tars_session_f12(tmp_path: Path, pm: Any) -> None:
    def req(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "type": "request",
            "id": "r",
            "timestamp": 1,
            "data": {
                "provider": "volcengine",
                "baseURL": "https://example.invalid/api/v3",
                "request": {"model": "doubao", "messages": messages, "tools": []},
            },
        }

    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    call = {"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": '{"q": "x"}'}}
    second = [
        *first,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "found"},
    ]
    session = {
        "agent": {"name": "Agent TARS"},
        "sessionId": "session_1",
        "timestamp": 1,
        "history": [
            req(first),
            {
                "type": "response",
                "data": {"response": {"choices": [{"message": {"content": "", "tool_calls": [call]}}]}},
            },
            req(second),
            {
                "type": "response",
                "data": {"response": {"choices": [{"message": {"role": "assistant", "content": "done"}}]}},
            },
        ],
    }
    f = tmp_path / "session_1.json"
    f.write_text(json.dumps(session))
    [t] = load_transcripts(f, pm=pm)
    assert t.format == "agent_tars_session"
    assert [type(m).__name__ for m in t.messages] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert t.messages[3].name == "web_search" and t.messages[-1].content == "done"
    assert t.metadata["requests"] == 2


def test_agent_tars_events_as_json_lines(tmp_path: Path, pm: Any) -> None:
    events = [
        {"id": "1", "type": "user_message", "timestamp": 1, "content": "hi"},
        {
            "id": "2",
            "type": "assistant_message",
            "timestamp": 2,
            "content": "",
            "toolCalls": [
                {"id": "t1", "type": "function", "function": {"name": "web-search", "arguments": "{}"}}
            ],
        },
        {
            "id": "3",
            "type": "tool_result",
            "timestamp": 3,
            "toolCallId": "t1",
            "name": "web-search",
            "content": {"n": 1},
        },
    ]
    f = tmp_path / "event-stream.jsonl"
    f.write_text("\n".join(json.dumps(e) for e in events))
    [t] = load_transcripts(f, pm=pm)
    assert t.format == "agent_tars_events"
    assert t.messages[2].content == '{"n": 1}' and t.messages[2].tool_call_id == "t1"


def test_shape_fallback_for_unsniffable_json(tmp_path: Path, pm: Any) -> None:
    """A big LiteLLM log whose telling keys lie beyond the 64 KiB head is found by its shape."""
    big = "x" * 70_000
    log = {
        "messages": [{"role": "system", "content": [{"type": "text", "text": big}]}],
        "tools": [],
        "kwargs": {},
        "context_window": 1,
        "response": {"model": "m", "choices": [{"message": {"role": "assistant", "content": "ok"}}]},
    }
    f = tmp_path / "call.json"
    f.write_text(json.dumps(log))
    [t] = load_transcripts(f, pm=pm)
    assert t.format == "litellm_log" and t.messages[0].content == big and t.messages[-1].content == "ok"


# --- bad input ----------------------------------------------------------------------------------


def _copy(rel: str, dest: Path) -> Path:
    target = dest / Path(rel).name
    shutil.copyfile(_require_raw() / rel, target)
    target.chmod(0o644)
    return target


SWE_TRAJ = next(r for r in FILES if r.endswith("networking_1.traj"))
CLAUDE = "claude-code/snapshot-tests/tests/hello-world-script/transcript.jsonl"
OH_EVAL = "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"


def test_truncated_json_names_file_and_place(tmp_path: Path, pm: Any) -> None:
    f = _copy(SWE_TRAJ, tmp_path)
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(TranscriptError) as err:
        load_transcripts(f, pm=pm)
    msg = str(err.value)
    assert msg.startswith(f"{f}: line ")
    assert re.search(r": line \d+ column \d+ \(char \d+\): invalid JSON \(truncated file\?\)", msg), msg
    # the same through the shape fallback (nothing sniffs a plain .json object)
    g = tmp_path / "unknown.json"
    g.write_text('{"a": [1, 2,')
    with pytest.raises(
        TranscriptError, match=r"unknown\.json: line 1 column \d+ \(char \d+\): invalid JSON \(truncated"
    ):
        load_transcripts(g, pm=pm)
    # a message that names its place last says it (json's ends on "... starting at")
    h = tmp_path / "cut.json"
    h.write_text('{"messages": [{"content": "abc', encoding="utf-8")
    with pytest.raises(TranscriptError) as cut:
        load_transcripts(h, pm=pm)
    assert str(cut.value).endswith(
        "invalid JSON (truncated file?): Unterminated string starting at line 1 column 27"
    )


def test_empty_file(tmp_path: Path, pm: Any) -> None:
    f = tmp_path / "empty.json"
    f.write_text("")
    with pytest.raises(TranscriptError, match=r"empty\.json: byte 0: empty file"):
        load_transcripts(f, pm=pm)
    g = tmp_path / "blank.traj"
    g.write_text("  \n\n")
    with pytest.raises(TranscriptError, match=r"blank\.traj: byte 0: empty file"):
        load_transcripts(g, pm=pm)
    # in a folder: skipped and listed like the other files that are no transcript (s39 trial: an
    # empty file stopped the run while a binary one was skipped), the others replayed
    from ctxlab.transcripts import load_many

    good = _copy(SWE_TRAJ, tmp_path)
    skipped: list[TranscriptError] = []
    with pytest.warns(TranscriptWarning, match="skipped 2 file"):
        loaded, errors = load_many([tmp_path], pm=pm, skipped=skipped)
    assert [t.source for t in loaded] == [str(good)] and errors == []
    assert sorted(Path(e.path).name for e in skipped) == ["blank.traj", "empty.json"]


def test_binary_file(tmp_path: Path, pm: Any) -> None:
    f = tmp_path / "image.png"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(TranscriptError, match=r"image\.png: byte 8: binary file"):
        load_transcripts(f, pm=pm)
    g = tmp_path / "latin1.txt"
    g.write_bytes("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(TranscriptError, match=r"latin1\.txt: byte 3: binary file \(not valid UTF-8\)"):
        load_transcripts(g, pm=pm)


def test_unknown_json_shape(tmp_path: Path, pm: Any) -> None:
    f = tmp_path / "shape.json"
    f.write_text(json.dumps({"foo": 1, "bar": [1, 2]}))
    with pytest.raises(TranscriptError) as err:
        load_transcripts(f, pm=pm)
    assert str(err.value).startswith(
        f"{f}: top level (byte 0): unknown JSON shape: an object with keys ['foo', 'bar']; "
        "no OpenAI- or Anthropic-style message list at any depth; name the format with format=NAME "
        "(--format NAME"
    )
    assert "docs/transcripts.md" in str(err.value)
    g = tmp_path / "list.json"
    g.write_text("[]")
    with pytest.raises(
        TranscriptError, match=r"list\.json: top level \(byte 0\): unknown JSON shape: an empty list"
    ):
        load_transcripts(g, pm=pm)


def test_unknown_text_format(tmp_path: Path, pm: Any) -> None:
    f = tmp_path / "prose.txt"
    f.write_text("Just some prose.\nNot a transcript.\n")
    with pytest.raises(TranscriptError, match=r"prose\.txt: byte 0: unknown transcript format") as err:
        load_transcripts(f, pm=pm)
    assert "format=NAME (--format NAME" in str(err.value) and "docs/transcripts.md" in str(err.value)


def test_jsonl_bad_line(tmp_path: Path, pm: Any) -> None:
    f = _copy(CLAUDE, tmp_path)
    lines = f.read_text().split("\n")
    lines[4] = lines[4][: len(lines[4]) // 2]
    f.write_text("\n".join(lines))
    with pytest.raises(TranscriptError, match=r"transcript\.jsonl: line 5 column \d+: invalid JSON line"):
        load_transcripts(f, pm=pm)
    g = _copy(OH_EVAL, tmp_path)
    lines = g.read_text().split("\n")
    lines[1] = "{oops"
    g.write_text("\n".join(lines))
    with pytest.raises(TranscriptError, match=r"output\.jsonl: line 2 column 2: invalid JSON line"):
        load_transcripts(g, pm=pm)


def test_sse_bad_data_line(tmp_path: Path, pm: Any) -> None:
    f = tmp_path / "replay.txt"
    f.write_text(
        'event: message_chunk\ndata: {"id": "a", "role": "user", "content": "hi"}\n\n'
        'event: message_chunk\ndata: {"id": "b", "role": "assis\n'
    )
    with pytest.raises(TranscriptError, match=r"replay\.txt: line 5: data is not valid JSON"):
        load_transcripts(f, pm=pm)


def test_bad_key_path(tmp_path: Path, pm: Any) -> None:
    f = _copy(SWE_TRAJ, tmp_path)
    data = json.loads(f.read_text())
    del data["history"][3]["role"]
    f.write_text(json.dumps(data))
    with pytest.raises(TranscriptError, match=r"networking_1\.traj: key history\[3\]\.role: missing"):
        load_transcripts(f, pm=pm)
    data["history"][3] = "not a message"
    f.write_text(json.dumps(data))
    with pytest.raises(TranscriptError, match=r"key history\[3\]: expected an object, found a string"):
        load_transcripts(f, pm=pm)


def test_load_many_reports_one_bad_file(tmp_path: Path, pm: Any) -> None:
    folder = tmp_path / "set"
    (folder / "sub").mkdir(parents=True)
    _copy(CLAUDE, folder)
    _copy(SWE_TRAJ, folder / "sub")
    shutil.copyfile(folder / "sub" / "networking_1.traj", folder / "sub" / "copy.traj")
    (folder / "broken.json").write_text('{"history": [')
    (folder / "README.md").write_text("# not a transcript")
    (folder / ".hidden.json").write_text("garbage")
    (folder / "SOURCES.md").write_text("sources")
    transcripts, errors = load_many(folder, pm=pm)
    assert len(transcripts) == 3
    assert [t.format for t in transcripts] == ["swe_agent", "swe_agent", "claude_code"]
    assert len(errors) == 1
    assert errors[0].path == str(folder / "broken.json") and "line 1 column" in str(errors[0])
    # a missing path is one more error, not an exception
    transcripts, errors = load_many([folder, tmp_path / "missing"], pm=pm)
    assert len(transcripts) == 3 and len(errors) == 2


def test_iter_transcript_files(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ["b/z.json", "a.json", "README", "readme.txt", ".gitattributes", ".git/x.json", "b/.x"]:
        (tmp_path / name).write_text("{}")
    assert iter_transcript_files(tmp_path) == [tmp_path / "a.json", tmp_path / "b" / "z.json"]
    assert iter_transcript_files([tmp_path / "b" / "z.json", tmp_path / "a.json"]) == [
        tmp_path / "a.json",
        tmp_path / "b" / "z.json",
    ]
    with pytest.raises(FileNotFoundError):
        iter_transcript_files(tmp_path / "nope")


def test_a_content_that_is_not_text_is_warned_about_by_file_and_key(tmp_path: Path) -> None:
    """A public mini-swe-agent run with one user message's content set to null and the next one's
    to a number: the run still loads (nothing lost: the number is kept as its JSON text), and each
    is named in a TranscriptWarning with the file and the key; the untouched file warns nothing."""
    rel = "mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-21930/sympy__sympy-21930.traj.json"
    data = json.loads((RAW / rel).read_text(encoding="utf-8"))
    users = [i for i, m in enumerate(data["messages"]) if m.get("role") == "user"]
    first, second = users[1], users[2]
    data["messages"][first]["content"] = None
    data["messages"][second]["content"] = 12345
    bad = tmp_path / "sympy.traj.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (t,) = load_transcripts(bad)
    said = [str(w.message) for w in seen if issubclass(w.category, TranscriptWarning)]
    assert f"{bad}: key messages[{first}].content: null; loaded as an empty user message" in said
    assert (
        f"{bad}: key messages[{second}].content: a number instead of text or content blocks; kept as its JSON text"
        in said
    )
    assert any(m.content == "12345" for m in t.messages)
    with warnings.catch_warnings(record=True) as clean:
        warnings.simplefilter("always")
        load_transcripts(RAW / rel)
    assert not [w for w in clean if "content" in str(w.message)]
