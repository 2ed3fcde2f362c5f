"""``ctxlab diff RUN_A RUN_B``: two output folders of ``replay``/``compare`` compared run by run.

Prints the executive summary (:meth:`ctxlab.replay.diff.RunDiff.summary`), the settings and
provenance fields that differ, and per strategy the paired differences ``B − A`` (tokens,
dollars, identifier recall, failed summaries, declined summaries) with ``compare``'s bootstrap intervals; writes ``diff.md``
(all of it, every field side by side), ``diff.csv`` (the paired table) and ``diff.png``
(:func:`ctxlab.analysis.plotting.plot_diff`) into ``--out`` (default :func:`default_out`: beside
``RUN_B``, named after both runs), and says where.

Exit status: 0 when the folders were compared; 1 when one is not a run folder or they share no
strategy; 2 on a usage error.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ctxlab.cli.options import CliError

__all__ = ["MEANS_NOTE", "add_diff_parser", "default_out", "diff_markdown", "run_diff_cmd"]

#: how the paired table's means are weighted, said beside it (terminal and diff.md)
MEANS_NOTE = (
    "mean A, mean B and B − A are weighted alike: source-balanced (each source's runs alike) "
    "when the pairs come from more than one source, so mean B − mean A = B − A; the plain means "
    "over runs are the plain mean columns"
)


def default_out(run_a: str | Path, run_b: str | Path) -> Path:
    """Where ``ctxlab diff`` writes without ``--out``: beside run B, a folder named after both
    runs (``runs/t16`` and ``runs/t32`` give ``runs/diff_t16_vs_t32``), so that a diff of other
    runs never replaces it and no run folder is written into."""
    a, b = Path(run_a).resolve(), Path(run_b).resolve()
    return Path(run_b).parent / f"diff_{a.name}_vs_{b.name}"


def add_diff_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ctxlab diff``."""
    p = sub.add_parser(
        "diff",
        help="compare two run folders: settings side by side, paired per-run differences with intervals",
        description=(
            "Compare two output folders of ctxlab replay/compare (A, then B): their settings and "
            "provenance side by side, and per strategy the mean per-run difference B - A of tokens "
            "sent, dollars, identifier recall and failed summaries over the runs both hold, with the "
            "bootstrap intervals of compare. Writes diff.md, diff.csv and diff.png into --out."
        ),
    )
    p.add_argument("run_a", metavar="RUN_A", help="the first run folder (A)")
    p.add_argument("run_b", metavar="RUN_B", help="the second run folder (B); differences are B - A")
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="where to write (default: beside RUN_B, a folder named after both runs: diff_<A>_vs_<B>)",
    )
    p.add_argument(
        "--data",
        choices=("real", "all"),
        default="real",
        help="which runs are paired: real (all runs when none is real) or all (default: %(default)s)",
    )
    p.add_argument("--no-figure", action="store_true", help="do not draw diff.png")


def _cell(v: Any) -> str:
    return "" if v is None else str(v).replace("|", "\\|").replace("\n", " ")


def _number(v: float | None, column: str) -> str:
    from ctxlab.replay.diff import format_value

    return format_value(v, column, signed=False)


def diff_markdown(diff: Any) -> str:
    """``diff.md``: the executive summary, the paired table and every field side by side."""
    lines = [f"# ctxlab diff: B = {diff.b} vs A = {diff.a}", "", "## Executive summary", ""]
    lines += [f"- {line}" for line in diff.summary()]
    lines += [
        "",
        "## Paired differences per strategy (B − A per run)",
        "",
        f"{MEANS_NOTE}.",
        "",
        "| strategy | measure | runs | sources | mean A | mean B | B − A | 95 % CI | verdict "
        "| plain mean A | plain mean B |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for r in diff.table.iter_rows(named=True):
        c = r["column"]
        ci = f"{_number(r['low'], c)} to {_number(r['high'], c)}" if r["low"] is not None else ""
        lines.append(
            f"| {r['strategy']} | {r['measure']} | {r['runs']} | {r['sources']} | {_number(r['mean_a'], c)} | "
            f"{_number(r['mean_b'], c)} | {_number(r['difference'], c)} | {ci} | {r['verdict']} | "
            f"{_number(r['plain_a'], c)} | {_number(r['plain_b'], c)} |"
        )
    lines += ["", "## Settings and provenance, side by side", "", "| field | A | B | |", "|---|---|---|---|"]
    for name, a, b in diff.fields:
        lines.append(f"| {name} | {_cell(a)} | {_cell(b)} | {'' if a == b else 'differs'} |")
    return "\n".join(lines) + "\n"


def run_diff_cmd(args: argparse.Namespace) -> int:
    """Compare, print, write; a folder that cannot be compared is a :class:`CliError` (exit 1)."""
    from ctxlab.cli.output import console, fit_table
    from ctxlab.replay.diff import RunDiffError, diff_folders

    try:
        diff = diff_folders(args.run_a, args.run_b, data=args.data)
    except RunDiffError as exc:
        raise CliError(str(exc), code=1) from exc
    out = Path(args.out) if args.out is not None else default_out(args.run_a, args.run_b)
    replaced = (out / "diff.md").exists()
    out.mkdir(parents=True, exist_ok=True)
    md = out / "diff.md"
    md.write_text(diff_markdown(diff), encoding="utf-8")
    csv = out / "diff.csv"
    diff.table.write_csv(csv)
    written = [md.name, csv.name]
    if not args.no_figure:
        from ctxlab.analysis.plotting.diff import write_diff_figure

        png = write_diff_figure(diff, out)
        if png is not None:
            written.append(png.name)
    con = console()
    con.print("executive summary:", markup=False)
    for line in diff.summary():
        con.print(f"  {line}", markup=False)
    changed = diff.changed()
    if changed:
        table, _ = fit_table(
            "settings and versions that differ (every field: diff.md)",
            [("field", lambda r: r["field"]), ("A", lambda r: _cell(r["a"])), ("B", lambda r: _cell(r["b"]))],
            [{"field": k, "a": a, "b": b} for k, a, b in changed],
            con.width,
            wrap=("field", "A", "B"),
        )
        con.print(table)
    rows = list(diff.table.iter_rows(named=True))
    columns = [
        ("strategy", lambda r: r["strategy"]),
        ("measure", lambda r: r["measure"]),
        ("runs", lambda r: str(r["runs"])),
        ("sources", lambda r: str(r["sources"])),
        ("mean A", lambda r: _number(r["mean_a"], r["column"])),
        ("mean B", lambda r: _number(r["mean_b"], r["column"])),
        ("B − A", lambda r: _number(r["difference"], r["column"])),
        ("95 % CI low", lambda r: _number(r["low"], r["column"])),
        ("95 % CI high", lambda r: _number(r["high"], r["column"])),
        ("verdict", lambda r: r["verdict"]),
        ("plain mean A", lambda r: _number(r["plain_a"], r["column"])),
        ("plain mean B", lambda r: _number(r["plain_b"], r["column"])),
    ]
    order = (
        "strategy",
        "measure",
        "B − A",
        "verdict",
        "95 % CI low",
        "95 % CI high",
        "runs",
        "mean A",
        "mean B",
        "sources",
        "plain mean A",
        "plain mean B",
    )
    table, dropped = fit_table(
        f"paired per-run differences B − A ({diff.data})",
        columns,
        rows,
        con.width,
        priority=order,
        wrap=("strategy", "measure", "verdict"),
    )
    con.print(table)
    con.print(f"({MEANS_NOTE})", markup=False)
    if dropped:
        con.print(f"(left out: {', '.join(dropped)}; diff.csv has them)", markup=False)
    con.print(
        f"written to {out}: {', '.join(written)}"
        + (" (replacing the diff written there before)" if replaced else ""),
        markup=False,
    )
    return 0
