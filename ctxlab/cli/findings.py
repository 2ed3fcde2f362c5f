"""``ctxlab findings PATH...``: The Complexity Trap's two findings on the given runs.

Prints (see :mod:`ctxlab.analysis.findings` for the definitions):

1. the share of observation tokens in the agents' turns, per agent and pooled, next to the
   paper's 83.9 %;
2. unless ``--no-savings``, each strategy's saving against the raw run (the runs replayed with one
   entry threshold, ``--summary-threshold``, default 8 K tokens), next to the paper's;
3. the side-by-side comparison table.

Exit status: 0; 1 when nothing could be loaded; 2 on a usage error (unknown strategy, invalid
setting).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["add_findings_parser", "run_findings"]


def add_findings_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``findings`` subcommand to the ``ctxlab`` subparsers ``sub``.

    Imports nothing heavy (``ctxlab --help`` stays a parser, issue 12): the help names the
    defaults of ``--strategies`` and ``--summary-threshold`` from ``ctxlab.analysis.paper`` (no
    replay imported); :func:`run_findings` fills them in."""
    from ctxlab.analysis.paper import DEFAULT_STRATEGIES, DEFAULT_THRESHOLD_K

    p: argparse.ArgumentParser = sub.add_parser(
        "findings",
        help="observation share of agent turns and masking's saving, next to The Complexity Trap's",
        description="The share of observation tokens in agent turns and the saving of observation "
        "masking against summarization (Lindenbauer et al. 2025, arXiv:2508.21433), measured on PATH.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders (recursive)")
    p.add_argument(
        "--measure",
        choices=("tiktoken", "char-class"),
        default="tiktoken",
        help="tokenizer: tiktoken = cl100k_base, offline (default); char-class = ctxlab's estimator",
    )
    p.add_argument(
        "--strategies",
        default=None,
        metavar="A,B,...",
        help=f"strategies to replay for the savings (default: {','.join(DEFAULT_STRATEGIES)})",
    )
    p.add_argument(
        "--summary-threshold",
        type=float,
        default=None,
        metavar="K",
        help=f"entry threshold of every strategy, in K tokens (x1024) (default: {DEFAULT_THRESHOLD_K})",
    )
    p.add_argument("--limit-calls", type=int, metavar="N", help="replay at most N model calls per run")
    p.add_argument("--no-savings", action="store_true", help="the observation share only (no replay)")
    return p


def _pct(v: float | None, unit: str = "%") -> str:
    if v is None:
        return "n/a"
    return f"{v:+.1f} pp" if unit == "pp" else f"{v:.1f}%"


#: the columns of the observation-share table (``Findings.by_agent``), in order
SHARE_COLUMNS = (
    "agent",
    "runs",
    "calls",
    "observation_tokens",
    "assistant_tokens",
    "turn_share_pct",
    "median_run_pct",
    "context_share_pct",
    "paper_pct",
)
#: the columns of the savings table (``Findings.savings``), in order
SAVING_COLUMNS = (
    "agent",
    "strategy",
    "runs",
    "raw_tokens",
    "sent_tokens",
    "l2_rounds",
    "saving_pct",
    "cost_saving_pct",
    "paper_saving_pct",
)
#: a column's header where it is not its name with spaces for underscores
HEADERS = {
    "turn_share_pct": "share",
    "median_run_pct": "median run",
    "context_share_pct": "in requests",
    "paper_pct": "paper",
    "l2_rounds": "L2",
    "saving_pct": "saving",
    "cost_saving_pct": "+ summarizer",
    "paper_saving_pct": "paper",
}


def _cell(column: str, value: Any) -> str:
    """A value as printed: token counts and calls with thousands separators, ``*_pct`` columns as
    percentages (``n/a`` for ``None``), anything else as text."""
    if column.endswith("_pct"):
        return _pct(value)
    if column == "calls" or column.endswith("_tokens"):
        return f"{value:,}"
    return str(value)


def _table(title: str, columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> Table:
    """A left-titled table of ``rows`` (dicts keyed by column name): the names (``agent``,
    ``strategy``) left-aligned, the numbers right-aligned, no cell wrapped."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in columns:
        header = HEADERS.get(col, col.replace("_", " "))
        table.add_column(header, justify="left" if col in ("agent", "strategy") else "right", no_wrap=True)
    for r in rows:
        table.add_row(*(_cell(col, r[col]) for col in columns))
    return table


def _evidence_line(runs: int) -> str:
    """What the savings beside the paper's rest on: ``runs`` runs, plain pooled figures without an
    interval; below :data:`~ctxlab.replay.stats.MIN_PAIRED_RUNS` runs they are no verdict (the
    rule of ``ctxlab compare``'s executive summary)."""
    from ctxlab.replay.stats import MIN_PAIRED_RUNS

    rule = (
        f"fewer than {MIN_PAIRED_RUNS} runs are no verdict on either side of the paper's figure"
        if runs < MIN_PAIRED_RUNS
        else "they carry no interval"
    )
    return (
        f"The savings above are pooled over {runs} run(s); {rule}: `ctxlab compare` on the same paths gives "
        "the paired per-run differences with their intervals."
    )


def run_findings(args: argparse.Namespace) -> int:
    """Run ``ctxlab findings`` with parsed ``args``; returns the exit status.

    Raises:
        SettingsError: an invalid ``--summary-threshold`` (reported by ``ctxlab.cli.main``).
    """
    from rich.console import Console
    from rich.table import Table

    from ctxlab.analysis.findings import DEFAULT_STRATEGIES, DEFAULT_THRESHOLD_K, PAPER, findings
    from ctxlab.core.settings import CompressionSettings

    if args.strategies is None:
        args.strategies = ",".join(DEFAULT_STRATEGIES)
    if args.summary_threshold is None:
        args.summary_threshold = float(DEFAULT_THRESHOLD_K)
    names = [] if args.no_savings else [s.strip() for s in args.strategies.split(",") if s.strip()]
    if args.limit_calls is not None and args.limit_calls <= 0:
        print(
            f"ctxlab: error: --limit-calls={args.limit_calls} is invalid: allowed an integer > 0",
            file=sys.stderr,
        )
        return 2
    settings = CompressionSettings(summary_threshold=args.summary_threshold)
    try:
        result = findings(
            args.paths,
            strategies=names,
            settings=settings,
            measure=args.measure,
            limit_calls=args.limit_calls,
        )
    except KeyError as exc:
        print(f"ctxlab: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"ctxlab: error: {exc}", file=sys.stderr)
        return 1

    console = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)
    console.print(f"[bold]The Complexity Trap[/bold] ({PAPER.citation})", markup=True)
    console.print(
        _table(
            f"observation share of agent-turn tokens ({result.measure} tokens; observations / "
            "(observations + assistant turns))",
            SHARE_COLUMNS,
            result.by_agent.iter_rows(named=True),
        )
    )
    if result.savings is not None and not result.savings.is_empty():
        console.print(
            _table(
                f"saving against the raw run (every strategy with T = {settings.entry_threshold_tokens:,} "
                f"tokens; masking keeps the last 10 results); paper: {PAPER.model}",
                SAVING_COLUMNS,
                result.savings.iter_rows(named=True),
            )
        )
    c = Table(title="paper vs ctxlab", title_justify="left")
    for col in ("finding", "paper", "ctxlab", "note"):
        c.add_column(col, justify="right" if col in ("paper", "ctxlab") else "left", overflow="fold")
    for r in result.comparison.iter_rows(named=True):
        c.add_row(r["finding"], _pct(r["paper"], r["unit"]), _pct(r["ctxlab"], r["unit"]), r["note"])
    console.print(c)
    if result.savings is not None and not result.savings.is_empty():
        console.print(_evidence_line(result.shares.height), markup=False)
    for e in result.errors[:20]:
        console.print(f"skipped: {e}", markup=False)
    return 0
