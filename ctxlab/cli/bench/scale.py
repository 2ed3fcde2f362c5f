"""Sections 4 and 5 of ``ctxlab bench``: start-up of the command, and sweeps on several processes.

* **Start-up** — ``ctxlab --help`` in a fresh interpreter against ``python -c pass`` (wall time,
  best of several runs).  Target: ≤ 0.3 s.
* **Parallel sweep** — :func:`ctxlab.replay.parallel.run_grid` over transcripts × strategies with
  ``jobs=1`` (in-process) and ``jobs=N`` (worker processes), the same grid; the speed-up and
  whether the per-call rows are identical (``overhead_ms`` aside).  Ray is measured only where
  asked (``--sections parallel`` with ``CTXLAB_BENCH_RAY=1``): starting a local Ray instance costs
  more than this grid.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ParallelResult", "StartupResult", "bench_parallel", "bench_startup"]


@dataclass
class StartupResult:
    """Wall seconds (best of several runs) of ``ctxlab --help`` and ``python -c pass``, and their
    CPU seconds (user + system of the child, best of the runs)."""

    help_seconds: float
    python_seconds: float
    help_cpu_seconds: float = float("nan")
    python_cpu_seconds: float = float("nan")


@dataclass
class ParallelResult:
    transcripts: int = 0
    strategies: list[str] = field(default_factory=list)
    calls: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # "jobs=1", "jobs=2", "ray (2 CPUs)"
    #: CPU seconds of this process and of the worker processes it reaped (local runs)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    identical: dict[str, bool] = field(default_factory=dict)
    #: the 1-minute load average before each run (other work on the machine)
    load: dict[str, float] = field(default_factory=dict)
    cpus: int = 1


def _wall(cmd: Sequence[str], repeat: int) -> float:
    return _times(cmd, repeat)[0]


def _times(cmd: Sequence[str], repeat: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds of the child) over ``repeat`` runs of ``cmd``."""
    best = cpu = float("inf")
    for _ in range(repeat):
        c0 = _cpu_children()
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, _cpu_children() - c0)
    return best, cpu


def _cpu_children() -> float:
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def bench_startup(quick: bool, log: Callable[[str], None] = print) -> StartupResult:
    """``ctxlab --help`` (the console script's entry point) against ``python -c pass``."""
    repeat = 3 if quick else 7
    help_cmd = [
        sys.executable,
        "-c",
        "import sys; from ctxlab.cli.main import main; sys.exit(main(['--help']))",
    ]
    (help_wall, help_cpu), (py_wall, py_cpu) = (
        _times(help_cmd, repeat),
        _times([sys.executable, "-c", "pass"], repeat),
    )
    result = StartupResult(help_wall, py_wall, help_cpu, py_cpu)
    log(
        f"  ctxlab --help {result.help_seconds:.2f} s ({result.help_cpu_seconds:.3f} s CPU), "
        f"python -c pass {result.python_seconds:.2f} s ({result.python_cpu_seconds:.3f} s CPU)"
    )
    return result


def _cpu() -> float:
    """CPU seconds of this process plus its reaped children (the pool's workers once shut down)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _rows(result: object) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != "overhead_ms"} for r in result.rows]  # type: ignore[attr-defined]


def bench_parallel(
    transcripts_dir: Path, quick: bool, jobs: int = 2, log: Callable[[str], None] = print
) -> ParallelResult:
    """The same grid with ``jobs=1`` and ``jobs=N`` (and Ray when ``CTXLAB_BENCH_RAY=1``)."""
    import logging

    from ctxlab.replay.parallel import run_grid
    from ctxlab.transcripts import iter_transcript_files

    logging.getLogger("ctxlab.replay.engine").setLevel(logging.CRITICAL)
    raw = transcripts_dir / "raw" if (transcripts_dir / "raw").is_dir() else transcripts_dir
    files = [f for f in iter_transcript_files([raw]) if f.stat().st_size < 1_000_000]
    files = files[:: 4 if quick else 1]
    strategies = ["ars", "masking"]
    result = ParallelResult(strategies=strategies, cpus=os.cpu_count() or 1)
    reference = None
    runs: list[tuple[str, dict[str, object]]] = [("jobs=1", {"jobs": 1}), (f"jobs={jobs}", {"jobs": jobs})]
    if os.environ.get("CTXLAB_BENCH_RAY") == "1":
        runs.append((f"ray ({jobs} CPUs)", {"engine": "ray", "ray_init": {"num_cpus": jobs}}))
    for label, options in runs:
        result.load[label] = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as tmp:
            c0 = _cpu()
            t0 = time.perf_counter()
            grid = run_grid(files, strategies, out_dir=tmp, **options)  # type: ignore[arg-type]
            result.seconds[label] = time.perf_counter() - t0
            result.cpu_seconds[label] = _cpu() - c0
        rows = _rows(grid.results[0])
        if reference is None:
            reference = rows
            result.calls = len(rows)
            result.transcripts = len({r["transcript"] for r in rows})
        result.identical[label] = rows == reference
        log(
            f"  {label}: {result.seconds[label]:.1f} s wall, {result.cpu_seconds[label]:.1f} s CPU, "
            f"load {result.load[label]:.1f}, rows identical to jobs=1: {result.identical[label]}"
        )
    return result
