"""The polars aggregations the per-run columns (:mod:`ctxlab.replay.columns.runs`) are made of:
each an expression over a group of per-call rows (one run, or a strategy's pooled calls)."""

from __future__ import annotations

import polars as pl

__all__ = [
    "cost",
    "count",
    "counted_cost",
    "counted_sent",
    "feasible",
    "fits",
    "in_window",
    "ok",
    "ok_cost",
    "pooled",
    "saving",
    "streak",
    "sum_of",
    "sum_or_null",
    "valid",
]


def sum_of(column: str) -> pl.Expr:
    """The sum of ``column``."""
    return pl.col(column).sum()


def sum_or_null(column: str) -> pl.Expr:
    """The sum, empty when every value is empty (no price row: no cost)."""
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum()).otherwise(None)


def count(condition: pl.Expr) -> pl.Expr:
    """How many rows meet ``condition`` (Int64)."""
    return condition.sum().cast(pl.Int64)


def streak(flag: pl.Expr) -> pl.Expr:
    """The longest run of consecutive true values (0: none), in the group's row order."""
    runs = flag.rle()
    return runs.filter(runs.struct.field("value")).struct.field("len").max().fill_null(0).cast(pl.Int64)


def in_window(flag: pl.Expr, window: int) -> pl.Expr:
    """The most true values within ``window`` consecutive rows (0: none)."""
    return flag.cast(pl.Int64).rolling_sum(window_size=window, min_samples=1).max().fill_null(0)


def saving(sent: pl.Expr, raw: pl.Expr) -> pl.Expr:
    """``100 × (1 − Σ sent / Σ raw)``; empty when ``Σ raw`` is not positive (or empty)."""
    return pl.when(raw > 0).then(100.0 * (1.0 - sent / raw)).otherwise(None)


def valid() -> pl.Expr:
    """The calls that count in the savings: not built on a failed summary, and not a request a
    provider would reject (``rejected_reason``)."""
    return ~pl.col("after_failed_summary") & pl.col("rejected_reason").is_null()


def ok(column: str) -> pl.Expr:
    """The sum over the valid calls (:func:`valid`)."""
    return pl.col(column).filter(valid()).sum()


def fits() -> pl.Expr:
    """The calls whose no-compression baseline is feasible: the uncompressed request fits the
    window (``over_window``; every call without a window) and a provider would accept its tool
    pairs (``raw_rejected_reason`` empty: the rule of ``rejected_reason``)."""
    return ~pl.col("over_window").fill_null(False) & pl.col("raw_rejected_reason").is_null()


def feasible(column: str, *, nullable: bool = False) -> pl.Expr:
    """The sum over the calls whose no-compression baseline is feasible (:func:`fits`); with
    ``nullable``, empty when every value is."""
    kept = pl.col(column).filter(fits())
    if nullable:
        return pl.when(kept.is_not_null().any()).then(kept.sum()).otherwise(None)
    return kept.sum()


def _failed() -> pl.Expr:
    """The calls whose request counts as a failure: the complement of :func:`valid` (built on a
    failed summary, or one a provider would reject), an empty flag read as no failure."""
    return ~valid().fill_null(True)


def counted_sent() -> pl.Expr:
    """The feasible tokens sent with a failure counted as a failure: a failed call
    (:func:`_failed`) counts its uncompressed request (``raw_tokens``), so a strategy that threw
    the history away in a fallback summary saves nothing by it (the verdicts' token measure)."""
    sent = pl.when(_failed()).then(pl.col("raw_tokens")).otherwise(pl.col("view_tokens"))
    return sent.filter(fits()).sum()


def counted_cost() -> pl.Expr:
    """:func:`cost` over the calls whose uncompressed request fits the window, a failed call's
    main-model cost counted as its uncompressed request's (``raw_cost_usd``); its summarizer
    cost stays (the failed call was paid for)."""
    ok_base = fits()
    main = pl.when(_failed()).then(pl.col("raw_cost_usd")).otherwise(pl.col("cost_usd")).filter(ok_base)
    summarizer = pl.col("summarizer_cost_usd").filter(ok_base).fill_null(0.0).sum()
    return pl.when(pl.col("cost_usd").is_not_null().any()).then(main.sum() + summarizer).otherwise(None)


def cost() -> pl.Expr:
    """The main model's cost plus the summarizer's (empty without a price row)."""
    return sum_or_null("cost_usd") + pl.col("summarizer_cost_usd").fill_null(0.0).sum()


def ok_cost() -> pl.Expr:
    """:func:`cost` over the valid calls (:func:`valid`; empty without a price row)."""
    main = pl.col("cost_usd").filter(valid())
    summarizer = pl.col("summarizer_cost_usd").filter(valid()).fill_null(0.0).sum()
    return pl.when(pl.col("cost_usd").is_not_null().any()).then(main.sum() + summarizer).otherwise(None)


def pooled(carried: str, identifiers: str) -> pl.Expr:
    """``Σ carried / Σ identifiers``; empty when there is no identifier."""
    whole = pl.col(identifiers).sum()
    return pl.when(whole > 0).then(pl.col(carried).sum() / whole).otherwise(None)
