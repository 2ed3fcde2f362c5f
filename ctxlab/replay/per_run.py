"""Per-run statistics of a replay: per strategy, the distribution of a per-run column over all
its runs, over the runs whose own trigger fired and over the runs it compressed, beside the
pooled figure (:func:`per_run_stats`).

A strategy's pooled saving (``Σ sent / Σ raw`` over all its calls) is dominated by the longest
runs and says nothing of the runs that never reach T; the per-run view does: how many runs
reached the strategy's own trigger and how many it compressed (n of N), the mean over those it
compressed beside the mean over all (the headline names both,
:mod:`ctxlab.analysis.verdicts`), the median and interquartile range, the pooled figure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import polars as pl

from ctxlab.replay.stats import NO_COMPRESSION, per_run_values, pooled_runs, strategy_names

__all__ = ["compressed", "compressed_runs", "per_run_stats", "reached_runs", "reached_transcripts"]


def _quartiles(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def per_run_stats(
    summary: pl.DataFrame,
    *,
    data: str | Sequence[str] = "real",
    threshold: float | None = None,
    column: str = "saving_pct",
) -> pl.DataFrame:
    """Per strategy (:data:`NO_COMPRESSION` first): the per-run distribution of ``column`` beside
    the pooled figure, over all runs and over the runs it acted on.

    Columns: ``strategy``; ``runs`` (N); ``reached`` (the runs whose own trigger fired,
    :func:`reached_runs`: ctxlab's estimate reached T, LangChain's or DeepAgents' counter reached
    theirs, the agent itself cut the request for ``recorded``; for no compression, the runs whose
    uncompressed request reaches T); ``compressed`` (the runs with at least one L1 or L2 round,
    :func:`compressed_runs`); ``mean`` (over all N runs) and ``mean_compressed`` (over the
    compressed ones: the saving where the strategy acted, never diluted by runs it left alone);
    ``median``, ``q1``, ``q3`` (over all N runs); ``median_reached``, ``q1_reached``,
    ``q3_reached`` (over the runs that reached the strategy's trigger); ``pooled``
    (``saving_pct`` of the pooled sums, for ``column="saving_pct"``; ``cost_saving_pct`` of the
    pooled costs for ``"cost_saving_pct"``; the feasible variants alike; else empty); ``data``
    (the runs used, :func:`pooled_runs`).

    Args:
        summary: ``summary.csv``'s frame.
        data: which runs (:func:`pooled_runs`).
        threshold: T in tokens: a run whose uncompressed request reaches it reached T for no
            compression, and for a strategy that does not say whether its trigger fired.
        column: the per-run column (default ``saving_pct``).
    """
    pool = pooled_runs(summary, data)
    rows = pool.summary
    out: list[dict[str, Any]] = []
    for name in strategy_names(rows) if rows.height else []:
        values = per_run_values(rows, name, column)
        reached = reached_runs(rows, name, threshold)
        acted = compressed_runs(rows, name)
        got = [v for v in values.values() if v is not None]
        at_t = [v for t, v in values.items() if v is not None and t in reached]
        done = [v for t, v in values.items() if v is not None and t in acted]
        q1, med, q3 = _quartiles(got)
        r1, rmed, r3 = _quartiles(at_t)
        out.append(
            {
                "strategy": name,
                "runs": len(values),
                "reached": sum(1 for t in values if t in reached),
                "compressed": sum(1 for t in values if t in acted),
                "mean": statistics.fmean(got) if got else None,
                "mean_compressed": statistics.fmean(done) if done else None,
                "median": med,
                "q1": q1,
                "q3": q3,
                "median_reached": rmed,
                "q1_reached": r1,
                "q3_reached": r3,
                "pooled": _pooled(rows, name, column),
                "data": pool.label,
            }
        )
    floats = ("mean", "mean_compressed", "median", "q1", "q3", "median_reached", "q1_reached", "q3_reached")
    schema = {
        "strategy": pl.String,
        "runs": pl.Int64,
        "reached": pl.Int64,
        "compressed": pl.Int64,
        **dict.fromkeys(floats, pl.Float64),
        "pooled": pl.Float64,
        "data": pl.String,
    }
    return pl.DataFrame(out, schema=schema, orient="row")


def reached_transcripts(summary: pl.DataFrame, threshold: float | None = None) -> set[str]:
    """The transcripts whose uncompressed request reaches T: ``max_raw_tokens >= threshold``
    (the request with the unrecorded prefix, :mod:`ctxlab.replay.prefix`); without a threshold,
    those where some strategy's own trigger fired (``reached_threshold``)."""
    out: set[str] = set()
    for row in summary.iter_rows(named=True):
        if threshold is not None:
            flag = (row.get("max_raw_tokens") or 0) >= threshold
        else:
            flag = bool(row.get("reached_threshold"))
        if flag:
            out.add(str(row["transcript"]))
    return out


def reached_runs(summary: pl.DataFrame, strategy: str, threshold: float | None = None) -> set[str]:
    """The transcripts where ``strategy``'s own trigger fired (``reached_threshold``; a run that
    does not say falls back on its uncompressed request against ``threshold``), and every run it
    compressed (:func:`compressed_runs`: a trigger that is not a token count, e.g. ADK's event
    window, fired there whatever the request's size); :data:`NO_COMPRESSION`:
    :func:`reached_transcripts`."""
    if strategy == NO_COMPRESSION:
        return reached_transcripts(summary, threshold)
    out: set[str] = compressed_runs(summary, strategy)
    for row in summary.filter(pl.col("strategy") == strategy).iter_rows(named=True):
        flag = row.get("reached_threshold")
        if flag is None and threshold is not None:
            flag = (row.get("max_raw_tokens") or 0) >= threshold
        if flag:
            out.add(str(row["transcript"]))
    return out


def compressed_runs(summary: pl.DataFrame, strategy: str) -> set[str]:
    """The transcripts where ``strategy`` compressed at least once: an L2 round, or an L1 round
    that sent fewer tokens than the raw requests (the ``recorded`` strategy: the agent's own
    compaction or truncation).  A round that changed nothing — masking before its keep window
    fills — compresses nothing, so its run is not counted.  None for :data:`NO_COMPRESSION`."""
    if strategy == NO_COMPRESSION or summary.is_empty():
        return set()
    acted = summary.filter((pl.col("strategy") == strategy) & compressed())
    return {str(t) for t in acted["transcript"].to_list()}


def compressed() -> pl.Expr:
    """Per run (a ``summary.csv`` row): the strategy compressed at least once (the rule of
    :func:`compressed_runs`: an L2 round, or an L1 round that sent fewer tokens than the raw
    requests); the one home of "compressed" for the verdicts and the terminal's runs table."""
    shrunk = pl.col("sent_tokens_total").fill_null(0) < pl.col("raw_tokens_total").fill_null(0)
    return (pl.col("l2_rounds").fill_null(0) > 0) | ((pl.col("l1_rounds").fill_null(0) > 0) & shrunk)


def _pooled(rows: pl.DataFrame, strategy: str, column: str) -> float | None:
    if strategy == NO_COMPRESSION:
        return 0.0 if column in _SAVINGS else None
    mine = rows.filter(pl.col("strategy") == strategy)
    pairs = {
        "saving_pct": ("sent_tokens_total", "raw_tokens_total"),
        "cost_saving_pct": ("cost_usd", "raw_cost_usd"),
    }
    if column in ("saving_pct_feasible", "cost_saving_pct_feasible"):
        return _pooled_feasible(mine, column)
    if column not in pairs:
        return None
    sent, raw = (mine[c].sum() for c in pairs[column])
    if raw is None or not raw or sent is None:
        return None
    return 100.0 * (1.0 - float(sent) / float(raw))


#: the per-run saving columns (no compression saves 0 in each)
_SAVINGS = ("saving_pct", "cost_saving_pct", "saving_pct_feasible", "cost_saving_pct_feasible")


def _pooled_feasible(mine: pl.DataFrame, column: str) -> float | None:
    """The pooled saving over the feasible calls of one strategy's runs: ``1 − Σ sent / Σ raw``
    over them, each run's feasible sent amount recovered from its feasible saving and raw total."""
    raw_col = "raw_tokens_feasible" if column == "saving_pct_feasible" else "raw_cost_usd_feasible"
    sent = raw = 0.0
    for row in mine.iter_rows(named=True):
        saving, whole = row.get(column), row.get(raw_col)
        if saving is None or not whole:
            continue
        raw += float(whole)
        sent += float(whole) * (1.0 - float(saving) / 100.0)
    return 100.0 * (1.0 - sent / raw) if raw else None
