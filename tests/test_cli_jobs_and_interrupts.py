"""Odds and ends of ``ctxlab replay``/``compare``: ``--jobs`` is a usage error before any file is
read and keeps the serial row order; Ctrl-C leaves only the finished runs; the report's budget
figure of LangChain's summarization draws its T line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from ctxlab.analysis.plotting.figures import budget_png_figure, reaching_runs
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT, shared_dir

CTXLAB = [sys.executable, "-m", "ctxlab"]
RAW = shared_dir() / "transcripts" / "raw"


def test_jobs_is_checked_before_any_file_is_read(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    done = subprocess.run(
        [*CTXLAB, "compare", str(missing), "--strategies", "ars", "--jobs", "0"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert (
        "--jobs=0 is invalid: allowed an integer > 0" in done.stderr and "no-such-folder" not in done.stderr
    )


def test_a_negative_top_is_a_usage_error(tmp_path: Path) -> None:
    """``--top -3`` printed an empty runs table and "1 more runs in summary.csv" (s39 trial)."""
    done = subprocess.run(
        [*CTXLAB, "replay", str(tmp_path / "no-such-file"), "--top", "-3"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--top=-3 is invalid: allowed an integer >= 0" in done.stderr


def test_jobs_keeps_the_serial_row_order(tmp_path: Path) -> None:
    # two folders given out of alphabetical order: rows follow the PATH order, serial or not
    paths = [str(RAW / "openhands"), str(RAW / "deer-flow")]
    frames = []
    for jobs in ("1", "3"):
        out = tmp_path / f"jobs{jobs}"
        cmd = [
            *CTXLAB,
            "compare",
            *paths,
            "--strategies",
            "ars,masking",
            "--limit-calls",
            "3",
            "--jobs",
            jobs,
        ]
        done = subprocess.run(
            [*cmd, "--out", str(out), "--no-figures", "--keep-going"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode in (0, 1), done.stderr
        frames.append(pl.read_parquet(out / "calls.parquet").select("transcript", "strategy", "call_index"))
    serial, parallel = frames
    assert serial.height > 20 and serial.equals(parallel)
    first = serial["transcript"][0]
    assert first.startswith("output.jsonl")  # openhands' runs first, as named on the command line


def test_ctrl_c_leaves_only_the_finished_runs(tmp_path: Path) -> None:
    """Ctrl-C while replaying: exit 130; no result is written; the staging folder stays only when
    it holds finished runs (for ``--resume``, tests/test_resume.py), and then the message says so;
    with none, nothing is left, not even the ``--out`` folder made for the run."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*CTXLAB, "replay", str(RAW), "--out", str(out), "--keep-going", "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / ".ctxlab-staging" / "resume.json").exists():  # about to replay
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the replay never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "ctxlab: interrupted" in err, (proc.returncode, err[-3000:])
    stage = out / ".ctxlab-staging"
    kept = sum(1 for _ in (stage / "runs").rglob("*.pickle")) if stage.exists() else 0
    if kept:
        assert f"{kept} finished run(s) are kept in {stage}" in err and "--resume" in err
        assert sorted(p.name for p in out.iterdir()) == [".ctxlab-staging"]  # no result
    else:
        assert not out.exists()  # made for this run and empty: removed too


def test_the_langchain_budget_figure_draws_t(tmp_path: Path) -> None:
    settings = CompressionSettings(summary_threshold=32)
    result = replay_many(
        [SAMPLE_TRANSCRIPT], ["langchain-summarization"], settings=settings, limit_calls=60, progress=False
    )
    calls = result.frame()
    assert calls["threshold"].null_count() == calls.height  # a foreign middleware's rows carry no T
    assert reaching_runs(calls, settings) == [("sample_run.json", "langchain-summarization")]
    fig = budget_png_figure(calls, "sample_run.json", "langchain-summarization", settings)
    labels = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].lines}
    assert labels[f"T = {32 * 1024:,}"] == [32 * 1024, 32 * 1024]
    assert not any(label.startswith("T2") for label in labels)  # LangChain has no L2 threshold


def test_an_ars_budget_figure_keeps_its_own_thresholds() -> None:
    result = replay_many([SAMPLE_TRANSCRIPT], ["ars"], limit_calls=5, progress=False)
    fig = budget_png_figure(
        result.frame(), "sample_run.json", "ars", CompressionSettings(summary_threshold=1)
    )
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert "T = 102,400" in labels or "T = 102,400 (above the plot)" in labels  # the run's T, not 1 K


def test_ctrl_c_outside_a_command_is_still_status_130(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C while the parser's imports load (before any command runs) ends as 130 with the
    message, not as a KeyboardInterrupt traceback (which ends the interpreter by SIGINT, -2)."""
    from ctxlab.cli import main as cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["replay"]) == 130
    assert "ctxlab: interrupted" in capsys.readouterr().err


def test_ctrl_c_inside_a_string_eval_still_exits_130(tmp_path: Path) -> None:
    """A Ctrl-C that lands while a module's ``dataclasses``/``typing`` string ``exec`` runs leaves
    CPython's "unhandled KeyboardInterrupt" flag set even after :func:`main` handled it; ``python
    -m ctxlab`` then ended by SIGINT (-2) instead of 130 (the intermittent failure of
    ``test_ctrl_c_leaves_only_the_finished_runs``).  The interrupt is raised inside a string exec
    in a real ``python -m ctxlab`` process (a ``sitecustomize`` wraps the command's first step)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import ctxlab.cli.main as cli\n"
        "def interrupted(argv):\n"
        "    exec('raise KeyboardInterrupt')\n"
        "cli._run = interrupted\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([*CTXLAB, "replay"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-2000:])
    assert proc.stderr.strip().splitlines()[-1] == "ctxlab: interrupted"


def test_ctrl_c_at_the_terminal_with_jobs_prints_no_worker_traceback(tmp_path: Path) -> None:
    """Ctrl-C at a terminal reaches the whole process group: with ``--jobs 2`` each worker printed
    its own KeyboardInterrupt or EOFError traceback (about 40 lines) before the clean message.
    The workers leave the interrupt to the parent now: exit 130, the message, no traceback, no
    worker left behind."""
    out = tmp_path / "out"
    # one long batch and one short one: when the short one is checkpointed its worker is idle,
    # waiting for work, and the long one is still replaying — the interrupt comes then (an idle
    # worker printed "Process ForkPoolWorker-2: ... KeyboardInterrupt"); six strategies make the
    # long batch last many times the short one's, so the run cannot end before the signal
    long_run = RAW / "opencode" / "session-ses_4313.md"
    short_run = RAW / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"
    strategies = "ars,hybrid,masking,ars-prepared,ars-fast,langchain-summarization"
    proc = subprocess.Popen(
        [*CTXLAB, "compare", str(long_run), str(short_run), "--strategies", strategies, "--jobs", "2",
         "--out", str(out), "--keep-going", "--no-progress", "--summary-threshold", "8"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )  # fmt: skip
    runs = out / ".ctxlab-staging" / "runs" / "0"
    try:
        deadline = time.monotonic() + 300
        while not list((runs / "katy.traj").glob("*.pickle")):  # the short batch is checkpointed
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the short batch never finished"
            time.sleep(0.02)
        assert not list((runs / long_run.name).glob("*.pickle"))  # the long one is still replaying
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "ctxlab: interrupted" in err, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    leftover = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert leftover == [], leftover


def test_a_loader_warning_is_said_once_with_jobs(tmp_path: Path) -> None:
    """With ``--jobs 2`` each worker loaded the file again and printed its loader warning a
    second time as a raw Python warning (s40 trial); the parent says it once, as ctxlab does
    serially, and records it once."""
    traj = next((RAW / "swe-agent").rglob("6e44b9__sweagenttestrepo-1c2844.traj"))
    said = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}"
        done = subprocess.run(
            [
                *CTXLAB,
                "compare",
                str(traj),
                "--strategies",
                "ars,masking",
                "--jobs",
                jobs,
                "--out",
                str(out),
                "--no-figures",
                "--no-progress",
                "--limit-calls",
                "3",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        lines = [x for x in done.stderr.splitlines() if "history lacks the trajectory's last" in x]
        assert len(lines) == 1 and lines[0].startswith("ctxlab: warning: "), done.stderr
        assert "TranscriptWarning" not in done.stderr
        record = (out / "run.json").read_text(encoding="utf-8")
        said.append(record.count("history lacks the trajectory's last"))
    assert said == [1, 1]


def test_a_warning_no_command_caught_reads_like_the_commands_own(tmp_path: Path) -> None:
    """``ctxlab findings`` printed a loader's warning as Python does ("...traj:0:
    TranscriptWarning: ...") where replay says "ctxlab: warning: ..." (s40 trial): one form for
    every command."""
    traj = next((RAW / "swe-agent").rglob("6e44b9__sweagenttestrepo-1c2844.traj"))
    done = subprocess.run(
        [*CTXLAB, "findings", str(traj)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    said = [x for x in done.stderr.splitlines() if "history lacks the trajectory's last" in x]
    assert said and all(x.startswith("ctxlab: warning: ") for x in said), done.stderr
    assert "TranscriptWarning" not in done.stderr
