"""The ARS behaviour as ordinary plugins, registered ``trylast`` in every plugin manager.

* :class:`~ctxlab.builtin.estimator.DefaultEstimator` — character-class estimate (R16)
* :class:`~ctxlab.builtin.trimmers.ArgumentTruncation` — write_file/edit_file args (R5)
* :class:`~ctxlab.builtin.trimmers.ToolResultOffload` — large ToolMessages to files (R6)
* :class:`~ctxlab.builtin.cutoff_rule.KeepRecentCutoff` — the L2 cutoff (R9)
* :class:`~ctxlab.builtin.summarizers.DefaultSummarizer` — LLM summary (R10), structured offline
* the transcript formats (:mod:`ctxlab.transcripts`) and the ``ars`` strategy
"""

from __future__ import annotations

from typing import Any

from ctxlab.builtin.cutoff_rule import KeepRecentCutoff
from ctxlab.builtin.estimator import DefaultEstimator
from ctxlab.builtin.summarizers import DefaultSummarizer, ForceStructuredSummarizer, StructuredSummarizer
from ctxlab.builtin.trimmers import ArgumentTruncation, ToolResultOffload
from ctxlab.hookspecs import hookimpl

__all__ = [
    "ArgumentTruncation",
    "DefaultEstimator",
    "DefaultSummarizer",
    "ForceStructuredSummarizer",
    "KeepRecentCutoff",
    "StructuredSummarizer",
    "ToolResultOffload",
    "default_plugins",
]


class BuiltinStrategies:
    """Registers the ``ars`` strategy (the defaults with nothing added)."""

    name = "strategies"

    @hookimpl(trylast=True)
    def ctxlab_register_strategies(self, register: Any) -> None:
        register("ars", lambda settings: [], "ARS two-level compression (L1 trim + L2 summary), the defaults")


def default_plugins(registries: bool = True) -> list[object]:
    """Fresh instances of the built-in plugins (registration order: later runs first within
    ``trylast``, so argument truncation is registered last to run first).

    ``registries=False`` leaves out the lab's registries (the ``ars`` strategy and the transcript
    formats): a middleware's own plugin manager needs only the compression hooks.
    """
    plugins: list[object] = [
        DefaultEstimator(),
        ToolResultOffload(),
        ArgumentTruncation(),
        KeepRecentCutoff(),
        DefaultSummarizer(),
    ]
    if not registries:
        return plugins
    plugins.append(BuiltinStrategies())
    try:
        from ctxlab.transcripts import formats_plugin
    except ImportError:  # transcripts not importable: the middleware still works
        formats_plugin = None
    if formats_plugin is not None:
        plugins.append(formats_plugin)
    return plugins
