"""Paired comparisons of two strategies over the same runs, with a bootstrap interval
(:func:`paired_comparison`, :meth:`ctxlab.replay.ReplayResult.compare`, the compact
:func:`comparison_table`), and the one rule for when a difference is called and an interval
shown (:attr:`PairedComparison.too_few`, :meth:`PairedComparison.interval_said`).

Strategies replay the same transcripts, so two of them are compared run by run: the per-run
differences ``a − b`` of one per-run column of ``summary.csv``, their mean (source-balanced with
runs from several sources, :mod:`ctxlab.replay.stratified`) and its percentile bootstrap interval
(:func:`ctxlab.replay.stats.bootstrap_mean`).  A pair with equal values is a tie and carries no
sign: a difference is called only on at least :data:`~ctxlab.replay.stats.MIN_PAIRED_RUNS`
pairs that differ.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ctxlab.replay.stats import (
    CONFIDENCE,
    MIN_PAIRED_RUNS,
    RESAMPLES,
    SEED,
    bootstrap_mean,
    per_run_values,
    pooled_runs,
    strategy_names,
)
from ctxlab.replay.stratified import balanced_mean, run_sources, source_balanced

__all__ = ["PairedComparison", "comparison_table", "differing_pairs", "paired_comparison"]


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
