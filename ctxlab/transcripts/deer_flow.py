"""DeerFlow 1.x replays (SOURCES.md format **F9**): a Server-Sent-Events text stream.

Shape: blocks separated by a blank line, each ``event: <name>`` then ``data: <one-line JSON>``.
Every ``data`` has ``thread_id``, ``id`` (the message id: one message spans many events),
``role`` and usually ``agent``.  Events: ``message_chunk`` (a text delta in ``content``,
``finish_reason`` on the last chunk), ``tool_calls`` (opens calls: ``tool_calls`` parsed so far
plus ``tool_call_chunks``), ``tool_call_chunks`` (argument fragments ``[{name, args, id, index}]``),
``tool_call_result`` (the tool output in ``content`` with ``tool_call_id``), ``interrupt`` (the
human-feedback prompt with ``options``).

Conversion: events are grouped by message ``id`` in order of first appearance.  A message's
``content`` deltas are concatenated; its tool calls are stitched from ``tool_call_chunks`` by
``index`` (first non-empty name and id, argument fragments concatenated, then parsed as JSON --
``{"_raw": text}`` when that fails).  ``role: user`` -> HumanMessage, ``tool_call_result`` ->
ToolMessage, anything else -> AIMessage (``response_metadata`` ``agent``, ``finish_reason``).
An ``interrupt`` is the graph's human-feedback prompt (``"Please Review the Plan."`` with
``options``), written by DeerFlow and not by a model call: it is not a message; it is kept in
``metadata["interrupts"]`` (``[{id, content, options}]``).  A message group holding an interrupt
and model text keeps the text as an AIMessage.
Handoff calls (``handoff_to_planner``) have no result in the stream: they stay unanswered.

Errors: ``line N`` for a line that is not an SSE field, for ``data`` that is not a JSON object, or
for a ``data`` without ``id``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import MessageBuilder, read_text, split_lines, tool_call
from ctxlab.transcripts.base import Transcript, TranscriptError

_FIRST_EVENT = re.compile(r"\A(?:\s*\n)*event: ?[A-Za-z_]+\r?\ndata: ?\{")


def iter_sse(path: Path, text: str) -> list[tuple[int, str, Any]]:
    """``(line of the data, event name, parsed data)`` for every SSE block.

    Multiple ``data:`` lines of one block are joined with newlines (SSE rules); comment lines
    (``:``) and ``id:``/``retry:`` fields are ignored.
    """
    out: list[tuple[int, str, Any]] = []
    event = "message"
    data: list[str] = []
    data_line = 0

    def dispatch() -> None:
        nonlocal event, data
        if data:
            payload = "\n".join(data)
            try:
                value = json.loads(payload)
            except json.JSONDecodeError as exc:
                raise TranscriptError(
                    path, f"line {data_line}", f"data is not valid JSON: {exc.msg}"
                ) from exc
            out.append((data_line, event, value))
        event, data = "message", []

    for lineno, line in enumerate(split_lines(text), 1):
        if not line.strip():
            dispatch()
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            if not data:
                data_line = lineno
            data.append(value)
        elif field in ("id", "retry"):
            continue
        else:
            raise TranscriptError(path, f"line {lineno}", f"not a server-sent-events field: {line[:60]!r}")
    dispatch()
    return out


class DeerFlowFormat:
    name = "deer_flow"
    description = "DeerFlow 1.x SSE replay (F9): message chunks stitched by message id"

    def sniff(self, path: Path, head: str) -> bool:
        return bool(_FIRST_EVENT.match(head.lstrip("\ufeff")))

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        events = iter_sse(path, read_text(path))
        if not events:
            raise TranscriptError(path, "line 1", "no server-sent events")
        order: list[str] = []
        groups: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        counts: Counter[str] = Counter()
        threads: list[str] = []
        for lineno, name, data in events:
            if not isinstance(data, dict):
                raise TranscriptError(path, f"line {lineno}", "data is not a JSON object")
            if "id" not in data or data["id"] is None:
                raise TranscriptError(path, f"line {lineno}, key id", "missing")
            mid = str(data["id"])
            counts[name] += 1
            if data.get("thread_id") and data["thread_id"] not in threads:
                threads.append(data["thread_id"])
            if mid not in groups:
                groups[mid] = []
                order.append(mid)
            groups[mid].append((lineno, name, data))
        b = MessageBuilder(path.name)
        agents: list[str] = []
        found: list[dict[str, Any]] = []
        for mid in order:
            group = groups[mid]
            first = group[0][2]
            agent = next((d["agent"] for _, _, d in group if d.get("agent")), None)
            if agent and agent not in agents:
                agents.append(agent)
            results = [d for _, name, d in group if name == "tool_call_result"]
            interrupts = [d for _, name, d in group if name == "interrupt"]
            text = "".join(
                d["content"]
                for _, name, d in group
                if name == "message_chunk" and isinstance(d.get("content"), str)
            )
            finish = next((d["finish_reason"] for _, _, d in group if d.get("finish_reason")), None)
            meta = {k: v for k, v in (("agent", agent), ("finish_reason", finish)) if v}
            if results:
                for d in results:
                    b.tool(d.get("content", ""), d.get("tool_call_id"))
            elif interrupts:
                for d in interrupts:
                    found.append({"id": mid, "content": d.get("content"), "options": d.get("options", [])})
                if text:
                    b.ai(text, _stitch_calls(group), response_metadata=meta)
            elif first.get("role") == "user":
                b.human(text)
            else:
                b.ai(text, _stitch_calls(group), response_metadata=meta)
        meta = {"thread_ids": threads, "agents": agents, "events": dict(counts), "interrupts": found}
        return [b.transcript(path, self.name, metadata=meta)]


def _stitch_calls(group: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Tool calls of one message from its ``tool_call_chunks`` (by ``index``), else ``tool_calls``."""
    parts: dict[int, dict[str, Any]] = {}
    for _, _, d in group:
        for chunk in d.get("tool_call_chunks") or []:
            if not isinstance(chunk, dict):
                continue
            idx = chunk.get("index")
            acc = parts.setdefault(idx if isinstance(idx, int) else 0, {"name": None, "id": None, "args": ""})
            if chunk.get("name") and not acc["name"]:
                acc["name"] = chunk["name"]
            if chunk.get("id") and not acc["id"]:
                acc["id"] = chunk["id"]
            if isinstance(chunk.get("args"), str):
                acc["args"] += chunk["args"]
    if parts:
        return [tool_call(p["name"], p["args"], p["id"]) for _, p in sorted(parts.items())]
    calls = []
    for _, _, d in group:
        for tc in d.get("tool_calls") or []:
            if isinstance(tc, dict) and tc.get("name"):
                calls.append(tool_call(tc["name"], tc.get("args"), tc.get("id")))
    return calls


FORMAT = DeerFlowFormat()
