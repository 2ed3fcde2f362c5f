"""What a summarizer's reply holds (R10, issue 24): its text (:func:`reply_text`), or why it is
no summary — no text at all (:class:`EmptySummaryError`) or a reply stopped at its output-token
cap (:class:`TruncatedSummaryError`, :func:`output_cap_reason`), each a failed summary, never
committed as one.  Read by :mod:`ctxlab.core.summarize`, which re-exports these names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EmptySummaryError", "TruncatedSummaryError", "output_cap_reason", "reply_text"]


class EmptySummaryError(ValueError):
    """The summarizer's reply holds no text: only a reasoning block, only a tool call, or an
    empty string.  A failed summary (R10), never committed as one."""


class TruncatedSummaryError(ValueError):
    """The summarizer's reply stopped at its output-token cap (:func:`output_cap_reason`): its
    text is a part of a summary.  A failed summary (R10), never committed as one (issue 24)."""


#: ``response_metadata`` keys that say why a reply stopped, across providers: OpenAI and
#: compatible APIs, Gemini (``finish_reason``), Anthropic (``stop_reason``), Ollama
#: (``done_reason``), Bedrock Converse (``stopReason``)
_STOP_KEYS = ("finish_reason", "stop_reason", "done_reason", "stopReason")
#: their values (compared lower-cased) for "the output-token cap was reached"
_CAP_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


def output_cap_reason(reply: Any) -> str | None:
    """Why ``reply`` stopped, when it stopped at its output-token cap, else ``None``.

    Read from ``reply.response_metadata``: ``finish_reason`` ``"length"`` (OpenAI, compatible APIs) or ``"MAX_TOKENS"``
    (Gemini), ``stop_reason`` ``"max_tokens"`` (Anthropic), ``done_reason`` ``"length"``
    (Ollama), ``stopReason`` ``"max_tokens"`` (Bedrock), or an OpenAI Responses
    ``incomplete_details.reason`` ``"max_output_tokens"``.
    """
    meta = getattr(reply, "response_metadata", None)
    if not isinstance(meta, dict):
        return None
    for key in _STOP_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value.lower() in _CAP_REASONS:
            return f"{key}={value}"
    details = meta.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if isinstance(reason, str) and reason.lower() in _CAP_REASONS:
        return f"incomplete_details.reason={reason}"
    return None


def reply_text(reply: Any) -> str:
    """The text of a summarizer reply: its ``str`` content, or its text blocks joined.

    Reasoning, tool-use and every other block are left out.

    Raises:
        TruncatedSummaryError: the reply stopped at its output-token cap (:func:`output_cap_reason`).
        EmptySummaryError: the reply has no text (only a reasoning block, only a tool call, an
            empty or blank string).
    """
    cap = output_cap_reason(reply)
    if cap is not None:
        raise TruncatedSummaryError(f"the summarizer's reply stopped at its output-token cap ({cap})")
    content = getattr(reply, "content", reply)
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        )
    else:
        text = ""
    if text.strip():
        return text
    kinds = {b.get("type") for b in content if isinstance(b, dict)} if isinstance(content, list) else set()
    if getattr(reply, "tool_calls", None) or kinds & {"tool_use", "tool_call", "function_call"}:
        what = "only a tool call"
    elif kinds & {"reasoning", "thinking", "redacted_thinking"}:
        what = "only a reasoning block"
    else:
        what = "an empty reply"
    raise EmptySummaryError(f"the summarizer's reply has no text ({what})")
