"""The shapes of a column entry: :class:`CallColumn` (per call) and :class:`RunColumn` (per run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

__all__ = ["UNITS", "CallColumn", "RunColumn"]

#: the units a column may have, with how an axis label shows them ("": not shown)
UNITS: dict[str, str] = {
    "label": "",  # a name: transcript, strategy, level, an error text
    "index": "",  # a position (0-based)
    "flag": "",  # true / false
    "tokens": "tokens",  # estimates by the run's measuring estimator
    "provider_tokens": "provider tokens",  # counted by the provider, as the transcript records them
    "messages": "messages",
    "count": "count",
    "ms": "ms",  # milliseconds of wall time
    "s": "s",  # seconds of simulated time (ctxlab.replay.latency)
    "usd": "US dollars",  # under the run's price row
    "share": "share",  # in [0, 1]
    "ratio": "×",  # one quantity over another, any value >= 0
    "percent": "%",
}


@dataclass(frozen=True)
class CallColumn:
    """One column of the per-call table (``calls.parquet``).

    Attributes:
        name: the column name (a key of :class:`~ctxlab.replay.columns.CallRow`).
        dtype: its polars dtype.
        unit: one of :data:`UNITS`.
        definition: one line: what the value is.
        measure: the name of the measure that computes it (:mod:`ctxlab.replay.measures`).
        nullable: the cell may be empty (``None`` in the row); what empty means is in the definition.
        detail: the long definition ``report.md`` prints (``None``: none printed).
        heading: the name ``report.md`` prints the detail under (``None``: ``name``).
        label: the axis label of a plot (``None``: name and unit).
    """

    name: str
    dtype: type[pl.DataType]
    unit: str
    definition: str
    measure: str
    nullable: bool = False
    detail: str | None = None
    heading: str | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(
                f"column {self.name!r}: unit={self.unit!r} is invalid: allowed one of {sorted(UNITS)}"
            )


@dataclass(frozen=True)
class RunColumn:
    """One column of ``summary.csv`` (one row per transcript × strategy) and of the strategy
    totals (one row per strategy: the same aggregation over all its transcripts' calls).

    Attributes:
        name, dtype, unit, definition, detail, heading, label: as in :class:`CallColumn`.
        measure: the measure of the per-call columns it aggregates.
        source: the per-call columns it reads.
        how: how it aggregates a run's calls, in a word or two (``sum``, ``mean``, ``max``,
            ``count``, ``ratio of sums``, ``pooled ratio``, ``group key``, ...).
        expr: the polars aggregation over a group of per-call rows (``None`` for a group key).
        over_runs: how the strategy totals combine runs.
        scope: ``"both"`` (summary.csv and totals), ``"summary"`` (summary.csv only: the
            transcript key) or ``"totals"`` (the totals only).
    """

    name: str
    dtype: type[pl.DataType]
    unit: str
    definition: str
    measure: str
    source: tuple[str, ...]
    how: str
    expr: Callable[[], pl.Expr] | None = None
    over_runs: str = "the same over all the strategy's calls"
    scope: str = "both"
    detail: str | None = None
    heading: str | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(
                f"column {self.name!r}: unit={self.unit!r} is invalid: allowed one of {sorted(UNITS)}"
            )
        if self.scope not in ("both", "summary", "totals"):
            raise ValueError(
                f"column {self.name!r}: scope={self.scope!r} is invalid: allowed both, summary, totals"
            )
