"""One warning per middleware instance when its settings make L2 summarize again and again.

L2 runs when the post-L1 estimate is above T2 (R8) and keeps the recent messages besides the
summary (R9); the system message and the tool schemas are never summarized and always count
(R9, R16).  When that fixed part alone is above T2, no summary can bring the request under T2:
every round from then on is an L2 round, a summarizer call each time the request reaches T again
(DeepAgents' system prompt and tool schemas with a small T: every call).  An L2 round that ends
above T2 (what it keeps is itself above T2) makes the next rounds likely to do the same.  Nothing fails, so the middleware says it once: with the fixed part measured, T2 and what
to change.  The replay says the same per run in its own words (``summary_thrash``), so it
ignores this category.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ctxlab.core.compression import RoundInput

__all__ = ["SummaryThrashWarning", "ThrashWatch"]

logger = logging.getLogger("ctxlab.core.middleware")
R = TypeVar("R")


class SummaryThrashWarning(RuntimeWarning):
    """The settings make every round an L2 round that cannot get below T2 (:class:`ThrashWatch`)."""


class ThrashWatch:
    """Says :class:`SummaryThrashWarning` (``warnings`` and the ``ctxlab.core.middleware`` logger)
    at most once for its middleware, after the first round whose request's fixed part (system
    message + tool schemas, the round's own estimator) is above T2, or whose L2 round ended above
    T2.  Thread-safe; costs nothing after it has spoken or below T (no round)."""

    def __init__(self) -> None:
        self._said = False
        self._lock = threading.Lock()

    def after(self, inp: RoundInput, result: R) -> R:
        """:meth:`check` the round ``inp`` that gave ``result``; returns ``result``."""
        self.check(inp)
        return result

    def check(self, inp: RoundInput) -> None:
        """Look at the round ``inp`` just ran (its ``stats``) and warn if it thrashes."""
        stats = inp.stats
        if self._said or stats.get("level", "none") == "none":
            return
        s = inp.settings
        t2 = s.l2_threshold_tokens
        fixed = inp.estimates.fixed_tokens(inp.system, inp.tools)
        after = stats.get("tokens_after")
        ended_above = stats.get("level") == "L2" and isinstance(after, int) and after > t2
        if fixed <= t2 and not ended_above:
            return
        with self._lock:
            if self._said:
                return
            self._said = True
        what = (
            f"the request's fixed part (system message and tool schemas, never summarized) is {fixed:,} "
            f"tokens, above T2 = {t2:,.0f} tokens"
            if fixed > t2
            else f"an L2 round ended at {after:,} tokens, above T2 = {t2:,.0f} tokens (the fixed part: "
            f"{fixed:,} tokens; summary_keep_messages={s.summary_keep_messages} kept besides the summary)"
        )
        then = (
            "no summary can bring the request under T2, so every round from now on summarizes again"
            if fixed > t2
            else "what L2 keeps is itself above T2, so a round will likely summarize again"
        )
        message = (
            f"ctxlab: {what}: {then} (a summarizer call each time the request reaches T = "
            f"{s.entry_threshold_tokens:,} tokens). Raise summary_threshold (now {s.summary_threshold:g} K) or "
            f"summary_l2_trigger_ratio (now {s.summary_l2_trigger_ratio:g})"
            + ("" if fixed > t2 else ", or keep fewer messages (summary_keep_messages)")
            + "."
        )
        logger.warning("%s", message)
        warnings.warn(message, SummaryThrashWarning, stacklevel=5)
