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
budget below T before a summary is worth its cost.  (When the masked view is at most T2, ARS
itself sends it; between T2 and T the cutoff hook of :class:`HybridMasking` declines L2.)
The cutoff hook sees the effective messages but not the view, so the L1 wrapper records the
final masked view's estimate (messages only: the hook does not see the system message and the
tool schemas) under a fingerprint of the round's messages.  A round forced by a context
overflow always goes to the ARS cutoff.

Limitation: when the hook declines L2 (masked view between T2 and T), the core sends the L1 view
through its "no cutoff" path (R13), where a context overflow propagates instead of forcing L2; a
masked view at most T2 goes through R7, where an overflow forces the ARS summary as usual.  Both
are only reachable when the model's window is smaller than T.  (A core change — re-asking the
cutoff in forced mode after such an overflow — would close the gap; see the xfail test.)

Measured on the four longest public transcripts (T = 20 K tokens): ARS 20 summaries, hybrid 9
summaries and 128 masked-only calls, masking-only 0 summaries; with T2 as the bar instead of T,
masking was never enough and the hybrid equalled ARS.

Because the state is never rewritten, step 2 is decided on the unmasked history: once a run
crosses T it stays masked.  ``N`` is ``$CTXLAB_MASKING_KEEP`` (default 10).  Needs the
``ctxlab-masking`` plugin package.  The entry point only registers the strategy.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ctxlab_masking import ObservationMasking, keep_from_env
from langchain_core.messages import BaseMessage

from ctxlab import hookimpl
from ctxlab.core.cutoff import CutoffContext, CutoffDecision
from ctxlab.core.identity import BoundedCache
from ctxlab.core.l1 import TrimContext, TrimReport, protect_key

__all__ = ["HybridMasking", "entry_point", "hybrid_plugins"]


#: masked-view estimates remembered (one round writes one, its cutoff hook reads it)
MASKED_ROUNDS_CACHED = 32


def _fingerprint(messages: list[BaseMessage]) -> tuple[Any, ...]:
    return tuple(protect_key(m) for m in messages)


class HybridMasking(ObservationMasking):
    """Masking as an L1 wrapper plus a cutoff rule that declines L2 while masking is enough.

    Args:
        keep: tool results kept verbatim (``N``).
        threshold_tokens: T in tokens; L2 runs only when the masked view's messages reach it
            (or the round was forced by an overflow).
    """

    name = "hybrid-masking"

    def __init__(self, keep: int, *, threshold_tokens: int) -> None:
        super().__init__(keep)
        self.threshold_tokens = threshold_tokens
        self._masked_tokens: BoundedCache[tuple[Any, ...], int] = BoundedCache(MASKED_ROUNDS_CACHED)

    # a pluggy wrapper around every trimmer, where ObservationMasking's is a plain implementation
    @hookimpl(wrapper=True, tryfirst=True)
    def ctxlab_l1_trim(  # type: ignore[override]
        self, view: list[BaseMessage], ctx: TrimContext
    ) -> Generator[None, Any, list[TrimReport]]:
        key = _fingerprint(view)
        report = self.mask(view, ctx)
        reports: list[TrimReport] = yield
        self._masked_tokens.put(key, sum(ctx.estimate(m) for m in view))
        return [report, *(reports or [])]

    @hookimpl(tryfirst=True)
    def ctxlab_select_cutoff(self, messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision | None:
        if ctx.forced:  # forced by a context overflow (R12): ARS decides
            return None
        masked = self._masked_tokens.get(_fingerprint(messages))
        if masked is not None and masked < self.threshold_tokens:
            return CutoffDecision(
                None, f"hybrid: masking is enough ({masked} tokens of messages < T = {self.threshold_tokens})"
            )
        return None


def hybrid_plugins(settings: Any = None, keep: int | None = None) -> list[object]:
    """The plugins of the ``hybrid`` strategy (on top of the ARS defaults)."""
    from ctxlab.core.settings import CompressionSettings

    s = settings if isinstance(settings, CompressionSettings) else CompressionSettings()
    return [
        HybridMasking(keep_from_env() if keep is None else keep, threshold_tokens=s.entry_threshold_tokens)
    ]


class _EntryPoint:
    """What the ``ctxlab`` entry point registers: the strategy only."""

    name = "ctxlab-hybrid"

    @hookimpl
    def ctxlab_register_strategies(self, register: Any) -> None:
        register(
            "hybrid",
            hybrid_plugins,
            "Observation masking from T on (last N tool results verbatim); ARS L2 summary only when the "
            "masked view still reaches T ($CTXLAB_MASKING_KEEP, default 10)",
        )


entry_point = _EntryPoint()
