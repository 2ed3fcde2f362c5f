"""Section 3 of ``ctxlab bench``: replay throughput of every strategy over the public set.

Characters per second, and the time as a multiple of one tiktoken pass over the same text, for
``replay_many`` in-process (each strategy warmed up on one call first, so that imports are not
counted) and for the ``ctxlab replay`` command over the same files, run as a subprocess into a
temporary folder (start-up, loading, replay, report and figures included).  Target (issue 12):
the default strategy ``ars`` within :data:`TARGET_PASSES` tiktoken passes, both ways.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _time_command(files: Sequence[Path], log: Callable[[str], None]) -> tuple[float, int, int]:
    """``ctxlab replay`` over ``files`` into a temporary folder: (seconds, exit status, figures).
    The files are given one by one, so a quick run replays exactly the quick subset."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-cli-") as tmp:
        out = Path(tmp) / "out"
        argv = [sys.executable, "-m", "ctxlab.cli.main", "replay", *map(str, files), "--out", str(out)]
        argv += ["--keep-going", "--no-progress"]
        env = {**os.environ, "MPLBACKEND": "Agg"}
        t0 = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        seconds = time.perf_counter() - t0
        figures = len(list((out / "figures").rglob("*.png"))) if (out / "figures").is_dir() else 0
    if done.returncode not in (0, 1):
        log(f"  ctxlab replay exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return seconds, done.returncode, figures


def _transcript_text_units(transcripts: Sequence[Any]) -> list[str]:
    """Every text an estimator sees: message texts and tool-call argument JSON."""
    from langchain_core.messages import AIMessage

    from ctxlab.core.messages import message_text

    units = []
    for t in transcripts:
        for m in t.messages:
            units.append(message_text(m))
            if isinstance(m, AIMessage):
                units.extend(
                    json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str) for tc in m.tool_calls
                )
    return units


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
    units = _transcript_text_units(transcripts)
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
        seconds, status, figures = _time_command(files, log)
        result.command_seconds, result.command_status, result.command_figures = seconds, status, figures
        log(
            f"  ctxlab replay (command): {seconds:.1f} s ({seconds / result.tiktoken_seconds:.2f} tiktoken "
            f"passes), exit {status}, {figures} figures"
        )
    return result
