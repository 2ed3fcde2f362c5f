"""The facts an executive summary states before its verdicts (:mod:`ctxlab.analysis.verdicts`):
what wrote the summaries (:func:`summarizer_lines`, and :func:`summarizer_note`, the line every
figure carries), the provider's window and the calls whose no-compression baseline is infeasible,
the unrecorded prefix per source (where nothing is recorded, said so) and the sources the runs
come from (:func:`baseline_lines`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ctxlab.replay.building import STAND_IN
from ctxlab.replay.stratified import run_sources

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxlab.replay import ReplayResult

__all__ = ["baseline_lines", "prompt_not_read", "summarizer_lines", "summarizer_note"]


#: what the summarizer lines say of a strategy that made no summary in the runs (masking)
NONE_MADE = "no summary made"


def _writers(result: ReplayResult) -> dict[str, str]:
    """Strategy -> what wrote its summaries (``result.provenance["summarizers"]``, else the batch's
    summarizer), or :data:`NONE_MADE` for a strategy that made no summary and called no summarizer
    in ``result``'s calls (masking, a run that never reached T): it is not said to have summaries
    written by anything."""
    made = {r["strategy"] for r in result.rows if r.get("level") == "L2" or r.get("summarizer_calls")}
    known = result.provenance.get("summarizers") or {}
    fallback = result.provenance.get("summarizer") or "not recorded"
    return {
        name: str(known.get(name) or fallback) if name in made else NONE_MADE for name in result.strategies
    }


def _stand_in(what: str) -> bool:
    return STAND_IN in what or what.startswith("offline")


def _grouped(
    result: ReplayResult,
) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]], list[str]]:
    """``(stand-in writers, other writers, strategies that made none)``, writers as ``(what, names)``."""
    by: dict[str, list[str]] = {}
    for name, what in _writers(result).items():
        by.setdefault(what, []).append(name)
    stand = [(w, n) for w, n in by.items() if w != NONE_MADE and _stand_in(w)]
    other = [(w, n) for w, n in by.items() if w != NONE_MADE and not _stand_in(w)]
    return stand, other, by.get(NONE_MADE, [])


def prompt_not_read(result: ReplayResult) -> list[tuple[str, list[str]]]:
    """The summarizers that do not read ``summary_prompt`` and the strategies whose summaries they
    wrote: the offline stand-ins (StructuredSummarizer, the extractive one: fixed sections of
    their own; s40 trial item 11: a custom prompt was listed in the settings as if used)."""
    return _grouped(result)[0]


def summarizer_lines(result: ReplayResult) -> list[str]:
    """What wrote each strategy's summaries (``result.provenance["summarizers"]``, else the
    batch's summarizer), strategies with the same one grouped: the offline stand-ins first, in
    bold, then the others (a model, the agent's own as recorded), then the strategies that made
    no summary in these runs."""
    stand, other, none = _grouped(result)
    if not (stand or other or none):
        return []

    def listed(groups: list[tuple[str, list[str]]]) -> str:
        return "; ".join(f"{', '.join(names)}: {what}" for what, names in groups)

    parts = []
    if stand:
        parts.append(f"**Summaries written by an offline stand-in, not a model** — {listed(stand)}.")
    if other:
        parts.append(f"{'Other summaries' if stand else 'Summaries'} written by: {listed(other)}.")
    if none:
        parts.append(f"No summary made by {', '.join(none)} in these runs.")
    return [" ".join(parts)]


def summarizer_note(result: ReplayResult, strategies: Sequence[str] | None = None) -> str:
    """One short line for every figure: what wrote the summaries (``"summaries:
    StructuredSummarizer, offline stand-in (ars, hybrid); none made (masking)"``); with
    ``strategies``, of those only (a one-strategy budget figure names its own)."""
    stand, other, none = _grouped(result)
    if strategies is not None:
        keep = set(strategies)
        stand = [(w, [n for n in names if n in keep]) for w, names in stand]
        other = [(w, [n for n in names if n in keep]) for w, names in other]
        stand, other = [g for g in stand if g[1]], [g for g in other if g[1]]
        none = [n for n in none if n in keep]
    parts = [f"{what.replace(f' ({STAND_IN})', '')}, offline stand-in ({', '.join(n)})" for what, n in stand]
    parts += [f"{what} ({', '.join(n)})" for what, n in other]
    if none:
        parts.append(f"none made ({', '.join(none)})")
    return "summaries: " + "; ".join(parts)


def _raw_col(frame: pl.DataFrame) -> pl.Expr:
    """``raw_rejected_calls`` of a runs table (0 when it lacks the column)."""
    return pl.col("raw_rejected_calls") if "raw_rejected_calls" in frame.columns else pl.lit(0)


def baseline_lines(result: ReplayResult, rows: pl.DataFrame) -> list[str]:
    """The window, the infeasible baseline, the unrecorded prefix per source and the sources."""
    lines: list[str] = []
    firsts = rows.unique("transcript", keep="first", maintain_order=True) if rows.height else rows
    raw = _raw_col(firsts)  # the transcript's own unmatched pairs: refused whatever the window
    raw_bad = int(firsts.select(raw.sum()).item()) if firsts.height else 0
    if raw_bad:  # s40: a request no agent could send either
        n_runs = firsts.filter(raw > 0).height
        lines.append(
            f"**The uncompressed request is refused on {raw_bad:,} call(s)** ({n_runs} runs): the "
            "transcript's own history has a tool result without its call (unmatched tool pairs; the load "
            "warning names the message), which a provider rejects. Those calls' no-compression baseline is "
            "infeasible: they are left out of the savings (`raw_rejected_calls`, in `infeasible_calls`)."
        )
    if result.window:
        over_window = pl.col("infeasible_calls") - raw  # the rest of infeasible_calls
        bad = firsts.filter(over_window > 0) if "infeasible_calls" in firsts.columns else firsts.head(0)
        calls = int(firsts["calls"].sum()) if firsts.height else 0
        over = int(bad.select(over_window.sum()).item()) if bad.height else 0
        if over:
            lines.append(
                f"**No compression is infeasible on {over:,} of {calls:,} calls** ({bad.height} runs): their "
                f"uncompressed request is above the provider's window ({result.window}), a request no agent "
                "could send. Savings are over the feasible calls; `infeasible_share` per run beside them."
            )
        else:
            lines.append(f"Every uncompressed request fits the provider's window ({result.window}).")
    else:
        lines.append(
            f"No provider window ({result.provenance.get('context_window') or 'none given'}): no request was "
            "checked against one."
        )
    lines += _prefix_lines(result, firsts)
    sources = run_sources(rows)
    counts: dict[str, int] = {}
    for s in sources.values():
        counts[s] = counts.get(s, 0) + 1
    if len(counts) > 1:
        listed = ", ".join(f"{s} {n}" for s, n in sorted(counts.items(), key=lambda x: -x[1]))
        lines.append(
            f"Runs by source (format): {listed}. The verdicts weigh every source alike (source-balanced "
            "means; intervals from a bootstrap stratified by source)."
        )
    return lines


def _prefix_lines(result: ReplayResult, firsts: pl.DataFrame) -> list[str]:
    """The unrecorded prefix per source: measured (median tokens of the fixed part, runs), given,
    off, or nothing recorded (said so per source); the runs that start mid-session with the median
    of their earlier conversation (:mod:`ctxlab.replay.prefix`)."""
    if not result.prefixes or not firsts.height:
        return []
    by: dict[str, dict[str, list[int]]] = {}
    history: dict[str, list[int]] = {}  # per source: the earlier conversations a file lacks
    for t, fmt in firsts.select("transcript", "transcript_format").iter_rows():
        p = result.prefixes.get(str(t))
        if p is None:
            continue
        by.setdefault(str(fmt), {}).setdefault(str(p["source"]), []).append(int(p["tokens"]))
        if int(p.get("history_tokens") or 0) > 0:
            history.setdefault(str(fmt), []).append(int(p["history_tokens"]))
    measured, nothing, other = [], [], []
    for fmt, kinds in sorted(by.items()):
        for source, tokens in kinds.items():
            tokens.sort()
            mid = tokens[len(tokens) // 2]
            if source == "recorded usage":
                measured.append(f"{fmt} ({len(tokens)} runs, median {mid:,} tokens)")
            elif source == "nothing recorded":
                nothing.append(f"{fmt} ({len(tokens)} runs)")
            else:
                other.append(f"{fmt} ({len(tokens)} runs: {source}, {mid:,} tokens)")
    parts = []
    if measured:
        parts.append("measured from the recorded usage for " + ", ".join(measured))
    if other:
        parts.append(", ".join(other))
    for fmt, tokens in sorted(history.items()):
        tokens.sort()
        parts.append(
            f"{fmt}: {len(tokens)} run(s) start mid-session, their earlier conversation (median "
            f"{tokens[len(tokens) // 2]:,} tokens) is one history message until the agent's compaction, "
            "not part of that prefix"
        )
    if nothing:
        parts.append(
            "**nothing recorded** for "
            + ", ".join(nothing)
            + ": their requests hold only what the file holds (a system prompt or tools the agent sent and "
            "the file lacks are missing from them)"
        )
    return [
        "Unrecorded prefix (the part of every request the recording does not hold): " + "; ".join(parts) + "."
    ]
