"""The headless stream of Claude Code (``claude_stream_json``): ``claude -p PROMPT
--output-format stream-json --verbose`` (also the Claude Agent SDK's message stream).

Shape (one JSON object per line, Claude Code's documented SDK message types): a
``{type: "system", subtype: "init", session_id, model, tools: [names], cwd, ...}`` line, then
``{type: "assistant" | "user", message: <Anthropic message>, session_id, parent_tool_use_id}``
lines (``parent_tool_use_id`` is the Task call a sub-agent's line belongs to, ``null`` in the main
run), and a closing ``{type: "result", subtype, result, usage, total_cost_usd, num_turns, ...}``.
A ``user`` line echoing the prompt appears only with ``--replay-user-messages`` (or stream
input).

Conversion: the message lines are read as Claude Code session lines are
(:mod:`ctxlab.transcripts.claude_code_lines`: streamed parts of one message id merged, tool
results as ToolMessages, ``<synthetic>`` turns marked, usage per call); lines with a
``parent_tool_use_id`` are the sub-agent's run of that Task call (``run_id``
``agent-<tool_use_id>``, ``metadata["parent_run"]``, ``["parent_tool_call_id"]``).  The init line
gives the model, the tool names (``metadata["tool_names"]``) and the session; the result line its
totals (``metadata["result"]``: subtype, turns, cost, duration, usage).  **The prompt is not in
the stream** unless it was replayed: a run that starts with the model's reply is loaded as it is
and said in a warning.  Other system lines (``compact_boundary``, hooks) are counted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._util import iter_jsonl, read_text, split_lines, warn
from ctxlab.transcripts.base import Transcript, TranscriptError
from ctxlab.transcripts.claude_code_lines import Run

_RESULT_KEYS = ("subtype", "is_error", "num_turns", "total_cost_usd", "duration_ms", "usage", "result")


def _is_stream_line(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("type"), str)
        and "session_id" in obj
        and (obj.get("subtype") == "init" or "parent_tool_use_id" in obj or obj.get("type") == "result")
    )


class ClaudeStreamFormat:
    name = "claude_stream_json"
    description = "claude -p --output-format stream-json: init, assistant/user messages, result"

    def sniff(self, path: Path, head: str) -> bool:
        for line in split_lines(head)[:5]:
            if line.strip():
                try:
                    return _is_stream_line(json.loads(line))
                except (json.JSONDecodeError, RecursionError):
                    return False
        return False

    def match_line(self, obj: Any) -> bool:
        return _is_stream_line(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        main = Run()
        subs: dict[str, Run] = {}
        init: dict[str, Any] = {}
        result: dict[str, Any] = {}
        skipped: Counter[str] = Counter()
        for lineno, ev in iter_jsonl(path, read_text(path)):
            if not isinstance(ev, dict):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
            kind = ev.get("type")
            if kind == "system" and ev.get("subtype") == "init":
                init = ev
            elif kind == "result":
                result = {k: ev[k] for k in _RESULT_KEYS if k in ev}
            elif kind in ("user", "assistant") and isinstance(ev.get("message"), dict):
                parent = ev.get("parent_tool_use_id")
                run = subs.setdefault(str(parent), Run(parent_call=parent)) if parent else main
                run.add(path, lineno, ev, {}, "")
            else:
                skipped[f"{kind}:{ev.get('subtype')}" if ev.get("subtype") else str(kind)] += 1
        if not main.has_messages:
            raise TranscriptError(path, "line 1", "no assistant or user message in the stream")
        model = main.model or (init.get("model") if isinstance(init.get("model"), str) else None)
        meta: dict[str, Any] = {
            "session_id": init.get("session_id"),
            "tool_names": [t for t in init.get("tools") or [] if isinstance(t, str)],
            "skipped_events": dict(skipped),
            "result": result,
            "sub_agent_runs": [f"agent-{k}" for k in subs],
        }
        t, _ = main.build(path, path.name, self.name, model, meta)
        first = next((m for m in t.messages), None)
        if isinstance(first, AIMessage):
            warn(
                path,
                "the stream starts with the model's reply: the prompt is not in it (not replayed)",
                t.metadata,
            )
            t.metadata["prompt_missing"] = True
        out = [t]
        for key, run in subs.items():
            sub_meta = {
                "parent_run": path.name,
                "parent_tool_call_id": key,
                "session_id": init.get("session_id"),
            }
            sub, _ = run.build(path, f"agent-{key}", self.name, run.model or model, sub_meta)
            out.append(sub)
        return out

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = ClaudeStreamFormat()
