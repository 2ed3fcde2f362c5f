"""One compression round: a single control flow for the sync and async drivers (spec R3–R14).

:func:`compression_round` is a generator.  It never does model or history I/O itself: it yields
*effects* and receives their results, so the sync middleware, the async middleware and replay
drive the very same logic:

* :class:`CallModel` — send ``messages`` as the request view; the driver sends back the model
  response, or throws the model's exception into the generator;
* :class:`~ctxlab.core.l1.RunL1` — run the L1 trimmers (they write offload files; async drivers
  run it in a worker thread); the driver sends back ``(view, reports)``; the overflow tail trim
  (:mod:`ctxlab.core.tail_trim`) yields it as well;
* :class:`RunL2` — write the history file and summarize (sync: write first, then summarize;
  async: both concurrently with ``asyncio.gather``, R10); the driver sends back
  ``(file_path | None, SummaryResult)``;
* the preparation effects of :mod:`ctxlab.core.prepare` (issue 34, only with
  ``summary_prepare_ratio``): start summarizing the next span in the background, wait for it,
  write a prepared span's history file.

The generator's return value is the driver's result: a ``ModelResponse`` (no state change) or
an ``ExtendedModelResponse`` carrying ``Command(update={"_summarization_event": ...})`` (R11).
"""

from __future__ import annotations

import functools
import logging
import operator
from collections.abc import Callable, Generator, Hashable, Iterable, Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any, NamedTuple, TypedDict, Unpack

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import BaseMessage, HumanMessage

from ctxlab.core.cutoff import SummarizationEvent, summarization_event
from ctxlab.core.estimation import EstimateCache
from ctxlab.core.events import (
    CompressionEvent,
    EventFields,
    EventStats,
    Level,
    OverflowWindowStats,
    Phase,
    make_event,
)
from ctxlab.core.hooks import CompressionHooks
from ctxlab.core.l1 import RunL1, TrimContext
from ctxlab.core.l2 import kept_as_sent, plan_l2, summary_to_commit
from ctxlab.core.messages import ScanMemory, effective_messages, resolve_cutoff, sendable_view
from ctxlab.core.overflow import OVERFLOW_RETRY_SHARE, read_overflow, retry_target
from ctxlab.core.preparations import Preparations, PrepareEffect
from ctxlab.core.prepare import Taken, maybe_prepare, take_prepared
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryJob
from ctxlab.core.tail_trim import RoundStats, fit_tail, record_trims, written_back

logger = logging.getLogger("ctxlab.core.compression")

EVENT_KEY = "_summarization_event"

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

    ``messages`` is made sendable on init (:func:`ctxlab.core.messages.sendable_view`: no orphan, R9;
    ``below_t``, R3: only a result whose call is in the ``summarized`` state messages is changed).
    """

    messages: list[BaseMessage]
    scans: InitVar[ScanMemory | None] = None
    summarized: InitVar[Iterable[BaseMessage]] = ()
    below_t: InitVar[bool] = False

    def __post_init__(self, scans: ScanMemory | None, summarized: Iterable[Any], below_t: bool) -> None:
        self.messages = sendable_view(self.messages, scans, summarized, summarized_only=below_t)


@dataclass
class RunL2:
    """Effect: write ``history_content`` at the virtual ``history_path`` and summarize ``job``;
    the driver sends back ``(file_path or None when the write failed, SummaryResult)`` (R10).
    ``history_content`` is the text, or a function that renders its pieces (the middleware
    renders them where it writes them, off the request's thread: issue 31)."""

    job: SummaryJob
    history_path: str
    history_content: str | Callable[[], Iterable[str]]


#: what :func:`compression_round` yields (:class:`~ctxlab.core.l1.RunL1`: run the L1 trimmers;
#: :data:`~ctxlab.core.prepare.PrepareEffect`: prepared summaries)
Effect = CallModel | RunL1 | RunL2 | PrepareEffect


class RoundUpdate(TypedDict, total=False):
    """The ``Command(update=...)`` of an L2 round: the new event and, after the overflow tail
    trimming (R12), the kept messages that replace their originals by id."""

    _summarization_event: SummarizationEvent
    messages: list[BaseMessage]


class ModelLimits(NamedTuple):
    """What the round needs to know of the models, read only when a step needs it.

    Attributes:
        capacity_tokens: the input the main model accepts (tokens): its ``max_input_tokens`` (a
            positive int) less the reply's reserve; ``None`` if unknown.
        summarizer_budget: tokens one summarizer input may use.
        reserve_tokens: the reply's reserve of the request (``max_tokens`` /
            ``max_output_tokens`` of the request or the model; tokens), 0 when unknown.  The
            window is input plus reply (issue 30).
    """

    capacity_tokens: int | None
    summarizer_budget: int
    reserve_tokens: int = 0


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
        files_epoch: returns :attr:`ctxlab.core.l1.TrimContext.files_epoch` (called when L1 runs).
        file_owned: handed to trimmers (:attr:`ctxlab.core.l1.TrimContext.file_owned`).
        scans: the middleware's orphan scans (:class:`~ctxlab.core.messages.ScanMemory`), or ``None``.
        stats: the round's record (:class:`RoundStats`), filled as the round goes.
        preparations: the middleware's prepared summaries (:mod:`ctxlab.core.prepare`), or
            ``None`` (none are made or used).
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
    files_epoch: Callable[[], Hashable | None] | None = None
    file_owned: Callable[[str], bool] | None = None
    scans: ScanMemory | None = None
    stats: RoundStats = field(default_factory=lambda: RoundStats())
    preparations: Preparations | None = None

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

    @property
    def reserve_tokens(self) -> int:
        """The reply's reserve of the request (tokens; 0 when unknown, :class:`ModelLimits`)."""
        return self._limits.reserve_tokens


def compression_round(inp: RoundInput) -> Generator[Effect, Any, tuple[Any, RoundUpdate | None]]:
    """Run one model call under ARS compression.

    Yields effects (see module docstring).  Returns ``(response, update)`` where ``update`` is
    ``None`` (no state change: below T, or L1 only, R3/R7) or the dict for
    ``Command(update=...)``: ``_summarization_event`` (after L2) and, after overflow tail
    trimming (R12), ``messages`` replacing trimmed messages by id (an overflow round that commits
    no summary may carry ``messages`` alone).

    After an overflow the round sends exactly one retry (R12): the L2 view, or, when no summary
    is committed (no valid cutoff, R13; L2 declined), the L1 view, either trimmed toward the
    retry target (:func:`ctxlab.core.overflow.retry_target`; :func:`ctxlab.core.tail_trim.tail_trim`).

    Raises:
        ContextOverflowError: the retry overflowed again (R12), or the L1 view overflowed and no
            smaller view could be built (no summary, nothing to trim: R13); ``failed`` is emitted
            first.  It is always the provider's own exception object (its type and attributes),
            never a new one.
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
    # the provider's own overflow error (R12: it is what propagates) and the estimate of the view
    # it refused (the effective messages below T, the L1 view above)
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

    def emit_prepared(info: Any, end: int) -> None:  # issue 34: a summary prepared or discarded
        emit("prepared", cutoff_index=end, stats={"prepared": info})

    def prepare(est: int, view: list[BaseMessage] | None) -> Generator[Effect, Any, None]:
        """Start preparing the next summary (never fails the model call it runs in)."""
        try:
            yield from maybe_prepare(inp, eff, prev_cut, est, view, emit_prepared, tokens)
        except Exception as exc:
            logger.warning("preparing a summary failed: %s", exc)

    def fail(exc: BaseException) -> None:
        if started or forced:
            emit(
                "failed",
                level=_level(stats),
                error=f"{type(exc).__name__}: {exc}",
            )

    # R3: below the entry threshold T the effective messages go as they are (the model's limits
    # are not read: seed, 入口阈值未达到时，中间件直接调用主模型)
    if est0 < s.entry_threshold_tokens:
        yield from prepare(est0, None)
        # issue 28: kept messages go out as the summarizing round sent them, if its cutoff asked
        sent, est_sent = eff, est0
        n_kept = kept_as_sent(inp.event, eff) if prev_cut is not None else 0
        if n_kept:
            head, reports = yield RunL1(list(eff[: 1 + n_kept]), _trim_context(inp))
            record_trims(stats, reports)
            sent = [*head, *eff[1 + n_kept :]]
            est_sent = tokens(sent)
        try:
            response = yield CallModel(sent, inp.scans, msgs[: prev_cut or 0], True)
            stats["tokens_after"] = est_sent
            return response, None
        except ContextOverflowError as exc:
            logger.warning(
                "context overflow below the entry threshold (%s < %s tokens): forcing compression",
                est_sent,
                s.entry_threshold_tokens,
            )
            forced = True
            stats["overflow"] = str(exc)
            overflow_error, overflowed_tokens = exc, est_sent
    else:
        started = True
        emit("started")  # R4

    try:
        # L1 (R5, R6)
        trim_ctx = _trim_context(inp)
        view1, reports = yield RunL1(eff, trim_ctx)
        record_trims(stats, reports)
        est1 = tokens(view1)
        stats["tokens_l1"] = est1
        stats["level"] = "L1"

        # R7/R8: the L2 decision; R9: the cutoff (R13: none); R10: the summary, committed only
        # when it shrinks the request.  Otherwise the L1 view is sent once; its overflow forces
        # L2 (R12) and the decision is asked again.  A forced round with no summary to commit
        # goes on with the L1 view: trimmed toward the retry target, it is the one retry (R12).
        summary_msg: HumanMessage | None = None
        taken: Taken | None = None
        while True:
            plan = plan_l2(inp, eff, view1, est1, prev_cut, forced)
            if plan is not None:
                if not started:
                    started = True
                    emit("started")  # R14: overflow-forced round that began below T
                stats["level"] = "L2"
                taken = yield from take_prepared(inp, eff, view1, plan, prev_cut, tokens, emit_prepared)
                if taken is not None:  # issue 34: a summary prepared in the background
                    plan, file_path, result, summary_msg = (
                        taken.plan,
                        taken.file_path,
                        taken.result,
                        taken.message,
                    )
                    break
                file_path, result = yield RunL2(plan.job, plan.history_path, plan.history)
                summary_msg = summary_to_commit(inp, eff, plan, file_path, result)
                if summary_msg is not None:
                    break
                stats["level"] = "L1"
            if forced:
                break
            if plan is None:
                yield from prepare(est1, view1)
            try:
                response = yield CallModel(view1, inp.scans, msgs[: prev_cut or 0])
            except ContextOverflowError as exc:
                logger.warning("context overflow after L1 (%s tokens): forcing L2", est1)
                forced = True
                stats["overflow"] = str(exc)
                overflow_error, overflowed_tokens = exc, est1
                continue
            stats["tokens_after"] = est1
            emit("completed", level="L1", tokens_after=est1, stats=_public(stats))
            return response, None

        if not started:
            started = True
            emit("started")  # R14: overflow-forced round that began below T
        # R12: the view is trimmed to the model's capacity (its input's share of the window: the
        # reply's reserve is not the input's, issue 30); after an overflow, toward the retry
        # target (the capacity may be unknown or wrong).  ``local`` is the cutoff in ``eff``: the
        # view is [summary, *kept tail] (L2) or the whole L1 view (``local`` 0, no summary).
        local = plan.local if summary_msg is not None and plan is not None else 0
        target = inp.capacity_tokens
        if target is not None:
            stats["capacity_tokens"] = target
        if inp.reserve_tokens:
            stats["reply_reserve_tokens"] = inp.reserve_tokens
        if overflowed_tokens is not None:
            target = _retry_target(stats, inp, overflowed_tokens, overflow_error)
        kept = view1[local:]
        while True:
            prefix: list[BaseMessage] = [summary_msg] if summary_msg is not None else []
            kept, est2 = yield from fit_tail(trim_ctx, prefix, eff[local:], kept, target, tokens, stats)
            if summary_msg is not None and target is not None and est2 > target:
                # R12: the summary and its trimmed tail do not fit: the whole L1 view, trimmed,
                # is sent instead when it is smaller (the summary is not committed)
                alt, alt_tokens = yield from fit_tail(trim_ctx, [], eff, view1, target, tokens, stats)
                if alt_tokens < est2:
                    stats["summary_rejected"] = (
                        f"not committed: after the overflow trim the request is smaller without it "
                        f"({alt_tokens} < {est2} tokens)"
                    )
                    stats["level"] = "L1"
                    summary_msg, local, prefix, kept, est2 = None, 0, [], alt, alt_tokens
            if (
                overflow_error is not None
                and summary_msg is None
                and overflowed_tokens is not None
                and est2 >= overflowed_tokens
            ):
                # R12/R13: the view that overflowed (the L1 view, or below T the effective
                # messages) and nothing smaller could be built (no summary, nothing to trim):
                # the request that overflowed is not sent again (issue 30: below T too)
                raise overflow_error
            try:
                behind = plan.global_cut if summary_msg is not None and plan is not None else prev_cut
                response = yield CallModel([*prefix, *kept], inp.scans, msgs[: behind or 0])
                break
            except ContextOverflowError as exc:
                if forced:
                    raise  # R12: the retry overflowed again
                forced = True
                stats["overflow"] = str(exc)
                overflow_error = exc
                target = _retry_target(stats, inp, est2, exc)
        stats["tokens_after"] = est2
        if taken is not None and inp.preparations is not None:
            if summary_msg is not None:
                inp.preparations.used(taken.entry)
            else:
                inp.preparations.discard(taken.entry, "its summary was not committed after the overflow trim")
        replaced = written_back(kept, view1[local:], eff[local:])
        stats["tail_trimmed"] = len(replaced)
        update: RoundUpdate = {}
        if replaced:
            update["messages"] = replaced
        if summary_msg is None or plan is None:
            emit("completed", level="L1", tokens_after=est2, stats=_public(stats))
            return response, update or None
        global_cut = plan.global_cut
        # R9/R11: eff[:local] and their L1 copies are behind the cumulative cutoff for good
        copies = (m for m, o in zip(view1[:local], eff[:local], strict=True) if m is not o)
        _forget(inp, [*eff[:local], *copies])
        event = summarization_event(msgs, global_cut, summary_msg, file_path, result.error)
        if plan.kept_as_sent and any(k is not o for k, o in zip(kept, eff[local:], strict=False)):
            event["kept_as_sent"] = len(kept)  # issue 28: later requests repeat this one's prefix
        update["_summarization_event"] = event
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


def _trim_context(inp: RoundInput) -> TrimContext:
    """The L1 trimmers' context of a round (R5, R6)."""
    s = inp.settings
    return TrimContext(
        settings=s,
        estimate=inp.estimates.message_tokens,
        save_tool_result=inp.save_tool_result,
        token_limit=s.summary_tool_result_token_limit,
        file_exists=inp.file_exists,
        files_epoch=inp.files_epoch() if inp.files_epoch is not None else None,
        file_owned=inp.file_owned,
    )


def _forget(inp: RoundInput, behind: list[BaseMessage]) -> None:
    """Drop the estimates and L1 memos of messages now behind the cutoff (R9/R11: never sent again)."""
    inp.estimates.forget(behind)
    inp.hooks.forget(behind, inp.settings)


def _level(stats: RoundStats) -> Level | None:
    """The level of a failed round for its event: ``None`` when no step ran yet."""
    level = stats.get("level")
    return None if level is None or level == "none" else level


def _retry_target(stats: RoundStats, inp: RoundInput, overflowed: int, error: BaseException | None) -> int:
    """The size the retry after an overflow aims at (R12, :func:`ctxlab.core.overflow.retry_target`:
    a share of the ``overflowed`` estimate, the model's input capacity, the window the provider's
    ``error`` states, each less the reply's reserve), recorded in the event's stats (tokens)."""
    stated = read_overflow(error) if error is not None else None
    target = retry_target(overflowed, inp.capacity_tokens, stated, inp.reserve_tokens)
    stats["retry_target_tokens"], stats["retry_target_from"] = target
    if stated is not None:
        window: OverflowWindowStats = {"provider": stated.provider, "window_tokens": stated.window_tokens}
        if stated.counted_tokens is not None:
            window["counted_tokens"] = stated.counted_tokens
        if stated.reserve_tokens is not None:
            window["reserve_tokens"] = stated.reserve_tokens
        stats["overflow_window"] = window
    return target.tokens


#: the path of an offload record (:func:`_public`)
_PATH = operator.itemgetter("path")


def _public(stats: RoundStats) -> EventStats:
    """The stats an event carries: offloaded paths instead of records, the number of truncated
    arguments instead of their records."""
    out: dict[str, Any] = dict(stats)
    offloaded = stats.get("offloaded", [])
    try:
        out["offloaded"] = list(map(_PATH, offloaded))
    except KeyError:  # a plugin's record without a path
        out["offloaded"] = [o.get("path") for o in offloaded]
    out["truncated_args"] = len(stats.get("truncated_args", []))
    return out  # type: ignore[return-value]
