"""Where ``ctxlab replay``/``compare`` write while they run (:mod:`ctxlab.cli.replay_cmd`): the
staging folder inside ``--out`` that keeps the middlewares' files and every finished run
(:mod:`ctxlab.replay.resume`), and the steps that turn it into a run folder — publish (mark
``--out`` unfinished, remove old results, move files and views in), finish (remove the staging
folder, then the mark), reclaim after an interrupted writing (so ``--resume`` finds the
checkpoint whole) — plus the one line ``--resume`` says about what it found.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ctxlab.cli.options import CliError

__all__ = [
    "OUTPUTS",
    "STAGING",
    "discard",
    "finish",
    "finished_runs",
    "publish",
    "reclaim",
    "say_resume",
    "stage_in",
]

#: what a run writes into its output folder; removed first so no stale result survives
OUTPUTS = (
    "calls.parquet",
    "summary.csv",
    "report.md",
    "run.json",
    "summaries.jsonl",
    "figures",
    "files",
    "views",
    "inspect.html",
    "inspect",
)


#: where a run's middlewares write inside ``--out`` until the run has replayed something
STAGING = ".ctxlab-staging"


def stage_in(out: Path, resume: bool = False) -> tuple[Path, bool]:
    """The staging folder inside ``out`` (made, with ``out``, if missing; emptied unless
    ``resume``: then an interrupted run's finished runs stay) and whether ``out`` was made here.

    Raises:
        CliError: ``out`` is not a folder or cannot be written.
    """
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out}: exists and is not a folder")
    made = not out.exists()
    stage = out / STAGING
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not resume:
            shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(exist_ok=True)
    except OSError as exc:
        raise CliError(f"--out {out}: cannot write there ({exc.strerror or exc})") from exc
    return stage, made


def discard(stage: Path, out: Path, made: bool) -> None:
    """Nothing was replayed: remove the staging folder, and ``out`` when it was made for this run."""
    shutil.rmtree(stage, ignore_errors=True)
    if made and out.is_dir() and not any(out.iterdir()):
        out.rmdir()


def publish(stage: Path, out: Path, command: str) -> None:
    """Something was replayed: mark ``out`` unfinished (:mod:`ctxlab.replay.run_folder`), remove
    its old results (so no stale one survives) and move the middlewares' files and the views from
    the staging folder into ``out/files`` and ``out/views``.  The staging folder (the finished
    runs) stays until :func:`finish`: an interrupted writing can be resumed."""
    from ctxlab.replay.run_folder import mark_incomplete

    mark_incomplete(out, command)
    for name in OUTPUTS:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    for folder in ("files", "views"):
        if (stage / folder).is_dir():
            (stage / folder).rename(out / folder)


def finish(stage: Path, out: Path) -> None:
    """Every output is written: remove the staging folder, then the unfinished mark."""
    from ctxlab.replay.run_folder import mark_finished

    shutil.rmtree(stage, ignore_errors=True)
    mark_finished(out)


def reclaim(stage: Path, out: Path) -> None:
    """The writing of ``out`` stopped before it ended: give the staging folder back the files
    and views of its finished runs (moved into ``out`` by :func:`publish`), so that ``--resume``
    finds the checkpoint whole."""
    from ctxlab.replay.run_folder import INCOMPLETE

    if not (out / INCOMPLETE).exists() or not (stage / "runs").is_dir():
        return
    for folder in ("files", "views"):
        if (out / folder).is_dir() and not (stage / folder).exists():
            (out / folder).rename(stage / folder)


def finished_runs(stage: Path) -> int:
    return sum(1 for _ in (stage / "runs").rglob("*.pickle")) if (stage / "runs").is_dir() else 0


def say_resume(stage: Path) -> None:
    """``--resume``: one line saying what it found in the checkpoint (nothing, or N runs)."""
    from ctxlab.replay.resume import RESUME_FILE

    if not (stage / RESUME_FILE).is_file():
        print(
            f"ctxlab: --resume: no checkpoint in {stage} (no interrupted run of an --out like this one): "
            "replaying every run",
            file=sys.stderr,
        )
    elif not finished_runs(stage):
        print(
            f"ctxlab: --resume: the checkpoint in {stage} holds no finished run: replaying every run",
            file=sys.stderr,
        )
    else:
        print(
            f"ctxlab: --resume: {finished_runs(stage)} finished run(s) in {stage}: reused if they were made "
            "with these settings and versions (checked now), then the others are replayed",
            file=sys.stderr,
        )
