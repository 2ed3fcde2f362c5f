"""The executive summary's stall line (issue 34): how long calls waited on compression, per
strategy, when the replay ran with a latency model (``--summarizer-latency``).

The figures are the pooled per-strategy columns of :mod:`ctxlab.replay.columns.stall`
(``stall_total_s``, ``l2_stall_p50_s``, ``l2_stall_p99_s``, ``l2_no_stall_share``,
``prepared_rounds``, ``prepared_wasted``, ``prepared_waste_share``, ``prepared_wasted_usd``) read
from the totals frame (:func:`ctxlab.replay.table.strategy_totals`); nothing is computed again.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ctxlab.replay.columns.stall import NO_STALL_SECONDS
from ctxlab.replay.latency import OUTPUT_TOKENS_PER_SECOND, STEP_BASE_SECONDS

__all__ = ["stall_line"]


def stall_line(totals: pl.DataFrame, over: str, latency: dict[str, Any] | None = None) -> str | None:
    """One sentence: per strategy, the seconds its calls waited on compression (simulated time),
    its L2 rounds' median and 99th-percentile wait, the share of rounds that waited less than
    50 ms, and its prepared summaries used and wasted (count, share of the summaries made,
    dollars); ``None`` when the replay had no latency model (the stall columns are empty).

    Args:
        totals: the per-strategy totals (one row per strategy, the stall columns among them).
        over: which runs the totals pool (the pooled runs' label, e.g. "real runs of 240 transcript(s)").
        latency: the run's latency model as recorded (``run.json`` ``latency``: ``summarizer``,
            ``agent_step``), named in the sentence when given.
    """
    if "stall_total_s" not in totals.columns:
        return None
    rows = [r for r in totals.iter_rows(named=True) if r.get("stall_total_s") is not None]
    if not rows:
        return None
    parts = [_part(r) for r in rows]
    model = ""
    if latency:
        step = latency.get("agent_step")
        if step == "auto":
            step = f"{STEP_BASE_SECONDS:g} s + the answer's output tokens at {OUTPUT_TOKENS_PER_SECOND:g}/s"
        model = f"; summarizer call {latency.get('summarizer')}, agent step {step}"
    return (
        f"Stall (simulated seconds the calls waited on compression, beyond the middleware's CPU; "
        f"pooled over {over}{model}): " + "; ".join(parts) + "."
    )


def _part(r: dict[str, Any]) -> str:
    text = f"{r['strategy']} {float(r['stall_total_s']):,.1f} s"
    rounds = int(r.get("l2_rounds") or 0)
    if rounds and r.get("l2_stall_p50_s") is not None:
        share = float(r.get("l2_no_stall_share") or 0.0)
        text += (
            f" over {rounds} L2 round(s) (p50 {float(r['l2_stall_p50_s']):.2f} s, p99 "
            f"{float(r['l2_stall_p99_s']):.2f} s; {share:.0%} waited < {NO_STALL_SECONDS * 1000:g} ms)"
        )
    else:
        text += " (no L2 round)"
    used, wasted = int(r.get("prepared_rounds") or 0), int(r.get("prepared_wasted") or 0)
    if used or wasted:
        waste, cost = r.get("prepared_waste_share"), r.get("prepared_wasted_usd")
        text += f", {used} prepared summaries used, {wasted} wasted"
        if waste is not None:
            text += f" ({float(waste):.0%} of the summaries made"
            text += f", ${float(cost):.4f})" if cost is not None else ")"
    return text
