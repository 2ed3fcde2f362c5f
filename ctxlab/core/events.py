"""``context_compression`` stream events (spec R14) and their SSE rendering (R15).

An event is a plain dict, typed as :class:`CompressionEvent`::

    {"type": "context_compression",
     "phase": "started" | "completed" | "failed" | "prepared",
     "level": "L1" | "L2" | None,          # None on "started": the level is not known yet
     "tokens_before": int,                 # estimate of the effective messages (tokens)
     "tokens_after": int | None,           # estimate of the view sent (tokens); None if unknown
     "threshold": float, "l2_threshold": float, # T and T2 (tokens; T is an int when whole)
     "forced_by_overflow": bool,
     "cutoff_index": int | None,           # L2 only (global position in state messages)
     "file_path": str | None,              # L2 only (virtual history path, None if not saved)
     "error": str | None,                  # "failed": the error text; L2: a summarizer error
     "stats": {...}}                       # EventStats: offloaded paths, truncated args, summarizer usage

An L1-only ``completed`` carries ``cutoff_index=None`` and ``file_path=None`` (R14) so that a
consumer can tell the level.  ``prepared`` (issue 34, only with ``summary_prepare_ratio``) says
that a summary started being prepared in the background or that one was discarded:
``level=None``, ``cutoff_index`` the end of its span, ``stats["prepared"]``
(:class:`PreparedStats`); an L2 ``completed`` that committed one carries ``stats["prepared"]``
with ``status="used"``.  SSE is only a notification: the checkpointed
``_summarization_event`` is the recoverable truth (R15).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, Required, TypedDict, Unpack, cast

EVENT_TYPE: Final = "context_compression"
SSE_EVENT_NAME = "context_compression"
PHASES = ("started", "completed", "failed", "prepared")

#: an event's phase (R14; ``prepared``: issue 34)
Phase = Literal["started", "completed", "failed", "prepared"]
#: the level a round reached; ``"none"`` only inside the round's stats (below T)
Level = Literal["L1", "L2"]

__all__ = [
    "EVENT_ROW_KEYS",
    "EVENT_TYPE",
    "PHASES",
    "SSE_EVENT_NAME",
    "CompressionEvent",
    "EventFields",
    "EventStats",
    "Level",
    "OverflowWindowStats",
    "Phase",
    "PreparedStats",
    "StatsCommon",
    "SummarizerStats",
    "event_row",
    "make_event",
    "to_sse",
]

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


class SummarizerStats(TypedDict):
    """The summarizer's accounting of one L2 round (R10, R16): model calls, tokens (provider
    usage when ``usage_reported``, else estimates) and the error that left the summary empty."""

    calls: int
    input_tokens: int
    output_tokens: int
    usage_reported: bool
    error: str | None


class OverflowWindowStats(TypedDict, total=False):
    """``stats["overflow_window"]``: the window a provider's overflow error states (R12):
    ``provider`` (the reader that matched), ``window_tokens`` (the input's share) and, when
    stated, ``counted_tokens`` (the provider's count of the refused request) and
    ``reserve_tokens`` (the reply's reserve the error names), in provider tokens."""

    provider: str
    window_tokens: int
    counted_tokens: int
    reserve_tokens: int


class PreparedStats(TypedDict, total=False):
    """``stats["prepared"]``: what a round did with a summary prepared in the background
    (:mod:`ctxlab.core.prepare`, issue 34).

    Attributes:
        status: ``"started"`` (a preparation began in this call), ``"discarded"`` (one was
            dropped unused: its span changed, it failed, it was late, it covered more than the
            round cuts, or the T2 rule refused its commit,
            :func:`ctxlab.core.prepare.over_t2_refusal`) or ``"used"``
            (this L2 round committed it).
        cutoff_index: the end of the prepared span (a global position in the state messages).
        reason: why it was discarded.
        waited_s: seconds this call waited for it (``used``, or discarded after waiting).
        wasted: the summarizer's ``calls``, ``input_tokens`` and ``output_tokens`` spent on a
            discarded one; ``None`` while it still runs (its cost is counted by the middleware's
            :attr:`ctxlab.core.prepare.Preparations.stats` when it ends).
        sync_cutoff_index: the cutoff the round would have made without it (``used``).
        expected_tokens: (``started``) the request its commit is expected to leave at the L2
            round: the kept window now plus ``growth_tokens`` (at most T2, or at most T when the
            synchronous round is predicted over T2 as well, else it is not started;
            :func:`ctxlab.core.prepare.expected_kept`).
        growth_tokens: (``started``) the growth allowed for until that round: ``T − estimate``
            below T, ``T2 − L1 estimate`` in an L1-only round.
        sync_floor_tokens: (``started`` with ``expected_tokens`` over T2, ``used`` by a commit
            over T2) the least request the synchronous round can send
            (:func:`ctxlab.core.prepare.sync_floor`): over T2 too, else the commit is refused.
    """

    status: Literal["started", "discarded", "used"]
    cutoff_index: int
    reason: str
    waited_s: float
    wasted: dict[str, int] | None
    sync_cutoff_index: int
    expected_tokens: int
    growth_tokens: int
    sync_floor_tokens: int


class StatsCommon(TypedDict, total=False):
    """The keys a round's stats and an event's stats share; a key is absent until its step ran.

    Attributes:
        tokens_before: estimate of the effective messages with system and tools (tokens).
        level: how far the round went: ``"none"`` (below T), ``"L1"`` or ``"L2"``.
        summarizer: the L2 summarizer's accounting, ``None`` until L2 summarized.
        tokens_l1: estimate of the L1 view (tokens).
        tokens_after: estimate of the view sent (tokens).
        overflow: the text of the context overflow that forced the round (R12).
        l2_decision: the reason of the L2 decision (hook ``ctxlab_should_summarize``, R7, R8).
        no_cutoff: why no L2 cutoff was taken (R13), when none was.
        summary_rejected: why an L2 summary was not committed and the L1 view was sent instead
            (the span is smaller than an empty summary, or the summary is bigger than its span).
        summary_cut: ``{"from_tokens", "to_tokens"}`` when the summarizer's text was longer than
            a summary may be and was bounded before it was committed.
        trim_errors: problems the L1 trimmers handled (a failed offload write).
        tail_trimmed: kept messages replaced in the state by the overflow tail trimming (R12).
        retry_target_tokens: after a context overflow, the size the retry was trimmed toward
            (tokens, R12).
        retry_target_from: where that size came from: ``"error"`` (the window the
            provider's overflow error states, :mod:`ctxlab.core.overflow`), ``"capacity"`` (the
            model's ``max_input_tokens``) or ``"estimate"`` (a share of the estimate that
            overflowed), whichever is smallest.
        overflow_window: what the provider's overflow error states, when it states a window:
            ``{"provider", "window_tokens", "counted_tokens", "reserve_tokens"}`` (provider
            tokens; the count and the reserve only when the error gives them).
        capacity_tokens: the input the model accepts: its ``max_input_tokens`` less the reply's
            reserve (tokens), when known; the kept window is trimmed to it (R12, issue 30).
        reply_reserve_tokens: the reply's reserve of the request (``max_tokens``), when known.
        prepared: what the round did with a prepared summary (:class:`PreparedStats`).
    """

    tokens_before: int
    level: Literal["none", "L1", "L2"]
    summarizer: SummarizerStats | None
    tokens_l1: int
    tokens_after: int
    overflow: str
    l2_decision: str
    no_cutoff: str
    summary_rejected: str
    summary_cut: dict[str, int]
    trim_errors: list[str]
    tail_trimmed: int
    retry_target_tokens: int
    retry_target_from: Literal["error", "capacity", "estimate"]
    overflow_window: OverflowWindowStats
    capacity_tokens: int
    reply_reserve_tokens: int
    prepared: PreparedStats


class EventStats(StatsCommon, total=False):
    """``event["stats"]``: the round's stats with the L1 records reduced for a stream.

    ``offloaded``: the virtual path of each offloaded tool result (``None`` where the write
    failed); ``truncated_args``: how many arguments were truncated (R5).
    """

    offloaded: list[str | None]
    truncated_args: int


class EventFields(TypedDict, total=False):
    """The keyword fields of :func:`make_event`: every key of :class:`CompressionEvent` but
    ``type`` and ``phase`` (see the module docstring for each)."""

    level: Level | None
    tokens_before: int | None
    tokens_after: int | None
    threshold: float | None
    l2_threshold: float | None
    forced_by_overflow: bool
    cutoff_index: int | None
    file_path: str | None
    error: str | None
    stats: EventStats


class CompressionEvent(EventFields):
    """One ``context_compression`` event (R14): ``type`` and ``phase`` plus the
    :class:`EventFields`.  An event made by :func:`make_event` (every event ctxlab writes) holds
    every key; a field it was not given is ``None`` (``forced_by_overflow``: ``False``,
    ``stats``: ``{}``)."""

    type: Required[Literal["context_compression"]]
    phase: Required[Phase]


def make_event(phase: str, **fields: Unpack[EventFields]) -> CompressionEvent:
    """A ``context_compression`` event with every documented key present (absent fields: ``None``,
    ``forced_by_overflow=False``, ``stats={}``).

    Raises:
        ValueError: ``phase`` is not one of ``started``/``completed``/``failed``/``prepared``.
    """
    if phase not in PHASES:
        raise ValueError(f"phase={phase!r} is invalid: allowed one of {PHASES}")
    event: CompressionEvent = {
        "type": EVENT_TYPE,
        "phase": cast(Phase, phase),
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
    cast(dict[str, Any], event).update(fields)
    return event


def event_row(event: Mapping[str, Any]) -> dict[str, Any]:
    """One event flattened for a table (:data:`EVENT_ROW_KEYS`): the scalar fields as they are,
    ``l2_threshold`` as a float (``None`` stays ``None``), and ``offloaded`` as the number of
    tool results L1 offloaded (``stats["offloaded"]`` holds their paths)."""
    stats = event.get("stats") or {}
    row = {key: event.get(key) for key in EVENT_ROW_KEYS}
    row["l2_threshold"] = None if row["l2_threshold"] is None else float(row["l2_threshold"])
    row["offloaded"] = len(stats.get("offloaded") or [])
    return row


def to_sse(event: Mapping[str, Any]) -> str:
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
