"""The warnings of an executive summary (:mod:`ctxlab.analysis.verdicts`): plain sentences that
qualify its headlines, each computed from the run, repeated ones grouped into one line with a
count (:func:`grouped`).

In order: a strategy that costs more than no compression (per strategy, and once when every one
does); a strategy whose pooled and per-run figures disagree in sign; few runs reached T; a source
holding most runs or raw tokens (:func:`ctxlab.replay.stratified.dominant_sources`); runs whose
request stays more than 1.5× from the recorded input tokens after the unrecorded-prefix
correction, before or after a recorded compaction, and runs whose unrecorded prefix alone is T or
more (:func:`prefix_warnings`); failed summaries; declines where a strategy could not
summarize (no valid cutoff, R13: a decision plugin's declines are the strategy's design, hybrid's
"masking is enough" and ars-cache's "does not pay", and so is every missing cutoff of a strategy
that never summarizes, masking's; none of those is warned about); rejected
summaries; summary thrash (one line per strategy with its runs); a strategy whose own trigger
stayed silent in runs whose uncompressed request reached T (:func:`silent_trigger_warnings`);
plugin problems.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab.replay.failures import THRASH_CONSECUTIVE, THRASH_WINDOW
from ctxlab.replay.prefix import OFF_BY, is_off
from ctxlab.replay.recorded import RECORDED_STRATEGY
from ctxlab.replay.stratified import dominant_sources

if TYPE_CHECKING:
    from ctxlab.replay import ReplayResult

__all__ = ["SIGN_EPSILON", "grouped", "prefix_warnings", "silent_trigger_warnings", "verdict_warnings"]

#: a figure closer to 0 than this (percentage points) has no sign worth a warning
SIGN_EPSILON = 0.05


def grouped(warnings: Sequence[str], names: Sequence[str] = ()) -> list[str]:
    """``warnings`` with repeated ones said once, in the order each first appears: the same text
    ``"... (×3)"``; the same text about several strategies (it opens with one of ``names``, then
    ``": "`` or ``" "``) once, naming them all (``"ars, ars-fast and hybrid: ..."``)."""
    by_rest: dict[tuple[str, str], list[str]] = {}
    for w in warnings:
        name = next(
            (n for n in sorted(names, key=len, reverse=True) if w.startswith((f"{n}: ", f"{n} "))), ""
        )
        sep = (": " if w.startswith(f"{name}: ") else " ") if name else ""
        by_rest.setdefault((sep, w[len(name) + len(sep) :]), []).append(name)
    out = []
    for (sep, rest), who in by_rest.items():
        named = [n for n in dict.fromkeys(who) if n]
        if not named:
            out.append(rest if len(who) == 1 else f"{rest.rstrip('.')} (×{len(who)}).")
            continue
        joined = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        out.append(f"{joined}{sep}{rest}")
    return out


def verdict_warnings(
    result: ReplayResult,
    rows: pl.DataFrame,
    totals: pl.DataFrame,
    means: dict[str, dict[str, tuple[float | None, int]]],
    reached: int,
    runs: int,
) -> list[str]:
    """The warnings of the executive summary (module docstring).

    Args:
        result: the replay (price row, prefixes, errors).
        rows: the pooled runs' ``summary.csv`` rows.
        totals: the pooled runs' strategy totals (:func:`ctxlab.replay.table.strategy_totals`).
        means: per objective column, per strategy, ``(mean over the runs it compressed, n)``.
        reached: runs whose uncompressed request reached T; runs: all pooled runs.
    """
    out = _cost_warnings(result, totals)
    out += _sign_warnings(totals, means)
    if runs and reached > 0 and reached * 2 < runs:  # none: the summary says so, no verdict
        out.append(
            f"Only {reached} of {runs} transcripts reached T: the other {runs - reached} are sent whole by every "
            "strategy; the means over compressed runs say what a strategy does where it acts."
        )
    for source, what, theirs, total in dominant_sources(rows):
        out.append(
            f"One source holds most of the {what}: {source} has {theirs:,} of {total:,} "
            f"({100 * theirs / total:.0f} %); the verdicts weigh every source alike (source-balanced "
            "means, bootstrap stratified by source), the plain means do not."
        )
    out += prefix_warnings(result)
    out += _failure_warnings(totals)
    out += _thrash_warnings(rows)
    out += silent_trigger_warnings(rows, int(result.settings.entry_threshold_tokens))
    plugins = [e for e in result.errors if e.kind == "plugin"]
    if plugins:
        out.append(
            f"{len(plugins)} plugin problem(s): "
            + "; ".join(dict.fromkeys(str(e.source) for e in plugins[:20]))
            + " (see Errors and skipped files)."
        )
    return grouped(out, [str(n) for n in totals["strategy"].to_list()] if totals.height else [])


def prefix_warnings(result: ReplayResult) -> list[str]:
    """The unrecorded prefix's warnings (:mod:`ctxlab.replay.prefix`, ``result.prefixes``):

    * runs whose estimate stays more than :data:`~ctxlab.replay.prefix.OFF_BY` × from the recorded
      input tokens after the correction on the median call before any recorded compaction
      (``off_by``), or whose ``recorded`` request (the agent's own view) does on the median call
      after one (``after_off_by``): their raw or recorded requests are not what the agent sent;
    * runs whose fixed part (in every request, no strategy compresses it) is T or more: every
      request of every strategy starts above the trigger;
    * strategies whose first summary in a run folded the placeholder of the earlier conversation
      the recording lacks (``history_tokens``): that summary's size and fidelity say nothing
      about a real history (the ``recorded`` strategy's summary is the agent's own).
    """
    out = []
    off = [
        (label, p.get("off_by"), p.get("after_off_by"))
        for label, p in sorted(result.prefixes.items())
        if is_off(p.get("off_by")) or is_off(p.get("after_off_by"))
    ]
    if off:

        def said(before: float | None, after: float | None) -> str:
            parts = [f"{before:.2f}×"] if is_off(before) and before is not None else []
            if is_off(after) and after is not None:
                parts.append(f"{after:.2f}× after the agent's compaction")
            return "; ".join(parts)

        named = ", ".join(f"{label} ({said(b, a)})" for label, b, a in off[:10])
        more = f" and {len(off) - 10} more" if len(off) > 10 else ""
        out.append(
            f"{len(off)} run(s) whose estimate stays more than {OFF_BY:g}× from the recorded input tokens "
            f"after the unrecorded-prefix correction (estimate / recorded on the median call): {named}{more}; "
            + (
                "their raw requests (after a compaction: the recorded ones) are not what the agent sent."
                if any(is_off(a) for _, _, a in off)
                else "their raw requests are not what the agent sent."
            )
        )
    threshold = int(result.settings.entry_threshold_tokens)
    big = [
        (label, int(p.get("tokens") or 0))
        for label, p in sorted(result.prefixes.items())
        if int(p.get("tokens") or 0) >= threshold
    ]
    if big:
        named = ", ".join(f"{label} ({tokens:,} tokens)" for label, tokens in big[:10])
        more = f" and {len(big) - 10} more" if len(big) > 10 else ""
        out.append(
            f"{len(big)} run(s) whose unrecorded prefix alone is at least T ({threshold:,} tokens): {named}{more}; "
            "every request of every strategy starts above the trigger, and no strategy compresses that part."
        )
    return out + _placeholder_warnings(result)


def _placeholder_warnings(result: ReplayResult) -> list[str]:
    held = {
        label: int(p.get("history_tokens") or 0)
        for label, p in result.prefixes.items()
        if int(p.get("history_tokens") or 0) > 0
    }
    folded: dict[str, list[str]] = {}
    for row in result.rows:
        label, name = row.get("transcript"), str(row.get("strategy"))
        if label in held and row.get("level") == "L2" and name != RECORDED_STRATEGY:
            runs = folded.setdefault(name, [])
            if label not in runs:  # the first L2 round of the run holds the placeholder
                runs.append(str(label))
    return [
        f"{name}: its first summary in {len(runs)} run(s) folded ctxlab's placeholder for the earlier "
        "conversation the recording lacks ("
        + ", ".join(f"{label}: {held[label]:,} tokens" for label in runs[:5])
        + "): that summary's size and fidelity say nothing about a real history, and its saving counts "
        "the placeholder as an old message like any other."
        for name, runs in folded.items()
    ]


def _cost_warnings(result: ReplayResult, totals: pl.DataFrame) -> list[str]:
    price = getattr(result, "price", None)
    column = "cost_saving_pct_feasible" if "cost_saving_pct_feasible" in totals.columns else "cost_saving_pct"
    costs = [
        (str(r["strategy"]), r[column]) for r in totals.iter_rows(named=True) if r.get(column) is not None
    ]
    if price is None or not costs:
        return []
    out = [
        f"{name} costs {-value:.1f} % more than no compression (pooled over its feasible calls, "
        f"{price.key}, prompt caching counted)."
        for name, value in costs
        if value < -SIGN_EPSILON
    ]
    if len(costs) > 1 and all(v < 0 for _, v in costs):
        out.insert(0, f"Every strategy costs more than no compression under this price row ({price.key}).")
    return out


def _sign_warnings(totals: pl.DataFrame, means: dict[str, dict[str, tuple[float | None, int]]]) -> list[str]:
    out = []
    what = {"saving_pct_feasible": "token saving", "cost_saving_pct_feasible": "dollar saving"}
    for column, name in what.items():
        if column not in totals.columns:
            continue
        for r in totals.iter_rows(named=True):
            pooled = r.get(column)
            mean, n = means.get(column, {}).get(str(r["strategy"]), (None, 0))
            if pooled is None or mean is None or not n:
                continue
            if abs(pooled) > SIGN_EPSILON and abs(mean) > SIGN_EPSILON and (pooled > 0) != (mean > 0):
                out.append(
                    f"{r['strategy']}: the pooled {name} is {pooled:+.1f} % but the plain mean per run over the "
                    f"{n} run(s) it compressed is {mean:+.1f} %: a few long runs carry the pooled figure."
                )
    return out


def _failure_warnings(totals: pl.DataFrame) -> list[str]:
    out = []
    for r in totals.iter_rows(named=True):
        failed, rounds = int(r.get("summary_errors") or 0), int(r.get("l2_rounds") or 0)
        if failed:
            out.append(_failed_line(r, failed, rounds))
        declined, rejected = int(r.get("declined_summaries") or 0), int(r.get("rejected_summaries") or 0)
        parts = []
        if declined and rounds:  # a strategy that never summarizes (masking) has no cutoff by design
            parts.append(
                f"{declined} round(s) found no valid cutoff and sent a view above T2 unsummarized (R13)"
            )
        if rejected:
            parts.append(f"{rejected} summary(ies) not committed (bigger than the span they replace)")
        if parts:
            out.append(f"{r['strategy']}: " + "; ".join(parts) + ".")
    return out


def _failed_line(r: dict[str, Any], failed: int, rounds: int) -> str:
    """A strategy's failures: "X of Y" only counts summaries against its L2 rounds; failures in
    calls without an L2 round (``failed_outside_l2``: a strategy's own compression error, such as
    a field baseline's "Compaction insufficient") are said apart, never as summaries of 0 rounds."""
    fallback = int(r.get("fallback_summaries") or 0)
    how = f" ({fallback} of them a fallback text instead of a summary)" if fallback else ""
    without = r.get("saving_pct_without_failed")
    rest = f"{without:.1f} %" if without is not None else "nothing"
    outside = min(int(r.get("failed_outside_l2") or 0), failed)
    if not outside:
        return (
            f"{r['strategy']}'s summaries failed {failed} of {rounds} times{how}; its saving over the "
            f"calls not built on a failed summary is {rest}."
        )
    summaries = failed - outside
    also = f" and {summaries} of its {rounds} L2 summaries{how}" if summaries else ""
    return (
        f"{r['strategy']}'s compression failed in {failed} call(s): {outside} without an L2 round (the "
        f"strategy's own error, not a failed summary){also}; its saving over the calls not built on "
        f"a failure is {rest}."
    )


def _thrash_warnings(rows: pl.DataFrame) -> list[str]:
    if "summary_thrash" not in rows.columns:
        return []
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows.filter(pl.col("summary_thrash").fill_null(False)).iter_rows(named=True):
        by.setdefault(str(r["strategy"]), []).append(r)
    out = []
    for strategy, runs in by.items():
        runs.sort(key=lambda r: (-r["max_consecutive_summaries"], -r["max_summaries_in_window"]))
        named = ", ".join(f"{r['transcript']} ({_thrash_of(r)})" for r in runs[:5])
        more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
        out.append(
            f"{strategy} thrashed (summarized again and again) in {len(runs)} run(s): {named}{more} "
            "(each a summarizer call and a cache rewrite)."
        )
    return out


def _thrash_of(run: dict[str, Any]) -> str:
    if run["max_consecutive_summaries"] >= THRASH_CONSECUTIVE:
        return f"{run['max_consecutive_summaries']} consecutive calls"
    return f"{run['max_summaries_in_window']} times within {THRASH_WINDOW} calls"


def silent_trigger_warnings(rows: pl.DataFrame, threshold: int) -> list[str]:
    """One line per strategy whose own trigger never fired in runs whose uncompressed request
    reached T by the replay's measure (``max_raw_tokens >= threshold``, the request with the
    unrecorded prefix), naming those runs (at most five).

    A strategy counts its request its own way (``reached_threshold``, the column's definition):
    LangChain's and DeepAgents' baselines with LangChain's approximate counter, about 4
    characters a token, which undercounts Chinese text and base64 about 3× (docs/benchmarks.md,
    section 2), so on such runs they trigger late or never and send the run whole.  Said so a
    reader does not take their 0 % there for a verdict on the same runs.  ``recorded`` is left
    out: its trigger is the agent's own cut, not a count of the request."""
    need = {"strategy", "transcript", "reached_threshold", "max_raw_tokens"}
    if not need <= set(rows.columns) or not rows.height:
        return []
    out = []
    for (strategy,), group in rows.group_by("strategy", maintain_order=True):
        if strategy == RECORDED_STRATEGY:
            continue
        silent = group.filter(
            (pl.col("max_raw_tokens").fill_null(0) >= threshold) & (pl.col("reached_threshold") == False)  # noqa: E712
        )["transcript"].to_list()
        if not silent:
            continue
        reached = group.filter(pl.col("max_raw_tokens").fill_null(0) >= threshold).height
        named = ", ".join(str(t) for t in silent[:5]) + (
            f" and {len(silent) - 5} more" if len(silent) > 5 else ""
        )
        out.append(
            f"{strategy}: its own trigger never fired in {len(silent)} of the {reached} run(s) whose "
            f"uncompressed request reached T ({named}), so it sent them whole: it counts the request its own "
            "way, not with the replay's measure (LangChain's approximate counter, which the LangChain and "
            "DeepAgents baselines use, takes about 4 characters a token and undercounts Chinese text and "
            "base64 about 3×)."
        )
    return out
