"""``ctxlab bench``: benchmarks measured side by side in one run, written as ``benchmarks.md`` under
``--out`` (default ``out/bench``; the committed ``docs/benchmarks.md`` is a full run's,
``ctxlab bench --out docs``, and a ``--quick`` run refuses to overwrite it).

Three sections, each printed as ratios measured in the same process (never absolute timings
alone; a benchmark is never a unit test):

1. **Middleware overhead** — the per-call cost of :class:`~ctxlab.CompressionMiddleware` (the
   model handler returns at once) against LangChain's ``SummarizationMiddleware`` driven the way
   ``create_agent`` drives it (``before_model`` with a trigger it never reaches, then the model
   call), over long histories built from the real transcripts (the τ-bench runs concatenated,
   the longest mini-swe-agent runs concatenated) and synthetic 1k/2k/4k/8k-message histories.
   The whole-run cost is fitted against the history length: ``time ∝ N^k`` (``k ≈ 1`` linear,
   ``≈ 2`` quadratic).  Then the same while compressing (:mod:`~ctxlab.cli.bench.compressing`:
   a trigger both reach, per kind of round, growth, peak memory, the first call after a
   checkpoint reload and in a fresh process).  CPU time of the measuring thread throughout
   (:mod:`~ctxlab.cli.bench.contenders`).
2. **Estimators** — error against ``cl100k_base`` per content class (:data:`CLASSES`, samples
   from :func:`collect_samples`) for the core default, the fast estimator plugin, a flat
   4 characters per token and LangChain's ``count_tokens_approximately``; speed as a ratio to
   tiktoken on the same texts.
3. **Replay throughput** — every strategy over the whole public transcript set (characters per
   second, and the time as a multiple of one tiktoken pass over the same text).
4. **Start-up** and 5. **parallel sweeps** — ``ctxlab --help`` against ``python -c pass``; a grid
   of transcripts × strategies on 1 and 2 worker processes (:mod:`~ctxlab.cli.bench.scale`).
6. **Stall** — a live ``create_agent`` loop (sync and async) with a slow fake summarizer: how long
   a summary round makes the agent wait, ctxlab with prepared summaries, ctxlab synchronous and
   LangChain's ``SummarizationMiddleware`` (:mod:`~ctxlab.cli.bench.stall`, issue 34).

Content classes (:func:`label_block`) are labeled from the text itself, independently of any
estimator's features; see :func:`collect_samples` for how samples are extracted.

Modules: :mod:`~ctxlab.cli.bench.samples` (content classes, segmentation, samples),
:mod:`~ctxlab.cli.bench.overhead`, :mod:`~ctxlab.cli.bench.compressing`,
:mod:`~ctxlab.cli.bench.contenders`, :mod:`~ctxlab.cli.bench.estimators`,
:mod:`~ctxlab.cli.bench.throughput` (the three sections), :mod:`~ctxlab.cli.bench.timing`
(machine, best-of timing, tiktoken, growth fit), :mod:`~ctxlab.cli.bench.render` (the Markdown);
this package holds :func:`main` and re-exports their public names.

A run of some sections (``--sections replay``) into an existing file replaces only those
sections and keeps the others (:func:`merge_sections`); each section carries the line naming the
command and date that measured it (:func:`stamp`).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ctxlab.cli.bench.compressing import bench_compressing
from ctxlab.cli.bench.estimators import EstimatorResult, EstimatorRow, bench_estimators
from ctxlab.cli.bench.overhead import (
    OverheadResult,
    OverheadRow,
    bench_overhead,
    drive_ars,
    drive_langchain,
    real_histories,
    synthetic_history,
)
from ctxlab.cli.bench.plugged import PluginMissingError, require
from ctxlab.cli.bench.render import render, render_scale
from ctxlab.cli.bench.samples import (
    CLASSES,
    Sample,
    cjk_share,
    collect_samples,
    default_transcripts_dir,
    is_json_text,
    label_block,
    segment,
    synthetic_base64,
)
from ctxlab.cli.bench.scale import ParallelResult, StartupResult, bench_parallel, bench_startup
from ctxlab.cli.bench.stall import StallResult, bench_stall, render_stall
from ctxlab.cli.bench.targets import (
    compressing_targets,
    estimator_targets,
    log_targets,
    replay_targets,
    startup_targets,
)
from ctxlab.cli.bench.throughput import ReplayRow, ReplayThroughput, bench_replay
from ctxlab.cli.bench.timing import cl100k_encoding, fit_exponent, machine_info

__all__ = [
    "CLASSES",
    "COMMITTED",
    "SECTIONS",
    "EstimatorResult",
    "EstimatorRow",
    "OverheadResult",
    "OverheadRow",
    "ParallelResult",
    "ReplayRow",
    "ReplayThroughput",
    "Sample",
    "StallResult",
    "StartupResult",
    "bench_estimators",
    "bench_overhead",
    "bench_parallel",
    "bench_replay",
    "bench_stall",
    "bench_startup",
    "bench_target",
    "cjk_share",
    "cl100k_encoding",
    "collect_samples",
    "default_transcripts_dir",
    "drive_ars",
    "drive_langchain",
    "fit_exponent",
    "is_committed_benchmarks",
    "is_json_text",
    "label_block",
    "machine_info",
    "main",
    "merge_sections",
    "real_histories",
    "render",
    "render_scale",
    "render_stall",
    "segment",
    "stamp",
    "synthetic_base64",
    "synthetic_history",
]

SECTIONS = ("overhead", "estimators", "replay", "startup", "parallel", "stall")
#: the committed benchmarks, relative to the repository root (written by a full run only)
COMMITTED = Path("docs") / "benchmarks.md"


def bench_target(out: str | Path) -> Path:
    """The Markdown file ``--out`` names: ``<out>/benchmarks.md``, or ``out`` itself when it ends
    in ``.md``."""
    path = Path(out)
    return path if path.suffix.lower() == ".md" else path / "benchmarks.md"


def is_committed_benchmarks(target: Path) -> bool:
    """Whether ``target`` is the repository's committed ``docs/benchmarks.md`` (the checkout this
    package runs from, or the one in the current folder)."""
    roots = {Path.cwd(), Path(__file__).resolve().parents[3]}
    resolved = target.resolve()
    return any(resolved == (root / COMMITTED).resolve() for root in roots)


#: the number of each section's ``## N.`` heading
SECTION_NUMBERS = dict(zip(SECTIONS, range(1, len(SECTIONS) + 1), strict=True))
_HEADING = re.compile(r"^## (\d+)\. ", re.MULTILINE)
_STAMP = re.compile(r"^_Measured by .*\._$", re.MULTILINE)
#: the hand-written note the file had before stamps: converted to a stamp when kept
_LEGACY_STAMP = re.compile(r"^This section was refreshed alone by (`[^`]*`) \(([^,)]*)[^\n]*$", re.MULTILINE)


def stamp(command: str, date: str) -> str:
    """The line under a section's heading naming the run that measured it."""
    return f"_Measured by `{command}` on {date}._"


def _split(text: str) -> tuple[str, dict[int, str]]:
    """(the text before the first section, section number -> its text from its heading on)."""
    starts = [(m.start(), int(m.group(1))) for m in _HEADING.finditer(text)]
    head = text[: starts[0][0]] if starts else text
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return head, {n: text[s:e].rstrip() for (s, n), e in zip(starts, ends, strict=True)}


def _stamped(section: str, line: str) -> str:
    """``section`` with ``line`` under its heading, unless it already has a stamp."""
    if _STAMP.search(section):
        return section
    legacy = _LEGACY_STAMP.search(section)
    if legacy:
        return _LEGACY_STAMP.sub(stamp(legacy.group(1).strip("`"), legacy.group(2)), section, count=1)
    heading, _, body = section.partition("\n")
    return f"{heading}\n\n{line}\n{body}"


def merge_sections(old: str | None, new: str, command: str, date: str) -> str:
    """The Markdown to write: ``new`` (the sections this run measured, each stamped with
    ``command`` and ``date``) and, from ``old`` (the file's current text; ``None``: no file),
    every section this run did not measure, in section order.  A kept section without a stamp
    gets one naming ``old``'s header run (its ``last run``/``command`` and ``date`` lines) as
    an earlier run, not as certainly its own."""
    head, sections = _split(new)
    out = {n: _stamped(text, stamp(command, date)) for n, text in sections.items()}
    if old is not None:
        old_head, old_sections = _split(old)
        cmd = re.search(r"^- (?:last run|command): `([^`]*)`", old_head, re.MULTILINE)
        when = re.search(r"^- date(?: of the last run)?: ([^;\n]*)", old_head, re.MULTILINE)
        line = (
            f"_Measured by an earlier run: the file then named `{cmd.group(1) if cmd else '?'}` "
            f"({when.group(1) if when else 'no date'}); the section's own notes may say more._"
        )
        for n, text in old_sections.items():
            out.setdefault(n, _stamped(text, line))
    return head.rstrip() + "\n\n" + "\n\n".join(out[n] for n in sorted(out)) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``ctxlab bench``: run the benchmarks, print them and write the Markdown table.

    Returns:
        0 on success, 2 when the transcripts folder is missing, a plugin distribution a section
        measures is not installed (:mod:`~ctxlab.cli.bench.plugged`), or ``--quick`` would
        overwrite the committed ``docs/benchmarks.md``.
    """
    parser = argparse.ArgumentParser(
        prog="ctxlab bench",
        description="Benchmarks written as benchmarks.md under --out. The committed docs/benchmarks.md "
        "is a full run's: `ctxlab bench --out docs` (a --quick run never writes there).",
    )
    parser.add_argument("--quick", action="store_true", help="smaller inputs, about a minute (default: off)")
    parser.add_argument(
        "--out",
        default="out/bench",
        help="folder to write benchmarks.md in; a path ending in .md is the file itself; '-' prints "
        "only (default: %(default)s)",
    )
    parser.add_argument(
        "--transcripts",
        default=None,
        help="the shared transcripts folder (default: $CTXLAB_TRANSCRIPTS or ../shared/transcripts)",
    )
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {', '.join(SECTIONS)}"
    )
    parser.add_argument(
        "--strategies", default=None, help="replay section: comma-separated strategy names (default: all)"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; allowed: {', '.join(SECTIONS)}")
    target = None if args.out == "-" else bench_target(args.out)
    if target is not None and args.quick and is_committed_benchmarks(target):
        print(
            f"ctxlab bench: --quick does not overwrite the committed {target} (a full run's figures); "
            "give another --out",
            file=sys.stderr,
        )
        return 2
    transcripts = Path(args.transcripts) if args.transcripts else default_transcripts_dir()
    if not transcripts.is_dir():
        print(
            f"ctxlab bench: transcripts folder {transcripts} not found (--transcripts or $CTXLAB_TRANSCRIPTS)",
            file=sys.stderr,
        )
        return 2
    try:
        require(sections)  # the plugin strategies measured, before minutes of measuring
    except PluginMissingError as exc:
        print(f"ctxlab bench: {exc}", file=sys.stderr)
        return 2
    command = "ctxlab bench" + (
        " " + " ".join(argv)
        if argv
        else " " + " ".join(sys.argv[2:])
        if argv is None and sys.argv[1:2] == ["bench"]
        else ""
    )
    machine = machine_info()
    print(f"ctxlab bench on {machine['nproc']} CPUs, Python {machine['python']}, {machine['date']}")
    overhead = estimators = replay = None
    compressing = None
    t0 = time.perf_counter()
    if "overhead" in sections:
        print("1. middleware overhead per model call")
        overhead = bench_overhead(transcripts, args.quick)
        if overhead.rows:
            print(
                f"  whole run ~ N^k: ctxlab k={overhead.ars_exponent:.2f}, "
                f"ctxlab + fast k={overhead.fast_exponent:.2f}, LangChain k={overhead.langchain_exponent:.2f}"
            )
        print("1b. middleware overhead while compressing")
        compressing = bench_compressing(args.quick)
    if "estimators" in sections:
        print("2. estimators against cl100k_base")
        estimators = bench_estimators(transcripts, args.quick)
    if "replay" in sections:
        print("3. replay throughput")
        names = [s.strip() for s in args.strategies.split(",")] if args.strategies else None
        replay = bench_replay(transcripts, args.quick, names)
    startup = parallel = None
    if "startup" in sections:
        print("4. start-up of the command")
        startup = bench_startup(args.quick)
    if "parallel" in sections:
        print("5. sweeps on several processes")
        parallel = bench_parallel(transcripts, args.quick)
    stall: StallResult | None = None
    if "stall" in sections:
        print("6. stall of a summary round in a live agent")
        stall = bench_stall(args.quick)
    targets = [
        *compressing_targets(compressing, overhead),
        *estimator_targets(estimators),
        *replay_targets(replay),
        *startup_targets(startup),
    ]
    if targets:
        print("issue 31 targets (measured in this run):")
        log_targets(targets)
    text = (
        render(machine, command.strip(), args.quick, overhead, estimators, replay, compressing)
        + render_scale(startup, parallel)
        + render_stall(stall)
    )
    text = merge_sections(
        target.read_text(encoding="utf-8") if target is not None and target.is_file() else None,
        text,
        command.strip(),
        machine["date"],
    )
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({time.perf_counter() - t0:.0f} s)")
    else:
        print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
