"""One notion of a tool call (spec R9; issue 30): every shape in which a provider receives a call
and its result, read in one place.

A **call** is issued by an ``AIMessage``:

* an entry of ``tool_calls`` or of ``invalid_tool_calls`` (LangChain's parsed calls; a malformed
  call is still sent to the provider);
* a content block (:data:`CALL_BLOCKS`): Anthropic ``tool_use`` (``id``, ``name``, ``input``),
  LangChain v1 ``tool_call`` (``id``, ``name``, ``args``), OpenAI Responses ``function_call``
  (``call_id``, ``name``, ``arguments`` as JSON text) — what ``convert_to_messages`` makes of
  provider-format dicts, with no ``tool_calls`` beside them.

A **result** answers a call id:

* a ``ToolMessage`` (``tool_call_id``);
* a content block of any message (:data:`RESULT_BLOCKS`): Anthropic ``tool_result``
  (``tool_use_id``, ``content``: text or blocks), OpenAI Responses ``function_call_output``
  (``call_id``, ``output``) — carried by a user message in those formats.

Everything that pairs calls with results — the cutoff (R9), the orphan scan of a view, the
offload of large results (R6), the history file and the summarizer's input (R10), the estimate
(R16) — reads these functions, so the formats pair alike.  Pure; nothing here raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = [
    "CALL_BLOCKS",
    "RESULT_BLOCKS",
    "BlockCall",
    "ToolPairs",
    "answered_call_ids",
    "block_calls",
    "is_result_message",
    "issued_call_ids",
    "result_block_text",
    "result_blocks",
    "tool_pairs",
]

#: content blocks of an AIMessage that carry a call: type -> (id key, arguments key)
CALL_BLOCKS: dict[str, tuple[str, str]] = {
    "tool_use": ("id", "input"),
    "tool_call": ("id", "args"),
    "function_call": ("call_id", "arguments"),
}
#: content blocks that carry a result: type -> (id key, output key)
RESULT_BLOCKS: dict[str, tuple[str, str]] = {
    "tool_result": ("tool_use_id", "content"),
    "function_call_output": ("call_id", "output"),
}


class BlockCall(NamedTuple):
    """A call carried by a content block: its id, tool name, arguments (a dict, or JSON text for
    ``function_call``) and the block's type."""

    id: str
    name: str | None
    args: Any
    kind: str


def _blocks(message: BaseMessage | Any) -> list[dict[str, Any]]:
    content = getattr(message, "content", None)
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def block_calls(message: BaseMessage | Any) -> list[BlockCall]:
    """The calls an AIMessage carries as content blocks (:data:`CALL_BLOCKS`), in order, except
    those that repeat an entry of its ``tool_calls`` / ``invalid_tool_calls`` (same id: the
    provider receives such a call once).  Empty for any other message."""
    if not isinstance(message, AIMessage):
        return []
    known = {tc.get("id") for tc in [*message.tool_calls, *message.invalid_tool_calls]}
    out: list[BlockCall] = []
    for b in _blocks(message):
        keys = CALL_BLOCKS.get(str(b.get("type")))
        if keys is None:
            continue
        cid = b.get(keys[0])
        if isinstance(cid, str) and cid not in known:
            name = b.get("name")
            out.append(
                BlockCall(cid, name if isinstance(name, str) else None, b.get(keys[1]), str(b["type"]))
            )
    return out


def issued_call_ids(message: BaseMessage | Any) -> list[str]:
    """The call ids an AIMessage issues: ``tool_calls``, ``invalid_tool_calls`` (a malformed call
    LangChain could not parse is still sent, so the result that answers it pairs with it) and
    call content blocks (:func:`block_calls`).  Empty for any other message and for calls
    without an id."""
    if not isinstance(message, AIMessage):
        return []
    calls = [*message.tool_calls, *message.invalid_tool_calls]
    ids = [cid for tc in calls if isinstance(cid := tc.get("id"), str)]
    return ids + [c.id for c in block_calls(message) if c.id not in ids]


def result_blocks(message: BaseMessage | Any) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(index in the content, call id, block)`` of each result block (:data:`RESULT_BLOCKS`)
    with a string id."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        return
    for i, b in enumerate(content):
        if isinstance(b, dict):
            keys = RESULT_BLOCKS.get(str(b.get("type")))
            if keys is not None and isinstance(cid := b.get(keys[0]), str):
                yield i, cid, b


def answered_call_ids(message: BaseMessage | Any) -> list[str]:
    """The call ids a message answers: a ToolMessage's ``tool_call_id``, or the ids of its result
    blocks (:func:`result_blocks`).  Empty for a message that answers nothing."""
    if isinstance(message, ToolMessage):
        return [message.tool_call_id]
    return [cid for _i, cid, _b in result_blocks(message)]


def is_result_message(message: BaseMessage | Any) -> bool:
    """A message whose content is tool results only: a ToolMessage, or a message (a user message
    in Anthropic or OpenAI Responses format) whose every block is a result block.  Such a
    message is not a user request, and a kept part may not open with it (R9)."""
    if isinstance(message, ToolMessage):
        return True
    content = getattr(message, "content", None)
    if not isinstance(content, list) or not content:
        return False
    return all(isinstance(b, dict) and str(b.get("type")) in RESULT_BLOCKS for b in content)


def result_block_text(block: dict[str, Any]) -> str:
    """The text of a result block's output: a string as it is; a list of blocks as their texts
    joined by newlines (an image is ``[image]``, any other block its JSON); anything else its
    JSON."""
    keys = RESULT_BLOCKS.get(str(block.get("type")))
    value = block.get(keys[1]) if keys is not None else None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for b in value:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(b.get("text", "")))
            elif isinstance(b, dict) and b.get("type") in ("image", "image_url", "input_image"):
                parts.append("[image]")
            else:
                parts.append(json.dumps(b, ensure_ascii=False, default=str))
        return "\n".join(parts)
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


class ToolPairs(NamedTuple):
    """How the calls and results of a list of messages pair (:func:`tool_pairs`).

    Attributes:
        answered: ``(call index, call id) -> index of its last result``, for every answered call.
        orphans: ``(result index, call id)`` of each result that answers no earlier call.
        issued: ``(call index, call id)`` of every call, in order (answered or not).
    """

    answered: dict[tuple[int, str], int]
    orphans: list[tuple[int, str]]
    issued: list[tuple[int, str]]


def tool_pairs(messages: Sequence[BaseMessage]) -> ToolPairs:
    """Pair the calls and results of ``messages`` as providers check them: a result answers the
    nearest earlier AIMessage that issued its call id (the only reading that holds when ids are
    reused across turns); several results of one call all belong to it.  Linear.  The one home
    of that rule for the cutoff's spans (:func:`ctxlab.core.messages.tool_pair_spans`) and a
    loaded run's check (:func:`ctxlab.transcripts.pairing.pairing_problems`)."""
    issuer: dict[str, int] = {}
    issued: dict[tuple[int, str], None] = {}
    answered: dict[tuple[int, str], int] = {}
    orphans: list[tuple[int, str]] = []
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage):
            for cid in issued_call_ids(m):
                issuer[cid] = i
                issued[(i, cid)] = None
        for cid in answered_call_ids(m):
            owner = issuer.get(cid)
            if owner is None:
                orphans.append((i, cid))
            else:
                answered[(owner, cid)] = i
    return ToolPairs(answered, orphans, list(issued))
