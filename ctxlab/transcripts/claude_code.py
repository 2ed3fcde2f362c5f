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
* **recorded compaction**: a ``system`` line with ``subtype: "compact_boundary"``
  (``compactMetadata{trigger, preTokens}``) marks where Claude Code compacted; the next user line
  with ``isCompactSummary: true`` holds the summary it continued from.  That HumanMessage is
  marked ``additional_kwargs[RECORDED_COMPACTION_KEY] = {index, trigger, pre_tokens, source,
  line}`` (:data:`ctxlab.transcripts.base.RECORDED_COMPACTION_KEY`); ``metadata["compactions"]``
  counts the boundaries.
* **sub-agents**: lines with ``isSidechain: true`` (a Task sub-agent's turns, which never reached
  the main model) and the nested ``data.message`` of ``progress`` lines with ``data.type:
  "agent_progress"`` are loaded as their own runs, one per ``agentId`` (``run_id``
  ``agent-<agentId>``, ``agent-sidechain`` without one), after the main run; each has
  ``metadata["parent_run"]`` (the main run's id), ``agent_id`` and ``parent_tool_call_id`` (the
  ``parentToolUseID`` of its progress lines, the main run's Task call), and the main run lists
  them in ``metadata["sub_agent_runs"]``.  A file holding only one sub-agent's lines (Claude
  Code's ``subagents/agent-<id>.jsonl``) is that run, named as a single-run file.
* **usage**: each AIMessage gets the provider's counts of its call as ``usage_metadata`` (the
  ``usage`` of the turn's last streamed line; input = ``input_tokens`` + cache reads + cache
  writes, with ``input_token_details``).

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
    usage_metadata,
)
from ctxlab.transcripts.base import RECORDED_COMPACTION_KEY, Transcript, TranscriptError

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
        runs: dict[str | None, _Run] = {None: _Run()}  # None: the main run; else a sub-agent's id
        skipped: Counter[str] = Counter()
        session: dict[str, Any] = {}
        boundary: dict[str, Any] | None = None  # the last compact_boundary not yet followed
        compactions = 0
        for lineno, ev in iter_jsonl(path, read_text(path)):
            if not isinstance(ev, dict):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
            kind = ev.get("type")
            for key in ("sessionId", "cwd", "version", "gitBranch"):
                if key not in session and ev.get(key):
                    session[key] = ev[key]
            if kind == "system" and ev.get("subtype") == "compact_boundary":
                raw_meta = ev.get("compactMetadata")
                meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
                boundary = {
                    "index": compactions,
                    "trigger": meta.get("trigger"),
                    "pre_tokens": meta.get("preTokens"),
                    "source": "compact_boundary",
                    "line": lineno,
                }
                compactions += 1
                skipped["system:compact_boundary"] += 1
                continue
            data = ev.get("data")
            if kind == "progress" and isinstance(data, dict) and data.get("type") == "agent_progress":
                inner = data.get("message")
                agent = str(data.get("agentId") or ev.get("parentToolUseID") or "agent")
                run = runs.setdefault(agent, _Run(parent_call=ev.get("parentToolUseID")))
                if (
                    isinstance(inner, dict)
                    and inner.get("type") in ("user", "assistant")
                    and isinstance(inner.get("message"), dict)
                ):
                    run.add(path, lineno, inner, {}, "data.message.")
                    continue
                skipped["progress:agent_progress"] += 1
                continue
            if kind not in ("user", "assistant") or not isinstance(ev.get("message"), dict):
                skipped[str(kind)] += 1
                continue
            flags: dict[str, Any] = {"is_meta": True} if ev.get("isMeta") else {}
            if ev.get("isSidechain"):  # a sub-agent's line: never sent to the main model
                agent = str(ev.get("agentId") or "sidechain")
                runs.setdefault(agent, _Run()).add(path, lineno, ev, flags, "")
                continue
            if ev.get("isCompactSummary"):
                mark = boundary or {"index": compactions, "trigger": None, "pre_tokens": None}
                flags[RECORDED_COMPACTION_KEY] = {**mark, "source": "isCompactSummary"}
                if boundary is None:
                    compactions += 1
                boundary = None
            runs[None].add(path, lineno, ev, flags, "")
        main = runs.pop(None)
        subs = [(str(key), f"agent-{key}", run) for key, run in runs.items() if run.entries]
        if not main.entries and len(subs) == 1 and not runs[subs[0][0]].parent_call:
            # a sub-agent's own file (Claude Code's subagents/agent-<id>.jsonl): its one run
            agent_id, _, run = subs[0]
            sub_model = run.models.most_common(1)[0][0] if run.models else None
            meta = {**session, "skipped_events": dict(skipped), "agent_id": agent_id, "parent_run": None}
            return [run.build(path, path.name, self.name, sub_model, meta)]
        if not main.entries:
            raise TranscriptError(path, "line 1", "no user or assistant messages in the session")
        model = main.models.most_common(1)[0][0] if main.models else None
        run_meta = {
            **session,
            "skipped_events": dict(skipped),
            "compactions": compactions,
            "sub_agent_runs": [run_id for _, run_id, _ in subs],
        }
        out = [main.build(path, path.name, self.name, model, run_meta)]
        for agent_id, run_id, run in subs:
            sub_meta = {
                **session,
                "parent_run": path.name,
                "agent_id": agent_id,
                "parent_tool_call_id": run.parent_call,
            }
            sub_model = run.models.most_common(1)[0][0] if run.models else model
            out.append(run.build(path, run_id, self.name, sub_model, sub_meta))
        return out


class _Run:
    """The entries of one run of a session file (the main run, or one sub-agent's)."""

    def __init__(self, parent_call: Any = None) -> None:
        self.entries: list[dict[str, Any]] = []
        self.last_ai: dict[str, Any] | None = None
        self.models: Counter[str] = Counter()
        self.parent_call = parent_call if isinstance(parent_call, str) else None

    def add(self, path: Path, lineno: int, ev: dict[str, Any], flags: dict[str, Any], key: str) -> None:
        """Add one ``user``/``assistant`` line (``key`` prefixes error places)."""
        msg = ev["message"]
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            raise TranscriptError(
                path, f"line {lineno}, key {key}message.content", "expected a string or a list of blocks"
            )
        if ev.get("type") == "assistant":
            mid = msg.get("id")
            if isinstance(msg.get("model"), str) and msg["model"] != "<synthetic>":
                self.models[msg["model"]] += 1
            if self.last_ai is None or not mid or self.last_ai["mid"] != mid:
                self.last_ai = {"kind": "ai", "mid": mid, "blocks": [], "calls": [], "flags": flags}
                self.entries.append(self.last_ai)
            if isinstance(msg.get("usage"), dict):  # streamed lines repeat it; the last is final
                self.last_ai["usage"] = msg["usage"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for j, block in enumerate(blocks):
                _check_block(path, block, lineno, j)
                if block.get("type") == "tool_use":
                    self.last_ai["calls"].append(
                        tool_call(block.get("name"), block.get("input"), block.get("id"))
                    )
                else:
                    self.last_ai["blocks"].append(block)
            return
        if isinstance(content, str):
            self.entries.append({"kind": "human", "content": content, "flags": flags})
            return
        pending: list[Any] = []
        for j, block in enumerate(content):
            _check_block(path, block, lineno, j)
            if block.get("type") == "tool_result":
                if pending:
                    self.entries.append({"kind": "human", "content": pending, "flags": flags})
                    pending = []
                self.entries.append(
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
            self.entries.append({"kind": "human", "content": pending, "flags": flags})

    def build(self, path: Path, run_id: str, fmt: str, model: str | None, meta: dict[str, Any]) -> Transcript:
        b = MessageBuilder(run_id)
        for e in self.entries:
            if e["kind"] == "ai":
                b.ai(_ai_content(e["blocks"]), e["calls"], usage=_usage(e.get("usage")), **e["flags"])
            elif e["kind"] == "human":
                b.human(e["content"], **e["flags"])
            else:
                b.tool(e["content"], e["id"], error=e["error"], **e["flags"])
        return b.transcript(path, fmt, model=model, metadata=meta)


def _usage(raw: Any) -> dict[str, Any] | None:
    """Anthropic ``usage`` as ``usage_metadata``: the input is ``input_tokens`` plus the cached
    parts (``cache_read_input_tokens``, ``cache_creation_input_tokens``), as langchain-anthropic
    counts it."""
    if not isinstance(raw, dict):
        return None
    read, created = raw.get("cache_read_input_tokens"), raw.get("cache_creation_input_tokens")
    given = raw.get("input_tokens")
    total = None
    if isinstance(given, int) and not isinstance(given, bool):
        total = given + sum(v for v in (read, created) if isinstance(v, int) and not isinstance(v, bool))
    return usage_metadata(total, raw.get("output_tokens"), cache_read=read, cache_creation=created)


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
