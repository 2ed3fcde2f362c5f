"""``ctxlab plugins``: the plugins loaded (with their sources and hooks), the strategies and the
transcript formats."""

from __future__ import annotations

import argparse

from ctxlab.cli.output import console
from ctxlab.cli.replay_cmd import lab_manager

__all__ = ["run_plugins"]


def run_plugins(args: argparse.Namespace) -> int:
    """Print the three tables; returns 0.

    Raises:
        CliError: ``--plugins-dir`` is not a folder.
    """
    from rich.table import Table

    from ctxlab.core.plugins import describe_plugins
    from ctxlab.core.settings import CompressionSettings
    from ctxlab.replay import strategies as registered
    from ctxlab.replay.building import strategy_records
    from ctxlab.transcripts import available_formats

    pm = lab_manager(args)
    con = console()
    t = Table(title="plugins", title_justify="left")
    for name in ("name", "source", "hooks"):
        t.add_column(name, overflow="fold")
    for info in describe_plugins(pm):
        t.add_row(info.name, info.source, ", ".join(info.hooks))
    con.print(t)
    s = Table(title="strategies (rows are labelled with the name in the second column)", title_justify="left")
    for name in ("name", "rows labelled", "description"):
        s.add_column(name, overflow="fold")
    known = registered(pm)
    labels = {v["strategy"]: k for k, v in strategy_records(list(known), pm, CompressionSettings()).items()}
    for name, strat in known.items():
        s.add_row(name, labels.get(name, name), strat.description)
    con.print(s)
    f = Table(title="transcript formats", title_justify="left")
    f.add_column("name")
    f.add_column("description", overflow="fold")
    for name, fmt in available_formats(pm).items():
        f.add_row(name, getattr(fmt, "description", ""))
    con.print(f)
    return 0
