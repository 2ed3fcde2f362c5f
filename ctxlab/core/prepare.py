"""Prepared summaries: the next L2 summary made in the background before T, committed at T
without making the agent wait (issue 34; ``docs/middleware.md``, "Prepared summaries").

An L2 round runs the summarizer inside the model call that crosses T, so the agent waits for a
whole extra model call.  With ``summary_prepare_ratio`` set (off by default):

* **Start.** A call whose request estimate passes ``ratio × T`` (below T), or whose L1 estimate
  passes ``ratio × T2`` in an L1-only round, picks the cutoff the next L2 round would take now
  (hook ``ctxlab_select_cutoff``, R9) and starts summarizing that span in the background
  (:mod:`ctxlab.core.background`: a thread, or a task for async agents), then sends its own
  request at once.  The background work builds what the round would build (the L1 view of the
  span without writing any file, the history document, the summarizer job, R10) and calls the
  summarizer.  One preparation per thread at a time; the call emits a ``prepared`` event.
* **Commit.** An L2 round (R8) looks for its thread's preparation.  It is used when it still
  covers a prefix of this round's span: the previous summary it folds is still the state's,
  every state message of its span is unchanged, the settings are the same, its end is a valid
  cutoff (R9) no later than this round's.  Not finished yet: the round waits up to
  ``summary_prepare_wait_s``.  The cutoff then goes to the end of the prepared span, the
  messages after it stay in the kept window, the history file is written in the round (R10,
  R17: through the request's own backend), and the summary is committed by the usual rules
  (:func:`ctxlab.core.l2.summary_to_commit`; R11 cumulative cutoff).  When committing it would
  leave the request over T2 and the round would cut further without it, it is not used if the
  synchronous round could get under T2 (the issue's T2 fallback), nor if the request would be
  over T or the model's capacity; it is used when the synchronous round cannot get under T2
  either (:func:`over_t2_refusal`: the fallback would only buy a stall).
* **Anything else is today's round.**  A preparation that failed, was late, no longer matches
  the state or is not used for another reason is discarded (a ``prepared`` event with the
  reason) and the round summarizes synchronously, as without preparation.  A background result
  is never written to the checkpoint by itself: only an L2 round's ``Command`` after the main
  model succeeded commits it, so a cancelled run, a crash, a recreated middleware or a
  checkpoint resumed elsewhere leaves either the old state or a complete new event.

Discarded preparations are wasted summarizer calls; :attr:`Preparations.stats` counts them
(and their tokens) per middleware, the ``prepared`` events carry each one's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from langchain_core.messages import BaseMessage, HumanMessage

from ctxlab.core.cutoff import (
    CutoffContext,
    build_summary_message,
    carried_request_tokens,
    first_new_position,
    to_global,
)
from ctxlab.core.events import PreparedStats
from ctxlab.core.files import history_path
from ctxlab.core.l2 import L2Plan, RoundView, summary_to_commit
from ctxlab.core.messages import valid_cut_positions
from ctxlab.core.preparations import (
    AwaitPreparation,
    Preparation,
    Preparations,
    Prepared,
    PrepareEffect,
    PrepareJob,
    StartPreparation,
    WriteHistory,
    l1_copy,
)
from ctxlab.core.prompts import summary_language_of
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryResult

__all__ = [
    "EmitPrepared",
    "PrepareView",
    "Taken",
    "expected_kept",
    "maybe_prepare",
    "over_t2_refusal",
    "summary_tokens",
    "sync_floor",
    "sync_floor_ahead",
    "take_prepared",
]


class PrepareView(RoundView, Protocol):
    """What the two steps read of a round's input (:class:`ctxlab.core.compression.RoundInput`)."""

    @property
    def preparations(self) -> Preparations | None: ...


#: emits a ``prepared`` event: ``(stats["prepared"], the end of the prepared span)``
EmitPrepared = Callable[[PreparedStats, int], None]


def _key(thread_id: str | None) -> str:
    return thread_id or ""


def _discard(
    store: Preparations, entry: Preparation, reason: str, emit: EmitPrepared, waited: float | None = None
) -> PreparedStats:
    info: PreparedStats = {
        "status": "discarded",
        "cutoff_index": entry.job.end,
        "reason": reason,
        "wasted": store.discard(entry, reason),
    }
    if waited is not None:
        info["waited_s"] = waited
    emit(info, entry.job.end)
    return info


def _summary_message(
    inp: PrepareView, eff: list[BaseMessage], local: int, end: int, text: str
) -> HumanMessage:
    s = inp.settings
    language = summary_language_of(s.summary_language, s.summary_prompt, eff)
    path = history_path(inp.thread_id, 0, end, "")  # the shape of the real path, its length
    request = carried_request_tokens(s.l2_threshold_tokens)
    return build_summary_message(eff, local, SummaryResult(text=text), path, language, end, request)


def summary_tokens(inp: PrepareView, eff: list[BaseMessage], local: int, end: int, text: str) -> int:
    """The tokens of the summary message (R10: header, ``text``, history path, the latest request
    it carries, :func:`~ctxlab.core.cutoff.build_summary_message`) that would replace
    ``eff[:local]``; ``text`` ``""``: the empty message, the least a summary of it holds."""
    return inp.estimates.message_tokens(_summary_message(inp, eff, local, end, text))


def sync_floor(
    inp: PrepareView,
    eff: list[BaseMessage],
    view: list[BaseMessage],
    local: int,
    end: int,
    tokens: Callable[[list[BaseMessage]], int],
) -> int:
    """The least request a synchronous L2 round that cuts ``eff`` at ``local`` (global ``end``)
    can send after its summary (tokens): the system message, tool schemas, its kept window
    ``view[local:]`` (the L1 view) and the empty summary message of its span (R10).  Its real
    summary only adds text; a summary it declines sends the L1 view, larger still.  Known
    without calling the summarizer: it decides whether the synchronous round could get under
    T2 at all (:func:`over_t2_refusal`)."""
    return tokens([_summary_message(inp, eff, local, end, ""), *view[local:]])


def sync_floor_ahead(
    inp: PrepareView,
    eff: list[BaseMessage],
    view: list[BaseMessage],
    local: int,
    end: int,
    tokens: Callable[[list[BaseMessage]], int],
) -> int:
    """:func:`sync_floor` as the start rule predicts it for the L2 round to come (tokens): the
    synchronous floor of the cutoff chosen now, less the largest message of its kept window.

    The round cuts later than the cutoff chosen now (the kept window slides by the messages
    that arrive until then), and one large message (a file written, a long answer) often makes
    a window over T2 on its own; the prediction that the synchronous round cannot get under T2
    must survive it sliding out.  Counted with it, 7 of 15 preparations started on that
    prediction were wasted on the public transcripts at T = 16K (``ctxlab compare
    --summarizer-latency 2s``): 5 refused at their round, whose synchronous path could get under
    T2 after all, 2 superseded (``docs/middleware.md``, "Prepared summaries")."""
    floor = sync_floor(inp, eff, view, local, end, tokens)
    return floor - max((inp.estimates.message_tokens(m) for m in view[local:]), default=0)


def over_t2_refusal(s: CompressionSettings, request: int, floor: int, capacity: int | None) -> str | None:
    """Why an L2 round refuses a prepared summary whose commit would leave ``request`` tokens
    (``None``: it commits it; ``docs/middleware.md``, "Prepared summaries", rule 3).

    The issue's rule — over T2 the round falls back to its synchronous path — exists so that a
    prepared commit never sends a request the synchronous round would have got under T2.  It
    holds whenever that is possible: with ``floor`` (:func:`sync_floor`, the least the
    synchronous round can send) at most T2, a commit over T2 is refused.  When ``floor`` is
    over T2 too, the fallback only buys a stall (the synchronous request is over T2 as well),
    so the commit is taken when its request is one a round may leave: at most T (the call
    after it is then below T and starts no round by itself, R3; over T the messages the commit
    keeps beyond the synchronous cutoff would let that call summarize again at once, in the
    round) and at most the model's input ``capacity`` when known (never a request the model
    refuses where the synchronous one fits, R12)."""
    t, t2 = s.entry_threshold_tokens, s.l2_threshold_tokens
    if request <= t2:
        return None
    over = f"the kept window would be {request} tokens, over T2 ({t2:g})"
    if floor <= t2:
        return f"{over}, and the synchronous round can get under T2 (at least {floor} tokens)"
    if request > t:
        return f"{over} and over T ({t:g}; the synchronous round: at least {floor})"
    if capacity is not None and request > capacity:
        return f"{over} and over the model's input capacity ({capacity})"
    return None


def expected_kept(
    inp: PrepareView,
    summary_tokens: int,
    view: list[BaseMessage],
    local: int,
    est: int,
    below_t: bool,
    tokens: Callable[[list[BaseMessage]], int],
) -> tuple[int, int]:
    """The request a commit of ``view[:local]`` is expected to leave at the L2 round that commits
    it, and the growth allowed for until that round (tokens).

    The request then holds the system message and tool schemas, the new summary
    (``summary_tokens``: the previous summary's size; none yet: the empty summary message of the
    span, :func:`summary_tokens`, the least a summary holds), the L1 view of the messages after ``local`` and
    what arrives until the round: below T (``below_t``) at most ``T − est`` (the raw request
    must reach T, and L1 never makes a message bigger), in an L1-only round about ``T2 − est``
    (R8: the round comes when the L1 estimate ``est`` passes T2)."""
    s = inp.settings
    limit = s.entry_threshold_tokens if below_t else s.l2_threshold_tokens
    growth = max(0, int(limit) - est)
    return tokens(view[local:]) + summary_tokens + growth, growth


def _cutoff(inp: PrepareView, eff: list[BaseMessage], has_prev: bool) -> int | None:
    """The cutoff an L2 round would take in ``eff`` now (hook ``ctxlab_select_cutoff``, R9), or
    ``None`` (none, or not past the previous summary)."""
    s = inp.settings
    cut = inp.hooks.select_cutoff(
        list(eff),
        CutoffContext.for_round(s, inp.estimates.message_tokens, has_previous_summary=has_prev),
    )
    local = cut.index if cut is not None else None
    if local is None or not first_new_position(has_prev) <= local <= len(eff):
        return None
    return local


def _taken_over_t2(
    inp: PrepareView,
    eff: list[BaseMessage],
    view1: list[BaseMessage],
    prev_cut: int | None,
    request: int,
    tokens: Callable[[list[BaseMessage]], int],
) -> bool:
    """Would the L2 round to come take a commit leaving ``request`` tokens although it is over T2:
    its synchronous path predicted over T2 as well (:func:`sync_floor_ahead` at the cutoff it
    would take now) and ``request`` within :func:`over_t2_refusal`'s limits?"""
    has_prev = prev_cut is not None
    local = _cutoff(inp, eff, has_prev)
    if local is None:
        return False
    floor = sync_floor_ahead(inp, eff, view1, local, to_global(local, prev_cut, has_prev), tokens)
    return (
        floor > inp.settings.l2_threshold_tokens
        and over_t2_refusal(inp.settings, request, floor, None) is None
    )


def maybe_prepare(
    inp: PrepareView,
    eff: list[BaseMessage],
    prev_cut: int | None,
    est: int,
    view1: list[BaseMessage] | None,
    emit: EmitPrepared,
    tokens: Callable[[list[BaseMessage]], int],
) -> Generator[PrepareEffect, Any, None]:
    """Start preparing the next L2 summary when ``est`` passes ``ratio × T`` (``view1`` ``None``:
    a call below T) or ``ratio × T2`` (``view1``: the L1 view of an L1-only round), and the L2
    round that would commit it is in reach and can take it:

    * below T the L1 view of a copy is built (:func:`~ctxlab.core.preparations.l1_copy`, no file
      written); when its estimate plus the raw growth still needed to reach T stays at or below
      T2, the round at T is an L1-only round (R7) and the preparation waits for those rounds;
    * the request the commit is expected to leave (:func:`expected_kept`: the kept window now
      plus the growth until the round) must be at most T2, or else be one the round takes over
      T2 (:func:`over_t2_refusal`, with the synchronous floor predicted by
      :func:`sync_floor_ahead`: over T2, and the request at most T); otherwise the round would
      refuse it (the T2 rule of :func:`take_prepared`) and the summary would be made for nothing.

    A valid open preparation is kept; one that no longer matches the state, or (L1-only round)
    whose kept window grew over ``ratio × T2`` and whose commit the round would not take over T2
    either (:func:`_taken_over_t2`), is discarded and replaced.  Yields
    :class:`StartPreparation`; ``tokens`` estimates a whole request (system, tools, messages)."""
    store, s = inp.preparations, inp.settings
    ratio = s.summary_prepare_ratio
    if store is None or ratio is None:
        return
    below_t = view1 is None
    limit = ratio * (s.entry_threshold_tokens if below_t else s.l2_threshold_tokens)
    if est < limit:
        return
    key = _key(inp.thread_id)
    entry = store.get(key)
    has_prev = prev_cut is not None
    previous = eff[0] if has_prev else None
    # the new summary is expected as large as the previous one (none: at least an empty summary)
    summary: int | None = inp.estimates.message_tokens(previous) if previous is not None else None
    if entry is not None:
        reason = entry.mismatch(eff, prev_cut, s, full=False)
        if reason is None and view1 is not None:
            job = entry.job
            kept = est - sum(inp.estimates.message_tokens(m) for m in view1[: job.local])
            if kept > ratio * s.l2_threshold_tokens and not _taken_over_t2(
                inp,
                eff,
                view1,
                prev_cut,
                kept + (summary or summary_tokens(inp, eff, job.local, job.end, "")),
                tokens,
            ):
                reason = f"superseded: the window it would keep grew to {kept} tokens"
        if reason is None:
            return
        _discard(store, entry, reason, emit)
    local = _cutoff(inp, eff, has_prev)
    if local is None:
        return
    view = view1 if view1 is not None else l1_copy(list(eff), s, inp.hooks, inp.estimates)
    if below_t and tokens(view) + s.entry_threshold_tokens - est <= s.l2_threshold_tokens:
        return  # the round at T sends the L1 view (R7): the L1-only rounds prepare
    end = to_global(local, prev_cut, has_prev)
    if summary is None:
        summary = summary_tokens(inp, eff, local, end, "")
    expected, growth = expected_kept(inp, summary, view, local, est, below_t, tokens)
    floor: int | None = None
    if expected > s.l2_threshold_tokens:
        # over T2 the round takes it only when its synchronous path cannot get under T2 either
        # (:func:`over_t2_refusal`): predicted from the synchronous round's kept window now
        floor = sync_floor_ahead(inp, eff, view, local, end, tokens)
        if over_t2_refusal(s, expected, floor, None) is not None:
            return  # the L2 round would refuse it: made for nothing
    job = PrepareJob(
        key=key,
        eff=tuple(eff),
        local=local,
        start=prev_cut if prev_cut is not None else 0,
        end=end,
        prev_cut=prev_cut,
        previous=previous,
        settings=s,
        view1=tuple(view),
        system=inp.system,
        budget_tokens=inp.summarizer_budget,
        thread_id=inp.thread_id,
        hooks=inp.hooks,
        estimates=inp.estimates,
    )
    entry = store.begin(job)
    yield StartPreparation(entry)
    if not entry.closed:
        info: PreparedStats = {
            "status": "started",
            "cutoff_index": end,
            "expected_tokens": expected,
            "growth_tokens": growth,
        }
        if floor is not None:
            info["sync_floor_tokens"] = floor
        emit(info, end)


@dataclass
class Taken:
    """A prepared summary an L2 round commits: the plan of its span, the history file's path
    (``None``: not written), the summarizer's result, the summary message and its preparation."""

    plan: L2Plan
    file_path: str | None
    result: SummaryResult
    message: HumanMessage
    entry: Preparation = field(repr=False)


def take_prepared(
    inp: PrepareView,
    eff: list[BaseMessage],
    view1: list[BaseMessage],
    plan: L2Plan,
    prev_cut: int | None,
    tokens: Callable[[list[BaseMessage]], int],
    emit: EmitPrepared,
) -> Generator[PrepareEffect, Any, Taken | None]:
    """The thread's prepared summary, when this L2 round (``plan``) can commit it (see the module
    docstring); else ``None`` — the round summarizes as without preparation, the preparation is
    discarded and ``inp.stats["prepared"]`` says why.  Waits up to ``summary_prepare_wait_s``
    for one still running (:class:`AwaitPreparation`) and writes its history file
    (:class:`WriteHistory`)."""
    store, s, stats = inp.preparations, inp.settings, inp.stats
    entry = store.get(_key(inp.thread_id)) if store is not None else None
    if store is None or entry is None:
        return None

    def drop(reason: str, waited: float | None = None) -> None:
        stats["prepared"] = _discard(store, entry, reason, emit, waited)

    job = entry.job
    reason = entry.mismatch(eff, prev_cut, s, full=True)
    if reason is None and job.end > plan.global_cut:
        reason = f"it ends at {job.end}, after this round's cutoff {plan.global_cut}"
    if reason is None and not valid_cut_positions(eff)[job.local]:
        reason = "its end is no longer a valid cutoff (R9)"
    if reason is not None or entry.pending is None:
        drop(reason or "it never started")
        return None
    waited = 0.0
    if not entry.pending.done():
        waited = yield AwaitPreparation(entry, s.summary_prepare_wait_s)
        if not entry.pending.done():
            drop(f"not ready after {waited:.3f} s (summary_prepare_wait_s)", waited)
            return None
    out = entry.pending.outcome()
    result = out.result if isinstance(out, Prepared) else None
    if not isinstance(out, Prepared) or out.job is None or result is None:
        why = out.reason if isinstance(out, Prepared) else f"{type(out).__name__}: {out}"
        drop(f"not made: {why}", waited)
        return None
    if result.error or not result.text.strip():
        drop(f"the background summary failed: {result.error or 'no text'}", waited)
        return None
    # the size rules of a committed summary, with the path it will name, before writing the file
    record = cast(dict[str, Any], stats)
    before = dict(record)
    span = sum(inp.estimates.message_tokens(m) for m in view1[: job.local])
    pplan = L2Plan(
        job.local, job.end, span, out.job, out.history_path, out.history, plan.forced, plan.kept_as_sent
    )
    message = summary_to_commit(inp, eff, pplan, out.history_path, result)
    why = stats.get("summary_rejected") if message is None else None
    floor: int | None = None
    if message is not None:
        kept = tokens([message, *view1[job.local :]])
        if kept > s.l2_threshold_tokens and plan.local > job.local:  # same cutoff: the same request
            floor = sync_floor(inp, eff, view1, plan.local, plan.global_cut, tokens)
            why = over_t2_refusal(s, kept, floor, inp.capacity_tokens)
    if why is not None or message is None:
        record.clear()  # what the prepared summary's checks recorded is not this round's
        record.update(before)
        drop(why or "not committed", waited)
        return None
    file_path = yield WriteHistory(out.history_path, out.history)
    if file_path != out.history_path:  # the write failed: the summary names no file of its own
        message = summary_to_commit(inp, eff, pplan, file_path, result)
        if message is None:
            drop("not committed after its history file could not be written", waited)
            return None
    used: PreparedStats = {
        "status": "used",
        "cutoff_index": job.end,
        "waited_s": waited,
        "sync_cutoff_index": plan.global_cut,
    }
    if floor is not None:  # committed over T2: the synchronous round could not get under it
        used["sync_floor_tokens"] = floor
    stats["prepared"] = used
    return Taken(pplan, file_path, result, message, entry)
