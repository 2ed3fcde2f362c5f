"""Tables and the written report of a replay: ``calls.parquet``, ``summary.csv``, ``report.md``
and the PNG figures (:mod:`ctxlab.analysis.plotting`).

One long ("tidy") polars frame per experiment, one row per model call
(:func:`calls_frame`); side-by-side tables come from ``group_by`` (:func:`summary_frame`,
:func:`strategy_totals`).  Smaller views of a replay or of a live agent, for notebooks and the
explorer widget: the compression rounds (:func:`rounds_frame`), what L1 offloaded
(:func:`offloads_frame`), the L2 summaries (:func:`summaries_text`), ``context_compression``
events (:func:`events_frame`), a message list (:func:`messages_frame`) and the files a
middleware wrote (:func:`files_frame`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab.analysis.cells import markdown_table
from ctxlab.analysis.run_record import (
    accounting_lines,
    prefix_lines,
    problem_lines,
    provenance_lines,
    settings_lines,
)
from ctxlab.core.events import EVENT_ROW_KEYS, event_row
from ctxlab.replay.columns import report_definitions
from ctxlab.replay.stats import with_no_compression
from ctxlab.replay.table import (
    CALLS_SCHEMA,
    SUMMARY_COLUMNS,
    TOTALS_COLUMNS,
    calls_frame,
    strategy_totals,
    summary_frame,
)

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ctxlab.replay import ReplayResult

__all__ = [
    "CALLS_SCHEMA",
    "EVENTS_SCHEMA",
    "SUMMARY_COLUMNS",
    "TOTALS_COLUMNS",
    "calls_frame",
    "events_frame",
    "files_frame",
    "markdown_table",
    "messages_frame",
    "offloads_frame",
    "rounds_frame",
    "strategy_totals",
    "summaries_text",
    "summary_frame",
    "write_report",
]

# --- views of one replay -------------------------------------------------------------------------


def rounds_frame(calls: pl.DataFrame) -> pl.DataFrame:
    """The calls where a compression round ran (``level`` L1 or L2), with what it did.

    Columns: ``transcript``, ``strategy``, ``call_index``, ``level``, ``raw_tokens``,
    ``view_tokens``, ``saved_pct`` (of this call's raw request), ``offloaded``,
    ``truncated_args``, ``cutoff_index``, ``summarizer_calls``, ``summarizer_input_tokens``,
    ``summarizer_output_tokens``.
    """
    return calls.filter(pl.col("level").is_in(["L1", "L2"])).select(
        "transcript",
        "strategy",
        "call_index",
        "level",
        "raw_tokens",
        "view_tokens",
        (100.0 * (1 - pl.col("view_tokens") / pl.col("raw_tokens"))).round(1).alias("saved_pct"),
        "offloaded",
        "truncated_args",
        "cutoff_index",
        "summarizer_calls",
        "summarizer_input_tokens",
        "summarizer_output_tokens",
    )


def offloads_frame(result: ReplayResult) -> pl.DataFrame:
    """What L1 offloaded in a replay: one row per file, in the order first offloaded.

    Columns: ``transcript``, ``strategy``, ``path`` (virtual, as the model sees it), ``bytes``
    (size of the saved file), ``first_call`` (the call that first offloaded it), ``calls``
    (how many calls sent its preview instead of the full text).
    """
    schema = {
        "transcript": pl.String,
        "strategy": pl.String,
        "path": pl.String,
        "bytes": pl.Int64,
        "call_index": pl.Int64,
    }
    rows = [{k: o.get(k) for k in schema} for o in result.offloads]
    return (
        pl.DataFrame(rows, schema=schema)
        .group_by("transcript", "strategy", "path", maintain_order=True)
        .agg(
            pl.col("bytes").first(),
            pl.col("call_index").min().alias("first_call"),
            pl.len().cast(pl.Int64).alias("calls"),
        )
        .sort("transcript", "strategy", "first_call", maintain_order=True)
    )


def summaries_text(result: ReplayResult, *, max_chars: int | None = 2500) -> str:
    """The summary of every L2 round of a replay, as readable text (one block per round).

    Each block names the transcript, the call, the cutoff and the summary's size in tokens;
    texts longer than ``max_chars`` are cut (``None``: never), the full text stays in
    ``result.summaries``.
    """
    blocks = []
    for s in result.summaries:
        text = s.get("text") or ""
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + f"\n[... {len(text) - max_chars:,} more characters]"
        head = (
            f"=== {s.get('transcript')} [{s.get('strategy')}] call {s.get('call_index')}: "
            f"cutoff_index={s.get('cutoff_index')}, {s.get('tokens')} tokens"
        )
        if s.get("error"):
            head += f", summarizer error: {s['error']}"
        blocks.append(head + " ===\n" + text)
    return "\n\n".join(blocks) if blocks else "(no L2 round: no summary)"


# --- views of a live agent -----------------------------------------------------------------------

#: polars schema of :func:`events_frame` (the keys of :func:`ctxlab.core.events.event_row`)
EVENTS_SCHEMA: dict[str, Any] = {
    "phase": pl.String,
    "level": pl.String,
    "tokens_before": pl.Int64,
    "tokens_after": pl.Int64,
    "threshold": pl.Float64,
    "l2_threshold": pl.Float64,
    "offloaded": pl.Int64,
    "cutoff_index": pl.Int64,
    "file_path": pl.String,
    "error": pl.String,
}
assert tuple(EVENTS_SCHEMA) == EVENT_ROW_KEYS


def events_frame(events: Iterable[dict[str, Any]]) -> pl.DataFrame:
    """``context_compression`` events (spec R14) as a table, one row per event, in order.

    Columns (:func:`ctxlab.core.events.event_row`): ``phase``, ``level``, ``tokens_before``,
    ``tokens_after``, ``threshold`` (T), ``l2_threshold`` (T2), ``offloaded`` (count),
    ``cutoff_index``, ``file_path``, ``error``.
    """
    return pl.DataFrame([event_row(e) for e in events], schema=EVENTS_SCHEMA)


def _preview(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def messages_frame(messages: Sequence[BaseMessage], *, preview: int = 70) -> pl.DataFrame:
    """One row per message: position, type, estimated tokens (ARS default estimator), preview.

    Columns: ``i`` (position), ``type`` (``human``/``ai``/``tool``/``system``; ``summary`` for
    an L2 summary message), ``tool_calls`` (count), ``tokens`` (estimate), ``text`` (preview).
    """
    from ctxlab.core.estimation import CharClassEstimator
    from ctxlab.core.marks import is_summary_message
    from ctxlab.core.messages import message_text

    est = CharClassEstimator()
    rows = [
        {
            "i": i,
            "type": "summary" if is_summary_message(m) else m.type,
            "tool_calls": len(getattr(m, "tool_calls", None) or []),
            "tokens": est.message_tokens(m),
            "text": _preview(message_text(m), preview),
        }
        for i, m in enumerate(messages)
    ]
    schema = {"i": pl.Int64, "type": pl.String, "tool_calls": pl.Int64, "tokens": pl.Int64, "text": pl.String}
    return pl.DataFrame(rows, schema=schema)


def files_frame(root: str | os.PathLike[str]) -> pl.DataFrame:
    """Every file under ``root`` (a file backend's root folder): virtual path and size in bytes.

    Paths are shown as the model sees them (``/outputs/...``), sorted.
    """
    base = Path(root)
    rows = [
        {"path": "/" + p.relative_to(base).as_posix(), "bytes": p.stat().st_size}
        for p in sorted(base.rglob("*"))
        if p.is_file()
    ]
    return pl.DataFrame(rows, schema={"path": pl.String, "bytes": pl.Int64})


def write_report(
    result: ReplayResult,
    out_dir: str | Path,
    *,
    figures: bool | str = "reached",
    title: str = "ctxlab replay report",
    command: str | None = None,
    data: str = "real",
) -> dict[str, Any]:
    """Write ``calls.parquet`` (with the run record as its ``ctxlab`` metadata), ``summary.csv``,
    ``report.md``, ``run.json``, ``summaries.jsonl`` (when there are summaries) and the figures
    to ``out_dir``.

    Args:
        result: the replay.
        out_dir: the folder (made when missing).
        figures: ``"reached"`` (default): per-run budget figures only for the runs whose raw
            request reaches T; ``"all"`` (or ``True``): for every run; ``"none"`` (or ``False``):
            no figure.  The saving-by-strategy and cost figures are drawn unless ``"none"``.
        title: the report's title.
        command: the command line, recorded in the report and the run record.
        data: which runs the executive summary, the per-run statistics and the pooled figures
            use: ``"real"`` (default; all runs when none is real) or ``"all"``
            (:func:`ctxlab.replay.stats.pooled_runs`).

    Returns:
        ``{"calls", "summary", "report", "run": path, "summaries": path or None,
        "figures": [paths]}``.
    """
    from ctxlab.analysis.run_record import parquet_metadata, write_run_json

    which: str = ("all" if figures else "none") if isinstance(figures, bool) else figures
    if command is not None and not result.provenance.get("command"):
        result.provenance["command"] = command
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    calls = result.frame()
    summary = summary_frame(calls)
    totals = strategy_totals(calls)
    calls_path = out / "calls.parquet"
    calls.write_parquet(calls_path, metadata=parquet_metadata(result))
    summary_path = out / "summary.csv"
    summary.write_csv(summary_path)
    figure_paths: list[Path] = []
    if which != "none" and not calls.is_empty():
        from ctxlab.analysis.plotting import write_figures
        from ctxlab.analysis.verdicts import summarizer_note

        note = summarizer_note(result)
        figure_paths = write_figures(
            calls, summary, out / "figures", settings=result.settings, runs=which, data=data, note=note,
            note_of=lambda strategy: summarizer_note(result, [strategy]),
        )  # fmt: skip
        from ctxlab.analysis.costs import write_cost_figure

        cost_figure = write_cost_figure(
            calls, out / "figures", price_label=_price_line(result), data=data, note=note
        )
        if cost_figure is not None:
            figure_paths.append(cost_figure)
        from ctxlab.analysis.plotting.stall import write_stall_figure

        stall_figure = write_stall_figure(calls, out / "figures", data=data, note=note)
        if stall_figure is not None:
            figure_paths.append(stall_figure)
        price = getattr(result, "price", None)
        if price is not None:
            from ctxlab.analysis.plotting.frontier import write_frontier_figure

            frontier = write_frontier_figure(calls, out / "figures", price_key=price.key, note=note)
            if frontier is not None:
                figure_paths.append(frontier)
    report_path = out / "report.md"
    report_path.write_text(
        _report_markdown(result, calls, summary, totals, figure_paths, out, title, command, which, data),
        encoding="utf-8",
    )
    summaries_path = None
    if result.summaries:
        summaries_path = out / "summaries.jsonl"
        with summaries_path.open("w", encoding="utf-8") as f:
            for s in result.summaries:
                f.write(json.dumps(s, ensure_ascii=False, default=str) + "\n")
    run_path = write_run_json(result, out)  # last: a folder with run.json is a finished run
    return {
        "calls": calls_path,
        "summary": summary_path,
        "report": report_path,
        "run": run_path,
        "summaries": summaries_path,
        "figures": figure_paths,
    }


def _report_markdown(
    result: ReplayResult,
    calls: pl.DataFrame,
    summary: pl.DataFrame,
    totals: pl.DataFrame,
    figure_paths: list[Path],
    out: Path,
    title: str,
    command: str | None,
    figures: str = "all",
    data: str = "real",
) -> str:
    from ctxlab.analysis.verdicts import executive_summary, verdict_sections

    lines = [f"# {title}", "", "## Executive summary", ""]
    lines += executive_summary(result, summary=summary, data=data).markdown()
    lines.append("")
    lines.append(
        f"Generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (f" by `{command}`." if command else ".")
    )
    lines.append("")
    lines.append(
        f"Strategies: {', '.join(result.strategies) or '(none)'}. "
        f"Runs replayed: {result.replayed} (a run: one transcript × one strategy; "
        f"{calls['transcript'].n_unique()} transcripts). Model calls: {calls.height}. "
        f"Measuring estimator: `{result.measure}` (one estimator for every strategy)."
        + (f" Provider context window: {result.window}." if result.window else "")
    )
    said = [f"**{len(result.errors)} problem(s)**"] if result.errors else []
    said += [f"{len(result.warnings)} warning(s)"] if result.warnings else []
    if said:
        lines += ["", " and ".join(said) + ": see [Errors and skipped files](#errors-and-skipped-files)."]
    lines += settings_lines(result)
    lines += ["", "## Per strategy", ""]
    if totals.height:
        shown = with_no_compression(totals)
        lines.append(markdown_table(shown, [c for c in shown.columns if not c.startswith("max_")]))
        lines += ["", TOTALS_NOTE]
        extra = accounting_lines(result, totals)
        lines += ["", *"\n\n".join(extra).split("\n")] if extra else []
    else:
        lines.append("Nothing was replayed.")
    lines += ["", *verdict_sections(result, markdown_table, data)]
    lines += ["", "## Per transcript and strategy", ""]
    if summary.height:
        lines.append(markdown_table(summary))
    else:
        lines.append("Nothing was replayed.")
    lines += ["", "## Unrecorded prefix", ""]
    lines += prefix_lines(result)
    lines += ["", "## Cost and summary fidelity", ""]
    lines += _cost_section(result, calls, out, figure_paths)
    lines += ["", "## Metric definitions", ""]
    lines.append("All token values are estimates in tokens by the measuring estimator.")
    lines.append("")
    for name, text in report_definitions().items():  # the column registry's, in its order
        lines.append(f"- **{name}**: {text.rstrip('.')}.")
    lines += ["", "## Errors and skipped files", ""]
    lines += problem_lines(result)
    lines += ["", "## Figures", ""]
    runs = summary.height
    budgets = sum(1 for p in figure_paths if p.parent.name == "budget")
    if figures == "reached" and budgets < runs:
        lines += [
            f"Budget figures for the {budgets} of {runs} runs whose raw request reaches T (the others "
            "never compress; `--figures all` draws every run).",
            "",
        ]
    if figure_paths:
        for p in figure_paths:
            rel = p.relative_to(out).as_posix()
            lines.append(f"- [{p.stem}]({rel})")
        overview = next((p for p in figure_paths if p.name == "saving_by_strategy.png"), None)
        if overview is not None:
            lines += ["", f"![saving by strategy]({overview.relative_to(out).as_posix()})"]
        from ctxlab.analysis.plotting.stall import STALL_FIGURE

        stall = next((p for p in figure_paths if p.name == STALL_FIGURE), None)
        if stall is not None:
            lines += [
                "",
                "Each L2 round's wait on compression in simulated seconds (`stall_s` of the calls at level "
                "L2; the executive summary's stall line gives the same counts, shares and p99):",
                "",
                f"![stall per L2 round]({stall.relative_to(out).as_posix()})",
            ]
    else:
        lines.append("No figures.")
    lines += ["", "## Provenance", ""]
    lines += provenance_lines(result)
    lines += [
        "",
        "## Files",
        "",
        "- `calls.parquet`: one row per model call (columns: "
        + ", ".join(f"`{c}`" for c in CALLS_SCHEMA)
        + ")",
        "- `summary.csv`: one row per transcript × strategy",
        "- `run.json`: what produced this run (the provenance above, the problems, the failed summaries); "
        "the same record is the `ctxlab` metadata of `calls.parquet`",
        "- `summaries.jsonl`: the L2 summary texts (when any), each with its round's fidelity "
        "(span/needed identifiers, carried, recalls, the needed identifiers it dropped)",
        "- `files/`: offloaded tool results and conversation histories written by the middlewares",
        "",
    ]
    return "\n".join(lines)


#: the one definition of the per-strategy table's measures (its figures are pooled; the headlines'
#: are per run, :data:`ctxlab.analysis.verdicts.MEASURE_LABELS`)
TOTALS_NOTE = (
    "Definitions in this table: every figure is **pooled over the strategy's calls** (all its runs "
    "together): `saving_pct` = 1 − Σ sent / Σ raw over all calls, `saving_pct_feasible` the same over the "
    "calls whose uncompressed request fits the window (`infeasible_calls` / `infeasible_share`: the others); "
    "`needed_recall` and `span_recall` are pooled over all its L2 rounds (Σ carried / Σ identifiers), not "
    "the mean per-run figures of the executive summary and the per-run statistics."
)


def _price_line(result: ReplayResult) -> str | None:
    price = getattr(result, "price", None)
    return f"{price.key}, prices as of {price.as_of}" if price is not None else None


def _cost_section(
    result: ReplayResult, calls: pl.DataFrame, out: Path, figure_paths: list[Path]
) -> list[str]:
    """The report's cost and fidelity section: the price row (with its date and source), the
    per-strategy table and the cost figure."""
    from ctxlab.analysis.costs import COST_FIGURE, cost_table
    from ctxlab.analysis.frontier import frontier_table
    from ctxlab.analysis.plotting.frontier import FRONTIER_FIGURE

    price = getattr(result, "price", None)
    if price is None or calls.is_empty():
        return ["No cost: nothing was replayed, or no price row was given."]
    lines = [
        f"Prices: **{price.key}** — {price.label()}." + (f" Note: {price.note}" if price.note else ""),
        "",
        "Costs are US dollars with that provider's prompt caching (definitions below); `no compression` "
        "is the uncompressed request of every call under the same caching. Definitions in this table: "
        "recalls are **pooled over each strategy's L2 rounds** (Σ carried / Σ identifiers); per round they "
        "are in `summaries.jsonl`.",
        "",
        markdown_table(with_no_compression(cost_table(calls))),
    ]
    figure = next((p for p in figure_paths if p.name == COST_FIGURE), None)
    if figure is not None:
        lines += ["", f"![cost per call]({figure.relative_to(out).as_posix()})"]
    frontier = next((p for p in figure_paths if p.name == FRONTIER_FIGURE), None)
    if frontier is not None:
        lines += [
            "",
            "Cost saving against identifier recall (up and right is better; large dots pooled per strategy, "
            "small dots its runs; a run without a summary at *no summary*). Another price row: replay "
            "again with `--price-model` (`ars-cache` optimizes for that row too); "
            "`ctxlab.analysis.plotting.plot_frontier` draws several side by side.",
            "",
            f"![cost saving vs identifier recall]({frontier.relative_to(out).as_posix()})",
            "",
            "Pooled per strategy, and the mean per run with its 95 % bootstrap interval over runs "
            "(hollow markers and error bars in the figure); the identifier recall's over the *qualified* "
            "runs, those with a summarized span.",
            "",
            markdown_table(frontier_table({price.key: calls})),
        ]
    return lines
