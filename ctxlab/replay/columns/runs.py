"""The per-run columns (``summary.csv``; the strategy totals), in ``summary.csv``'s order, each with
the polars aggregation over a group of per-call rows.

A group is one transcript × strategy (``summary.csv``) or one strategy over all its transcripts
(the totals): the totals aggregate the pooled calls, so a mean is a mean over all the calls and a
ratio is a ratio of the pooled sums, never a mean of the runs' values.
"""

from __future__ import annotations

import polars as pl

from ctxlab.replay.columns import definitions as d
from ctxlab.replay.columns.registry import RunColumn
from ctxlab.replay.columns.stall import STALL_RUN_COLUMNS
from ctxlab.replay.failures import THRASH_CONSECUTIVE, THRASH_COUNT, THRASH_WINDOW

__all__ = ["RUN_REGISTRY"]

_Int, _Str, _Float, _Len, _Bool = pl.Int64, pl.String, pl.Float64, pl.UInt32, pl.Boolean


def _sum(column: str) -> pl.Expr:
    return pl.col(column).sum()


def _sum_or_null(column: str) -> pl.Expr:
    """The sum, empty when every value is empty (no price row: no cost)."""
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum()).otherwise(None)


def _count(condition: pl.Expr) -> pl.Expr:
    return condition.sum().cast(pl.Int64)


def _streak(flag: pl.Expr) -> pl.Expr:
    """The longest run of consecutive true values (0: none), in the group's row order."""
    runs = flag.rle()
    return runs.filter(runs.struct.field("value")).struct.field("len").max().fill_null(0).cast(pl.Int64)


def _in_window(flag: pl.Expr, window: int) -> pl.Expr:
    """The most true values within ``window`` consecutive rows (0: none)."""
    return flag.cast(pl.Int64).rolling_sum(window_size=window, min_samples=1).max().fill_null(0)


def _saving(sent: pl.Expr, raw: pl.Expr) -> pl.Expr:
    """``100 × (1 − Σ sent / Σ raw)``; empty when ``Σ raw`` is not positive (or empty)."""
    return pl.when(raw > 0).then(100.0 * (1.0 - sent / raw)).otherwise(None)


def _ok(column: str) -> pl.Expr:
    """The sum over the calls whose request was not built on a failed summary."""
    return pl.col(column).filter(~pl.col("after_failed_summary")).sum()


def _cost() -> pl.Expr:
    """The main model's cost plus the summarizer's (empty without a price row)."""
    return _sum_or_null("cost_usd") + pl.col("summarizer_cost_usd").fill_null(0.0).sum()


def _pooled(carried: str, identifiers: str) -> pl.Expr:
    """``Σ carried / Σ identifiers``; empty when there is no identifier."""
    whole = pl.col(identifiers).sum()
    return pl.when(whole > 0).then(pl.col(carried).sum() / whole).otherwise(None)


_RATIO = "ratio of the pooled sums"

#: every per-run column, in ``summary.csv``'s order (``transcripts`` is in the totals only)
RUN_REGISTRY: tuple[RunColumn, ...] = (
    RunColumn(
        "transcript",
        _Str,
        "label",
        "the transcript's label",
        "run",
        ("transcript",),
        "group key",
        scope="summary",
        over_runs="-",
    ),
    RunColumn(
        "strategy",
        _Str,
        "label",
        "the strategy's label",
        "run",
        ("strategy",),
        "group key",
        over_runs="group key",
    ),
    RunColumn(
        "transcripts",
        _Len,
        "count",
        "transcripts the strategy replayed",
        "run",
        ("transcript",),
        "distinct count",
        expr=lambda: pl.col("transcript").n_unique(),
        scope="totals",
        over_runs="distinct count",
    ),
    RunColumn(
        "data_provenance",
        _Str,
        "label",
        "where the transcripts come from (real, scripted, synthetic; several: joined by commas)",
        "run",
        ("data_provenance",),
        "distinct values",
        expr=lambda: pl.col("data_provenance").unique().sort().str.join(", "),
        over_runs="distinct values",
    ),
    RunColumn(
        "reached_threshold",
        _Bool,
        "flag",
        "the run's largest raw request reaches T (empty: a foreign middleware, no T recorded)",
        "view",
        ("raw_tokens", "threshold"),
        "max raw_tokens >= T",
        expr=lambda: pl.col("raw_tokens").max() >= pl.col("threshold").max(),
        scope="summary",
        over_runs="-",
    ),
    RunColumn(
        "calls", _Len, "count", "model calls replayed", "run", (), "count", expr=pl.len, over_runs="count"
    ),
    RunColumn(
        "raw_tokens_total",
        _Int,
        "tokens",
        "Σ raw_tokens",
        "view",
        ("raw_tokens",),
        "sum",
        expr=lambda: _sum("raw_tokens"),
    ),
    RunColumn(
        "sent_tokens_total",
        _Int,
        "tokens",
        "Σ view_tokens",
        "view",
        ("view_tokens",),
        "sum",
        expr=lambda: _sum("view_tokens"),
    ),
    RunColumn(
        "saving_pct",
        _Float,
        "percent",
        "100 × (1 − Σ view_tokens / Σ raw_tokens); empty when Σ raw_tokens is 0",
        "view",
        ("view_tokens", "raw_tokens"),
        _RATIO,
        expr=lambda: _saving(_sum("view_tokens"), _sum("raw_tokens")),
        detail=d.SAVING_PCT,
        heading="saving %",
        label="tokens saved (% of raw)",
    ),
    RunColumn(
        "saving_pct_without_failed",
        _Float,
        "percent",
        "saving_pct over the calls not built on a failed summary (a failed summary's saving is no saving)",
        "view",
        ("view_tokens", "raw_tokens", "after_failed_summary"),
        _RATIO,
        expr=lambda: _saving(_ok("view_tokens"), _ok("raw_tokens")),
    ),
    RunColumn(
        "l1_rounds",
        _Int,
        "count",
        "calls whose level is L1",
        "compression",
        ("level",),
        "count",
        expr=lambda: _count(pl.col("level") == "L1"),
    ),
    RunColumn(
        "l2_rounds",
        _Int,
        "count",
        "calls whose level is L2",
        "compression",
        ("level",),
        "count",
        expr=lambda: _count(pl.col("level") == "L2"),
        label="L2 rounds (all transcripts)",
    ),
    RunColumn(
        "summary_errors",
        _Int,
        "count",
        "failed, text-less or fallback L2 summaries",
        "compression",
        ("summary_error", "summary_fallback"),
        "count",
        expr=lambda: _count(pl.col("summary_error").is_not_null() | pl.col("summary_fallback").is_not_null()),
    ),
    RunColumn(
        "fallback_summaries",
        _Int,
        "count",
        "summaries that are a foreign middleware's fallback text (counted in summary_errors too)",
        "compression",
        ("summary_fallback",),
        "count",
        expr=lambda: _count(pl.col("summary_fallback").is_not_null()),
    ),
    RunColumn(
        "declined_summaries",
        _Int,
        "count",
        "ctxlab rounds that sent a view above T2 without summarizing",
        "compression",
        ("summary_declined",),
        "count",
        expr=lambda: _count(pl.col("summary_declined").is_not_null()),
    ),
    RunColumn(
        "rejected_summaries",
        _Int,
        "count",
        "ctxlab summaries not committed (bigger than their span)",
        "compression",
        ("summary_rejected",),
        "count",
        expr=lambda: _count(pl.col("summary_rejected").is_not_null()),
    ),
    RunColumn(
        "max_consecutive_summaries",
        _Int,
        "count",
        "the longest streak of consecutive calls with an L2 round",
        "compression",
        ("level",),
        "longest streak",
        expr=lambda: _streak(pl.col("level") == "L2"),
        scope="summary",
        over_runs="-",
    ),
    RunColumn(
        "max_summaries_in_window",
        _Int,
        "count",
        f"the most L2 rounds within {THRASH_WINDOW} consecutive calls",
        "compression",
        ("level",),
        "rolling count",
        expr=lambda: _in_window(pl.col("level") == "L2", THRASH_WINDOW),
        scope="summary",
        over_runs="-",
    ),
    RunColumn(
        "summary_thrash",
        _Bool,
        "flag",
        f"summaries on {THRASH_CONSECUTIVE}+ consecutive calls, or {THRASH_COUNT}+ within "
        f"{THRASH_WINDOW} calls (ctxlab.replay.failures)",
        "compression",
        ("level",),
        "flag",
        expr=lambda: (
            (_streak(pl.col("level") == "L2") >= THRASH_CONSECUTIVE)
            | (_in_window(pl.col("level") == "L2", THRASH_WINDOW) >= THRASH_COUNT)
        ),
        scope="summary",
        over_runs="-",
    ),
    RunColumn(
        "overflow_rounds",
        _Int,
        "count",
        "calls in which the provider stand-in refused a request",
        "compression",
        ("overflow_errors",),
        "count",
        expr=lambda: _count(pl.col("overflow_errors") > 0),
    ),
    RunColumn(
        "summarizer_calls",
        _Int,
        "count",
        "Σ summarizer_calls",
        "compression",
        ("summarizer_calls",),
        "sum",
        expr=lambda: _sum("summarizer_calls"),
    ),
    RunColumn(
        "summarizer_input_tokens",
        _Int,
        "tokens",
        "Σ summarizer_input_tokens",
        "compression",
        ("summarizer_input_tokens",),
        "sum",
        expr=lambda: _sum("summarizer_input_tokens"),
    ),
    RunColumn(
        "summarizer_output_tokens",
        _Int,
        "tokens",
        "Σ summarizer_output_tokens",
        "compression",
        ("summarizer_output_tokens",),
        "sum",
        expr=lambda: _sum("summarizer_output_tokens"),
    ),
    RunColumn(
        "mean_overhead_ms",
        _Float,
        "ms",
        "mean overhead_ms per call",
        "compression",
        ("overhead_ms",),
        "mean",
        expr=lambda: pl.col("overhead_ms").mean(),
    ),
    RunColumn(
        "mean_cache_reusable_share",
        _Float,
        "share",
        "mean cache_reusable_share (empty values skipped)",
        "view",
        ("cache_reusable_share",),
        "mean",
        expr=lambda: pl.col("cache_reusable_share").mean(),
    ),
    RunColumn(
        "mean_retention",
        _Float,
        "share",
        "mean retention (calls without identifiers skipped)",
        "retention",
        ("retention",),
        "mean",
        expr=lambda: pl.col("retention").mean(),
    ),
    RunColumn(
        "max_view_tokens",
        _Int,
        "tokens",
        "the largest request sent",
        "view",
        ("view_tokens",),
        "max",
        expr=lambda: pl.col("view_tokens").max(),
    ),
    RunColumn(
        "max_raw_tokens",
        _Int,
        "tokens",
        "the largest uncompressed request",
        "view",
        ("raw_tokens",),
        "max",
        expr=lambda: pl.col("raw_tokens").max(),
    ),
    RunColumn(
        "unmatched_tool_pairs",
        _Int,
        "count",
        "Σ unmatched_tool_pairs (must be 0)",
        "tool_pairs",
        ("unmatched_tool_pairs",),
        "sum",
        expr=lambda: _sum("unmatched_tool_pairs"),
    ),
    RunColumn(
        "cost_usd",
        _Float,
        "usd",
        "Σ cost_usd + Σ summarizer_cost_usd (empty: no price row)",
        "cost",
        ("cost_usd", "summarizer_cost_usd"),
        "sum",
        expr=_cost,
    ),
    RunColumn(
        "summarizer_cost_usd",
        _Float,
        "usd",
        "Σ summarizer_cost_usd",
        "cost",
        ("summarizer_cost_usd",),
        "sum",
        expr=lambda: _sum_or_null("summarizer_cost_usd"),
    ),
    RunColumn(
        "raw_cost_usd",
        _Float,
        "usd",
        "Σ raw_cost_usd",
        "cost",
        ("raw_cost_usd",),
        "sum",
        expr=lambda: _sum_or_null("raw_cost_usd"),
    ),
    RunColumn(
        "cost_saving_pct",
        _Float,
        "percent",
        "100 × (1 − cost_usd / raw_cost_usd) of the run",
        "cost",
        ("cost_usd", "summarizer_cost_usd", "raw_cost_usd"),
        _RATIO,
        expr=lambda: _saving(_cost(), _sum_or_null("raw_cost_usd")),
    ),
    RunColumn(
        "span_recall",
        _Float,
        "share",
        "Σ span_carried / Σ span_identifiers over the L2 rounds",
        "fidelity",
        ("span_carried", "span_identifiers"),
        "pooled ratio",
        expr=lambda: _pooled("span_carried", "span_identifiers"),
        detail=d.SPAN_RECALL,
    ),
    RunColumn(
        "needed_recall",
        _Float,
        "share",
        "Σ needed_carried / Σ needed_identifiers over the L2 rounds",
        "fidelity",
        ("needed_carried", "needed_identifiers"),
        "pooled ratio",
        expr=lambda: _pooled("needed_carried", "needed_identifiers"),
        detail=d.NEEDED_RECALL,
    ),
    RunColumn(
        "recorded_input_tokens_total",
        _Int,
        "provider_tokens",
        "Σ recorded_input_tokens (empty: no call records the provider's usage)",
        "recorded_usage",
        ("recorded_input_tokens",),
        "sum",
        expr=lambda: _sum_or_null("recorded_input_tokens"),
    ),
    *STALL_RUN_COLUMNS,
)
