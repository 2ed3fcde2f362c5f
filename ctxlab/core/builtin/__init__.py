"""The ARS behaviour as ordinary plugins, registered ``trylast`` in every plugin manager.

* :class:`~ctxlab.core.builtin.estimator.DefaultEstimator` — character-class estimate (R16)
* :class:`~ctxlab.core.builtin.truncation.ArgumentTruncation` — write_file/edit_file args (R5)
* :class:`~ctxlab.core.builtin.trimmers.ToolResultOffload` — large ToolMessages to files (R6)
* :class:`~ctxlab.core.builtin.decision.ArsSummarizeRule` — L2 above T2 or after an overflow (R7, R8)
* :class:`~ctxlab.core.builtin.decision.ResummarizeGuard` — no re-summary for a few new messages
  (a deviation from the seed, ``docs/middleware.md``)
* :class:`~ctxlab.core.builtin.cutoff_rule.KeepRecentCutoff` — the L2 cutoff (R9)
* :class:`~ctxlab.core.builtin.summarizers.DefaultSummarizer` — LLM summary (R10), structured offline
* (not a default) :class:`~ctxlab.core.builtin.extractive.ExtractiveSummarizer` — the offline
  extractive summary by salience (``ars-extractive``, :class:`ForceExtractiveSummarizer`)
"""

from __future__ import annotations

from ctxlab.core.builtin.cutoff_rule import KeepRecentCutoff
from ctxlab.core.builtin.decision import ArsSummarizeRule, ResummarizeGuard
from ctxlab.core.builtin.estimator import DefaultEstimator
from ctxlab.core.builtin.extractive import ExtractiveSummarizer, ForceExtractiveSummarizer
from ctxlab.core.builtin.summarizers import DefaultSummarizer, ForceStructuredSummarizer, StructuredSummarizer
from ctxlab.core.builtin.trimmers import ToolResultOffload
from ctxlab.core.builtin.truncation import ArgumentTruncation

__all__ = [
    "ArgumentTruncation",
    "ArsSummarizeRule",
    "DefaultEstimator",
    "DefaultSummarizer",
    "ExtractiveSummarizer",
    "ForceExtractiveSummarizer",
    "ForceStructuredSummarizer",
    "KeepRecentCutoff",
    "ResummarizeGuard",
    "StructuredSummarizer",
    "ToolResultOffload",
    "default_plugins",
]


def default_plugins() -> list[object]:
    """Fresh instances of the built-in compression plugins.

    Registration order matters among ``trylast`` implementations of one hook: pluggy inserts
    each at the front of the trylast group, so the one registered **first** is called first.
    The re-summarize guard is registered before the ARS rule so that it is asked first.
    """
    return [
        DefaultEstimator(),
        ToolResultOffload(),
        ArgumentTruncation(),
        ResummarizeGuard(),
        ArsSummarizeRule(),
        KeepRecentCutoff(),
        DefaultSummarizer(),
    ]
