"""Runs grouped by source, so that one source cannot carry a verdict.

A folder of transcripts is rarely balanced: one τ-bench file holds 200 runs, one ShareGPT file
300 of a folder's 314.  A plain mean over runs is then the mean of that one file, and its
interval is narrow because the file's runs are many, not because the verdict holds elsewhere.
Here a run's **source** is the format (the agent) that wrote it (the ``transcript_format``
column), and:

* the **source-balanced mean** (:func:`balanced_mean`) weighs every source alike: the mean of the
  sources' mean per-run values (with one source, the plain mean);
* its interval is a **stratified percentile bootstrap** (Efron & Tibshirani, *An Introduction to
  the Bootstrap*, 1993, §6 and ch. 13; strata: the sources): each resample draws, within every
  source, as many runs as it has, with replacement (a seeded ``random.Random``), and computes the
  balanced mean; the interval is the ``(1 − confidence) / 2`` and ``(1 + confidence) / 2``
  quantiles of :data:`~ctxlab.replay.stats.RESAMPLES` resampled means.  A source with one run
  cannot be resampled within itself (it would add the same value to every resample, and a folder
  of one run per format would get an interval of width 0): the single-run sources form one
  stratum together, resampled among themselves, so that their spread is in the interval.  When
  only **one** source has a single run, that stratum is one value again (one DeerFlow run beside
  ten SWE-agent runs all at 0 gave "95 % CI +23.5 to +23.5"): then the runs are resampled across
  sources (no strata), each resample's mean balanced over the sources it drew, so that whether
  the lone run is drawn at all is in the interval;
* :func:`dominant_sources` names a source that holds most of the runs or of the raw tokens
  (more than :data:`DOMINANT_SHARE`), for a warning.

Deterministic: the same values, sources and seed give the same interval.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

__all__ = [
    "DOMINANT_SHARE",
    "SOURCE_COLUMN",
    "Balanced",
    "balanced_mean",
    "check_bootstrap",
    "dominant_sources",
    "run_sources",
    "source_balanced",
]

#: the per-run column naming a run's source
SOURCE_COLUMN = "transcript_format"
#: a source holding more than this share of the runs (or of the raw tokens) is warned about
DOMINANT_SHARE = 0.5


@dataclass(frozen=True)
class Balanced:
    """A source-balanced mean and its stratified bootstrap interval.

    Attributes:
        mean: the mean of the sources' mean values (the plain mean with one source).
        low, high: its interval at the confidence asked.
        runs: the runs with a value; sources: how many sources they come from.
        plain: the plain mean over the runs (every run alike).
    """

    mean: float
    low: float
    high: float
    runs: int
    sources: int
    plain: float

    @property
    def holds_zero(self) -> bool:
        """The interval holds 0 (no detectable difference, for a paired difference)."""
        return self.low <= 0.0 <= self.high


def run_sources(summary: pl.DataFrame) -> dict[str, str]:
    """``{transcript: source}`` from ``summary.csv``'s frame (its :data:`SOURCE_COLUMN`; a frame
    without it: every run from one source ``"all"``)."""
    if summary.is_empty():
        return {}
    if SOURCE_COLUMN not in summary.columns:
        return dict.fromkeys((str(t) for t in summary["transcript"].unique(maintain_order=True)), "all")
    firsts = summary.unique("transcript", keep="first", maintain_order=True)
    return {str(t): str(s or "unknown") for t, s in firsts.select("transcript", SOURCE_COLUMN).iter_rows()}


def check_bootstrap(caller: str, count: int, confidence: float, resamples: int) -> None:
    """The arguments every bootstrap of ctxlab takes, checked in one place: ``count`` values
    (at least one), ``confidence`` in (0, 1), ``resamples`` ≥ 1.

    Raises:
        ValueError: naming ``caller`` for no values, else the argument and its allowed range.
    """
    if count < 1:
        raise ValueError(f"{caller} needs at least one value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} is invalid: allowed 0 < confidence < 1")
    if resamples < 1:
        raise ValueError(f"resamples={resamples} is invalid: allowed an integer >= 1")


def balanced_mean(
    values: Mapping[str, float],
    sources: Mapping[str, str],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Balanced:
    """The source-balanced mean of ``values`` (``{run: value}``) and its stratified bootstrap
    interval (module docstring); a run missing from ``sources`` is its own source.

    Raises:
        ValueError: no values; ``confidence`` outside (0, 1); ``resamples`` below 1.
    """
    check_bootstrap("balanced_mean", len(values), confidence, resamples)
    groups = _strata(values, sources)
    mean = _mean_of_means(groups)
    plain = statistics.fmean(float(v) for v in values.values())
    if len(values) == 1:
        return Balanced(mean, mean, mean, 1, 1, plain)
    rng = random.Random(seed)
    many = [g for g in groups if len(g) > 1]
    single = [g[0] for g in groups if len(g) == 1]  # one stratum of their own (module docstring)
    if len(single) == 1:  # a lone one-run stratum has no spread to draw: resample across sources
        pairs = [(sources.get(run, f"run {run}"), float(v)) for run, v in values.items()]
        drawn = sorted(_balanced(rng.choices(pairs, k=len(pairs))) for _ in range(resamples))
    else:
        drawn = sorted(
            statistics.fmean(
                [
                    *(statistics.fmean(rng.choices(g, k=len(g))) for g in many),
                    *rng.choices(single, k=len(single)),
                ]
            )
            for _ in range(resamples)
        )
    tail = (1.0 - confidence) / 2.0
    return Balanced(
        mean, _quantile(drawn, tail), _quantile(drawn, 1.0 - tail), len(values), len(groups), plain
    )


def source_balanced(values: Mapping[str, float], sources: Mapping[str, str]) -> float:
    """The source-balanced mean of ``values`` (``{run: value}``): the mean of the sources' mean
    values, a run missing from ``sources`` its own source — :func:`balanced_mean`'s point
    estimate without the bootstrap.

    Raises:
        statistics.StatisticsError: no values.
    """
    return _mean_of_means(_strata(values, sources))


def _mean_of_means(groups: Iterable[Sequence[float]]) -> float:
    """The mean of the groups' means: every source weighs alike (the module's one formula)."""
    return statistics.fmean(statistics.fmean(g) for g in groups)


def _strata(values: Mapping[str, float], sources: Mapping[str, str]) -> list[list[float]]:
    strata: dict[str, list[float]] = {}
    for run, value in values.items():
        strata.setdefault(sources.get(run, f"run {run}"), []).append(float(value))
    return list(strata.values())


def _balanced(pairs: list[tuple[str, float]]) -> float:
    """The mean of the per-source means of ``(source, value)`` pairs."""
    by: dict[str, list[float]] = {}
    for source, value in pairs:
        by.setdefault(source, []).append(value)
    return _mean_of_means(by.values())


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, linear between the closest ranks."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def dominant_sources(summary: pl.DataFrame, share: float = DOMINANT_SHARE) -> list[tuple[str, str, int, int]]:
    """The sources holding more than ``share`` of the runs or of the raw tokens of ``summary``
    (one row per transcript × strategy; a transcript counted once), when there are at least two
    sources or the one source is a single file's many runs: ``(source, what, theirs, all)`` with
    ``what`` ``"runs"`` or ``"raw tokens"``."""
    if summary.is_empty():
        return []
    firsts = summary.unique("transcript", keep="first", maintain_order=True)
    sources = run_sources(summary)
    if len(set(sources.values())) < 2:
        return []
    runs: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for t, raw in firsts.select("transcript", "raw_tokens_total").iter_rows():
        s = sources[str(t)]
        runs[s] = runs.get(s, 0) + 1
        tokens[s] = tokens.get(s, 0) + int(raw or 0)
    out: list[tuple[str, str, int, int]] = []
    total_runs, total_tokens = sum(runs.values()), sum(tokens.values())
    for s in sorted(runs):
        if runs[s] > share * total_runs:
            out.append((s, "runs", runs[s], total_runs))
        if total_tokens and tokens[s] > share * total_tokens:
            out.append((s, "raw tokens", tokens[s], total_tokens))
    return out
