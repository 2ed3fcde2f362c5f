"""The ``ctxlab`` command.

Usage::

    ctxlab replay [PATH ...] [--strategy NAME] [--out DIR] [settings and options]
    ctxlab compare PATH [PATH ...] --strategies a,b,... [--out DIR] [settings and options]
    ctxlab show RUN_DIR [--out DIR]
    ctxlab diff RUN_A RUN_B [--out DIR] [--data real|all]
    ctxlab plugins [--plugins-dir DIR]
    ctxlab plugins new NAME [--dir DIR]
    ctxlab findings PATH [PATH ...] [--measure NAME] [--strategies a,b,...] [--no-savings]
    ctxlab eval [TASK] --strategies none,ars,... [--model M] [--epochs N] [--seed N] [--out DIR]
    ctxlab bench [ARGS ...]
    ctxlab --version          (also: python -m ctxlab ...)

PATH is a transcript file or a folder (walked recursively).  ``replay`` without PATH replays the
bundled sample transcript.  Settings come from ``--config FILE`` (TOML or JSON with the five
field names) and the ``--summary-*`` flags (flags win).  ``ctxlab COMMAND --help`` lists every
option with its default.

Exit status: 0 when everything replayed; 1 when anything failed — a missing path, a path with no
transcripts, a file that cannot be loaded, a run that failed, a failed or text-less summary — (the
report lists what; without ``--keep-going`` the first failure stops the run, with it the rest
runs); 2 on a usage error (an invalid setting names the field and its allowed range); 130 when
interrupted.

The modules: :mod:`~ctxlab.cli.options` (the option groups), :mod:`~ctxlab.cli.resolve` (what they resolve to),
:mod:`~ctxlab.cli.replay_cmd` (replay and compare), :mod:`~ctxlab.cli.output` (what is printed),
:mod:`~ctxlab.cli.plugins_cmd`, :mod:`~ctxlab.cli.findings`, :mod:`~ctxlab.cli.show_cmd`,
:mod:`~ctxlab.cli.diff_cmd`, :mod:`~ctxlab.cli.eval_cmd`,
:mod:`~ctxlab.cli.bench`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ctxlab.cli.options import SETTING_FLAGS, CliError, add_common_options, add_plugin_options, warning_text
from ctxlab.cli.resolve import load_config
from ctxlab.cli.resolve import settings_from_args as settings_from_args

__all__ = ["SETTING_FLAGS", "CliError", "build_parser", "load_config", "main", "settings_from_args"]


def _version() -> str:
    from ctxlab import __version__

    return f"ctxlab {__version__} (Python {sys.version.split()[0]})"


def add_replay_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ctxlab replay``."""
    p = sub.add_parser(
        "replay",
        help="replay transcripts through one strategy (default: ars)",
        description="Replay transcripts through one strategy. No PATH: the bundled sample.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="transcript files or folders, recursive (default: the bundled sample)",
    )
    p.add_argument(
        "--strategy", default="ars", help="strategy name, see `ctxlab plugins` (default: %(default)s)"
    )
    add_common_options(p, "replay")


def add_compare_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ctxlab compare``."""
    c = sub.add_parser(
        "compare",
        help="replay transcripts through several strategies side by side",
        description="Replay transcripts through several strategies and compare them.",
    )
    c.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders (recursive)")
    c.add_argument(
        "--strategies",
        required=True,
        metavar="A,B,...",
        help="comma-separated strategy names, each once, or 'all' for every registered strategy (required)",
    )
    add_common_options(c, "compare")


class _VersionAction(argparse.Action):
    """``--version``: the version is read when asked for (``importlib.metadata`` is costly to
    import: ``ctxlab --help`` does without it, issue 31)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=str(kwargs.get("help"))
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(_version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ctxlab``."""
    parser = argparse.ArgumentParser(
        prog="ctxlab",
        description="Replay agent transcripts through context-compression strategies and report.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_replay_parser(sub)
    add_compare_parser(sub)
    pl = sub.add_parser("plugins", help="list loaded plugins, their hooks, strategies and transcript formats")
    add_plugin_options(pl)
    from ctxlab.cli.plugins_new import add_new_parser

    add_new_parser(pl.add_subparsers(dest="plugins_command", metavar="new"))
    sub.add_parser("bench", help="estimator and strategy benchmarks (ctxlab.cli.bench)", add_help=False)
    from ctxlab.cli.findings import add_findings_parser

    add_findings_parser(sub)
    from ctxlab.cli.show_cmd import add_show_parser

    add_show_parser(sub)
    from ctxlab.cli.diff_cmd import add_diff_parser

    add_diff_parser(sub)
    from ctxlab.cli.eval_cmd import add_eval_parser

    add_eval_parser(sub)
    return parser


def _bench(argv: Sequence[str]) -> int:
    import importlib

    try:
        bench = importlib.import_module("ctxlab.cli.bench")
    except ModuleNotFoundError as exc:
        if exc.name in ("ctxlab.cli.bench",):
            print(
                "ctxlab: error: `ctxlab bench` is not available in this installation "
                "(the module ctxlab.cli.bench is missing)",
                file=sys.stderr,
            )
            return 1
        raise
    code = bench.main(list(argv))
    return int(code or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctxlab``; returns the exit status (see the module doc: 0, 1, 2 or 130).

    Ctrl-C anywhere — while the parser's imports load, inside a command, or in its clean-up —
    prints ``ctxlab: interrupted`` and returns 130; it never escapes as a traceback (which would
    make the interpreter end by SIGINT, status -2, and skip the message).
    """
    try:
        return _run(argv)
    except KeyboardInterrupt:
        _forget_interrupted_string_eval()
        print("ctxlab: interrupted", file=sys.stderr)
        return 130


def _forget_interrupted_string_eval() -> None:
    """Make ``python -m ctxlab`` end with the status :func:`main` returns after a Ctrl-C.

    CPython (3.11, 3.12) remembers a KeyboardInterrupt that ended a string ``exec``/``eval`` —
    what ``dataclasses``, ``namedtuple`` and ``typing`` run while a module loads — even when it
    was caught; under ``-m`` the interpreter then ends itself by SIGINT (status -2, no message)
    instead of exiting 130.  Every string evaluation starts by clearing that flag, so one empty
    one after the interrupt was handled clears it (tests/test_cli_jobs_and_interrupts.py).
    """
    exec("pass")


def _run(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return _bench(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    from ctxlab.core.settings import SettingsError

    # the middleware logs each forced round and failed summary; the report counts them
    quiet = logging.getLogger("ctxlab")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    import warnings

    shown = warnings.formatwarning
    warnings.formatwarning = _warning_text  # every command's warnings read alike (s40 trial)
    try:
        if args.command == "plugins" and getattr(args, "plugins_command", None) == "new":
            from ctxlab.cli.plugins_new import run_new

            return run_new(args)
        if args.command == "plugins":
            from ctxlab.cli.plugins_cmd import run_plugins

            return run_plugins(args)
        if args.command == "show":
            from ctxlab.cli.show_cmd import run_show

            return run_show(args)
        if args.command == "diff":
            from ctxlab.cli.diff_cmd import run_diff_cmd

            return run_diff_cmd(args)
        if args.command == "eval":
            from ctxlab.cli.eval_cmd import run_eval_cmd

            return run_eval_cmd(args, argv)
        if args.command == "findings":
            from ctxlab.cli.findings import run_findings

            return run_findings(args)
        from ctxlab.cli.replay_cmd import run_replay

        return run_replay(args, argv)
    except SettingsError as exc:
        print(f"ctxlab: error: invalid setting: {exc}", file=sys.stderr)
        return 2
    except CliError as exc:
        print(f"ctxlab: error: {exc}", file=sys.stderr)
        return exc.code
    finally:
        quiet.setLevel(level)
        warnings.formatwarning = shown


def _warning_text(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """How a warning no command caught is printed: as the commands say theirs (``ctxlab: warning:
    ...``, one line per line), not in Python's ``file:line: Category: ...`` form (``ctxlab
    findings`` printed a loader's warning that way).  Only the text changes: a caller recording
    warnings (``warnings.catch_warnings(record=True)``) still receives them."""
    return warning_text(message)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
