"""The headless stream of the Codex CLI (``codex_exec_json``): ``codex exec --json PROMPT``.

Shape (one JSON object per line; the event types of ``codex-rs/exec/src/exec_events.rs``,
https://github.com/openai/codex, Apache-2.0): ``thread.started{thread_id}``, ``turn.started``,
``item.started|item.updated|item.completed{item}``, ``turn.completed{usage: {input_tokens,
cached_input_tokens, output_tokens}}``, ``turn.failed{error}``, ``error{message}``.  An item has
an ``id`` and a ``type``: ``agent_message{text}``, ``reasoning{text}``,
``command_execution{command, aggregated_output, exit_code, status}``, ``file_change{changes:
[{path, kind}], status}``, ``mcp_tool_call{server, tool, arguments, result{content}, error,
status}``, ``web_search{query}``, ``todo_list{items}``, ``error{message}``.

Conversion (the completed items, in order): ``agent_message`` and ``reasoning`` text start or
join the current AIMessage (reasoning in ``additional_kwargs["reasoning"]``); a
``command_execution`` is a ``shell`` call ``{command}`` with its output as the result
(``status="error"`` when it failed), an ``mcp_tool_call`` a ``<server>.<tool>`` call with its
result's text (or error); a call after a result starts a new AIMessage (the model saw the
result).  **What the stream does not hold is said**: the prompt (Codex does not echo it: a
warning, ``metadata["prompt_missing"]``), a ``file_change``'s patch (its call is
``apply_patch {changes}`` with the status as result; counted and warned), a ``web_search``'s
results (a ``web_search {query}`` call whose result is an empty message marked
``SYNTHETIC_KEY``; warned), items started but never completed (warned), ``todo_list`` plans and
``error`` items (counted in ``metadata["skipped_items"]``).  The usage is per turn, not per model
call: ``metadata["turn_usage"]`` keeps it and no AIMessage gets ``usage_metadata``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import MessageBuilder, iter_jsonl, read_text, split_lines, tool_call, warn
from ctxlab.transcripts.base import SYNTHETIC_KEY, Transcript, TranscriptError

_EVENTS = frozenset(
    {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
     "item.completed", "error"}
)  # fmt: skip


def _is_event(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("type") in _EVENTS
        and ("thread_id" in obj or "item" in obj or "usage" in obj or obj.get("type") == "turn.started")
    )


def _mcp_text(item: dict[str, Any]) -> tuple[str, bool]:
    error = item.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"]), True
    result = item.get("result")
    content = result.get("content") if isinstance(result, dict) else None
    texts = [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    return ("\n".join(texts) if texts else json.dumps(result, ensure_ascii=False)), item.get(
        "status"
    ) == "failed"


class CodexExecFormat:
    name = "codex_exec_json"
    description = "codex exec --json: thread/turn/item events (commands, messages, MCP calls)"

    def sniff(self, path: Path, head: str) -> bool:
        for line in split_lines(head)[:3]:
            if line.strip():
                try:
                    return _is_event(json.loads(line))
                except (json.JSONDecodeError, RecursionError):
                    return False
        return False

    def match_line(self, obj: Any) -> bool:
        return _is_event(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        b = MessageBuilder(path.name)
        meta: dict[str, Any] = {"turn_usage": [], "skipped_items": {}}
        skipped: Counter[str] = Counter()
        started: dict[str, str] = {}
        unknown: dict[str, int] = {"file_change": 0, "web_search": 0}
        ai: dict[str, Any] | None = None  # the AIMessage being built: text, reasoning, calls

        def flush() -> None:
            nonlocal ai
            if ai is not None:
                extra = {"reasoning": ai["reasoning"]} if ai["reasoning"] else {}
                b.ai(ai["text"], ai["calls"], **extra)
                for call_id, name, content, error, made_up in ai["results"]:
                    b.tool(content, call_id, name, error=error, **({SYNTHETIC_KEY: True} if made_up else {}))
            ai = None

        def current(new_call: bool) -> dict[str, Any]:
            nonlocal ai
            if ai is not None and new_call and ai["results"]:
                flush()  # a call after a result: the model saw the result
            if ai is None:
                ai = {"text": "", "reasoning": "", "calls": [], "results": []}
            return ai

        for lineno, ev in iter_jsonl(path, read_text(path)):
            if not isinstance(ev, dict):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
            kind = ev.get("type")
            if kind == "thread.started":
                meta["thread_id"] = ev.get("thread_id")
            elif kind == "turn.completed" and isinstance(ev.get("usage"), dict):
                meta["turn_usage"].append(ev["usage"])
            elif kind in ("item.started", "item.updated") and isinstance(ev.get("item"), dict):
                started[str(ev["item"].get("id"))] = str(ev["item"].get("type"))
            elif kind == "item.completed" and isinstance(ev.get("item"), dict):
                item = ev["item"]
                started.pop(str(item.get("id")), None)
                self._item(item, lineno, current, skipped, unknown)
            elif kind in ("turn.failed", "error"):
                skipped[kind] += 1
        flush()
        meta["skipped_items"] = dict(skipped)
        t = b.transcript(path, self.name, metadata=meta)
        if not t.messages:
            raise TranscriptError(path, "line 1", "no completed message or tool item in the stream")
        warn(
            path,
            "the stream holds no prompt (codex exec does not echo it): the run starts at the reply",
            meta,
        )
        meta["prompt_missing"] = True
        if unknown["file_change"]:
            warn(
                path,
                f"{unknown['file_change']} file_change item(s) without their patch (only paths and status)",
                meta,
            )
        if unknown["web_search"]:
            warn(
                path,
                f"{unknown['web_search']} web_search item(s) without their results (empty results added, marked)",
                meta,
            )
        if started:
            warn(
                path,
                f"{len(started)} item(s) started but never completed (left out): {', '.join(started.values())}",
                meta,
            )
        return [t]

    def _item(
        self, item: dict[str, Any], lineno: int, current: Any, skipped: Counter[str], unknown: dict[str, int]
    ) -> None:
        kind = item.get("type")
        item_id = f"{item.get('id') or 'item'}@{lineno}"
        if kind == "agent_message":
            cur = current(False)
            cur["text"] = "\n\n".join(x for x in (cur["text"], str(item.get("text") or "")) if x)
        elif kind == "reasoning":
            cur = current(False)
            cur["reasoning"] = "\n\n".join(x for x in (cur["reasoning"], str(item.get("text") or "")) if x)
        elif kind == "command_execution":
            cur = current(True)
            cur["calls"].append(tool_call("shell", {"command": item.get("command")}, item_id))
            failed = item.get("status") in ("failed", "declined")
            cur["results"].append((item_id, "shell", str(item.get("aggregated_output") or ""), failed, False))
        elif kind == "mcp_tool_call":
            name = f"{item.get('server')}.{item.get('tool')}"
            cur = current(True)
            cur["calls"].append(tool_call(name, item.get("arguments"), item_id))
            text, failed = _mcp_text(item)
            cur["results"].append((item_id, name, text, failed, False))
        elif kind == "file_change":
            cur = current(True)
            cur["calls"].append(tool_call("apply_patch", {"changes": item.get("changes")}, item_id))
            cur["results"].append(
                (item_id, "apply_patch", str(item.get("status") or ""), item.get("status") == "failed", False)
            )
            unknown["file_change"] += 1
        elif kind == "web_search":
            cur = current(True)
            cur["calls"].append(tool_call("web_search", {"query": item.get("query")}, item_id))
            cur["results"].append((item_id, "web_search", "", False, True))
            unknown["web_search"] += 1
        else:
            skipped[str(kind)] += 1

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = CodexExecFormat()
