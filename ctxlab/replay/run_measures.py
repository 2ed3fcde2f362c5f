"""Cost and summary fidelity of one replay run: collected call by call, filled in when the run ends.

The replay engine makes one :class:`RunMeasures` per transcript × strategy, calls
:meth:`RunMeasures.add_call` after each model call (with the row it appended, the request view and
the recorded answer) and :meth:`RunMeasures.finish` once the run is over: costs need the whole
run (the cache each call reads was left by the earlier ones) and fidelity needs the turns that
came after each L2 round.

Columns it fills in each row (see :data:`RUN_MEASURE_COLUMNS`; definitions in
:data:`ctxlab.replay.cost.COST_DEFINITIONS` and :data:`ctxlab.replay.fidelity.FIDELITY_DEFINITIONS`):
``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``cost_usd`` and its breakdown
(``cost_read_usd``, ``cost_write_usd``, ``cost_uncached_usd``, ``cost_output_usd``),
``summarizer_cost_usd``, ``raw_cost_usd`` (``raw_cost_read_usd``, ``raw_cost_write_usd``) and, on
the calls with an L2 round, the identifier counts, the probe counts and ``summary_tokens``; each L2
summary record gets the round's :meth:`~ctxlab.replay.fidelity.RoundFidelity.as_dict` and its
probes (:mod:`ctxlab.replay.probes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from ctxlab.core.builtin.floors import identifier_dump, recent_messages
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.marks import is_summary_message
from ctxlab.replay.actions import ActionIndex
from ctxlab.replay.columns import measure_columns
from ctxlab.replay.cost import DEFAULT_BREAKPOINTS, CallTokens, Segments, price_run, view_segments
from ctxlab.replay.fidelity import summary_fidelity
from ctxlab.replay.metrics import IdentifierIndex, RequestView, canonical_key
from ctxlab.replay.prices import DEFAULT_PRICE_MODEL, PriceRow, PriceTable, load_prices
from ctxlab.replay.probes import check_probes, probe_counts, round_probes
from ctxlab.replay.share import TranscriptShare

if TYPE_CHECKING:
    from ctxlab.core.estimation import EstimateCache

__all__ = [
    "COST_COLUMNS",
    "FIDELITY_COLUMNS",
    "RUN_MEASURE_COLUMNS",
    "RunMeasures",
    "resolve_price",
    "summarized_span",
]

#: per-call cost columns (tokens, and US dollars), from the column registry
COST_COLUMNS = measure_columns("cost")
#: per-call fidelity columns (counts of distinct identifiers and of probes, summary tokens; empty on
#: calls without an L2 round)
FIDELITY_COLUMNS = measure_columns("fidelity")
#: the dollar columns a run starts at 0 (the cost breakdown included)
_ZEROED = (
    "cost_usd",
    "summarizer_cost_usd",
    "cost_read_usd",
    "cost_write_usd",
    "cost_uncached_usd",
    "cost_output_usd",
)
#: the identifier counts of :class:`~ctxlab.replay.fidelity.RoundFidelity` among them
_IDENTIFIER_COLUMNS = ("span_identifiers", "span_carried", "needed_identifiers", "needed_carried")
RUN_MEASURE_COLUMNS = COST_COLUMNS + FIDELITY_COLUMNS


def resolve_price(
    price_model: str | PriceRow | None = None, prices: str | Path | PriceTable | None = None
) -> PriceRow:
    """The price row to cost a replay with.

    Args:
        price_model: ``"provider:model"`` (a row of ``prices``), a :class:`PriceRow` (used as is),
            or ``None`` for :data:`~ctxlab.replay.prices.DEFAULT_PRICE_MODEL`.
        prices: a price file or a loaded table; ``None``: the shipped table.

    Raises:
        KeyError: no such row.  PriceTableError: an invalid price file.
    """
    if isinstance(price_model, PriceRow):
        return price_model
    table = prices if isinstance(prices, PriceTable) else load_prices(prices)
    return table.get(price_model or DEFAULT_PRICE_MODEL)


def _ident(message: BaseMessage) -> Any:
    return ("id", message.id) if message.id else ("key", canonical_key(message))


def summarized_span(
    before: Sequence[BaseMessage], arrived: Sequence[BaseMessage], after: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """The messages an L2 round replaced: those of the previous request's view (``before``) and
    those that arrived since (``arrived``) that the view after the round (``after``) no longer
    holds.  Messages are matched by id (by canonical content when they have none), so a message
    an L1 step trimmed in place is kept, not summarized."""
    kept = {_ident(m) for m in after}
    out: list[BaseMessage] = []
    seen: set[Any] = set()
    for m in [*before, *arrived]:
        key = _ident(m)
        if key not in kept and key not in seen:
            seen.add(key)
            out.append(m)
    return out


class _Same:
    """A key part equal to another only for the very same object (kept alive with the key)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value


@dataclass
class _Round:
    records: list[dict[str, Any]]
    row: dict[str, Any]
    span: list[BaseMessage]
    kept: list[BaseMessage]
    position: int


class RunMeasures:
    """Collects one run's calls and L2 rounds; :meth:`finish` fills the cost and fidelity columns.

    Args:
        price: the price row.
        measure: the run's measuring estimator (tokens of the request parts and of the answers).
        system: the system message of the run (available to every call, for fidelity).
        index: the run's identifier cache (a fresh one when ``None``).
        breakpoint: the breakpoint policy of explicit caching (:data:`ctxlab.replay.cost.BREAKPOINTS`,
            default ``"agent"``: what an agent can place; ``"oracle"``: for comparison only).
        share: what the runs of the transcript share (:class:`~ctxlab.replay.share.TranscriptShare`):
            the uncompressed run's costs, priced once per transcript; ``None``: a share of its own.
    """

    def __init__(
        self,
        price: PriceRow,
        measure: EstimateCache,
        *,
        system: BaseMessage | None = None,
        index: IdentifierIndex | None = None,
        breakpoint: str = DEFAULT_BREAKPOINTS,
        share: TranscriptShare | None = None,
    ) -> None:
        self.price = price
        self.share = share if share is not None else TranscriptShare()
        self.measure = measure
        self.system = system
        self.index = index or IdentifierIndex()
        self.actions = ActionIndex()
        self.breakpoint = breakpoint
        self._rows: list[dict[str, Any]] = []
        self._calls: list[CallTokens | None] = []  # None: a main call until finish()
        self._owners: list[tuple[dict[str, Any], str]] = []  # (row, "main" | "summarizer") per call
        self._answers: list[tuple[int, dict[str, Any], BaseMessage, Segments]] = []
        self._rounds: list[_Round] = []
        self._originals: dict[Any, BaseMessage] = {}
        self._last_position = -1

    def add_call(
        self,
        row: dict[str, Any],
        view: RequestView,
        answer: BaseMessage,
        *,
        keys: Sequence[Any] | None = None,
        segments: Segments | None = None,
        previous_view: RequestView | None = None,
        arrived: Sequence[BaseMessage] = (),
        new_summaries: Sequence[dict[str, Any]] = (),
        position: int = 0,
    ) -> None:
        """Record one model call.

        Args:
            row: the call's row (``view_tokens``, ``raw_tokens`` and the ``summarizer_*`` counts are
                read; the measure columns are written by :meth:`finish`).
            view: what the model received.
            answer: the recorded answer (its tokens are the call's output tokens, measured by
                :meth:`finish`).
            keys: the view's :func:`~ctxlab.replay.metrics.request_keys`, when computed already.
            segments: the view's :func:`~ctxlab.replay.cost.view_segments`, when computed already
                (:meth:`ctxlab.replay.tracking.ViewMeasures.segments`).
            previous_view: the previous call's view (``None`` for the first call).
            arrived: the transcript messages added to the state since the previous call (its
                recorded answer first).
            new_summaries: the summary records this call's L2 round(s) appended.
            position: the answer's index in the transcript's messages after the system message.
        """
        for column in RUN_MEASURE_COLUMNS:
            row.setdefault(column, None)
        for m in arrived:
            if m.id:
                self._originals[("id", m.id)] = m
        if int(row.get("summarizer_calls") or 0) > 0:
            summ = CallTokens(
                int(row.get("summarizer_input_tokens") or 0),
                int(row.get("summarizer_output_tokens") or 0),
                kind="summarizer",
            )
            self._calls.append(summ)
            self._owners.append((row, "summarizer"))
        if segments is None:
            segments = view_segments(view, self.measure, keys)
        # the answer is measured in finish(): after the next call, whose middleware counts it first
        self._answers.append((len(self._calls), row, answer, segments))
        self._calls.append(None)
        self._owners.append((row, "main"))
        self._rows.append(row)
        self._last_position = max(self._last_position, position)
        if new_summaries:
            before = previous_view.messages if previous_view is not None else []
            span = [
                self._originals.get(_ident(m), m) for m in summarized_span(before, arrived, view.messages)
            ]
            kept = [m for m in view.messages if not is_summary_message(m)]
            self._rounds.append(_Round(list(new_summaries), row, span, kept, position))

    def finish(self, messages: Sequence[BaseMessage]) -> None:
        """Price the run and measure each round's fidelity; fills the rows and summary records.

        Args:
            messages: the transcript's messages after the system message (the positions given to
                :meth:`add_call` index into it); only those up to the last replayed call count
                as later turns.
        """
        calls = list(self._calls)
        for index, row, answer, segments in self._answers:
            out_tokens = self.measure.message_tokens(answer)
            row["output_tokens"] = out_tokens
            calls[index] = CallTokens(int(row["view_tokens"]), out_tokens, segments=segments)
        raw, previous_raw = [], 0
        for row in self._rows:
            raw.append(
                CallTokens(int(row["raw_tokens"]), row["output_tokens"], common_prefix_tokens=previous_raw)
            )
            previous_raw = int(row["raw_tokens"])
        for row in self._rows:
            row.update(dict.fromkeys(_ZEROED, 0.0), cache_read_tokens=0, cache_write_tokens=0)
        made = [c for c in calls if c is not None]
        # a run's costs depend on its calls only: priced once per run of the transcript whose calls
        # are the same numbers over the very same segments (the measures of a call another run
        # had, ctxlab.replay.tracking.SharedView: every run that never compressed, for one)
        same = tuple(
            (c.kind, c.input_tokens, c.output_tokens, c.time, c.common_prefix_tokens, _Same(c.segments))
            for c in made
        )
        priced = self.share.run_value(
            ("cost", self.price, self.breakpoint, same),
            lambda: price_run(made, self.price, breakpoint=self.breakpoint),
        )
        for (row, kind), cost in zip(self._owners, priced, strict=True):
            if kind == "summarizer":
                row["summarizer_cost_usd"] += cost.total_usd
            else:
                row["cost_usd"] += cost.total_usd
                row["cache_read_tokens"] += cost.cache_read_tokens
                row["cache_write_tokens"] += cost.cache_write_tokens
                row["cost_read_usd"] += cost.cache_read_usd
                row["cost_write_usd"] += cost.cache_write_usd
                row["cost_uncached_usd"] += cost.input_usd
                row["cost_output_usd"] += cost.output_usd
        # the uncompressed run's costs depend on its calls' tokens only: priced once per transcript
        raw_key = (
            "raw_cost",
            self.price,
            self.breakpoint,
            tuple((c.input_tokens, c.output_tokens) for c in raw),
        )
        raw_costs = self.share.run_value(
            raw_key, lambda: price_run(raw, self.price, breakpoint=self.breakpoint)
        )
        for row, cost in zip(self._rows, raw_costs, strict=True):
            row["raw_cost_usd"] = cost.total_usd
            row["raw_cost_read_usd"] = cost.cache_read_usd
            row["raw_cost_write_usd"] = cost.cache_write_usd
        replayed = list(messages[: self._last_position + 1])
        for r in self._rounds:
            for record in r.records:
                text = str(record.get("text") or "")
                later = replayed[r.position :]
                fid = summary_fidelity(
                    r.span, text, kept=r.kept, later=later, system=self.system, index=self.index
                )
                record.update(fid.as_dict())
                for column in _IDENTIFIER_COLUMNS:
                    r.row[column] = int(r.row.get(column) or 0) + int(getattr(fid, column))
                self._probe(r, record, text, later)

    def _probe(self, r: _Round, record: dict[str, Any], text: str, later: Sequence[BaseMessage]) -> None:
        """The round's probes (:mod:`ctxlab.replay.probes`) checked on its summary and on the two
        reference floors at the summary's size (:mod:`ctxlab.core.builtin.floors`); into the row and
        the summary record."""
        carried = record.get("latest_request")
        probes = round_probes(
            r.span,
            later,
            kept=r.kept,
            system=self.system,
            carried=carried if isinstance(carried, str) else "",
            actions=self.actions,
        )
        passed = check_probes(probes, text)
        body = record.get("body")
        body = body if isinstance(body, str) and body.strip() else None
        budget = max(64, estimate_text_tokens(body if body is not None else text))
        floors: dict[str, int] = {}
        for name, build in (("dump", identifier_dump), ("recent", recent_messages)):
            floor = build(r.span, budget)
            framed = text.replace(body, floor, 1) if body is not None and body in text else floor
            floors[name] = sum(check_probes(probes, framed))
        row = r.row
        row["probes"] = int(row.get("probes") or 0) + len(probes)
        row["probes_passed"] = int(row.get("probes_passed") or 0) + sum(passed)
        row["dump_probes_passed"] = int(row.get("dump_probes_passed") or 0) + floors["dump"]
        row["recent_probes_passed"] = int(row.get("recent_probes_passed") or 0) + floors["recent"]
        tokens = record.get("tokens")
        row["summary_tokens"] = int(row.get("summary_tokens") or 0) + (
            int(tokens) if isinstance(tokens, int) else estimate_text_tokens(text)
        )
        record.update(
            probes=len(probes),
            probes_passed=sum(passed),
            dump_probes_passed=floors["dump"],
            recent_probes_passed=floors["recent"],
            probe_counts=probe_counts(probes, passed),
            probe_details=[{**p.as_dict(), "passed": ok} for p, ok in zip(probes, passed, strict=True)],
        )
