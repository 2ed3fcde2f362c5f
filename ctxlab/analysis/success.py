"""Task success as a measure: the per-strategy table and the executive summary of ``ctxlab eval``.

The input is one row per sample, epoch and strategy (:func:`ctxlab.integrations.inspect.measures.sample_rows`):
``transcript`` (``<sample id>#<epoch>``: the pairing key), ``strategy``, ``data_provenance``,
``success`` (1 solved, 0 not; an errored sample is 0: a failure counts), ``tokens`` and
``cost_usd`` (every model call of the sample, the summarizer's included: ctxlab's measure and
price row).

* :func:`success_table` — per strategy: samples, solved, the success rate with its 95 %
  percentile-bootstrap interval over samples (:func:`ctxlab.replay.stats.bootstrap_mean`), tokens
  and dollars per sample and per *solved* sample (all the strategy's tokens or dollars divided by
  the samples it solved; empty when it solved none), errors.
* :func:`paired_success` — each strategy against a baseline, paired by sample
  (:func:`ctxlab.replay.stats.paired_comparison`, the same seeded bootstrap as ``compare``).
* :func:`success_summary` — the executive summary's lines: over how many samples, the best
  success rate, and a winner only when its paired interval against every other strategy excludes
  no difference (as ``compare``'s verdicts).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ctxlab.replay.stats import PairedComparison, bootstrap_mean, paired_comparison

__all__ = ["paired_success", "success_summary", "success_table"]


def success_table(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per strategy (in first-seen order); see the module doc for the columns."""
    rows: list[dict[str, Any]] = []
    for name in frame["strategy"].unique(maintain_order=True).to_list():
        part = frame.filter(pl.col("strategy") == name)
        values = [float(v) for v in part["success"].to_list()]
        mean, low, high = bootstrap_mean(values)
        solved = sum(values)
        tokens, dollars = float(part["tokens"].sum()), float(part["cost_usd"].sum())
        rows.append(
            {
                "strategy": name,
                "samples": part.height,
                "solved": solved,
                "success_rate": mean,
                "success_low": low,
                "success_high": high,
                "tokens_per_sample": tokens / part.height,
                "tokens_per_solved": tokens / solved if solved else None,
                "usd_per_sample": dollars / part.height,
                "usd_per_solved": dollars / solved if solved else None,
                "errors": int(part["error"].is_not_null().sum()) if "error" in part.columns else 0,
            }
        )
    return pl.DataFrame(rows)


def paired_success(frame: pl.DataFrame, baseline: str) -> list[PairedComparison]:
    """Every other strategy's success minus ``baseline``'s, paired by sample (all provenances).

    Raises:
        ValueError: ``baseline`` is not a strategy of ``frame``.
    """
    names = frame["strategy"].unique(maintain_order=True).to_list()
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not in the runs; known: {names}")
    return [paired_comparison(frame, n, baseline, "success", data="all") for n in names if n != baseline]


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def success_summary(frame: pl.DataFrame, baseline: str | None = None) -> list[str]:
    """The executive summary's lines (module doc); ``baseline`` defaults to ``none`` when it ran,
    else the first strategy."""
    table = success_table(frame)
    names = table["strategy"].to_list()
    base = baseline or ("none" if "none" in names else names[0])
    samples = frame["transcript"].n_unique()
    lines = [
        f"{samples} samples × {len(names)} strategies ({frame.height} runs); success is the task's score "
        "(an errored sample counts as a failure); intervals are 95 % bootstrap intervals over samples."
    ]
    best = table.sort("success_rate", descending=True).row(0, named=True)
    lines.append(
        f"Best success rate: {best['strategy']}, {_pct(best['success_rate'])} "
        f"(95 % CI {_pct(best['success_low'])} to {_pct(best['success_high'])}, {best['samples']} samples)."
    )
    pairs = {c.a: c for c in paired_success(frame, best["strategy"])}
    beaten = [n for n, c in pairs.items() if c.high is not None and c.high < 0]
    if len(beaten) == len(names) - 1 and beaten:
        lines.append(
            f"Winner: {best['strategy']}: its success exceeds every other strategy's beyond the interval."
        )
    else:
        tied = [n for n in names if n != best["strategy"] and n not in beaten]
        lines.append(
            f"No single winner: {', '.join(tied)} cannot be told apart from {best['strategy']} "
            "(the paired interval of the difference holds 0)."
        )
    for c in paired_success(frame, base):
        if c.difference is None or c.low is None or c.high is None:
            continue
        verdict = "worse" if c.high < 0 else "better" if c.low > 0 else "no difference shown"
        lines.append(
            f"{c.a} vs {base}: {100 * c.difference:+.1f} points of success "
            f"(95 % CI {100 * c.low:+.1f} to {100 * c.high:+.1f}, {c.runs} paired samples): {verdict}."
        )
    return lines
