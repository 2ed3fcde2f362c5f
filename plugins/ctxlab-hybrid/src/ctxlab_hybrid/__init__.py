"""ctxlab-hybrid: observation masking first, an ARS L2 summary only when masking is not enough.

The ``hybrid`` strategy adds one plugin to ARS, :class:`HybridMasking`.  A round goes:

1. below the entry threshold T: the effective messages as they are (R3);
2. at T or above, L1: observation masking first (the last ``N`` tool results verbatim, older
   ones replaced by a placeholder; :class:`ctxlab_masking.ObservationMasking`), then the ARS
   trimmers (argument truncation, tool-result offload — a single huge recent result is still
   offloaded, since masking keeps recent results whole);
3. **masking is enough** while the masked view's messages stay below T: the masked view is
   sent and the state is unchanged (an L1 round);
4. otherwise ARS L2 summarizes the older part (the summarizer sees the masked view; the history
   file keeps the full messages) and the masked kept part follows the summary.

Why T and not T2 for step 3: ARS sends an L1 view only up to T2 (0.4 T by default) because
plain L1 trimming barely slows the growth of a view; a masked view grows only by the assistant
turns, the placeholders (~25 tokens each) and the N recent results, so it may use the whole
budget below T before a summary is worth its cost.  The decision is the core's L2 decision
hook, ``ctxlab_should_summarize``: :class:`HybridMasking` answers it first (``tryfirst``) and
declines L2 while the L1 request estimate it is given (system message, tool schemas and the
masked view) is below T (``ctx.threshold_tokens``); otherwise it defers to the ARS rule, which
summarizes above T2.  A round forced by a context overflow is always left to ARS: an overflow
of a masked view, whether at most T2 or between T2 and T, forces the ARS summary (R12).

Measured on the four longest public transcripts (T = 20 K tokens, with the earlier bar of the
masked *messages* only, without system message and tool schemas): ARS 20 summaries, hybrid 9
summaries and 128 masked-only calls, masking-only 0 summaries; with T2 as the bar instead of T,
masking was never enough and the hybrid equalled ARS.

Because the state is never rewritten, step 2 is decided on the unmasked history: once a run
crosses T it stays masked.  ``N`` is ``$CTXLAB_MASKING_KEEP`` (default 10).  Needs the
``ctxlab-masking`` plugin package.  The entry point names the package itself
(``hybrid = "ctxlab_hybrid"``), whose one module-level hook registers the strategy only.
"""

from __future__ import annotations

from typing import Any

from ctxlab_masking import ObservationMasking, keep_from_env
from langchain_core.messages import BaseMessage

from ctxlab.sdk import RegisterStrategy, SummarizeContext, SummarizeDecision, hookimpl

__all__ = ["HybridMasking", "ctxlab_register_strategies", "hybrid_plugins"]


class HybridMasking(ObservationMasking):
    """Masking as an L1 trimmer (``tryfirst``, from :class:`ctxlab_masking.ObservationMasking`)
    plus an L2 decision that declines a summary while the masked request stays below T.

    Args:
        keep: tool results kept verbatim (``N``).
    """

    name = "hybrid-masking"

    @hookimpl(tryfirst=True)
    def ctxlab_should_summarize(
        self, view: list[BaseMessage], ctx: SummarizeContext
    ) -> SummarizeDecision | None:
        if ctx.forced:  # forced by a context overflow (R12): ARS decides
            return None
        if ctx.tokens < ctx.threshold_tokens:
            return SummarizeDecision(
                False, f"hybrid: masking is enough ({ctx.tokens} tokens < T = {ctx.threshold_tokens:g})"
            )
        return None  # masking is not enough: the ARS rule (above T2: L2)


def hybrid_plugins(settings: Any = None, keep: int | None = None) -> list[object]:
    """The plugins of the ``hybrid`` strategy (on top of the ARS defaults).  ``settings`` is
    accepted for the strategy-factory signature: the decision reads T from the round itself."""
    return [HybridMasking(keep_from_env() if keep is None else keep)]


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """The entry point's one hook: the ``hybrid`` strategy."""
    register(
        "hybrid",
        hybrid_plugins,
        "Observation masking from T on (last N tool results verbatim); ARS L2 summary only when the "
        "masked view still reaches T ($CTXLAB_MASKING_KEEP, default 10)",
    )
