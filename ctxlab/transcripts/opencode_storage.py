"""OpenCode's JSON storage (``opencode_storage``): ``~/.local/share/opencode/storage``, one file
per session, message and part.

Shape (OpenCode's ``Storage.write`` keys, ``MessageV2`` schemas): ``session/<projectID>/<sessionID>.json``
(``{id, projectID, directory, parentID?, title, version, time}``), ``message/<sessionID>/<messageID>.json``
(``{id, sessionID, role: "user" | "assistant", time, ...}``; an assistant message also has
``modelID``, ``providerID``, ``tokens{input, output, reasoning, cache{read, write}}``, ``summary``)
and ``part/<messageID>/<partID>.json`` (``{id, sessionID, messageID, type, ...}``: ``text``
``{text, synthetic?, ignored?}``, ``reasoning{text}``, ``tool{callID, tool, state{status, input,
output | error}}``, ``step-start``, ``step-finish{tokens, cost}``, ``file``, ``compaction``, ...).
Ids grow with time, so file names sorted are creation order.

Loading: a **session file** is the transcript (its messages and parts are read from the storage
root two folders up); in a folder walk the message and part files are skipped
(:func:`is_storage_member`).  Conversion: a user message -> HumanMessage of its text parts (not the
``ignored`` ones); an assistant message -> one AIMessage per step (``step-start`` ...
``step-finish``; a message without steps is one step): its text and reasoning parts as content
(``{"type": "reasoning", "reasoning"}`` blocks), its tool parts as tool calls (``callID``,
``tool``, ``state.input``), then a ToolMessage per tool part (``state.output``; ``error`` with
``status="error"``; a ``pending``/``running`` call gets a marked synthetic result
``[Tool execution was interrupted]``, as OpenCode sends it).  The step's ``step-finish.tokens`` are
its ``usage_metadata`` (input = ``input`` + ``cache.read`` + ``cache.write``).  Dropped: ``file``,
``patch``, ``snapshot``, ``agent``, ``subtask``, ``retry`` parts (counted in
``metadata["skipped_parts"]``); a ``summary`` assistant message (OpenCode's own compaction) is
counted in ``metadata["compactions"]`` and kept as an AIMessage (not marked: ``recorded`` does
not replay OpenCode's compaction).  A session with ``parentID`` (a sub-agent's) names it in
``metadata["parent_session"]``.

Errors: ``key <file>: ...`` naming the message or part file that is not JSON or not an object.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect
from ctxlab.transcripts._util import MessageBuilder, json_error_where, read_text, tool_call, usage_metadata
from ctxlab.transcripts.base import SYNTHETIC_KEY, Transcript, TranscriptError

INTERRUPTED = "[Tool execution was interrupted]"
_DROPPED = frozenset({"file", "patch", "snapshot", "agent", "subtask", "retry", "compaction"})


def storage_root(path: Path) -> Path | None:
    """The storage root of a session file ``<root>/session/<project>/<ses_...>.json``, else ``None``."""
    if (
        path.suffix == ".json"
        and path.name.startswith("ses_")
        and len(path.parts) >= 3
        and path.parts[-3] == "session"
    ):
        return path.parents[2]
    return None


def is_storage_member(path: Path) -> bool:
    """A message or part file of an OpenCode storage (``<root>/message/<ses_...>/<msg_...>.json``,
    ``<root>/part/<msg_...>/<prt_...>.json`` with ``<root>/session`` beside them): read through
    its session file, not a transcript by itself."""
    if path.suffix != ".json" or len(path.parts) < 3:
        return False
    kind, owner = path.parts[-3], path.parts[-2]
    wanted = {"message": ("ses_", "msg_"), "part": ("msg_", "prt_")}.get(kind)
    return (
        wanted is not None
        and owner.startswith(wanted[0])
        and path.name.startswith(wanted[1])
        and (path.parents[2] / "session").is_dir()
    )


def _read(path: Path, what: Path) -> dict[str, Any]:
    text = read_text(what)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(path, f"{what}: {json_error_where(exc)}", f"invalid JSON: {exc.msg}") from exc
    return expect(path, value, dict, str(what))  # type: ignore[no-any-return]


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _steps(parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    steps: list[list[dict[str, Any]]] = []
    for part in parts:
        if part.get("type") == "step-start" or not steps:
            steps.append([])
        if part.get("type") != "step-start":
            steps[-1].append(part)
    return [s for s in steps if s] or [[]]


def _usage(finish: dict[str, Any] | None) -> dict[str, Any] | None:
    tokens = finish.get("tokens") if finish else None
    if not isinstance(tokens, dict):
        return None
    raw_cache = tokens.get("cache")
    cache: dict[str, Any] = raw_cache if isinstance(raw_cache, dict) else {}
    given = tokens.get("input")
    total: int | None = None
    if isinstance(given, int) and not isinstance(given, bool):
        cached = [v for v in (cache.get("read"), cache.get("write")) if isinstance(v, int)]
        total = given + sum(cached)
    return usage_metadata(
        total,
        tokens.get("output"),
        cache_read=cache.get("read"),
        cache_creation=cache.get("write"),
        reasoning=tokens.get("reasoning"),
    )


def _add_step(b: MessageBuilder, step: list[dict[str, Any]]) -> None:
    content: list[dict[str, Any]] = []
    tools = [p for p in step if p.get("type") == "tool"]
    for p in step:
        if p.get("type") == "text" and not p.get("ignored"):
            content.append({"type": "text", "text": str(p.get("text") or "")})
        elif p.get("type") == "reasoning":
            content.append({"type": "reasoning", "reasoning": str(p.get("text") or "")})
    finish = next((p for p in step if p.get("type") == "step-finish"), None)
    calls = [
        tool_call(p.get("tool"), (p.get("state") or {}).get("input"), p.get("callID") or p.get("id"))
        for p in tools
    ]
    b.ai(content, calls, usage=_usage(finish))
    for p, call in zip(tools, calls, strict=True):
        raw_state = p.get("state")
        state: dict[str, Any] = raw_state if isinstance(raw_state, dict) else {}
        status = state.get("status")
        if status == "completed":
            b.tool(str(state.get("output") or ""), call["id"], call["name"])
        elif status == "error":
            b.tool(str(state.get("error") or ""), call["id"], call["name"], error=True)
        else:
            b.tool(INTERRUPTED, call["id"], call["name"], error=True, **{SYNTHETIC_KEY: True})


class OpenCodeStorageFormat:
    name = "opencode_storage"
    description = "OpenCode JSON storage: a session file with its message/ and part/ files"

    def sniff(self, path: Path, head: str) -> bool:
        return storage_root(path) is not None and '"projectID"' in head

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        root = storage_root(path)
        if root is None:
            raise TranscriptError(
                path, "", "not an OpenCode session file (<storage>/session/<project>/ses_*.json)"
            )
        info = _read(path, path)
        session = str(info.get("id") or path.stem)
        b = MessageBuilder(path.name)
        skipped: Counter[str] = Counter()
        models: Counter[str] = Counter()
        compactions = 0
        for msg_file in _files(root / "message" / session):
            msg = _read(path, msg_file)
            parts = [_read(path, f) for f in _files(root / "part" / str(msg.get("id") or msg_file.stem))]
            for p in parts:
                if p.get("type") in _DROPPED:
                    skipped[str(p.get("type"))] += 1
            if msg.get("role") == "user":
                texts = [
                    {"type": "text", "text": str(p.get("text") or "")}
                    for p in parts
                    if p.get("type") == "text" and not p.get("ignored")
                ]
                if texts:
                    b.human(texts)
                else:
                    skipped["user message without text"] += 1
            elif msg.get("role") == "assistant":
                compactions += bool(msg.get("summary"))
                if isinstance(msg.get("modelID"), str):
                    models[msg["modelID"]] += 1
                for step in _steps(parts):
                    _add_step(b, step)
            else:
                raise TranscriptError(path, f"{msg_file}: key role", f"unknown role {msg.get('role')!r}")
        meta = {
            "session_id": session,
            "title": info.get("title"),
            "directory": info.get("directory"),
            "version": info.get("version"),
            "parent_session": info.get("parentID"),
            "skipped_parts": dict(skipped),
            "compactions": compactions,
        }
        model = models.most_common(1)[0][0] if models else None
        return [b.transcript(path, self.name, model=model, metadata=meta)]

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = OpenCodeStorageFormat()
