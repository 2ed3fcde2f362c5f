"""The ARS behaviour as ordinary plugins, registered ``trylast`` in every plugin manager.

* :class:`~ctxlab.core.builtin.estimator.DefaultEstimator` — character-class estimate (R16)
* :class:`~ctxlab.core.builtin.trimmers.ArgumentTruncation` — write_file/edit_file args (R5)
* :class:`~ctxlab.core.builtin.trimmers.ToolResultOffload` — large ToolMessages to files (R6)
* :class:`~ctxlab.core.builtin.cutoff_rule.KeepRecentCutoff` — the L2 cutoff (R9)
* :class:`~ctxlab.core.builtin.summarizers.DefaultSummarizer` — LLM summary (R10), structured offline
"""

from __future__ import annotations

from ctxlab.core.builtin.cutoff_rule import KeepRecentCutoff
from ctxlab.core.builtin.estimator import DefaultEstimator
from ctxlab.core.builtin.summarizers import DefaultSummarizer, ForceStructuredSummarizer, StructuredSummarizer
from ctxlab.core.builtin.trimmers import ArgumentTruncation, ToolResultOffload

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


def default_plugins() -> list[object]:
    """Fresh instances of the built-in compression plugins (registration order: later runs first
    within ``trylast``, so argument truncation is registered last to run first)."""
    return [
        DefaultEstimator(),
        ToolResultOffload(),
        ArgumentTruncation(),
        KeepRecentCutoff(),
        DefaultSummarizer(),
    ]
