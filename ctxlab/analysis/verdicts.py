"""The executive summary of a replay: what a researcher may conclude, first, with its uncertainty
and the plain warnings that qualify it.

Read by ``report.md`` (its first section) and by the terminal (first lines).  Everything is computed
from the run (:mod:`ctxlab.replay.stats` and :mod:`ctxlab.replay.per_run` for the runs used,
per-run statistics and intervals, :mod:`ctxlab.replay.stratified` for the sources; the failure
columns of :mod:`ctxlab.replay.failures`); nothing is typed in by hand.

What it says, in order:

1. what wrote the summaries (a model by name, or an offline stand-in, per strategy);
2. how many runs' uncompressed request reached T (n of N, over the pooled runs: by default the
   real ones), and per strategy how many runs its own trigger reached and how many it compressed;
   which runs were left out (scripted, synthetic);
3. the provider's window: the calls whose no-compression baseline is infeasible (above it), and
   that savings are over the feasible calls; the unrecorded prefix per source (where nothing is
   recorded, said so); the sources the runs come from;
4. per objective — tokens (per-run ``saving_pct_feasible``), dollars with caching
   (``cost_saving_pct_feasible``), identifier recall (per-run ``needed_recall`` over the runs with L2
   rounds) — either the best strategy, when its paired interval against the runner-up excludes 0,
   or "no detectable difference" with that interval; each strategy's mean over the runs it
   compressed (n) beside its mean over all runs; with several sources the means are
   source-balanced and the intervals stratified by source; no "best" line at all when no run
   reached T.  "no compression" competes on tokens and dollars;
5. warnings (:mod:`ctxlab.analysis.verdict_warnings`), repeated ones grouped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab.analysis.fidelity_verdicts import fidelity_line, fidelity_warnings
from ctxlab.analysis.run_facts import baseline_lines, summarizer_lines, summarizer_note
from ctxlab.analysis.stall_verdicts import stall_line
from ctxlab.analysis.verdict_warnings import verdict_warnings
from ctxlab.core.builtin.floors import FLOOR_STRATEGIES
from ctxlab.replay.paired import PairedComparison, paired_comparison
from ctxlab.replay.per_run import compressed_runs, per_run_stats, reached_runs, reached_transcripts
from ctxlab.replay.stats import (
    CONFIDENCE,
    MIN_PAIRED_RUNS,
    NO_COMPRESSION,
    OBJECTIVES,
    per_run_values,
    pooled_runs,
)
from ctxlab.replay.stratified import balanced_mean, run_sources
from ctxlab.replay.table import strategy_totals

if TYPE_CHECKING:
    from ctxlab.replay import ReplayResult

__all__ = [
    "MEASURE_LABELS",
    "PAIRED_MEASURES",
    "Best",
    "ExecutiveSummary",
    "executive_summary",
    "paired_table",
    "per_run_table",
    "summarizer_lines",
    "summarizer_note",
    "verdict_sections",
]

#: how each objective's value is written (unit after the number)
_UNITS = {"saving_pct_feasible": " %", "cost_saving_pct_feasible": " %", "needed_recall": ""}
#: one label per measure of the headlines (the report's tables say which of their columns is which)
MEASURE_LABELS = {
    "saving_pct_feasible": "mean per-run token saving over feasible calls (a failure saves nothing)",
    "cost_saving_pct_feasible": "mean per-run dollar saving over feasible calls (a failure saves nothing)",
    "needed_recall": "mean per-run identifier recall (each run's pooled over its L2 rounds)",
}


@dataclass(frozen=True)
class Mean:
    """One strategy's figure for one objective.

    Attributes:
        strategy: its label; value: its mean per run over all the runs with a value (source-balanced
            with several sources); low, high: the (stratified) bootstrap interval; runs, sources:
            what it is over; compressed, compressed_runs, compressed_sources: the mean over the
            runs it compressed (weighted as ``value``: source-balanced with several sources), how
            many and from how many sources (``None``, 0, 0: none); compressed_plain: their plain
            mean (every run alike; the sign check against the pooled figure).
    """

    strategy: str
    value: float
    low: float
    high: float
    runs: int
    sources: int
    compressed: float | None
    compressed_runs: int
    compressed_sources: int = 0
    compressed_plain: float | None = None

    def text(self, column: str) -> str:
        unit = _UNITS.get(column, "")
        fmt = "{:.3f}" if unit == "" else "{:.1f}"
        over = (f"over all {self.runs} runs" if self.runs != 1 else "over its 1 run") + (
            f", source-balanced over {self.sources} sources" if self.sources > 1 else ""
        )
        ci = (
            f"{round(100 * CONFIDENCE)} % CI {fmt.format(self.low)} to {fmt.format(self.high)}{unit}"
            if self.runs > 1
            else "no interval from 1 run"  # a bootstrap of one value is that value: no spread
        )
        if column == "needed_recall":
            return f"{fmt.format(self.value)} ({ci}, over the {self.runs} runs it summarized)"
        balanced = (
            f", source-balanced over {self.compressed_sources} sources" if self.compressed_sources > 1 else ""
        )
        done = (
            f"{fmt.format(self.compressed)}{unit} over the {self.compressed_runs} run(s) it compressed{balanced}; "
            if self.compressed is not None
            else ""
            if self.strategy == NO_COMPRESSION  # the baseline compresses nothing by definition
            else "no run compressed; "
        )
        return f"{done}{fmt.format(self.value)}{unit} {over} ({ci})"


@dataclass(frozen=True)
class Best:
    """The verdict for one objective: a winner, or no detectable difference.

    Attributes:
        objective: a key of :data:`ctxlab.replay.stats.OBJECTIVES`; column: its per-run column.
        first: the top strategy's :class:`Mean`; runner_up: the second's (``None``: no other).
        versus: the paired comparison first − runner-up (``None``: no other).
    """

    objective: str
    column: str
    first: Mean
    runner_up: Mean | None = None
    versus: PairedComparison | None = None

    @property
    def strategy(self) -> str:
        """The top strategy (the winner when :attr:`decided`)."""
        return self.first.strategy

    @property
    def decided(self) -> bool:
        """A winner is named: there is another strategy to beat, the paired comparison has at
        least :data:`~ctxlab.replay.stats.MIN_PAIRED_RUNS` runs that differ (ties do not count) and
        its interval excludes 0."""
        return self.versus is not None and self.versus.decides

    def line(self) -> str:
        label = MEASURE_LABELS.get(self.column, self.column)
        unit = _UNITS.get(self.column, "")
        pts = " points" if unit else ""
        fmt = "{:+.3f}" if unit == "" else "{:+.1f}"
        cmp = self.versus
        versus = ""
        if cmp is not None and cmp.difference is not None and cmp.low is not None and cmp.high is not None:
            strata = f" in {cmp.sources} sources, stratified" if cmp.sources > 1 else ""
            interval = cmp.interval_said(fmt, paired=True)
            if cmp.runs > 1 and not cmp.too_few:
                interval += f", {cmp.runs} paired runs{cmp.differing_said(' ({} differ)')}{strata}"
            versus = f"{fmt.format(cmp.difference)}{pts} per run ({interval})"
        if self.decided:
            text = f"Best for {self.objective}: **{self.first.strategy}**, {label} {self.first.text(self.column)}"
            if self.runner_up is not None:
                text += f"; vs {self.runner_up.strategy}: {versus or 'no paired run'}"
            return text + "."
        if self.runner_up is None:
            return (
                f"{self.objective.capitalize()}: only **{self.first.strategy}** has a value, nothing to compare "
                f"it with; {label} {self.first.text(self.column)}."
            )
        if cmp is not None and cmp.too_few:
            count = (
                f"{cmp.evidence} < {MIN_PAIRED_RUNS}"
                if cmp.evidence == cmp.runs
                else f"{cmp.evidence} of {cmp.runs} paired runs differ, < {MIN_PAIRED_RUNS}; the others are ties"
            )
            return (
                f"{self.objective.capitalize()}: **too few paired runs to name a winner** ({count}: with "
                "fewer, even runs that all agree cannot exclude no difference); "
                f"{self.first.strategy} − {self.runner_up.strategy}: {versus or 'no paired run'}; {label}: "
                f"{self.first.strategy} {self.first.text(self.column)}; {self.runner_up.strategy} "
                f"{self.runner_up.text(self.column)}."
            )
        return (
            f"{self.objective.capitalize()}: **no detectable difference** between {self.first.strategy} and "
            f"{self.runner_up.strategy} ({versus or 'no paired run'}); {label}: {self.first.strategy} "
            f"{self.first.text(self.column)}; {self.runner_up.strategy} {self.runner_up.text(self.column)}."
        )


@dataclass
class ExecutiveSummary:
    """The executive summary: :attr:`lines` (Markdown; the first names the summarizer, then the
    runs that reached T), :attr:`best` (one verdict per objective that has values) and
    :attr:`warnings` (plain sentences)."""

    lines: list[str] = field(default_factory=list)
    best: list[Best] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def markdown(self) -> list[str]:
        """The report's section body (Markdown lines)."""
        out = [*(f"- {line}" for line in self.lines), *(f"- {b.line()}" for b in self.best)]
        if self.warnings:
            out += ["", "Warnings:", "", *(f"- **{w}**" for w in self.warnings)]
        return out

    def plain(self) -> list[str]:
        """The same as plain text lines for the terminal (no Markdown emphasis)."""
        strip = str.maketrans("", "", "*`")
        out = [line.translate(strip) for line in self.lines]
        out += [b.line().translate(strip) for b in self.best]
        out += [f"warning: {w.translate(strip)}" for w in self.warnings]
        return out


def _names(summary: pl.DataFrame) -> list[str]:
    return [str(s) for s in summary["strategy"].unique(maintain_order=True).to_list()]


def _mean(summary: pl.DataFrame, name: str, column: str, sources: dict[str, str]) -> Mean | None:
    values = {t: v for t, v in per_run_values(summary, name, column).items() if v is not None}
    if not values:
        return None
    est = balanced_mean(values, sources)
    acted = compressed_runs(summary, name)
    done = {t: v for t, v in values.items() if t in acted}
    # the runs it compressed weighted as all its runs are (one sentence, one weighting)
    inner = balanced_mean(done, sources) if done else None
    return Mean(
        name,
        est.mean,
        est.low,
        est.high,
        est.runs,
        est.sources,
        inner.mean if inner is not None else None,
        len(done),
        inner.sources if inner is not None else 0,
        inner.plain if inner is not None else None,
    )


def _best(summary: pl.DataFrame, objective: str) -> Best | None:
    """The verdict for ``objective`` over the runs of ``summary`` (already pooled)."""
    column, _ = OBJECTIVES[objective]
    if column not in summary.columns:
        return None
    # the reference floors are what a strategy must beat, not contenders (issue 28)
    candidates = [n for n in _names(summary) if n not in FLOOR_STRATEGIES]
    if column != "needed_recall":
        candidates = [NO_COMPRESSION, *candidates]
    sources = run_sources(summary)
    scored = [m for name in candidates if (m := _mean(summary, name, column, sources)) is not None]
    if not scored:
        return None
    scored.sort(key=lambda m: -m.value)  # every objective is "higher is better"
    if len(scored) == 1:
        return Best(objective, column, scored[0])
    cmp = paired_comparison(summary, scored[0].strategy, scored[1].strategy, column, data="all")
    return Best(objective, column, scored[0], scored[1], cmp)


def executive_summary(
    result: ReplayResult,
    *,
    summary: pl.DataFrame | None = None,
    data: str | Sequence[str] = "real",
) -> ExecutiveSummary:
    """The executive summary of ``result`` (module docstring).

    Args:
        result: the replay (its settings give T, its price row the money warning, its prefixes and
            window the baseline lines, its errors the plugin problems).
        summary: its ``summary.csv`` frame when computed already.
        data: which runs the pooled statements use (:func:`ctxlab.replay.stats.pooled_runs`).
    """
    full = summary if summary is not None else result.summary()
    out = ExecutiveSummary()
    if full.is_empty():
        out.lines.append("Nothing was replayed.")
        return out
    out.lines += summarizer_lines(result)
    pool = pooled_runs(full, data)
    rows = pool.summary
    T = int(result.settings.entry_threshold_tokens)
    runs = rows["transcript"].n_unique() if rows.height else 0
    reached = len(reached_transcripts(rows, T))
    own = ", ".join(
        f"{name} {len(reached_runs(rows, name, T))} reached / {len(compressed_runs(rows, name))} compressed"
        for name in _names(rows)
    )
    out.lines.append(
        f"**{reached} of {runs} transcripts reached T = {T:,} tokens** ({pool.label}; the uncompressed request, "
        f"the unrecorded prefix included); per strategy, by its own trigger: {own}. A run below a "
        "strategy's trigger is sent whole: its saving is 0."
    )
    if pool.left_out:
        left = ", ".join(f"{k} {v} transcript{'s' if v != 1 else ''}" for k, v in pool.left_out.items())
        out.lines.append(
            f"Left out of the pooled statements and figures: {left} (`--data all` includes them)."
        )
    out.lines += baseline_lines(result, rows)
    totals = strategy_totals(_calls_of(result, rows))
    means: dict[str, dict[str, tuple[float | None, int]]] = {}
    if reached == 0 and not (rows["reached_threshold"].fill_null(False).any() if rows.height else False):
        out.lines.append(
            "No transcript reached T: no strategy compressed anything, so none is named best (every figure is "
            "that of sending everything)."
        )
    else:
        for objective in OBJECTIVES:
            best = _best(rows, objective)
            if best is not None:
                out.best.append(best)
    sources = run_sources(rows)
    for column in ("saving_pct_feasible", "cost_saving_pct_feasible"):
        if column in rows.columns:
            means[column] = {
                m.strategy: (m.compressed_plain, m.compressed_runs)
                for name in _names(rows)
                if (m := _mean(rows, name, column, sources)) is not None
            }
    line = fidelity_line(totals)
    if line is not None:
        out.lines.append(line)
    line = stall_line(totals, pool.over(), result.provenance.get("latency"))
    if line is not None:
        out.lines.append(line)
    out.warnings = [*verdict_warnings(result, rows, totals, means, reached, runs), *fidelity_warnings(totals)]
    return out


def _calls_of(result: ReplayResult, rows: pl.DataFrame) -> pl.DataFrame:
    """The per-call frame of the pooled runs."""
    calls = result.frame()
    keep = rows.select("transcript").unique()
    return calls.join(keep, on="transcript", how="semi") if calls.height else calls


def per_run_table(result: ReplayResult, data: str | Sequence[str] = "real") -> pl.DataFrame:
    """The report's per-run statistics of the savings over feasible calls, in %: per strategy,
    ``runs`` (N), ``reached`` (its own trigger fired), ``compressed`` (it compressed at least
    once); the token saving's mean over the compressed runs and over all runs
    (``saving_mean_compressed_pct``, ``saving_mean_pct``), its median and IQR over all runs
    (``saving_median_pct``, ``saving_q1_pct``, ``saving_q3_pct``), its median over the runs that
    reached the trigger (``saving_median_reached_pct``), the pooled saving
    (``saving_pooled_pct``); the same means, median and pooled figure of the cost saving with
    caching (``cost_saving_*_pct``)."""
    summary = result.summary()
    T = result.settings.entry_threshold_tokens
    tokens = per_run_stats(summary, data=data, threshold=T, column="saving_pct_feasible")
    cost = per_run_stats(summary, data=data, threshold=T, column="cost_saving_pct_feasible")
    return tokens.select(
        "strategy",
        "runs",
        "reached",
        "compressed",
        pl.col("mean_compressed").alias("saving_mean_compressed_pct"),
        pl.col("mean").alias("saving_mean_pct"),
        pl.col("median").alias("saving_median_pct"),
        pl.col("q1").alias("saving_q1_pct"),
        pl.col("q3").alias("saving_q3_pct"),
        pl.col("median_reached").alias("saving_median_reached_pct"),
        pl.col("pooled").alias("saving_pooled_pct"),
    ).with_columns(
        cost.select(
            pl.col("mean_compressed").alias("cost_saving_mean_compressed_pct"),
            pl.col("mean").alias("cost_saving_mean_pct"),
            pl.col("median").alias("cost_saving_median_pct"),
            pl.col("pooled").alias("cost_saving_pooled_pct"),
        )
    )


def paired_table(result: ReplayResult, data: str | Sequence[str] = "real") -> list[dict[str, Any]]:
    """The compact "A vs B" table: each strategy against no compression and against each
    strategy before it, ``{"a", "b", "saving_pct_feasible", "cost_usd", "needed_recall"}`` where
    each measure holds the :class:`~ctxlab.replay.paired.PairedComparison` of ``a − b`` per run
    (token saving over feasible calls in points, cost with caching in US dollars per run, needed
    recall; source-balanced and stratified by source with several sources)."""
    summary = result.summary()
    names = [NO_COMPRESSION, *_names(summary)]
    out = []
    for j, a in enumerate(names):
        for b in names[:j]:
            row: dict[str, Any] = {"a": a, "b": b}
            for column in PAIRED_MEASURES:
                row[column] = paired_comparison(summary, a, b, column, data=data)
            out.append(row)
    return out


#: the measures of the "A vs B" table
PAIRED_MEASURES = ("saving_pct_feasible", "cost_usd", "needed_recall")


def _interval(cmp: Any, fmt: str) -> str:
    """A cell of the "A vs B" table: the mean difference with its interval and the paired runs
    (and how many differ); no interval where fewer than :data:`MIN_PAIRED_RUNS` runs differ, the
    rule of the executive summary's verdicts (:attr:`PairedComparison.too_few`)."""
    if cmp.difference is None:
        return "-"
    if cmp.too_few:
        return f"{fmt.format(cmp.difference)} ({cmp.interval_said(fmt)})"
    return f"{fmt.format(cmp.difference)} [{fmt.format(cmp.low)}, {fmt.format(cmp.high)}] ({cmp.runs}{cmp.differing_said()})"


def verdict_sections(
    result: ReplayResult, table: Callable[[pl.DataFrame], str], data: str | Sequence[str] = "real"
) -> list[str]:
    """The report's "Per-run statistics" and "Paired comparisons" sections (Markdown lines);
    ``table`` renders a frame as a Markdown table (:func:`ctxlab.analysis.report.markdown_table`)."""
    summary = result.summary()
    if summary.is_empty():
        return []
    pool = pooled_runs(summary, data)
    per_run = per_run_table(result, data)
    lines = [
        "## Per-run statistics",
        "",
        f"Over {pool.label}. Definitions in this table: `runs`, N; `reached`, the runs where the "
        "strategy's own trigger fired (for no compression: the uncompressed request reached T); "
        "`compressed`, the runs it compressed at least once. Every saving is a **per-run saving over "
        "the feasible calls** (the calls whose uncompressed request fits the window), in %: its plain "
        "mean (every run alike; the executive summary's means and the frontier's markers are "
        "source-balanced, every source alike) over the compressed runs and over all N runs, its "
        "median and interquartile range (`q1`, `q3`) "
        "over all N runs, its median over the runs that reached the trigger, and the pooled figure "
        "(Σ sent / Σ raw over the feasible calls of all runs) beside them; the same for the cost "
        "saving with prompt caching.",
        "",
        table(per_run),
        "",
        "## Paired comparisons",
        "",
        f"Each row compares A with B on the same runs ({pool.label}): the mean per-run difference "
        f"A − B with its {round(100 * CONFIDENCE)} % percentile-bootstrap interval over runs "
        "(2,000 resamples, seed 0; with runs from several sources the mean is source-balanced and "
        "the bootstrap stratified by source, `ctxlab.replay.stratified`) and, in brackets, the number "
        "of paired runs and, when some are ties, how many differ (a tie carries no sign: with fewer "
        f"than {MIN_PAIRED_RUNS} runs that differ no interval is given, as no winner is named in the "
        "executive summary). Definitions in this table: Δ saving, the per-run token saving over feasible "
        "calls in percentage points (higher: A saves more); Δ cost, the cost with caching in US "
        "dollars per run (negative: A is cheaper); Δ identifier recall, the per-run identifier recall (each "
        "run's pooled over its L2 rounds) over the runs where both summarized (`-`: none). An "
        "interval that holds 0 is no detectable difference. In Python: `result.compare(A, B, measure=...)`.",
        "",
        "| A | B | Δ saving (points) | Δ cost $ per run | Δ identifier recall |",
        "|---|---|---|---|---|",
    ]
    for row in paired_table(result, data):
        lines.append(
            f"| {row['a']} | {row['b']} | {_interval(row['saving_pct_feasible'], '{:+.1f}')} | "
            f"{_interval(row['cost_usd'], '{:+.4f}')} | {_interval(row['needed_recall'], '{:+.3f}')} |"
        )
    return lines
