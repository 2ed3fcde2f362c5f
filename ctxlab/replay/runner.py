"""One transcript through one middleware: the per-call loop of a replay and the row of each call.

For each model call of a transcript (each ``AIMessage``), the transcript messages recorded since
the previous call join the state (the system message is not a state message: it goes to
``ModelRequest.system_message``), and a :class:`~ctxlab.replay.harness.ModelNodeHarness` runs the
middleware as LangGraph's model node would, the model answering with the recorded
``AIMessage`` (the placeholder model, :class:`~ctxlab.replay.models.ReplayModel`, refuses to be
called).  The state carries forward to the next call.

A ctxlab middleware reports its rounds in ``context_compression`` events.  A foreign middleware
(a baseline) emits none, so its L2 rounds are read from the state it changed, whichever hook
changed it: a new ``_summarization_event`` (DeepAgents, from ``wrap_model_call``) or a new
summary message in ``messages`` (LangChain, from ``before_model``).  Its summarizer's calls and
tokens are counted by :func:`ctxlab.replay.usage.count_summarizer_usage`.

Each call yields one row (see :data:`ctxlab.replay.metrics.METRIC_DEFINITIONS`); all token
columns are measured with one measuring estimator for every strategy.

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

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import ModelRequest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab.core.compression import EVENT_KEY
from ctxlab.core.events import EVENT_TYPE
from ctxlab.core.marks import is_summary_message, summary_body_of
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.harness import ModelNodeHarness, update_items
from ctxlab.replay.identifiers import EarlierIdentifiers
from ctxlab.replay.metrics import VIEW_PARTS, IdentifierIndex, RequestView, unmatched_tool_pairs
from ctxlab.replay.models import ReplayModel
from ctxlab.replay.names import thread_id_for
from ctxlab.replay.prices import PriceRow
from ctxlab.replay.result import ReplayResult
from ctxlab.replay.run_measures import RunMeasures
from ctxlab.replay.tracking import ViewTracker
from ctxlab.replay.usage import SummarizerUsage, count_summarizer_usage
from ctxlab.replay.views import ViewLog

if TYPE_CHECKING:
    from langchain.agents.middleware.types import AgentMiddleware

    from ctxlab.core.estimation import EstimateCache
    from ctxlab.replay.provider import ContextWindow
    from ctxlab.transcripts.base import Transcript

__all__ = ["replay_one"]


def _split_system(messages: Sequence[BaseMessage]) -> tuple[SystemMessage | None, list[BaseMessage], int]:
    """(system message, the rest, offset of the rest in ``messages``)."""
    if messages and isinstance(messages[0], SystemMessage):
        return messages[0], list(messages[1:]), 1
    return None, list(messages), 0


def _new_summaries(
    before: Sequence[BaseMessage], after: Sequence[BaseMessage], original: BaseMessage
) -> list[BaseMessage]:
    """The summary messages in ``after`` that were not in ``before`` (by id) and are not the
    recorded answer.  Only objects that were not in ``before`` are looked at: a summary message
    that was there has an id among the summaries before."""
    objects = set(map(id, before))
    fresh = [m for m in after if id(m) not in objects and m is not original and is_summary_message(m)]
    if not fresh:
        return []
    ids_before = {m.id for m in before if is_summary_message(m)}
    return [m for m in fresh if m.id not in ids_before]


def _offload_bytes(root: Path | None, path: str | None) -> int | None:
    if root is None or not path:
        return None
    try:
        return (Path(root) / path.lstrip("/")).stat().st_size
    except OSError:
        return None


def _completed(events: Sequence[Any]) -> dict[str, Any] | None:
    """The last ``completed`` ``context_compression`` event of a call, if any."""
    return next(
        (
            e
            for e in reversed(events)
            if isinstance(e, dict) and e.get("type") == EVENT_TYPE and e.get("phase") == "completed"
        ),
        None,
    )


def _foreign_summaries(
    new_event: dict[str, Any] | None, new_summaries: list[BaseMessage]
) -> tuple[list[tuple[BaseMessage, dict[str, Any]]], Any]:
    """The L2 rounds of a foreign middleware read from the state it changed: ``[(summary
    message, event or {})]`` and the cutoff index (DeepAgents' event) or ``None``."""
    summary_message = new_event.get("summary_message") if new_event else None
    if new_event is not None and isinstance(summary_message, BaseMessage):  # DeepAgents
        return [(summary_message, new_event)], new_event.get("cutoff_index")
    return [(m, {}) for m in new_summaries], None  # LangChain: the history rewritten with a summary


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

    Raises:
        RuntimeError: the middleware answered a call without calling the model.
        Exception: whatever the middleware raises (a ``ContextOverflowError`` it could not
            recover from, say); a note names the call.
    """
    result = ReplayResult(settings=settings, strategies=[strategy_name], price=price)
    system, rest, offset = _split_system(transcript.messages)
    tools = list(transcript.tools or [])
    harness = ModelNodeHarness(
        mw,
        model=ReplayModel.create(window.max_input_tokens if window is not None else None),
        tools=tools,
        system_message=system,
        thread_id=thread_id if thread_id is not None else thread_id_for(label),
        record=False,
    )
    mw_settings = getattr(mw, "settings", None)
    is_ars = isinstance(mw_settings, CompressionSettings)
    T = mw_settings.entry_threshold_tokens if isinstance(mw_settings, CompressionSettings) else None
    T2 = mw_settings.l2_threshold_tokens if isinstance(mw_settings, CompressionSettings) else None

    state = harness.state
    root = files_root if files_root is not None else getattr(mw, "_ctxlab_files_root", None)
    ids = index if index is not None else IdentifierIndex()
    tracker = ViewTracker(measure, ids)
    earlier = EarlierIdentifiers(ids)  # the transcript messages before the current call
    # answered calls as (id of the calling AIMessage, call id): a result answers the latest call
    # of its id (ids may be reused across turns, R9)
    answered: set[tuple[str | None, str]] = set()
    issuer: dict[str, str | None] = {}
    raw_messages_tokens = 0
    # transcript messages not yet in raw_messages_tokens: measured after the call that first
    # sends them, when the middleware has estimated them (see ctxlab.replay.metrics.run_measure)
    unmeasured: list[BaseMessage] = []
    base_tokens = measure.tools_tokens(tools) + (measure.message_tokens(system) if system is not None else 0)
    prev_view: RequestView | None = None
    seen_offloads: set[str] = set()
    pending: list[BaseMessage] = []
    call_index = 0
    # cost and summary fidelity (ctxlab.replay.run_measures): filled in when the run is over
    run_measures = RunMeasures(price, measure, system=system, index=ids) if price is not None else None
    arrived: list[BaseMessage] = []  # transcript messages added to the state since the last call
    failed_summary_seen = False

    for pos, original in enumerate(rest):
        if original.id is None:  # add_messages would give it a random id: make it stable
            original = original.model_copy(update={"id": f"{transcript.run_id}-{pos + offset}"})
        if not isinstance(original, AIMessage):
            pending.append(original)
            arrived.append(original)
            unmeasured.append(original)
            earlier.add(original)
            if view_log is not None:
                view_log.arrive(original)
            if isinstance(original, ToolMessage):
                answered.add((issuer.get(original.tool_call_id), original.tool_call_id))
            continue
        if limit_calls is not None and call_index >= limit_calls:
            break
        if pending:
            harness.add(*pending)
            pending = []
        # what a foreign middleware's L2 round changes: the summary messages in the state
        # (LangChain) or the _summarization_event (DeepAgents)
        state_before = list(state["messages"]) if not is_ars else []
        event_before = state.get(EVENT_KEY)
        answer, refusals = _provider_answer(original, window)
        try:
            with count_summarizer_usage(measure) as usage:
                call = harness.call(answer)
        except Exception as exc:
            exc.add_note(f"ctxlab replay: at call {call_index} (transcript message {pos + offset})")
            raise
        issuer.update({cid: original.id for tc in original.tool_calls if (cid := tc.get("id")) is not None})
        if not call.views:
            raise RuntimeError(f"strategy {strategy_name!r} did not call the model at call {call_index}")
        event_after = state.get(EVENT_KEY)
        new_event = event_after if isinstance(event_after, dict) and event_after is not event_before else None

        # --- measure ---------------------------------------------------------------------------
        view = call.views[-1]
        if view_log is not None:
            view_log.call(call_index, view.system, view.messages, call.events)
        raw_messages_tokens += sum(map(measure.message_tokens, unmeasured))
        unmeasured = []
        measured = tracker.update(view)
        parts, view_tokens, reusable = measured.parts, measured.tokens, measured.reusable
        view_before, prev_view = prev_view, view

        completed = _completed(call.events)
        stats = (completed or {}).get("stats") or {}
        summ = stats.get("summarizer") or {}
        level = (completed or {}).get("level") or "none"
        cutoff_index = (completed or {}).get("cutoff_index")
        n_summaries = len(result.summaries)
        where = {"transcript": label, "strategy": strategy_name, "call_index": call_index}
        summary_failure: str | None = None
        if completed is None and not is_ars:
            # a foreign middleware emits no event: its summarizer calls come from the callback
            # counter, its L2 round from the state it changed
            summ = _usage_stats(usage)
            new_summaries = _new_summaries(state_before, state["messages"], original)
            found, cutoff_index = _foreign_summaries(new_event, new_summaries)
            if found:
                level = "L2"
            for m, ev in found:
                failure = None if m.text.strip() else "the summary has no text"
                summary_failure = summary_failure or failure
                result.summaries.append(
                    {
                        **where,
                        "cutoff_index": ev.get("cutoff_index"),
                        "text": m.text,
                        "tokens": measure.message_tokens(m),
                        "file_path": ev.get("file_path"),
                        "error": failure,
                    }
                )
        elif new_event is not None and level == "L2":  # ARS: the summary is in the new event
            sm = new_event.get("summary_message")
            summary_failure = _summary_failure(new_event.get("summary_error"), sm)
            result.summaries.append(
                {
                    **where,
                    "cutoff_index": new_event.get("cutoff_index"),
                    "text": sm.text if isinstance(sm, BaseMessage) else str(sm),
                    "tokens": measure.message_tokens(sm) if isinstance(sm, BaseMessage) else None,
                    "file_path": new_event.get("file_path"),
                    "error": summary_failure,
                }
            )
        failed_summary_seen = failed_summary_seen or summary_failure is not None
        event_state = state.get(EVENT_KEY) if isinstance(state.get(EVENT_KEY), dict) else None
        offloaded = stats.get("offloaded")
        for p in [p for p in offloaded or [] if p] if isinstance(offloaded, list) else []:
            result.offloads.append(
                {**where, "path": p, "bytes": _offload_bytes(root, p), "first": p not in seen_offloads}
            )
            seen_offloads.add(p)
        result.events.extend({**e, **where} for e in call.events if isinstance(e, dict))

        row: dict[str, Any] = {
            **where,
            "message_index": pos + offset,
            "raw_tokens": base_tokens + raw_messages_tokens,
            "view_tokens": view_tokens,
            **{f"view_{p}_tokens": parts[p] for p in VIEW_PARTS},
            "view_messages": len(view.messages),
            "level": level,
            "cutoff_index": cutoff_index,
            "state_cutoff_index": event_state.get("cutoff_index") if event_state else None,
            "offloaded": len(stats.get("offloaded") or []),
            "truncated_args": int(stats.get("truncated_args") or 0),
            "summarizer_calls": int(summ.get("calls") or 0),
            "summarizer_input_tokens": int(summ.get("input_tokens") or 0),
            "summarizer_output_tokens": int(summ.get("output_tokens") or 0),
            "summary_error": summary_failure or (completed or {}).get("error"),
            "after_failed_summary": failed_summary_seen,
            "forced_by_overflow": bool((completed or {}).get("forced_by_overflow")),
            "overflow_errors": refusals[0],
            "overhead_ms": max(0.0, call.seconds * 1000.0),
            "cache_reusable_tokens": reusable,
            "cache_reusable_share": reusable / view_tokens if view_tokens else None,
            "retention": tracker.retention(original, earlier),
            "threshold": T,
            "l2_threshold": T2,
            "unmatched_tool_pairs": unmatched_tool_pairs(view.messages, answered),
        }
        result.rows.append(row)
        if run_measures is not None:
            run_measures.add_call(
                row,
                view,
                original,
                keys=measured.keys,
                segments=measured.segments(),
                previous_view=view_before,
                arrived=arrived,
                new_summaries=result.summaries[n_summaries:],
                position=pos,
            )
        arrived = [original]
        if keep_views:
            result.views[(label, strategy_name, call_index)] = view
            result.requests[(label, strategy_name, call_index)] = list(call.views)
            result.updates[(label, strategy_name, call_index)] = [
                *update_items(call.before_update),
                *update_items(call.command),
            ]
        if on_call is not None:
            on_call()

        # the recorded answer joins what later calls saw earlier
        unmeasured.append(original)
        earlier.add(original)
        if view_log is not None:
            view_log.arrive(original)
        call_index += 1
    if run_measures is not None:
        run_measures.finish(rest)
    return result


def _usage_stats(usage: SummarizerUsage) -> dict[str, int]:
    return {"calls": usage.calls, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def _provider_answer(original: AIMessage, window: ContextWindow | None) -> tuple[Any, list[int]]:
    """The model handler's answer for one call: the recorded message, after the provider
    stand-in's check of the request (``ContextOverflowError`` above the window); and a counter
    of the requests refused in this call (``[n]``)."""
    refusals = [0]
    if window is None:
        return original, refusals

    def answer(request: ModelRequest) -> AIMessage:
        try:
            window.refuse(request.system_message, request.tools, request.messages)
        except ContextOverflowError:
            refusals[0] += 1
            raise
        return original

    return answer, refusals


def _summary_failure(error: Any, summary: Any) -> str | None:
    """Why an L2 summary failed, or ``None``: the summarizer's error (R10), or a summary whose
    body (the summarizer's text, :func:`ctxlab.core.marks.summary_body_of`) is empty."""
    if error:
        return str(error)
    body = summary_body_of(summary) if isinstance(summary, BaseMessage) else None
    if body is None and isinstance(summary, BaseMessage):
        body = summary.text
    return None if (body or "").strip() else "the summary has no text"
