"""The per-run columns of the provider's window (issue 27): how many calls' uncompressed request
is above it or has unmatched tool pairs (their no-compression baseline is infeasible) and the
token saving over the others, spliced into :data:`ctxlab.replay.columns.runs.RUN_REGISTRY` after
``saving_pct_without_failed``."""

from __future__ import annotations

import polars as pl

from ctxlab.replay.columns import aggregations as a
from ctxlab.replay.columns.registry import RunColumn

__all__ = ["FEASIBLE_RUN_COLUMNS"]

_Int, _Float = pl.Int64, pl.Float64
_RATIO = "ratio of the pooled sums"
_count, _feasible, _saving = a.count, a.feasible, a.saving

#: the window's per-run columns, in ``summary.csv``'s order
FEASIBLE_RUN_COLUMNS: tuple[RunColumn, ...] = (
    RunColumn(
        "infeasible_calls",
        _Int,
        "count",
        "calls whose no-compression baseline is infeasible: the uncompressed request is above the "
        "provider's window (over_window) or has unmatched tool pairs (raw_rejected_reason)",
        "window",
        ("over_window", "raw_rejected_reason"),
        "count",
        expr=lambda: _count(~a.fits()),
    ),
    RunColumn(
        "infeasible_share",
        _Float,
        "share",
        "infeasible_calls / calls: the share of calls whose no-compression baseline no agent could send "
        "(empty: no window and no raw_rejected_reason)",
        "window",
        ("over_window", "raw_rejected_reason"),
        "mean",
        expr=lambda: (
            pl.when(
                pl.col("over_window").is_not_null().any() | pl.col("raw_rejected_reason").is_not_null().any()
            )
            .then((~a.fits()).cast(pl.Float64).mean())
            .otherwise(None)
        ),
    ),
    RunColumn(
        "raw_tokens_feasible",
        _Int,
        "tokens",
        "Σ raw_tokens over the calls whose no-compression baseline is feasible (not infeasible_calls)",
        "window",
        ("raw_tokens", "over_window", "raw_rejected_reason"),
        "sum",
        expr=lambda: _feasible("raw_tokens"),
    ),
    RunColumn(
        "saving_pct_feasible",
        _Float,
        "percent",
        "saving_pct over the calls whose no-compression baseline is feasible (fits the window, no "
        "unmatched tool pairs; empty when none is), a failure counted as a failure: a call built on a failed "
        "summary or rejected by the provider counts as sending its uncompressed request (it saves "
        "nothing); the verdicts' token measure",
        "window",
        (
            "view_tokens",
            "raw_tokens",
            "over_window",
            "raw_rejected_reason",
            "after_failed_summary",
            "rejected_reason",
        ),
        _RATIO,
        expr=lambda: _saving(a.counted_sent(), _feasible("raw_tokens")),
        label="tokens saved over feasible calls (% of raw)",
    ),
)
