"""``context_compression`` stream events (spec R14) and their SSE rendering (R15).

An event is a plain dict::

    {"type": "context_compression",
     "phase": "started" | "completed" | "failed",
     "level": "L1" | "L2" | None,          # None on "started": the level is not known yet
     "tokens_before": int,                 # estimate of the effective messages (tokens)
     "tokens_after": int | None,           # estimate of the view sent (tokens); None if unknown
     "threshold": int, "l2_threshold": float,   # T and T2 (tokens)
     "forced_by_overflow": bool,
     "cutoff_index": int | None,           # L2 only (global position in state messages)
     "file_path": str | None,              # L2 only (virtual history path, None if not saved)
     "error": str | None,                  # "failed": the error text; L2: a summarizer error
     "stats": {...}}                       # offloaded paths, truncated args, summarizer usage

An L1-only ``completed`` carries ``cutoff_index=None`` and ``file_path=None`` (R14) so that a
consumer can tell the level.  SSE is only a notification: the checkpointed
``_summarization_event`` is the recoverable truth (R15).
"""

from __future__ import annotations

import json
from typing import Any

EVENT_TYPE = "context_compression"
SSE_EVENT_NAME = "context_compression"
PHASES = ("started", "completed", "failed")

__all__ = ["EVENT_ROW_KEYS", "EVENT_TYPE", "PHASES", "SSE_EVENT_NAME", "event_row", "make_event", "to_sse"]

#: the keys of :func:`event_row`, in order
EVENT_ROW_KEYS = (
    "phase",
    "level",
    "tokens_before",
    "tokens_after",
    "threshold",
    "l2_threshold",
    "offloaded",
    "cutoff_index",
    "file_path",
    "error",
)


def make_event(phase: str, **fields: Any) -> dict[str, Any]:
    """A ``context_compression`` event dict with every documented key present.

    Raises:
        ValueError: ``phase`` is not one of ``started``/``completed``/``failed``.
    """
    if phase not in PHASES:
        raise ValueError(f"phase={phase!r} is invalid: allowed one of {PHASES}")
    event: dict[str, Any] = {
        "type": EVENT_TYPE,
        "phase": phase,
        "level": None,
        "tokens_before": None,
        "tokens_after": None,
        "threshold": None,
        "l2_threshold": None,
        "forced_by_overflow": False,
        "cutoff_index": None,
        "file_path": None,
        "error": None,
        "stats": {},
    }
    event.update(fields)
    return event


def event_row(event: dict[str, Any]) -> dict[str, Any]:
    """One event flattened for a table (:data:`EVENT_ROW_KEYS`): the scalar fields as they are,
    ``l2_threshold`` as a float (``None`` stays ``None``), and ``offloaded`` as the number of
    tool results L1 offloaded (``stats["offloaded"]`` holds their paths)."""
    stats = event.get("stats") or {}
    row = {key: event.get(key) for key in EVENT_ROW_KEYS}
    row["l2_threshold"] = None if row["l2_threshold"] is None else float(row["l2_threshold"])
    row["offloaded"] = len(stats.get("offloaded") or [])
    return row


def to_sse(event: dict[str, Any]) -> str:
    """One Server-Sent Events frame named ``context_compression`` (R15).

    ``event: context_compression\\ndata: <json>\\n\\n``; the JSON keeps non-ASCII text as is
    (Chinese stays readable) and is a single line, so the frame is valid SSE.

    Raises:
        ValueError: ``event`` is not a ``context_compression`` event.
    """
    if not isinstance(event, dict) or event.get("type") != EVENT_TYPE:
        raise ValueError("to_sse takes a context_compression event dict")
    data = json.dumps(event, ensure_ascii=False, default=str, separators=(",", ":"))
    return f"event: {SSE_EVENT_NAME}\ndata: {data}\n\n"
