"""Profiles behind the ratios of ``docs/benchmarks.md``: where the time of a compressing
middleware and of a corpus replay goes (what bounds a ratio that misses its target).

``python -m tools.profiles middleware [--messages N] [--threshold K] [--history H]`` profiles
:meth:`ctxlab.core.middleware.CompressionMiddleware.wrap_model_call` only (the calls the
benchmark's section 1 times), in CPU time of the calling thread, over the bench's realistic
history (``H`` = ``realistic``, the default: six tool schemas, heavy-tailed outputs, files on a
``FilesystemBackend`` on disk; or ``synthetic``) of ``N`` messages (default 8,000) with
``summary_threshold`` ``K`` (K tokens, default 8: every call past the first few compresses);
``python -m tools.profiles replay [--limit N]`` profiles
:func:`ctxlab.replay.engine.replay_many` with the default strategy over the public transcripts
(section 3; ``N`` transcripts at most, default all). Both print the top entries of
:mod:`cProfile`, sorted by own time, with paths relative to the working directory.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "profile_middleware", "profile_replay", "top_entries"]


def top_entries(profile: cProfile.Profile, limit: int = 15) -> str:
    """The ``limit`` entries of ``profile`` with the most own time (``tottime``), as
    :mod:`pstats` prints them from the ``ncalls`` header on, paths relative to the working
    directory."""
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(limit)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    here = f"{Path.cwd()}/"
    return "\n".join(line.replace(here, "") for line in lines[start:])


def profile_middleware(
    messages: int = 8000, threshold_k: float = 8.0, history: str = "realistic"
) -> cProfile.Profile:
    """Profile ``wrap_model_call`` alone, in CPU time of the thread (``time.thread_time``), over the
    model calls of the bench's ``history`` of ``messages`` messages (:func:`ctxlab.cli.bench.
    compressing.history_of`; files on a ``FilesystemBackend`` on disk) driven through the replay
    harness (the benchmark's own driver, :func:`ctxlab.cli.bench.contenders.run_ars`);
    ``threshold_k`` is ``summary_threshold``."""
    import time

    from ctxlab.cli.bench.compressing import _ars_maker, _settings, history_of
    from ctxlab.cli.bench.contenders import run_ars
    from ctxlab.core.middleware import CompressionMiddleware

    system, history_messages, tools = history_of(history, messages)
    profile = cProfile.Profile(time.thread_time)
    inner = CompressionMiddleware.wrap_model_call

    def profiled(self: CompressionMiddleware, request: Any, handler: Any) -> Any:
        profile.enable()
        try:
            return inner(self, request, handler)
        finally:
            profile.disable()

    CompressionMiddleware.wrap_model_call = profiled  # type: ignore[method-assign]
    try:
        run_ars(
            system,
            history_messages,
            _ars_maker(_settings(threshold_k, 0.4), "FilesystemBackend"),
            tools=tools,
        )
    finally:
        CompressionMiddleware.wrap_model_call = inner  # type: ignore[method-assign]
    return profile


def profile_replay(limit: int | None = None) -> tuple[cProfile.Profile, int]:
    """Profile :func:`~ctxlab.replay.engine.replay_many` with ``ars`` over the public
    transcripts (``../shared/transcripts/raw``; the first ``limit``, ``None`` = all), after a
    warm-up on three of them; returns the profile and the number of transcripts replayed.

    Raises:
        FileNotFoundError: the shared transcripts are not found.
    """
    from ctxlab.replay import make_lab_manager, replay_many
    from ctxlab.transcripts import iter_transcript_files, load_many
    from ctxlab.transcripts.locate import shared_dir

    raw = shared_dir() / "transcripts" / "raw"
    if not raw.is_dir():
        raise FileNotFoundError(f"shared transcripts not found: {raw}")
    transcripts, _ = load_many(iter_transcript_files([raw]))
    transcripts = transcripts[:limit] if limit is not None else transcripts
    pm = make_lab_manager(load_entrypoints=True)
    replay_many(transcripts[:3], strategies=["ars"], pm=pm, progress=False)
    profile = cProfile.Profile()
    profile.enable()
    try:
        replay_many(transcripts, strategies=["ars"], pm=pm, progress=False)
    finally:
        profile.disable()
    return profile, len(transcripts)


def _at_least(low: float, kind: type[int] | type[float]) -> Any:
    """An argparse ``type`` accepting a finite ``kind`` value >= ``low``, else a clear error."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value >= low or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is out of range: allowed a finite number >= {low:g}")
        return value

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (see the module docstring); prints a heading and the top entries; 0 on success."""
    parser = argparse.ArgumentParser(prog="python -m tools.profiles", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--top", type=_at_least(1, int), default=15, help="entries to print (default 15)")
    mw = sub.add_parser(
        "middleware", parents=[common], help="wrap_model_call over a synthetic history while compressing"
    )
    mw.add_argument(
        "--messages", type=_at_least(2, int), default=8000, help="history length in messages (default 8000)"
    )
    mw.add_argument(
        "--history",
        choices=("realistic", "synthetic"),
        default="realistic",
        help="the bench's history (default realistic: six tool schemas, heavy-tailed outputs)",
    )
    mw.add_argument(
        "--threshold",
        type=_at_least(0.001, float),
        default=8.0,
        help="summary_threshold, K tokens (default 8)",
    )
    rp = sub.add_parser("replay", parents=[common], help="replay_many with ars over the public transcripts")
    rp.add_argument(
        "--limit", type=_at_least(1, int), default=None, help="at most this many transcripts (default all)"
    )
    args = parser.parse_args(argv)
    if args.what == "middleware":
        profile = profile_middleware(args.messages, args.threshold, args.history)
        print(
            f"## wrap_model_call only, {args.history} {args.messages:,} messages, FilesystemBackend on disk, "
            f"summary_threshold = {args.threshold:g} K tokens; cProfile by own CPU time"
        )
    else:
        profile, n = profile_replay(args.limit)
        print(f"## replay_many over {n} public transcripts, ars; cProfile by own time")
    print(top_entries(profile, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
