"""ctxlab: context compression for LLM agents.

The middleware is what a prototype imports::

    from ctxlab import CompressionMiddleware, CompressionSettings

The package is built in floors, each importing only the floors below it (checked by
import-linter, see ``docs/architecture.md``):

1. :mod:`ctxlab.core` — settings, estimation, L1, cutoff, summarizing, the round, the middleware,
   hook specifications, the plugin manager and the built-in ARS plugins;
2. :mod:`ctxlab.transcripts` — loaders of recorded agent runs;
3. :mod:`ctxlab.replay` — the model-node harness, strategies, the replay engine, metrics;
4. :mod:`ctxlab.analysis` — frames, plots, reports, widgets (what notebooks import);
5. :mod:`ctxlab.cli` — the ``ctxlab`` command, benchmarks, the sample recorder.

The names below are loaded on first use (PEP 562), so ``import ctxlab`` alone imports no
LangChain, polars or matplotlib.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxlab.core.events import to_sse
    from ctxlab.core.hookspecs import hookimpl
    from ctxlab.core.middleware import CompressionMiddleware, CompressionState
    from ctxlab.core.plugins import describe_plugins, make_plugin_manager
    from ctxlab.core.settings import (
        SUMMARY_PROMPT_EN,
        SUMMARY_PROMPT_ZH,
        CompressionSettings,
        SettingsError,
    )

#: public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "SUMMARY_PROMPT_EN": "ctxlab.core.settings",
    "SUMMARY_PROMPT_ZH": "ctxlab.core.settings",
    "CompressionSettings": "ctxlab.core.settings",
    "SettingsError": "ctxlab.core.settings",
    "CompressionMiddleware": "ctxlab.core.middleware",
    "CompressionState": "ctxlab.core.middleware",
    "describe_plugins": "ctxlab.core.plugins",
    "make_plugin_manager": "ctxlab.core.plugins",
    "hookimpl": "ctxlab.core.hookspecs",
    "to_sse": "ctxlab.core.events",
}

__all__ = [
    "SUMMARY_PROMPT_EN",
    "SUMMARY_PROMPT_ZH",
    "CompressionMiddleware",
    "CompressionSettings",
    "CompressionState",
    "SettingsError",
    "__version__",
    "describe_plugins",
    "hookimpl",
    "make_plugin_manager",
    "to_sse",
]


def _version() -> str:
    """The installed distribution's version (read on first use: ``importlib.metadata`` costs a
    third of ``ctxlab --help``'s start-up, issue 31)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxlab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
