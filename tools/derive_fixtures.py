"""Write the derived fixtures of ``tests/data`` from files of the shared public set.

No public file was found for two formats, so these are built from real public runs (see
``tests/data/SOURCES.md``); ``tests/test_transcripts_formats.py`` checks that the committed files
are what this script writes::

    .venv/bin/python -m tools.derive_fixtures          # rewrite them
    .venv/bin/python -m tools.derive_fixtures --check  # exit 1 when they differ

* ``anthropic-messages/coverage-test-fix.messages.json`` -- the Anthropic Messages API list that
  the Claude Code session ``raw/claude-code/.../coverage-test-fix/transcript.jsonl`` sent: the
  ``message`` of every ``user``/``assistant`` line, reduced to ``{role, content}``; the streamed
  lines of one assistant message (same ``message.id``) joined into one message; consecutive user
  lines joined into one user message (string content as a text block), as the API requires
  alternating roles.
* ``cline/coverage-test-fix.cline.json`` -- that Anthropic list with its ``tool_result`` blocks
  written as Cline and Roo Code write results: user text blocks ``[<tool> for '<arg>'] Result:``
  followed by the result.
* ``cline-task/<task id>/`` -- that Claude Code session as a Cline task folder: its Anthropic
  list above as ``api_conversation_history.json`` (assistant entries with Cline's ``ts`` and
  ``modelInfo``), ``ui_messages.json`` with Cline's ``task`` and ``text`` messages and one
  ``api_req_started`` per model request carrying the session's recorded usage of that request
  (``tokensIn`` = its ``input_tokens``, ``cacheReads``/``cacheWrites`` its cache counts,
  ``tokensOut``; ``cost`` computed at Anthropic's published claude-opus-4-5 prices, which the
  session does not record), and ``task_metadata.json`` (its model usage).
* ``inspect-eval/2025-05-12T20-27-36-04-00_browser.eval`` -- the Inspect AI JSON log of
  ``incoming/inspect-ai`` in Inspect's zipped ``.eval`` form (``header.json`` + one
  ``samples/<id>_epoch_<n>.json``).
* ``langsmith/tau-bench-task48-trial1.runs.jsonl`` -- τ-bench run (task 48, trial 1) as a
  LangSmith export of its chat-model runs (one line per call: prompt and answer serialized with
  ``langchain_core.load.dumpd``).
* ``langgraph/tau-bench-task48-trial1.trace.jsonl`` -- the same τ-bench run as a LangSmith export
  of one LangGraph trace: the root ``LangGraph`` chain run (its output: the whole conversation),
  one ``agent`` node run per model call (input: the state so far, output: the new AIMessage)
  with its ``ChatOpenAI`` llm run (prompt and answer), one ``tools`` node run per tool step
  (output: the ToolMessages) with a ``tool`` run per call; ``trace_id``/``parent_run_id``/
  ``dotted_order`` as LangSmith writes them, ids made up (UUID5 of their place).
* ``opencode-storage/storage/`` -- that Anthropic list as OpenCode's JSON storage (a session
  file, a file per message and a file per part).
* ``openai-responses/rollout-019b7f94.items.json`` -- the OpenAI Responses API items of the Codex
  CLI rollout ``wild/codex-cli/rollout-...-019b7f94-....jsonl``: the ``payload`` of every
  ``response_item`` line, in order, without Codex's own ``ghost_snapshot`` items.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository root holds the tools package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import derive_formats

#: the fixtures' folder: ``tests/data`` of the repository
HERE = Path(__file__).resolve().parents[1] / "tests" / "data"
SHARED = (HERE.parents[1] / ".." / "shared" / "transcripts").resolve()
CLAUDE = SHARED / "raw/claude-code/snapshot-tests/tests/coverage-test-fix/transcript.jsonl"
CODEX = SHARED / "wild/codex-cli/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
OUT_ANTHROPIC = HERE / "anthropic-messages" / "coverage-test-fix.messages.json"
OUT_RESPONSES = HERE / "openai-responses" / "rollout-019b7f94.items.json"
INSPECT = SHARED / "incoming/inspect-ai/2025-05-12T20-27-36-04-00_browser.json"
OUT_CLINE = HERE / "cline" / "coverage-test-fix.cline.json"
TAU = SHARED / "raw/tau-bench/historical_trajectories/gpt-4o-airline.json"
OUT_LANGSMITH = HERE / "langsmith" / "tau-bench-task48-trial1.runs.jsonl"
OUT_LANGGRAPH = HERE / "langgraph" / "tau-bench-task48-trial1.trace.jsonl"
OUT_OPENCODE = HERE / "opencode-storage" / "storage"
OUT_EVAL = HERE / "inspect-eval" / "2025-05-12T20-27-36-04-00_browser.eval"
OUT_CLINE_TASK = HERE / "cline-task"
#: Anthropic's published claude-opus-4-5 prices, USD per million tokens: input, 5-minute cache
#: write, cache read, output (the cost Cline would record; the Claude Code session records none)
OPUS_45 = (5.0, 6.25, 0.50, 25.0)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def anthropic_messages() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    last_id = None
    for line in _lines(CLAUDE):
        if line.get("type") not in ("user", "assistant") or not isinstance(line.get("message"), dict):
            continue
        msg = line["message"]
        role = msg["role"]
        if role == "assistant":
            target = next((m for m in reversed(out) if m["role"] == "assistant"), None)
            if target is not None and msg.get("id") is not None and msg.get("id") == last_id:
                target["content"].extend(_blocks(msg["content"]))
                continue
            last_id = msg.get("id")
            out.append({"role": "assistant", "content": _blocks(msg["content"])})
        elif out and out[-1]["role"] == "user":
            out[-1]["content"].extend(_blocks(msg["content"]))
        else:
            out.append({"role": "user", "content": _blocks(msg["content"])})
    return out


def response_items() -> list[dict[str, Any]]:
    return [
        line["payload"]
        for line in _lines(CODEX)
        if line.get("type") == "response_item" and line["payload"].get("type") != "ghost_snapshot"
    ]


def _first_arg(args: Any) -> str | None:
    if isinstance(args, dict):
        for value in args.values():
            if isinstance(value, str):
                return value.split("\n", 1)[0]
    return None


def cline_messages() -> list[dict[str, Any]]:
    """The Anthropic list with every ``tool_result`` block written the way Cline and Roo Code
    write results: a user text block ``[<tool> for '<first argument>'] Result:`` followed by the
    result's blocks (an error result gets Cline's ``The tool execution failed`` wording)."""
    names: dict[str, tuple[str, str | None]] = {}
    out = []
    for msg in anthropic_messages():
        if msg["role"] == "assistant":
            for b in msg["content"]:
                if b.get("type") == "tool_use":
                    names[b["id"]] = (b["name"], _first_arg(b.get("input")))
            out.append(msg)
            continue
        blocks: list[Any] = []
        for b in msg["content"]:
            if b.get("type") != "tool_result":
                blocks.append(b)
                continue
            name, arg = names[b["tool_use_id"]]
            header = f"[{name} for '{arg}'] Result:" if arg is not None else f"[{name}] Result:"
            blocks.append({"type": "text", "text": header})
            body = b.get("content")
            if b.get("is_error"):
                blocks.append({"type": "text", "text": "The tool execution failed with the following error:"})
            blocks.extend(
                _blocks(body) if body else [{"type": "text", "text": "(tool did not return anything)"}]
            )
        out.append({"role": "user", "content": blocks})
    return out


def _ms(stamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def cline_task() -> dict[Path, bytes]:
    """The Claude Code session as a Cline task folder (module docstring): the history, the UI log
    with one ``api_req_started`` per request carrying its recorded usage, and the metadata."""
    history = anthropic_messages()
    usage: dict[str, dict[str, Any]] = {}
    model, stamps = "", []  # the assistant messages' times, in order
    for line in _lines(CLAUDE):
        msg = line.get("message")
        if line.get("type") == "assistant" and isinstance(msg, dict):
            if msg["id"] not in usage:
                stamps.append(_ms(line["timestamp"]))
            usage[msg["id"]] = msg["usage"]  # the last streamed line holds the final usage
            model = msg["model"]
    first = _ms(next(x["timestamp"] for x in _lines(CLAUDE) if x.get("type") == "user"))
    info = {"modelId": model, "providerId": "anthropic", "mode": "act"}
    ui: list[dict[str, Any]] = [{"ts": first, "type": "say", "say": "task", "text": _text(history[0])}]
    for i, (msg, u) in enumerate(
        zip([m for m in history if m["role"] == "assistant"], usage.values(), strict=True)
    ):
        ts = stamps[i]
        msg["ts"], msg["modelInfo"] = ts, info
        before = history[: history.index(msg)]
        rin, write, read, out = (
            u["input_tokens"],
            u.get("cache_creation_input_tokens") or 0,
            u.get("cache_read_input_tokens") or 0,
            u["output_tokens"],
        )
        cost = (rin * OPUS_45[0] + write * OPUS_45[1] + read * OPUS_45[2] + out * OPUS_45[3]) / 1e6
        request = {
            "request": _text(before[-1])[:300],
            "tokensIn": rin,
            "tokensOut": out,
            "cacheWrites": write,
            "cacheReads": read,
            "cost": round(cost, 6),
        }
        index = len(before) - 1
        ui.append(
            {
                "ts": ts - 1,
                "type": "say",
                "say": "api_req_started",
                "text": json.dumps(request, ensure_ascii=False),
                "modelInfo": info,
                "conversationHistoryIndex": index,
            }
        )
        said = _text(msg)
        if said:
            ui.append(
                {
                    "ts": ts,
                    "type": "say",
                    "say": "text",
                    "text": said,
                    "partial": False,
                    "modelInfo": info,
                    "conversationHistoryIndex": index + 1,
                }
            )
    folder = OUT_CLINE_TASK / str(first)
    meta = {
        "files_in_context": [],
        "model_usage": [{"ts": first, "model_id": model, "model_provider_id": "anthropic", "mode": "act"}],
        "environment_history": [],
    }
    return {
        folder / "api_conversation_history.json": render(history).encode("utf-8"),
        folder / "ui_messages.json": render(ui).encode("utf-8"),
        folder / "task_metadata.json": render(meta).encode("utf-8"),
    }


def _text(message: dict[str, Any]) -> str:
    """The text blocks of an Anthropic message, joined."""
    return "\n".join(b["text"] for b in message["content"] if b.get("type") == "text" and b.get("text"))


def inspect_eval() -> bytes:
    """The Inspect AI JSON log as Inspect's zipped ``.eval`` form: ``header.json`` (the log
    without ``samples``) and ``samples/<id>_epoch_<n>.json``; fixed member dates, so the bytes
    are reproducible."""
    import io
    import zipfile

    log = json.loads(INSPECT.read_text(encoding="utf-8"))
    members = {"header.json": {k: v for k, v in log.items() if k != "samples"}}
    for sample in log["samples"]:
        members[f"samples/{sample['id']}_epoch_{sample['epoch']}.json"] = sample
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, value in members.items():
            info = zipfile.ZipInfo(name, date_time=(2025, 5, 12, 20, 27, 36))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, json.dumps(value, ensure_ascii=False))
    return buf.getvalue()


def langsmith_runs() -> str:
    """τ-bench run task 48 trial 1 as a LangSmith export of its chat-model runs: one JSON line per
    model call, ``inputs.messages`` = ``[[the prompt]]`` and ``outputs.generations[0][0].message``
    = the answer, each message serialized with ``langchain_core.load.dumpd`` (converted from the
    run's OpenAI messages with ``langchain_core.messages.convert_to_messages``)."""
    from langchain_core.load import dumpd
    from langchain_core.messages import convert_to_messages

    run = next(
        r for r in json.loads(TAU.read_text(encoding="utf-8")) if (r["task_id"], r["trial"]) == (48, 1)
    )
    messages = convert_to_messages(run["traj"])
    lines: list[dict[str, Any]] = []
    for k, msg in enumerate(messages):
        if msg.type != "ai":
            continue
        lines.append(
            {
                "id": f"task48-trial1-call{len(lines)}",
                "name": "ChatOpenAI",
                "run_type": "llm",
                "inputs": {"messages": [[dumpd(m) for m in messages[:k]]]},
                "outputs": {
                    "generations": [[{"text": msg.text, "type": "ChatGeneration", "message": dumpd(msg)}]],
                    "llm_output": {"model_name": "gpt-4o"},
                },
            }
        )
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)


def langgraph_trace() -> str:
    """τ-bench run task 48 trial 1 as one LangGraph trace exported from LangSmith (see the module
    docstring): one JSON line per run, parents before children."""
    import uuid

    from langchain_core.load import dumpd
    from langchain_core.messages import convert_to_messages

    run = next(
        r for r in json.loads(TAU.read_text(encoding="utf-8")) if (r["task_id"], r["trial"]) == (48, 1)
    )
    messages = convert_to_messages(run["traj"])
    ns = uuid.UUID("6f1d3c2e-8a54-4c1b-9d7e-2b0f4a6c8e10")
    root = str(uuid.uuid5(ns, "root"))
    lines: list[dict[str, Any]] = []

    def add(name: str, kind: str, parent: str | None, order: str, **fields: Any) -> str:
        rid = str(uuid.uuid5(ns, order))
        lines.append(
            {
                "id": rid,
                "trace_id": root,
                "parent_run_id": parent,
                "dotted_order": order,
                "name": name,
                "run_type": kind,
                **fields,
            }
        )
        return rid

    first = [dumpd(m) for m in messages[:1]]
    add("LangGraph", "chain", None, "root", inputs={"messages": first},
        outputs={"messages": [dumpd(m) for m in messages]})  # fmt: skip
    lines[0]["id"] = root
    step = 0
    k = 1
    while k < len(messages):
        step += 1
        order = f"root.{step:03d}"
        if messages[k].type == "ai":
            msg = messages[k]
            node = add("agent", "chain", root, order, inputs={"messages": [dumpd(m) for m in messages[:k]]},
                       outputs={"messages": [dumpd(msg)]})  # fmt: skip
            add("ChatOpenAI", "llm", node, f"{order}.001",
                inputs={"messages": [[dumpd(m) for m in messages[:k]]]},
                outputs={"generations": [[{"text": msg.text, "type": "ChatGeneration", "message": dumpd(msg)}]],
                         "llm_output": {"model_name": "gpt-4o"}})  # fmt: skip
            k += 1
            continue
        j = k
        while j < len(messages) and messages[j].type == "tool":
            j += 1
        if j == k:  # a user turn: the graph's input, not a node's output
            k += 1
            continue
        results = messages[k:j]
        node = add("tools", "chain", root, order, inputs={"messages": [dumpd(m) for m in messages[:k]]},
                   outputs={"messages": [dumpd(m) for m in results]})  # fmt: skip
        for n, res in enumerate(results, 1):
            add(str(getattr(res, "name", None) or "tool"), "tool", node, f"{order}.{n:03d}",
                inputs={"input": ""}, outputs={"output": res.text})  # fmt: skip
        k = j
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)


def opencode_storage() -> dict[Path, bytes]:
    """The Anthropic list above as OpenCode's JSON storage (``Storage.write`` keys of OpenCode's
    ``session/message-v2``): ``session/<project>/<session>.json``, a ``message/<session>/`` file
    per user or assistant message and a ``part/<message>/`` file per part -- user text blocks as
    ``text`` parts; an assistant message as a ``step-start`` part, its text (``text``), thinking
    (``reasoning``) and ``tool_use`` blocks (``tool`` parts whose ``state`` is the matching
    ``tool_result``: ``completed`` with its output, or ``error``)."""
    session, project = "ses_0coverage", "prj_coverage"
    messages = anthropic_messages()
    results = {
        b["tool_use_id"]: b
        for m in messages
        if m["role"] == "user"
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    files: dict[Path, Any] = {
        OUT_OPENCODE / "session" / project / f"{session}.json": {
            "id": session,
            "projectID": project,
            "directory": "/tmp/coverage-test-fix",
            "title": "coverage-test-fix (derived from a Claude Code run)",
            "version": "0.15.0",
            "time": {"created": 0, "updated": 0},
        }
    }
    n = 0
    for msg in messages:
        blocks = [b for b in msg["content"] if b.get("type") != "tool_result"]
        if not blocks:
            continue
        n += 1
        mid = f"msg_{n:04d}"
        info: dict[str, Any] = {"id": mid, "sessionID": session, "role": msg["role"], "time": {"created": n}}
        parts: list[dict[str, Any]] = []
        if msg["role"] == "assistant":
            info.update(modelID="claude-sonnet-4-5", providerID="anthropic", mode="build", agent="build")
            parts.append({"type": "step-start"})
        for b in blocks:
            if b["type"] == "text":
                parts.append({"type": "text", "text": b["text"]})
            elif b["type"] == "thinking":
                parts.append({"type": "reasoning", "text": b.get("thinking", ""), "time": {"start": n}})
            elif b["type"] == "tool_use":
                res = results[b["id"]]
                body = res.get("content")
                text = body if isinstance(body, str) else "".join(x.get("text", "") for x in body or [])
                state = (
                    {"status": "error", "input": b["input"], "error": text, "time": {"start": n, "end": n}}
                    if res.get("is_error")
                    else {
                        "status": "completed",
                        "input": b["input"],
                        "output": text,
                        "title": b["name"],
                        "metadata": {},
                        "time": {"start": n, "end": n},
                    }
                )
                parts.append({"type": "tool", "callID": b["id"], "tool": b["name"], "state": state})
        files[OUT_OPENCODE / "message" / session / f"{mid}.json"] = info
        for k, part in enumerate(parts, 1):
            pid = f"prt_{n:04d}{k:02d}"
            files[OUT_OPENCODE / "part" / mid / f"{pid}.json"] = {
                "id": pid,
                "sessionID": session,
                "messageID": mid,
                **part,
            }
    return {p: render(v).encode("utf-8") for p, v in files.items()}


def render(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str]) -> int:
    outputs: dict[Path, bytes] = {
        OUT_ANTHROPIC: render(anthropic_messages()).encode("utf-8"),
        OUT_RESPONSES: render(response_items()).encode("utf-8"),
        OUT_CLINE: render(cline_messages()).encode("utf-8"),
        OUT_EVAL: inspect_eval(),
        OUT_LANGSMITH: langsmith_runs().encode("utf-8"),
        OUT_LANGGRAPH: langgraph_trace().encode("utf-8"),
        **opencode_storage(),
        **cline_task(),
        **derive_formats.outputs(),
    }
    if "--check" in argv:
        stale = [str(p) for p, data in outputs.items() if not p.is_file() or p.read_bytes() != data]
        if stale:
            print(f"out of date: {stale}", file=sys.stderr)
        return 1 if stale else 0
    for path, data in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
