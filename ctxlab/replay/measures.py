"""The measures of a replay: each turns a call's observation into its columns of the per-call row.

A measure is one object with a ``name`` (the ``measure`` of its columns in the column registry,
:mod:`ctxlab.replay.columns`), :meth:`Measure.measure` (the call's values of exactly those
columns, given the row so far: the measures before it in :func:`default_measures` have filled
theirs) and :meth:`Measure.finish` (when the run is over: a measure that needs the whole run
fills its columns in the rows it kept).  :func:`build_row` applies them in order and refuses a
measure that returns a column the registry does not give it.  Adding a column: one registry entry
and one measure (``docs/architecture.md``, "Adding a column").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import BaseMessage

from ctxlab.replay.columns import (
    CompressionColumns,
    LabelColumns,
    RecordedUsageColumns,
    RetentionColumns,
    ToolPairsColumns,
    ViewColumns,
    WindowColumns,
    measure_columns,
)
from ctxlab.replay.cost import DEFAULT_BREAKPOINTS
from ctxlab.replay.failures import declined_of, rejected_of
from ctxlab.replay.metrics import IdentifierIndex
from ctxlab.replay.observer import CallObservation
from ctxlab.replay.prices import PriceRow
from ctxlab.replay.run_measures import RunMeasures
from ctxlab.replay.share import TranscriptShare
from ctxlab.replay.stall import StallMeasure
from ctxlab.replay.table import CALL_COLUMNS
from ctxlab.replay.tracking import PairsTracker, ViewMeasures, ViewTracker

if TYPE_CHECKING:
    from ctxlab.core.estimation import EstimateCache
    from ctxlab.replay.prefix import UnrecordedPrefix
    from ctxlab.replay.provider import ContextWindow

__all__ = [
    "CompressionMeasure",
    "CostFidelityMeasure",
    "Measure",
    "RecordedUsageMeasure",
    "RetentionMeasure",
    "RunLabels",
    "ToolPairsMeasure",
    "ViewMeasure",
    "WindowMeasure",
    "build_row",
    "default_measures",
]


class Measure(Protocol):
    """One measure: the columns of the registry whose ``measure`` is one of :attr:`names`."""

    #: the registry measure names whose columns it returns
    names: tuple[str, ...]

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> Mapping[str, object]:
        """This call's values of the measure's columns (``None``: an empty cell, or one
        :meth:`finish` fills); ``row`` holds the columns of the measures before it."""
        ...

    def finish(self, messages: Sequence[BaseMessage]) -> None:
        """The run is over (``messages``: the transcript after the system message)."""
        ...


class _PerCall:
    """A measure that needs nothing when the run ends."""

    names: tuple[str, ...] = ()

    def finish(self, messages: Sequence[BaseMessage]) -> None:
        return None


class RunLabels(_PerCall):
    """``transcript``, ``strategy``, ``data_provenance`` (the run's, :mod:`ctxlab.replay.sources`),
    ``transcript_format`` (the loader's format name), ``call_index``, ``message_index``."""

    names: tuple[str, ...] = ("run",)

    def __init__(self, data_provenance: str = "real", transcript_format: str = "") -> None:
        self.data_provenance = data_provenance
        self.transcript_format = transcript_format

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> LabelColumns:
        return {
            "transcript": obs.transcript,
            "strategy": obs.strategy,
            "data_provenance": self.data_provenance,
            "transcript_format": self.transcript_format,
            "call_index": obs.call_index,
            "message_index": obs.message_index,
        }


class ViewMeasure(_PerCall):
    """The request's tokens, its parts and its cache-reusable prefix (:class:`ViewTracker`), and the
    uncompressed request's tokens (once per transcript call for all the runs of ``share``);
    ``last`` is the call's :class:`ViewMeasures` for later measures."""

    names: tuple[str, ...] = ("view",)

    def __init__(
        self,
        measure: EstimateCache,
        index: IdentifierIndex,
        base_tokens: int,
        share: TranscriptShare | None = None,
    ) -> None:
        self.meter = measure
        self.share = share if share is not None else TranscriptShare()
        self.tracker = ViewTracker(measure, index, share=self.share)
        self.base_tokens = base_tokens  # system message + tool schemas
        self.last: ViewMeasures | None = None

    def _raw_messages_tokens(self, obs: CallObservation) -> int:
        """Tokens of the transcript's messages up to this call (a running sum kept in the share)."""
        running = self.share.state("raw_messages_tokens", lambda: [0])

        def grow() -> int:
            # measured after the call that first sends them (see ctxlab.replay.metrics.run_measure)
            running[0] += sum(map(self.meter.message_tokens, obs.arrived))
            return running[0]

        return self.share.call_value("raw_messages_tokens", obs.call_index, grow)

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> ViewColumns:
        raw_messages_tokens = self._raw_messages_tokens(obs)
        m = self.last = self.tracker.update_call(obs.call_index, obs.view, obs.previous_view)
        return {
            "raw_tokens": self.base_tokens + raw_messages_tokens,
            "view_tokens": m.tokens,
            "view_system_tokens": m.parts["system"],  # the parts of VIEW_PARTS
            "view_user_tokens": m.parts["user"],
            "view_assistant_tokens": m.parts["assistant"],
            "view_tool_tokens": m.parts["tool"],
            "view_summary_tokens": m.parts["summary"],
            "view_messages": len(obs.view.messages),
            "cache_reusable_tokens": m.reusable,
            "cache_reusable_share": m.reusable / m.tokens if m.tokens else None,
        }


class WindowMeasure(_PerCall):
    """``over_window``: the uncompressed request (the transcript's messages so far, as
    ``raw_tokens`` counts them) against the provider's window, counted with the window's own
    counter (:meth:`ctxlab.replay.provider.ContextWindow.tally`, one tally per transcript for
    all the runs of ``share``); empty without a window."""

    names: tuple[str, ...] = ("window",)

    def __init__(
        self,
        window: ContextWindow | None,
        system: BaseMessage | None,
        tools: Sequence[Any],
        share: TranscriptShare | None = None,
    ) -> None:
        self.window, self.system, self.tools = window, system, tools
        self.share = share if share is not None else TranscriptShare()

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> WindowColumns:
        window = self.window
        if window is None:
            return {"over_window": None}
        tally = self.share.state("window_tally", lambda: window.tally(self.system, self.tools))

        def over() -> bool:
            tally.add(obs.arrived)
            return tally.over()

        return {"over_window": self.share.call_value("over_window", obs.call_index, over)}


class CompressionMeasure(_PerCall):
    """What the middleware did in the call: its round, summarizer, failures, overflow, time, T/T2."""

    names: tuple[str, ...] = ("compression",)

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> CompressionColumns:
        done, stats, summ, s = obs.completed or {}, obs.stats, obs.summarizer, obs.settings
        return {
            "level": obs.level,
            "cutoff_index": obs.cutoff_index,
            "state_cutoff_index": obs.state_event.get("cutoff_index") if obs.state_event else None,
            "offloaded": len(stats.get("offloaded") or []),
            "truncated_args": int(stats.get("truncated_args") or 0),
            "summarizer_calls": int(summ.get("calls") or 0),
            "summarizer_input_tokens": int(summ.get("input_tokens") or 0),
            "summarizer_output_tokens": int(summ.get("output_tokens") or 0),
            "summary_error": obs.summary_failure or done.get("error"),
            "summary_fallback": obs.summary_fallback,
            "summary_declined": declined_of(
                stats, obs.level, s.l2_threshold_tokens if s is not None else None
            ),
            "summary_rejected": rejected_of(stats),
            "after_failed_summary": obs.after_failed_summary,
            "forced_by_overflow": bool(done.get("forced_by_overflow")),
            "overflow_errors": obs.refusals,
            "overhead_ms": max(0.0, obs.call.seconds * 1000.0),
            "threshold": s.entry_threshold_tokens if s is not None else None,
            "trigger_reached": obs.trigger_reached,
            "l2_threshold": s.l2_threshold_tokens if s is not None else None,
        }


class RetentionMeasure(_PerCall):
    """``retention`` of the view :class:`ViewMeasure` measured (:func:`ctxlab.replay.metrics.retention`)."""

    names: tuple[str, ...] = ("retention",)

    def __init__(self, view: ViewMeasure) -> None:
        self.view = view

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> RetentionColumns:
        return {"retention": self.view.tracker.call_retention(obs.answer, obs.earlier, obs.call_index)}


class ToolPairsMeasure(_PerCall):
    """``unmatched_tool_pairs`` (:func:`ctxlab.replay.metrics.unmatched_tool_pairs`, followed
    call by call by :class:`~ctxlab.replay.tracking.PairsTracker`) and
    ``rejected_reason``: ``"unmatched_tool_pairs"`` when the view has broken pairs, which a
    provider refuses (Anthropic and OpenAI both reject a tool result without its call);
    ``raw_rejected_reason``: the same rule applied to the uncompressed request (the transcript's
    messages so far: one tracker per transcript for all the runs of ``share``), so that a call
    whose uncompressed request a provider refuses has no feasible baseline (s40 trial item 5).
    With ``view``, a call whose requests another run of the transcript had takes that run's count
    (:class:`~ctxlab.replay.tracking.SharedView`)."""

    names: tuple[str, ...] = ("tool_pairs",)

    def __init__(self, share: TranscriptShare | None = None, view: ViewMeasure | None = None) -> None:
        self.pairs = PairsTracker()  # the view's pairs followed call by call
        self.share = share if share is not None else TranscriptShare()
        self.view = view

    def _count(self, obs: CallObservation) -> int:
        tracker = self.view.tracker if self.view is not None else None
        record = tracker.record if tracker is not None else None
        if tracker is None or record is None or record.call_index != obs.call_index:
            return self.pairs.count(obs.view.messages, obs.answered)
        if tracker.reused and record.pairs is not None:
            return record.pairs
        broken = self.pairs.count(obs.view.messages, obs.answered)
        if record.pairs is None:
            record.pairs = broken
        return broken

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> ToolPairsColumns:
        broken = self._count(obs)
        raw_pairs, raw = self.share.state("raw_pairs", lambda: (PairsTracker(), []))

        def raw_broken() -> int:
            raw.extend(obs.arrived)
            return raw_pairs.count(raw, obs.answered)

        raw_count = self.share.call_value("raw_unmatched_tool_pairs", obs.call_index, raw_broken)
        return {
            "unmatched_tool_pairs": broken,
            "rejected_reason": "unmatched_tool_pairs" if broken else None,
            "raw_rejected_reason": "unmatched_tool_pairs" if raw_count else None,
        }


class RecordedUsageMeasure(_PerCall):
    """``recorded_input_tokens``: the provider's input tokens of the recorded call, from the
    recorded answer's ``usage_metadata`` (the loaders put the transcript's own counts there);
    ``unrecorded_prefix_tokens``: the run's unrecorded prefix (:mod:`ctxlab.replay.prefix`)."""

    names: tuple[str, ...] = ("recorded_usage",)

    def __init__(self, prefix_tokens: int = 0) -> None:
        self.prefix_tokens = prefix_tokens

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> RecordedUsageColumns:
        usage = obs.answer.usage_metadata
        value = usage.get("input_tokens") if usage else None
        return {
            "recorded_input_tokens": value if isinstance(value, int) else None,
            "unrecorded_prefix_tokens": self.prefix_tokens,
        }


class CostFidelityMeasure:
    """Cost under prompt caching and summary fidelity (:class:`ctxlab.replay.run_measures.RunMeasures`):
    empty per call, filled in every row when the run is over."""

    names: tuple[str, ...] = ("cost", "fidelity")

    def __init__(self, run: RunMeasures, view: ViewMeasure) -> None:
        self.run, self.view = run, view

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> Mapping[str, object]:
        measured = self.view.last
        self.run.add_call(
            row,
            obs.view,
            obs.answer,
            keys=measured.keys if measured is not None else None,
            segments=measured.segments() if measured is not None else None,
            previous_view=obs.previous_view,
            arrived=obs.arrived,
            new_summaries=obs.new_summaries,
            position=obs.position,
        )
        return {}  # the row is filled by finish()

    def finish(self, messages: Sequence[BaseMessage]) -> None:
        self.run.finish(messages)


def default_measures(
    measure: EstimateCache,
    index: IdentifierIndex,
    *,
    base_tokens: int,
    price: PriceRow | None,
    system: BaseMessage | None,
    data_provenance: str = "real",
    transcript_format: str = "",
    prefix: UnrecordedPrefix | None = None,
    window: ContextWindow | None = None,
    tools: Sequence[Any] = (),
    cache_breakpoints: str = DEFAULT_BREAKPOINTS,
    stall: Measure | None = None,
    share: TranscriptShare | None = None,
) -> list[Measure]:
    """The replay's measures, in the order they fill a row; the cost and fidelity measure only
    with a price row (``None``: those columns stay empty); ``data_provenance``: the run's
    (:func:`ctxlab.replay.sources.data_provenance`); ``prefix``: the run's unrecorded prefix
    (already in ``system`` and ``base_tokens``; ``None``: none); ``window``: the provider's
    window the uncompressed request is checked against (``over_window``; ``None``: none) with the
    request's ``system`` and ``tools``; ``cache_breakpoints``: the breakpoint policy of explicit
    caching (:data:`ctxlab.replay.cost.BREAKPOINTS`); ``stall``: the run's
    :class:`~ctxlab.replay.stall.StallMeasure` (``None``: one without a clock); ``share``: what
    the runs of the transcript share (:class:`~ctxlab.replay.share.TranscriptShare`; ``None``: a
    share of this run's own)."""
    share = share if share is not None else TranscriptShare()
    view = ViewMeasure(measure, index, base_tokens, share)
    out: list[Measure] = [
        RunLabels(data_provenance, transcript_format),
        view,
        WindowMeasure(window, system, tools, share),
        CompressionMeasure(),
        RetentionMeasure(view),
        ToolPairsMeasure(share, view),
        RecordedUsageMeasure(prefix.tokens if prefix is not None else 0),
        stall if stall is not None else StallMeasure(None, None, "", price, measure.message_tokens),
    ]
    if price is not None:
        run = RunMeasures(
            price, measure, system=system, index=index, breakpoint=cache_breakpoints, share=share
        )
        out.append(CostFidelityMeasure(run, view))
    return out


def _allowed(names: tuple[str, ...]) -> frozenset[str]:
    """The registry columns of the measures ``names`` (computed once per tuple of names)."""
    known = _ALLOWED.get(names)
    if known is None:
        known = _ALLOWED[names] = frozenset(c for name in names for c in measure_columns(name))
    return known


_ALLOWED: dict[tuple[str, ...], frozenset[str]] = {}


def build_row(obs: CallObservation, measures: Sequence[Measure]) -> dict[str, Any]:
    """The call's row (the keys of :class:`~ctxlab.replay.columns.CallRow`, in order): every
    registry column, empty until its measure fills it.

    Raises:
        ValueError: a measure returned a column that is not one of its registry columns.
    """
    row: dict[str, Any] = dict.fromkeys(CALL_COLUMNS)
    for m in measures:
        values = m.measure(obs, row)
        allowed = _allowed(m.names)
        if not values.keys() <= allowed:
            raise ValueError(
                f"measure {type(m).__name__} returned {sorted(values.keys() - allowed)}: not columns of "
                f"measure(s) {m.names} in the column registry (ctxlab.replay.columns)"
            )
        row.update(values)
    return row
