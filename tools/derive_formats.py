"""The derived fixtures of the formats added for issue 29 (``tests/data``), written from runs the
repository already holds (see ``tests/data/SOURCES.md``); :mod:`tools.derive_fixtures` writes and
checks them with the others.  Each function returns ``{path: bytes}``; the shapes follow each
format's documentation or sources, named in the loader's docstring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1] / "tests" / "data"
SHARED = (HERE.parents[1] / ".." / "shared" / "transcripts").resolve()
GEMINI = HERE / "gemini-cli" / "session-2026-01-16T11-01-file-ops-37b7abef.json"
CLAUDE = HERE / "claude-code-session" / "800d0f7b-eaa5-4c23-9a5c-3db4294bc504.jsonl"
CODEX = SHARED / "wild/codex-cli/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
TAU = SHARED / "raw/tau-bench/historical_trajectories/gpt-4o-airline.json"
CODING = SHARED / "raw/claude-code/snapshot-tests/tests/coverage-test-fix/transcript.jsonl"


def _json(data: Any) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def _tau() -> list[dict[str, Any]]:
    run = next(
        r for r in json.loads(TAU.read_text(encoding="utf-8")) if (r["task_id"], r["trial"]) == (48, 1)
    )
    return list(run["traj"])


def gemini_contents() -> dict[Path, bytes]:
    """The Gemini CLI session as the ``contents`` history ``/chat save`` writes: a user content
    per user record, a model content per gemini record (text and ``functionCall`` parts), then a
    user content holding the ``functionResponse`` parts of its calls."""
    contents: list[dict[str, Any]] = []
    for m in json.loads(GEMINI.read_text(encoding="utf-8"))["messages"]:
        if m["type"] == "user":
            contents.append({"role": "user", "parts": [{"text": m["content"]}]})
        elif m["type"] == "gemini":
            calls = m.get("toolCalls") or []
            parts = ([{"text": m["content"]}] if m["content"] else []) + [
                {"functionCall": {"id": c["id"], "name": c["name"], "args": c["args"]}} for c in calls
            ]
            contents.append({"role": "model", "parts": parts})
            responses = [r for c in calls for r in c.get("result") or [] if "functionResponse" in r]
            if responses:
                contents.append({"role": "user", "parts": responses})
    return {HERE / "gemini-contents" / "checkpoint-file-ops.json": _json(contents)}


def claude_stream() -> dict[Path, bytes]:
    """The Claude Code session with its sub-agent as ``claude -p --output-format stream-json
    --verbose`` prints it: the init line, the message lines (the sub-agent's with
    ``parent_tool_use_id`` = its Task call) up to the answer of the first prompt, the result line;
    without the prompt line (not replayed) and without the session's bookkeeping lines."""
    main = _lines(CLAUDE)
    side = _lines(CLAUDE.with_suffix("") / "subagents" / "agent-a51f8d5.jsonl")
    sid = main[1]["sessionId"]
    task = next(
        b["id"]
        for x in main
        if x["type"] == "assistant"
        for b in x["message"]["content"]
        if b.get("type") == "tool_use" and b["name"] == "Task"
    )
    rows: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "cwd": main[1]["cwd"], "session_id": sid, "model": "claude-opus-4-5-20251101",
         "tools": ["Task", "Bash", "Read", "Edit", "Write"], "permissionMode": "default", "claude_code_version": "2.1.20"}
    ]  # fmt: skip
    at = next(i for i, x in enumerate(main) if x["type"] == "assistant" and any(
        b.get("name") == "Task" for b in x["message"]["content"]))  # fmt: skip
    prompt = max(
        i for i, x in enumerate(main[:at]) if x["type"] == "user" and isinstance(x["message"]["content"], str)
    )
    for x in main[prompt + 1 :]:
        if x["type"] == "user" and isinstance(x["message"]["content"], str):
            break  # the user's next prompt: a -p run answers one prompt
        if x["type"] not in ("user", "assistant") or x.get("isMeta"):
            continue
        rows.append(
            {"type": x["type"], "message": x["message"], "parent_tool_use_id": None, "session_id": sid}
        )
        if x["type"] == "assistant" and any(b.get("name") == "Task" for b in x["message"]["content"]):
            for y in side:
                if y["type"] in ("user", "assistant"):
                    rows.append(
                        {
                            "type": y["type"],
                            "message": y["message"],
                            "parent_tool_use_id": task,
                            "session_id": sid,
                        }
                    )
    rows.append({"type": "result", "subtype": "success", "is_error": False, "num_turns": 6, "session_id": sid,
                 "result": rows[-1]["message"]["content"][-1].get("text", "")})  # fmt: skip
    return {HERE / "claude-stream-json" / "wpd-analysis.stream.jsonl": _jsonl(rows)}


def codex_exec() -> dict[Path, bytes]:
    """The Codex CLI rollout's first turn as ``codex exec --json`` prints it: reasoning summaries
    and assistant messages as ``reasoning``/``agent_message`` items, each shell call with its
    output as one ``command_execution`` item, the turn's usage."""
    lines = _lines(CODEX)
    rows: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": lines[0]["payload"]["id"]},
        {"type": "turn.started"},
    ]
    outputs = {
        x["payload"]["call_id"]: x["payload"]["output"]
        for x in lines
        if x["type"] == "response_item" and x["payload"]["type"] == "function_call_output"
    }
    n = 0
    usage: dict[str, Any] = {}
    for x in lines:
        p = x["payload"]
        if x["type"] == "event_msg" and p.get("type") == "token_count" and p.get("info"):
            usage = p["info"]["total_token_usage"]
        if x["type"] != "response_item":
            continue
        item: dict[str, Any] | None = None
        if p["type"] == "reasoning" and p.get("summary"):
            item = {"type": "reasoning", "text": "\n".join(s["text"] for s in p["summary"])}
        elif p["type"] == "message" and p["role"] == "assistant":
            item = {
                "type": "agent_message",
                "text": "\n".join(c["text"] for c in p["content"] if "text" in c),
            }
        elif p["type"] == "function_call":
            args = json.loads(p["arguments"])
            out = (
                json.loads(outputs[p["call_id"]])
                if outputs[p["call_id"]].startswith("{")
                else {"output": outputs[p["call_id"]]}
            )
            command = (
                " ".join(args["command"])
                if isinstance(args.get("command"), list)
                else str(args.get("command"))
            )
            started = {"id": f"item_{n}", "type": "command_execution", "command": command, "aggregated_output": "",
                       "exit_code": None, "status": "in_progress"}  # fmt: skip
            rows.append({"type": "item.started", "item": started})
            code = (out.get("metadata") or {}).get("exit_code", 0)
            item = {**started, "aggregated_output": out.get("output", ""), "exit_code": code,
                    "status": "completed" if code == 0 else "failed"}  # fmt: skip
        if item is not None:
            item = {"id": f"item_{n}", **item}
            n += 1
            rows.append({"type": "item.completed", "item": item})
    rows.append({"type": "turn.completed", "usage": {"input_tokens": usage["input_tokens"],
                 "cached_input_tokens": usage["cached_input_tokens"], "output_tokens": usage["output_tokens"]}})  # fmt: skip
    return {HERE / "codex-exec-json" / "exec-019b7f94.jsonl": _jsonl(rows)}


def pydantic_ai() -> dict[Path, bytes]:
    """τ-bench task 48 trial 1 as PydanticAI's ``ModelMessagesTypeAdapter`` dump: a request per
    run of system/user/tool messages, a response per assistant message (tool calls with their
    ids, ``args`` as the recorded JSON string)."""
    out: list[dict[str, Any]] = []
    request: list[dict[str, Any]] = []
    for m in _tau():
        if m["role"] == "assistant":
            if request:
                out.append({"kind": "request", "parts": request, "instructions": None})
                request = []
            parts: list[dict[str, Any]] = (
                [{"part_kind": "text", "content": m["content"]}] if m.get("content") else []
            )
            parts += [
                {"part_kind": "tool-call", "tool_name": c["function"]["name"], "args": c["function"]["arguments"],
                 "tool_call_id": c["id"]}
                for c in m.get("tool_calls") or []
            ]  # fmt: skip
            out.append({"kind": "response", "parts": parts, "model_name": "gpt-4o", "usage": None})
        elif m["role"] == "system":
            request.append({"part_kind": "system-prompt", "content": m["content"]})
        elif m["role"] == "user":
            request.append({"part_kind": "user-prompt", "content": m["content"]})
        elif m["role"] == "tool":
            request.append({"part_kind": "tool-return", "tool_name": m["name"], "content": m["content"],
                            "tool_call_id": m["tool_call_id"]})  # fmt: skip
    if request:
        out.append({"kind": "request", "parts": request, "instructions": None})
    return {HERE / "pydantic-ai" / "tau-bench-task48-trial1.messages.json": _json(out)}


def openai_agents() -> dict[Path, bytes]:
    """τ-bench task 48 trial 1 as the OpenAI Agents SDK's ``result.to_input_list()``: the first
    user input as ``{role, content}``, assistant text as ``message`` output items, calls as
    ``function_call`` items and results as ``function_call_output`` items (the system prompt is
    the agent's ``instructions``, not in the list)."""
    items: list[dict[str, Any]] = []
    for k, m in enumerate(_tau()):
        if m["role"] == "user":
            items.append({"role": "user", "content": m["content"]})
        elif m["role"] == "assistant":
            if m.get("content"):
                items.append({"id": f"msg_{k}", "type": "message", "role": "assistant", "status": "completed",
                              "content": [{"type": "output_text", "text": m["content"], "annotations": []}]})  # fmt: skip
            for c in m.get("tool_calls") or []:
                items.append({"id": f"fc_{c['id']}", "type": "function_call", "call_id": c["id"],
                              "name": c["function"]["name"], "arguments": c["function"]["arguments"], "status": "completed"})  # fmt: skip
        elif m["role"] == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]}
            )
    return {HERE / "openai-agents" / "tau-bench-task48-trial1.input_list.json": _json(items)}


def smolagents() -> dict[Path, bytes]:
    """τ-bench task 48 trial 1 as smolagents' ``agent.memory.get_succinct_steps()`` of a
    ``ToolCallingAgent``: the system prompt, the task (and a task step per later user turn, as
    ``agent.run(task, reset=False)`` adds), an action step per assistant message with its tool
    calls and the observations of their results (joined as smolagents joins them)."""
    traj = _tau()
    steps: list[dict[str, Any]] = [
        {"system_prompt": traj[0]["content"]},
        {"task": traj[1]["content"], "task_images": None},
    ]
    n = 0
    for k, m in enumerate(traj):
        if m["role"] == "user" and k > 1:  # a later user turn: agent.run(task, reset=False)
            steps.append({"task": m["content"], "task_images": None})
        if m["role"] != "assistant":
            continue
        n += 1
        calls = [{"id": c["id"], "type": "function", "function": {"name": c["function"]["name"],
                  "arguments": json.loads(c["function"]["arguments"])}} for c in m.get("tool_calls") or []]  # fmt: skip
        results = []
        for r in traj[k + 1 :]:
            if r["role"] != "tool":
                break
            results.append(r["content"])
        steps.append({
            "step_number": n, "model_output": m.get("content") or None, "tool_calls": calls or None,
            "observations": "\n".join(results) if results else None, "error": None, "action_output": None,
            "token_usage": None, "is_final_answer": False,
        })  # fmt: skip
    return {HERE / "smolagents" / "tau-bench-task48-trial1.steps.json": _json(steps)}


def atif() -> dict[Path, bytes]:
    """τ-bench task 48 trial 1 as an ATIF v1.5 trajectory: a system step, user steps, an agent
    step per assistant message with its tool calls and, as its observation, the results naming
    their calls."""
    traj = _tau()
    steps: list[dict[str, Any]] = []
    for k, m in enumerate(traj):
        if m["role"] in ("system", "user"):
            steps.append({"step_id": len(steps) + 1, "source": m["role"], "message": m["content"]})
        elif m["role"] == "assistant":
            step: dict[str, Any] = {
                "step_id": len(steps) + 1,
                "source": "agent",
                "model_name": "gpt-4o",
                "message": m.get("content") or "",
            }
            if m.get("tool_calls"):
                step["tool_calls"] = [{"tool_call_id": c["id"], "function_name": c["function"]["name"],
                                       "arguments": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]]  # fmt: skip
                results = []
                for r in traj[k + 1 :]:
                    if r["role"] != "tool":
                        break
                    results.append({"source_call_id": r["tool_call_id"], "content": r["content"]})
                step["observation"] = {"results": results}
            steps.append(step)
    data = {"schema_version": "ATIF-v1.5", "session_id": "tau-bench-task48-trial1",
            "agent": {"name": "tau-bench-tool-calling", "version": "1.0", "model_name": "gpt-4o"}, "steps": steps,
            "final_metrics": {"total_steps": len(steps)}}  # fmt: skip
    return {HERE / "atif" / "tau-bench-task48-trial1.trajectory.json": _json(data)}


def specstory() -> dict[Path, bytes]:
    """The Claude Code run coverage-test-fix as a SpecStory export in its newer shape: user
    sections, agent text, tool uses wrapped in ``<tool-use>`` with the result shown inside."""
    out = ["<!-- Generated by SpecStory -->", "", "# Fix the coverage test (2025-11-20 10:12Z)", ""]
    results = {
        b["tool_use_id"]: b.get("content")
        for x in _lines(CODING)
        if x["type"] == "user" and isinstance(x["message"]["content"], list)
        for b in x["message"]["content"]
        if b.get("type") == "tool_result"
    }
    speaker = None
    for x in _lines(CODING):
        if x["type"] not in ("user", "assistant") or x.get("isMeta"):
            continue
        content = x["message"]["content"]
        if x["type"] == "user":
            if isinstance(content, str):
                out += ["---", "", "_**User (2025-11-20 10:12Z)**_", "", content.strip(), ""]
                speaker = "user"
            continue
        for b in content:
            if b["type"] not in ("text", "tool_use"):
                continue
            out.append("---")
            out.append("")
            if speaker != "agent":
                out += ["_**Agent (model claude-opus-4-5, mode Agent)**_", ""]
                speaker = "agent"
            if b["type"] == "text":
                out += [b["text"].strip(), ""]
                continue
            shown = results.get(b["id"])
            shown = shown if isinstance(shown, str) else "\n".join(c.get("text", "") for c in shown or [])
            arg = next(iter(b["input"].values()), "") if b["input"] else ""
            out += [f'<tool-use data-tool-type="generic" data-tool-name="{b["name"]}">', "",
                    f"<details><summary>Tool use: **{b['name']}** • {str(arg)[:80]}</summary>", "", "```",
                    shown.replace("```", "'''"), "```", "", "</details>", "</tool-use>", ""]  # fmt: skip
    return {HERE / "specstory" / "2025-11-20_10-12Z-fix-the-coverage-test.md": "\n".join(out).encode("utf-8")}


def gemini_json_output() -> dict[Path, bytes]:
    """The Gemini CLI session's last request as ``gemini -p … --output-format json`` prints it:
    the final response and the stats of a one-request run (its recorded tokens)."""
    last = [m for m in json.loads(GEMINI.read_text(encoding="utf-8"))["messages"] if m["type"] == "gemini"][
        -1
    ]
    t = last["tokens"]
    data = {"response": last["content"], "stats": {
        "models": {last["model"]: {"api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 4210},
                                   "tokens": {"prompt": t["input"], "candidates": t["output"], "total": t["total"],
                                              "cached": t["cached"], "thoughts": t["thoughts"], "tool": t["tool"]}}},
        "tools": {"totalCalls": 0, "totalSuccess": 0, "totalFail": 0, "totalDurationMs": 0, "byName": {}},
        "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0}}}  # fmt: skip
    return {HERE / "gemini-json-output" / "headless-final-report.json": _json(data)}


def openhands_v1() -> dict[Path, bytes]:
    """τ-bench task 48 trial 1 as an OpenHands V1 conversation folder: ``base_state.json`` and one
    event file per event (system prompt, messages, an action event per call sharing its
    response's ``llm_response_id``, an observation per result), ids made up (``evt-<n>``)."""
    conv = HERE / "openhands-v1" / "conv-task48"
    events: list[dict[str, Any]] = []

    def add(kind: str, source: str, **fields: Any) -> None:
        events.append({"id": f"evt-{len(events):03d}", "timestamp": f"2025-09-01T10:00:{len(events):02d}",
                       "source": source, "kind": kind, **fields})  # fmt: skip

    for k, m in enumerate(_tau()):
        if m["role"] == "system":
            add("SystemPromptEvent", "agent", system_prompt={"type": "text", "text": m["content"]}, tools=[])
        elif m["role"] == "user":
            add(
                "MessageEvent",
                "user",
                llm_message={"role": "user", "content": [{"type": "text", "text": m["content"]}]},
            )
        elif m["role"] == "assistant" and not m.get("tool_calls"):
            add(
                "MessageEvent",
                "agent",
                llm_message={"role": "assistant", "content": [{"type": "text", "text": m["content"]}]},
            )
        elif m["role"] == "assistant":
            for j, c in enumerate(m["tool_calls"]):
                thought = [{"type": "text", "text": m["content"]}] if m.get("content") and j == 0 else []
                add("ActionEvent", "agent", thought=thought, tool_name=c["function"]["name"], tool_call_id=c["id"],
                    tool_call={"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"],
                               "origin": "completion"},
                    llm_response_id=f"resp-{k}", action={"kind": "MCPToolAction", "data": json.loads(c["function"]["arguments"])})  # fmt: skip
        elif m["role"] == "tool":
            add("ObservationEvent", "environment", tool_name=m["name"], tool_call_id=m["tool_call_id"],
                observation={"kind": "MCPToolObservation", "content": [{"type": "text", "text": m["content"]}], "is_error": False})  # fmt: skip
    out = {conv / "base_state.json": _json({"id": "conv-task48", "agent": {"kind": "Agent", "llm": {"model": "gpt-4o"}},
                                            "execution_status": "finished"})}  # fmt: skip
    for n, e in enumerate(events):
        out[conv / "events" / f"event-{n:05d}-{e['id']}.json"] = _json(e)
    return out


def outputs() -> dict[Path, bytes]:
    out: dict[Path, bytes] = {}
    for fn in (gemini_contents, claude_stream, codex_exec, pydantic_ai, openai_agents, smolagents, atif, specstory,
               gemini_json_output, openhands_v1):  # fmt: skip
        out.update(fn())
    return out
