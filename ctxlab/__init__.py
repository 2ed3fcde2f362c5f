"""ctxlab: context compression for LLM agents.

The middleware floor is what ``import ctxlab`` gives a prototype::

    from ctxlab import CompressionMiddleware, CompressionSettings

Lab modules (replay, plots, widgets, CLI) import polars/matplotlib only when used.
"""

from __future__ import annotations

from ctxlab.events import to_sse
from ctxlab.middleware import CompressionMiddleware, CompressionState
from ctxlab.plugins import describe_plugins, make_plugin_manager
from ctxlab.settings import (
    SUMMARY_PROMPT_EN,
    SUMMARY_PROMPT_ZH,
    CompressionSettings,
    SettingsError,
)

__version__ = "0.1.0"

__all__ = [
    "SUMMARY_PROMPT_EN",
    "SUMMARY_PROMPT_ZH",
    "CompressionMiddleware",
    "CompressionSettings",
    "CompressionState",
    "SettingsError",
    "__version__",
    "describe_plugins",
    "make_plugin_manager",
    "to_sse",
]
