"""``ctxlab show RUN_DIR``: write the call inspector of a run folder (one offline HTML file).

See :mod:`ctxlab.analysis.inspector` for what the page shows and what it reads.  Exit status: 0
when the page was written; 1 when the folder cannot be shown (no such folder, no ``views/``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxlab.cli.options import CliError

__all__ = ["add_show_parser", "run_show"]


def add_show_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ctxlab show``."""
    p = sub.add_parser(
        "show",
        help="write the call inspector of a run folder: one offline HTML file (inspect.html)",
        description=(
            "Write RUN_DIR/inspect.html: runs x strategies, per call the raw and the sent view side by "
            "side with each message's mark and tokens, the events, every summary in full, and one "
            "strategy's view beside another's. No server, no network: open the file in a browser."
        ),
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a folder written by ctxlab replay or compare")
    p.add_argument(
        "--out", metavar="FILE", default=None, help="where to write the page (default: RUN_DIR/inspect.html)"
    )


def run_show(args: argparse.Namespace) -> int:
    """Write the page and print its path; a folder that cannot be shown is a :class:`CliError`."""
    from ctxlab.analysis.inspector import InspectorError, write_inspector

    try:
        path = write_inspector(Path(args.run_dir), args.out)
    except InspectorError as exc:
        raise CliError(str(exc), code=1) from exc
    print(f"written: {path} (open it in a browser; it needs no server and no network)")
    return 0
