"""The formats added for issue 29, each on its derived fixture (``tests/data``, sources in
``tests/data/SOURCES.md``; the runs' own counts come from ``tests/count_raw.py``) and on a
deliberately odd file: what a loader cannot place is said, naming the file and the count.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.transcripts import SYNTHETIC_KEY, TranscriptError, TranscriptWarning, load_transcripts

DATA = Path(__file__).resolve().parent / "data"
SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared" / "transcripts").resolve()
TAU = SHARED / "raw/tau-bench/historical_trajectories/gpt-4o-airline.json"


def _quiet(path: Path) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_transcripts(path)


def _json(path: Path) -> Any:
    if not path.is_file():
        pytest.fail(f"fixture not found: {path}", pytrace=False)
    return json.loads(path.read_text(encoding="utf-8"))


def _tau() -> list[dict[str, Any]]:
    return next(r["traj"] for r in _json(TAU) if (r["task_id"], r["trial"]) == (48, 1))


def _write(tmp_path: Path, name: str, data: Any) -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return f


# --- Gemini API contents ---------------------------------------------------------------------------


def test_gemini_contents_checkpoint() -> None:
    path = DATA / "gemini-contents" / "checkpoint-file-ops.json"
    contents = _json(path)
    [t] = _quiet(path)
    calls = [p["functionCall"] for c in contents for p in c["parts"] if "functionCall" in p]
    got = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [(c["id"], c["name"], c["args"]) for c in got] == [(c["id"], c["name"], c["args"]) for c in calls]
    results = [m for m in t.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == [c["id"] for c in calls]
    first = next(p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p)
    assert results[0].content == first["response"]["output"]


def test_gemini_contents_odd_parts_are_said(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        "checkpoint-odd.json",
        [
            {
                "role": "user",
                "parts": [
                    {"text": "what is in it?"},
                    {"inlineData": {"mimeType": "image/png", "data": "AA=="}},
                ],
            },
            {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"text": "A cat."}]},
        ],
    )
    with pytest.warns(
        TranscriptWarning, match=r"checkpoint-odd\.json: left out 1 part\(s\) without text \(1 inlineData\)"
    ):
        [t] = load_transcripts(f)
    assert [m.content for m in t.messages] == ["what is in it?", "A cat."] and t.metadata[
        "thought_parts"
    ] == 1


# --- claude -p --output-format stream-json ---------------------------------------------------------


def test_claude_stream_json_main_and_sub_agent() -> None:
    path = DATA / "claude-stream-json" / "wpd-analysis.stream.jsonl"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    with pytest.warns(TranscriptWarning, match="the prompt is not in it"):
        main, sub = load_transcripts(path)
    assert main.metadata["prompt_missing"] and main.metadata["tool_names"] == lines[0]["tools"]
    task = next(
        c for m in main.messages if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] == "Task"
    )
    assert sub.metadata["parent_tool_call_id"] == task["id"] and main.metadata["sub_agent_runs"] == [
        sub.run_id
    ]
    # usage per call: the last streamed line of each message id
    usage: dict[str, dict[str, int]] = {}
    for x in lines:
        if x["type"] == "assistant" and x["parent_tool_use_id"] is None:
            usage[x["message"]["id"]] = x["message"]["usage"]
    want = [
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usage.values()
    ]
    assert [m.usage_metadata["input_tokens"] for m in main.messages if isinstance(m, AIMessage)] == want  # type: ignore[index]
    assert main.metadata["result"]["subtype"] == "success"


def test_claude_stream_json_with_replayed_prompt_says_nothing(tmp_path: Path) -> None:
    rows = [
        {"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": ["Bash"]},
        {"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None, "session_id": "s"},
        {"type": "assistant", "message": {"id": "a", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "Hello."}]},
         "parent_tool_use_id": None, "session_id": "s"},
        {"type": "result", "subtype": "success", "session_id": "s", "num_turns": 1},
    ]  # fmt: skip
    f = _write(tmp_path, "s.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    [t] = _quiet(f)
    assert t.format == "claude_stream_json" and [m.content for m in t.messages] == ["hi", "Hello."]


# --- codex exec --json -------------------------------------------------------------------------------


def test_codex_exec_json_commands_and_turn_usage() -> None:
    path = DATA / "codex-exec-json" / "exec-019b7f94.jsonl"
    events = [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    with pytest.warns(TranscriptWarning, match="no prompt"):
        [t] = load_transcripts(path)
    commands = [
        e["item"]
        for e in events
        if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"
    ]
    calls = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [c["args"]["command"] for c in calls] == [c["command"] for c in commands]
    assert [m.content for m in t.messages if isinstance(m, ToolMessage)] == [
        c["aggregated_output"] for c in commands
    ]
    assert t.metadata["turn_usage"] == [e["usage"] for e in events if e["type"] == "turn.completed"]
    assert all(
        m.usage_metadata is None for m in t.messages if isinstance(m, AIMessage)
    )  # per turn, not per call


def test_codex_exec_json_what_it_cannot_hold_is_said(tmp_path: Path) -> None:
    rows = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "Editing."}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "file_change", "changes": [{"path": "a.py", "kind": "update"}], "status": "completed"}},
        {"type": "item.completed", "item": {"id": "item_2", "type": "web_search", "query": "ruff rules"}},
        {"type": "item.started", "item": {"id": "item_3", "type": "command_execution", "command": "pytest", "status": "in_progress"}},
        {"type": "item.completed", "item": {"id": "item_4", "type": "todo_list", "items": []}},
    ]  # fmt: skip
    f = _write(tmp_path, "odd.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(TranscriptWarning) as said:
        [t] = load_transcripts(f)
    text = " | ".join(str(w.message) for w in said)
    assert (
        "1 file_change item(s) without their patch" in text
        and "1 web_search item(s) without their results" in text
    )
    assert "1 item(s) started but never completed (left out): command_execution" in text
    made_up = [m for m in t.messages if m.additional_kwargs.get(SYNTHETIC_KEY)]
    assert [m.name for m in made_up] == ["web_search"] and t.metadata["skipped_items"] == {"todo_list": 1}


# --- PydanticAI, OpenAI Agents SDK, smolagents, ATIF (the same τ-bench run) --------------------------


def test_pydantic_ai_history() -> None:
    [t] = _quiet(DATA / "pydantic-ai" / "tau-bench-task48-trial1.messages.json")
    traj = _tau()
    assert isinstance(t.messages[0], SystemMessage) and t.model == "gpt-4o"
    calls = [c for m in traj if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    got = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [(c["id"], c["args"]) for c in got] == [
        (c["id"], json.loads(c["function"]["arguments"])) for c in calls
    ]
    assert [m.text for m in t.messages] == [m.get("content") or "" for m in traj]


def test_pydantic_ai_odd_parts_and_usage(tmp_path: Path) -> None:
    history = [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "2+2?"}, {"part_kind": "video-url", "url": "x"}]},
        {"kind": "response", "parts": [{"part_kind": "text", "content": "4"}], "model_name": "gpt-4o",
         "usage": {"input_tokens": 12, "output_tokens": 1, "cache_read_tokens": 4}},
    ]  # fmt: skip
    f = _write(tmp_path, "history.json", history)
    with pytest.warns(
        TranscriptWarning, match=r"history\.json: left out 1 part\(s\) of unknown kinds: \{'video-url': 1\}"
    ):
        [t] = load_transcripts(f)
    assert t.messages[-1].usage_metadata == {
        "input_tokens": 12,
        "output_tokens": 1,
        "total_tokens": 13,
        "input_token_details": {"cache_read": 4},
    }


def test_openai_agents_input_list_loads_as_responses_items() -> None:
    [t] = _quiet(DATA / "openai-agents" / "tau-bench-task48-trial1.input_list.json")
    traj = [m for m in _tau() if m["role"] != "system"]  # the system prompt is the agent's instructions
    assert t.format == "openai_responses"
    assert [m.tool_call_id for m in t.messages if isinstance(m, ToolMessage)] == [
        m["tool_call_id"] for m in traj if m["role"] == "tool"
    ]
    assert [m.text for m in t.messages if isinstance(m, HumanMessage)] == [
        m["content"] for m in traj if m["role"] == "user"
    ]


def test_smolagents_memory_in_text_mode(tmp_path: Path) -> None:
    path = DATA / "smolagents" / "tau-bench-task48-trial1.steps.json"
    steps = _json(path)
    [t] = _quiet(path)
    action = next(s for s in steps if s.get("tool_calls"))
    ai = next(
        m for m in t.messages if isinstance(m, AIMessage) and m.additional_kwargs.get("smolagents_tool_calls")
    )
    assert ai.text.endswith("Calling tools:\n" + str(action["tool_calls"])) and not ai.tool_calls
    assert [t.messages[i].text for i in t.observations] == [
        f"Observation:\n{s['observations']}" for s in steps if s.get("observations") is not None
    ]
    odd = _write(tmp_path, "steps.json", [*steps, {"memory_id": 3}])
    with pytest.warns(TranscriptWarning, match=r"steps\.json: left out 1 step\(s\) of an unknown shape"):
        load_transcripts(odd)


def test_atif_trajectory_and_text_mode_steps(tmp_path: Path) -> None:
    [t] = _quiet(DATA / "atif" / "tau-bench-task48-trial1.trajectory.json")
    assert [m.text for m in t.messages if not isinstance(m, ToolMessage)] == [
        m.get("content") or "" for m in _tau() if m["role"] != "tool"
    ]
    roles = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage, "tool": ToolMessage}
    assert [type(m) for m in t.messages] == [roles[m["role"]] for m in _tau()]
    text_mode = {
        "schema_version": "ATIF-v1.5",
        "session_id": "s",
        "agent": {"name": "terminus-2", "version": "2", "model_name": "gpt-4o"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "make hello.txt"},
            {"step_id": 2, "source": "agent", "message": "{\"commands\": [\"echo hi > hello.txt\"]}",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "bash_command", "arguments": {"keystrokes": "echo hi"}}],
             "observation": {"results": [{"content": "$ echo hi > hello.txt"}]},
             "metrics": {"prompt_tokens": 700, "completion_tokens": 50, "cached_tokens": 600}},
            {"step_id": 3, "source": "agent", "message": "done", "observation": {"results": [{"source_call_id": "zz", "content": "?"}]}},
        ],
    }  # fmt: skip
    f = _write(tmp_path, "trajectory.json", text_mode)
    with pytest.warns(
        TranscriptWarning, match=r"trajectory\.json: tool result .zz. \(message 4\) has no matching call"
    ):
        [u] = load_transcripts(f)
    ai = u.messages[1]
    assert (
        isinstance(ai, AIMessage)
        and not ai.tool_calls
        and ai.additional_kwargs["atif_tool_calls"][0]["id"] == "c1"
    )
    assert u.observations == [2] and u.metadata["text_mode_steps"] == 1
    assert ai.usage_metadata["input_token_details"] == {"cache_read": 600}  # type: ignore[index]


# --- SpecStory --------------------------------------------------------------------------------------


def test_specstory_export_newer_and_older_shapes(tmp_path: Path) -> None:
    [t] = _quiet(DATA / "specstory" / "2025-11-20_10-12Z-fix-the-coverage-test.md")
    assert t.model == "claude-opus-4-5" and isinstance(t.messages[0], HumanMessage)
    results = [m for m in t.messages if isinstance(m, ToolMessage)]
    assert len(results) == 13 and all(
        r.tool_call_id == f"{t.run_id}-call{i}" for i, r in enumerate(results, 1)
    )
    old = (
        "<!-- Generated by SpecStory -->\n\n# Avatars (2025-10-01 23:30Z)\n\n_**User (2025-10-01 23:30Z)**_\n\n"
        "the avatars stopped moving\n\n---\n\n_**Assistant (claude-4.5-sonnet-thinking)**_\n\n"
        "<think><details><summary>Thought Process</summary>Look at script.js.</details></think>\n\n---\n\n"
        "I will look at the code.\n\n---\n\nTool use: **read_file**\n\nRead file: script.js\n\n---\n\n"
        'Tool use: **grep**\n\n<details>\n<summary>Grep for "avatar" • 2 matches</summary>\n\n| L109 |\n\n</details>\n\n---\n\n'
        "Found it.\n"
    )
    [u] = _quiet(_write(tmp_path, "2025-10-01_23-30Z-avatars.md", old))
    assert [type(m).__name__ for m in u.messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert (
        u.model == "claude-4.5-sonnet-thinking"
        and u.messages[1].additional_kwargs["reasoning"] == "Look at script.js."
    )
    assert [c["name"] for m in u.messages if isinstance(m, AIMessage) for c in m.tool_calls] == [
        "read_file",
        "grep",
    ]


# --- gemini --output-format json ---------------------------------------------------------------------


def test_gemini_json_output(tmp_path: Path) -> None:
    path = DATA / "gemini-json-output" / "headless-final-report.json"
    data = _json(path)
    with pytest.warns(TranscriptWarning, match="holds only the final reply"):
        [t] = load_transcripts(path)
    [(model, stats)] = data["stats"]["models"].items()
    assert t.model == model and t.messages[0].text == data["response"]
    assert t.messages[0].usage_metadata["input_tokens"] == stats["tokens"]["prompt"]  # type: ignore[index]
    several = {**data, "stats": {**data["stats"], "models": {model: {**stats, "api": {"totalRequests": 3}}},
               "tools": {"totalCalls": 2, "byName": {"read_file": {"count": 2}}}}}  # fmt: skip
    with pytest.warns(
        TranscriptWarning, match=r"the prompt, 2 earlier model request\(s\) and 2 tool call\(s\)"
    ):
        [u] = load_transcripts(_write(tmp_path, "out.json", several))
    assert u.messages[0].usage_metadata is None  # run totals, not one call's
    failed = {"error": {"type": "ApiError", "message": "quota"}, "stats": data["stats"]}
    with pytest.raises(TranscriptError, match="no conversation"):
        load_transcripts(_write(tmp_path, "failed.json", failed))


# --- OpenHands V1 conversation folders ------------------------------------------------------------------


def test_openhands_v1_folder(tmp_path: Path) -> None:
    import shutil

    from ctxlab.transcripts import load_many

    conv = DATA / "openhands-v1" / "conv-task48"
    [t] = _quiet(conv / "base_state.json")
    traj = _tau()
    roles = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage, "tool": ToolMessage}
    assert [type(m) for m in t.messages] == [roles[m["role"]] for m in traj] and t.run_id == "conv-task48"
    assert [m.tool_call_id for m in t.messages if isinstance(m, ToolMessage)] == [
        m["tool_call_id"] for m in traj if m["role"] == "tool"
    ]
    # a folder walk reads the event files through base_state.json; an odd folder is said
    work = tmp_path / "conv"
    shutil.copytree(conv, work)
    events = sorted((work / "events").glob("*.json"))
    events[-1].unlink()  # the last observation never written: its call is unanswered
    cond = {"id": "c", "kind": "Condensation", "source": "agent", "forgotten_event_ids": [], "summary": "s"}
    (work / "events" / "event-99999-c.json").write_text(json.dumps(cond))
    with pytest.warns(TranscriptWarning) as said:
        runs, errors = load_many(tmp_path)
    text = " | ".join(str(w.message) for w in said)
    assert errors == [] and len(runs) == 1
    assert (
        "1 condensation(s) recorded but not replayed" in text and "1 call(s) without an observation" in text
    )
