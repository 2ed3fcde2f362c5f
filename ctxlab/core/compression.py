"""One compression round: a single control flow for the sync and async drivers (spec R3–R14).

:func:`compression_round` is a generator.  It never does model or history I/O itself: it yields
*effects* and receives their results, so the sync middleware, the async middleware and replay
drive the very same logic:

* :class:`CallModel` — send ``messages`` as the request view; the driver sends back the model
  response, or throws the model's exception into the generator;
* :class:`RunL1` — run the L1 trimmers (they write offload files; async drivers run it in a
  worker thread); the driver sends back ``(view, reports)``;
* :class:`RunL2` — write the history file and summarize (sync: write first, then summarize;
  async: both concurrently with ``asyncio.gather``, R10); the driver sends back
  ``(file_path | None, SummaryResult)``.

The generator's return value is the driver's result: a ``ModelResponse`` (no state change) or
an ``ExtendedModelResponse`` carrying ``Command(update={"_summarization_event": ...})`` (R11).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Generator, Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any, NamedTuple, TypedDict, Unpack

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.cutoff import SummarizationEvent, summarization_event
from ctxlab.core.estimation import EstimateCache
from ctxlab.core.events import (
    CompressionEvent,
    EventFields,
    EventStats,
    Level,
    Phase,
    StatsCommon,
    make_event,
)
from ctxlab.core.hooks import CompressionHooks
from ctxlab.core.l1 import OffloadRecord, TrimContext, TrimReport, TruncatedArg, protect_key
from ctxlab.core.l2 import plan_l2, summary_to_commit
from ctxlab.core.marks import offloaded_path_of
from ctxlab.core.messages import ScanMemory, effective_messages, resolve_cutoff, sendable_view
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryJob

logger = logging.getLogger("ctxlab.core.compression")

EVENT_KEY = "_summarization_event"
#: after an overflow, the retry aims at this share of the estimate that overflowed when the
#: model's capacity is unknown (R12: the overflow itself says that the request was too big)
OVERFLOW_RETRY_SHARE = 0.75

__all__ = [
    "EVENT_KEY",
    "OVERFLOW_RETRY_SHARE",
    "CallModel",
    "Effect",
    "ModelLimits",
    "RoundInput",
    "RoundStats",
    "RoundUpdate",
    "RunL1",
    "RunL2",
    "SummarizationEvent",
    "compression_round",
]


@dataclass
class CallModel:
    """Effect: send ``messages`` to the main model as the request view; the driver sends back the
    model's response (or throws its exception into the round).

    ``messages`` is made sendable on construction (:func:`ctxlab.core.messages.sendable_view`, with
    the round's ``scans`` memory, init only): a tool result whose call is behind the cutoff becomes
    an observation, never an orphan (R9).
    """

    messages: list[BaseMessage]
    scans: InitVar[ScanMemory | None] = None

    def __post_init__(self, scans: ScanMemory | None) -> None:
        self.messages = sendable_view(self.messages, scans)


@dataclass
class RunL1:
    """Effect: run the L1 trimmers on ``effective`` with ``ctx``; the driver sends back
    ``(view, reports)`` (:func:`ctxlab.core.l1.run_l1`)."""

    effective: list[BaseMessage]
    ctx: TrimContext


@dataclass
class RunL2:
    """Effect: write ``history_content`` at the virtual ``history_path`` and summarize ``job``;
    the driver sends back ``(file_path or None when the write failed, SummaryResult)`` (R10)."""

    job: SummaryJob
    history_path: str
    history_content: str


#: what :func:`compression_round` yields
Effect = CallModel | RunL1 | RunL2
#: what a driver sends back for :class:`RunL1`: the trimmed view and the trimmers' reports
_L1Result = tuple[list[BaseMessage], list[TrimReport]]


class RoundStats(StatsCommon, total=False):
    """The round's own record (``RoundInput.stats``), filled as the round goes.

    The keys of :class:`ctxlab.core.events.StatsCommon`, plus the L1 records in full: ``offloaded``
    (one :class:`~ctxlab.core.l1.OffloadRecord` per offloaded tool result) and ``truncated_args`` (one
    :class:`~ctxlab.core.l1.TruncatedArg` per truncated argument); events carry a reduced copy.
    """

    offloaded: list[OffloadRecord]
    truncated_args: list[TruncatedArg]


class RoundUpdate(TypedDict, total=False):
    """The ``Command(update=...)`` of an L2 round: the new event and, after the overflow tail
    trimming (R12), the kept messages that replace their originals by id."""

    _summarization_event: SummarizationEvent
    messages: list[BaseMessage]


class ModelLimits(NamedTuple):
    """What the round needs to know of the models, read only when a step needs it.

    Attributes:
        capacity_tokens: the main model's ``max_input_tokens`` (a positive int), ``None`` if unknown.
        summarizer_budget: tokens one summarizer input may use.
    """

    capacity_tokens: int | None
    summarizer_budget: int


@dataclass
class RoundInput:
    """Everything one round needs, independent of the driver.

    Attributes:
        state_messages: the full persisted history (``request.messages``).
        event: the current ``_summarization_event`` (``None`` before the first L2; a malformed
            one is ignored).
        system: the system message (counted, never summarized, never copied into messages).
        tools: tool schemas of the request (counted, R16).
        settings: the five fields; the round compares its estimates with
            ``settings.entry_threshold_tokens`` (T, R3) and ``settings.l2_threshold_tokens`` (T2, R7).
        estimates: the cached estimator.
        hooks: the typed cutoff (and, through the driver, trimmer) hooks of the plugin manager.
        save_tool_result: the file writer handed to trimmers.
        limits: returns the :class:`ModelLimits`; called at most once, and only when a step
            needs them (never below T, R3: a malformed model profile cannot break such a call).
        thread_id: names the history file.
        emit: writes one event to the stream (and to observers).
        file_exists: handed to trimmers (:attr:`ctxlab.core.l1.TrimContext.file_exists`).
        scans: the middleware's orphan scans (:class:`~ctxlab.core.messages.ScanMemory`), or ``None``.
        stats: the round's record (:class:`RoundStats`), filled as the round goes.
    """

    state_messages: list[BaseMessage]
    event: Mapping[str, Any] | None
    system: BaseMessage | None
    tools: list[Any]
    settings: CompressionSettings
    estimates: EstimateCache
    hooks: CompressionHooks
    save_tool_result: Callable[[str | None, str], str]
    limits: Callable[[], ModelLimits]
    thread_id: str | None
    emit: Callable[[CompressionEvent], None]
    file_exists: Callable[[str], bool] | None = None
    scans: ScanMemory | None = None
    stats: RoundStats = field(default_factory=lambda: RoundStats())

    @functools.cached_property
    def _limits(self) -> ModelLimits:
        return self.limits()

    @property
    def capacity_tokens(self) -> int | None:
        """The main model's ``max_input_tokens`` if known, else ``None`` (:class:`ModelLimits`)."""
        return self._limits.capacity_tokens

    @property
    def summarizer_budget(self) -> int:
        """Tokens one summarizer input may use (:class:`ModelLimits`)."""
        return self._limits.summarizer_budget


def compression_round(inp: RoundInput) -> Generator[Effect, Any, tuple[Any, RoundUpdate | None]]:
    """Run one model call under ARS compression.

    Yields effects (see module docstring).  Returns ``(response, update)`` where ``update`` is
    ``None`` (no state change: below T, or L1 only, R3/R7) or the dict for
    ``Command(update=...)``: ``_summarization_event`` and, after overflow tail trimming (R12),
    ``messages`` replacing trimmed messages by id.

    Raises:
        ContextOverflowError: the retry after forced compression overflowed again (R12), or the
            L1 view sent instead of an L2 (no valid cutoff, R13; L2 declined or its summary not
            committed) overflowed in a forced round; ``failed`` is emitted first.  It is always
            the provider's own exception object (its type and attributes), never a new one.
        Exception: any other error of the main model after a round started (``failed`` emitted).
    """
    s = inp.settings
    msgs = inp.state_messages
    prev_cut = resolve_cutoff(msgs, inp.event)  # R11 (moved or clamped when messages were removed)
    # the state list itself when there is no summary yet: the round never edits it in place
    eff = msgs if prev_cut is None else effective_messages(msgs, inp.event)

    def tokens(view: list[BaseMessage]) -> int:
        return inp.estimates.request_tokens(inp.system, inp.tools, view)

    est0 = tokens(eff)
    stats = inp.stats
    stats["tokens_before"] = est0
    stats["level"] = "none"
    stats["offloaded"] = []
    stats["truncated_args"] = []
    stats["summarizer"] = None
    forced = False
    started = False
    sent_l1_view = False
    # the provider's own overflow error (R12: it is what propagates) and the estimate it refused
    overflow_error: BaseException | None = None
    overflowed_tokens: int | None = None

    def emit(phase: Phase, **fields: Unpack[EventFields]) -> None:
        base: EventFields = {
            "threshold": s.entry_threshold_tokens,
            "l2_threshold": s.l2_threshold_tokens,
            "tokens_before": est0,
            "forced_by_overflow": forced,
        }
        merged: EventFields = {**base, **fields}
        inp.emit(make_event(phase, **merged))

    def fail(exc: BaseException) -> None:
        if started or forced:
            emit(
                "failed",
                level=_level(stats),
                error=f"{type(exc).__name__}: {exc}",
            )

    # R3: below the entry threshold T the effective messages go as they are
    if est0 < s.entry_threshold_tokens:
        try:
            response = yield CallModel(eff, inp.scans)
            stats["tokens_after"] = est0
            return response, None
        except ContextOverflowError as exc:
            logger.warning(
                "context overflow below the entry threshold (%s < %s tokens): forcing compression",
                est0,
                s.entry_threshold_tokens,
            )
            forced = True
            stats["overflow"] = str(exc)
            overflow_error, overflowed_tokens = exc, est0
    else:
        started = True
        emit("started")  # R4

    try:
        # L1 (R5, R6)
        trim_ctx = TrimContext(
            settings=s,
            estimate=inp.estimates.message_tokens,
            save_tool_result=inp.save_tool_result,
            token_limit=s.summary_tool_result_token_limit,
            file_exists=inp.file_exists,
        )
        view1, reports = yield RunL1(eff, trim_ctx)
        _record_trims(stats, reports)
        est1 = tokens(view1)
        stats["tokens_l1"] = est1
        stats["level"] = "L1"

        # R7/R8: the L2 decision; R9: the cutoff (R13: none); R10: the summary, committed only
        # when it shrinks the request.  Otherwise the L1 view is sent once; its overflow forces
        # L2 (R12) and the decision is asked again.
        while True:
            plan = plan_l2(inp, eff, view1, est1, prev_cut, forced)
            if plan is not None:
                if not started:
                    started = True
                    emit("started")  # R14: overflow-forced round that began below T
                stats["level"] = "L2"
                file_path, result = yield RunL2(plan.job, plan.history_path, plan.history)
                summary_msg = summary_to_commit(inp, eff, plan, file_path, result)
                if summary_msg is not None:
                    break
                stats["level"] = "L1"
            if forced and sent_l1_view:
                # R13 / declined L2: the L1 view overflowed and nothing was summarized: the
                # provider's own error
                raise overflow_error or ContextOverflowError(
                    stats.get("overflow") or "context overflow and no L2 summary to retry with"
                )
            try:
                sent_l1_view = True
                response = yield CallModel(view1, inp.scans)
            except ContextOverflowError as exc:
                if forced:
                    raise
                logger.warning("context overflow after L1 (%s tokens): forcing L2", est1)
                forced = True
                stats["overflow"] = str(exc)
                overflow_error, overflowed_tokens = exc, est1
                continue
            stats["tokens_after"] = est1
            emit("completed", level="L1", tokens_after=est1, stats=_public(stats))
            return response, None

        # L2 (R10, R11)
        local, global_cut = plan.local, plan.global_cut  # the loop only breaks with a plan
        view2 = [summary_msg, *view1[local:]]
        est2 = tokens(view2)
        replaced: list[BaseMessage] = []
        # R12: the kept tail is trimmed to the model's capacity; after an overflow, toward a
        # share of the estimate that overflowed as well (the capacity may be unknown or wrong)
        target = inp.capacity_tokens
        if overflowed_tokens is not None:
            target = _retry_target(stats, inp.capacity_tokens, overflowed_tokens)
        if target is not None and est2 > target:
            view2, replaced = yield from _tail_trim(inp, eff[local:], view2, target, tokens, stats)
            est2 = tokens(view2)
        try:
            response = yield CallModel(view2, inp.scans)
        except ContextOverflowError as exc:
            if forced:
                raise  # R12: the retry overflowed again
            forced = True
            stats["overflow"] = str(exc)
            target = _retry_target(stats, inp.capacity_tokens, est2)
            view2, more = yield from _tail_trim(inp, eff[local:], view2, target, tokens, stats)
            replaced = _merge_replaced(replaced, more)
            est2 = tokens(view2)
            response = yield CallModel(view2, inp.scans)
        stats["tokens_after"] = est2
        # R9/R11: eff[:local] and their L1 copies are behind the cumulative cutoff for good
        copies = (m for m, o in zip(view1[:local], eff[:local], strict=True) if m is not o)
        _forget(inp, [*eff[:local], *copies])
        event = summarization_event(msgs, global_cut, summary_msg, file_path, result.error)
        update: RoundUpdate = {"_summarization_event": event}
        if replaced:
            update["messages"] = replaced
        emit(
            "completed",
            level="L2",
            tokens_after=est2,
            cutoff_index=global_cut,
            file_path=file_path,
            error=result.error,
            stats=_public(stats),
        )
        return response, update
    except BaseException as exc:
        fail(exc)
        raise


def _forget(inp: RoundInput, behind: list[BaseMessage]) -> None:
    """Drop the estimates and L1 memos of messages now behind the cutoff (R9/R11: never sent again)."""
    inp.estimates.forget(behind)
    inp.hooks.forget(behind, inp.settings)


def _level(stats: RoundStats) -> Level | None:
    """The level of a failed round for its event: ``None`` when no step ran yet."""
    level = stats.get("level")
    return None if level is None or level == "none" else level


def _retry_target(stats: RoundStats, capacity: int | None, overflowed: int) -> int:
    """The size the retry after an overflow aims at (R12), recorded in the event's stats: a
    share (:data:`OVERFLOW_RETRY_SHARE`) of the ``overflowed`` estimate, or the model's
    ``capacity`` when that is smaller (tokens)."""
    share = int(overflowed * OVERFLOW_RETRY_SHARE)
    if capacity is not None and capacity <= share:
        stats["retry_target_tokens"], stats["retry_target_from"] = capacity, "capacity"
    else:
        stats["retry_target_tokens"], stats["retry_target_from"] = share, "estimate"
    return stats["retry_target_tokens"]


def _record_trims(stats: RoundStats, reports: list[TrimReport]) -> None:
    for r in reports:
        stats.setdefault("offloaded", []).extend(r.offloaded)
        stats.setdefault("truncated_args", []).extend(r.truncated_args)
        if r.errors:
            stats.setdefault("trim_errors", []).extend(r.errors)


def _public(stats: RoundStats) -> EventStats:
    """The stats an event carries: offloaded paths instead of records, the number of truncated
    arguments instead of their records."""
    out: dict[str, Any] = dict(stats)
    out["offloaded"] = [o.get("path") for o in stats.get("offloaded", [])]
    out["truncated_args"] = len(stats.get("truncated_args", []))
    return out  # type: ignore[return-value]


def _merge_replaced(a: list[BaseMessage], b: list[BaseMessage]) -> list[BaseMessage]:
    by_id = {m.id: m for m in a}
    by_id.update({m.id: m for m in b})
    return list(by_id.values())


def _tail_trim(
    inp: RoundInput,
    kept_original: list[BaseMessage],
    view: list[BaseMessage],
    capacity: int,
    tokens: Callable[[list[BaseMessage]], int],
    stats: RoundStats,
) -> Generator[RunL1, _L1Result, tuple[list[BaseMessage], list[BaseMessage]]]:
    """R12: trim the kept tail further until the view fits ``capacity`` tokens.

    Re-runs the L1 trimmers on the original kept messages with a halving per-message limit.
    Returns the new view and the kept messages that the state update replaces by id: those
    trimmed here whose original is saved in a file (they carry ctxlab's offload mark,
    :func:`ctxlab.core.marks.offloaded_path_of`).  A message trimmed otherwise (its offload write
    failed, or another trimmer edited it) is trimmed in the view only, and the state keeps the
    original: nothing is lost.  Messages without an id are left untrimmed so that the checkpoint
    always matches what the model saw.  Generator: yields :class:`RunL1` effects.
    """
    summary, current = view[0], view[1:]
    protect = {protect_key(m) for m in kept_original if m.id is None}
    limit = inp.settings.summary_tool_result_token_limit
    trimmed = current
    while tokens([summary, *trimmed]) > capacity and limit > 24:
        limit //= 2
        ctx = TrimContext(
            settings=inp.settings,
            estimate=inp.estimates.message_tokens,
            save_tool_result=inp.save_tool_result,
            token_limit=limit,
            protect_ids=protect,
            file_exists=inp.file_exists,
        )
        trimmed, reports = yield RunL1(list(kept_original), ctx)
        trimmed = [
            t if t is not k and not _same_payload(t, c) else c
            for t, k, c in zip(trimmed, kept_original, current, strict=True)
        ]
        _record_trims(stats, reports)
    replaced = [
        t
        for t, c in zip(trimmed, current, strict=True)
        if t is not c
        and t.id is not None
        and offloaded_path_of(t) is not None
        and offloaded_path_of(c) is None
    ]
    stats["tail_trimmed"] = len(replaced)
    return [summary, *trimmed], replaced


def _same_payload(a: BaseMessage, b: BaseMessage) -> bool:
    if a.content != b.content:
        return False
    if isinstance(a, AIMessage) and isinstance(b, AIMessage):
        return a.tool_calls == b.tool_calls
    return True
