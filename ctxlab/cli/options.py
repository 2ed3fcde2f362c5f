"""The options of ``ctxlab replay`` and ``ctxlab compare``, one function per group, and what they
resolve to: the settings (:func:`settings_from_args`), the provider's context window
(:func:`window_from_args`), the price row (:func:`price_row`) and the summarizer model
(:func:`summarizer_from_args`).

Every option's help names its default.  A user error raises :class:`CliError` (printed as
``ctxlab: error: ...``, exit status 2 unless it says otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FIGURES",
    "MEASURES",
    "SETTING_FLAGS",
    "CliError",
    "Option",
    "add_common_options",
    "add_input_options",
    "add_measure_options",
    "add_model_options",
    "add_options",
    "add_output_options",
    "add_plugin_options",
    "add_settings_options",
    "file_option",
    "load_config",
    "model_option",
    "option",
    "price_row",
    "settings_from_args",
    "summarizer_from_args",
    "summary_cache_from_args",
    "switch",
    "window_from_args",
]

#: the four numeric settings fields -> (metavar, help) of their ``--summary-*`` flags
_SETTING_HELP = {
    "summary_threshold": ("K", "entry threshold T in K tokens (x1024) (default: 100)"),
    "summary_keep_messages": ("N", "messages kept verbatim by L2 (default: 10)"),
    "summary_tool_result_token_limit": (
        "TOKENS",
        "L1 limit for one tool result, and the preview budget (default: 300)",
    ),
    "summary_l2_trigger_ratio": ("RATIO", "T2 / T (default: 0.4)"),
}
#: settings field -> its flag (the field's name in kebab case)
SETTING_FLAGS = {field: "--" + field.replace("_", "-") for field in _SETTING_HELP}
#: the measuring estimators of ``--measure`` (:func:`ctxlab.replay.metrics.make_measure`)
MEASURES = ("char-class", "tiktoken")
#: ``--figures`` choices: runs that reach T, every run, none
FIGURES = ("reached", "all", "none")


class CliError(Exception):
    """A user error: printed as ``ctxlab: error: <message>`` with exit status ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# --- option groups ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option of the command line: its flag and the other keyword arguments of argparse's
    ``add_argument`` (``help`` among them)."""

    flag: str
    kwargs: dict[str, Any]


def option(flag: str, help: str, **kwargs: Any) -> Option:
    """An :class:`Option`; ``kwargs`` are ``add_argument``'s (``metavar``, ``type``, ``default``, ...)."""
    return Option(flag, {"help": help, **kwargs})


def file_option(flag: str, help: str) -> Option:
    """An option naming a file (``FILE``)."""
    return option(flag, help, metavar="FILE")


def model_option(flag: str, help: str) -> Option:
    """An option naming a chat model of a LangChain provider (``PROVIDER:MODEL``)."""
    return option(flag, help, metavar="PROVIDER:MODEL")


def switch(flag: str, help: str) -> Option:
    """An on/off flag (``store_true``: off unless given)."""
    return option(flag, help, action="store_true")


def add_options(p: argparse.ArgumentParser, title: str | None, options: Iterable[Option]) -> None:
    """Add ``options`` to ``p``, in a help group titled ``title`` (``None``: no group of their own)."""
    g = p.add_argument_group(title) if title is not None else p
    for o in options:
        g.add_argument(o.flag, **o.kwargs)


def add_settings_options(p: argparse.ArgumentParser) -> None:
    """``--config`` and the ``--summary-*`` flags (the five ARS fields; flags override the file)."""
    add_options(
        p,
        "settings (the five ARS fields and the summary language; flags override --config)",
        [
            file_option("--config", "TOML or JSON file with the settings fields (default: none)"),
            *(option(SETTING_FLAGS[f], h, metavar=m) for f, (m, h) in _SETTING_HELP.items()),
            file_option(
                "--summary-prompt-file",
                "summarizer prompt, must contain {messages} (default: the built-in prompt)",
            ),
            option(
                "--summary-language",
                "auto, zh or en: the built-in prompt's and the summary's language; auto follows "
                "the user's messages (default: auto)",
                metavar="LANG",
            ),
        ],
    )


def add_input_options(p: argparse.ArgumentParser) -> None:
    """What is replayed, and what a failure does to the batch."""
    add_options(
        p,
        "input",
        [
            option("--format", "transcript format name (default: detected per file)", metavar="NAME"),
            option(
                "--limit-calls",
                "replay at most N model calls per transcript (default: all)",
                metavar="N",
                type=int,
            ),
            switch(
                "--keep-going",
                "batch use: go on after a file that cannot be loaded, a missing path or a failed run, "
                "and report every failure (the exit status is still 1); default: stop at the first "
                "failure",
            ),
        ],
    )


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The main model's provider stand-in (its context window and counter) and the summarizer."""
    add_options(
        p,
        "models",
        [
            option(
                "--context-window",
                "the provider's input window: a request above it is refused with ContextOverflowError, "
                "as a live call would be (default: no window)",
                metavar="TOKENS",
                type=int,
            ),
            model_option(
                "--context-window-from",
                "the window of a model profile shipped by the installed LangChain provider package, "
                "e.g. anthropic:claude-sonnet-4-5 (default: none)",
            ),
            option(
                "--provider-count",
                "how the provider stand-in counts a request: tiktoken = cl100k_base, offline; char-class "
                "= ctxlab's estimate (default: %(default)s)",
                choices=("tiktoken", "char-class"),
                default="tiktoken",
            ),
            option(
                "--summarizer-model",
                "summarize with this chat model (init_chat_model), or offline: 'structured' or 'extractive' "
                "(no model call; keeps by salience what later turns use) (default: the offline structured "
                "summary)",
                metavar="PROVIDER:MODEL|structured|extractive",
            ),
            option(
                "--summary-cache",
                "folder of the on-disk cache of --summarizer-model replies (summaries.sqlite), or off; "
                "a second run of the same command asks the model nothing (default: OUT/.ctxlab-cache)",
                metavar="DIR|off",
            ),
        ],
    )


def summary_cache_from_args(args: argparse.Namespace) -> Path | None:
    """The SQLite file of the summary cache: ``--summary-cache DIR`` (``DIR/summaries.sqlite``),
    ``None`` for ``off`` or without ``--summarizer-model``, else ``<--out>/.ctxlab-cache/summaries.sqlite``.

    Raises:
        CliError: ``DIR`` exists and is not a folder.
    """
    from ctxlab.replay.summary_cache import CACHE_FILE, default_cache_path

    value = getattr(args, "summary_cache", None)
    if value == "off" or not getattr(args, "summarizer_model", None):
        return None
    if value is None:
        return default_cache_path(args.out)
    folder = Path(value)
    if folder.exists() and not folder.is_dir():
        raise CliError(f"--summary-cache {value}: exists and is not a folder (give a folder, or off)")
    return folder / CACHE_FILE


def add_measure_options(p: argparse.ArgumentParser) -> None:
    """How the token and cost columns are measured."""
    add_options(
        p,
        "measures",
        [
            option(
                "--measure",
                "the measuring estimator for every token column (default: %(default)s)",
                choices=MEASURES,
                default="char-class",
            ),
            file_option(
                "--prices",
                "price table (TOML, the fields of ctxlab/replay/prices.toml) replacing the shipped one "
                "(default: the shipped table)",
            ),
            model_option(
                "--price-model", "the price row of the cost columns (default: anthropic:claude-sonnet-4-5)"
            ),
        ],
    )


def add_output_options(p: argparse.ArgumentParser, command: str) -> None:
    """Where the results go and what is drawn."""
    add_options(
        p,
        "output",
        [
            option(
                "--out",
                "output folder: calls.parquet, summary.csv, report.md, run.json, figures/, files/, "
                "views/ (default: %(default)s)",
                metavar="DIR",
                default=f"out/{command}",
            ),
            option(
                "--figures",
                "budget figures for the runs that reach T, for every run, or none (default: %(default)s)",
                choices=FIGURES,
                default="reached",
            ),
            switch("--no-figures", "the same as --figures none"),
            option(
                "--top",
                "print the N first runs of the per-transcript table, ranked: runs that compressed "
                "first, by raw tokens (default: %(default)s; every run is in summary.csv)",
                metavar="N",
                type=int,
                default=40,
            ),
            option(
                "--data",
                "which runs the executive summary, the per-run statistics and the pooled figures "
                "use: real (recorded agent runs; all runs when none is real) or all (scripted and "
                "synthetic too) (default: %(default)s)",
                choices=("real", "all"),
                default="real",
            ),
            switch(
                "--html",
                "also write inspect.html, the call inspector (the same as `ctxlab show DIR` afterwards)",
            ),
            switch(
                "--no-progress", "no progress bar (default: a bar on a terminal, none when stderr is not one)"
            ),
        ],
    )


def add_plugin_options(p: argparse.ArgumentParser) -> None:
    """A plugins folder (the lab also reads ``$CTXLAB_PLUGINS_DIR``) and ``--strict``."""
    plugins_dir = option(
        "--plugins-dir",
        "also load plugins from the .py files in DIR; hooks that change compression rename the "
        "strategies they apply to (ars+<plugin>), unless the plugin registers strategies of its own "
        "(default: $CTXLAB_PLUGINS_DIR, else none)",
        metavar="DIR",
    )
    strict = switch(
        "--strict",
        "exit 1 when any plugin has a problem (fails to load, is skipped, or a hook raises); without "
        "it the problem is recorded in report.md, run.json and calls.parquet and the run goes on",
    )
    add_options(p, None, [plugins_dir, strict])


def add_parallel_options(p: argparse.ArgumentParser) -> None:
    """Parallel runs: local processes or a Ray cluster (:mod:`ctxlab.replay.parallel`)."""
    add_options(
        p,
        "parallel runs (the same rows as the serial run; ctxlab.replay.parallel)",
        [
            option("--jobs", "local worker processes (default: 1)", metavar="N", type=int, default=1),
            option(
                "--engine",
                "local processes or a Ray cluster, needs ctxlab[ray] (default: local)",
                choices=("local", "ray"),
                default="local",
            ),
            option(
                "--ray-address",
                "the Ray cluster to join (default: $RAY_ADDRESS or a local one)",
                metavar="ADDR",
            ),
        ],
    )


def add_common_options(p: argparse.ArgumentParser, command: str) -> None:
    """Every option group of ``replay`` and ``compare``."""
    add_settings_options(p)
    add_input_options(p)
    add_model_options(p)
    add_measure_options(p)
    add_output_options(p, command)
    add_plugin_options(p)
    add_parallel_options(p)


# --- settings -----------------------------------------------------------------------------------


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
    if getattr(args, "summary_language", None) is not None:
        data["summary_language"] = args.summary_language
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = CompressionSettings.from_mapping(data)
    for w in caught:
        print(f"ctxlab: warning: {w.message}", file=sys.stderr)
    return settings


# --- models and measures ------------------------------------------------------------------------


def window_from_args(args: argparse.Namespace) -> Any:
    """The provider's :class:`~ctxlab.replay.provider.ContextWindow` of ``--context-window`` or
    ``--context-window-from`` (counted with ``--provider-count``), or ``None``.

    Raises:
        CliError: both given, a window that is not a positive integer, an unknown profile, or
            tiktoken missing for the tiktoken counter.
    """
    from ctxlab.replay.provider import ContextWindow, profile_window

    tokens, spec = args.context_window, args.context_window_from
    if tokens is not None and spec:
        raise CliError("give --context-window or --context-window-from, not both")
    if tokens is None and not spec:
        return None
    source = "--context-window"
    if spec:
        try:
            tokens = profile_window(spec)
        except ValueError as exc:
            raise CliError(f"--context-window-from {exc}") from exc
        source = f"profile {spec}"
    if tokens is None or tokens <= 0:
        raise CliError(f"--context-window={tokens} is invalid: allowed an integer > 0")
    try:
        return ContextWindow(int(tokens), counter=args.provider_count, source=source)
    except ImportError as exc:
        raise CliError(
            "--provider-count tiktoken needs the tiktoken package (pip install 'ctxlab[lab]')"
        ) from exc


def price_row(args: argparse.Namespace) -> Any:
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


def summarizer_from_args(args: argparse.Namespace) -> Any:
    """The chat model of ``--summarizer-model`` (``init_chat_model``), the name of an offline
    summarizer (``structured``, ``extractive``: :data:`ctxlab.replay.building.OFFLINE_SUMMARIZERS`),
    or ``None`` (the offline structured one).

    Raises:
        CliError: an unknown provider, a missing integration package or key.
    """
    if not args.summarizer_model:
        return None
    from ctxlab.replay.building import OFFLINE_SUMMARIZERS

    if args.summarizer_model in OFFLINE_SUMMARIZERS:
        return args.summarizer_model  # an offline summarizer by name (make_summarizer)
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(args.summarizer_model)
    except Exception as exc:  # unknown provider, missing integration package, missing key
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CliError(f"--summarizer-model {args.summarizer_model}: {first}") from exc
