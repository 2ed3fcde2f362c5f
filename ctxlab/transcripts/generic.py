"""The generic fallback (``generic_messages``): message arrays found anywhere in unknown JSON.

Many benchmark dumps nest OpenAI- or Anthropic-style message lists under their own keys
(``{"answer_generation": {"train_messages": [...]}}``).  When no format claims a JSON or JSON-lines
file (:mod:`ctxlab.transcripts.detection`), the parsed document -- every line of a JSON-lines
file -- is searched depth-first, in document order, for **message arrays**: non-empty lists whose
items are all objects with a ``role`` (``system``/``developer``/``user``/``assistant``/``tool``/
``function``) and a ``content``, ``tool_calls`` or ``function_call`` key.  A message array is not
searched further inside.  An array that only repeats the start of another (role and text of
each message, however re-encoded) is a copy of a prompt, not a run: it is left out
(:func:`drop_repeats`; Inspect AI logs repeat every request's input in their ``events``).

Each array found is one run: an Anthropic-style array (:func:`ctxlab.transcripts.anthropic.
is_anthropic_list`) is converted as ``anthropic_messages``, any other as ``openai_chat``.  When the
array sits under ``messages`` of an object that also has ``system``, ``tools`` or ``model`` (a
request body), those are used too.  ``run_id`` is the file name when one array is found, else
the array's JSON path; ``metadata["json_path"]`` always holds the path (``$.a.b[2]``, or
``line 3: $.messages`` in JSON lines).  Detection warns ``format: generic_messages at <paths>``.

Naming the format (``format="generic_messages"``) loads a file this way without detection.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import str_field
from ctxlab.transcripts._util import (
    MessageBuilder,
    add_openai_messages,
    iter_jsonl,
    json_decode_error,
    openai_tools,
    read_text,
)
from ctxlab.transcripts.anthropic import add_anthropic_messages, is_anthropic_list
from ctxlab.transcripts.base import Transcript, TranscriptError

GENERIC_NAME = "generic_messages"
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_IDENT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass
class JsonLines:
    """The parsed lines of a JSON-lines file: ``[(line number, value), ...]``."""

    items: list[tuple[int, Any]]


@dataclass
class Found:
    """One message array: its JSON path, the messages, ``"anthropic"`` or ``"openai"``, and the
    object holding it (``None`` at the top level)."""

    json_path: str
    messages: list[Any]
    style: str
    parent: dict[str, Any] | None


def _is_message(m: Any) -> bool:
    return (
        isinstance(m, dict)
        and m.get("role") in ROLES
        and any(k in m for k in ("content", "tool_calls", "function_call"))
    )


def is_message_array(value: Any) -> bool:
    """A non-empty list of OpenAI- or Anthropic-style message objects."""
    return isinstance(value, list) and bool(value) and all(_is_message(m) for m in value)


def _step(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if _IDENT.match(key) else f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _search(root: Any, root_path: str) -> list[Found]:
    found: list[Found] = []
    stack: list[tuple[Any, str, dict[str, Any] | None]] = [(root, root_path, None)]
    while stack:
        value, path, parent = stack.pop()
        if is_message_array(value):
            style = "anthropic" if is_anthropic_list(value) else "openai"
            found.append(Found(path, value, style, parent))
        elif isinstance(value, dict):
            stack.extend((v, _step(path, k), value) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, _step(path, i), None) for i, v in reversed(list(enumerate(value))))
    return found


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(b.get("text") if isinstance(b, dict) else b) for b in value)
    return ""


_ROLE = {"function": "tool", "developer": "system"}
#: what a copy of a message keeps however it is re-encoded: role, tool-call ids, text
MessageKey = tuple[str, tuple[str, ...], str]


def _key(m: dict[str, Any]) -> MessageKey:
    """What a copy of a message keeps however it is re-encoded: its role (``function`` counted
    as ``tool``, ``developer`` as ``system``), its tool-call ids and its text."""
    role = str(m.get("role"))
    raw_calls = m.get("tool_calls")
    calls: list[Any] = raw_calls if isinstance(raw_calls, list) else []
    ids = tuple(str(c.get("id")) for c in calls if isinstance(c, dict))
    if m.get("tool_call_id") is not None:
        ids += (str(m["tool_call_id"]),)
    return _ROLE.get(role, role), ids, _text(m.get("content")).strip()


def _same(a: MessageKey, b: MessageKey) -> bool:
    # a reference such as Inspect AI's ``attachment://<hash>`` stands for any text
    texts = a[2] == b[2] or a[2].startswith("attachment://") or b[2].startswith("attachment://")
    return a[0] == b[0] and a[1] == b[1] and texts


def not_repeated(keys: list[list[MessageKey]]) -> list[int]:
    """The indices of the conversations (each a list of message keys: role, tool-call ids,
    text) that do not only repeat the start of another one; of equal ones the first is kept.
    A repeat is a copy of the prompt at some step (Inspect AI's ``events`` repeat each request's
    input, a request log or a LangSmith export keeps the conversation once per call)."""

    def repeats(short: list[MessageKey], long: list[MessageKey]) -> bool:
        return len(short) <= len(long) and all(_same(x, y) for x, y in zip(short, long, strict=False))

    return [
        i
        for i, own in enumerate(keys)
        if not any(j != i and repeats(own, o) and (len(o) > len(own) or j < i) for j, o in enumerate(keys))
    ]


def drop_repeats(found: list[Found]) -> list[Found]:
    """``found`` without the arrays that only repeat the start of another one, message by
    message (:func:`_key`, :func:`not_repeated`)."""
    return [found[i] for i in not_repeated([[_key(m) for m in f.messages] for f in found])]


def find_message_arrays(data: Any) -> list[Found]:
    """Every message array in ``data`` (a parsed JSON value or :class:`JsonLines`), in document
    order, with its JSON path (see the module docstring), without the arrays that repeat part of
    another of the same document or line (:func:`drop_repeats`)."""
    if isinstance(data, JsonLines):
        # each line is its own record: repeats are looked for inside a line only
        return [f for lineno, value in data.items for f in drop_repeats(_search(value, f"line {lineno}: $"))]
    return drop_repeats(_search(data, "$"))


def _run(path: Path, found: Found, run_id: str) -> Transcript:
    b = MessageBuilder(run_id)
    parent = found.parent if found.parent is not None and found.json_path.endswith(".messages") else {}
    if parent.get("system"):
        b.system(parent["system"])
    if found.style == "anthropic":
        add_anthropic_messages(path, b, found.messages, found.json_path)
    else:
        add_openai_messages(path, b, found.messages, found.json_path)
    meta = {"json_path": found.json_path, "style": found.style}
    return b.transcript(
        path,
        GENERIC_NAME,
        model=str_field(parent, "model"),
        tools=openai_tools(parent.get("tools")),
        metadata=meta,
    )


class GenericMessagesFormat:
    """The fallback format: never sniffs; detection uses it when nothing else claims a JSON file."""

    name = GENERIC_NAME
    description = "fallback: OpenAI/Anthropic message arrays found at any depth of unknown JSON"

    def sniff(self, path: Path, head: str) -> bool:
        return False

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        """Raises: TranscriptError (``top level``) when no message array is found."""
        found = find_message_arrays(data)
        if not found:
            raise TranscriptError(
                path, "top level (byte 0)", "no OpenAI- or Anthropic-style message list found"
            )
        if len(found) == 1:
            return [_run(path, found[0], path.name)]
        return [_run(path, f, f.json_path) for f in found]

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        text = read_text(path)
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise json_decode_error(path, text, exc) from exc
            data = JsonLines(list(iter_jsonl(path, text)))
        return self.load_json(data, path)

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = GenericMessagesFormat()
