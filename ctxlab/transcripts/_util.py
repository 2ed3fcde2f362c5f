"""Helpers shared by the transcript loaders: reading, JSON with located errors, message building
(the structure checks of parsed JSON are in :mod:`ctxlab.transcripts._checks`).

Nothing here knows a particular format.  Every error is a :class:`TranscriptError` naming the file
and the place (``line 12``, ``line 3 column 7 (char 40)``, ``key history[3].content``, ``byte 0``).
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.transcripts._checks import as_dict, expect, join_key, need, optional_objects

# reading JSON lines lives in _jsonl; the loaders import it from here
from ctxlab.transcripts._jsonl import iter_jsonl as iter_jsonl
from ctxlab.transcripts._jsonl import lenient_lines as lenient_lines
from ctxlab.transcripts._jsonl import split_lines as split_lines
from ctxlab.transcripts.base import (
    OBSERVATION_KEY,
    RECORDED_COMPACTION_KEY,
    SYNTHETIC_KEY,
    Transcript,
    TranscriptError,
    TranscriptWarning,
)

#: how much of a file the sniffers see
HEAD_BYTES = 64 * 1024


# --- reading ------------------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """The whole file as UTF-8 text (a BOM is dropped).

    Raises:
        TranscriptError: empty file (``byte 0``), NUL bytes or invalid UTF-8 (``byte N``).
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(path, "", f"cannot read file: {exc.strerror or exc}") from exc
    text = check_text_bytes(path, raw)
    return text[1:] if text.startswith("\ufeff") else text


def check_text_bytes(path: Path, raw: bytes, *, head_only: bool = False) -> str:
    """``raw`` decoded as UTF-8, or a :class:`TranscriptError` for an empty or binary file.

    ``head_only``: ``raw`` is the first bytes of a longer file, so a character cut at the very
    end is not an error (it is decoded with replacement).
    """
    if not raw.strip():
        # a log that got nothing: an error when named alone; in a folder walk skipped and listed
        # like a session of a known format that records no conversation (``no_conversation``)
        raise TranscriptError(path, "byte 0", "empty file", kind="no_conversation")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise TranscriptError(
            path, f"byte {nul}", "binary file (NUL byte), not a text transcript", kind="not_text"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not head_only or exc.start < len(raw) - 4:
            raise TranscriptError(
                path, f"byte {exc.start}", "binary file (not valid UTF-8)", kind="not_text"
            ) from exc
        return raw.decode("utf-8", errors="replace")


def json_error_where(exc: json.JSONDecodeError) -> str:
    """``line L column C (char P)`` of a decode error."""
    return f"line {exc.lineno} column {exc.colno} (char {exc.pos})"


def parse_json(path: Path, text: str) -> Any:
    """``json.loads`` with a located :class:`TranscriptError` (truncation is named as such)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise json_decode_error(path, text, exc) from exc


def json_decode_error(path: Path, text: str, exc: json.JSONDecodeError) -> TranscriptError:
    """The located error for a JSON decode failure; a text ending inside a value is 'truncated'."""
    truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
    problem = "invalid JSON (truncated file?)" if truncated else "invalid JSON"
    # json's message ends "... starting at" and leaves the place to the position, said in front
    said = f"{exc.msg} line {exc.lineno} column {exc.colno}" if exc.msg.endswith(" at") else exc.msg
    return TranscriptError(path, json_error_where(exc), f"{problem}: {said}")


def warn(path: Path | str, message: str, metadata: MutableMapping[str, Any] | None = None) -> None:
    """Say ``"<path>: <message>"`` as a :class:`TranscriptWarning` and keep it in
    ``metadata["warnings"]`` (a list of strings) when ``metadata`` is given.

    The warning is located at the transcript file itself (``filename=path``, line 0: no source
    line is shown), so Jupyter and the ``warnings`` module print the file it is about, never the
    loader's own line."""
    text = f"{path}: {message}"
    warnings.warn_explicit(TranscriptWarning(text), TranscriptWarning, filename=str(path), lineno=0)
    if metadata is not None:
        metadata.setdefault("warnings", []).append(text)


# --- content and tool calls ---------------------------------------------------------------------


def text_content(content: Any) -> str | list[Any]:
    """Message content as LangChain expects it, kept faithfully.

    ``None`` -> ``""``; a string stays; a list holding exactly one text block becomes that text; an
    empty list becomes ``""``; any other list (several blocks, images, ...) stays a list of blocks
    (plain strings in it become text blocks).  Other values are serialized as JSON.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if not content:
            return ""
        if len(content) == 1 and _is_text_block(content[0]):
            return str(content[0]["text"])
        return [{"type": "text", "text": b} if isinstance(b, str) else b for b in content]
    return json.dumps(content, ensure_ascii=False)


def _is_text_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def parse_args(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict.  A JSON object string is parsed; ``None``/``""`` give ``{}``;
    anything else (invalid JSON, a JSON non-object) is kept as ``{"_raw": <text>}``."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            return {"_raw": raw}
        return value if isinstance(value, dict) else {"_raw": raw}
    return {"_raw": json.dumps(raw, ensure_ascii=False)}


def tool_call(name: Any, args: Any, call_id: Any) -> dict[str, Any]:
    """A LangChain tool call dict ``{"name", "args": dict, "id", "type": "tool_call"}``."""
    return {
        "name": "" if name is None else str(name),
        "args": parse_args(args),
        "id": None if call_id is None else str(call_id),
        "type": "tool_call",
    }


def usage_metadata(
    input_tokens: Any,
    output_tokens: Any,
    *,
    cache_read: Any = None,
    cache_creation: Any = None,
    reasoning: Any = None,
) -> dict[str, Any] | None:
    """A provider's recorded token counts as LangChain's ``AIMessage.usage_metadata``
    (``input_tokens``, ``output_tokens``, ``total_tokens``, ``input_token_details`` with
    ``cache_read``/``cache_creation``, ``output_token_details`` with ``reasoning``), all in the
    provider's tokens.  ``input_tokens`` is the whole prompt the provider counted, cached parts
    included (LangChain's convention); give it so.  ``None`` when either count is missing or not
    a whole number >= 0 (the call then has no recorded usage)."""

    def count(value: Any) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        return value if isinstance(value, int) and value >= 0 else None

    i, o = count(input_tokens), count(output_tokens)
    if i is None or o is None:
        return None
    out: dict[str, Any] = {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}
    details = {
        k: v
        for k, v in (("cache_read", count(cache_read)), ("cache_creation", count(cache_creation)))
        if v is not None
    }
    if details:
        out["input_token_details"] = details
    if count(reasoning) is not None:
        out["output_token_details"] = {"reasoning": count(reasoning)}
    return out


def openai_call(raw: dict[str, Any]) -> dict[str, Any]:
    """:func:`tool_call` of an OpenAI-style call ``{id, type, function{name, arguments}}`` (no
    ``function`` object: an empty name and no arguments)."""
    fn = as_dict(raw.get("function"))
    return tool_call(fn.get("name"), fn.get("arguments"), raw.get("id"))


# --- building message lists ---------------------------------------------------------------------


def unique_run_id(seen: Counter[str], run_id: str) -> str:
    """``run_id``, or ``<run_id>#<n>`` for its n-th use in one file (``seen`` counts the uses)."""
    seen[run_id] += 1
    return f"{run_id}#{seen[run_id]}" if seen[run_id] > 1 else run_id


class MessageBuilder:
    """Collects the messages of one run, giving each the id ``f"{run_id}-{index}"``.

    Also tracks the names of tool calls by id so ToolMessages get a ``name`` even where the source
    only records the id, the indices of text observations, and which calls are still unanswered:
    a result answers the nearest earlier unanswered call with its id (ids may be reused).
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.messages: list[BaseMessage] = []
        self.observations: list[int] = []
        self.call_names: dict[str, str] = {}
        #: ``(call id, name)`` of calls not answered yet, in call order
        self.pending: list[tuple[str, str]] = []

    def _next_id(self) -> str:
        return f"{self.run_id}-{len(self.messages)}"

    def system(self, content: Any, **extra: Any) -> SystemMessage:
        msg = SystemMessage(content=text_content(content), id=self._next_id(), additional_kwargs=extra)
        self.messages.append(msg)
        return msg

    def human(self, content: Any, *, observation: bool = False, **extra: Any) -> HumanMessage:
        """A user message; ``observation=True`` marks a tool result recorded as user text."""
        if observation:
            extra[OBSERVATION_KEY] = True
            self.observations.append(len(self.messages))
        msg = HumanMessage(content=text_content(content), id=self._next_id(), additional_kwargs=extra)
        self.messages.append(msg)
        return msg

    def ai(
        self,
        content: Any,
        tool_calls: Sequence[dict[str, Any]] = (),
        *,
        response_metadata: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
        **extra: Any,
    ) -> AIMessage:
        """A model response; ``usage``: the provider's recorded counts of this call
        (:func:`usage_metadata`), kept as ``usage_metadata``."""
        for call in tool_calls:
            if call.get("id"):
                self.call_names[call["id"]] = call["name"]
                self.pending.append((call["id"], call["name"]))
        msg = AIMessage(
            content=text_content(content),
            tool_calls=list(tool_calls),
            id=self._next_id(),
            additional_kwargs=extra,
            response_metadata=response_metadata or {},
            usage_metadata=usage,
        )
        self.messages.append(msg)
        return msg

    def tool(
        self, content: Any, tool_call_id: Any, name: Any = None, *, error: bool = False, **extra: Any
    ) -> ToolMessage:
        """A tool result; ``name`` defaults to the name of the earlier call with that id."""
        call_id = "" if tool_call_id is None else str(tool_call_id)
        for k in range(len(self.pending) - 1, -1, -1):
            if self.pending[k][0] == call_id:
                del self.pending[k]
                break
        if not name:
            name = self.call_names.get(call_id)
        msg = ToolMessage(
            content=text_content(content),
            tool_call_id=call_id,
            name=name or None,
            id=self._next_id(),
            additional_kwargs=extra,
            status="error" if error else "success",
        )
        self.messages.append(msg)
        return msg

    def mark_compaction(self, start: int, mark: dict[str, Any]) -> None:
        """Mark ``messages[start:]`` as one recorded compaction (``RECORDED_COMPACTION_KEY``)."""
        for msg in self.messages[start:]:
            msg.additional_kwargs[RECORDED_COMPACTION_KEY] = dict(mark)

    def close_unanswered(self, content: str = "", **extra: Any) -> int:
        """Answer every still unanswered call with a ToolMessage ``content`` marked
        ``additional_kwargs[SYNTHETIC_KEY] = True`` (plus ``extra``); return how many were closed.

        For formats whose files leave out results the agent did see (an empty output), so that
        a replayed view is one a provider accepts.
        """
        closed = list(self.pending)
        for call_id, name in closed:
            self.tool(content, call_id, name, **{SYNTHETIC_KEY: True, **extra})
        return len(closed)

    def transcript(self, path: Path, fmt: str, **fields: Any) -> Transcript:
        return Transcript(
            messages=self.messages,
            source=str(path),
            run_id=self.run_id,
            format=fmt,
            observations=self.observations,
            **fields,
        )


# --- OpenAI-style message lists (F4, and inside F5, F6, F11, F12) -------------------------------

TEXT_TOOL_RESULT = re.compile(r"\ATool: [^\n]*\nResult:")


def _check_content(path: Path, msg: dict[str, Any], role: str, at: str) -> None:
    """Warn (file and key) about a message content that is neither text nor a list of blocks: a
    number or object is kept as its JSON text, a missing or null one as an empty message — only an
    assistant message that carries tool calls may have none (the chat-completions shape)."""
    content = msg.get("content")
    if isinstance(content, (str, list)):
        return
    if content is None:
        if role == "assistant" and (msg.get("tool_calls") or msg.get("function_call")):
            return
        warn(
            path,
            f"key {at}: {'missing' if 'content' not in msg else 'null'}; loaded as an empty {role} message",
        )
        return
    kind = "a number" if isinstance(content, (int, float)) else type(content).__name__
    warn(path, f"key {at}: {kind} instead of text or content blocks; kept as its JSON text")


def add_openai_messages(
    path: Path,
    builder: MessageBuilder,
    messages: list[Any],
    where: str,
    *,
    text_observations: str | re.Pattern[str] | None = None,
    single: bool = False,
) -> None:
    """Append OpenAI chat-completions messages to ``builder``.

    Roles: ``system``/``developer`` -> SystemMessage; ``user`` -> HumanMessage; ``assistant`` ->
    AIMessage with ``tool_calls`` (also the older ``function_call``); ``tool`` -> ToolMessage;
    the older ``function`` role -> ToolMessage answering the latest unanswered ``function_call`` of
    that name (the legacy API has no ids: ids ``fc-<index>`` are made up for the pair).

    ``text_observations`` marks user messages as text observations: ``"after_assistant"`` marks
    every user message after the first assistant message (mini-swe-agent, F2), ``"tool_prefix"``
    marks user messages that start ``Tool: <name>\\nResult:`` (Agent TARS prompt-based tools), a
    compiled pattern marks user messages after the first assistant message that it matches at the
    start (prompt-based function calling, e.g. ``EXECUTION RESULT of [``).
    ``single=True`` says ``where`` already names the one message (no ``[i]`` is appended).

    Raises:
        TranscriptError: at ``key <where>[i]...`` for a message that is not an object or lacks a role.
    """
    seen_assistant = False
    pending_functions: list[tuple[str, str]] = []  # legacy function_call ids awaiting a result
    for i, msg in enumerate(messages):
        at = where if single else join_key(where, i)
        expect(path, msg, dict, at)
        role = need(path, msg, "role", str, at)
        content = msg.get("content")
        _check_content(path, msg, role, join_key(at, "content"))
        if role in ("system", "developer"):
            builder.system(content)
        elif role == "user":
            flat = text_content(content)
            text = flat if isinstance(flat, str) else ""
            if isinstance(text_observations, re.Pattern):
                observation = seen_assistant and bool(text_observations.match(text))
            else:
                observation = (text_observations == "after_assistant" and seen_assistant) or (
                    text_observations == "tool_prefix" and bool(TEXT_TOOL_RESULT.match(text))
                )
            builder.human(content, observation=observation)
        elif role == "assistant":
            seen_assistant = True
            calls = []
            for call_at, raw in optional_objects(path, msg, "tool_calls", at):
                if isinstance(raw.get("function"), dict):
                    calls.append(openai_call(raw))
                elif isinstance(raw.get("function"), str):  # Inspect AI: {id, function: name, arguments}
                    calls.append(tool_call(raw["function"], raw.get("arguments"), raw.get("id")))
                else:  # already LangChain-shaped {name, args, id}
                    calls.append(tool_call(raw.get("name"), raw.get("args"), raw.get("id")))
                if not calls[-1]["name"]:
                    warn(
                        path, f"key {call_at}: tool call without a name (no function.name, function or name)"
                    )
            fc = msg.get("function_call")
            if isinstance(fc, dict):
                call_id = f"fc-{i}"
                calls.append(tool_call(fc.get("name"), fc.get("arguments"), call_id))
                pending_functions.append((str(fc.get("name")), call_id))
            builder.ai(content, calls)
        elif role == "tool":
            builder.tool(content, msg.get("tool_call_id"), msg.get("name"))
        elif role == "function":
            name = msg.get("name")
            call_id = None
            for k in range(len(pending_functions) - 1, -1, -1):
                if pending_functions[k][0] == str(name):
                    call_id = pending_functions.pop(k)[1]
                    break
            builder.tool(content, call_id, name)
        else:
            raise TranscriptError(path, f"key {join_key(at, 'role')}", f"unknown role {role!r}")


def openai_tools(tools: Any) -> list[dict[str, Any]]:
    """Tool schemas kept as provider dicts (only the dict entries of a list)."""
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


# --- a base for whole-file JSON formats ---------------------------------------------------------


class JsonFormat:
    """A format stored as one JSON document.

    Subclasses set ``name``/``description`` and implement ``sniff``, ``match_json(data)`` (the
    shape check used when sniffing is inconclusive) and ``load_json(data, path)``.
    """

    name = ""
    description = ""

    def sniff(self, path: Path, head: str) -> bool:  # pragma: no cover - overridden
        return False

    def match_json(self, data: Any) -> bool:  # pragma: no cover - overridden
        return False

    def load_json(self, data: Any, path: Path) -> list[Transcript]:  # pragma: no cover
        raise NotImplementedError

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        return self.load_json(parse_json(path, read_text(path)), path)

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


def stripped_head(head: str) -> str:
    """``head`` without a BOM and leading whitespace."""
    return head.lstrip("\ufeff \t\r\n")


def head_is_cut(head: str) -> bool:
    """True when ``head`` is (probably) only the start of a longer file (it fills the head)."""
    return len(head.encode("utf-8", errors="replace")) >= HEAD_BYTES - 4
