"""Task success as a measure: the per-strategy table and the executive summary of ``ctxlab eval``.

The input is one row per sample, epoch and strategy (:func:`ctxlab.integrations.inspect.measures.sample_rows`):
``transcript`` (``<sample id>#<epoch>``: the pairing key), ``strategy``, ``data_provenance``,
``success`` (1 solved, 0 not; an errored sample is 0: a failure counts), ``tokens`` and
``cost_usd`` (every model call of the sample, the summarizer's included: ctxlab's measure and
price row).

* :func:`success_table` — per strategy: samples, solved, the success rate with its 95 % Wilson
  score interval (:func:`wilson_interval`: a proportion's interval that does not collapse to a
  point at 0 or n solved, as a bootstrap of 9 successes in 9 does), tokens
  and dollars per sample and per *solved* sample (all the strategy's tokens or dollars divided by
  the samples it solved; empty when it solved none), errors.
* :func:`paired_success` — each strategy against a baseline, paired by sample
  (:func:`ctxlab.replay.paired.paired_comparison`, the same seeded bootstrap as ``compare``).
* :func:`success_summary` — the executive summary's lines: what answered (an offline stand-in
  or a model), over how many samples, and a best success rate only when it is told apart from
  every other strategy's by the paired rule of ``compare``'s verdicts
  (:attr:`ctxlab.replay.paired.PairedComparison.decides`: an interval without 0 and at least
  :data:`~ctxlab.replay.stats.MIN_PAIRED_RUNS` samples that differ; ties carry no sign).
* :func:`success_markdown` and :func:`paired_markdown` — the report's tables, written by
  :func:`ctxlab.analysis.cells.cell`.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import polars as pl

from ctxlab.analysis.cells import cell, markdown_table
from ctxlab.replay.paired import PairedComparison, paired_comparison
from ctxlab.replay.stats import CONFIDENCE, MIN_PAIRED_RUNS

__all__ = [
    "OFFLINE_PREFIX",
    "paired_markdown",
    "paired_success",
    "success_markdown",
    "success_summary",
    "success_table",
    "wilson_interval",
]

#: an Inspect model named ``ctxlab/...`` is one of ctxlab's offline stand-ins (``ctxlab/reader``)
OFFLINE_PREFIX = "ctxlab/"


def wilson_interval(successes: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (E. B. Wilson, "Probable
    inference, the law of succession, and statistical inference", *Journal of the American
    Statistical Association* 22, 1927): the proportions ``p`` whose normal score test at
    ``confidence`` does not reject ``successes`` out of ``n``,
    ``(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)``.  Unlike a bootstrap or the Wald
    interval it keeps a width at 0 and ``n`` successes (9 of 9 at 95 %: 0.701 to 1).

    Returns:
        ``(low, high)`` shares in [0, 1].

    Raises:
        ValueError: ``n`` < 1, ``successes`` outside [0, n], or ``confidence`` outside (0, 1).
    """
    if n < 1:
        raise ValueError(f"n={n} is invalid: a success rate needs at least one sample")
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} is invalid: allowed 0 to n={n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence} is invalid: allowed 0 < confidence < 1")
    z = statistics.NormalDist().inv_cdf((1.0 + confidence) / 2.0)
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale)


def success_table(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per strategy (in first-seen order); see the module doc for the columns."""
    rows: list[dict[str, Any]] = []
    for name in frame["strategy"].unique(maintain_order=True).to_list():
        part = frame.filter(pl.col("strategy") == name)
        values = [float(v) for v in part["success"].to_list()]
        solved = sum(values)
        mean = solved / len(values)
        low, high = wilson_interval(solved, len(values))
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


def _rate(r: dict[str, Any]) -> str:
    return (
        f"{r['strategy']} {_pct(r['success_rate'])} ({r['solved']:g} of {r['samples']}, "
        f"95 % CI {_pct(r['success_low'])} to {_pct(r['success_high'])})"
    )


def _verdict(c: PairedComparison) -> str:
    """``compare``'s rule: a difference only when :attr:`PairedComparison.decides`."""
    if c.evidence == 0:
        return "identical in every sample"
    if c.too_few:
        return f"too few samples differ to call ({c.evidence} of {c.runs}, < {MIN_PAIRED_RUNS})"
    if c.holds_zero:
        return "no difference shown"
    return "worse" if (c.difference or 0.0) < 0 else "better"


def success_summary(frame: pl.DataFrame, baseline: str | None = None, model: str | None = None) -> list[str]:
    """The executive summary's lines (module doc); ``baseline`` defaults to ``none`` when it ran,
    else the first strategy; ``model`` is the model that answered (a name starting with
    :data:`OFFLINE_PREFIX` is an offline stand-in, and the first line says so)."""
    table = success_table(frame)
    names = table["strategy"].to_list()
    base = baseline or ("none" if "none" in names else names[0])
    samples = frame["transcript"].n_unique()
    who = (
        f"Answers written by an offline stand-in ({model}), not a model: "
        if model is not None and model.startswith(OFFLINE_PREFIX)
        else f"Answers written by {model}: "
        if model
        else ""
    )
    lines = [
        f"{who}{samples} samples × {len(names)} strategies ({frame.height} runs); success is the task's "
        "score (an errored sample counts as a failure); a success rate's interval is its 95 % Wilson "
        "score interval, a difference's the paired 95 % bootstrap interval over samples."
    ]
    ranked = list(table.sort("success_rate", descending=True, maintain_order=True).iter_rows(named=True))
    top = ranked[0]
    others = [
        paired_comparison(frame, r["strategy"], top["strategy"], "success", data="all") for r in ranked[1:]
    ]
    if others and all(c.decides and (c.difference or 0.0) < 0 for c in others):
        lines.append(
            f"Best success rate: {_rate(top)}: above every other strategy's "
            f"(paired, {others[0].runs} samples; the runner-up {ranked[1]['strategy']} "
            f"{100 * (others[0].difference or 0.0):+.1f} points)."
        )
    elif others:
        tied = [
            r
            for r, c in zip(ranked[1:], others, strict=True)
            if not (c.decides and (c.difference or 0.0) < 0)
        ]
        lines.append(
            f"No best success rate: {_rate(top)} is not told apart from "
            + ", ".join(_rate(r) for r in tied)
            + f" (the paired interval of the difference holds 0, or fewer than {MIN_PAIRED_RUNS} "
            "samples differ)."
        )
    else:
        lines.append(f"Success rate: {_rate(top)}.")
    for c in paired_success(frame, base):
        if c.difference is None or c.low is None or c.high is None:
            continue
        lines.append(
            f"{c.a} vs {base}: {100 * c.difference:+.1f} points of success "
            f"({c.interval_said('{:+.1f}', scale=100)}, {c.runs} paired samples): {_verdict(c)}."
        )
    return lines


def success_markdown(table: pl.DataFrame) -> str:
    """:func:`success_table`'s frame as the report's Markdown table (cells by
    :func:`~ctxlab.analysis.cells.cell`: whole tokens with separators, dollars to 4 decimals)."""
    rows = [
        {
            "strategy": r["strategy"],
            "samples": cell(r["samples"]),
            "solved": cell(r["solved"]),
            "success %": cell(100 * r["success_rate"], "success_pct"),
            "95 % CI (Wilson)": f"{cell(100 * r['success_low'], 'x_pct')} to {cell(100 * r['success_high'], 'x_pct')}",
            "tokens / solved": cell(r["tokens_per_solved"]),
            "$ / solved": cell(r["usd_per_solved"], "per_solved_usd"),
            "$ / sample": cell(r["usd_per_sample"], "per_sample_usd"),
            "errors": cell(r["errors"]),
        }
        for r in table.iter_rows(named=True)
    ]
    return markdown_table(pl.DataFrame(rows, schema=dict.fromkeys(rows[0], pl.String)))


def paired_markdown(pairs: list[PairedComparison]) -> str:
    """The paired comparisons against the baseline as the report's Markdown table: success
    rates and the difference in points of success, the interval, the verdict."""

    def points(x: float | None) -> str:
        return "" if x is None else f"{100 * x:+.1f}"

    rows = [
        {
            "strategy": c.a,
            "baseline": c.b,
            "paired samples": cell(c.runs),
            "samples that differ": cell(c.evidence),
            "success % (strategy)": "" if c.mean_a is None else cell(100 * c.mean_a, "a_pct"),
            "success % (baseline)": "" if c.mean_b is None else cell(100 * c.mean_b, "b_pct"),
            "difference (points)": points(c.difference),
            "95 % CI (points)": f"{points(c.low)} to {points(c.high)}"
            if c.low is not None and not c.too_few
            else "",
            "verdict": _verdict(c) if c.difference is not None else "no pair",
        }
        for c in pairs
    ]
    return markdown_table(pl.DataFrame(rows, schema=dict.fromkeys(rows[0], pl.String)))
