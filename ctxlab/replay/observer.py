"""The per-call observer of a replay: drives one transcript through one middleware, call by call,
and records what each model call did (:class:`CallObservation`), for the measures
(:mod:`ctxlab.replay.measures`) to turn into the call's columns.

For each model call of a transcript (each ``AIMessage`` a model produced: one marked as made up,
``SYNTHETIC_KEY``, is no call and joins no request), the transcript messages recorded since
the previous call join the state (the system message is not a state message: it goes to
``ModelRequest.system_message``), and a :class:`~ctxlab.replay.harness.ModelNodeHarness` runs the
middleware as LangGraph's model node would, the model answering with the recorded ``AIMessage``
(the placeholder model, :class:`~ctxlab.replay.models.ReplayModel`, refuses to be called).  The
messages of a recorded compaction (the agent's own summary,
:data:`ctxlab.transcripts.base.RECORDED_COMPACTION_KEY`) join the state only for a middleware
that replays them (``replays_recorded_compactions``: the ``recorded`` strategy), and never
:attr:`CallObservation.arrived`: the uncompressed request (``raw_tokens``, ``over_window``) is the
same for every strategy of a run, without the agent's compaction.  The message standing in for
the earlier conversation a file lacks (:func:`ctxlab.replay.prefix.history_message`), when the
run has one, is the first message of the state and arrives at the first call.

A ctxlab middleware reports its rounds in ``context_compression`` events.  A foreign middleware
(a baseline) emits none, so its L2 rounds are read from the state it changed, whichever hook
changed it: a new ``_summarization_event`` (DeepAgents, from ``wrap_model_call``) or a new
summary message in ``messages`` (LangChain, from ``before_model``).  Its summarizer's calls and
tokens are counted by :func:`ctxlab.replay.usage.count_summarizer_usage`.  The observer also keeps
the run's records that are not columns: the L2 summaries, the offloads and the events of
:class:`~ctxlab.replay.result.ReplayResult`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents.middleware.types import ModelRequest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab.core.compression import EVENT_KEY
from ctxlab.core.events import EVENT_TYPE
from ctxlab.core.marks import is_summary_message, latest_request_of, summary_body_of
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.failures import fallback_of
from ctxlab.replay.harness import ModelCall, ModelNodeHarness
from ctxlab.replay.identifiers import EarlierIdentifiers
from ctxlab.replay.metrics import IdentifierIndex, RequestView
from ctxlab.replay.models import ReplayModel
from ctxlab.replay.names import thread_id_for
from ctxlab.replay.reducer import AppendingMessages
from ctxlab.replay.usage import SummarizerUsage, count_summarizer_usage
from ctxlab.transcripts.base import is_model_call, recorded_compaction_of

if TYPE_CHECKING:
    from langchain.agents.middleware.types import AgentMiddleware

    from ctxlab.core.estimation import EstimateCache
    from ctxlab.replay.provider import ContextWindow, RunRefusals
    from ctxlab.replay.result import ReplayResult
    from ctxlab.transcripts.base import Transcript

__all__ = ["CallObservation", "CallObserver"]


@dataclass
class CallObservation:
    """What one model call of a replay did, as the measures read it.

    Attributes:
        transcript, strategy: the run's labels; call_index: the call's position in the run.
        position: the recorded answer's index in the transcript after the system message;
            message_index: its index in the transcript.
        answer: the recorded ``AIMessage`` the model answered with.
        call: the harness's record of the model-node run (views, events, updates, seconds).
        view: the last request the model received (the one it answered).
        previous_view: the previous call's view (``None`` for the first call).
        arrived: the transcript messages added since the previous call (its answer first; at
            the first call, the earlier-conversation message first, when there is one), without
            the agent's recorded compaction (which only ``recorded``'s state holds).
        completed: the call's last ``completed`` ``context_compression`` event (``None``: none).
        stats: that event's ``stats`` (``{}``); summarizer: the summarizer's ``calls``,
            ``input_tokens``, ``output_tokens`` (from the event, or counted for a foreign middleware).
        level: ``"none"``, ``"L1"`` or ``"L2"``; cutoff_index: the L2 cutoff this call set.
        summary_failure: why this call's L2 summary failed (``None``: none, or it succeeded).
        summary_fallback: the fallback text a foreign middleware committed instead of a summary
            (:func:`ctxlab.replay.failures.fallback_of`; ``None``: none).
        after_failed_summary: this call or an earlier one of the run had a failed or fallback
            summary.
        state_event: the ``_summarization_event`` in the state after the call (``None``: none).
        refusals: requests the provider stand-in refused in this call.
        new_summaries: the summary records this call appended to ``result.summaries``.
        earlier: the identifiers of the transcript messages before this call.
        answered: the tool calls answered before this call, ``(AIMessage id, call id)``.
        settings: the middleware's :class:`CompressionSettings` (``None``: a foreign middleware).
        trigger_reached: the strategy's own trigger fired in this call: a ctxlab round started
            (the request reached T), a foreign middleware's ``ctxlab_trigger_reached`` (its own
            counter reached its trigger; the ``recorded`` strategy: the agent cut the request);
            ``None``: a foreign middleware that does not say.
    """

    transcript: str
    strategy: str
    call_index: int
    position: int
    message_index: int
    answer: AIMessage
    call: ModelCall
    view: RequestView
    previous_view: RequestView | None
    arrived: list[BaseMessage]
    completed: dict[str, Any] | None
    stats: dict[str, Any]
    summarizer: dict[str, Any]
    level: str
    cutoff_index: Any
    summary_failure: str | None
    summary_fallback: str | None
    after_failed_summary: bool
    state_event: dict[str, Any] | None
    refusals: int
    new_summaries: list[dict[str, Any]]
    earlier: EarlierIdentifiers
    answered: set[tuple[str | None, str]]
    settings: CompressionSettings | None
    where: dict[str, Any] = field(default_factory=dict)
    trigger_reached: bool | None = None


class CallObserver:
    """Drives ``transcript`` through ``mw`` and yields one :class:`CallObservation` per model call.

    Args:
        transcript, label, strategy: the run and its labels.
        mw: a fresh middleware (its state is this run's).
        result: the run's result: the observer appends the summaries, offloads and events.
        measure: the measuring estimator (tokens of summary messages and of the summarizer's
            prompts for a foreign middleware).
        window: the provider's context window (``None``: no window, no profile).
        thread_id: the LangGraph thread id (default :func:`ctxlab.replay.names.thread_id_for`).
        index: the identifier cache (``None``: a fresh one).
        files_root: the folder the middleware's backend writes to (``None``: the middleware's
            ``_ctxlab_files_root`` when it has one).
        system: the requests' system message instead of the transcript's (the transcript's
            with the unrecorded prefix, :mod:`ctxlab.replay.prefix`); ``"transcript"``: its own.
        history: the message standing in for the earlier conversation the file lacks, the first
            message of the state (:func:`ctxlab.replay.prefix.history_message`; ``None``: none).
    """

    def __init__(
        self,
        transcript: Transcript,
        label: str,
        strategy: str,
        mw: AgentMiddleware,
        *,
        result: ReplayResult,
        measure: EstimateCache,
        window: ContextWindow | None,
        thread_id: str | None = None,
        index: IdentifierIndex | None = None,
        files_root: Path | None = None,
        system: SystemMessage | Literal["transcript"] | None = "transcript",
        history: BaseMessage | None = None,
    ) -> None:
        self.transcript, self.label, self.strategy, self.result = transcript, label, strategy, result
        self.measure, self.window = measure, window
        recorded_system, self.rest, self.offset = _split_system(transcript.messages)
        self.system = recorded_system if isinstance(system, str) else system
        self.tools = list(transcript.tools or [])
        self.history = history
        self.harness = ModelNodeHarness(
            mw,
            model=ReplayModel.create(window.max_input_tokens if window is not None else None),
            tools=self.tools,
            system_message=self.system,
            thread_id=thread_id if thread_id is not None else thread_id_for(label),
            record=False,
            reducer=AppendingMessages(),  # add_messages without its O(n) index per update
        )
        mw_settings = getattr(mw, "settings", None)
        self.settings = mw_settings if isinstance(mw_settings, CompressionSettings) else None
        self.root = files_root if files_root is not None else getattr(mw, "_ctxlab_files_root", None)
        self.index = index if index is not None else IdentifierIndex()

    def calls(self, limit_calls: int | None = None) -> Iterator[CallObservation]:
        """One observation per model call (at most ``limit_calls``; ``None``: all).  The recorded
        answer joins the earlier messages when the consumer asks for the next observation.

        Raises:
            RuntimeError: the middleware answered a call without calling the model.
            Exception: whatever the middleware raises; a note names the call.
        """
        state = self.harness.state
        earlier = EarlierIdentifiers(self.index)  # the transcript messages before the current call
        # answered calls as (id of the calling AIMessage, call id): a result answers the latest call
        # of its id (ids may be reused across turns, R9)
        answered: set[tuple[str | None, str]] = set()
        issuer: dict[str, str | None] = {}
        seen_offloads: set[str] = set()
        # the earlier conversation the file lacks: history from the first call on, in every raw request
        pending: list[BaseMessage] = [self.history] if self.history is not None else []
        arrived: list[BaseMessage] = list(pending)  # messages added to the state since the last call
        prev_view: RequestView | None = None
        failed_summary_seen = False
        recorded_seen: set[Any] = set()  # indices of the recorded compactions already sent
        call_index = 0
        # a recorded compaction's messages (the agent's own summary) reach only the strategy that
        # replays them (``recorded``): without the agent's compaction they were never sent
        feeds_recorded = bool(getattr(self.harness.middleware, "replays_recorded_compactions", False))
        refusing = self.window.run_refusals() if self.window is not None else None
        for pos, original in enumerate(self.rest):
            agents_compaction = recorded_compaction_of(original) is not None
            if not feeds_recorded and agents_compaction:
                continue
            if isinstance(original, AIMessage) and not is_model_call(original):
                continue  # made up by the agent (Claude Code's <synthetic>): no call, in no request
            if original.id is None:  # add_messages would give it a random id: make it stable
                original = original.model_copy(update={"id": f"{self.transcript.run_id}-{pos + self.offset}"})
            if not isinstance(original, AIMessage):
                pending.append(original)
                if agents_compaction:
                    continue  # in recorded's state only: not part of the uncompressed request
                arrived.append(original)
                earlier.add(original)
                if isinstance(original, ToolMessage):
                    answered.add((issuer.get(original.tool_call_id), original.tool_call_id))
                continue
            if limit_calls is not None and call_index >= limit_calls:
                break
            if pending:
                self.harness.add(*pending)
                pending = []
            # what a foreign middleware's L2 round changes: the summary messages in the state
            # (LangChain) or the _summarization_event (DeepAgents)
            state_before = list(state["messages"]) if self.settings is None else []
            event_before = state.get(EVENT_KEY)
            answer, refusals = _provider_answer(original, refusing)
            mw = self.harness.middleware
            if self.settings is None and hasattr(mw, "ctxlab_trigger_reached"):
                mw.ctxlab_trigger_reached = None  # the middleware says again in this call
            try:
                with count_summarizer_usage(self.measure) as usage:
                    call = self.harness.call(answer)
            except Exception as exc:
                exc.add_note(f"ctxlab replay: at call {call_index} (transcript message {pos + self.offset})")
                raise
            issuer.update(
                {cid: original.id for tc in original.tool_calls if (cid := tc.get("id")) is not None}
            )
            if not call.views:
                raise RuntimeError(f"strategy {self.strategy!r} did not call the model at call {call_index}")
            event_after = state.get(EVENT_KEY)
            new_event = (
                event_after if isinstance(event_after, dict) and event_after is not event_before else None
            )
            where = {"transcript": self.label, "strategy": self.strategy, "call_index": call_index}
            n_summaries = len(self.result.summaries)
            completed = _completed(call.events)
            stats = (completed or {}).get("stats") or {}
            level = (completed or {}).get("level") or "none"
            cutoff_index = (completed or {}).get("cutoff_index")
            summ = stats.get("summarizer") or {}
            failure: str | None = None
            fallback: str | None = None
            if completed is None and self.settings is None:
                # a foreign middleware emits no event: its summarizer calls come from the callback
                # counter, its L2 round from the state it changed
                summ = _usage_stats(usage)
                found, cutoff_index = _foreign_summaries(
                    new_event, _new_summaries(state_before, state["messages"], original)
                )
                if feeds_recorded and not found:  # the agent's own compaction entering the view
                    found = _recorded_round(call.views[-1].messages, recorded_seen)
                level = "L2" if found else level
                if not found and getattr(self.harness.middleware, "ctxlab_truncated", False):
                    level = "L1"  # the agent's own truncation: a trimmed view, no new summary
                failure, fallback = self._foreign_records(found, where)
            elif new_event is not None and level == "L2":  # ARS: the summary is in the new event
                failure = self._ars_record(new_event, where)
            failed_summary_seen = failed_summary_seen or failure is not None or fallback is not None
            self._record_offloads(stats, where, seen_offloads)
            self.result.events.extend({**e, **where} for e in call.events if isinstance(e, dict))
            view = call.views[-1]
            yield CallObservation(
                transcript=self.label,
                strategy=self.strategy,
                call_index=call_index,
                position=pos,
                message_index=pos + self.offset,
                answer=original,
                call=call,
                view=view,
                previous_view=prev_view,
                arrived=arrived,
                completed=completed,
                stats=stats,
                summarizer=summ,
                level=level,
                cutoff_index=cutoff_index,
                summary_failure=failure,
                summary_fallback=fallback,
                after_failed_summary=failed_summary_seen,
                state_event=state.get(EVENT_KEY) if isinstance(state.get(EVENT_KEY), dict) else None,
                refusals=refusals[0],
                new_summaries=self.result.summaries[n_summaries:],
                earlier=earlier,
                answered=answered,
                settings=self.settings,
                where=where,
                trigger_reached=self._trigger_reached(call),
            )
            prev_view = view
            arrived = [original]
            earlier.add(original)  # the recorded answer joins what later calls saw earlier
            call_index += 1

    def _trigger_reached(self, call: ModelCall) -> bool | None:
        """:attr:`CallObservation.trigger_reached` of ``call``."""
        if self.settings is not None:
            return any(
                isinstance(e, dict) and e.get("type") == EVENT_TYPE and e.get("phase") == "started"
                for e in call.events
            )
        said = getattr(self.harness.middleware, "ctxlab_trigger_reached", None)
        return said if isinstance(said, bool) else None

    def _foreign_records(
        self, found: list[tuple[BaseMessage, dict[str, Any]]], where: dict[str, Any]
    ) -> tuple[str | None, str | None]:
        """Append a foreign middleware's summaries; the first failure (an empty summary) and the
        first fallback text (:func:`ctxlab.replay.failures.fallback_of`), each ``None`` when none."""
        first: str | None = None
        first_fallback: str | None = None
        for m, ev in found:
            failure = None if m.text.strip() else "the summary has no text"
            fallback = fallback_of(m.text)
            first = first or failure
            first_fallback = first_fallback or fallback
            self.result.summaries.append(
                {
                    **where,
                    "cutoff_index": ev.get("cutoff_index"),
                    "text": m.text,
                    "tokens": self.measure.message_tokens(m),
                    "file_path": ev.get("file_path"),
                    "error": failure,
                    "fallback": fallback,
                }
            )
        return first, first_fallback

    def _ars_record(self, event: dict[str, Any], where: dict[str, Any]) -> str | None:
        """Append the summary of a ctxlab L2 round (in its ``_summarization_event``); its failure."""
        sm = event.get("summary_message")
        failure = _summary_failure(event.get("summary_error"), sm)
        self.result.summaries.append(
            {
                **where,
                "cutoff_index": event.get("cutoff_index"),
                "text": sm.text if isinstance(sm, BaseMessage) else str(sm),
                "tokens": self.measure.message_tokens(sm) if isinstance(sm, BaseMessage) else None,
                "file_path": event.get("file_path"),
                "error": failure,
                # the summarizer's own text and the request the round carries verbatim (probes)
                "body": summary_body_of(sm),
                "latest_request": latest_request_of(sm),
            }
        )
        return failure

    def _record_offloads(self, stats: dict[str, Any], where: dict[str, Any], seen: set[str]) -> None:
        offloaded = stats.get("offloaded")
        for p in [p for p in offloaded or [] if p] if isinstance(offloaded, list) else []:
            self.result.offloads.append(
                {**where, "path": p, "bytes": _offload_bytes(self.root, p), "first": p not in seen}
            )
            seen.add(p)


def _recorded_round(view: Sequence[BaseMessage], seen: set[Any]) -> list[tuple[BaseMessage, dict[str, Any]]]:
    """The agent's own L2 round, when a recorded compaction not sent before starts the view (the
    ``recorded`` strategy): ``[(its first message, {})]``, else ``[]``; ``seen`` is updated."""
    mark = recorded_compaction_of(view[0]) if view else None
    if mark is None or mark.get("index") in seen:
        return []
    seen.add(mark.get("index"))
    return [(view[0], {})]


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


def _usage_stats(usage: SummarizerUsage) -> dict[str, int]:
    return {"calls": usage.calls, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def _provider_answer(original: AIMessage, window: RunRefusals | None) -> tuple[Any, list[int]]:
    """The model handler's answer for one call: the recorded message, after the provider
    stand-in's check of the request (``ContextOverflowError`` above the window; the run's
    :class:`~ctxlab.replay.provider.RunRefusals`); and a counter of the requests refused in this
    call (``[n]``)."""
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
