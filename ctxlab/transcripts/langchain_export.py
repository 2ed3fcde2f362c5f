"""LangGraph / LangSmith exports (``langchain_messages``): messages serialized by
``langchain_core.load`` (``dumpd``), decoded with ``langchain_core.load.load``.

Shape: LangChain's serialized form of a message, ``{"lc": 1, "type": "constructor", "id":
["langchain", "schema", "messages", "AIMessage"], "kwargs": {content, tool_calls, tool_call_id,
usage_metadata, ...}}``, wherever it sits in a JSON document or in each line of a JSON-lines
file:

* a LangGraph state or checkpoint: a list of them under ``messages`` (``{"values": {"messages":
  [...]}}`` from ``graph.get_state``, ``{"channel_values": {"messages": [...]}}`` of a
  checkpoint), or a bare list;
* a LangSmith run export (one run per line or a list of runs): a chat-model run's prompt in
  ``inputs.messages`` (a list of message lists) and its answer in
  ``outputs.generations[0][0].message`` -- the conversation of that call is the prompt plus the
  answer.

Conversion: every message list found (a run's prompt + answer counts as one) is decoded with
``langchain_core.load.load(..., allowed_objects="messages")`` (only message classes are built);
lists that repeat the start of another (each LangSmith call repeats the conversation so far,
compared by message type, tool-call ids and text) are left out, so each conversation is one run
(``run_id`` the file name, or the JSON path of its list when there are several).  Message ids the
file records are replaced by ``f"{run_id}-{i}"`` (kept in ``additional_kwargs["source_id"]``);
a ToolMessage without ``name`` gets the name of the call it answers; ``usage_metadata``,
``response_metadata`` and everything else the serialized message holds are kept as they are.

Errors: ``key <path>`` for a serialized message ``load`` refuses (not a message class, bad
kwargs); nothing serialized found: the file is not of this format.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.transcripts._util import iter_jsonl, json_decode_error, read_text
from ctxlab.transcripts.base import Transcript, TranscriptError
from ctxlab.transcripts.generic import MessageKey, not_repeated

_MARK = re.compile(r'"lc"\s*:\s*1\s*,\s*"type"\s*:\s*"constructor"')
#: the serialized ids of message classes: ``[..., "messages", <Class>]`` (``langchain`` or
#: ``langchain_core`` namespaces)
_MESSAGE_ID = re.compile(r"\A[A-Z][A-Za-z]*Message(Chunk)?\Z")


def is_serialized_message(value: Any) -> bool:
    """A ``dumpd`` of a LangChain message: ``{lc: 1, type: constructor, id: [..., "messages", X]}``."""
    ident = value.get("id") if isinstance(value, dict) else None
    return (
        isinstance(value, dict)
        and value.get("lc") == 1
        and value.get("type") == "constructor"
        and isinstance(ident, list)
        and len(ident) >= 2
        and "messages" in ident[:-1]
        and isinstance(ident[-1], str)
        and bool(_MESSAGE_ID.match(ident[-1]))
    )


@dataclass
class Conversation:
    """One list of serialized messages and where it is (``$.values.messages``)."""

    json_path: str
    messages: list[Any]


def _answer(run: dict[str, Any]) -> Any:
    gens = run.get("outputs", {}).get("generations") if isinstance(run.get("outputs"), dict) else None
    first = gens[0] if isinstance(gens, list) and gens and isinstance(gens[0], list) and gens[0] else None
    msg = first[0].get("message") if first and isinstance(first[0], dict) else None
    return msg if is_serialized_message(msg) else None


def find_conversations(data: Any, root: str = "$") -> list[Conversation]:
    """Every list of serialized messages in ``data``, depth first in document order; a LangSmith
    chat-model run gives its prompt plus its answer."""
    found: list[Conversation] = []
    stack: list[tuple[Any, str]] = [(data, root)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, list) and value and all(is_serialized_message(m) for m in value):
            found.append(Conversation(at, value))
        elif isinstance(value, dict):
            inputs = value.get("inputs")
            prompts = inputs.get("messages") if isinstance(inputs, dict) else None
            answer = _answer(value)
            if isinstance(prompts, list) and prompts and isinstance(prompts[0], list) and answer is not None:
                found.append(Conversation(f"{at}.inputs.messages[0]", [*prompts[0], answer]))
                continue
            stack.extend((v, f"{at}.{k}") for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(value))))
    return found


def _key(m: BaseMessage) -> MessageKey:
    ids: tuple[str, ...] = ()
    if isinstance(m, AIMessage):
        ids = tuple(str(c.get("id")) for c in m.tool_calls)
    elif isinstance(m, ToolMessage):
        ids = (m.tool_call_id,)
    return m.type, ids, m.text.strip()


def _decode(path: Path, conv: Conversation) -> list[BaseMessage]:
    from langchain_core._api.beta_decorator import LangChainBetaWarning
    from langchain_core.load import load

    out = []
    for i, raw in enumerate(conv.messages):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LangChainBetaWarning)
                msg = load(raw, allowed_objects="messages")
        except Exception as exc:  # langchain's refusal of a class or of bad kwargs
            raise TranscriptError(
                path, f"key {conv.json_path}[{i}]", f"not a loadable message: {exc}"
            ) from exc
        if not isinstance(msg, BaseMessage):
            raise TranscriptError(path, f"key {conv.json_path}[{i}]", f"decodes to {type(msg).__name__}")
        out.append(msg)
    return out


def _runs(path: Path, convs: list[Conversation], fmt: str) -> list[Transcript]:
    decoded = [(c, _decode(path, c)) for c in convs]
    kept = [decoded[i] for i in not_repeated([[_key(m) for m in msgs] for _, msgs in decoded])]
    out = []
    for conv, msgs in kept:
        run_id = path.name if len(kept) == 1 else conv.json_path
        messages: list[BaseMessage] = []
        names: dict[str, str] = {}
        for i, m in enumerate(msgs):
            update: dict[str, Any] = {"id": f"{run_id}-{i}"}
            if m.id:
                update["additional_kwargs"] = {**m.additional_kwargs, "source_id": m.id}
            if isinstance(m, AIMessage):
                names.update({str(c.get("id")): c["name"] for c in m.tool_calls})
            elif isinstance(m, ToolMessage) and not m.name and m.tool_call_id in names:
                update["name"] = names[m.tool_call_id]  # the name of the call it answers
            messages.append(m.model_copy(update=update))
        out.append(
            Transcript(
                messages=messages,
                source=str(path),
                run_id=run_id,
                format=fmt,
                model=_model(msgs),
                metadata={"json_path": conv.json_path, "repeats_left_out": len(decoded) - len(kept)},
            )
        )
    return out


def _model(msgs: list[BaseMessage]) -> str | None:
    names = [m.response_metadata.get("model_name") for m in msgs if isinstance(m, AIMessage)]
    named = [n for n in names if isinstance(n, str)]
    return named[-1] if named else None


class LangChainMessagesFormat:
    name = "langchain_messages"
    description = (
        "LangGraph state/checkpoint or LangSmith run export: langchain_core.load serialized messages"
    )

    def sniff(self, path: Path, head: str) -> bool:
        return bool(_MARK.search(head)) and '"messages"' in head

    def match_json(self, data: Any) -> bool:
        return bool(find_conversations(data))

    def match_line(self, obj: Any) -> bool:
        return bool(find_conversations(obj))

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        convs = find_conversations(data)
        if not convs:
            raise TranscriptError(path, "top level", "no serialized LangChain message list found")
        return _runs(path, convs, self.name)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        text = read_text(path)
        try:
            return self.load_json(json.loads(text), path)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise json_decode_error(path, text, exc) from exc
        convs = [c for n, obj in iter_jsonl(path, text) for c in find_conversations(obj, f"line {n}: $")]
        if not convs:
            raise TranscriptError(path, "line 1", "no serialized LangChain message list found")
        return _runs(path, convs, self.name)

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = LangChainMessagesFormat()
