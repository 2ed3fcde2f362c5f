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

__all__ = ["COST_FIGURE", "COST_TABLE_COLUMNS", "cost_table", "plot_cost_per_call", "write_cost_figure"]

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
    the pooled span and needed recall (:data:`COST_TABLE_COLUMNS`)."""
    totals = strategy_totals(calls)
    if totals.is_empty():
        return pl.DataFrame(schema={c: pl.Float64 for c in COST_TABLE_COLUMNS}).with_columns(
            pl.col("strategy").cast(pl.String)
        )
    return totals.with_columns(
        (pl.col("cost_usd") / pl.col("calls")).alias("cost_per_call_usd"),
    ).select(COST_TABLE_COLUMNS)
