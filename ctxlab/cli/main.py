"""The ``ctxlab`` command.

Usage::

    ctxlab replay [PATH ...] [--strategy NAME] [--out DIR] [settings and options]
    ctxlab compare PATH [PATH ...] --strategies a,b,... [--out DIR] [settings and options]
    ctxlab plugins
    ctxlab bench [ARGS ...]
    ctxlab findings PATH [PATH ...] [--measure NAME] [--strategies a,b,...] [--no-savings]

PATH is a transcript file or a folder (walked recursively).  ``replay`` without PATH replays the
bundled sample transcript.  Settings come from ``--config FILE`` (TOML or JSON with the five
field names) and the ``--summary-*`` flags (flags win).  An invalid setting prints the field and
its allowed range and exits with status 2; a file that cannot be loaded is reported and skipped
(exit 0 as long as something was replayed, 1 when nothing could be).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "load_config", "main", "settings_from_args"]

#: flag -> settings field
SETTING_FLAGS = {
    "summary_threshold": "--summary-threshold",
    "summary_keep_messages": "--summary-keep-messages",
    "summary_tool_result_token_limit": "--summary-tool-result-token-limit",
    "summary_l2_trigger_ratio": "--summary-l2-trigger-ratio",
}


class CliError(Exception):
    """A user error: printed as ``ctxlab: error: <message>`` with exit status ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _number(text: str) -> Any:
    """``"12"`` → 12, ``"0.5"`` → 0.5; anything else is passed on as text so that the settings
    validation names the field in its error."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _add_common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("settings (the five ARS fields; flags override --config)")
    g.add_argument("--config", metavar="FILE", help="TOML or JSON file with the settings fields")
    g.add_argument(
        "--summary-threshold", metavar="K", help="entry threshold T in K tokens (x1024); default 100"
    )
    g.add_argument("--summary-keep-messages", metavar="N", help="messages kept verbatim by L2; default 10")
    g.add_argument(
        "--summary-tool-result-token-limit",
        metavar="TOKENS",
        help="L1 limit for one tool result, and the preview budget; default 300",
    )
    g.add_argument("--summary-l2-trigger-ratio", metavar="RATIO", help="T2 / T; default 0.4")
    g.add_argument(
        "--summary-prompt-file", metavar="FILE", help="summarizer prompt (must contain {messages})"
    )
    o = p.add_argument_group("replay options")
    o.add_argument(
        "--out", metavar="DIR", help="output folder (calls.parquet, summary.csv, report.md, figures)"
    )
    o.add_argument("--format", metavar="NAME", help="transcript format name (default: detected per file)")
    o.add_argument(
        "--summarizer-model",
        metavar="PROVIDER:MODEL",
        help="summarize with this chat model (init_chat_model); default: offline structured summary",
    )
    o.add_argument("--context-window", metavar="N", type=int, help="the main model's max input tokens")
    o.add_argument(
        "--measure",
        choices=("char-class", "tiktoken"),
        default="char-class",
        help="the measuring estimator for every token column (default: char-class)",
    )
    o.add_argument("--limit-calls", metavar="N", type=int, help="replay at most N model calls per transcript")
    o.add_argument(
        "--prices",
        metavar="FILE",
        help="price table (TOML, the fields of ctxlab/replay/prices.toml) replacing the shipped one",
    )
    o.add_argument(
        "--price-model",
        metavar="PROVIDER:MODEL",
        help="the price row of the cost columns (default: anthropic:claude-sonnet-4-5)",
    )
    o.add_argument("--plugins-dir", metavar="DIR", help="also load plugins from the .py files in DIR")
    o.add_argument("--no-figures", action="store_true", help="do not write PNG figures")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")
    j = p.add_argument_group("parallel runs (same results as serial; ctxlab.replay.parallel)")
    j.add_argument("--jobs", metavar="N", type=int, default=1, help="local worker processes; default 1")
    j.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local processes or a Ray cluster (ctxlab[ray])",
    )
    j.add_argument(
        "--ray-address", metavar="ADDR", help="the Ray cluster to join (default: $RAY_ADDRESS or a local one)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ctxlab``."""
    parser = argparse.ArgumentParser(
        prog="ctxlab",
        description="Replay agent transcripts through context-compression strategies and report.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "replay",
        help="replay transcripts through one strategy (default: ars)",
        description="Replay transcripts through one strategy. No PATH: the bundled sample.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="transcript files or folders (recursive)")
    p.add_argument("--strategy", default="ars", help="strategy name (see `ctxlab plugins`); default: ars")
    _add_common(p)

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
        help="comma-separated strategy names, or 'all' for every registered strategy",
    )
    _add_common(c)

    pl = sub.add_parser("plugins", help="list loaded plugins, their hooks, strategies and transcript formats")
    pl.add_argument("--plugins-dir", metavar="DIR", help="also load plugins from the .py files in DIR")

    sub.add_parser("bench", help="estimator and strategy benchmarks (ctxlab.cli.bench)", add_help=False)
    from ctxlab.cli.findings import add_findings_parser

    add_findings_parser(sub)
    return parser


# --- settings -----------------------------------------------------------------------------------


def load_config(path: str | Path) -> dict[str, Any]:
    """The settings mapping of a TOML or JSON file (a ``[settings]``/``[ctxlab]`` table or the
    top level); hyphens in keys become underscores.

    Raises:
        CliError: the file is missing or is neither valid TOML nor JSON.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"--config {p}: cannot read file: {exc.strerror or exc}") from exc
    data: Any
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(f"--config {p}: invalid JSON: {exc}") from exc
    else:
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                raise CliError(f"--config {p}: invalid TOML: {exc}") from exc
    if not isinstance(data, dict):
        raise CliError(f"--config {p}: expected a table of settings, got {type(data).__name__}")
    for table in ("settings", "ctxlab"):
        if isinstance(data.get(table), dict):
            data = data[table]
            break
    out = {str(k).replace("-", "_"): v for k, v in data.items()}
    prompt_file = out.pop("summary_prompt_file", None)
    if prompt_file is not None:
        out["summary_prompt"] = _read_prompt(
            (p.parent / str(prompt_file))
            if not Path(str(prompt_file)).is_absolute()
            else Path(str(prompt_file))
        )
    return out


def _read_prompt(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"summary prompt file {path}: cannot read: {exc.strerror or exc}") from exc


def settings_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~ctxlab.CompressionSettings` of ``--config`` plus the flags.

    Raises:
        SettingsError: an invalid value (names the field and the allowed range).
        CliError: an unreadable config or prompt file.
    """
    from ctxlab.core.settings import CompressionSettings

    data: dict[str, Any] = load_config(args.config) if getattr(args, "config", None) else {}
    for field in SETTING_FLAGS:
        value = getattr(args, field, None)
        if value is not None:
            data[field] = _number(value)
    if getattr(args, "summary_prompt_file", None):
        data["summary_prompt"] = _read_prompt(Path(args.summary_prompt_file))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = CompressionSettings.from_mapping(data)
    for w in caught:
        print(f"ctxlab: warning: {w.message}", file=sys.stderr)
    return settings


# --- commands -----------------------------------------------------------------------------------


def _plugin_manager(args: argparse.Namespace) -> Any:
    from ctxlab.replay import make_lab_manager

    folder = getattr(args, "plugins_dir", None)
    if folder is not None and not Path(folder).is_dir():
        raise CliError(f"--plugins-dir {folder}: no such folder")
    return make_lab_manager(load_entrypoints=True, plugins_dir=folder)


#: what a run writes into its output folder; removed first so no stale result survives
_OUTPUTS = ("calls.parquet", "summary.csv", "report.md", "summaries.jsonl", "figures", "files")


def _prepare_out(out: Path) -> None:
    import shutil

    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".ctxlab-write-check"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise CliError(f"--out {out}: cannot write there ({exc.strerror or exc})") from exc
    for name in _OUTPUTS:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def _console(stderr: bool = False) -> Any:
    import os

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else 160
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def _run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from ctxlab.analysis.report import strategy_totals, write_report
    from ctxlab.replay import replay_many
    from ctxlab.replay import strategies as registered

    settings = settings_from_args(args)
    pm = _plugin_manager(args)
    known = registered(pm)
    if args.command == "compare":
        names = [s.strip() for s in args.strategies.split(",") if s.strip()]
        if names == ["all"]:
            names = list(known)
        if not names:
            raise CliError("--strategies names no strategy")
        paths = list(args.paths)
    else:
        names = [args.strategy]
        paths = list(args.paths)
        if not paths:
            from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

            if not Path(SAMPLE_TRANSCRIPT).is_file():
                raise CliError(f"the bundled sample transcript is missing: {SAMPLE_TRANSCRIPT}", code=1)
            paths = [SAMPLE_TRANSCRIPT]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CliError(f"unknown strategy {unknown[0]!r}; known: {', '.join(sorted(known)) or '(none)'}")
    for name, value in (("--limit-calls", args.limit_calls), ("--context-window", args.context_window)):
        if value is not None and value <= 0:
            raise CliError(f"{name}={value} is invalid: allowed an integer > 0")
    out = Path(args.out) if args.out else Path("out") / args.command
    if args.format is not None:
        from ctxlab.transcripts import available_formats

        formats = available_formats(pm)
        if args.format not in formats:
            raise CliError(f"--format {args.format}: unknown format; known: {', '.join(sorted(formats))}")
    price = _price_row(args)
    _prepare_out(out)
    if args.measure == "tiktoken":
        try:
            import tiktoken  # noqa: F401
        except ImportError as exc:
            raise CliError(
                "--measure tiktoken needs the tiktoken package (pip install 'ctxlab[lab]')"
            ) from exc

    summarizer_model: Any = None
    if args.summarizer_model:
        from langchain.chat_models import init_chat_model

        try:
            summarizer_model = init_chat_model(args.summarizer_model)
        except Exception as exc:  # unknown provider, missing integration package, missing key
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CliError(f"--summarizer-model {args.summarizer_model}: {first}") from exc

    if args.jobs < 1:
        raise CliError(f"--jobs={args.jobs} is invalid: allowed an integer > 0")
    if args.jobs > 1 or args.engine == "ray":
        result = _run_parallel(args, paths, names, settings, out, price)
    else:
        result = replay_many(
            paths,
            names,
            settings=settings,
            out_dir=out,
            format=args.format,
            pm=pm,
            summarizer_model=summarizer_model,
            context_window=args.context_window,
            measure=args.measure,
            limit_calls=args.limit_calls,
            progress=not args.no_progress,
            price_model=price,
        )
    written = write_report(result, out, figures=not args.no_figures, command="ctxlab " + " ".join(argv))
    _print_summary(result, strategy_totals(result.frame()), written, out)
    if result.replayed == 0:
        print("ctxlab: error: nothing could be replayed", file=sys.stderr)
        return 1
    return 0


def _price_row(args: argparse.Namespace) -> Any:
    """The price row of ``--prices``/``--price-model``.

    Raises:
        CliError: an unreadable or invalid price file, or no such row.
    """
    from ctxlab.replay.prices import PriceTableError
    from ctxlab.replay.run_measures import resolve_price

    try:
        return resolve_price(args.price_model, args.prices)
    except PriceTableError as exc:
        raise CliError(f"--prices: {exc}") from exc
    except OSError as exc:
        raise CliError(f"--prices {args.prices}: cannot read file: {exc.strerror or exc}") from exc
    except KeyError as exc:
        raise CliError(f"--price-model: {exc.args[0]}") from exc


def _run_parallel(
    args: argparse.Namespace, paths: list[Any], names: list[str], settings: Any, out: Path, price: Any
) -> Any:
    """``--jobs N`` / ``--engine ray``: the same replay on worker processes or a Ray cluster."""
    from ctxlab.replay.parallel import RayUnavailableError, run_grid

    try:
        grid = run_grid(
            paths,
            names,
            settings,
            jobs=args.jobs,
            engine=args.engine,
            ray_address=args.ray_address,
            out_dir=out,
            format=args.format,
            plugins_dir=args.plugins_dir,
            measure=args.measure,
            limit_calls=args.limit_calls,
            context_window=args.context_window,
            summarizer_model=args.summarizer_model,
            price_model=price,
            progress=not args.no_progress,
        )
    except RayUnavailableError as exc:
        raise CliError(str(exc)) from exc
    return grid.results[0]


def _print_summary(result: Any, totals: Any, written: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    console = _console()
    s = result.settings
    console.print(
        f"[bold]ctxlab {', '.join(result.strategies)}[/bold]: T = {s.entry_threshold_tokens:,} tokens, "
        f"T2 = {s.l2_threshold_tokens:,.0f} tokens, keep {s.summary_keep_messages} messages, "
        f"tool-result limit {s.summary_tool_result_token_limit} tokens; measure: {result.measure}"
    )
    summary = result.summary()
    limit = 40
    compact = console.width < 130
    fields: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("transcript", lambda r: _short(r["transcript"], 44)),
        ("strategy", lambda r: r["strategy"]),
        ("runs", lambda r: str(r["transcripts"])),
        ("calls", lambda r: f"{r['calls']:,}"),
        ("raw tokens", lambda r: f"{r['raw_tokens_total']:,}"),
        ("sent tokens", lambda r: f"{r['sent_tokens_total']:,}"),
        ("saving %", lambda r: _pct(r["saving_pct"])),
        ("L1", lambda r: str(r["l1_rounds"])),
        ("L2", lambda r: str(r["l2_rounds"])),
        ("cache share", lambda r: _share(r["mean_cache_reusable_share"])),
        ("retention", lambda r: _share(r["mean_retention"])),
        ("max view", lambda r: f"{r['max_view_tokens']:,}"),
    ]
    skip_compact = {"raw tokens", "sent tokens", "cache share", "max view"}

    def make(title: str, df: Any, names: Sequence[str]) -> Any:
        table = Table(title=title, title_justify="left")
        chosen = [(n, f) for n, f in fields if n in names and not (compact and n in skip_compact)]
        for name, _ in chosen:
            if name == "transcript":
                table.add_column(name, overflow="ellipsis", max_width=44, no_wrap=True)
            else:
                table.add_column(
                    name, justify="left" if name == "strategy" else "right", no_wrap=True, min_width=len(name)
                )
        for row in df.iter_rows(named=True):
            table.add_row(*(f(row) for _, f in chosen))
        return table

    if summary.height:
        names = [n for n, _ in fields if n != "runs"]
        console.print(make("per transcript and strategy (tokens are estimates)", summary.head(limit), names))
        if summary.height > limit:
            console.print(f"... {summary.height - limit} more rows in {written['summary']}", markup=False)
    if totals.height > 1 or summary.height > limit:
        names = [n for n, _ in fields if n not in ("transcript", "max view")]
        console.print(make("per strategy, all transcripts", totals, names))
    _print_costs(console, result, totals)
    if result.errors:
        console.print(f"[bold yellow]{len(result.errors)} problem(s)[/bold yellow] (listed in report.md):")
        for e in result.errors[:20]:
            console.print(f"  - {'skipped' if e.kind == 'load' else 'failed'}: {e}", markup=False)
        if len(result.errors) > 20:
            console.print(f"  ... {len(result.errors) - 20} more")
    console.print(
        f"written to {out}: calls.parquet, summary.csv, report.md"
        + (f", {len(written['figures'])} figures" if written["figures"] else ""),
        markup=False,
    )


def _print_costs(console: Any, result: Any, totals: Any) -> None:
    """The cost and needed-recall table per strategy, under the price row named with its date."""
    from rich.table import Table

    price = getattr(result, "price", None)
    if price is None or not totals.height:
        return
    table = Table(title="cost and summary fidelity per strategy", title_justify="left")
    columns = (
        "strategy",
        "calls",
        "L2",
        "cost $",
        "per call $",
        "raw cost $",
        "cost saving %",
        "needed recall",
    )
    for name in columns:
        table.add_column(name, justify="left" if name == "strategy" else "right", no_wrap=True)
    for r in totals.iter_rows(named=True):
        per_call = r["cost_usd"] / r["calls"] if r["cost_usd"] is not None and r["calls"] else None
        table.add_row(
            r["strategy"],
            f"{r['calls']:,}",
            str(r["l2_rounds"]),
            _usd(r["cost_usd"]),
            _usd(per_call),
            _usd(r["raw_cost_usd"]),
            _pct(r["cost_saving_pct"]),
            _share(r["needed_recall"]),
        )
    console.print(table)
    console.print(
        f"prices: {price.key} as of {price.as_of} ({price.source}). cost $: US dollars with "
        f"{price.caching} prompt caching, the summarizer's calls included; raw cost $: the uncompressed "
        "requests under the same caching; needed recall: of the identifiers later turns used that stood "
        "only in a summarized span, the share the summaries carried (pooled over the L2 rounds)",
        markup=False,
    )


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else "..." + text[-(n - 3) :]


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:.1f}"


def _share(v: float | None) -> str:
    return "" if v is None else f"{v:.3f}"


def _usd(v: float | None) -> str:
    return "" if v is None else f"{v:.4f}"


def _plugins(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ctxlab.core.plugins import describe_plugins
    from ctxlab.replay import strategies as registered
    from ctxlab.transcripts import available_formats

    pm = _plugin_manager(args)
    console = _console()
    t = Table(title="plugins", title_justify="left")
    for name in ("name", "source", "hooks"):
        t.add_column(name, overflow="fold")
    for info in describe_plugins(pm):
        t.add_row(info.name, info.source, ", ".join(info.hooks))
    console.print(t)
    s = Table(title="strategies", title_justify="left")
    s.add_column("name")
    s.add_column("description", overflow="fold")
    for name, strat in registered(pm).items():
        s.add_row(name, strat.description)
    console.print(s)
    f = Table(title="transcript formats", title_justify="left")
    f.add_column("name")
    f.add_column("description", overflow="fold")
    for name, fmt in available_formats(pm).items():
        f.add_row(name, getattr(fmt, "description", ""))
    console.print(f)
    return 0


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
    """Run ``ctxlab``; returns the exit status (0 ok, 1 nothing replayed, 2 usage/settings error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return _bench(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    from ctxlab.core.settings import SettingsError

    try:
        if args.command == "plugins":
            return _plugins(args)
        if args.command == "findings":
            from ctxlab.cli.findings import run_findings

            return run_findings(args)
        return _run(args, argv)
    except SettingsError as exc:
        print(f"ctxlab: error: invalid setting: {exc}", file=sys.stderr)
        return 2
    except CliError as exc:
        print(f"ctxlab: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("ctxlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
