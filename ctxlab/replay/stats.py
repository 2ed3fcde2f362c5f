"""Statistics over runs: which runs a pooled figure uses, per-run distributions, and paired
comparisons of two strategies with a bootstrap confidence interval.

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
from typing import Any

import polars as pl

from ctxlab.replay.sources import DATA_PROVENANCES
from ctxlab.replay.stratified import balanced_mean, check_bootstrap, run_sources, source_balanced

__all__ = [
    "CONFIDENCE",
    "MIN_PAIRED_RUNS",
    "NO_COMPRESSION",
    "OBJECTIVES",
    "RESAMPLES",
    "SEED",
    "PairedComparison",
    "PooledRuns",
    "bootstrap_mean",
    "comparison_table",
    "differing_pairs",
    "paired_comparison",
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


@dataclass(frozen=True)
class PairedComparison:
    """Two strategies compared on the same runs (:func:`paired_comparison`).

    Attributes:
        a, b: the strategies; measure: the per-run column compared (its unit is the column's).
        runs: the runs with a value for both (the pairs); dropped: runs where either is empty.
        mean_a, mean_b: the means of each over the pairs, weighted as ``difference`` is
            (source-balanced with several sources), so that ``mean_a − mean_b`` is ``difference``
            (``None``: no pair); ``plain_a``, ``plain_b``: the plain means over the pairs.
        difference: the mean per-run difference ``a − b`` (``None``: no pair).
        low, high: its bootstrap interval at ``confidence`` (``None``: no pair).
        confidence, resamples, seed: how the interval was drawn.
        data: which runs were used (:attr:`PooledRuns.label`).
        sources: the sources (formats) the pairs come from; with more than one, ``difference`` is
            the source-balanced mean and the interval a bootstrap stratified by source
            (:mod:`ctxlab.replay.stratified`), so that no one source carries it.
        differing: the pairs whose two values differ (``None``: as many as :attr:`runs`).  A pair
            with equal values (a run neither strategy acted on) is a tie: like the sign test, the
            verdict rule counts only the pairs that differ (:attr:`too_few`), so ten runs below
            T beside one that reached it are one run of evidence, not eleven.
    """

    a: str
    b: str
    measure: str
    runs: int
    dropped: int
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    low: float | None
    high: float | None
    confidence: float = CONFIDENCE
    resamples: int = RESAMPLES
    seed: int = SEED
    data: str = "all runs"
    sources: int = 1
    differing: int | None = None
    plain_a: float | None = None
    plain_b: float | None = None

    @property
    def evidence(self) -> int:
        """The pairs that carry a sign: :attr:`differing` (:attr:`runs` when not counted)."""
        return self.runs if self.differing is None else self.differing

    def differing_said(self, form: str = ", {} differ") -> str:
        """``form`` with the pairs that differ (``", 10 differ"``) when some pairs are ties (they
        carry no sign), else ``""``: how the texts of a comparison say its evidence."""
        return form.format(self.evidence) if self.evidence != self.runs else ""

    def interval_said(self, fmt: str, *, paired: bool = False, scale: float = 1.0) -> str:
        """How every text of a comparison says its interval: ``"95 % CI {low} to {high}"`` (each
        through ``fmt``), or why there is none — ``"no interval from 1 run"`` (a bootstrap of one
        value is that value), ``"no interval: 2 of 3 differ, < 6"`` (:attr:`too_few`: the
        verdict rule calls no difference then, so no interval is shown that would look like one),
        ``"no run has both values"``.  ``paired``: say "paired run"; ``scale``: the bounds are
        multiplied by it first (100: shares as points)."""
        run = "paired run" if paired else "run"
        if self.difference is None or self.low is None or self.high is None or not self.runs:
            return f"no {run} has both values"
        if self.runs == 1:
            return f"no interval from 1 {run}"
        if self.too_few:
            return f"no interval: {self.evidence} of {self.runs} differ, < {MIN_PAIRED_RUNS}"
        low, high = fmt.format(scale * self.low), fmt.format(scale * self.high)
        return f"{round(100 * self.confidence)} % CI {low} to {high}"

    @property
    def holds_zero(self) -> bool:
        """The interval holds 0: no detectable difference (also when there is no pair)."""
        return self.low is None or self.high is None or self.low <= 0.0 <= self.high

    @property
    def too_few(self) -> bool:
        """Fewer than :data:`MIN_PAIRED_RUNS` pairs that differ (:attr:`evidence`; ties do not
        count, as in a sign test): no difference is called, whatever the interval."""
        return self.evidence < MIN_PAIRED_RUNS

    @property
    def decides(self) -> bool:
        """A difference is called: enough pairs (:attr:`too_few`) and an interval without 0."""
        return not self.too_few and not self.holds_zero

    def as_dict(self) -> dict[str, Any]:
        """The comparison as a flat dict (one row of :func:`comparison_table`)."""
        return {
            "a": self.a,
            "b": self.b,
            "measure": self.measure,
            "runs": self.runs,
            "differ": self.evidence,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "difference": self.difference,
            "low": None if self.too_few else self.low,
            "high": None if self.too_few else self.high,
            "plain_a": self.plain_a,
            "plain_b": self.plain_b,
        }

    def __str__(self) -> str:
        if self.difference is None or self.low is None or self.high is None:
            return f"{self.a} vs {self.b} on {self.measure}: no run has both values"
        big = max(abs(self.difference), abs(self.low), abs(self.high)) >= 10
        fmt = "{:+,.1f}" if big else "{:+.4f}"
        strata = f" in {self.sources} sources, source-balanced" if self.sources > 1 else ""
        interval = self.interval_said(fmt)
        if self.runs > 1 and not self.too_few:
            interval += f", {self.runs} runs{strata}{self.differing_said()}"
        call = (
            "; too few runs to call: no difference can be excluded" if self.too_few and self.runs > 1 else ""
        )
        return f"{self.a} − {self.b} on {self.measure}: {fmt.format(self.difference)} per run ({interval}, {self.data}){call}"


def paired_comparison(
    summary: pl.DataFrame,
    a: str,
    b: str,
    measure: str = "saving_pct",
    *,
    data: str | Sequence[str] = "real",
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    by_source: bool = True,
) -> PairedComparison:
    """Compare strategies ``a`` and ``b`` on one per-run column, paired by transcript.

    Args:
        summary: ``summary.csv``'s frame (one row per transcript × strategy).
        a, b: strategy labels, or :data:`NO_COMPRESSION`.
        measure: a numeric per-run column (``saving_pct``, ``cost_usd``, ``cost_saving_pct``,
            ``needed_recall``, ``sent_tokens_total``, ...).
        data: which runs (:func:`pooled_runs`; default the real ones).
        confidence, resamples, seed: the bootstrap (module docstring).
        by_source: with runs from several sources (formats), the source-balanced mean difference
            and a bootstrap stratified by source (:func:`ctxlab.replay.stratified.balanced_mean`);
            ``False``: the plain mean over runs.

    Returns:
        A :class:`PairedComparison`; a run where either value is empty (``needed_recall`` of a
        run without L2 rounds) is dropped and counted.

    Raises:
        KeyError: an unknown column.  ValueError: an unknown strategy, or a bad ``data``.
    """
    pool = pooled_runs(summary, data)
    va = per_run_values(pool.summary, a, measure)
    vb = per_run_values(pool.summary, b, measure)
    both = [t for t in va if t in vb]
    pairs = [(va[t], vb[t]) for t in both if va[t] is not None and vb[t] is not None]
    dropped = len(both) - len(pairs)
    if not pairs:
        return PairedComparison(a, b, measure, 0, dropped, None, None, None, None, None, data=pool.label)
    diffs = [x - y for x, y in pairs]  # type: ignore[operator]
    runs = [t for t in both if va[t] is not None and vb[t] is not None]
    sources = run_sources(pool.summary)
    n_sources = len({sources.get(t, t) for t in runs})
    balanced = by_source and n_sources > 1
    plain_a = statistics.fmean(float(x) for x, _ in pairs)  # type: ignore[arg-type]
    plain_b = statistics.fmean(float(y) for _, y in pairs)  # type: ignore[arg-type]
    mean_a, mean_b = plain_a, plain_b
    if balanced:  # weighted as the difference is, so that mean_a − mean_b is it
        mean_a = source_balanced({t: float(x) for t, (x, _) in zip(runs, pairs, strict=True)}, sources)  # type: ignore[arg-type]
        mean_b = source_balanced({t: float(y) for t, (_, y) in zip(runs, pairs, strict=True)}, sources)  # type: ignore[arg-type]
    if balanced:
        est = balanced_mean(
            dict(zip(runs, diffs, strict=True)),
            sources,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        )
        mean, low, high = est.mean, est.low, est.high
    else:
        mean, low, high = bootstrap_mean(diffs, confidence=confidence, resamples=resamples, seed=seed)
    return PairedComparison(
        a,
        b,
        measure,
        len(pairs),
        dropped,
        mean_a,
        mean_b,
        mean,
        low,
        high,
        confidence,
        resamples,
        seed,
        pool.label,
        n_sources if by_source else 1,
        differing_pairs(diffs),
        plain_a,
        plain_b,
    )


def differing_pairs(diffs: Sequence[float]) -> int:
    """How many paired differences are not ties: ``|d| > 1e-9`` (a per-run figure printed to
    one decimal never shows a smaller one)."""
    return sum(1 for d in diffs if abs(d) > 1e-9)


def comparison_table(
    summary: pl.DataFrame,
    measure: str = "saving_pct",
    *,
    strategies: Sequence[str] | None = None,
    data: str | Sequence[str] = "real",
    seed: int = SEED,
) -> pl.DataFrame:
    """The compact "A vs B" table: every pair of ``strategies`` (default: :data:`NO_COMPRESSION`
    and each strategy of ``summary``), one row each with ``a``, ``b``, ``measure``, ``runs`` (the
    pairs), ``differ`` (the pairs that are not ties), ``mean_a``, ``mean_b`` and ``difference``
    (mean of ``a − b``) weighted alike (source-balanced with several sources, so ``mean_a −
    mean_b`` = ``difference``), ``low``, ``high`` (the bootstrap interval, :data:`CONFIDENCE`;
    empty where fewer than :data:`MIN_PAIRED_RUNS` pairs differ, the verdicts' rule), and the
    plain means ``plain_a``, ``plain_b``."""
    names = list(strategies) if strategies is not None else strategy_names(summary)
    rows = [
        paired_comparison(summary, a, b, measure, data=data, seed=seed).as_dict()
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    schema = {
        "a": pl.String,
        "b": pl.String,
        "measure": pl.String,
        "runs": pl.Int64,
        "differ": pl.Int64,
        "mean_a": pl.Float64,
        "mean_b": pl.Float64,
        "difference": pl.Float64,
        "low": pl.Float64,
        "high": pl.Float64,
        "plain_a": pl.Float64,
        "plain_b": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


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
