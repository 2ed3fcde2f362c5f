"""The store of prepared summaries and the work that makes one in the background (issue 34).

:mod:`ctxlab.core.prepare` decides when a summary is prepared and when an L2 round commits one;
this module holds what it decides about: a :class:`PrepareJob` (the span, fixed when the
preparation starts), the background work that turns it into a :class:`Prepared` summary
(:func:`prepare_now`, :func:`aprepare_now`: the L1 view of the span computed without writing a
file, the history document, the summarizer call, R10), one thread's :class:`Preparation`, the
middleware's :class:`Preparations` (one per thread, thread-safe, with the counts of wasted
summarizer calls) and the effects the drivers perform for them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from langchain_core.messages import BaseMessage

from ctxlab.core.background import Pending, PrepareRunner, RealRunner
from ctxlab.core.cutoff import build_summary_message, history_document
from ctxlab.core.files import history_path, tool_result_path
from ctxlab.core.l1 import TrimContext, run_l1
from ctxlab.core.messages import message_text
from ctxlab.core.prompts import summary_language_of
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import Summarizer, SummaryJob, SummaryResult

logger = logging.getLogger("ctxlab.core.prepare")

__all__ = [
    "PREPARATIONS_KEPT",
    "PREPARE_EFFECTS",
    "AwaitPreparation",
    "Preparation",
    "PreparationCounts",
    "Preparations",
    "PrepareEffect",
    "PrepareJob",
    "Prepared",
    "StartPreparation",
    "WriteHistory",
    "aprepare_now",
    "l1_copy",
    "prepare_now",
    "waste_of",
]

#: threads whose preparation a middleware keeps at most (the oldest one beyond is discarded)
PREPARATIONS_KEPT = 256


# --- what runs in the background -----------------------------------------------------------------


@dataclass(frozen=True)
class PrepareJob:
    """What a preparation is made from, fixed when it starts.

    Attributes:
        key: the thread it belongs to (``thread_id``; ``""`` without one).
        eff: the effective messages of the call that started it (``eff[0]`` is the previous
            summary when ``previous`` is set).
        local: the cutoff in ``eff`` (``eff[:local]`` is summarized).
        start, end: the span's global positions in the state messages (``end`` is the global
            cutoff it would commit, R11).
        prev_cut: the previous summary's global cutoff (``None``: no previous summary).
        previous: the previous summary message (``None``: none).
        settings: the middleware's settings when it started.
        view1: the L1 view of ``eff`` (an L1-only round's, or below T the copy the start rule
            built, :func:`l1_copy`), or ``None``: the background work then trims a copy.
        system: the system message (the summarizer job's).
        budget_tokens: the summarizer's input budget (tokens).
        thread_id: names the history file.
        hooks, estimates: the middleware's hooks (L1 trimmers) and estimate cache.
    """

    key: str
    eff: tuple[BaseMessage, ...]
    local: int
    start: int
    end: int
    prev_cut: int | None
    previous: BaseMessage | None
    settings: CompressionSettings
    view1: tuple[BaseMessage, ...] | None
    system: BaseMessage | None
    budget_tokens: int
    thread_id: str | None
    hooks: Any
    estimates: Any

    @property
    def offset(self) -> int:
        """Where the span's state messages start in ``eff`` (1 after a previous summary)."""
        return 1 if self.previous is not None else 0


@dataclass
class Prepared:
    """What a preparation ended with: the summarizer job and its result, the history document and
    its path; ``result`` ``None`` with ``reason`` when the span was not worth a summary."""

    history: str
    history_path: str
    job: SummaryJob | None = None
    result: SummaryResult | None = None
    reason: str | None = None


def l1_copy(
    eff: list[BaseMessage], settings: CompressionSettings, hooks: Any, estimates: Any
) -> list[BaseMessage]:
    """The L1 view of ``eff`` (R5, R6) built on a copy without writing any file: offload paths
    are computed, never written (the round that commits writes them).  A preparation's span and
    the start rule's estimate of the window a commit would keep are read from it."""
    ctx = TrimContext(
        settings=settings,
        estimate=estimates.message_tokens,
        save_tool_result=tool_result_path,
        token_limit=settings.summary_tool_result_token_limit,
        file_exists=None,
    )
    view, _reports = run_l1(hooks.l1_trim, eff, ctx)
    return view


def _inputs(job: PrepareJob) -> Prepared:
    """The deterministic part of the background work (CPU only, no file written): the L1 view of
    the span, the history document (R10) and the summarizer job."""
    s = job.settings
    eff = list(job.eff)
    view = list(job.view1) if job.view1 is not None else l1_copy(eff, s, job.hooks, job.estimates)
    previous_summary = message_text(job.previous) if job.previous is not None else None
    history = history_document(eff[: job.local], job.start, job.end, previous_summary)
    path = history_path(job.thread_id, job.start, job.end, history)
    language = summary_language_of(s.summary_language, s.summary_prompt, eff)
    span = sum(job.estimates.message_tokens(m) for m in view[: job.local])
    empty = build_summary_message(eff, job.local, SummaryResult(text=""), path, language, job.end)
    floor = job.estimates.message_tokens(empty)
    if span <= floor:
        return Prepared(history, path, reason=f"the span of {span} tokens is smaller than an empty summary")
    summary_job = SummaryJob(
        messages=view[: job.local],
        prompt=s.prompt_for(language),
        budget_tokens=job.budget_tokens,
        previous_summary=previous_summary,
        language=language,
        kept=view[job.local :],
        system=job.system,
    )
    return Prepared(history, path, job=summary_job)


def _failed(summarizer: Any, exc: Exception) -> SummaryResult:
    logger.error("summarizer %s raised while preparing: %s", getattr(summarizer, "name", summarizer), exc)
    return SummaryResult(text="", error=f"{type(exc).__name__}: {exc}")


def prepare_now(job: PrepareJob, summarizer: Summarizer) -> Prepared:
    """The whole background work of a sync agent: :func:`_inputs`, then ``summarizer.summarize``
    (an exception is a failed summary, R10)."""
    out = _inputs(job)
    if out.job is not None:
        try:
            out.result = summarizer.summarize(out.job)
        except Exception as exc:
            out.result = _failed(summarizer, exc)
    return out


async def aprepare_now(job: PrepareJob, summarizer: Summarizer) -> Prepared:
    """:func:`prepare_now` for an async agent: the CPU part in a worker thread, then
    ``await summarizer.asummarize``."""
    out = await asyncio.to_thread(_inputs, job)
    if out.job is not None:
        try:
            out.result = await summarizer.asummarize(out.job)
        except Exception as exc:
            out.result = _failed(summarizer, exc)
    return out


# --- one thread's preparation and the store of them -----------------------------------------------


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    """Is state message ``b`` still message ``a``: the same object, or the same kind, id and
    content (a checkpoint reloaded holds new objects)?"""
    if a is b:
        return True
    return (
        type(a) is type(b)
        and a.id == b.id
        and a.content == b.content
        and getattr(a, "tool_calls", None) == getattr(b, "tool_calls", None)
        and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)
    )


@dataclass(eq=False)
class Preparation:
    """One thread's preparation: its :class:`PrepareJob` and the background work (``pending``,
    ``None`` until a driver started it)."""

    job: PrepareJob
    pending: Pending | None = None
    closed: bool = False

    def mismatch(
        self, eff: list[BaseMessage], prev_cut: int | None, settings: CompressionSettings, *, full: bool
    ) -> str | None:
        """Why this preparation does not cover a prefix of ``eff`` any more (``None``: it does).

        ``full``: compare every message of the span (at commit); otherwise its first and last
        (a cheap check on every call)."""
        job = self.job
        if settings != job.settings:
            return "the settings changed"
        if prev_cut != job.prev_cut:
            return "the previous summary changed"
        if job.previous is not None and (not eff or not _same(job.previous, eff[0])):
            return "the previous summary changed"
        if len(eff) < job.local:
            return "messages before its end were removed"
        span = job.eff[job.offset : job.local]
        here = eff[job.offset : job.local]
        pairs = zip(span, here, strict=True) if full else ((span[0], here[0]), (span[-1], here[-1]))
        if span and not all(_same(a, b) for a, b in pairs):
            return "messages before its end changed"
        return None


class PreparationCounts(TypedDict):
    """:attr:`Preparations.stats`: preparations ``started``, ``used`` (committed by an L2 round)
    and ``discarded``; the summarizer ``wasted_calls``, ``wasted_input_tokens`` and
    ``wasted_output_tokens`` of the discarded ones (counted when each one ends)."""

    started: int
    used: int
    discarded: int
    wasted_calls: int
    wasted_input_tokens: int
    wasted_output_tokens: int


def waste_of(outcome: Any) -> dict[str, int]:
    """The summarizer's ``calls``, ``input_tokens`` and ``output_tokens`` spent by a preparation
    that ended with ``outcome`` (zeros when it never reached the summarizer)."""
    result = outcome.result if isinstance(outcome, Prepared) else None
    if result is None:
        return {"calls": 0, "input_tokens": 0, "output_tokens": 0}
    return {"calls": result.calls, "input_tokens": result.input_tokens, "output_tokens": result.output_tokens}


class Preparations:
    """The preparations of one middleware (or of several that share it: pass the same object as
    ``CompressionMiddleware(preparations=...)``), one per thread, thread-safe.

    Args:
        runner: starts the background work (:class:`~ctxlab.core.background.RealRunner` by
            default; the replay gives a simulated one).
    """

    def __init__(self, runner: PrepareRunner | None = None) -> None:
        self.runner: PrepareRunner = runner if runner is not None else RealRunner()
        self._entries: dict[str, Preparation] = {}
        self._lock = threading.Lock()
        self.stats: PreparationCounts = {
            "started": 0,
            "used": 0,
            "discarded": 0,
            "wasted_calls": 0,
            "wasted_input_tokens": 0,
            "wasted_output_tokens": 0,
        }

    def get(self, key: str) -> Preparation | None:
        """The open preparation of thread ``key``, if any."""
        with self._lock:
            return self._entries.get(key)

    def keys(self) -> list[str]:
        """The threads with an open preparation."""
        with self._lock:
            return list(self._entries)

    def begin(self, job: PrepareJob) -> Preparation:
        """Register a preparation for ``job.key`` (a driver starts its work); the oldest thread's
        is discarded beyond :data:`PREPARATIONS_KEPT`."""
        entry = Preparation(job)
        with self._lock:
            old = self._entries.pop(job.key, None)
            self._entries[job.key] = entry
            evicted = next(iter(self._entries.values())) if len(self._entries) > PREPARATIONS_KEPT else None
            self.stats["started"] += 1
        if old is not None:
            self.discard(old, "replaced")
        if evicted is not None:
            self.discard(evicted, "more threads than the middleware keeps preparations for")
        return entry

    def _close(self, entry: Preparation) -> bool:
        with self._lock:
            if entry.closed:
                return False
            entry.closed = True
            if self._entries.get(entry.job.key) is entry:
                del self._entries[entry.job.key]
            return True

    def discard(self, entry: Preparation, reason: str) -> dict[str, int] | None:
        """Drop ``entry`` unused; its summarizer cost is wasted: returned when known (``None``:
        it still runs, counted when it ends)."""
        if not self._close(entry):
            return None
        logger.info("prepared summary for %s discarded: %s", entry.job.key or "(no thread)", reason)
        with self._lock:
            self.stats["discarded"] += 1
        pending = entry.pending
        if pending is None:
            return {"calls": 0, "input_tokens": 0, "output_tokens": 0}
        outcome = pending.outcome()
        if outcome is None:
            pending.on_finish(self._count_waste)
            return None
        waste = waste_of(outcome)
        self._count_waste(outcome)
        return waste

    def _count_waste(self, outcome: Any) -> None:
        waste = waste_of(outcome)
        with self._lock:
            self.stats["wasted_calls"] += waste["calls"]
            self.stats["wasted_input_tokens"] += waste["input_tokens"]
            self.stats["wasted_output_tokens"] += waste["output_tokens"]

    def used(self, entry: Preparation) -> None:
        """``entry`` was committed by an L2 round whose model call succeeded."""
        if self._close(entry):
            with self._lock:
                self.stats["used"] += 1

    def drain(self, key: str, reason: str = "never used") -> list[dict[str, int] | None]:
        """Discard the open preparation of thread ``key`` (a replay's run ended); the waste of each."""
        entry = self.get(key)
        return [self.discard(entry, reason)] if entry is not None else []

    # --- the effects, performed by the middleware's drivers --------------------------------------

    def perform(self, effect: Any, summarizer: Summarizer, write: Callable[[str, str], str | None]) -> Any:
        """Perform a preparation effect for a sync agent: start the work in a thread, wait for it
        (returns the seconds waited), or write the history file with ``write(path, content)``.

        Raises:
            TypeError: ``effect`` is not one of :data:`PREPARE_EFFECTS`.
        """
        _check_effect(effect)
        if isinstance(effect, WriteHistory):
            return write(effect.path, effect.content)
        entry = effect.entry
        if isinstance(effect, StartPreparation):
            self._start(entry, lambda: self.runner.start(lambda: prepare_now(entry.job, summarizer)))
            return None
        return self._timed(lambda: entry.pending.wait(effect.timeout) if entry.pending else None)

    async def aperform(self, effect: Any, summarizer: Summarizer, write: Callable[[str, str], Any]) -> Any:
        """:meth:`perform` for an async agent: a task on the running loop; ``write`` is awaited."""
        _check_effect(effect)
        if isinstance(effect, WriteHistory):
            return await write(effect.path, effect.content)
        entry = effect.entry
        if isinstance(effect, StartPreparation):
            self._start(entry, lambda: self.runner.start_async(lambda: aprepare_now(entry.job, summarizer)))
            return None
        t0 = self.runner.now()
        if entry.pending is not None:
            await entry.pending.await_(effect.timeout)
        return max(0.0, self.runner.now() - t0)

    def _start(self, entry: Preparation, start: Callable[[], Pending]) -> None:
        """Start ``entry``'s work; a failure to start discards it (the model call goes on)."""
        try:
            entry.pending = start()
        except Exception as exc:
            logger.warning("could not start preparing a summary: %s", exc)
            self.discard(entry, f"could not start: {type(exc).__name__}: {exc}")

    def _timed(self, wait: Callable[[], None]) -> float:
        t0 = self.runner.now()
        wait()
        return max(0.0, self.runner.now() - t0)


# --- the effects a driver performs ------------------------------------------------------------------


@dataclass
class StartPreparation:
    """Effect: start ``entry``'s background work (thread or task); the driver sends back ``None``."""

    entry: Preparation


@dataclass
class AwaitPreparation:
    """Effect: wait up to ``timeout`` seconds for ``entry``; the driver sends back the seconds waited."""

    entry: Preparation
    timeout: float


@dataclass
class WriteHistory:
    """Effect: write a prepared span's history file (R10) through the request's backend; the
    driver sends back the path, or ``None`` when the write failed."""

    path: str
    content: str


#: the preparation effects (:data:`ctxlab.core.compression.Effect` includes them)
PrepareEffect = StartPreparation | AwaitPreparation | WriteHistory
#: the preparation effects' classes (``isinstance(effect, PREPARE_EFFECTS)``)
PREPARE_EFFECTS = (StartPreparation, AwaitPreparation, WriteHistory)


def _check_effect(effect: Any) -> None:
    """Raise ``TypeError`` for anything but a preparation effect (the drivers' last resort)."""
    if not isinstance(effect, PREPARE_EFFECTS):
        raise TypeError(f"unknown effect {effect!r}")
