"""The per-call table of a replay and its aggregations, built from the column registry.

One row per model call (:data:`CALL_COLUMNS`, typed as :class:`CallRow`); ``summary.csv`` has
one row per transcript × strategy (:data:`SUMMARY_COLUMNS`), the strategy totals one per
strategy.  Every column's dtype, unit, definition and aggregation is declared once in
:mod:`ctxlab.replay.columns` (listed in ``docs/columns.md``); this module only applies them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ctxlab.replay.columns import CALL_REGISTRY, RUN_REGISTRY, CallRow

__all__ = [
    "CALLS_SCHEMA",
    "CALL_COLUMNS",
    "MEASURE_COLUMNS",
    "SUMMARY_COLUMNS",
    "TOTALS_COLUMNS",
    "CallRow",
    "calls_frame",
    "read_calls",
    "strategy_totals",
    "summary_frame",
]


#: polars schema of the per-call frame (also for an empty frame), from the registry; its keys are
#: :class:`CallRow`'s
CALLS_SCHEMA: dict[str, Any] = {c.name: c.dtype for c in CALL_REGISTRY}
#: the per-call row's columns, in order
CALL_COLUMNS: tuple[str, ...] = tuple(CALLS_SCHEMA)

_RUNS = {c.name: c for c in RUN_REGISTRY}

#: columns of ``summary.csv``, one row per transcript × strategy
SUMMARY_COLUMNS: tuple[str, ...] = tuple(c.name for c in RUN_REGISTRY if c.scope != "totals")
#: the aggregations of one run: :data:`SUMMARY_COLUMNS` without ``transcript`` and ``strategy``
_RUN_AGGREGATIONS = SUMMARY_COLUMNS[2:]
#: the totals of a group of calls: the aggregations that mean something over several runs (scope
#: ``both``; a streak or a "reached T" flag is per run only)
TOTALS_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in RUN_REGISTRY if c.scope == "both" and c.expr is not None
)
#: the cost and summary-fidelity columns of a group of calls (the last of :data:`SUMMARY_COLUMNS`)
MEASURE_COLUMNS: tuple[str, ...] = tuple(
    c for c in SUMMARY_COLUMNS if _RUNS[c].measure in ("cost", "fidelity")
)
_TOTALS_KEYS = ("strategy", "transcripts")


def calls_frame(rows: Sequence[CallRow] | Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """The per-call rows (:class:`CallRow`) as a DataFrame with the fixed :data:`CALLS_SCHEMA`;
    a key a row lacks is an empty cell.

    Raises:
        ValueError: a row has a key that is not a column of the registry
            (:mod:`ctxlab.replay.columns`); the message names the row and the key.
    """
    if not rows:
        return pl.DataFrame(schema=CALLS_SCHEMA)
    for i, r in enumerate(rows):
        unknown = [k for k in r if k not in CALLS_SCHEMA]
        if unknown:
            raise ValueError(
                f"row {i} has column(s) {unknown} that are not in the column registry "
                "(ctxlab.replay.columns.CALL_REGISTRY): declare them there first"
            )
    return pl.DataFrame(
        [{k: r.get(k) for k in CALLS_SCHEMA} for r in rows], schema=CALLS_SCHEMA, orient="row"
    )


def _aggregations(names: Sequence[str]) -> list[pl.Expr]:
    """The registry's aggregation of each of ``names`` (:attr:`RunColumn.expr`)."""
    out = []
    for name in names:
        expr = _RUNS[name].expr
        if expr is None:
            raise ValueError(f"run column {name!r} is a group key, not an aggregation")
        out.append(expr().alias(name))
    return out


def _empty(names: Sequence[str]) -> pl.DataFrame:
    return pl.DataFrame(schema={c: _RUNS[c].dtype for c in names})


def read_calls(path: str | Path) -> pl.DataFrame:
    """A run folder's ``calls.parquet`` with every column of :data:`CALLS_SCHEMA`: a folder
    written by an older ctxlab lacks the columns added since (``raw_rejected_reason``, the stall
    columns, ...), which are added empty (null: not measured then) with a :class:`UserWarning`
    naming the file and the columns, so that ``ctxlab diff``, ``ctxlab show`` and the per-run
    tables read old runs instead of failing on a missing column.

    Raises:
        OSError, polars.exceptions.ComputeError: the file cannot be read as Parquet.
    """
    frame = pl.read_parquet(path)
    missing = [c for c in CALLS_SCHEMA if c not in frame.columns]
    if missing:
        warnings.warn(
            f"{path}: written by an older ctxlab, it lacks the column(s) {', '.join(missing)}; "
            "they are read as empty (not measured then)",
            UserWarning,
            stacklevel=2,
        )
        frame = frame.with_columns(pl.lit(None, dtype=CALLS_SCHEMA[c]).alias(c) for c in missing)
    return frame


def summary_frame(calls: pl.DataFrame) -> pl.DataFrame:
    """One row per transcript × strategy (:data:`SUMMARY_COLUMNS`), in first-seen order; each
    column is its registry aggregation (:data:`ctxlab.replay.columns.RUN_REGISTRY`).

    ``saving_pct`` = ``100 × (1 − sent_tokens_total / raw_tokens_total)``;
    ``saving_pct_without_failed`` the same over the calls not built on a failed summary (a failed
    summary is short, so its "saving" is no saving); ``summary_errors`` counts failed or
    text-less L2 summaries, ``overflow_rounds`` the calls in which the provider stand-in refused a
    request.  Means skip empty values (``retention`` is empty where the assistant mentioned no
    earlier identifier);
    ``cost_usd`` includes ``summarizer_cost_usd``; ``cost_saving_pct`` =
    ``100 × (1 − cost_usd / raw_cost_usd)``; ``span_recall`` and ``needed_recall`` are pooled over
    the L2 rounds (carried / identifiers; empty without identifiers).
    """
    if calls.is_empty():
        return _empty(SUMMARY_COLUMNS)
    return calls.group_by(["transcript", "strategy"], maintain_order=True).agg(
        _aggregations(_RUN_AGGREGATIONS)
    )


def strategy_totals(calls: pl.DataFrame) -> pl.DataFrame:
    """One row per strategy over all transcripts (``strategy``, ``transcripts`` and
    :data:`TOTALS_COLUMNS`): the registry aggregations over all the strategy's calls."""
    if calls.is_empty():
        return _empty([*_TOTALS_KEYS, *TOTALS_COLUMNS])
    return calls.group_by("strategy", maintain_order=True).agg(
        _aggregations(["transcripts", *TOTALS_COLUMNS])
    )
