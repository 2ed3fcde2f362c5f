"""What the options of ``ctxlab replay`` and ``ctxlab compare`` (:mod:`ctxlab.cli.options`)
resolve to: the settings (:func:`settings_from_args`, from the ``--summary-*`` flags or
``--config FILE``), the provider's context window (:func:`window_from_args`), the price row
(:func:`price_row`), the summarizer model (:func:`summarizer_from_args`), the summary cache
(:func:`summary_cache_from_args`) and the simulated latencies (:func:`latency_from_args`).

A user error raises :class:`~ctxlab.cli.options.CliError` (printed as ``ctxlab: error: ...``, exit
status 2 unless it says otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from ctxlab.cli.options import NO_WINDOW, SETTING_FLAGS, CliError, warning_text

__all__ = [
    "latency_from_args",
    "load_config",
    "prefix_setting",
    "price_row",
    "settings_from_args",
    "summarizer_from_args",
    "summary_cache_from_args",
    "window_from_args",
]


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


def latency_from_args(args: argparse.Namespace) -> dict[str, str]:
    """``{"summarizer_latency": ..., "call_latency": ...}`` of ``--summarizer-latency`` and
    ``--call-latency`` (those given), checked.

    Raises:
        CliError: a value that is not a duration or distribution (the message names the option).
    """
    from ctxlab.replay.latency import Latency

    out: dict[str, str] = {}
    for flag, key in (("--summarizer-latency", "summarizer_latency"), ("--call-latency", "call_latency")):
        value = getattr(args, key, None)
        if value is None:
            continue
        try:
            Latency.parse(value, flag)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        out[key] = value
    return out


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


def settings_from_args(args: argparse.Namespace, said: list[str] | None = None) -> Any:
    """The :class:`~ctxlab.CompressionSettings` of ``--config`` plus the flags.  A value outside
    its recommended range is printed as ``ctxlab: warning: ...`` and, when ``said`` is given,
    appended to it (so that the run records it).

    Raises:
        SettingsError: an invalid value (names the field and the allowed range).
        CliError: an unreadable config or prompt file.
    """
    from ctxlab.core.settings import CompressionSettings, SettingsError

    config = args.config if getattr(args, "config", None) else None
    data: dict[str, Any] = load_config(config) if config else {}
    _known_keys(data, config)
    from_file = set(data)
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
        try:
            settings = CompressionSettings.from_mapping(data)
        except SettingsError as exc:  # a value of the file (no flag overrode it): name the file
            if config and exc.field in from_file and getattr(args, exc.field, None) is None:
                raise CliError(f"invalid setting: --config {config}: {exc}") from exc
            raise
    for w in caught:
        sys.stderr.write(warning_text(w.message))
        if said is not None:
            said.append(str(w.message))
    return settings


def _known_keys(data: dict[str, Any], config: str | None) -> None:
    """Refuse a key that is no setting, naming the file and the closest field names.

    Raises:
        CliError: an unknown key (``summary_keep_mesages`` gets "did you mean
            'summary_keep_messages'?").
    """
    from dataclasses import fields

    from ctxlab.core.settings import CompressionSettings, closest_field

    known = [f.name for f in fields(CompressionSettings)]
    for key in data:
        if key not in known:
            close = closest_field(key)
            hint = f" (did you mean {close!r}?)" if close else ""
            where = f"--config {config}: " if config else ""
            if isinstance(data[key], dict) and not hint:  # a [section]: the file is flat
                hint = " (the file is flat: the setting fields at its top level, no sections)"
            raise CliError(f"invalid setting: {where}unknown key {key!r}{hint}; known: {', '.join(known)}")


# --- models and measures ------------------------------------------------------------------------


def window_from_args(args: argparse.Namespace) -> Any:
    """The provider's :class:`~ctxlab.replay.provider.ContextWindow` of ``--context-window``
    (``--window``) or ``--context-window-from`` (counted with ``--provider-count``); ``None`` for
    ``--context-window none``; else ``"price"``: the window of the price row's model
    (:func:`ctxlab.replay.building.price_window`, the default).

    Raises:
        CliError: both given, a window that is not a positive integer, an unknown profile, or
            tiktoken missing for the tiktoken counter.
    """
    from ctxlab.replay.building import PRICE_WINDOW
    from ctxlab.replay.provider import ContextWindow, profile_window

    tokens, spec = args.context_window, args.context_window_from
    if tokens is not None and spec:
        raise CliError("give --context-window or --context-window-from, not both")
    if tokens == NO_WINDOW:
        return None
    if tokens is None and not spec:
        if args.provider_count == "tiktoken":
            _need_tiktoken()
        return PRICE_WINDOW
    source = "--context-window"
    if spec:
        try:
            tokens = profile_window(spec)
        except ValueError as exc:
            raise CliError(f"--context-window-from {exc}") from exc
        source = f"profile {spec}"
    if tokens is None or tokens <= 0:
        raise CliError(f"--context-window={tokens} is invalid: allowed an integer > 0, or none")
    try:
        return ContextWindow(int(tokens), counter=args.provider_count, source=source)
    except ImportError:
        _need_tiktoken()
        raise


def _need_tiktoken() -> None:
    try:
        import tiktoken  # noqa: F401
    except ImportError as exc:
        raise CliError(
            "--provider-count tiktoken needs the tiktoken package (pip install 'ctxlab[lab]')"
        ) from exc


def prefix_setting(args: argparse.Namespace) -> str | int:
    """``--unrecorded-prefix``: ``auto``, ``off`` or tokens (:func:`ctxlab.replay.prefix.parse_prefix_setting`).

    Raises:
        CliError: anything else.
    """
    from ctxlab.replay.prefix import parse_prefix_setting

    try:
        return parse_prefix_setting(getattr(args, "unrecorded_prefix", "auto"))
    except ValueError as exc:
        raise CliError(f"--unrecorded-prefix: {exc}") from exc


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
