"""``ctxlab replay`` and ``ctxlab compare``: load, replay, write, print, and the exit status.

Order of work, so that nothing is written for a run that cannot happen:

1. usage checks (settings, strategy names — a name given twice is refused —, window, format,
   prices, summarizer model): a usage error exits 2 before anything is read;
2. loading every PATH: a missing path, a folder with no transcripts and a file that cannot be
   loaded are failures; without ``--keep-going`` the first load failure stops the run here (exit
   1, nothing written), with it the others are replayed;
3. replaying (a failed run or a run with failed summaries stops the batch unless
   ``--keep-going``), the middlewares writing into a staging folder inside ``--out``, which also
   keeps every transcript's finished runs as they finish (:mod:`ctxlab.replay.resume`): an
   interrupted run leaves them there, and ``--resume`` goes on from them; nothing replayed: exit
   1, and ``--out`` is left as it was;
4. writing ``calls.parquet``, ``summary.csv``, ``report.md``, ``summaries.jsonl``, ``run.json``,
   ``views/`` (every call's raw and sent view, :mod:`ctxlab.replay.views`)
   and the figures (old results in ``--out`` are removed first, the staged files become
   ``files/``), between the marker ``--out/.ctxlab-incomplete`` and its removal
   (:mod:`ctxlab.replay.run_folder`: a folder stopped while written says so, and the staging
   folder stays until the end so that ``--resume`` finishes it), then printing the tables.

Every warning printed on the way (a setting outside its recommended range, a loader's warning, a
file skipped as not a transcript) is also kept in the result's ``warnings`` and so in the run's
record (``report.md``, ``run.json``).

Exit status: 0 when every run replayed with no failure; 1 when anything failed (the report lists
it); 2 on a usage error.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxlab.cli.options import CliError, warning_text
from ctxlab.cli.resolve import (
    latency_from_args,
    prefix_setting,
    price_row,
    settings_from_args,
    summarizer_from_args,
    summary_cache_from_args,
    window_from_args,
)
from ctxlab.cli.staging import (
    OUTPUTS,
    discard,
    finish,
    finished_runs,
    publish,
    reclaim,
    say_resume,
    stage_in,
)
from ctxlab.replay.names import did_you_mean

__all__ = ["OUTPUTS", "lab_manager", "run_replay", "warn"]


def warn(message: object) -> None:
    """Print ``ctxlab: warning: <message>`` on stderr (one line per line of the message,
    :func:`~ctxlab.cli.options.warning_text`)."""
    sys.stderr.write(warning_text(message))


def lab_manager(args: argparse.Namespace, problems: list[Any] | None = None) -> Any:
    """The lab's plugin manager with entry points and ``--plugins-dir`` (else
    ``$CTXLAB_PLUGINS_DIR``); plugin problems are printed as ``ctxlab: warning:`` lines, and so
    is an installed plugin whose compression hooks the lab does not apply.  ``problems``, when
    given, receives each plugin problem as a :class:`~ctxlab.replay.ReplayIssue` (``kind="plugin"``),
    so that the run records it.

    Raises:
        CliError: ``--plugins-dir`` is not a folder.
    """
    from ctxlab.replay import ReplayIssue, make_lab_manager
    from ctxlab.replay.strategies import ignored_hook_plugins

    folder = getattr(args, "plugins_dir", None)
    if folder is not None and not Path(folder).is_dir():
        raise CliError(f"--plugins-dir {folder}: no such folder")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = make_lab_manager(load_entrypoints=True, plugins_dir=folder)
    found: list[tuple[str, str]] = [(_plugin_named(str(w.message)), str(w.message)) for w in caught]
    for name, source, hooks in ignored_hook_plugins(pm):
        found.append(
            (
                name,
                f"plugin {name!r} ({source}) implements {', '.join(hooks)}; the lab applies only the strategies "
                "an installed plugin registers, not its hooks (load the file with --plugins-dir to apply them)",
            )
        )
    for name, message in found:
        warn(message)
        if problems is not None:
            problems.append(ReplayIssue(kind="plugin", source=name, problem=message, plugin=name))
    return pm


def _plugin_named(message: str) -> str:
    """The plugin a ``PluginWarning`` names: ``'<name>'`` or the file after ``plugin file``."""
    import re

    m = re.search(r"plugin (?:file )?'([^']+)'|plugin file (\S+)", message)
    return (m.group(1) or m.group(2)) if m else message.split(":")[0]


def _strategy_names(args: argparse.Namespace, known: dict[str, Any]) -> list[str]:
    if args.command == "compare":
        names = [s.strip() for s in args.strategies.split(",") if s.strip()]
        if names == ["all"]:
            names = list(known)
        if not names:
            raise CliError("--strategies names no strategy")
    else:
        names = [args.strategy]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CliError(f"--strategies names {twice[0]!r} twice; each strategy runs once per transcript")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CliError(
            f"unknown strategy {unknown[0]!r}{did_you_mean(unknown[0], known)}; "
            f"known: {', '.join(sorted(known)) or '(none)'}"
        )
    return names


def _paths(args: argparse.Namespace) -> list[str]:
    paths = list(args.paths)
    if not paths and args.command == "replay":
        from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

        if not Path(SAMPLE_TRANSCRIPT).is_file():
            raise CliError(f"the bundled sample transcript is missing: {SAMPLE_TRANSCRIPT}", code=1)
        paths = [str(SAMPLE_TRANSCRIPT)]
    return paths


def load(
    paths: Sequence[str],
    fmt: str | None,
    pm: Any,
    *,
    lenient: bool = False,
    said: list[Any] | None = None,
) -> tuple[list[Any], list[Any]]:
    """Every transcript under ``paths`` and the load problems (:class:`~ctxlab.replay.ReplayIssue`,
    ``kind="load"``): a path that does not exist, a path under which no transcript was found,
    each file that could not be loaded.  Loader warnings are printed as ``ctxlab: warning:``
    (the first 20; among them the list of files in folders that are not transcripts: skipped,
    not problems) and, when ``said`` is given, every one of them is appended to it as a
    ``ReplayIssue`` (``kind="load"``, ``source`` the file the warning names), and so is each
    skipped file (``problem`` starting ``skipped:``).
    ``lenient`` (``--keep-going``): a JSON-lines file's bad lines are left out with a warning
    instead of failing the file."""
    from ctxlab.replay import ReplayIssue
    from ctxlab.transcripts import load_many

    transcripts: list[Any] = []
    problems: list[Any] = []
    skipped: list[Any] = []
    seen: set[tuple[str, str]] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for p in paths:
            if not Path(p).exists() and not Path(p).is_symlink():  # loading names a link loop as such
                problems.append(ReplayIssue(kind="load", source=p, problem=f"no such file or folder: {p}"))
                continue
            before = len(skipped)
            loaded, errors = load_many([p], format=fmt, pm=pm, lenient=lenient, skipped=skipped)
            problems.extend(ReplayIssue.from_transcript_error(e) for e in errors)
            if not loaded and not errors:
                passed = len(skipped) - before
                problems.append(
                    ReplayIssue(
                        kind="load",
                        source=p,
                        problem=f"no transcripts found under {p}"
                        + (f" (only {passed} skipped file(s), named in the warning)" if passed else ""),
                    )
                )
            for t in loaded:
                key = (t.source, t.name)
                if key not in seen:
                    seen.add(key)
                    transcripts.append(t)
    for w in caught[:20]:
        warn(w.message)
    if len(caught) > 20:
        warn(f"... {len(caught) - 20} more loader warnings")
    if said is not None:
        said.extend(_load_warning(w) for w in caught)
        said.extend(
            ReplayIssue(kind="load", source=e.path, where=e.where, problem=f"skipped: {e.problem}")
            for e in skipped
        )
    return transcripts, problems


def _load_warning(w: Any) -> Any:
    """A loader's warning as a ``ReplayIssue``: a :class:`~ctxlab.transcripts.TranscriptWarning`
    starts with the file's path (its documented shape), which becomes ``source``."""
    from ctxlab.replay import ReplayIssue
    from ctxlab.transcripts import TranscriptWarning

    text = str(w.message)
    head, sep, rest = text.partition(": ")
    if issubclass(w.category, TranscriptWarning) and sep and rest:
        place, sep, what = rest.partition(": ")
        if sep and re.fullmatch(r"(line|byte|lines) \d+(-\d+)?|key \S+", place):
            return ReplayIssue(kind="load", source=head, where=place, problem=what)
        return ReplayIssue(kind="load", source=head, problem=rest)
    return ReplayIssue(kind="load", source=str(w.filename), problem=f"{w.category.__name__}: {text}")


def _fail(problems: Sequence[Any], message: str) -> int:
    for e in problems[:20]:
        print(f"ctxlab: error: {e}", file=sys.stderr)
    if len(problems) > 20:
        print(f"ctxlab: error: ... {len(problems) - 20} more", file=sys.stderr)
    print(f"ctxlab: error: {message}", file=sys.stderr)
    return 1


def run_replay(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``ctxlab replay``/``compare`` (see the module doc); returns the exit status."""
    from ctxlab.analysis.report import strategy_totals, write_report
    from ctxlab.cli.output import print_summary
    from ctxlab.replay import ReplayIssue
    from ctxlab.replay import strategies as registered

    setting_warnings: list[str] = []
    settings = settings_from_args(args, setting_warnings)
    said: list[Any] = [  # "<field>=<value> is outside ...": the field is the warning's source
        ReplayIssue(kind="setting", source=text.partition("=")[0], problem=text.partition("=")[2] or text)
        for text in setting_warnings
    ]
    plugin_problems: list[Any] = []
    pm = lab_manager(args, plugin_problems)
    names = _strategy_names(args, registered(pm))
    if args.limit_calls is not None and args.limit_calls <= 0:
        raise CliError(f"--limit-calls={args.limit_calls} is invalid: allowed an integer > 0")
    if args.jobs < 1:  # a usage error: before any file is read
        raise CliError(f"--jobs={args.jobs} is invalid: allowed an integer > 0")
    if args.top < 0:
        raise CliError(f"--top={args.top} is invalid: allowed an integer >= 0")
    window = window_from_args(args)
    prefix_setting(args)  # a bad --unrecorded-prefix is a usage error before anything is read
    if args.format is not None:
        from ctxlab.transcripts import available_formats

        formats = available_formats(pm)
        if args.format not in formats:
            raise CliError(
                f"--format {args.format}: unknown format{did_you_mean(args.format, formats)}; "
                f"known: {', '.join(sorted(formats))}"
            )
    price = price_row(args)
    if args.measure == "tiktoken":
        try:
            import tiktoken  # noqa: F401
        except ImportError as exc:
            raise CliError(
                "--measure tiktoken needs the tiktoken package (pip install 'ctxlab[lab]')"
            ) from exc
    summarizer_model = summarizer_from_args(args)
    summary_cache_from_args(args)  # a bad --summary-cache is a usage error before anything is read
    latency_from_args(args)  # and so is a bad --summarizer-latency or --call-latency
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out}: exists and is not a folder")

    transcripts, problems = load(_paths(args), args.format, pm, lenient=args.keep_going, said=said)
    if not transcripts:
        return _fail(problems, "nothing to replay; nothing written")
    if problems and not args.keep_going:
        return _fail(problems, "stopped before replaying (--keep-going replays the others); nothing written")
    stage, made = stage_in(out, resume=args.resume)
    if args.resume:
        reclaim(stage, out)
        say_resume(stage)
    try:
        result = _replay_into(
            args, transcripts, names, (settings, window, price, pm, summarizer_model), stage
        )
    except BaseException as exc:  # Ctrl-C (KeyboardInterrupt) or a crash: keep what finished, or nothing
        finished, total = finished_runs(stage), len(transcripts) * len(names)
        if isinstance(exc, CliError):  # refused before replaying (a checkpoint of other settings)
            if not finished:
                discard(stage, out, made)
            raise
        if finished:
            print(
                f"ctxlab: stopped while replaying: {finished} finished run(s) are kept in {stage} (of "
                f"about {total}; nothing else was written, {out}'s earlier outputs are untouched): the same "
                f"command with --resume replays only the others and writes the outputs",
                file=sys.stderr,
            )
        else:
            print(
                f"ctxlab: stopped while replaying: no run had finished; nothing was kept or written "
                f"({out}'s earlier outputs are untouched)",
                file=sys.stderr,
            )
            discard(stage, out, made)
        raise
    # the load problems found here; a parallel replay's planner found the same ones again
    result.errors = _once([*plugin_problems, *problems, *result.errors])
    result.warnings = [*said, *(w for w in result.warnings if w not in said)]
    if result.replayed == 0:
        discard(stage, out, made)
        return _fail(result.errors, "nothing could be replayed; nothing written")
    command = "ctxlab " + " ".join(argv)
    publish(stage, out, command)
    result.files_dir = out / "files"
    result.provenance["command"] = command
    figures = "none" if args.no_figures else args.figures
    try:
        written = write_report(result, out, figures=figures, command=command, data=args.data)
        if args.html:
            from ctxlab.analysis.inspector_site import write_inspector

            written["html"] = write_inspector(out)
    except BaseException:  # Ctrl-C or a crash while writing: the folder says it is unfinished
        reclaim(stage, out)
        from ctxlab.replay.run_folder import INCOMPLETE

        print(
            f"ctxlab: stopped while writing the outputs: {out} is not a finished run (marked by "
            f"{out / INCOMPLETE}; ctxlab show and diff refuse it); the {finished_runs(stage)} finished "
            f"run(s) are kept in {stage}: the same command with --resume writes the outputs without "
            "replaying them again",
            file=sys.stderr,
        )
        raise
    finish(stage, out)
    print_summary(result, strategy_totals(result.frame()), written, out, top=args.top, data=args.data)
    failures = [e for e in result.errors if e.kind != "plugin"]
    flagged = [e for e in result.errors if e.kind == "plugin" or e.plugin]
    if failures:
        stopped = "" if args.keep_going else " (stopped at the first; --keep-going runs the rest)"
        print(
            f"ctxlab: error: {len(failures)} failure(s){stopped}, listed in {out / 'report.md'}",
            file=sys.stderr,
        )
        return 1
    if flagged and args.strict:
        print(
            f"ctxlab: error: {len(flagged)} plugin problem(s) (--strict), listed in {out / 'report.md'}",
            file=sys.stderr,
        )
        return 1
    return 0


def _once(issues: Sequence[Any]) -> list[Any]:
    """The issues in order, each (kind, file, place, problem) once."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for e in issues:
        key = (e.kind, e.source, e.where, e.problem) if e.kind == "load" else (e.kind, str(id(e)), "", "")
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def _replay_into(
    args: argparse.Namespace, transcripts: list[Any], names: list[str], how: tuple[Any, ...], stage: Path
) -> Any:
    """Replay into the staging folder: serially, or on ``--jobs``/``--engine ray`` workers.
    ``how``: (settings, window, price row, plugin manager, summarizer model)."""

    from ctxlab.replay.resume import ResumeError, open_store, replay_resumable

    settings, window, price, pm, summarizer_model = how
    summary_cache = summary_cache_from_args(args)
    if args.jobs > 1 or args.engine == "ray":
        return _run_parallel(args, names, settings, stage, window, price, summary_cache)
    options: dict[str, Any] = {
        "settings": settings,
        "out_dir": stage,
        "pm": pm,
        "summarizer_model": summarizer_model,
        "context_window": window,
        "measure": args.measure,
        "limit_calls": args.limit_calls,
        "unrecorded_prefix": prefix_setting(args),
        "price_model": price,
        "cache_breakpoints": args.cache_breakpoints,
        "write_views": True,
        "summary_cache": summary_cache,
        "format": args.format,
        "summarizer_latency": args.summarizer_latency,
        "call_latency": args.call_latency,
    }
    try:
        store = open_store(
            stage, resume=args.resume, points=[settings], strategies=names, paths=_paths(args), **options
        )
    except ResumeError as exc:
        raise CliError(str(exc)) from exc
    bar = _bar(len(transcripts), not args.no_progress and sys.stderr.isatty())
    try:
        return replay_resumable(
            transcripts,
            names,
            store=store,
            stop_on_failure=not args.keep_going,
            on_transcript=bar.update,
            **options,
        )
    finally:
        bar.close()


def _bar(total: int, enabled: bool) -> Any:
    """A text progress bar over the transcripts, on stderr."""
    from tqdm import tqdm

    return tqdm(total=total, desc="replay", unit="transcript", disable=not enabled, dynamic_ncols=True)


def _run_parallel(
    args: argparse.Namespace,
    names: list[str],
    settings: Any,
    stage: Path,
    window: Any,
    price: Any,
    summary_cache: Path | None,
) -> Any:
    """``--jobs N`` / ``--engine ray``: the same replay on worker processes or a Ray cluster, which
    load the files themselves (a task carries a path, never an object)."""
    from ctxlab.replay.parallel import RayUnavailableError, run_grid
    from ctxlab.replay.resume import ResumeError
    from ctxlab.transcripts import TranscriptWarning

    try:
        # the grid plans by loading the files again: their warnings were said and recorded when
        # this command loaded them (once, as serially; the s40 trial saw each twice)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TranscriptWarning)
            grid = run_grid(
                _paths(args),
                names,
                settings,
                jobs=args.jobs,
                engine=args.engine,
                ray_address=args.ray_address,
                out_dir=stage,
                format=args.format,
                plugins_dir=args.plugins_dir,
                measure=args.measure,
                limit_calls=args.limit_calls,
                unrecorded_prefix=prefix_setting(args),
                context_window=window,
                summarizer_model=args.summarizer_model,
                price_model=price,
                cache_breakpoints=args.cache_breakpoints,
                progress=not args.no_progress and sys.stderr.isatty(),
                write_views=True,
                summary_cache=str(summary_cache) if summary_cache is not None else None,
                summarizer_latency=args.summarizer_latency,
                call_latency=args.call_latency,
                checkpoint=stage,
                resume=args.resume,
            )
    except (RayUnavailableError, ResumeError) as exc:
        raise CliError(str(exc)) from exc
    return grid.results[0]
