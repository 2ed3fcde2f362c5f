"""Message helpers: text of a message, effective messages, tool-call pairing (spec R9, R11).

Shapes: message lists are ``list[BaseMessage]``; indices are positions in that list.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.marks import is_user_request

__all__ = [
    "effective_messages",
    "last_human_index",
    "message_text",
    "tool_pair_spans",
    "valid_cut_positions",
]


def message_text(message: BaseMessage | Any, *, with_reasoning: bool = False) -> str:
    """The readable text of a message: str content, or its text blocks joined by newlines.

    Image blocks become ``[image]``; reasoning/thinking blocks are dropped unless
    ``with_reasoning``.  Never returns base64 image data.
    """
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else str(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind in ("image_url", "image", "input_image"):
                parts.append("[image]")
            elif kind in ("reasoning", "thinking"):
                if with_reasoning:
                    parts.append(str(block.get(kind, "")))
            elif kind == "redacted_thinking":
                continue
            elif "text" in block:
                parts.append(str(block["text"]))
            else:
                parts.append(json.dumps(block, ensure_ascii=False, default=str)[:2000])
    return "\n".join(parts)


def effective_messages(
    state_messages: Sequence[BaseMessage], event: Mapping[str, Any] | None
) -> list[BaseMessage]:
    """``[event.summary_message, *state_messages[event.cutoff_index:]]`` or the state messages.

    Spec: "effective messages".  A malformed event (no int ``cutoff_index``, or one outside
    ``0..len(state_messages)``, or no summary message) is ignored: the full state is returned,
    so a damaged checkpoint degrades to "no summary yet" instead of dropping history.
    """
    if not isinstance(event, dict):
        return list(state_messages)
    cutoff = event.get("cutoff_index")
    summary = event.get("summary_message")
    if not isinstance(cutoff, int) or isinstance(cutoff, bool) or not 0 <= cutoff <= len(state_messages):
        return list(state_messages)
    if summary is None:
        return list(state_messages)
    if isinstance(summary, dict):
        summary = HumanMessage(**{k: v for k, v in summary.items() if k != "type"})
    return [summary, *state_messages[cutoff:]]


def tool_pair_spans(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """(call index, last result index) for every tool call answered later in ``messages``.

    A call whose result never arrives (a dead call) yields no span, so it never blocks a cutoff;
    a ToolMessage whose call is not in ``messages`` yields no span either.  Error and rejection
    results (``status="error"``) close a call like any result.  Several results for one call id
    all belong to the span.
    """
    call_at: dict[str, int] = {}
    last_result: dict[str, int] = {}
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                cid = tc.get("id")
                if cid is not None and cid not in call_at:
                    call_at[cid] = i
        elif isinstance(m, ToolMessage):
            cid = m.tool_call_id
            if cid in call_at:
                last_result[cid] = i
    return [(call_at[cid], j) for cid, j in last_result.items()]


def valid_cut_positions(messages: Sequence[BaseMessage]) -> list[bool]:
    """``ok[c]`` for ``c`` in ``0..len(messages)``: may a cutoff go before ``messages[c]``?

    Invalid when the cut separates a tool call from any of its results (R9: parallel calls,
    interleaved results of several AIMessages, out-of-order results), or when the kept part would
    open with a ToolMessage or a SystemMessage (a provider rejects those right after the summary).
    Linear in the number of messages.
    """
    n = len(messages)
    depth = [0] * (n + 2)
    for a, b in tool_pair_spans(messages):
        depth[a + 1] += 1  # cuts a+1 .. b are inside the pair
        depth[b + 1] -= 1
    ok = [True] * (n + 1)
    running = 0
    for c in range(n + 1):
        running += depth[c]
        if running > 0 or (c < n and isinstance(messages[c], (ToolMessage, SystemMessage))):
            ok[c] = False
    return ok


def last_human_index(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the latest HumanMessage that is a user request (not a summary, not an
    observation recorded as a user message: :func:`ctxlab.core.marks.is_user_request`), or ``None``."""
    for i in range(len(messages) - 1, -1, -1):
        if is_user_request(messages[i]):
            return i
    return None
