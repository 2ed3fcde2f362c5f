"""The executive summary of a replay: what a researcher may conclude, first, with its uncertainty
and the plain warnings that qualify it.

Read by ``report.md`` (its first section) and by the terminal (first lines).  Everything is computed
from the run (:mod:`ctxlab.replay.stats` for the runs used, per-run statistics and intervals;
the failure columns of :mod:`ctxlab.replay.failures`); nothing is typed in by hand.

What it says, in order:

1. how many runs reached T (n of N, over the pooled runs: by default the real ones), and which
   runs were left out (scripted, synthetic);
2. the best strategy per objective — tokens (mean per-run ``saving_pct``), dollars with caching
   (mean per-run ``cost_saving_pct``), needed recall (mean per-run ``needed_recall`` over the runs
   with L2 rounds) — with its bootstrap interval and its paired difference to the runner-up;
   "no compression" competes on tokens and dollars;
3. warnings: every strategy costs more than no compression under the price row; few runs reached
   T; a strategy's summaries failed (fallback texts counted); summary thrash in a run; declined
   and rejected summaries; plugin problems.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab.analysis.fidelity_verdicts import fidelity_line, fidelity_warnings
from ctxlab.replay.failures import THRASH_CONSECUTIVE, THRASH_WINDOW
from ctxlab.replay.stats import (
    CONFIDENCE,
    NO_COMPRESSION,
    OBJECTIVES,
    bootstrap_mean,
    paired_comparison,
    per_run_stats,
    per_run_values,
    pooled_runs,
)
from ctxlab.replay.table import strategy_totals

if TYPE_CHECKING:
    from ctxlab.replay import ReplayResult

__all__ = [
    "PAIRED_MEASURES",
    "Best",
    "ExecutiveSummary",
    "executive_summary",
    "paired_table",
    "per_run_table",
    "verdict_sections",
]

#: how each objective's value is written (unit after the number)
_UNITS = {"saving_pct": " %", "cost_saving_pct": " %", "needed_recall": ""}


@dataclass(frozen=True)
class Best:
    """The best strategy for one objective.

    Attributes:
        objective: a key of :data:`ctxlab.replay.stats.OBJECTIVES`; column: its per-run column.
        strategy: the winner (may be ``"no compression"``); value: its mean per-run value.
        low, high: the bootstrap interval of that mean; runs: the runs it is over.
        runner_up: the second best (``None``: no other); versus: the paired difference
            winner − runner-up as text (with its interval).
    """

    objective: str
    column: str
    strategy: str
    value: float
    low: float
    high: float
    runs: int
    runner_up: str | None = None
    versus: str | None = None

    def line(self) -> str:
        unit = _UNITS.get(self.column, "")
        fmt = "{:.3f}" if unit == "" else "{:.1f}"
        pct = round(100 * CONFIDENCE)
        text = (
            f"Best for {self.objective}: **{self.strategy}**, mean per-run {self.column} "
            f"{fmt.format(self.value)}{unit} ({pct} % CI {fmt.format(self.low)} to "
            f"{fmt.format(self.high)}{unit}, {self.runs} runs)"
        )
        if self.runner_up is not None and self.versus is not None:
            text += f"; vs {self.runner_up}: {self.versus}"
        return text + "."


@dataclass
class ExecutiveSummary:
    """The executive summary: :attr:`lines` (Markdown, the first is the runs that reached T),
    :attr:`best` (one per objective that has values) and :attr:`warnings` (plain sentences)."""

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


def _best(summary: pl.DataFrame, objective: str) -> Best | None:
    """The best strategy for ``objective`` over the runs of ``summary`` (already pooled)."""
    column, _ = OBJECTIVES[objective]
    candidates = _names(summary)
    if column != "needed_recall":
        candidates = [NO_COMPRESSION, *candidates]
    scored: list[tuple[float, str, list[float]]] = []
    for name in candidates:
        values = [v for v in per_run_values(summary, name, column).values() if v is not None]
        if values:
            scored.append((sum(values) / len(values), name, values))
    if not scored:
        return None
    scored.sort(key=lambda x: -x[0])  # every objective is "higher is better"
    mean, name, values = scored[0]
    _, low, high = bootstrap_mean(values)
    runner = scored[1][1] if len(scored) > 1 else None
    versus = None
    if runner is not None:
        cmp = paired_comparison(summary, name, runner, column, data="all")
        if cmp.difference is not None and cmp.low is not None and cmp.high is not None:
            unit = _UNITS.get(column, "")
            fmt = "{:+.3f}" if unit == "" else "{:+.1f}"
            pts = " points" if unit else ""
            versus = (
                f"{fmt.format(cmp.difference)}{pts} per run ({round(100 * CONFIDENCE)} % CI "
                f"{fmt.format(cmp.low)} to {fmt.format(cmp.high)}, {cmp.runs} paired runs)"
            )
    return Best(objective, column, name, mean, low, high, len(values), runner, versus)


def executive_summary(
    result: ReplayResult,
    *,
    summary: pl.DataFrame | None = None,
    data: str | Sequence[str] = "real",
) -> ExecutiveSummary:
    """The executive summary of ``result`` (module docstring).

    Args:
        result: the replay (its settings give T, its price row the money warning, its errors the
            plugin problems).
        summary: its ``summary.csv`` frame when computed already.
        data: which runs the pooled statements use (:func:`ctxlab.replay.stats.pooled_runs`).
    """
    full = summary if summary is not None else result.summary()
    out = ExecutiveSummary()
    if full.is_empty():
        out.lines.append("Nothing was replayed.")
        return out
    pool = pooled_runs(full, data)
    rows = pool.summary
    T = int(result.settings.entry_threshold_tokens)
    stats = per_run_stats(full, data=data, threshold=T)
    first = stats.row(0, named=True) if stats.height else {"runs": 0, "reached": 0}
    n, N = int(first["reached"]), int(first["runs"])
    out.lines.append(
        f"**{n} of {N} runs reached T = {T:,} tokens** ({pool.label}); the other {N - n} never "
        "compress, so every strategy sends them whole: their saving is 0 and is reported apart "
        "(per-run statistics below)."
    )
    if pool.left_out:
        left = ", ".join(f"{k} {v} transcript{'s' if v != 1 else ''}" for k, v in pool.left_out.items())
        out.lines.append(
            f"Left out of the pooled statements and figures: {left} (`--data all` includes them)."
        )
    for objective in OBJECTIVES:
        best = _best(rows, objective)
        if best is not None:
            out.best.append(best)
    totals = strategy_totals(_calls_of(result, rows))
    line = fidelity_line(totals)
    if line is not None:
        out.lines.append(line)
    out.warnings = [*_warnings(result, rows, n, N), *fidelity_warnings(totals)]
    return out


def _warnings(result: ReplayResult, rows: pl.DataFrame, n: int, N: int) -> list[str]:
    warnings: list[str] = []
    totals = strategy_totals(_calls_of(result, rows))
    price = getattr(result, "price", None)
    costs = [
        (str(r["strategy"]), r["cost_saving_pct"])
        for r in totals.iter_rows(named=True)
        if r.get("cost_saving_pct") is not None
    ]
    if price is not None and costs and all(v < 0 for _, v in costs):
        listed = ", ".join(f"{s} {v:+.1f} %" for s, v in sorted(costs, key=lambda x: -x[1]))
        warnings.append(
            f"Every strategy costs more than no compression under this price row ({price.key}, "
            f"prompt caching counted): pooled cost saving {listed}."
        )
    if N and n * 2 < N:
        warnings.append(f"Only {n} of {N} runs reached T: the pooled savings come from those {n}.")
    for r in totals.iter_rows(named=True):
        failed, rounds = int(r.get("summary_errors") or 0), int(r.get("l2_rounds") or 0)
        if failed:
            fallback = int(r.get("fallback_summaries") or 0)
            how = f" ({fallback} of them a fallback text instead of a summary)" if fallback else ""
            without = r.get("saving_pct_without_failed")
            rest = f"{without:.1f} %" if without is not None else "nothing"
            warnings.append(
                f"{r['strategy']}'s summaries failed {failed} of {rounds} times{how}; its saving "
                f"over the calls not built on a failed summary is {rest}."
            )
        declined, rejected = int(r.get("declined_summaries") or 0), int(r.get("rejected_summaries") or 0)
        parts = []
        if declined and rounds:  # a strategy that never summarizes declines by design
            parts.append(f"{declined} round(s) sent a view above T2 without summarizing")
        if rejected:
            parts.append(f"{rejected} summary(ies) not committed (bigger than the span they replace)")
        if parts:
            warnings.append(f"{r['strategy']}: " + "; ".join(parts) + ".")
    for r in rows.filter(pl.col("summary_thrash").fill_null(False)).iter_rows(named=True):
        streak, window = r["max_consecutive_summaries"], r["max_summaries_in_window"]
        if streak >= THRASH_CONSECUTIVE:
            what = f"summarized on {streak} consecutive calls"
        else:
            what = f"summarized {window} times within {THRASH_WINDOW} calls"
        warnings.append(
            f"{r['strategy']} {what} in run {r['transcript']} (each a summarizer call and a cache rewrite)."
        )
    plugins = [e for e in result.errors if e.kind == "plugin"]
    if plugins:
        warnings.append(
            f"{len(plugins)} plugin problem(s): "
            + "; ".join(dict.fromkeys(str(e.source) for e in plugins[:20]))
            + " (see Errors and skipped files)."
        )
    return warnings


def _calls_of(result: ReplayResult, rows: pl.DataFrame) -> pl.DataFrame:
    """The per-call frame of the pooled runs."""
    calls = result.frame()
    keep = rows.select("transcript").unique()
    return calls.join(keep, on="transcript", how="semi") if calls.height else calls


def per_run_table(result: ReplayResult, data: str | Sequence[str] = "real") -> pl.DataFrame:
    """The report's per-run statistics: per strategy, runs that reached T (``reached`` of
    ``runs``), the per-run token saving's median and IQR over all runs (``saving_median_pct``,
    ``saving_q1_pct``, ``saving_q3_pct``), its median over the runs that reached T
    (``saving_median_reached_pct``), the pooled saving (``saving_pooled_pct``), and the median,
    median over the runs that reached T and pooled cost saving with caching (``cost_saving_*_pct``);
    all in %."""
    summary = result.summary()
    T = result.settings.entry_threshold_tokens
    tokens = per_run_stats(summary, data=data, threshold=T)
    cost = per_run_stats(summary, data=data, threshold=T, column="cost_saving_pct")
    return tokens.select(
        "strategy",
        "runs",
        "reached",
        pl.col("median").alias("saving_median_pct"),
        pl.col("q1").alias("saving_q1_pct"),
        pl.col("q3").alias("saving_q3_pct"),
        pl.col("median_reached").alias("saving_median_reached_pct"),
        pl.col("pooled").alias("saving_pooled_pct"),
    ).with_columns(
        cost.select(
            pl.col("median").alias("cost_saving_median_pct"),
            pl.col("median_reached").alias("cost_saving_median_reached_pct"),
            pl.col("pooled").alias("cost_saving_pooled_pct"),
        )
    )


def paired_table(result: ReplayResult, data: str | Sequence[str] = "real") -> list[dict[str, Any]]:
    """The compact "A vs B" table: each strategy against no compression and against each
    strategy before it, ``{"a", "b", "saving_pct", "cost_usd", "needed_recall"}`` where each
    measure holds the :class:`~ctxlab.replay.stats.PairedComparison` of ``a − b`` per run (token
    saving in points, cost with caching in US dollars per run, needed recall)."""
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
PAIRED_MEASURES = ("saving_pct", "cost_usd", "needed_recall")


def _interval(cmp: Any, fmt: str) -> str:
    if cmp.difference is None:
        return "-"
    return f"{fmt.format(cmp.difference)} [{fmt.format(cmp.low)}, {fmt.format(cmp.high)}] ({cmp.runs})"


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
        f"Over the {pool.label}. `runs`: N; `reached`: n, the runs whose raw request reaches T (the "
        "others never compress); savings are per run, in %: median and interquartile range "
        "(`q1`, `q3`) over all N runs, the median over the n runs that reached T, and the pooled "
        "figure (Σ sent / Σ raw) beside them; the same for the cost saving with prompt caching.",
        "",
        table(per_run),
        "",
        "## Paired comparisons",
        "",
        f"Each row compares A with B on the same runs ({pool.label}): the mean per-run difference "
        f"A − B with its {round(100 * CONFIDENCE)} % percentile-bootstrap interval over runs "
        "(2,000 resamples, seed 0; `ctxlab.replay.stats`) and, in brackets, the number of paired "
        "runs. Token saving in percentage points (higher: A saves more), cost with caching in US "
        "dollars per run (negative: A is cheaper), needed recall over the runs where both summarized "
        "(`-`: none). In Python: `result.compare(A, B, measure=...)`.",
        "",
        "| A | B | Δ saving (points) | Δ cost $ per run | Δ needed recall |",
        "|---|---|---|---|---|",
    ]
    for row in paired_table(result, data):
        lines.append(
            f"| {row['a']} | {row['b']} | {_interval(row['saving_pct'], '{:+.1f}')} | "
            f"{_interval(row['cost_usd'], '{:+.4f}')} | {_interval(row['needed_recall'], '{:+.3f}')} |"
        )
    return lines
