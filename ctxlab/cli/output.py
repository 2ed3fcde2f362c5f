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

#: terminal tables narrower than this drop the token totals and the cache/max columns
COMPACT_BELOW = 130
#: rows of the per-transcript table printed (the rest is in summary.csv)
ROW_LIMIT = 40


def console(stderr: bool = False) -> Any:
    """A rich ``Console`` for stdout (or stderr): the terminal's width on a terminal, else wide
    enough for any table (nothing is cut or wrapped when the output goes to a file or a pipe)."""
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


def print_summary(result: Any, totals: Any, written: Mapping[str, Any], out: Path) -> None:
    """Print the run: header, tables, costs, problems and the "written to" line."""
    from rich.table import Table

    con = console()
    s = result.settings
    window = f"; context window {result.window}" if getattr(result, "window", None) else ""
    con.print(
        f"[bold]ctxlab {', '.join(result.strategies)}[/bold]: T = {s.entry_threshold_tokens:,} tokens, "
        f"T2 = {s.l2_threshold_tokens:,.0f} tokens, keep {s.summary_keep_messages} messages, "
        f"tool-result limit {s.summary_tool_result_token_limit} tokens; measure: {result.measure}{window}"
    )
    summary = result.summary()
    compact = sys.stdout.isatty() and con.width < COMPACT_BELOW
    renames = _level_names(result)
    masking = sorted({v for r in renames.values() for k, v in r.items() if k == "L1"})
    overflow = getattr(result, "window", None) is not None

    def rounds(r: Mapping[str, Any], level: str, name: str) -> str:
        own = renames.get(r["strategy"], {}).get(level, level)
        return str(r[f"{level.lower()}_rounds"]) if own == name else ""

    fields: list[tuple[str, Callable[[Mapping[str, Any]], str]]] = [
        ("transcript", lambda r: r["transcript"]),
        ("strategy", lambda r: r["strategy"]),
        ("runs", lambda r: str(r["transcripts"])),
        ("calls", lambda r: f"{r['calls']:,}"),
        ("raw tokens", lambda r: f"{r['raw_tokens_total']:,}"),
        ("sent tokens", lambda r: f"{r['sent_tokens_total']:,}"),
        ("saving %", lambda r: _pct(r["saving_pct"]) + ("*" if r["summary_errors"] else "")),
        ("L1", lambda r: rounds(r, "L1", "L1")),
        *((name, (lambda r, n=name: rounds(r, "L1", n))) for name in masking),
        ("L2", lambda r: rounds(r, "L2", "L2")),
        ("failed summaries", lambda r: str(r["summary_errors"])),
        *((("overflow rounds", lambda r: str(r["overflow_rounds"])),) if overflow else ()),
        ("cache share", lambda r: _share(r["mean_cache_reusable_share"])),
        ("retention", lambda r: _share(r["mean_retention"])),
        ("max view", lambda r: f"{r['max_view_tokens']:,}"),
    ]
    skip_compact = {"raw tokens", "sent tokens", "cache share", "max view"}

    def make(title: str, df: Any, names: Sequence[str]) -> Any:
        table = Table(title=title, title_justify="left")
        chosen = [(n, f) for n, f in fields if n in names and not (compact and n in skip_compact)]
        for name, _ in chosen:
            if name == "transcript":
                table.add_column(name, overflow="ellipsis" if compact else "fold", no_wrap=compact)
            else:  # a number too wide for a narrow terminal folds onto a second line, never cut
                table.add_column(
                    name,
                    justify="left" if name == "strategy" else "right",
                    overflow="fold",
                    min_width=min(len(name), 8),
                )
        for row in df.iter_rows(named=True):
            table.add_row(*(f(row) for _, f in chosen))
        return table

    every = [n for n, _ in fields]
    if summary.height:
        names = [n for n in every if n != "runs"]
        con.print(make("per transcript and strategy (tokens are estimates)", summary.head(ROW_LIMIT), names))
        if summary.height > ROW_LIMIT:
            con.print(f"... {summary.height - ROW_LIMIT} more rows in {written['summary']}", markup=False)
    if totals.height > 1 or summary.height > ROW_LIMIT:
        names = [n for n in every if n not in ("transcript", "max view")]
        con.print(make("per strategy, all transcripts", totals, names))
    if totals.height and any(totals["summary_errors"].to_list()):
        lines = [
            f"{r['strategy']}: {_pct(r['saving_pct_without_failed']) or 'no call'} % over the calls not built on one"
            for r in totals.iter_rows(named=True)
            if r["summary_errors"]
        ]
        con.print(
            "* the saving includes calls sent with a failed summary (a short error notice is no saving); "
            + "; ".join(lines),
            markup=False,
        )
    if masking:
        con.print(f"{', '.join(masking)}: the L1 rounds of the strategies that name them so", markup=False)
    _print_costs(con, result, totals)
    _print_problems(con, result)
    con.print(f"written to {out}: {', '.join(written_names(written, out))}", markup=False)


def _print_problems(con: Any, result: Any) -> None:
    if not result.errors:
        return
    con.print(f"[bold yellow]{len(result.errors)} problem(s)[/bold yellow] (listed in report.md):")
    what = {"load": "skipped", "replay": "failed", "summary": "failed summaries"}
    for e in result.errors[:20]:
        con.print(f"  - {what.get(e.kind, e.kind)}: {e}", markup=False)
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


def _print_costs(con: Any, result: Any, totals: Any) -> None:
    """The cost and needed-recall table per strategy, under the price row named with its date."""
    from rich.table import Table

    price = getattr(result, "price", None)
    if price is None or not totals.height:
        return
    table = Table(title="cost and summary fidelity per strategy", title_justify="left")
    columns = (
        "strategy",
        "calls",
        "L2",
        "cost $",
        "per call $",
        "raw cost $",
        "cost saving %",
        "needed recall",
    )
    for name in columns:
        table.add_column(name, justify="left" if name == "strategy" else "right", no_wrap=True)
    for r in totals.iter_rows(named=True):
        per_call = r["cost_usd"] / r["calls"] if r["cost_usd"] is not None and r["calls"] else None
        table.add_row(
            r["strategy"],
            f"{r['calls']:,}",
            str(r["l2_rounds"]),
            _usd(r["cost_usd"]),
            _usd(per_call),
            _usd(r["raw_cost_usd"]),
            _pct(r["cost_saving_pct"]),
            _share(r["needed_recall"]),
        )
    con.print(table)
    con.print(
        f"prices: {price.key} as of {price.as_of} ({price.source}). cost $: US dollars with "
        f"{price.caching} prompt caching, the summarizer's calls included; raw cost $: the uncompressed "
        "requests under the same caching; needed recall: of the identifiers later turns used that stood "
        "only in a summarized span, the share the summaries carried (pooled over the L2 rounds)",
        markup=False,
    )
