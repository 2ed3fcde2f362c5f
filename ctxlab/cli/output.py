"""What ``ctxlab replay``/``compare`` print: the run's header, the tables per transcript and per
strategy, the cost table, the problems, and the list of what was written.

On a terminal the tables fit its width; when stdout is not a terminal (a pipe, a log file) they
are written in full, never cut, so that no truncated number can be read as a real one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["console", "print_summary", "written_names"]

#: rows of the per-transcript table printed by default (``--top``; the rest is in summary.csv)
ROW_LIMIT = 40


def console(stderr: bool = False) -> Any:
    """A rich ``Console`` for stdout (or stderr): the terminal's width on a terminal (rich reads
    ``$COLUMNS`` first), else wide enough for any table (nothing is cut or wrapped when the output
    goes to a file or a pipe)."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 100_000
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:.1f}"


def _share(v: float | None) -> str:
    return "" if v is None else f"{v:.3f}"


def _usd(v: float | None) -> str:
    return "" if v is None else f"{v:.4f}"


def _level_names(result: Any) -> dict[str, dict[str, str]]:
    """Row label -> its level renames (``{"L1": "masking"}``) from the run's provenance."""
    strategies = (getattr(result, "provenance", None) or {}).get("strategies") or {}
    return {k: dict(v.get("levels") or {}) for k, v in strategies.items() if isinstance(v, Mapping)}


#: the columns a narrow terminal drops first (last in this tuple: dropped first)
PRIORITY = (
    "transcript",
    "strategy",
    "runs",
    "saving %",
    "failed summaries",
    "L2",
    "L1",
    "calls",
    "raw tokens",
    "sent tokens",
    "overflow rounds",
    "retention",
    "cache share",
    "max view",
)


def fit_table(
    title: str,
    columns: Sequence[tuple[str, Callable[[Mapping[str, Any]], str]]],
    rows: Sequence[Mapping[str, Any]],
    width: int,
    *,
    priority: Sequence[str] = PRIORITY,
    wrap: Sequence[str] = ("transcript", "strategy"),
    together: Sequence[str] = (),
) -> tuple[Any, list[str]]:
    """A rich table of ``rows`` that fits ``width`` characters, and the columns it dropped.

    Every number is written whole: number columns never wrap or shrink (their minimum width is
    their widest cell); the label columns in ``wrap`` fold onto more lines down to 12 characters.
    When the table is still too wide, columns are dropped last-``priority``-first (a column not
    in ``priority`` before any that is) until it fits; the columns in ``together`` go as one
    (the L1 counts under their own and renamed names); the caller prints a note naming them.
    """
    from rich.table import Table

    cells = {name: [f(r) for r in rows] for name, f in columns}
    need = {name: max([len(name), *(len(c) for c in cells[name])]) for name, _ in columns}
    order = sorted(
        (n for n, _ in columns),
        key=lambda n: priority.index(n) if n in priority else len(priority),
    )

    def total(names: Sequence[str]) -> int:
        return sum(min(need[n], 12) if n in wrap else need[n] for n in names) + 3 * len(names) + 1

    kept = [n for n, _ in columns]
    dropped: list[str] = []
    while len(kept) > 2 and total(kept) > width:
        victim = next(n for n in reversed(order) if n in kept and n not in wrap)
        for name in [n for n in kept if n in together] if victim in together else [victim]:
            kept.remove(name)
            dropped.append(name)
    table = Table(title=title, title_justify="left")
    for name in kept:
        if name in wrap:
            table.add_column(name, overflow="fold", min_width=min(need[name], 12))
        else:
            table.add_column(name, justify="right", no_wrap=True, min_width=need[name])
    for i in range(len(rows)):
        table.add_row(*(cells[n][i] for n in kept))
    return table, dropped


def _ranked(summary: Any) -> Any:
    """The per-transcript rows, those that compressed first (:func:`ctxlab.replay.per_run.compressed`:
    an L2 round, or an L1 round that sent less; a round that changed nothing is no compression),
    each group by raw tokens, largest first."""
    from ctxlab.replay.per_run import compressed

    return (
        summary.with_columns(compressed().alias("_c"))
        .sort(["_c", "raw_tokens_total"], descending=[True, True], maintain_order=True)
        .drop("_c")
    )


def print_summary(
    result: Any,
    totals: Any,
    written: Mapping[str, Any],
    out: Path,
    *,
    top: int = ROW_LIMIT,
    data: str = "real",
) -> None:
    """Print the run: header, the executive summary, the tables (ranked, ``top`` rows of the
    per-transcript one), costs, problems and the "written to" line."""
    from ctxlab.analysis.verdicts import executive_summary
    from ctxlab.replay.stats import with_no_compression

    con = console()
    s = result.settings
    window = f"; context window {result.window}" if getattr(result, "window", None) else ""
    con.print(
        f"[bold]ctxlab {', '.join(result.strategies)}[/bold]: T = {s.entry_threshold_tokens:,} tokens, "
        f"T2 = {s.l2_threshold_tokens:,.0f} tokens, keep {s.summary_keep_messages} messages, "
        f"tool-result limit {s.summary_tool_result_token_limit} tokens; measure: {result.measure}{window}"
    )
    summary = result.summary()
    verdict = executive_summary(result, summary=summary, data=data)
    con.print("executive summary:", markup=False)
    for line in verdict.plain():
        con.print(f"  {line}", markup=False)
    renames = _level_names(result)
    masking = sorted({v for r in renames.values() for k, v in r.items() if k == "L1"})
    overflow = getattr(result, "window", None) is not None
    # calls whose uncompressed request no agent could send (over the window, or the transcript's
    # own tool result without its call): a saving over them is measured against a request that
    # never was, so the feasible saving (the executive summary's) goes beside it
    infeasible = (
        bool(totals.height)
        and "infeasible_calls" in totals.columns
        and bool(totals["infeasible_calls"].sum())
    )

    def rounds(r: Mapping[str, Any], level: str, name: str) -> str:
        own = renames.get(r["strategy"], {}).get(level, level)
        return str(r[f"{level.lower()}_rounds"] or 0) if own == name else ""

    def share(key: str) -> Callable[[Mapping[str, Any]], str]:
        return lambda r: _share(r.get(key))

    fields: list[tuple[str, Callable[[Mapping[str, Any]], str]]] = [
        ("transcript", lambda r: r["transcript"]),
        ("strategy", lambda r: r["strategy"]),
        ("runs", lambda r: str(r["transcripts"])),
        ("calls", lambda r: f"{r['calls']:,}"),
        ("raw tokens", lambda r: f"{r['raw_tokens_total']:,}"),
        ("sent tokens", lambda r: f"{r['sent_tokens_total']:,}"),
        ("saving %", lambda r: _pct(r["saving_pct"]) + ("*" if r["summary_errors"] else "")),
        *(
            (
                ("feasible saving %", lambda r: _pct(r["saving_pct_feasible"])),
                ("infeasible", lambda r: f"{r['infeasible_calls'] or 0:,}"),
            )
            if infeasible
            else ()
        ),
        ("L1", lambda r: rounds(r, "L1", "L1")),
        *((name, (lambda r, n=name: rounds(r, "L1", n))) for name in masking),
        ("L2", lambda r: rounds(r, "L2", "L2")),
        ("failed summaries", lambda r: str(r["summary_errors"] or 0)),
        *((("overflow rounds", lambda r: str(r["overflow_rounds"] or 0)),) if overflow else ()),
        ("cache share", share("mean_cache_reusable_share")),
        ("retention", share("mean_retention")),
        ("max view", lambda r: f"{r['max_view_tokens']:,}" if r["max_view_tokens"] is not None else ""),
    ]

    def show(title: str, df: Any, names: Sequence[str]) -> None:
        chosen = [(n, f) for n, f in fields if n in names]
        at = PRIORITY.index("L1") + 1
        order = (*PRIORITY[:at], *masking, *PRIORITY[at:])  # a renamed L1 count ranks as L1
        if infeasible:  # kept before the plain saving: it is the measure the verdicts use
            at = order.index("saving %")
            order = (*order[:at], "feasible saving %", "infeasible", *order[at:])
        rows = list(df.iter_rows(named=True))
        table, dropped = fit_table(title, chosen, rows, con.width, priority=order, together=("L1", *masking))
        con.print(table)
        if dropped:
            con.print(
                f"(at {con.width} columns: left out {', '.join(dropped)}; a wider terminal or "
                f"{Path(written['summary']).name} has them)",
                markup=False,
            )

    every = [n for n, _ in fields]
    if summary.height:
        ranked = _ranked(summary)  # raw tokens is each run's "no compression" value
        shown = ranked.head(max(top, 0))
        names = [n for n in every if n != "runs"]
        show(
            "runs (per transcript and strategy; compressed first, by raw tokens; tokens are estimates)",
            shown,
            names,
        )
        if ranked.height > shown.height:
            con.print(
                f"... {ranked.height - shown.height} more runs in {written['summary']} (--top N)",
                markup=False,
            )
    if totals.height:
        names = [n for n in every if n not in ("transcript", "max view")]
        show("per strategy, all runs", with_no_compression(totals), names)
    if totals.height and any(totals["summary_errors"].to_list()):
        lines = [
            f"{r['strategy']}: {_pct(r['saving_pct_without_failed']) or 'no call'} % over the calls not built on one"
            for r in totals.iter_rows(named=True)
            if r["summary_errors"]
        ]
        con.print(
            "* the saving includes calls sent with a failed or fallback summary (no real saving); "
            + "; ".join(lines),
            markup=False,
        )
    if infeasible:
        limit = getattr(result, "window", None)
        why = (f"is over the window ({limit}) or " if limit else "") + "has a tool result without its call"
        con.print(
            f"infeasible: calls whose uncompressed request {why} (the transcript's own), which a provider "
            "refuses; saving % counts them, feasible saving % (the executive summary's) leaves them out"
            + (
                "; max view is the measuring estimator's count, while the window is checked with the "
                "provider's tokenizer: a request over it is refused with a context overflow (overflow rounds)"
                if limit
                else ""
            ),
            markup=False,
        )
    if masking:
        con.print(f"{', '.join(masking)}: the L1 rounds of the strategies that name them so", markup=False)
    _print_costs(con, result, totals, infeasible)
    _print_problems(con, result)
    con.print(f"written to {out}: {', '.join(written_names(written, out))}", markup=False)


def _print_problems(con: Any, result: Any) -> None:
    if not result.errors:
        return
    con.print(f"[bold yellow]{len(result.errors)} problem(s)[/bold yellow] (listed in report.md):")
    from ctxlab.analysis.run_record import KINDS

    for e in result.errors[:20]:
        con.print(f"  - {KINDS.get(e.kind, e.kind)}: {e}", markup=False)
    if len(result.errors) > 20:
        con.print(f"  ... {len(result.errors) - 20} more", markup=False)


def written_names(written: Mapping[str, Any], out: Path) -> list[str]:
    """Everything a run wrote, relative to ``out``: the files by name, then ``N figures``, the
    ``files/`` folder of the middlewares and the ``views/`` of the call inspector when present,
    and ``inspect.html`` when it was written (``written["html"]``)."""
    names = [
        Path(p).relative_to(out).as_posix()
        for key in ("calls", "summary", "report", "run", "summaries")
        if (p := written.get(key)) is not None
    ]
    figures = written.get("figures") or []
    if figures:
        names.append(f"{len(figures)} figure{'s' if len(figures) != 1 else ''} in figures/")
    files = out / "files"
    if files.is_dir() and any(files.rglob("*")):
        count = sum(1 for p in files.rglob("*") if p.is_file())
        names.append(f"files/ ({count} file{'s' if count != 1 else ''} the middlewares wrote)")
    views = out / "views"
    if views.is_dir():
        count = sum(1 for _ in views.glob("*/*.jsonl.gz"))
        names.append(f"views/ (the raw and sent view of every call, {count} run{'s' if count != 1 else ''})")
    if written.get("html") is not None:
        names.append(Path(written["html"]).relative_to(out).as_posix())
    return names


def _tokens(value: Any) -> str:
    return f"{value:,.0f}" if isinstance(value, (int, float)) else ""


def _breakpoints(result: Any) -> str:
    """The cache breakpoint policy of the cost columns, from the provenance."""
    model = (getattr(result, "provenance", None) or {}).get("cost_model") or {}
    return str(model.get("cache_breakpoints", "agent"))


def _print_costs(con: Any, result: Any, totals: Any, infeasible: bool = False) -> None:
    """The cost and needed-recall table per strategy ("no compression" first), under the price
    row named with its date; ``infeasible``: some uncompressed requests could not be sent (over
    the window, or a tool result without its call), so the saving over the feasible calls goes
    beside the plain one."""
    from ctxlab.replay.stats import with_no_compression

    price = getattr(result, "price", None)
    if price is None or not totals.height:
        return

    def per_call(r: Mapping[str, Any]) -> str:
        return _usd(r["cost_usd"] / r["calls"] if r["cost_usd"] is not None and r["calls"] else None)

    columns: list[tuple[str, Callable[[Mapping[str, Any]], str]]] = [
        ("strategy", lambda r: r["strategy"]),
        ("calls", lambda r: f"{r['calls']:,}"),
        ("L2", lambda r: str(r["l2_rounds"] or 0)),
        ("cost $", lambda r: _usd(r["cost_usd"])),
        ("per call $", per_call),
        ("raw cost $", lambda r: _usd(r["raw_cost_usd"])),
        ("cost saving %", lambda r: _pct(r["cost_saving_pct"])),
        *((("feasible saving %", lambda r: _pct(r.get("cost_saving_pct_feasible"))),) if infeasible else ()),
        ("valid saving %", lambda r: _pct(r.get("cost_saving_pct_without_failed"))),
        ("rejected", lambda r: str(r.get("rejected_calls") or 0)),
        ("probe pass", lambda r: _share(r.get("probe_pass_rate"))),
        ("floor: ids", lambda r: _share(r.get("dump_probe_pass_rate"))),
        ("floor: recent", lambda r: _share(r.get("recent_probe_pass_rate"))),
        ("identifier recall", lambda r: _share(r["needed_recall"])),
        ("summary tok", lambda r: _tokens(r.get("mean_summary_tokens"))),
    ]
    order = (
        "strategy",
        *(("feasible saving %",) if infeasible else ()),
        "cost saving %",
        "probe pass",
        "floor: ids",
        "floor: recent",
        "identifier recall",
        "cost $",
        "valid saving %",
        "rejected",
        "summary tok",
        "per call $",
        "raw cost $",
        "L2",
        "calls",
    )
    rows = list(with_no_compression(totals).iter_rows(named=True))
    table, dropped = fit_table(
        "cost and summary fidelity per strategy", columns, rows, con.width, priority=order, wrap=("strategy",)
    )
    con.print(table)
    if dropped:
        con.print(
            f"(at {con.width} columns: left out {', '.join(dropped)}; report.md has them)", markup=False
        )
    con.print(
        f"prices: {price.key} as of {price.as_of} ({price.source}). cost $: US dollars with "
        f"{price.caching} prompt caching, the summarizer's calls included; raw cost $: the uncompressed "
        "requests under the same caching; "
        + (
            "feasible saving %: over the calls whose uncompressed request a provider accepts; "
            if infeasible
            else ""
        )
        + "valid saving %: over the calls neither built on a failed summary "
        "nor rejected by the provider (rejected: requests with unmatched tool calls/results); probe pass: "
        "of the probes drawn from the later turns (a file touched again, a command re-run, an error named "
        "again, a constraint acted on, a value reused), the share the summaries passed by naming the thing "
        "and stating what happened to it; floor: ids / floor: recent: the same probes on an identifier dump "
        "and on the span's last messages verbatim, at each summary's size; identifier recall (column "
        "needed_recall): of the identifiers later turns used that stood only in a summarized span, the "
        "share the summaries named (a list of names scores well on it); summary tok: mean tokens of a "
        f"summary message (pooled over the L2 rounds; breakpoints: {_breakpoints(result)})",
        markup=False,
    )
