"""The lines of one Claude Code session file (SOURCES.md format **F7**) as runs of entries.

:mod:`ctxlab.transcripts.claude_code` assembles a session (the main file with its side files)
from what :func:`parse` reads here; the mapping is described there.  One :class:`Lines` holds a
file's runs (the main run under ``None``, each sub-agent's under its ``agentId``), the bookkeeping
it skipped, the recorded compactions and microcompactions, and the links from a sub-agent's
``agentId`` to the Task call that started it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from ctxlab.transcripts._util import (
    MessageBuilder,
    iter_jsonl,
    read_text,
    text_content,
    tool_call,
    usage_metadata,
)
from ctxlab.transcripts.base import (
    RECORDED_COMPACTION_KEY,
    RECORDED_MICROCOMPACTION_KEY,
    SYNTHETIC_KEY,
    Transcript,
    TranscriptError,
)

#: line types of a Claude Code session file (only user/assistant lines become messages)
EVENT_TYPES = frozenset(
    {"user", "assistant", "queue-operation", "summary", "system", "file-history-snapshot", "progress"}
)
ID_KEYS = ("sessionId", "uuid", "parentUuid", "leafUuid", "messageId")
#: the model name Claude Code gives the assistant messages it makes up (no model call)
SYNTHETIC_MODEL = "<synthetic>"
#: what Claude Code sends in place of a tool result cleared by a microcompaction
CLEARED_PLACEHOLDER = "[Old tool result content cleared]"
#: the agent id prefix of Claude Code's compaction call (``agent-acompact-<id>.jsonl``)
COMPACTION_AGENT_PREFIX = "acompact"


def looks_like_event(obj: Any) -> bool:
    """A session line: an object with a string ``type`` and one of the session's id keys."""
    return isinstance(obj, dict) and isinstance(obj.get("type"), str) and any(k in obj for k in ID_KEYS)


def is_message_line(obj: Any) -> bool:
    return (
        looks_like_event(obj)
        and obj.get("type") in ("user", "assistant")
        and isinstance(obj.get("message"), dict)
    )


@dataclass
class Lines:
    """What :func:`parse` read from one file."""

    runs: dict[str | None, Run] = field(default_factory=lambda: {None: Run()})
    skipped: Counter[str] = field(default_factory=Counter)
    session: dict[str, Any] = field(default_factory=dict)
    compactions: int = 0
    microcompactions: int = 0
    #: ``agentId`` -> the ``tool_use_id`` of the Task call whose result names it
    task_links: dict[str, str] = field(default_factory=dict)
    #: agent ids seen on sidechain lines (a compaction call's file has only ``acompact-*``)
    agent_ids: set[str] = field(default_factory=set)

    @property
    def is_compaction_call(self) -> bool:
        """Every sidechain line belongs to Claude Code's compaction agent and none is a main-run
        line: the file is the request that summarised a session, not an agent run."""
        return (
            bool(self.agent_ids)
            and all(a.startswith(COMPACTION_AGENT_PREFIX) for a in self.agent_ids)
            and not self.runs[None].entries
        )


def parse(path: Path) -> Lines:
    """Read ``path`` line by line (a cut-off last line is left out with a warning).

    Raises:
        TranscriptError: ``line N`` for a line that is not a JSON object (or not JSON, except a
            cut-off last line), ``line N, key message.content`` for a bad shape.
    """
    out = Lines()
    boundary: dict[str, Any] | None = None  # the last compact_boundary not yet followed
    for lineno, ev in iter_jsonl(path, read_text(path)):
        if not isinstance(ev, dict):
            raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
        kind = ev.get("type")
        for key in ("sessionId", "cwd", "version", "gitBranch"):
            if key not in out.session and ev.get(key):
                out.session[key] = ev[key]
        _note_task_link(ev, out)
        if kind == "system" and ev.get("subtype") == "compact_boundary":
            raw_meta = ev.get("compactMetadata")
            meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
            boundary = {
                "index": out.compactions,
                "trigger": meta.get("trigger"),
                "pre_tokens": meta.get("preTokens"),
                "source": "compact_boundary",
                "line": lineno,
            }
            out.compactions += 1
            out.skipped["system:compact_boundary"] += 1
            continue
        if kind == "system" and ev.get("subtype") == "microcompact_boundary":
            _microcompaction(ev, lineno, out)
            continue
        data = ev.get("data")
        if kind == "progress" and isinstance(data, dict) and data.get("type") == "agent_progress":
            inner = data.get("message")
            agent = str(data.get("agentId") or ev.get("parentToolUseID") or "agent")
            run = out.runs.setdefault(agent, Run(parent_call=ev.get("parentToolUseID")))
            if run.parent_call is None and isinstance(ev.get("parentToolUseID"), str):
                run.parent_call = ev["parentToolUseID"]
            run.in_file_copy = True
            if (
                isinstance(inner, dict)
                and inner.get("type") in ("user", "assistant")
                and isinstance(inner.get("message"), dict)
            ):
                run.add(path, lineno, inner, {}, "data.message.")
                continue
            out.skipped["progress:agent_progress"] += 1
            continue
        if kind not in ("user", "assistant") or not isinstance(ev.get("message"), dict):
            out.skipped[str(kind)] += 1
            continue
        flags: dict[str, Any] = {"is_meta": True} if ev.get("isMeta") else {}
        if ev.get("isSidechain"):  # a sub-agent's line: never sent to the main model
            agent = str(ev.get("agentId") or "sidechain")
            out.agent_ids.add(agent)
            out.runs.setdefault(agent, Run()).add(path, lineno, ev, flags, "")
            continue
        if ev.get("isCompactSummary"):
            mark = boundary or {"index": out.compactions, "trigger": None, "pre_tokens": None}
            flags[RECORDED_COMPACTION_KEY] = {**mark, "source": "isCompactSummary"}
            if boundary is None:
                out.compactions += 1
            boundary = None
        out.runs[None].add(path, lineno, ev, flags, "")
    return out


def _note_task_link(ev: dict[str, Any], out: Lines) -> None:
    """A Task call's result line names its sub-agent (``toolUseResult.agentId``)."""
    result = ev.get("toolUseResult")
    message = ev.get("message")
    if not (
        isinstance(result, dict) and isinstance(result.get("agentId"), str) and isinstance(message, dict)
    ):
        return
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id"):
            out.task_links.setdefault(result["agentId"], str(block["tool_use_id"]))


def _microcompaction(ev: dict[str, Any], lineno: int, out: Lines) -> None:
    raw = ev.get("microcompactMetadata")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    ids = meta.get("compactedToolIds")
    mark = {
        "index": out.microcompactions,
        "trigger": meta.get("trigger"),
        "pre_tokens": meta.get("preTokens"),
        "tokens_saved": meta.get("tokensSaved"),
        "line": lineno,
        "placeholder": CLEARED_PLACEHOLDER,
    }
    out.microcompactions += 1
    out.skipped["system:microcompact_boundary"] += 1
    agent = str(ev.get("agentId") or "sidechain") if ev.get("isSidechain") else None
    run = out.runs.setdefault(agent, Run())
    run.entries.append(
        {"kind": "micro", "mark": mark, "ids": [str(i) for i in ids] if isinstance(ids, list) else []}
    )


class Run:
    """The entries of one run of a session file (the main run, or one sub-agent's)."""

    def __init__(self, parent_call: Any = None) -> None:
        self.entries: list[dict[str, Any]] = []
        self.last_ai: dict[str, Any] | None = None
        self.models: Counter[str] = Counter()
        self.parent_call = parent_call if isinstance(parent_call, str) else None
        #: the run came from ``agent_progress`` lines (the main file's copy of a sub-agent)
        self.in_file_copy = False
        self.synthetic = 0

    @property
    def has_messages(self) -> bool:
        return any(e["kind"] != "micro" for e in self.entries)

    @property
    def model(self) -> str | None:
        return self.models.most_common(1)[0][0] if self.models else None

    def add(self, path: Path, lineno: int, ev: dict[str, Any], flags: dict[str, Any], key: str) -> None:
        """Add one ``user``/``assistant`` line (``key`` prefixes error places)."""
        msg = ev["message"]
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            raise TranscriptError(
                path, f"line {lineno}, key {key}message.content", "expected a string or a list of blocks"
            )
        if ev.get("type") == "assistant":
            self._add_assistant(path, lineno, msg, content, flags)
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

    def _add_assistant(
        self, path: Path, lineno: int, msg: dict[str, Any], content: Any, flags: dict[str, Any]
    ) -> None:
        mid = msg.get("id")
        synthetic = msg.get("model") == SYNTHETIC_MODEL
        if isinstance(msg.get("model"), str) and not synthetic:
            self.models[msg["model"]] += 1
        if synthetic or self.last_ai is None or not mid or self.last_ai["mid"] != mid:
            flags = {**flags, SYNTHETIC_KEY: True} if synthetic else flags
            self.last_ai = {"kind": "ai", "mid": mid, "blocks": [], "calls": [], "flags": flags}
            if synthetic:  # made up by Claude Code (an API error, "No response requested."): no call
                self.last_ai["synthetic"] = True
                self.synthetic += 1
            self.entries.append(self.last_ai)
        if (
            isinstance(msg.get("usage"), dict) and not synthetic
        ):  # streamed lines repeat it; the last is final
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

    def build(
        self, path: Path, run_id: str, fmt: str, model: str | None, meta: dict[str, Any]
    ) -> tuple[Transcript, list[str]]:
        """The run as a transcript, and the doubts found building it (microcompacted results the
        run does not hold)."""
        b = MessageBuilder(run_id)
        doubts: list[str] = []
        for e in self.entries:
            if e["kind"] == "ai":
                b.ai(_ai_content(e["blocks"]), e["calls"], usage=_usage(e.get("usage")), **e["flags"])
            elif e["kind"] == "human":
                b.human(e["content"], **e["flags"])
            elif e["kind"] == "tool":
                b.tool(e["content"], e["id"], error=e["error"], **e["flags"])
            else:
                doubts += _apply_microcompaction(b, e["mark"], e["ids"])
        meta = {**meta, "synthetic_messages": self.synthetic} if self.synthetic else meta
        return b.transcript(path, fmt, model=model, metadata=meta), doubts


def _apply_microcompaction(b: MessageBuilder, mark: dict[str, Any], ids: list[str]) -> list[str]:
    """Mark the results a ``microcompact_boundary`` cleared (they stay as recorded: only the
    ``recorded`` strategy sends the placeholder, from the requests after the boundary on)."""
    after = b.messages[-1].id if b.messages else None
    wanted = set(ids)
    found = 0
    for m in b.messages:
        if isinstance(m, ToolMessage) and m.tool_call_id in wanted:
            m.additional_kwargs[RECORDED_MICROCOMPACTION_KEY] = {**mark, "after": after}
            wanted.discard(m.tool_call_id)
            found += 1
    doubts = []
    if wanted:
        doubts.append(
            f"line {mark['line']}: microcompact_boundary clears {len(ids)} tool result(s), "
            f"{len(wanted)} of them not in the run before it ({', '.join(sorted(wanted)[:3])}"
            f"{' ...' if len(wanted) > 3 else ''}): those are not marked"
        )
    if not ids:
        doubts.append(f"line {mark['line']}: microcompact_boundary names no cleared tool result")
    return doubts


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
