"""``ctxlab eval``: an Inspect AI task under several strategies; task success as a measure.

Usage::

    ctxlab eval [TASK] --strategies none,ars,masking,inspect-edit [--model ctxlab/reader]
                [--epochs N] [--seed N] [-T key=value ...] [--out DIR] [--price-model P:M]

Without TASK the shipped offline task runs (``ctxlab/context_recall``, played by the offline
``ctxlab/reader`` model); TASK is any Inspect task reference (``file.py@name``) whose task takes a
``strategy`` argument.  ``--model`` is any Inspect model (``anthropic/claude-sonnet-4-5`` with
``ANTHROPIC_API_KEY`` set, ...).  Writes ``report.md``, ``samples.csv``, ``figures/success.png``
and the Inspect logs (``logs/``, with ctxlab's per-call measures in each sample's metadata) into
``--out``, and prints the success table.  The engine is
:func:`ctxlab.integrations.inspect.evaluate.run_eval`.

Exit status: 0 when every strategy's eval finished; 1 when one did not (the report lists it);
2 on a usage error (an unknown strategy, a malformed ``-T``, Inspect AI missing).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxlab.cli.options import CliError

__all__ = ["add_eval_parser", "run_eval_cmd"]


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ctxlab eval``."""
    p = sub.add_parser(
        "eval",
        help="run an Inspect AI task under several strategies and compare task success",
        description="Run an Inspect AI task under several strategies (same samples, seed and epochs) "
        "and report success rates with paired bootstrap intervals, tokens and dollars per solved sample.",
    )
    p.add_argument(
        "task", nargs="?", default=None, metavar="TASK", help="Inspect task (default: the offline task)"
    )
    p.add_argument(
        "--strategies", required=True, metavar="A,B,...", help="'none' and/or strategy names (required)"
    )
    p.add_argument("--model", default="ctxlab/reader", help="Inspect model (default: %(default)s, offline)")
    p.add_argument("--epochs", type=int, default=1, help="epochs per sample (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="generation seed (default: %(default)s)")
    p.add_argument(
        "-T", "--task-arg", action="append", default=[], metavar="KEY=VALUE", help="a task argument"
    )
    p.add_argument("--out", default="out/eval", help="output folder (default: %(default)s)")
    p.add_argument("--price-model", default=None, metavar="PROVIDER:MODEL", help="price row for dollars")
    p.add_argument("--prices", default=None, help="price table file (default: the shipped one)")
    p.add_argument("--max-samples", type=int, default=None, help="samples run in parallel (Inspect's)")
    p.add_argument("--limit", type=int, default=None, help="run only the first N samples")


def _task_args(pairs: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise CliError(f"-T {pair!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = json.loads(raw)
        except ValueError:
            out[key.strip()] = raw
    return out


def _names(text: str) -> list[str]:
    from ctxlab.cli.replay_cmd import lab_manager
    from ctxlab.integrations.inspect.compaction import NO_COMPACTION
    from ctxlab.replay import strategies as registered
    from ctxlab.replay.names import did_you_mean

    known = [NO_COMPACTION, *registered(lab_manager(argparse.Namespace(plugins_dir=None)))]
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise CliError("--strategies names no strategy")
    for n in names:
        if n not in known:
            raise CliError(
                f"unknown strategy {n!r}{did_you_mean(n, known)}; known: {', '.join(sorted(known))}"
            )
    if len(set(names)) != len(names):
        raise CliError("--strategies names a strategy twice")
    return names


def run_eval_cmd(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``ctxlab eval`` (module doc); returns the exit status."""
    try:
        from ctxlab.integrations.inspect.evaluate import run_eval, write_eval_report
    except ImportError as exc:
        if not (exc.name or "").startswith("inspect_ai"):
            raise
        raise CliError("`ctxlab eval` needs Inspect AI: pip install 'ctxlab[inspect]'") from exc
    from ctxlab.cli.resolve import price_row

    names = _names(args.strategies)
    task_args = _task_args(args.task_arg)
    if args.epochs < 1:
        raise CliError(f"--epochs={args.epochs} is invalid: allowed an integer > 0")
    price = price_row(args)
    out = Path(args.out)
    result = run_eval(
        names,
        model=args.model,
        out=out,
        task=args.task,
        task_args=task_args,
        epochs=args.epochs,
        seed=args.seed,
        price=price,
        max_samples=args.max_samples,
        limit=args.limit,
    )
    written = write_eval_report(result, out, command="ctxlab " + " ".join(argv))
    _print(result, written)
    for name, error in result.failed.items():
        print(f"ctxlab: error: the eval under {name} did not finish: {error}", file=sys.stderr)
    return 1 if result.failed else 0


def _print(result: Any, written: dict[str, Path]) -> None:
    from rich.table import Table

    from ctxlab.analysis.success import success_summary, success_table
    from ctxlab.cli.output import console

    con = console()
    con.print("executive summary:")
    for line in success_summary(result.frame, model=result.model):
        con.print(f"  {line}")
    t = Table(title="task success per strategy", title_justify="left")
    for col in (
        "strategy",
        "samples",
        "solved",
        "success %",
        "95 % CI (Wilson)",
        "tokens / solved",
        "$ / solved",
    ):
        t.add_column(col)
    for r in success_table(result.frame).iter_rows(named=True):
        t.add_row(
            r["strategy"],
            str(r["samples"]),
            f"{r['solved']:g}",
            f"{100 * r['success_rate']:.1f}",
            f"{100 * r['success_low']:.1f} to {100 * r['success_high']:.1f}",
            "" if r["tokens_per_solved"] is None else f"{r['tokens_per_solved']:,.0f}",
            "" if r["usd_per_solved"] is None else f"{r['usd_per_solved']:.4f}",
        )
    con.print(t)
    con.print(
        f"written: {', '.join(str(p) for p in written.values())}; logs: {len(result.logs)} (inspect view)"
    )
