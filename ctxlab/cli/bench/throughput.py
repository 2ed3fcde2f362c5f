"""Section 3 of ``ctxlab bench``: replay throughput of every strategy over the public set.

Characters per second, and the time as a multiple of one tiktoken pass over the same text, for
``replay_many`` in-process (each strategy warmed up on one call first, so that imports are not
counted) and for the ``ctxlab replay`` command over the same files, run as a subprocess into a
temporary folder (start-up, loading, replay, report and figures included).  The command is also
compared with a named baseline command run the same way, :mod:`ctxlab.cli.bench.tiktoken_pass`
(start-up, the same loaders and files, one tiktoken pass): a whole-process comparison.  The two
commands run alternately, best of 2 (1 in quick mode).  Target (issue 12): the default strategy
``ars`` within :data:`TARGET_PASSES` tiktoken passes, both ways.

Every time is measured twice, wall (``time.perf_counter``) and CPU (``time.process_time`` of
this process; for a command, the CPU of the reaped child from ``resource.getrusage``), and
every side takes its best of :func:`repeats` runs: the tiktoken pass, each strategy's replay
and each command alike (CPU time moves less with other processes' load than wall time).
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ctxlab.cli.bench.tiktoken_pass import text_units
from ctxlab.cli.bench.timing import cl100k_encoding

__all__ = [
    "DEFAULT_STRATEGY",
    "FIVE_STRATEGIES",
    "TARGET_PASSES",
    "ReplayRow",
    "ReplayThroughput",
    "bench_replay",
    "repeats",
]

#: the strategy of the target, and the target: its replay within this many tiktoken passes
DEFAULT_STRATEGY = "ars"
TARGET_PASSES = 1.0
#: the five strategies replayed together (issue 31: the README's comparison and DeepAgents')
FIVE_STRATEGIES = ("ars", "masking", "hybrid", "langchain-summarization", "deepagents-summarization")


def repeats(quick: bool) -> int:
    """Runs per measured side: best of 3 (2 in quick mode) for the tiktoken pass and the replays."""
    return 2 if quick else 3


@dataclass
class ReplayRow:
    """One strategy's replay of the whole set: best wall and CPU seconds of :func:`repeats` runs,
    the middleware's own wall seconds (sum of ``overhead_ms``) of the fastest run, model calls
    (rows) and failed runs."""

    strategy: str
    seconds: float
    middleware_seconds: float
    calls: int
    errors: int
    cpu_seconds: float = float("nan")


@dataclass
class ReplayThroughput:
    """Section 3's measurements (seconds; ``nan``/``None``: not measured)."""

    rows: list[ReplayRow] = field(default_factory=list)
    chars: int = 0
    transcripts: int = 0
    files: int = 0
    #: one tiktoken pass over the texts: best wall and best CPU seconds of ``repeat`` runs
    tiktoken_seconds: float = float("nan")
    tiktoken_cpu_seconds: float = float("nan")
    #: runs per side (:func:`repeats`; the commands: :data:`command_repeat`)
    repeat: int = 0
    command_repeat: int = 0
    #: wall and CPU time of ``ctxlab replay`` (default strategy) over the same files, its exit
    #: status and the figures it drew
    command_seconds: float = float("nan")
    command_cpu_seconds: float = float("nan")
    command_status: int | None = None
    command_figures: int = 0
    #: wall and CPU time of the baseline command (``python -m ctxlab.cli.bench.tiktoken_pass``) over
    #: the same files, and its exit status
    baseline_seconds: float = float("nan")
    baseline_cpu_seconds: float = float("nan")
    baseline_status: int | None = None
    #: :data:`FIVE_STRATEGIES` in one ``replay_many`` (the batch shares work across them):
    #: best wall and CPU seconds, model calls
    five_seconds: float = float("nan")
    five_cpu_seconds: float = float("nan")
    five_calls: int = 0


def _best_of_both(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds of this process) over ``repeat`` runs of ``fn``."""
    wall = cpu = math.inf
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - t0)
    return wall, cpu


def _time_command(files: Sequence[Path], log: Callable[[str], None]) -> tuple[float, float, int, int]:
    """``ctxlab replay`` over ``files`` into a temporary folder: (wall seconds, CPU seconds, exit
    status, figures).  The files are given one by one, so a quick run replays exactly the quick
    subset."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-cli-") as tmp:
        out = Path(tmp) / "out"
        argv = ["-m", "ctxlab.cli.main", "replay", *map(str, files), "--out", str(out), "--keep-going"]
        seconds, cpu, status = _run([*argv, "--no-progress"], (0, 1), log)
        figures = len(list((out / "figures").rglob("*.png"))) if (out / "figures").is_dir() else 0
    return seconds, cpu, status, figures


def _time_baseline(files: Sequence[Path], log: Callable[[str], None]) -> tuple[float, float, int]:
    """The baseline command over ``files``: (wall seconds, CPU seconds, exit status)."""
    return _run(["-m", "ctxlab.cli.bench.tiktoken_pass", *map(str, files)], (0,), log)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], ok: tuple[int, ...], log: Callable[[str], None]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system of the child and the processes it reaped) and exit
    status of ``python argv`` (Agg backend); logs stderr's end on failure."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    t0, c0 = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, check=False)
    seconds, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if done.returncode not in ok:
        log(f"  {' '.join(argv[:2])} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return seconds, cpu, done.returncode


def bench_replay(
    transcripts_dir: Path,
    quick: bool,
    strategies: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> ReplayThroughput:
    """Section 3: every strategy over the public transcript set, against one tiktoken pass (each
    side best of :func:`repeats` runs, wall and CPU); the ``ctxlab replay`` command against the
    baseline command when the default strategy is among ``strategies`` (default: all registered)."""
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
    repeat = repeats(quick)
    result = ReplayThroughput(transcripts=len(transcripts), files=len(files), repeat=repeat)
    units = text_units(transcripts)
    result.chars = sum(len(u) for u in units)
    enc = cl100k_encoding()
    result.tiktoken_seconds, result.tiktoken_cpu_seconds = _best_of_both(
        lambda: [enc.encode_ordinary(u) for u in units], repeat
    )
    logging.getLogger("ctxlab.replay.engine").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:  # imports and first calls
        replay_many(transcripts[:1], names, pm=pm, out_dir=tmp, progress=False, limit_calls=1)
    for name in names:
        row = ReplayRow(name, math.inf, 0.0, 0, 0, math.inf)
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:
                t0, c0 = time.perf_counter(), time.process_time()
                res = replay_many(transcripts, [name], pm=pm, out_dir=tmp, progress=False)
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            if wall < row.seconds:
                row.seconds = wall
                row.middleware_seconds = sum(r["overhead_ms"] for r in res.rows) / 1000.0
            row.cpu_seconds = min(row.cpu_seconds, cpu)
            row.calls, row.errors = len(res.rows), len(res.errors)
        result.rows.append(row)
        log(
            f"  {name}: {row.seconds:.1f} s wall, {row.cpu_seconds:.1f} s CPU "
            f"({row.cpu_seconds / result.tiktoken_cpu_seconds:.2f} tiktoken passes in CPU time), "
            f"middleware {row.middleware_seconds:.1f} s"
        )
    five = [n for n in FIVE_STRATEGIES if n in registered(pm)]
    if len(five) == len(FIVE_STRATEGIES) and set(five) <= set(names):
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:
                t0, c0 = time.perf_counter(), time.process_time()
                res = replay_many(transcripts, five, pm=pm, out_dir=tmp, progress=False)
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            result.five_seconds = min(result.five_seconds, wall) if result.five_calls else wall
            result.five_cpu_seconds = min(result.five_cpu_seconds, cpu) if result.five_calls else cpu
            result.five_calls = len(res.rows)
        log(
            f"  {', '.join(five)} together: {result.five_cpu_seconds:.1f} s CPU "
            f"({result.five_cpu_seconds / result.tiktoken_cpu_seconds:.2f} tiktoken passes)"
        )
    if DEFAULT_STRATEGY in names:
        _bench_commands(result, files, 1 if quick else 2, log)
    return result


def _bench_commands(
    result: ReplayThroughput, files: Sequence[Path], repeat: int, log: Callable[[str], None]
) -> None:
    """``ctxlab replay`` and the baseline command, alternately (a load change hits both alike),
    best wall and best CPU time of ``repeat`` runs each, into ``result``."""
    result.command_repeat = repeat
    command = baseline = command_cpu = baseline_cpu = math.inf
    for _ in range(repeat):
        seconds, cpu, status, figures = _time_command(files, log)
        command, command_cpu = min(command, seconds), min(command_cpu, cpu)
        result.command_status, result.command_figures = status, figures
        seconds, cpu, result.baseline_status = _time_baseline(files, log)
        baseline, baseline_cpu = min(baseline, seconds), min(baseline_cpu, cpu)
    result.command_seconds, result.baseline_seconds = command, baseline
    result.command_cpu_seconds, result.baseline_cpu_seconds = command_cpu, baseline_cpu
    log(
        f"  ctxlab replay (command): {command:.1f} s wall, {command_cpu:.1f} s CPU "
        f"({command_cpu / baseline_cpu:.2f} x the baseline command's {baseline_cpu:.1f} s CPU), "
        f"exit {result.command_status}, {result.command_figures} figures"
    )
