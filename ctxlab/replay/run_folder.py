"""What makes an output folder of ``ctxlab replay``/``compare`` a finished run.

A run's outputs are written in one window that starts by writing the marker file
:data:`INCOMPLETE` into the folder and ends by removing it; ``run.json`` (the run record) is
written after ``calls.parquet``, ``summary.csv`` and ``report.md``.  So a folder is a finished
run when it holds ``calls.parquet`` and ``run.json`` and no marker; a folder whose writing was
interrupted (Ctrl-C, a crash) says so.  ``ctxlab show`` and ``ctxlab diff``
(:func:`ctxlab.replay.diff.load_run_folder`) refuse any other folder with :func:`unfinished`'s
reason.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["INCOMPLETE", "RECORD", "mark_finished", "mark_incomplete", "unfinished"]

#: the marker file of a folder whose outputs are being written (or whose writing was interrupted)
INCOMPLETE = ".ctxlab-incomplete"
#: the run record, written after the other tables of the run
RECORD = "run.json"
#: what a finished run folder holds at least
REQUIRED = ("calls.parquet", RECORD)


def mark_incomplete(folder: str | os.PathLike[str], command: str = "") -> Path:
    """Write the marker (when the writing started and by which command) and return its path."""
    path = Path(folder) / INCOMPLETE
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    path.write_text(
        f"ctxlab started writing this run's outputs at {when}"
        + (f" ({command})" if command else "")
        + ". While this file is here the folder is not a finished run: the writing did not end "
        "(interrupted or crashed); the same command with --resume writes the outputs again.\n",
        encoding="utf-8",
    )
    return path


def mark_finished(folder: str | os.PathLike[str]) -> None:
    """Remove the marker: every output is written."""
    (Path(folder) / INCOMPLETE).unlink(missing_ok=True)


def unfinished(folder: str | os.PathLike[str]) -> str | None:
    """Why ``folder`` is not a finished run folder (a sentence naming the folder and what is
    missing), or ``None`` when it is one."""
    root = Path(folder)
    if not root.is_dir():
        return f"{root}: no such run folder"
    missing = [name for name in REQUIRED if not (root / name).is_file()]
    if (root / INCOMPLETE).exists():
        return (
            f"{root}: not a finished run: its outputs were being written when ctxlab stopped "
            f"({INCOMPLETE} is there"
            + (f"; no {' and no '.join(missing)}" if missing else "")
            + "); the same command with --resume writes them"
        )
    if missing:
        return (
            f"{root}: not a run folder (no {' and no '.join(missing)}; ctxlab replay/compare write "
            f"them, {RECORD} after the others)"
        )
    return None
