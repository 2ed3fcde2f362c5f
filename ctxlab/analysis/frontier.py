"""The frontier of strategies: cost saving against needed recall, per run and pooled (issue 23).

A strategy is better when it saves more dollars (``cost_saving_pct``, under a price row's prompt
caching, :mod:`ctxlab.replay.cost`) at higher needed recall (``needed_recall``: of what later
turns used that stood only in a summarized span, the share the summaries carried,
:mod:`ctxlab.replay.fidelity`).  Both columns come from the column registry through
:func:`ctxlab.replay.table.summary_frame` (per run) and
:func:`ctxlab.replay.table.strategy_totals` (pooled over all the strategy's calls and rounds).

The cost depends on the price row and so, for a strategy that decides by dollars
(``ars-cache``), do its rounds and recall: the input is one per-call frame per price row, each
from its own replay.  The figure is :func:`ctxlab.analysis.plotting.frontier.plot_frontier`.

No interval is drawn around a pooled value: the paired bootstrap of the verdicts work (issue 19)
was not on main when this was written; the per-run points show the spread instead.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from ctxlab.replay.table import strategy_totals, summary_frame

__all__ = ["FRONTIER_COLUMNS", "frontier_frame", "frontier_table"]

#: the columns of :func:`frontier_frame`
FRONTIER_COLUMNS = ("price_row", "strategy", "transcript", "pooled", "cost_saving_pct", "needed_recall")


def _check(calls_by_price: Mapping[str, pl.DataFrame]) -> None:
    if not calls_by_price:
        raise ValueError("calls_by_price is empty: give one per-call frame per price row")
    for key, calls in calls_by_price.items():
        missing = {"strategy", "transcript", "cost_usd", "raw_cost_usd", "needed_identifiers"} - set(
            calls.columns
        )
        if missing:
            raise ValueError(f"the frame of price row {key!r} lacks the columns {sorted(missing)}")


def frontier_frame(calls_by_price: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per price row × strategy × run (``pooled`` false) and per price row × strategy
    pooled over its runs (``pooled`` true, ``transcript`` empty): :data:`FRONTIER_COLUMNS`.

    Args:
        calls_by_price: ``{"provider:model": per-call frame}`` (:meth:`ReplayResult.frame`), each
            replayed under that price row.

    Raises:
        ValueError: no frame, or a frame without the cost and fidelity columns (the message names
            the price row and the columns).
    """
    _check(calls_by_price)
    parts = []
    for key, calls in calls_by_price.items():
        runs = summary_frame(calls).select(
            pl.lit(key).alias("price_row"),
            "strategy",
            "transcript",
            pl.lit(False).alias("pooled"),
            "cost_saving_pct",
            "needed_recall",
        )
        pooled = strategy_totals(calls).select(
            pl.lit(key).alias("price_row"),
            "strategy",
            pl.lit(None, dtype=pl.String).alias("transcript"),
            pl.lit(True).alias("pooled"),
            "cost_saving_pct",
            "needed_recall",
        )
        parts += [runs, pooled]
    return pl.concat(parts, how="vertical_relaxed").select(FRONTIER_COLUMNS)


def frontier_table(calls_by_price: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The pooled values side by side: one row per strategy (first-seen order), and for each
    price row ``cost saving % (<row>)`` and ``needed recall (<row>)``.

    Raises:
        ValueError: as :func:`frontier_frame`.
    """
    pooled = frontier_frame(calls_by_price).filter(pl.col("pooled"))
    table: pl.DataFrame | None = None
    for key in calls_by_price:
        part = pooled.filter(pl.col("price_row") == key).select(
            "strategy",
            pl.col("cost_saving_pct").round(1).alias(f"cost saving % ({key})"),
            pl.col("needed_recall").round(3).alias(f"needed recall ({key})"),
        )
        table = (
            part
            if table is None
            else table.join(part, on="strategy", how="full", coalesce=True, maintain_order="left")
        )
    assert table is not None  # _check refused an empty mapping
    return table
