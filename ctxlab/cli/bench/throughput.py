"""Section 3 of ``ctxlab bench``: replay throughput of every strategy over the public set.

Characters per second, and the time as a multiple of one tiktoken pass over the same text, for
``replay_many`` in-process (each strategy warmed up on one call first, so that imports are not
counted) and for the ``ctxlab replay`` command over the same files, run as a subprocess into a
temporary folder (start-up, loading, replay, report and figures included).  The command is also
compared with a named baseline command run the same way, :mod:`ctxlab.cli.bench.tiktoken_pass`
(start-up, the same loaders and files, one tiktoken pass): a whole-process comparison.  The two
commands run alternately, best of 2 (1 in quick mode).  Target (issue 12): the default strategy
``ars`` within :data:`TARGET_PASSES` tiktoken passes, both ways.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ctxlab.cli.bench.tiktoken_pass import text_units
from ctxlab.cli.bench.timing import best_of, cl100k_encoding

__all__ = ["DEFAULT_STRATEGY", "TARGET_PASSES", "ReplayRow", "ReplayThroughput", "bench_replay"]

#: the strategy of the target, and the target: its replay within this many tiktoken passes
DEFAULT_STRATEGY = "ars"
TARGET_PASSES = 1.0


@dataclass
class ReplayRow:
    strategy: str
    seconds: float
    middleware_seconds: float
    calls: int
    errors: int


@dataclass
class ReplayThroughput:
    rows: list[ReplayRow] = field(default_factory=list)
    chars: int = 0
    transcripts: int = 0
    files: int = 0
    tiktoken_seconds: float = float("nan")
    #: wall time of ``ctxlab replay`` (default strategy) over the same files, its exit status and
    #: the figures it drew; ``nan``/``None`` when not measured
    command_seconds: float = float("nan")
    command_status: int | None = None
    command_figures: int = 0
    #: wall time of the baseline command (``python -m ctxlab.cli.bench.tiktoken_pass``) over the same
    #: files, and its exit status; ``nan``/``None`` when not measured
    baseline_seconds: float = float("nan")
    baseline_status: int | None = None


def _time_command(files: Sequence[Path], log: Callable[[str], None]) -> tuple[float, int, int]:
    """``ctxlab replay`` over ``files`` into a temporary folder: (seconds, exit status, figures).
    The files are given one by one, so a quick run replays exactly the quick subset."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-cli-") as tmp:
        out = Path(tmp) / "out"
        argv = ["-m", "ctxlab.cli.main", "replay", *map(str, files), "--out", str(out), "--keep-going"]
        seconds, status = _run([*argv, "--no-progress"], (0, 1), log)
        figures = len(list((out / "figures").rglob("*.png"))) if (out / "figures").is_dir() else 0
    return seconds, status, figures


def _time_baseline(files: Sequence[Path], log: Callable[[str], None]) -> tuple[float, int]:
    """The baseline command over ``files``: (seconds, exit status)."""
    return _run(["-m", "ctxlab.cli.bench.tiktoken_pass", *map(str, files)], (0,), log)


def _run(argv: list[str], ok: tuple[int, ...], log: Callable[[str], None]) -> tuple[float, int]:
    """Wall seconds and exit status of ``python argv`` (Agg backend); logs stderr's end on failure."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode not in ok:
        log(f"  {' '.join(argv[:2])} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return seconds, done.returncode


def bench_replay(
    transcripts_dir: Path,
    quick: bool,
    strategies: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> ReplayThroughput:
    """Section 3: every strategy over the public transcript set, against one tiktoken pass."""
    import logging
    import tempfile

    from ctxlab.replay import make_lab_manager, replay_many
    from ctxlab.replay import strategies as registered
    from ctxlab.transcripts import iter_transcript_files, load_many

    raw = transcripts_dir / "raw" if (transcripts_dir / "raw").is_dir() else transcripts_dir
    files = iter_transcript_files([raw])
    if quick:  # every fourth file, and never the 4 MB τ-bench file
        files = [f for i, f in enumerate(files) if i % 4 == 0 and f.stat().st_size < 1_000_000]
    transcripts, _ = load_many(files)
    pm = make_lab_manager(load_entrypoints=True)
    names = list(strategies) if strategies else sorted(registered(pm))
    result = ReplayThroughput(transcripts=len(transcripts), files=len(files))
    units = text_units(transcripts)
    result.chars = sum(len(u) for u in units)
    enc = cl100k_encoding()
    result.tiktoken_seconds = best_of(lambda: [enc.encode_ordinary(u) for u in units], 2 if quick else 3)
    logging.getLogger("ctxlab.replay.engine").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:  # imports and first calls
        replay_many(transcripts[:1], names, pm=pm, out_dir=tmp, progress=False, limit_calls=1)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:
            t0 = time.perf_counter()
            res = replay_many(transcripts, [name], pm=pm, out_dir=tmp, progress=False)
            seconds = time.perf_counter() - t0
        mw = sum(r["overhead_ms"] for r in res.rows) / 1000.0
        row = ReplayRow(name, seconds, mw, len(res.rows), len(res.errors))
        result.rows.append(row)
        log(
            f"  {name}: {seconds:.1f} s ({seconds / result.tiktoken_seconds:.2f} tiktoken passes), "
            f"middleware {mw:.1f} s"
        )
    if DEFAULT_STRATEGY in names:
        command, baseline = float("inf"), float("inf")
        for _ in range(1 if quick else 2):  # alternately, so that a load change hits both alike
            seconds, status, figures = _time_command(files, log)
            command = min(command, seconds)
            result.command_status, result.command_figures = status, figures
            seconds, result.baseline_status = _time_baseline(files, log)
            baseline = min(baseline, seconds)
        result.command_seconds, result.baseline_seconds = command, baseline
        log(
            f"  ctxlab replay (command): {command:.1f} s ({command / result.tiktoken_seconds:.2f} tiktoken "
            f"passes, {command / baseline:.2f} x the baseline command's {baseline:.1f} s), "
            f"exit {result.command_status}, {result.command_figures} figures"
        )
    return result
