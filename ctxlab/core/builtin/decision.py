"""The built-in L2 decision (hook ``ctxlab_should_summarize``, spec R7, R8): the ARS rule and the
re-summarize guard, two plugins so that the guard — a deliberate deviation from the seed — can
be removed on its own (``pm.unregister(name="ctxlab.builtin.resummarize-guard")``).
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from ctxlab.core.cutoff import SummarizeContext, SummarizeDecision
from ctxlab.core.hookspecs import hookimpl

#: a re-summary must cover new messages holding at least this share of the excess over T2
MIN_GAIN_SHARE = 0.1

__all__ = ["MIN_GAIN_SHARE", "ArsSummarizeRule", "ResummarizeGuard"]


class ArsSummarizeRule:
    """The seed's rule (R7, R8): L2 when the round was forced by a context overflow (R12) or the
    L1 estimate is strictly above T2 (seed: L1 后的估算值严格超过该门槛); otherwise the L1 view."""

    name = "ars-summarize-rule"

    @hookimpl(trylast=True)
    def ctxlab_should_summarize(self, view: list[BaseMessage], ctx: SummarizeContext) -> SummarizeDecision:
        if ctx.forced:
            return SummarizeDecision(True, "ars: forced by a context overflow (R12)")
        if ctx.tokens > ctx.l2_threshold_tokens:
            return SummarizeDecision(
                True, f"ars: L1 estimate {ctx.tokens} > T2 {ctx.l2_threshold_tokens:g} tokens (R8)"
            )
        return SummarizeDecision(
            False, f"ars: L1 estimate {ctx.tokens} <= T2 {ctx.l2_threshold_tokens:g} tokens (R7)"
        )


class ResummarizeGuard:
    """Deviation from the seed: do not summarize *again* for a handful of new messages.

    After a summary, a fixed overhead above T2 that no summary removes (a long system prompt,
    many tool schemas, a kept window larger than T2) keeps every call above T2, and the seed's
    rule would summarize the one or two messages added since, on every call.  With a previous
    summary (``ctx.has_previous_summary``) and no overflow, this guard declines L2 until the
    messages a cutoff could summarize beyond the previous summary — ``view[1 : len(view) -
    keep_messages]`` — hold at least :data:`MIN_GAIN_SHARE` of the excess of the L1 estimate over
    T2.  It never blocks the first summary of a thread, nor a forced round; otherwise it defers.
    """

    name = "resummarize-guard"

    def __init__(self, min_gain_share: float = MIN_GAIN_SHARE) -> None:
        self.min_gain_share = min_gain_share

    @hookimpl(trylast=True)
    def ctxlab_should_summarize(
        self, view: list[BaseMessage], ctx: SummarizeContext
    ) -> SummarizeDecision | None:
        if ctx.forced or not ctx.has_previous_summary or ctx.tokens <= ctx.l2_threshold_tokens:
            return None
        need = self.min_gain_share * (ctx.tokens - ctx.l2_threshold_tokens)
        new_tokens = 0
        for m in view[1 : max(1, len(view) - ctx.keep_messages)]:
            new_tokens += ctx.estimate(m)
            if new_tokens >= need:  # enough to summarize: the rest is not summed (issue 31)
                return None
        if new_tokens < need:
            return SummarizeDecision(
                False,
                f"resummarize-guard: {new_tokens} tokens of new messages to summarize < {need:.0f} "
                f"({self.min_gain_share:g} of the {ctx.tokens - ctx.l2_threshold_tokens:.0f} tokens above T2)",
            )
        return None
