"""The per-run columns (``summary.csv``; the strategy totals), in ``summary.csv``'s order, each with
the polars aggregation over a group of per-call rows.

A group is one transcript × strategy (``summary.csv``) or one strategy over all its transcripts
(the totals): the totals aggregate the pooled calls, so a mean is a mean over all the calls and a
ratio is a ratio of the pooled sums, never a mean of the runs' values.
"""

from __future__ import annotations

import polars as pl

from ctxlab.replay.columns import aggregations as a
from ctxlab.replay.columns import definitions as d
from ctxlab.replay.columns.feasible import FEASIBLE_RUN_COLUMNS
from ctxlab.replay.columns.registry import RunColumn
from ctxlab.replay.columns.runs_cost import COST_AND_FIDELITY
from ctxlab.replay.columns.stall import STALL_RUN_COLUMNS
from ctxlab.replay.failures import THRASH_CONSECUTIVE, THRASH_COUNT, THRASH_WINDOW, counted_declines

__all__ = ["RUN_REGISTRY"]

_Int, _Str, _Float, _Len, _Bool = pl.Int64, pl.String, pl.Float64, pl.UInt32, pl.Boolean


# the aggregations the entries are made of (ctxlab.replay.columns.aggregations)
_sum, _sum_or_null, _count, _streak, _in_window = a.sum_of, a.sum_or_null, a.count, a.streak, a.in_window
_saving, _ok, _cost, _pooled, _valid, _ok_cost = a.saving, a.ok, a.cost, a.pooled, a.valid, a.ok_cost

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
        "transcript_format",
        _Str,
        "label",
        "the format (agent) of the transcripts (several: joined by commas)",
        "run",
        ("transcript_format",),
        "distinct values",
        expr=lambda: pl.col("transcript_format").unique().sort().str.join(", "),
        over_runs="distinct values",
    ),
    RunColumn(
        "reached_threshold",
        _Bool,
        "flag",
        "the strategy's own trigger fired in some call of the run (trigger_reached; empty: a foreign "
        "middleware that does not say)",
        "compression",
        ("trigger_reached",),
        "any",
        expr=lambda: (
            pl.when(pl.col("trigger_reached").is_not_null().any())
            .then(pl.col("trigger_reached").fill_null(False).any())
            .otherwise(None)
        ),
        scope="summary",
        over_runs="-",
        detail=d.TRIGGER_REACHED,
        heading="reached_threshold, trigger_reached",
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
        "saving_pct over the valid calls: not built on a failed summary (a failed summary's saving is no "
        "saving) and not rejected by the provider (rejected_reason)",
        "view",
        ("view_tokens", "raw_tokens", "after_failed_summary", "rejected_reason"),
        _RATIO,
        expr=lambda: _saving(_ok("view_tokens"), _ok("raw_tokens")),
    ),
    *FEASIBLE_RUN_COLUMNS,
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
        "failed_outside_l2",
        _Int,
        "count",
        "failed calls (counted in summary_errors) whose level is not L2: a strategy's own compression "
        "error in a call without a summary round (Inspect's 'Compaction insufficient' after an edit), "
        "not a failed summary",
        "compression",
        ("summary_error", "summary_fallback", "level"),
        "count",
        expr=lambda: _count(
            (pl.col("summary_error").is_not_null() | pl.col("summary_fallback").is_not_null())
            & (pl.col("level") != "L2").fill_null(True)
        ),
    ),
    RunColumn(
        "declined_summaries",
        _Int,
        "count",
        "ctxlab rounds that wanted a summary but found no valid cutoff and sent a view above T2 (R13); "
        "a decision plugin's declines (hybrid's masking rounds, ars-cache's 'does not pay') are the "
        "strategy's design and not counted",
        "compression",
        ("summary_declined",),
        "count",
        expr=lambda: _count(counted_declines()),
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
        "rejected_calls",
        _Int,
        "count",
        "requests a provider would reject (rejected_reason: unmatched tool pairs, over the window)",
        "tool_pairs",
        ("rejected_reason",),
        "count",
        expr=lambda: _count(pl.col("rejected_reason").is_not_null()),
    ),
    RunColumn(
        "raw_rejected_calls",
        _Int,
        "count",
        "calls whose uncompressed request a provider would reject (raw_rejected_reason: the transcript's "
        "own unmatched tool pairs); they count in infeasible_calls",
        "tool_pairs",
        ("raw_rejected_reason",),
        "count",
        expr=lambda: _count(pl.col("raw_rejected_reason").is_not_null()),
    ),
    *COST_AND_FIDELITY,
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
    RunColumn(
        "unrecorded_prefix_tokens",
        _Int,
        "tokens",
        "the unrecorded prefix added to every request (0: none; ctxlab.replay.prefix)",
        "recorded_usage",
        ("unrecorded_prefix_tokens",),
        "max",
        expr=lambda: pl.col("unrecorded_prefix_tokens").max(),
        scope="summary",
        over_runs="-",
    ),
    RunColumn(
        "raw_over_recorded",
        _Float,
        "ratio",
        "median over the calls with recorded usage of raw_tokens / recorded_input_tokens (1: the raw "
        "estimate is the provider's count; empty: nothing recorded)",
        "recorded_usage",
        ("raw_tokens", "recorded_input_tokens"),
        "median ratio",
        expr=lambda: (pl.col("raw_tokens") / pl.col("recorded_input_tokens")).median(),
        scope="summary",
        over_runs="-",
    ),
    *STALL_RUN_COLUMNS,
)
