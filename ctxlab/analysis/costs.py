"""The cost and summary-fidelity view of a replay: a table per strategy (:func:`cost_table`).

It reads the per-call frame (:func:`ctxlab.analysis.report.calls_frame`): the ``*_usd`` columns
(US dollars under the replay's price row, :mod:`ctxlab.replay.cost`) and the fidelity counts
(:mod:`ctxlab.replay.fidelity`).  The cost-per-call figure lives with the other plots
(:mod:`ctxlab.analysis.plotting.cost`); :func:`plot_cost_per_call`, :func:`write_cost_figure` and
:data:`COST_FIGURE` are re-exported here, where notebooks and the README import them.
"""

from __future__ import annotations

import polars as pl

from ctxlab.analysis.plotting.cost import COST_FIGURE, plot_cost_per_call, write_cost_figure
from ctxlab.replay.table import MEASURE_COLUMNS, strategy_totals

__all__ = [
    "BREAKDOWN_COLUMNS",
    "COST_FIGURE",
    "COST_TABLE_COLUMNS",
    "cost_breakdown",
    "cost_table",
    "plot_cost_per_call",
    "write_cost_figure",
]

#: the columns of :func:`cost_table`
COST_TABLE_COLUMNS = (
    "strategy",
    "transcripts",
    "calls",
    "l2_rounds",
    "cost_per_call_usd",
    *MEASURE_COLUMNS,
)


def cost_table(calls: pl.DataFrame) -> pl.DataFrame:
    """One row per strategy over all transcripts: calls, L2 rounds, cost per call and in total
    (US dollars, the summarizer's included), the uncompressed reference, the cost saving in % and
    the pooled span and identifier recall (:data:`COST_TABLE_COLUMNS`)."""
    totals = strategy_totals(calls)
    if totals.is_empty():
        return pl.DataFrame(schema={c: pl.Float64 for c in COST_TABLE_COLUMNS}).with_columns(
            pl.col("strategy").cast(pl.String)
        )
    return totals.with_columns(
        (pl.col("cost_usd") / pl.col("calls")).alias("cost_per_call_usd"),
    ).select(COST_TABLE_COLUMNS)


#: the columns of :func:`cost_breakdown` after its group keys (US dollars)
BREAKDOWN_COLUMNS = (
    "read_usd",
    "write_usd",
    "uncached_usd",
    "output_usd",
    "summarizer_usd",
    "cost_usd",
    "raw_read_usd",
    "raw_write_usd",
    "raw_uncached_usd",
    "raw_output_usd",
    "raw_cost_usd",
)


def cost_breakdown(calls: pl.DataFrame, by: tuple[str, ...] = ("transcript", "strategy")) -> pl.DataFrame:
    """Where the money goes, per group (default: per run), beside the uncompressed reference.

    From the per-call cost breakdown (``cost_read_usd``, ``cost_write_usd``,
    ``cost_uncached_usd``, ``cost_output_usd``, ``summarizer_cost_usd``; ``raw_cost_read_usd``,
    ``raw_cost_write_usd``, ``raw_cost_usd``; ``docs/columns.md``): the strategy's cache reads,
    cache writes, uncached input, output and summarizer dollars and their sum (``cost_usd``, the
    summarizer included), and the same split of the uncompressed requests (its output is the same
    answers, so ``raw_uncached_usd = raw_cost_usd − raw_read_usd − raw_write_usd −
    raw_output_usd``); :data:`BREAKDOWN_COLUMNS`, US dollars under the replay's price row.  A frame
    without cost columns (no price row) gives an empty frame.
    """
    if "cost_read_usd" not in calls.columns or calls.get_column("cost_read_usd").is_null().all():
        return pl.DataFrame(
            schema={**dict.fromkeys(by, pl.String), **dict.fromkeys(BREAKDOWN_COLUMNS, pl.Float64)}
        )
    out = calls.group_by(list(by), maintain_order=True).agg(
        pl.col("cost_read_usd").sum().alias("read_usd"),
        pl.col("cost_write_usd").sum().alias("write_usd"),
        pl.col("cost_uncached_usd").sum().alias("uncached_usd"),
        pl.col("cost_output_usd").sum().alias("output_usd"),
        pl.col("summarizer_cost_usd").fill_null(0.0).sum().alias("summarizer_usd"),
        pl.col("raw_cost_read_usd").sum().alias("raw_read_usd"),
        pl.col("raw_cost_write_usd").sum().alias("raw_write_usd"),
        pl.col("raw_cost_usd").sum().alias("raw_cost_usd"),
    )
    out = out.with_columns(
        (
            pl.col("read_usd")
            + pl.col("write_usd")
            + pl.col("uncached_usd")
            + pl.col("output_usd")
            + pl.col("summarizer_usd")
        ).alias("cost_usd"),
        pl.col("output_usd").alias("raw_output_usd"),
    ).with_columns(
        (
            pl.col("raw_cost_usd")
            - pl.col("raw_read_usd")
            - pl.col("raw_write_usd")
            - pl.col("raw_output_usd")
        ).alias("raw_uncached_usd")
    )
    return out.select([*by, *BREAKDOWN_COLUMNS])
