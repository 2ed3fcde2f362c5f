"""The per-call table of a replay: its columns, its polars schema and its aggregations.

One row per model call (:data:`CALL_COLUMNS`, typed as :class:`CallRow`); ``summary.csv`` has
one row per transcript × strategy (:data:`SUMMARY_COLUMNS`).  Token columns are estimates in
tokens by the run's measuring estimator; ``overhead_ms`` is milliseconds of wall time; ``*_usd``
columns are US dollars under the run's price row (:mod:`ctxlab.replay.cost`); the fidelity counts
are distinct identifiers (:mod:`ctxlab.replay.fidelity`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import polars as pl

from ctxlab.replay.metrics import VIEW_PARTS

__all__ = [
    "CALLS_SCHEMA",
    "CALL_COLUMNS",
    "MEASURE_COLUMNS",
    "SUMMARY_COLUMNS",
    "TOTALS_COLUMNS",
    "CallRow",
    "calls_frame",
    "strategy_totals",
    "summary_frame",
]


class CallRow(TypedDict):
    """One model call of a replay: a row of :data:`CALLS_SCHEMA`, the same keys in the same order
    (``None`` is an empty cell).  Definitions: :data:`ctxlab.replay.metrics.METRIC_DEFINITIONS`.

    Attributes:
        transcript, strategy: the run's labels.
        call_index: the model call's position in the run (0-based).
        message_index: the recorded assistant message's position in the transcript.
        raw_tokens: estimate of the uncompressed request (tokens).
        view_tokens: estimate of the request sent, split into ``view_<part>_tokens`` for each
            part of :data:`ctxlab.replay.metrics.VIEW_PARTS` (tokens).
        view_messages: messages in the view sent.
        level: ``"none"``, ``"L1"`` or ``"L2"``.
        cutoff_index: the L2 cutoff set by this call; state_cutoff_index: the one in effect after.
        offloaded, truncated_args: tool results offloaded and arguments truncated by L1.
        summarizer_calls, summarizer_input_tokens, summarizer_output_tokens: the L2 summarizer.
        summary_error: why this call's L2 summary failed: the summarizer's error, or "the summary
            has no text" (``None``: no L2 round, or it succeeded).
        after_failed_summary: this call's request was built on a failed summary: its own L2
            round's, or an earlier one's in this run (its saving is not a real saving).
        forced_by_overflow: the round was forced by a context overflow (R12).
        overflow_errors: requests of this call the provider stand-in refused with
            ``ContextOverflowError`` (0 without a context window).
        overhead_ms: wall time inside the middleware minus the model handler (milliseconds).
        cache_reusable_tokens, cache_reusable_share: the prompt-cache reusable prefix.
        retention: share of earlier identifiers still in the view (``None``: none mentioned).
        threshold, l2_threshold: T and T2 (tokens; ``None`` for a foreign middleware).
        unmatched_tool_pairs: broken tool pairs in the view (must be 0).
        output_tokens: the recorded answer's tokens; cache_read_tokens, cache_write_tokens: the
            input tokens read from / written to the provider's prompt cache (:mod:`ctxlab.replay.cost`).
        cost_usd, summarizer_cost_usd, raw_cost_usd: the call's cost in USD with prompt caching,
            its summarizer's, and the uncompressed request's (``None`` without a price row).
        span_identifiers, span_carried, needed_identifiers, needed_carried: the L2 round's summary
            fidelity counts (:mod:`ctxlab.replay.fidelity`; ``None`` without an L2 round).
    """

    transcript: str
    strategy: str
    call_index: int
    message_index: int
    raw_tokens: int
    view_tokens: int
    view_system_tokens: int
    view_user_tokens: int
    view_assistant_tokens: int
    view_tool_tokens: int
    view_summary_tokens: int
    view_messages: int
    level: str
    cutoff_index: int | None
    state_cutoff_index: int | None
    offloaded: int
    truncated_args: int
    summarizer_calls: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    summary_error: str | None
    after_failed_summary: bool
    forced_by_overflow: bool
    overflow_errors: int
    overhead_ms: float
    cache_reusable_tokens: int
    cache_reusable_share: float | None
    retention: float | None
    threshold: float | None
    l2_threshold: float | None
    unmatched_tool_pairs: int
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    summarizer_cost_usd: float | None
    raw_cost_usd: float | None
    span_identifiers: int | None
    span_carried: int | None
    needed_identifiers: int | None
    needed_carried: int | None


#: polars schema of the per-call frame (also for an empty frame); its keys are :class:`CallRow`'s
CALLS_SCHEMA: dict[str, Any] = {
    "transcript": pl.String,
    "strategy": pl.String,
    "call_index": pl.Int64,
    "message_index": pl.Int64,
    "raw_tokens": pl.Int64,
    "view_tokens": pl.Int64,
    **{f"view_{p}_tokens": pl.Int64 for p in VIEW_PARTS},
    "view_messages": pl.Int64,
    "level": pl.String,
    "cutoff_index": pl.Int64,
    "state_cutoff_index": pl.Int64,
    "offloaded": pl.Int64,
    "truncated_args": pl.Int64,
    "summarizer_calls": pl.Int64,
    "summarizer_input_tokens": pl.Int64,
    "summarizer_output_tokens": pl.Int64,
    "summary_error": pl.String,
    "after_failed_summary": pl.Boolean,
    "forced_by_overflow": pl.Boolean,
    "overflow_errors": pl.Int64,
    "overhead_ms": pl.Float64,
    "cache_reusable_tokens": pl.Int64,
    "cache_reusable_share": pl.Float64,
    "retention": pl.Float64,
    "threshold": pl.Float64,
    "l2_threshold": pl.Float64,
    "unmatched_tool_pairs": pl.Int64,
    # cost and summary fidelity (ctxlab.replay.run_measures)
    "output_tokens": pl.Int64,
    "cache_read_tokens": pl.Int64,
    "cache_write_tokens": pl.Int64,
    "cost_usd": pl.Float64,
    "summarizer_cost_usd": pl.Float64,
    "raw_cost_usd": pl.Float64,
    "span_identifiers": pl.Int64,
    "span_carried": pl.Int64,
    "needed_identifiers": pl.Int64,
    "needed_carried": pl.Int64,
}

#: the cost and summary-fidelity columns of a group of calls (the last of :data:`SUMMARY_COLUMNS`)
MEASURE_COLUMNS = (
    "cost_usd",
    "summarizer_cost_usd",
    "raw_cost_usd",
    "cost_saving_pct",
    "span_recall",
    "needed_recall",
)

#: columns of ``summary.csv``, one row per transcript × strategy
SUMMARY_COLUMNS = (
    "transcript",
    "strategy",
    "calls",
    "raw_tokens_total",
    "sent_tokens_total",
    "saving_pct",
    "saving_pct_without_failed",
    "l1_rounds",
    "l2_rounds",
    "summary_errors",
    "overflow_rounds",
    "summarizer_calls",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
    "mean_overhead_ms",
    "mean_cache_reusable_share",
    "mean_retention",
    "max_view_tokens",
    "max_raw_tokens",
    "unmatched_tool_pairs",
    *MEASURE_COLUMNS,
)
#: the totals of a group of calls: :data:`SUMMARY_COLUMNS` without ``transcript`` and ``strategy``
TOTALS_COLUMNS = SUMMARY_COLUMNS[2:]


def calls_frame(rows: Sequence[CallRow] | Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """The per-call rows (:class:`CallRow`) as a DataFrame with the fixed :data:`CALLS_SCHEMA`;
    a key a row lacks is an empty cell."""
    if not rows:
        return pl.DataFrame(schema=CALLS_SCHEMA)
    return pl.DataFrame(
        [{k: r.get(k) for k in CALLS_SCHEMA} for r in rows], schema=CALLS_SCHEMA, orient="row"
    )


def _aggregations() -> list[pl.Expr]:
    return [
        pl.len().alias("calls"),
        pl.col("raw_tokens").sum().alias("raw_tokens_total"),
        pl.col("view_tokens").sum().alias("sent_tokens_total"),
        (pl.col("level") == "L1").sum().cast(pl.Int64).alias("l1_rounds"),
        (pl.col("level") == "L2").sum().cast(pl.Int64).alias("l2_rounds"),
        pl.col("summary_error").is_not_null().sum().cast(pl.Int64).alias("summary_errors"),
        (pl.col("overflow_errors") > 0).sum().cast(pl.Int64).alias("overflow_rounds"),
        pl.col("raw_tokens").filter(~pl.col("after_failed_summary")).sum().alias("_raw_ok"),
        pl.col("view_tokens").filter(~pl.col("after_failed_summary")).sum().alias("_sent_ok"),
        pl.col("summarizer_calls").sum().alias("summarizer_calls"),
        pl.col("summarizer_input_tokens").sum().alias("summarizer_input_tokens"),
        pl.col("summarizer_output_tokens").sum().alias("summarizer_output_tokens"),
        pl.col("overhead_ms").mean().alias("mean_overhead_ms"),
        pl.col("cache_reusable_share").mean().alias("mean_cache_reusable_share"),
        pl.col("retention").mean().alias("mean_retention"),
        pl.col("view_tokens").max().alias("max_view_tokens"),
        pl.col("raw_tokens").max().alias("max_raw_tokens"),
        pl.col("unmatched_tool_pairs").sum().alias("unmatched_tool_pairs"),
        *_measure_aggregations(),
    ]


def _sum_or_null(column: str) -> pl.Expr:
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum()).otherwise(None)


def _pooled(carried: str, identifiers: str) -> pl.Expr:
    whole = pl.col(identifiers).sum()
    return pl.when(whole > 0).then(pl.col(carried).sum() / whole).otherwise(None)


def _measure_aggregations() -> list[pl.Expr]:
    """Cost (the summarizer's included in ``cost_usd``) and pooled fidelity recalls."""
    return [
        (_sum_or_null("cost_usd") + pl.col("summarizer_cost_usd").fill_null(0.0).sum()).alias("cost_usd"),
        _sum_or_null("summarizer_cost_usd").alias("summarizer_cost_usd"),
        _sum_or_null("raw_cost_usd").alias("raw_cost_usd"),
        _pooled("span_carried", "span_identifiers").alias("span_recall"),
        _pooled("needed_carried", "needed_identifiers").alias("needed_recall"),
    ]


def _saving_pct(sent: str, raw: str) -> pl.Expr:
    """``100 × (1 − Σ sent / Σ raw)`` of two summed columns; empty when ``raw`` is not positive."""
    return pl.when(pl.col(raw) > 0).then(100.0 * (1.0 - pl.col(sent) / pl.col(raw))).otherwise(None)


def _savings() -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """``saving_pct`` (tokens), ``saving_pct_without_failed`` (tokens, over the calls whose request
    was not built on a failed summary; empty when there is none) and ``cost_saving_pct`` (US
    dollars) of the aggregated rows."""
    return (
        _saving_pct("sent_tokens_total", "raw_tokens_total").alias("saving_pct"),
        _saving_pct("_sent_ok", "_raw_ok").alias("saving_pct_without_failed"),
        _saving_pct("cost_usd", "raw_cost_usd").alias("cost_saving_pct"),
    )


def summary_frame(calls: pl.DataFrame) -> pl.DataFrame:
    """One row per transcript × strategy (:data:`SUMMARY_COLUMNS`), in first-seen order.

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
        return pl.DataFrame(schema={c: pl.Float64 for c in SUMMARY_COLUMNS}).with_columns(
            pl.col("transcript").cast(pl.String), pl.col("strategy").cast(pl.String)
        )
    out = calls.group_by(["transcript", "strategy"], maintain_order=True).agg(_aggregations())
    return out.with_columns(*_savings()).select(SUMMARY_COLUMNS)


def strategy_totals(calls: pl.DataFrame) -> pl.DataFrame:
    """One row per strategy over all transcripts: totals, saving % and means."""
    if calls.is_empty():
        return pl.DataFrame(
            schema={"strategy": pl.String, "transcripts": pl.Int64, **{c: pl.Float64 for c in TOTALS_COLUMNS}}
        )
    out = calls.group_by("strategy", maintain_order=True).agg(
        [pl.col("transcript").n_unique().alias("transcripts"), *_aggregations()]
    )
    return out.with_columns(*_savings()).select("strategy", "transcripts", *TOTALS_COLUMNS)


#: the per-call row's columns, in order
CALL_COLUMNS: tuple[str, ...] = tuple(CALLS_SCHEMA)
