"""Statistics over runs: which runs a pooled figure uses, per-run values, the bootstrap interval
and the "no compression" rows; paired comparisons of two strategies are
:mod:`ctxlab.replay.paired`.

A strategy's pooled saving (``Σ sent / Σ raw`` over all its calls) is dominated by the longest
runs and says nothing of the runs that never reach T; the per-run view does: how many runs
reached T (n of N), the median and interquartile range of the per-run values, the pooled figure
beside them (:func:`per_run_stats`).  Strategies replay the same transcripts, so two of them are
compared **paired**: the per-run differences ``a − b`` of one per-run column of ``summary.csv``
(:func:`paired_comparison`, :meth:`ctxlab.replay.ReplayResult.compare`).

The interval is a **percentile bootstrap** over runs (Efron & Tibshirani, *An Introduction to the
Bootstrap*, 1993, ch. 13): the per-run differences are resampled with replacement
:data:`RESAMPLES` times with a seeded ``random.Random`` (:data:`SEED`), and the interval is the
``(1 − confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resampled means.  The same
seed, runs and column give the same interval.  With few runs the interval is wide and honest
about it; with one run it is that run's value.

``"no compression"`` (:data:`NO_COMPRESSION`) is a strategy here too: every run's uncompressed
requests (``raw_tokens_total``, ``raw_cost_usd``, a saving of 0, nothing summarized), so every
table has its row.

Which runs are pooled (:func:`pooled_runs`): by default the **real** ones
(:mod:`ctxlab.replay.sources`): a scripted sample or a synthetic history is not mixed into a
figure about real agent runs unless asked (``data="all"``, or a list of provenances); when no run
is real, all runs are used and the label says so.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from ctxlab.replay.sources import DATA_PROVENANCES
from ctxlab.replay.stratified import check_bootstrap

__all__ = [
    "CONFIDENCE",
    "MIN_PAIRED_RUNS",
    "NO_COMPRESSION",
    "OBJECTIVES",
    "RESAMPLES",
    "SEED",
    "PooledRuns",
    "bootstrap_mean",
    "per_run_values",
    "pooled_runs",
    "strategy_names",
    "with_no_compression",
]

#: the pseudo-strategy of the uncompressed requests
NO_COMPRESSION = "no compression"
#: bootstrap resamples, seed and confidence level of every interval ctxlab reports
RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
#: the fewest paired runs on which a difference is called (a winner named, "B lower"): with
#: fewer, even runs that all agree in sign cannot exclude no difference at the 95 % level (a
#: two-sided sign test on n runs that all agree has p = 2 · 0.5**n, below 0.05 from n = 6 on),
#: and a percentile bootstrap over so few values is an interval only in name
MIN_PAIRED_RUNS = 6

#: the objectives of a verdict: name -> (per-run column of ``summary.csv``, better direction);
#: the savings are over the calls whose uncompressed request fits the provider's window (a saving
#: against a request no agent could send is no saving; every call without a window)
OBJECTIVES: dict[str, tuple[str, str]] = {
    "tokens": ("saving_pct_feasible", "higher"),
    "dollars with caching": ("cost_saving_pct_feasible", "higher"),
    "identifier recall": ("needed_recall", "higher"),
}

#: what "no compression" has in a per-run column (absent: empty, nothing to measure)
_UNCOMPRESSED: dict[str, str | float] = {
    "sent_tokens_total": "raw_tokens_total",
    "cost_usd": "raw_cost_usd",
    "saving_pct": 0.0,
    "saving_pct_without_failed": 0.0,
    "saving_pct_feasible": 0.0,
    "raw_tokens_feasible": "raw_tokens_feasible",
    "raw_cost_usd_feasible": "raw_cost_usd_feasible",
    "cost_saving_pct": 0.0,
    "cost_saving_pct_feasible": 0.0,
    "raw_tokens_total": "raw_tokens_total",
    "raw_cost_usd": "raw_cost_usd",
    **dict.fromkeys(
        (
            "l1_rounds",
            "l2_rounds",
            "summary_errors",
            "fallback_summaries",
            "declined_summaries",
            "rejected_summaries",
            "overflow_rounds",
            "summarizer_calls",
            "summarizer_input_tokens",
            "summarizer_output_tokens",
            "summarizer_cost_usd",
            "unmatched_tool_pairs",
            "max_consecutive_summaries",
            "max_summaries_in_window",
        ),
        0.0,
    ),
}


@dataclass(frozen=True)
class PooledRuns:
    """The runs a pooled view uses.

    Attributes:
        summary: the rows of ``summary.csv`` kept (one per transcript × strategy).
        data: the provenances kept (a subset of :data:`~ctxlab.replay.sources.DATA_PROVENANCES`).
        label: how a figure or table names them (``"real runs"``, ``"all runs"``,
            ``"all runs, none real: scripted"``; no parentheses, it is often said inside some).
        left_out: transcripts left out per provenance (``{"scripted": 1}``).
    """

    summary: pl.DataFrame
    data: tuple[str, ...]
    label: str
    left_out: dict[str, int]

    def over(self) -> str:
        """What a pooled line or figure is over: ``"real runs of 240 transcript(s)"``."""
        n = self.summary["transcript"].n_unique() if self.summary.height else 0
        return f"{self.label} of {n} transcript(s)"


def pooled_runs(summary: pl.DataFrame, data: str | Sequence[str] = "real") -> PooledRuns:
    """The rows of ``summary`` a pooled view uses (module docstring).

    Args:
        summary: ``summary.csv``'s frame (:func:`ctxlab.replay.table.summary_frame`), or the
            per-call frame (any frame with ``transcript`` and ``data_provenance``).
        data: ``"real"`` (default: real runs; all runs when none is real), ``"all"``, or the
            provenances to keep (``["real", "scripted"]``).

    Raises:
        ValueError: a provenance that is not one of ``real``, ``scripted``, ``synthetic``.
    """
    wanted = DATA_PROVENANCES if data == "all" else ((data,) if isinstance(data, str) else tuple(data))
    bad = [d for d in wanted if d not in DATA_PROVENANCES]
    if bad:
        raise ValueError(f"data={bad[0]!r} is invalid: allowed 'all' or any of {list(DATA_PROVENANCES)}")
    have = summary["data_provenance"].to_list() if summary.height else []
    if data == "real" and have and "real" not in have:
        kinds = ", ".join(sorted(set(have)))
        return PooledRuns(summary, DATA_PROVENANCES, f"all runs, none real: {kinds}", {})
    kept = summary.filter(pl.col("data_provenance").is_in(list(wanted)))
    out = summary.filter(~pl.col("data_provenance").is_in(list(wanted)))
    left = {
        str(k): int(n)
        for k, n in out.group_by("data_provenance")
        .agg(pl.col("transcript").n_unique())
        .sort("data_provenance")
        .iter_rows()
    }
    label = "all runs" if set(wanted) == set(DATA_PROVENANCES) else " and ".join(wanted) + " runs"
    return PooledRuns(kept, tuple(wanted), label, left)


def per_run_values(summary: pl.DataFrame, strategy: str, column: str) -> dict[str, float | None]:
    """``{transcript: value}`` of one per-run column for one strategy (``None``: an empty cell);
    :data:`NO_COMPRESSION` reads the uncompressed requests of the first strategy of each
    transcript.

    Raises:
        KeyError: ``column`` is not a column of ``summary``.
        ValueError: ``strategy`` is not in ``summary``.

    For :data:`NO_COMPRESSION` a column without an uncompressed value (``needed_recall``: nothing
    was summarized) is ``None`` for every transcript.
    """
    if column not in summary.columns:
        raise KeyError(f"no per-run column {column!r}; known: {summary.columns}")
    if strategy == NO_COMPRESSION:
        firsts = summary.unique("transcript", keep="first", maintain_order=True)
        source = _UNCOMPRESSED.get(column)
        out: dict[str, float | None] = {}
        for row in firsts.iter_rows(named=True):
            value = row[source] if isinstance(source, str) else source
            out[str(row["transcript"])] = None if value is None else float(value)
        return out
    rows = summary.filter(pl.col("strategy") == strategy)
    if rows.is_empty():
        known = [NO_COMPRESSION, *summary["strategy"].unique(maintain_order=True).to_list()]
        raise ValueError(f"strategy {strategy!r} is not in the runs; known: {known}")
    return {
        str(t): (None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
        for t, v in rows.select("transcript", column).iter_rows()
    }


def bootstrap_mean(
    values: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``values`` and its percentile-bootstrap interval
    (module docstring).

    Raises:
        ValueError: no values; ``confidence`` outside (0, 1); ``resamples`` below 1.
    """
    check_bootstrap("bootstrap_mean", len(values), confidence, resamples)
    mean = statistics.fmean(values)
    if len(values) == 1:
        return mean, mean, mean
    rng = random.Random(seed)
    n = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0
    return mean, _quantile(means, tail), _quantile(means, 1.0 - tail)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, linear between the closest ranks."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def strategy_names(summary: pl.DataFrame) -> list[str]:
    """:data:`NO_COMPRESSION`, then the strategies of ``summary`` in order."""
    return [NO_COMPRESSION, *(str(s) for s in summary["strategy"].unique(maintain_order=True).to_list())]


def with_no_compression(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (the strategy totals, ``summary.csv``'s frame or the cost table) with a
    :data:`NO_COMPRESSION` row first (per transcript when the frame has ``transcript``): the
    uncompressed requests of the first strategy's row (``sent_tokens_total`` = ``raw_tokens_total``,
    ``cost_usd`` = ``raw_cost_usd``, savings 0, no rounds); columns with no such value are empty."""
    if frame.is_empty() or "strategy" not in frame.columns:
        return frame
    keys = ["transcript"] if "transcript" in frame.columns else []
    firsts = frame.unique(keys, keep="first", maintain_order=True) if keys else frame.head(1)
    same = {
        "transcript",
        "data_provenance",
        "transcript_format",
        "transcripts",
        "calls",
        "max_raw_tokens",
        "infeasible_calls",
        "infeasible_share",
        "unrecorded_prefix_tokens",
        "raw_over_recorded",
        "recorded_input_tokens_total",
    }
    exprs: list[pl.Expr] = []
    for name, dtype in frame.schema.items():
        source = _UNCOMPRESSED.get(name)
        if name == "strategy":
            value = pl.lit(NO_COMPRESSION)
        elif name in same:
            value = pl.col(name)
        elif name == "max_view_tokens":
            value = pl.col("max_raw_tokens")
        elif name == "cost_per_call_usd" and "raw_cost_usd" in frame.columns:
            value = pl.col("raw_cost_usd") / pl.col("calls")
        elif isinstance(source, str) and source in frame.columns:
            value = pl.col(source)
        elif isinstance(source, float):
            value = pl.lit(source)
        else:
            value = pl.lit(None)
        exprs.append(value.cast(dtype).alias(name))
    return pl.concat([firsts.select(exprs), frame], how="vertical")
