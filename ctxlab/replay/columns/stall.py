"""The stall and prepared-summary columns (issue 34): how long each call waited on compression,
in simulated time (:mod:`ctxlab.replay.latency`), and what the summaries prepared in the
background (:mod:`ctxlab.core.prepare`) did.  Per call (appended to
:data:`~ctxlab.replay.columns.calls.CALL_REGISTRY`) and per run (appended to
:data:`~ctxlab.replay.columns.runs.RUN_REGISTRY`); the ``stall`` measure
(:class:`ctxlab.replay.stall.StallMeasure`) computes them.
"""

from __future__ import annotations

from typing import TypedDict

import polars as pl

from ctxlab.replay.columns.registry import CallColumn, RunColumn

__all__ = ["NO_STALL_SECONDS", "STALL_CALL_COLUMNS", "STALL_RUN_COLUMNS", "StallColumns"]

_Int, _Float, _Bool = pl.Int64, pl.Float64, pl.Boolean

#: a call that waits less than this on compression does not stall (seconds; issue 34: 50 ms)
NO_STALL_SECONDS = 0.05

STALL_DETAIL = (
    "The seconds a call waited on compression, beyond the middleware's own CPU (which is "
    "`overhead_ms`), in simulated time: one draw of the summarizer latency (`--summarizer-latency`) "
    "per summarizer call made inside the call, plus the time an L2 round waited for a summary "
    "prepared in the background (`summary_prepare_ratio`). A prepared summary is ready one latency "
    "draw per summarizer call after the call that started it; between calls the clock moves by "
    "the agent's step (`--call-latency`; default 1 s plus the recorded answer's output tokens at "
    "50 tokens/s, tools taking no time). Empty without `--summarizer-latency`."
)

#: the per-call columns of the ``stall`` measure, in frame order
STALL_CALL_COLUMNS: tuple[CallColumn, ...] = (
    CallColumn(
        "stall_s",
        _Float,
        "s",
        "seconds this call waited on compression (simulated; empty without --summarizer-latency)",
        "stall",
        nullable=True,
        detail=STALL_DETAIL,
    ),
    CallColumn(
        "prepared_started", _Int, "count", "summaries this call started preparing in the background", "stall"
    ),
    CallColumn(
        "prepared_used",
        _Bool,
        "flag",
        "this call's L2 round committed a summary prepared in the background",
        "stall",
    ),
    CallColumn(
        "prepared_wasted",
        _Int,
        "count",
        "prepared summaries discarded unused in this call (the last call also counts those the run left unused)",
        "stall",
    ),
    CallColumn("prepared_wasted_calls", _Int, "count", "the summarizer calls of the discarded ones", "stall"),
    CallColumn(
        "prepared_wasted_input_tokens",
        _Int,
        "tokens",
        "the summarizer's input tokens of the discarded ones",
        "stall",
    ),
    CallColumn(
        "prepared_wasted_output_tokens",
        _Int,
        "tokens",
        "the summarizer's output tokens of the discarded ones",
        "stall",
    ),
    CallColumn(
        "prepared_wasted_usd",
        _Float,
        "usd",
        "the discarded ones' summarizer tokens at the price row's input and output prices (empty: no price row)",
        "stall",
        nullable=True,
    ),
)


class StallColumns(TypedDict):
    """The ``stall`` measure's columns."""

    stall_s: float | None
    prepared_started: int
    prepared_used: bool
    prepared_wasted: int
    prepared_wasted_calls: int
    prepared_wasted_input_tokens: int
    prepared_wasted_output_tokens: int
    prepared_wasted_usd: float | None


def _l2_stall() -> pl.Expr:
    return pl.col("stall_s").filter(pl.col("level") == "L2")


def _waste_share() -> pl.Expr:
    """Wasted prepared summaries over all summaries made: the L2 rounds' and the wasted ones."""
    made = (pl.col("level") == "L2").sum() + pl.col("prepared_wasted").sum()
    return pl.when(made > 0).then(pl.col("prepared_wasted").sum() / made).otherwise(None)


#: the per-run columns (sums and shares over a group of calls; the totals pool the calls)
STALL_RUN_COLUMNS: tuple[RunColumn, ...] = (
    RunColumn(
        "stall_total_s",
        _Float,
        "s",
        "seconds the run waited on compression (empty without --summarizer-latency)",
        "stall",
        ("stall_s",),
        "sum",
        expr=lambda: (
            pl.when(pl.col("stall_s").is_not_null().any()).then(pl.col("stall_s").sum()).otherwise(None)
        ),
    ),
    RunColumn(
        "l2_stall_p50_s",
        _Float,
        "s",
        "median stall_s of the L2 rounds (empty: none, or no latency model)",
        "stall",
        ("stall_s", "level"),
        "median over L2 calls",
        expr=lambda: _l2_stall().median(),
    ),
    RunColumn(
        "l2_stall_p99_s",
        _Float,
        "s",
        "99th percentile of stall_s over the L2 rounds (nearest rank above)",
        "stall",
        ("stall_s", "level"),
        "quantile 0.99 over L2 calls",
        expr=lambda: _l2_stall().quantile(0.99, "higher"),
    ),
    RunColumn(
        "l2_no_stall_share",
        _Float,
        "share",
        f"share of the L2 rounds that waited less than {NO_STALL_SECONDS * 1000:g} ms",
        "stall",
        ("stall_s", "level"),
        "share of L2 calls",
        expr=lambda: (_l2_stall() < NO_STALL_SECONDS).mean(),
    ),
    RunColumn(
        "prepared_rounds",
        _Int,
        "count",
        "L2 rounds that committed a prepared summary",
        "stall",
        ("prepared_used",),
        "count",
        expr=lambda: pl.col("prepared_used").sum().cast(pl.Int64),
    ),
    RunColumn(
        "prepared_wasted",
        _Int,
        "count",
        "prepared summaries never used",
        "stall",
        ("prepared_wasted",),
        "sum",
        expr=lambda: pl.col("prepared_wasted").sum(),
    ),
    RunColumn(
        "prepared_waste_share",
        _Float,
        "share",
        "prepared_wasted / (L2 rounds + prepared_wasted): the share of summaries made for nothing",
        "stall",
        ("prepared_wasted", "level"),
        "ratio of the pooled sums",
        expr=_waste_share,
    ),
    RunColumn(
        "prepared_wasted_usd",
        _Float,
        "usd",
        "the summarizer cost of the prepared summaries never used (empty: no price row)",
        "stall",
        ("prepared_wasted_usd",),
        "sum",
        expr=lambda: (
            pl.when(pl.col("prepared_wasted_usd").is_not_null().any())
            .then(pl.col("prepared_wasted_usd").sum())
            .otherwise(None)
        ),
    ),
)
