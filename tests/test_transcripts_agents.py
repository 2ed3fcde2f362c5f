"""Issue 21: transcripts of the agents people run today, loaded faithfully.

The defects (each test failed on main before the fix): Cline/Roo results written as user text,
recorded compactions (Claude Code ``compact_boundary`` + ``isCompactSummary``, Codex
``compacted``), the generic fallback's duplicated runs and string ``function`` calls, empty
sessions, Codex MCP namespaces, Claude Code sub-agent lines; and the provider's usage per call.
Files come from ``../shared/transcripts`` (``incoming/``, ``wild/``) and ``tests/data`` (sources in
``tests/data/SOURCES.md``); small files written here follow the shapes of those projects' own
sources, where no public file holds the case.  The expected counts are read from the raw files
here, without the loaders.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.transcripts import (
    OBSERVATION_KEY,
    TranscriptError,
    TranscriptWarning,
    load_many,
    load_transcripts,
)
from ctxlab.transcripts.base import RECORDED_COMPACTION_KEY, recorded_compaction_of

TESTS = Path(__file__).resolve().parent
SHARED = (TESTS.parent / ".." / "shared" / "transcripts").resolve()
INCOMING = SHARED / "incoming"
COMPACTION = INCOMING / "claude-code-compaction" / "entire-cli_ca-fca7ea73ac_0_full.jsonl"
INSPECT = INCOMING / "inspect-ai" / "2025-05-12T20-27-36-04-00_browser.json"
KIMI = INCOMING / "kimi-cli" / "531d195b-6436-426e-b010-4bf723a992de.jsonl"
CODEX = SHARED / "wild/codex-cli/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
CLINE = TESTS / "data" / "cline" / "coverage-test-fix.cline.json"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"transcript not found: {path}; these tests need it", pytrace=False)
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in _need(path).read_text(encoding="utf-8").split("\n") if x.strip()]


def _quiet_load(path: Path, **kw: Any) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_transcripts(path, **kw)


# --- 1. Cline / Roo Code results as user text -----------------------------------------------------


def test_cline_text_results_answer_their_calls() -> None:
    [t] = _quiet_load(_need(CLINE))
    raw = json.loads(CLINE.read_text(encoding="utf-8"))
    headers = [
        b["text"] for m in raw if m["role"] == "user" for b in m["content"] if b["text"].endswith("] Result:")
    ]
    tools = [m for m in t.messages if isinstance(m, ToolMessage)]
    assert len(tools) == len(headers) == 13
    calls = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [m.tool_call_id for m in tools] == [c["id"] for c in calls]  # each answers its call, in order
    for m, header in zip(tools, headers, strict=True):
        assert m.content[0]["text"] == header  # the header the model saw is kept
        assert header.startswith(f"[{m.name}")


def test_cline_shape_rules(tmp_path: Path) -> None:
    """Environment details end a result; a result answers the pending call of its tool; with no
    call pending (Cline's XML tool calls) it is a text observation."""
    f = tmp_path / "api_conversation_history.json"
    use = [
        {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "x.py"}},
        {"type": "tool_use", "id": "b", "name": "list_files", "input": {"path": "."}},
    ]
    f.write_text(
        json.dumps(
            [
                {"role": "user", "content": [{"type": "text", "text": "<task>fix</task>"}]},
                {"role": "assistant", "content": use},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "[list_files for '.'] Result:"},
                        {"type": "text", "text": "x.py"},
                        {"type": "text", "text": "[read_file for 'x.py'] Result:"},
                        {"type": "text", "text": "print(1)"},
                        {"type": "text", "text": "<environment_details>\n# cwd\n</environment_details>"},
                    ],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "<read_file>y</read_file>"}]},
                {"role": "user", "content": [{"type": "text", "text": "[read_file for 'y'] Result:\nnone"}]},
            ]
        )
    )
    [t] = _quiet_load(f)
    kinds = [type(m).__name__ for m in t.messages]
    assert kinds == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert (t.messages[2].tool_call_id, t.messages[3].tool_call_id) == ("b", "a")
    assert [b["text"] for b in t.messages[3].content] == ["[read_file for 'x.py'] Result:", "print(1)"]
    assert t.messages[4].content.startswith("<environment_details>")
    assert t.observations == [6] and t.messages[6].additional_kwargs[OBSERVATION_KEY]


# --- 2. recorded compactions ----------------------------------------------------------------------


def test_claude_code_compaction_is_kept_as_recorded() -> None:
    lines = _lines(COMPACTION)
    boundary = next(x for x in lines if x.get("subtype") == "compact_boundary")
    summary = next(x for x in lines if x.get("isCompactSummary"))
    [t] = _quiet_load(COMPACTION)
    marked = [(i, m) for i, m in enumerate(t.messages) if recorded_compaction_of(m)]
    assert len(marked) == 1
    i, m = marked[0]
    assert isinstance(m, HumanMessage) and m.content == summary["message"]["content"]
    assert m.content.startswith("This session is being continued from a previous conversation")
    mark = m.additional_kwargs[RECORDED_COMPACTION_KEY]
    assert mark["index"] == 0 and mark["trigger"] == "auto"
    assert mark["pre_tokens"] == boundary["compactMetadata"]["preTokens"] == 155461
    assert t.metadata["compactions"] == 1
    # 10 model turns before it, 10 after
    assert sum(isinstance(x, AIMessage) for x in t.messages[:i]) == 10
    assert sum(isinstance(x, AIMessage) for x in t.messages[i:]) == 10


def _codex_with_compaction(tmp_path: Path, replacement: list[dict[str, Any]] | None) -> Path:
    lines = _lines(CODEX)
    cut = max(
        i
        for i, x in enumerate(lines)
        if x["type"] == "response_item" and x["payload"]["type"] == "function_call_output"
    )
    payload: dict[str, Any] = {"message": "Summary: listed the repository and read its README."}
    if replacement is not None:
        payload["replacement_history"] = replacement
    lines.insert(cut + 1, {"timestamp": "2026-01-02T16:50:00Z", "type": "compacted", "payload": payload})
    lines.append(
        {
            "timestamp": "2026-01-02T16:50:01Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}],
            },
        }
    )
    f = tmp_path / "rollout-compacted.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return f


def test_codex_compaction_is_kept_as_recorded(tmp_path: Path) -> None:
    user = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "summarize the repo"}],
    }
    [plain] = _quiet_load(_need(CODEX))
    [t] = _quiet_load(
        _codex_with_compaction(tmp_path, [user, {**user, "content": [{"type": "input_text", "text": "S"}]}])
    )
    marked = [m for m in t.messages if recorded_compaction_of(m)]
    assert [m.content for m in marked] == ["summarize the repo", "S"]
    assert {recorded_compaction_of(m)["source"] for m in marked} == {"compacted"}  # type: ignore[index]
    assert len(t.messages) == len(plain.messages) + 3 and t.metadata["compactions"] == 1
    assert isinstance(t.messages[-1], AIMessage) and not recorded_compaction_of(t.messages[-1])
    [approx] = _quiet_load(_codex_with_compaction(tmp_path, None))
    [m] = [m for m in approx.messages if recorded_compaction_of(m)]
    assert m.content.startswith("Summary: listed") and recorded_compaction_of(m)["approximate"]  # type: ignore[index]


# --- 3. the generic fallback: no duplicated runs, string `function` calls ------------------------


def test_generic_fallback_does_not_repeat_runs_and_keeps_function_names() -> None:
    sample = json.loads(_need(INSPECT).read_text(encoding="utf-8"))["samples"][0]
    runs = _quiet_load(INSPECT, format="generic_messages")  # the events' copies are no runs
    assert len(runs) == 1
    [t] = runs
    assert t.metadata["json_path"] == "$.samples[0].messages"
    assert sum(isinstance(m, AIMessage) for m in t.messages) == 5
    raw_calls = [c for m in sample["messages"] for c in m.get("tool_calls") or []]
    calls = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [(c["name"], c["args"]) for c in calls] == [(c["function"], c["arguments"]) for c in raw_calls]


def test_nameless_tool_call_is_said(tmp_path: Path) -> None:
    f = tmp_path / "chat.json"
    f.write_text(
        json.dumps(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "arguments": {}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
        )
    )
    with pytest.warns(
        TranscriptWarning, match=r"chat\.json: key \[1\]\.tool_calls\[0\]: tool call without a name"
    ):
        load_transcripts(f)


# --- 4. empty sessions: one rule -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("chat.json", [{"role": "system", "content": "You help."}]),
        ("rows.json", [{"conversations": [{"from": "system", "value": "S"}], "tools": "[]"}]),
        (
            "session.json",
            {"sessionId": "s", "projectHash": "p", "messages": [{"type": "info", "content": "hi"}]},
        ),
    ],
)
def test_empty_sessions_are_refused_by_every_loader(tmp_path: Path, name: str, content: Any) -> None:
    f = tmp_path / name
    f.write_text(json.dumps(content))
    with pytest.raises(TranscriptError, match="no conversation") as err:
        load_transcripts(f)
    assert err.value.path == str(f)
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    )
    assert err.value.kind == "no_conversation"
    skipped: list[TranscriptError] = []
    with pytest.warns(TranscriptWarning, match=rf"skipped 1 file\(s\) that are not transcripts: {name}"):
        runs, errors = load_many(tmp_path, skipped=skipped)  # a folder walk: skipped and listed
    assert errors == [] and [r.source for r in runs] == [str(good)]
    assert [(e.path, e.kind) for e in skipped] == [(str(f), "no_conversation")]
    runs, errors = load_many([f, good])  # named on its own: still an error, the rest loads
    assert [e.path for e in errors] == [str(f)] and [r.source for r in runs] == [str(good)]


def test_empty_run_among_others_is_left_out_with_a_warning(tmp_path: Path) -> None:
    f = tmp_path / "rows.json"
    turns = [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]
    f.write_text(
        json.dumps([{"conversations": turns}, {"conversations": [{"from": "system", "value": "S"}]}])
    )
    with pytest.warns(TranscriptWarning, match=r"rows\.json: left out 1 run\(s\) with no conversation: row1"):
        [t] = load_transcripts(f)
    assert t.run_id == "row0"


# --- 5. Codex MCP namespaces ------------------------------------------------------------------------


def test_codex_mcp_namespace_is_kept_in_the_tool_name(tmp_path: Path) -> None:
    lines = _lines(CODEX)
    calls = [
        x["payload"]
        for x in lines
        if x["type"] == "response_item" and x["payload"]["type"] == "function_call"
    ]
    calls[0]["namespace"], calls[0]["name"] = "mcp__codex_apps__github", "_fetch_pr"
    calls[1]["namespace"], calls[1]["name"] = "mcp__github", "get_me"
    f = tmp_path / "rollout-mcp.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    [t] = _quiet_load(f)
    names = [c["name"] for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert names == ["mcp__codex_apps__github_fetch_pr", "mcp__github__get_me", "shell"]
    assert [m.name for m in t.messages if isinstance(m, ToolMessage)] == names


# --- 6. Claude Code sub-agents ------------------------------------------------------------------------


def _line(kind: str, content: Any, uuid: str, **extra: Any) -> dict[str, Any]:
    role = "assistant" if kind == "assistant" else "user"
    return {
        "type": kind,
        "uuid": uuid,
        "sessionId": "s1",
        "message": {"role": role, "content": content},
        **extra,
    }


def test_claude_code_sub_agent_lines_are_their_own_runs(tmp_path: Path) -> None:
    task = {"type": "tool_use", "id": "toolu_task", "name": "Task", "input": {"prompt": "find the bug"}}
    read = {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": "a.py"}}
    progress_inner = _line("assistant", [{"type": "text", "text": "Looking."}], "p1")
    lines = [
        _line("user", "fix the bug", "u1"),
        _line("assistant", [task], "a1"),
        _line("user", "find the bug", "s0", isSidechain=True, agentId="ag1"),
        _line("assistant", [read], "s1", isSidechain=True, agentId="ag1"),
        _line(
            "user",
            [{"type": "tool_result", "tool_use_id": "toolu_read", "content": "x=1"}],
            "s2",
            isSidechain=True,
            agentId="ag1",
        ),
        {
            "type": "progress",
            "uuid": "g1",
            "sessionId": "s1",
            "parentToolUseID": "toolu_task",
            "data": {"type": "agent_progress", "agentId": "ag2", "message": progress_inner},
        },
        _line("user", [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "bug in a.py"}], "u2"),
        _line("assistant", [{"type": "text", "text": "Fixed."}], "a2"),
    ]
    f = tmp_path / "session.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    # ag1's lines name no Task call (no progress line, no Task result naming it): said, not hidden
    with pytest.warns(TranscriptWarning, match=r"session\.jsonl: sub-agent ag1: no Task call .* names it"):
        main, ag1, ag2 = load_transcripts(f)
    assert [type(m).__name__ for m in main.messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert main.metadata["sub_agent_runs"] == ["agent-ag1", "agent-ag2"]
    assert (ag1.run_id, ag1.name, ag1.metadata["parent_run"]) == (
        "agent-ag1",
        "session.jsonl#agent-ag1",
        "session.jsonl",
    )
    assert [type(m).__name__ for m in ag1.messages] == ["HumanMessage", "AIMessage", "ToolMessage"]
    assert ag1.messages[2].tool_call_id == "toolu_read" and ag1.messages[2].name == "Read"
    assert ag2.metadata["parent_tool_call_id"] == "toolu_task" and ag2.messages[0].content == "Looking."
    assert [m.id for m in ag2.messages] == ["agent-ag2-0"]


# --- the provider's usage per call --------------------------------------------------------------------


def test_claude_code_usage_per_call() -> None:
    lines = _lines(COMPACTION)
    last: dict[str, dict[str, int]] = {}
    for x in lines:
        if x.get("type") == "assistant":
            last[x["message"]["id"]] = x["message"]["usage"]
    expected = [
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in last.values()
    ]
    [t] = _quiet_load(COMPACTION)
    got = [m.usage_metadata for m in t.messages if isinstance(m, AIMessage)]
    assert [u["input_tokens"] for u in got if u] == expected and len(expected) == 20
    assert expected[9] == 154_719 and expected[10] == 47_114  # the drop at the compaction
    assert got[10]["input_token_details"] == {"cache_read": 33_558, "cache_creation": 13_546}  # type: ignore[index]


def test_codex_usage_per_call() -> None:
    lines = _lines(CODEX)
    seen = []
    for x in lines:
        info = x["payload"].get("info") if x["payload"].get("type") == "token_count" else None
        if info and info["last_token_usage"] not in seen:
            seen.append(info["last_token_usage"])
    [t] = _quiet_load(CODEX)
    got = [m.usage_metadata for m in t.messages if isinstance(m, AIMessage)]
    assert [(u["input_tokens"], u["output_tokens"]) for u in got if u] == [
        (u["input_tokens"], u["output_tokens"]) for u in seen
    ]
    assert len(seen) == 3


def test_kimi_and_inspect_usage_per_call() -> None:
    rows = _lines(KIMI)
    pairs = [
        (rows[i - 1]["token_count"], rows[i + 1]["token_count"])
        for i, r in enumerate(rows)
        if r["role"] == "assistant" and rows[i - 1]["role"] == "_usage" and rows[i + 1]["role"] == "_usage"
    ]
    [k] = _quiet_load(KIMI)
    got = [m.usage_metadata for m in k.messages if isinstance(m, AIMessage)]
    assert [(u["input_tokens"], u["total_tokens"]) for u in got if u] == pairs and len(pairs) >= 27
    log = json.loads(_need(INSPECT).read_text(encoding="utf-8"))
    usage = [e["output"]["usage"] for e in log["samples"][0]["events"] if e["event"] == "model"]
    [i] = _quiet_load(INSPECT)
    got = [m.usage_metadata for m in i.messages if isinstance(m, AIMessage)]
    assert [(u["input_tokens"], u["output_tokens"]) for u in got if u] == [
        (u["total_tokens"] - u["output_tokens"], u["output_tokens"]) for u in usage
    ]


# --- the new formats' particulars -------------------------------------------------------------------


def test_inspect_json_and_eval_forms_load_the_same_run() -> None:
    [a] = _quiet_load(_need(INSPECT))
    [b] = _quiet_load(_need(TESTS / "data" / "inspect-eval" / "2025-05-12T20-27-36-04-00_browser.eval"))
    assert (a.format, b.format, a.run_id, a.model) == (
        "inspect_eval",
        "inspect_eval",
        "1-epoch1",
        "openai/gpt-4o-mini",
    )
    assert [m.content for m in a.messages] == [m.content for m in b.messages]
    assert [t["name"] for t in a.tools][:1] == ["web_browser_go"]
    assert not any("attachment://" in str(m.content) for m in a.messages)


def test_sharegpt_rows_keep_tools_and_pair_observations() -> None:
    path = _need(INCOMING / "sharegpt" / "glaive_toolcall_en_demo.json")
    rows = json.loads(path.read_text(encoding="utf-8"))
    runs = _quiet_load(path)
    assert len(runs) == len(rows) == 300
    for row, t in zip(rows, runs, strict=True):
        assert t.tools == json.loads(row["tools"])
    t = runs[0]
    [call] = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert call["name"] == "search_recipes" and call["args"] == {
        "ingredients": ["chicken", "bell peppers", "rice"]
    }
    [result] = [m for m in t.messages if isinstance(m, ToolMessage)]
    assert result.tool_call_id == call["id"] and result.name == "search_recipes"
    assert not any(isinstance(m, SystemMessage) for m in t.messages)


def test_langgraph_state_and_langsmith_runs_decode_with_langchain_load(tmp_path: Path) -> None:
    from langchain_core.load import dumpd

    runs_file = _need(TESTS / "data" / "langsmith" / "tau-bench-task48-trial1.runs.jsonl")
    lines = _lines(runs_file)
    [t] = _quiet_load(runs_file)
    last = lines[-1]
    assert (
        len(t.messages) == len(last["inputs"]["messages"][0]) + 1
        and t.metadata["repeats_left_out"] == len(lines) - 1
    )
    assert t.messages[-1].text == last["outputs"]["generations"][0][0]["text"]
    assert [m.id for m in t.messages] == [f"{t.run_id}-{i}" for i in range(len(t.messages))]
    # the same conversation as a LangGraph state ({"values": {"messages": [...]}}) loads the same
    state = tmp_path / "thread-state.json"
    state.write_text(json.dumps({"values": {"messages": [dumpd(m) for m in t.messages]}, "next": []}))
    [s] = _quiet_load(state)
    assert s.format == "langchain_messages" and s.metadata["json_path"] == "$.values.messages"
    assert [(type(a), a.content) for a in s.messages] == [(type(b), b.content) for b in t.messages]
    bad = tmp_path / "bad.json"
    payload = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
        "kwargs": {"content": 3},
    }
    bad.write_text(json.dumps({"values": {"messages": [payload]}}))
    with pytest.raises(
        TranscriptError, match=r"bad\.json: key \$\.values\.messages\[0\]: not a loadable message"
    ):
        load_transcripts(bad)


def test_openhands_resolver_output_in_text_mode() -> None:
    path = _need(TESTS / "data" / "openhands-resolver" / "output.jsonl")
    lines = _lines(path)
    runs = _quiet_load(path)
    assert [r.run_id for r in runs] == [f"neubig/pr-viewer#{x['issue']['number']}" for x in lines]
    t = runs[0]
    assert t.messages[0].content == lines[0]["instruction"] and t.metadata["success"] is True
    run = lines[0]["history"][1]
    assert t.messages[1].content == f"{run['thought']}\n<execute_bash>\n{run['command']}\n</execute_bash>"
    assert t.observations == [2, 4, 6] and t.messages[2].content == lines[0]["history"][2]["content"]


def test_opencode_storage_session_reads_its_messages_and_parts(tmp_path: Path) -> None:
    import shutil

    storage = tmp_path / "storage"
    source = TESTS / "data" / "opencode-storage" / "storage"
    _need(source / "session" / "prj_coverage" / "ses_0coverage.json")
    shutil.copytree(source, storage)
    runs, errors = load_many(tmp_path)  # message and part files are read through the session file
    assert errors == [] and [r.format for r in runs] == ["opencode_storage"]
    [t] = runs
    parts = [json.loads(p.read_text()) for p in sorted((storage / "part").rglob("*.json"))]
    tool_parts = [p for p in parts if p["type"] == "tool"]
    results = [m for m in t.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in results] == [
        (p["callID"], p["state"].get("output", p["state"].get("error"))) for p in tool_parts
    ]
    # a call OpenCode never finished gets the result OpenCode sends for it, marked as added
    last = sorted((storage / "part").iterdir())[-1]
    (last / "prt_999901.json").write_text(
        json.dumps(
            {
                "id": "prt_999901",
                "type": "tool",
                "callID": "c-x",
                "tool": "bash",
                "state": {"status": "running", "input": {"command": "ls"}},
            }
        )
    )
    session = storage / "session" / "prj_coverage" / "ses_0coverage.json"
    [t2] = load_transcripts(session)
    assert t2.messages[-1].content == "[Tool execution was interrupted]"
    assert t2.messages[-1].additional_kwargs["ctxlab_synthetic"]
    (storage / "message" / "ses_0coverage" / "msg_0001.json").write_text("{oops")
    with pytest.raises(TranscriptError, match=r"ses_0coverage\.json: .*msg_0001\.json: line 1 column 2"):
        load_transcripts(session)


def test_litellm_and_gemini_usage_per_call() -> None:
    log = _need(
        SHARED
        / "raw/openhands-sdk/tests/fixtures/llm_data/llm-logs/litellm_proxy__anthropic__claude-sonnet-4-20250514-1757015046.707.json"
    )
    usage = json.loads(log.read_text(encoding="utf-8"))["response"]["usage"]
    [t] = _quiet_load(log)
    assert t.messages[-1].usage_metadata["input_tokens"] == usage["prompt_tokens"]  # type: ignore[attr-defined]
    assert t.messages[-1].usage_metadata["output_tokens"] == usage["completion_tokens"]  # type: ignore[attr-defined]
    session = _need(TESTS / "data/gemini-cli/session-2026-01-16T11-01-file-ops-37b7abef.json")
    tokens = [
        m["tokens"]
        for m in json.loads(session.read_text(encoding="utf-8"))["messages"]
        if m["type"] == "gemini"
    ]
    [g] = _quiet_load(session)
    got = [m.usage_metadata for m in g.messages if isinstance(m, AIMessage) and m.usage_metadata]
    assert [u["total_tokens"] for u in got] == [x["total"] - x["tool"] for x in tokens]
    assert [u["input_tokens"] for u in got] == [x["input"] for x in tokens]


def test_claude_code_sub_agent_file_of_its_own(tmp_path: Path) -> None:
    lines = [
        _line("user", "find the bug", "s0", isSidechain=True, agentId="ag1"),
        _line("assistant", [{"type": "text", "text": "Found it."}], "s1", isSidechain=True, agentId="ag1"),
    ]
    f = tmp_path / "agent-ag1.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    [t] = _quiet_load(f)
    assert (t.run_id, t.metadata["agent_id"], len(t.messages)) == ("agent-ag1.jsonl", "ag1", 2)
