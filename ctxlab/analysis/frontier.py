"""The frontier of strategies: cost saving against identifier recall, per run and pooled (issue 23).

A strategy is better when it saves more dollars (``cost_saving_pct``, under a price row's prompt
caching, :mod:`ctxlab.replay.cost`) at higher identifier recall (``needed_recall``: of what later
turns used that stood only in a summarized span, the share the summaries carried,
:mod:`ctxlab.replay.fidelity`).  Both columns come from the column registry through
:func:`ctxlab.replay.table.summary_frame` (per run) and
:func:`ctxlab.replay.table.strategy_totals` (pooled over all the strategy's calls and rounds).

The cost depends on the price row and so, for a strategy that decides by dollars
(``ars-cache``), do its rounds and recall: the input is one per-call frame per price row, each
from its own replay.  The figure is :func:`ctxlab.analysis.plotting.frontier.plot_frontier`.

The uncertainty (:func:`frontier_intervals`) is the executive summary's (issue 19,
:func:`ctxlab.replay.stratified.balanced_mean`): per strategy, the **source-balanced** mean per-run
cost saving and identifier recall (every source alike, the figure the summary states) with their
95 % bootstrap intervals stratified by source (seeded, :data:`~ctxlab.replay.stats.RESAMPLES`
resamples; one source: the plain mean and a plain bootstrap).  They are over the same runs as the dots (all
runs of the frame); the cost saving over every run (``runs``), the identifier recall over the runs
with a summarized span (``qualified``: it is defined only there).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from ctxlab.replay.stats import CONFIDENCE, per_run_values
from ctxlab.replay.stratified import balanced_mean, run_sources
from ctxlab.replay.table import strategy_totals, summary_frame

__all__ = ["FRONTIER_COLUMNS", "INTERVAL_COLUMNS", "frontier_frame", "frontier_intervals", "frontier_table"]

#: the columns of :func:`frontier_frame`
FRONTIER_COLUMNS = ("price_row", "strategy", "transcript", "pooled", "cost_saving_pct", "needed_recall")
#: the columns of :func:`frontier_intervals`
INTERVAL_COLUMNS = (
    "price_row",
    "strategy",
    "runs",
    "cost_saving_mean",
    "cost_saving_low",
    "cost_saving_high",
    "qualified",
    "needed_recall_mean",
    "needed_recall_low",
    "needed_recall_high",
)


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


def _interval(
    values: dict[str, float | None], sources: dict[str, str]
) -> tuple[int, float | None, float | None, float | None]:
    got = {run: v for run, v in values.items() if v is not None}
    if not got:
        return 0, None, None, None
    est = balanced_mean(got, sources)
    return len(got), est.mean, est.low, est.high


def frontier_intervals(calls_by_price: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Per price row × strategy (first-seen order): the source-balanced mean per-run
    ``cost_saving_pct`` (%) and ``needed_recall`` (0-1) with their bootstrap interval at
    :data:`~ctxlab.replay.stats.CONFIDENCE` stratified by source
    (:func:`ctxlab.replay.stratified.balanced_mean`): :data:`INTERVAL_COLUMNS`.

    ``runs`` counts the runs with a cost saving, ``qualified`` those with a identifier recall (a
    summarized span); ``None`` in a mean and its interval: no such run (masking has no summary).
    With one run the interval is that run's value (the figure draws no bar then).

    Raises:
        ValueError: as :func:`frontier_frame`.
    """
    _check(calls_by_price)
    rows = []
    for key, calls in calls_by_price.items():
        summary = summary_frame(calls)
        sources = run_sources(summary)
        for name in summary["strategy"].unique(maintain_order=True).to_list():
            costs = per_run_values(summary, name, "cost_saving_pct")
            runs, cost, cost_low, cost_high = _interval(costs, sources)
            kept, recall, recall_low, recall_high = _interval(
                per_run_values(summary, name, "needed_recall"), sources
            )
            rows.append((key, name, runs, cost, cost_low, cost_high, kept, recall, recall_low, recall_high))
    schema = dict.fromkeys(INTERVAL_COLUMNS, pl.Float64) | {
        "price_row": pl.String,
        "strategy": pl.String,
        "runs": pl.Int64,
        "qualified": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _ci_text(mean: pl.Expr, low: pl.Expr, high: pl.Expr, runs: pl.Expr, digits: int) -> pl.Expr:
    """``"mean [low, high]"`` rounded to ``digits``; ``"mean (no interval from 1 run)"`` over one
    run (a bootstrap of one value is that value: ``[x, x]`` would read as certainty); empty
    without a mean."""
    fmt = [mean.round(digits), low.round(digits), high.round(digits)]
    return (
        pl.when(mean.is_null())
        .then(None)
        .when(runs < 2)
        .then(pl.format("{} (no interval from 1 run)", mean.round(digits)))
        .otherwise(pl.format("{} [{}, {}]", *fmt))
    )


def frontier_table(calls_by_price: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The frontier side by side: one row per strategy (first-seen order), and for each price
    row ``cost saving % (<row>)`` and ``identifier recall (<row>)`` (pooled over the strategy's calls
    and rounds), the mean per run with its 95 % bootstrap interval as text ``"mean [low, high]"``
    (``cost saving % per run, 95 % CI (<row>)``, ``identifier recall per run, 95 % CI (<row>)``,
    :func:`frontier_intervals`), ``runs (<row>)`` and ``qualified runs (<row>)`` (runs with a
    summarized span: those the recall interval is over).

    Raises:
        ValueError: as :func:`frontier_frame`.
    """
    pooled = frontier_frame(calls_by_price).filter(pl.col("pooled"))
    intervals = frontier_intervals(calls_by_price)
    pct = round(100 * CONFIDENCE)
    table: pl.DataFrame | None = None
    for key in calls_by_price:
        ci = intervals.filter(pl.col("price_row") == key).select(
            "strategy",
            _ci_text(
                pl.col("cost_saving_mean"),
                pl.col("cost_saving_low"),
                pl.col("cost_saving_high"),
                pl.col("runs"),
                1,
            ).alias(f"cost saving % per run, {pct} % CI ({key})"),
            _ci_text(
                pl.col("needed_recall_mean"),
                pl.col("needed_recall_low"),
                pl.col("needed_recall_high"),
                pl.col("qualified"),
                3,
            ).alias(f"identifier recall per run, {pct} % CI ({key})"),
            pl.col("runs").alias(f"runs ({key})"),
            pl.col("qualified").alias(f"qualified runs ({key})"),
        )
        part = pooled.filter(pl.col("price_row") == key).select(
            "strategy",
            pl.col("cost_saving_pct").round(1).alias(f"cost saving % ({key})"),
            pl.col("needed_recall").round(3).alias(f"identifier recall ({key})"),
        )
        part = part.join(ci, on="strategy", how="left", maintain_order="left")
        table = (
            part
            if table is None
            else table.join(part, on="strategy", how="full", coalesce=True, maintain_order="left")
        )
    assert table is not None  # _check refused an empty mapping
    return table
