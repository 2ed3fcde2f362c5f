"""``ctxlab show RUN_DIR``: write the call inspector of a run folder (pages opened from disk).

See :mod:`ctxlab.analysis.inspector_site` for the pages (an index of every run, one page per
run loading that run's data file) and their size bound, :mod:`ctxlab.analysis.inspector` for what
they show.  Exit status: 0 when the pages were written; 1 when the folder cannot be shown (no
such folder, not a finished run: :func:`ctxlab.replay.run_folder.unfinished`, no ``views/``); 2 on a usage error.
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
        help="write the call inspector of a run folder: inspect.html (every run) and inspect/ (one page per run)",
        description=(
            "Write RUN_DIR/inspect.html, a sortable and filterable table of every transcript x strategy "
            "run (search, source, format, saving, cost, failures, reached T), and RUN_DIR/inspect/, the "
            "page of each run: per call the raw and the sent view side by side with each message's mark "
            "and tokens, changed-only, jumps to the next offloaded/truncated/summarized/failed call, text "
            "search, the tool schemas, every summary in full, failure badges, and one strategy's view "
            "beside another's. No server, no network: open inspect.html in a browser."
        ),
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a folder written by ctxlab replay or compare")
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="where to write inspect.html and inspect/ (default: RUN_DIR); a path ending in .html "
        "names the index page itself",
    )
    p.add_argument(
        "--max-run-bytes",
        metavar="BYTES",
        type=int,
        default=None,
        help="the bound on one run's data file: longer message texts are cut to fit (default: 4000000)",
    )


def run_show(args: argparse.Namespace) -> int:
    """Write the pages and say where, how many and how big; a folder that cannot be shown is a
    :class:`CliError`."""
    from ctxlab.analysis.inspector import InspectorError
    from ctxlab.analysis.inspector_site import DATA_BYTES, write_site

    bound = args.max_run_bytes if args.max_run_bytes is not None else DATA_BYTES
    if bound < 10_000:
        raise CliError(f"--max-run-bytes={bound} is invalid: allowed an integer >= 10000")
    from ctxlab.replay.run_folder import unfinished

    why = unfinished(args.run_dir)
    if why is not None:
        raise CliError(why, code=1)
    try:
        site = write_site(Path(args.run_dir), args.out, data_bytes=bound)
    except InspectorError as exc:
        raise CliError(str(exc), code=1) from exc
    data = [size for path, size in site.sizes.items() if path.suffix == ".js"]
    largest = max(data, default=0)
    print(
        f"written: {site.index} (the index of {site.runs:,} runs, {site.sizes[site.index] / 1e6:.2f} MB) and "
        f"{site.folder}/ (one data file per run, the largest {largest / 1e6:.2f} MB; bound {bound / 1e6:.1f} MB"
        + (f"; {len(site.cut)} run(s) with their texts cut shorter to fit" if site.cut else "")
        + "). Open the index in a browser: no server, no network."
    )
    return 0
