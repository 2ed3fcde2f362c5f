"""One transcript through one middleware: the per-call loop of a replay.

:class:`~ctxlab.replay.observer.CallObserver` drives the middleware call by call (each recorded
``AIMessage`` is one model-node run, the model answering with it) and yields what each call did;
the measures (:mod:`ctxlab.replay.measures`) turn each observation into the call's row
(:func:`~ctxlab.replay.measures.build_row`; the columns are those of :mod:`ctxlab.replay.columns`).
All token columns are measured with one measuring estimator for every strategy.

Faithful to a live run (``tests/test_differential.py`` checks it call by call against
``create_agent``):

* the hooks run inside a LangGraph config whose ``configurable.thread_id`` is the replay's thread
  id (default: the transcript label made safe, :func:`ctxlab.replay.names.thread_id_for`), so history file names,
  events and summary texts are those of a live run on that thread;
* with a :class:`~ctxlab.replay.provider.ContextWindow`, every request the model handler receives
  is counted with the provider's counter and refused with ``ContextOverflowError`` above the
  window, as a provider would refuse it; the middleware then forces compression (spec R12) and
  the row counts the refusals (``overflow_errors``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ctxlab.core.preparations import Preparations
from ctxlab.replay.cost import DEFAULT_BREAKPOINTS
from ctxlab.replay.harness import update_items
from ctxlab.replay.latency import SimTime
from ctxlab.replay.measures import build_row, default_measures
from ctxlab.replay.metrics import IdentifierIndex
from ctxlab.replay.observer import CallObserver
from ctxlab.replay.result import ReplayResult, recording_warnings
from ctxlab.replay.share import TranscriptShare
from ctxlab.replay.sources import data_provenance
from ctxlab.replay.stall import StallMeasure

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    from langchain.agents.middleware.types import AgentMiddleware
    from langchain_core.messages import SystemMessage

    from ctxlab.core.estimation import EstimateCache
    from ctxlab.core.settings import CompressionSettings
    from ctxlab.replay.prefix import UnrecordedPrefix
    from ctxlab.replay.prices import PriceRow
    from ctxlab.replay.provider import ContextWindow
    from ctxlab.replay.views import ViewLog
    from ctxlab.transcripts.base import Transcript

__all__ = ["replay_one"]


def replay_one(
    transcript: Transcript,
    label: str,
    strategy_name: str,
    mw: AgentMiddleware,
    *,
    settings: CompressionSettings,
    measure: EstimateCache,
    window: ContextWindow | None,
    limit_calls: int | None,
    keep_views: bool,
    thread_id: str | None = None,
    on_call: Callable[[], None] | None = None,
    price: PriceRow | None = None,
    index: IdentifierIndex | None = None,
    files_root: Path | None = None,
    view_log: ViewLog | None = None,
    system: SystemMessage | Literal["transcript"] | None = "transcript",
    prefix: UnrecordedPrefix | None = None,
    cache_breakpoints: str = DEFAULT_BREAKPOINTS,
    sim: SimTime | None = None,
    share: TranscriptShare | None = None,
) -> ReplayResult:
    """Replay ``transcript`` through ``mw``: one row per recorded model call.

    Args:
        transcript: the run to replay.
        label: its label in the rows; ``strategy_name``: the strategy's label in the rows.
        mw: a fresh middleware (its state is this run's).
        settings: recorded in the result; ``measure``: the measuring estimator (tokens).
        window: the provider's context window (the placeholder model's
            ``profile["max_input_tokens"]``, and the overflow check of every request); ``None``:
            no window, no profile.
        limit_calls: replay at most this many model calls (``None``: all).
        keep_views: keep every request view in ``result.views`` and every call's state update in
            ``result.updates``.
        thread_id: the LangGraph thread id the hooks run under (default :func:`ctxlab.replay.names.thread_id_for`).
        on_call: called after each call (a progress bar).
        price: the price row of the cost columns (:mod:`ctxlab.replay.cost`); ``None``: no cost
            or fidelity measures.
        index: the identifier cache (a batch shares one; identifiers depend on a message's
            content only); ``None``: a fresh one.
        files_root: the folder the middleware's backend writes to (the ``bytes`` of offload
            records); ``None``: the middleware's ``_ctxlab_files_root`` when it has one.
        view_log: where every call's raw and sent view are written (:mod:`ctxlab.replay.views`);
            ``None``: nowhere.  Not closed here.
        system: the system message of every request: the transcript's with the unrecorded
            prefix block (:func:`ctxlab.replay.prefix.with_prefix`); ``"transcript"`` (default):
            the transcript's own.
        prefix: the run's unrecorded prefix (its tokens fill ``unrecorded_prefix_tokens``; its
            :attr:`~ctxlab.replay.prefix.UnrecordedPrefix.history` message, the earlier
            conversation the file lacks, is the first message of the state; ``None``: 0, none).
        cache_breakpoints: the breakpoint policy of explicit caching in the cost columns
            (:data:`ctxlab.replay.cost.BREAKPOINTS`).
        sim: the run's simulated time (:mod:`ctxlab.replay.latency`: the stall columns and the
            clock of the middleware's prepared summaries); ``None``: no latency model (prepared
            summaries are ready at the next call, the stall columns stay empty).  A ctxlab
            middleware's preparations always run on it, never on real threads.
        share: what the runs of this transcript share (:mod:`ctxlab.replay.share`: the per-call
            work that depends on the transcript only, done once for all strategies); ``None``:
            a share of this run's own.  Only runs that feed the observer the same messages (the
            same transcript, limit and system message, and the same
            ``replays_recorded_compactions``) may share one.

    Raises:
        RuntimeError: the middleware answered a call without calling the model.
        Exception: whatever the middleware raises (a ``ContextOverflowError`` it could not
            recover from, say); a note names the call.
    """
    result = ReplayResult(settings=settings, strategies=[strategy_name], price=price)
    share = share if share is not None else TranscriptShare()
    ids = index if index is not None else IdentifierIndex()
    observer = CallObserver(
        transcript,
        label,
        strategy_name,
        mw,
        result=result,
        measure=measure,
        window=window,
        thread_id=thread_id,
        index=ids,
        files_root=files_root,
        system=system,
        history=prefix.history if prefix is not None else None,
    )
    system = observer.system
    sim = sim if sim is not None else SimTime(None, seed=label)
    preparations = getattr(mw, "preparations", None)
    if isinstance(preparations, Preparations):
        preparations.runner = sim.runner  # simulated time, deterministic: no thread, no sleep
    stall = StallMeasure(
        sim,
        preparations if isinstance(preparations, Preparations) else None,
        observer.harness.thread_id or "",
        price,
        measure.message_tokens,
        share,
    )
    base_tokens = measure.tools_tokens(observer.tools) + (
        measure.message_tokens(system) if system is not None else 0
    )
    measures = default_measures(
        measure,
        ids,
        base_tokens=base_tokens,
        price=price,
        system=system,
        # the transcript's, found once for all its runs (a file check)
        data_provenance=share.run_value(("data_provenance",), lambda: data_provenance(transcript)),
        transcript_format=transcript.format,
        prefix=prefix,
        window=window,
        tools=observer.tools,
        cache_breakpoints=cache_breakpoints,
        stall=stall,
        share=share,
    )
    if view_log is not None:
        view_log.tools(observer.tools, measure.tools_tokens)
    with recording_warnings(result, label, strategy_name):
        for obs in observer.calls(limit_calls):
            result.rows.append(build_row(obs, measures))
            if view_log is not None:
                for message in obs.arrived:
                    view_log.arrive(message)
                view_log.call(obs.call_index, obs.view.system, obs.view.messages, obs.call.events)
            if keep_views:
                key = (label, strategy_name, obs.call_index)
                result.views[key] = obs.view
                result.requests[key] = list(obs.call.views)
                result.updates[key] = [*update_items(obs.call.before_update), *update_items(obs.call.command)]
            if on_call is not None:
                on_call()
        for m in measures:
            m.finish(observer.rest)
    return result
