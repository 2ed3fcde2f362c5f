"""Claude Code session JSONL (SOURCES.md format **F7**), one event per line.

Shape: each line has ``type`` in ``user``/``assistant``/``queue-operation``/``system``/...;
common fields ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``cwd``, ``version``,
``gitBranch``, ``isSidechain``, ``isMeta``.  ``message`` is an Anthropic Messages API object:
assistant ``content`` blocks ``text``, ``thinking``, ``tool_use{id, name, input}``, plus ``model``
and ``id``; user ``content`` is a string or blocks, tool results being
``tool_result{tool_use_id, content, is_error}``.  One streamed assistant turn spans several lines
sharing ``message.id``.

Conversion:

* assistant lines sharing ``message.id`` are merged into one AIMessage (text and tool_use in
  order; a later line of the same id is merged even when tool results came in between, so the
  results follow the whole turn).  Text alone becomes a string; thinking/other blocks keep the
  content a list of blocks.
* a user line with string content -> HumanMessage (``is_meta`` kept for hook feedback etc.);
  with blocks, each ``tool_result`` -> ToolMessage (``status="error"`` when ``is_error``) and each
  run of other blocks -> one HumanMessage, in source order.
* other line types (``queue-operation``, ``system``, ``summary``, ...) are not messages; they are
  counted in ``metadata["skipped_events"]``.

Results whose ``tool_use_id`` has no earlier call are kept as they are (orphans are possible
in resumed or compacted sessions).  Errors: ``line N`` for a bad line, ``line N, key
message.content`` for a bad shape.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import (
    HEAD_BYTES,
    MessageBuilder,
    iter_jsonl,
    read_text,
    split_lines,
    text_content,
    tool_call,
)
from ctxlab.transcripts.base import Transcript, TranscriptError

_TYPE = re.compile(
    r'"type"\s*:\s*"(user|assistant|queue-operation|summary|system|file-history-snapshot|progress)"'
)


#: line types of a Claude Code session file (only user/assistant lines become messages)
EVENT_TYPES = frozenset(
    {"user", "assistant", "queue-operation", "summary", "system", "file-history-snapshot", "progress"}
)
_ID_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")


def _looks_like_event(obj: Any) -> bool:
    """A session line: an object with a string ``type`` and one of the session's id keys."""
    return isinstance(obj, dict) and isinstance(obj.get("type"), str) and any(k in obj for k in _ID_KEYS)


def _is_message_line(obj: Any) -> bool:
    return (
        _looks_like_event(obj)
        and obj.get("type") in ("user", "assistant")
        and isinstance(obj.get("message"), dict)
    )


class ClaudeCodeFormat:
    name = "claude_code"
    description = "Claude Code session JSONL (F7): Anthropic content blocks, tool_use/tool_result"

    def sniff(self, path: Path, head: str) -> bool:
        """True when the first complete lines are session lines and one of them is a message
        (or all are known bookkeeping lines)."""
        lines = split_lines(head)[:50]
        if len(head.encode("utf-8", errors="replace")) >= HEAD_BYTES and len(lines) > 1:
            lines = lines[:-1]  # the last line may be cut by the head limit
        objs = []
        for line in lines:
            if line.strip():
                try:
                    objs.append(json.loads(line))
                except (json.JSONDecodeError, RecursionError):  # not a line of ours (or absurdly deep)
                    break
        if objs:
            if not all(_looks_like_event(o) for o in objs):
                return False
            return any(_is_message_line(o) for o in objs) or all(o["type"] in EVENT_TYPES for o in objs)
        line = head.lstrip().split("\n", 1)[0]  # one line longer than the head
        return (
            line.startswith("{")
            and bool(_TYPE.search(line))
            and ('"sessionId"' in line or '"parentUuid"' in line)
        )

    def match_line(self, obj: Any) -> bool:
        return _looks_like_event(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        entries: list[dict[str, Any]] = []
        last_ai: dict[str, Any] | None = None
        skipped: Counter[str] = Counter()
        models: Counter[str] = Counter()
        session: dict[str, Any] = {}
        for lineno, ev in iter_jsonl(path, read_text(path)):
            if not isinstance(ev, dict):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
            kind = ev.get("type")
            for key in ("sessionId", "cwd", "version", "gitBranch"):
                if key not in session and ev.get(key):
                    session[key] = ev[key]
            if kind not in ("user", "assistant") or not isinstance(ev.get("message"), dict):
                skipped[str(kind)] += 1
                continue
            msg = ev["message"]
            content = msg.get("content")
            if not isinstance(content, (str, list)):
                raise TranscriptError(
                    path, f"line {lineno}, key message.content", "expected a string or a list of blocks"
                )
            flags = {
                k: True for k, src in (("is_meta", "isMeta"), ("is_sidechain", "isSidechain")) if ev.get(src)
            }
            if kind == "assistant":
                mid = msg.get("id")
                if isinstance(msg.get("model"), str) and msg["model"] != "<synthetic>":
                    models[msg["model"]] += 1
                if last_ai is None or not mid or last_ai["mid"] != mid:
                    last_ai = {"kind": "ai", "mid": mid, "blocks": [], "calls": [], "flags": flags}
                    entries.append(last_ai)
                blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
                for j, block in enumerate(blocks):
                    _check_block(path, block, lineno, j)
                    if block.get("type") == "tool_use":
                        last_ai["calls"].append(
                            tool_call(block.get("name"), block.get("input"), block.get("id"))
                        )
                    else:
                        last_ai["blocks"].append(block)
                continue
            if isinstance(content, str):
                entries.append({"kind": "human", "content": content, "flags": flags})
                continue
            pending: list[Any] = []
            for j, block in enumerate(content):
                _check_block(path, block, lineno, j)
                if block.get("type") == "tool_result":
                    if pending:
                        entries.append({"kind": "human", "content": pending, "flags": flags})
                        pending = []
                    entries.append(
                        {
                            "kind": "tool",
                            "content": block.get("content"),
                            "id": block.get("tool_use_id"),
                            "error": bool(block.get("is_error")),
                            "flags": flags,
                        }
                    )
                else:
                    pending.append(block)
            if pending:
                entries.append({"kind": "human", "content": pending, "flags": flags})
        run_id = path.name
        b = MessageBuilder(run_id)
        for e in entries:
            if e["kind"] == "ai":
                b.ai(_ai_content(e["blocks"]), e["calls"], **e["flags"])
            elif e["kind"] == "human":
                b.human(e["content"], **e["flags"])
            else:
                b.tool(e["content"], e["id"], error=e["error"], **e["flags"])
        if not b.messages:
            raise TranscriptError(path, "line 1", "no user or assistant messages in the session")
        meta = {**session, "skipped_events": dict(skipped)}
        model = models.most_common(1)[0][0] if models else None
        return [b.transcript(path, self.name, model=model, metadata=meta)]


def _check_block(path: Path, block: Any, lineno: int, j: int) -> None:
    if not isinstance(block, dict):
        raise TranscriptError(
            path, f"line {lineno}, key message.content[{j}]", "expected a content block object"
        )


def _ai_content(blocks: list[dict[str, Any]]) -> str | list[Any]:
    """One text block -> its text; no blocks -> ""; otherwise the list of blocks."""
    if not blocks:
        return ""
    return text_content(blocks)


FORMAT = ClaudeCodeFormat()
