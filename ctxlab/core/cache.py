"""Cache-aware compaction (issue 23): decide *when* L2 pays in dollars under a provider's prompt cache.

**The cost model** (USD; prices per million tokens of a :class:`CachePrices`, the fields of a
``prices.toml`` row).  A round about to summarize has an L1 request of ``before`` tokens, of
which ``overhead`` (system message and tool schemas) stay cached through a compaction; the
compacted request would hold ``after`` tokens (overhead + summary + kept window).  Tokens the
next calls append cost the same either way, so only the difference counts:

* without compaction, each later call reads ``before`` from the cache: ``before × r``;
* with it, the compacting call writes the new prefix once — ``(after − overhead) × w +
  overhead × r`` — and each later call reads ``after × r``;
* the summarizer's own call costs ``summarizer_usd``: 0 for the extractive summarizer (no model
  call), ``before × r + summary × o`` for a summarizer that sends the agent's cached request
  plus one instruction (:class:`CachedPrefixSummarizer`), ``span × i + summary × o`` for one that
  sends the span as new text.

``r`` is ``cached_input``, ``w`` the price of a token entering the cache (``cache_write`` for
explicit caching, ``input`` for automatic and implicit caching, where a new prefix is a miss),
``i`` is ``input`` and ``o`` ``output``; without caching ``r = w = i``.  The one-time extra cost
is ``extra = (after − overhead) × w + overhead × r − before × r + summarizer_usd`` and each
later call saves ``(before − after) × r``, so a compaction pays for itself after
``k = extra / saving`` calls (:func:`break_even_calls`; ``inf`` when it saves nothing).  The
decision (:class:`CacheAwareSummarize`) summarizes when the expected number of calls still to
come reaches ``k``; it takes that horizon to be the number of assistant turns in the view
(a thread tends to go on about as long again as it has gone, the Lindy estimate).

**What it does not capture**: the cache lifetime (a call after the TTL rereads nothing; calls
are assumed within it), the growth of the view after the compaction (equal either way only up to
the next compaction), the recall a summary loses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab.core.builtin.cutoff_rule import KeepRecentCutoff
from ctxlab.core.cutoff import CutoffContext, CutoffDecision, SummarizeContext, SummarizeDecision
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.summarize import LLMSummarizer, SummaryJob, SummaryResult

__all__ = [
    "CACHE_KEEP_MESSAGES",
    "SUMMARIZER_KINDS",
    "CacheAwareCutoff",
    "CacheAwareSummarize",
    "CachePrices",
    "CachedPrefixSummarizer",
    "Compaction",
    "break_even_calls",
    "compaction",
]

#: messages ``ars-cache`` keeps after its cutoff: the latest exchange (measured on the public
#: mini-swe-agent runs at T = 16K, Sonnet 4.5 prices, 1,300-token summaries: keeping 1 / 2 / 4 messages saved 25.5 / 24.3 /
#: 23.1 % at identifier recall 0.87 / 0.85 / 0.83; the ARS default of 10 saved 17.4 % at 0.83)
CACHE_KEEP_MESSAGES = 2
#: how the summarizer is billed in the cost model (see the module docstring)
SUMMARIZER_KINDS = ("extractive", "cached-prefix", "fresh")


@dataclass(frozen=True)
class CachePrices:
    """The prices the cost model reads (USD per million tokens) and the caching family.

    Attributes:
        input, cached_input, cache_write, output: as in ``prices.toml``.
        caching: ``"explicit"``, ``"automatic"``, ``"implicit"`` or ``"none"``.

    Raises:
        ValueError: a negative or non-finite price, or an unknown ``caching``.
    """

    input: float
    cached_input: float
    cache_write: float
    output: float
    caching: str = "explicit"

    def __post_init__(self) -> None:
        for name in ("input", "cached_input", "cache_write", "output"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name}={value!r} is invalid: allowed a finite price >= 0 (USD per MTok)")
        if self.caching not in ("explicit", "automatic", "implicit", "none"):
            raise ValueError(
                f"caching={self.caching!r} is invalid: allowed explicit, automatic, implicit or none"
            )

    @classmethod
    def of(cls, row: Any) -> CachePrices:
        """The prices of a row with those attributes (a :class:`ctxlab.replay.prices.PriceRow`)."""
        return cls(row.input, row.cached_input, row.cache_write, row.output, row.caching)

    @property
    def read(self) -> float:
        """``r``: a cached token read (USD per MTok)."""
        return self.input if self.caching == "none" else self.cached_input

    @property
    def write(self) -> float:
        """``w``: a token entering the cache (USD per MTok)."""
        if self.caching == "explicit":
            return self.cache_write
        return self.input


@dataclass(frozen=True)
class Compaction:
    """One compaction in the cost model: its one-time extra cost and per-call saving (USD)."""

    extra_usd: float
    saving_per_call_usd: float

    @property
    def break_even(self) -> float:
        """Calls after which the compaction has paid for itself (``inf``: never)."""
        return break_even_calls(self.extra_usd, self.saving_per_call_usd)


def break_even_calls(extra_usd: float, saving_per_call_usd: float) -> float:
    """``extra / saving`` calls, 0 when the compaction costs nothing extra, ``inf`` when it saves
    nothing per call."""
    if extra_usd <= 0:
        return 0.0
    if saving_per_call_usd <= 0:
        return math.inf
    return extra_usd / saving_per_call_usd


def compaction(
    prices: CachePrices,
    *,
    before: int,
    after: int,
    overhead: int = 0,
    span: int = 0,
    summary: int = 0,
    summarizer: str = "extractive",
) -> Compaction:
    """The cost model of the module docstring for one compaction (token counts ≥ 0).

    Raises:
        ValueError: an unknown ``summarizer`` (one of :data:`SUMMARIZER_KINDS`), or
            ``overhead`` above ``after``.
    """
    if summarizer not in SUMMARIZER_KINDS:
        raise ValueError(f"summarizer={summarizer!r} is invalid: allowed {', '.join(SUMMARIZER_KINDS)}")
    if overhead > after:
        raise ValueError(f"overhead={overhead} is invalid: at most after={after} tokens")
    r, w = prices.read, prices.write
    if summarizer == "extractive":
        summ = 0.0
    elif summarizer == "cached-prefix":
        summ = before * r + summary * prices.output
    else:
        summ = span * prices.input + summary * prices.output
    extra = (after - overhead) * w + overhead * r - before * r + summ
    return Compaction(extra / 1e6, (before - after) * r / 1e6)


class CacheAwareSummarize:
    """The L2 decision by dollars (hook ``ctxlab_should_summarize``, ``tryfirst``): above T2 it
    summarizes only when the expected calls to come (the assistant turns in the view) reach the
    compaction's break-even (:func:`compaction`); a forced round and a view at most T2 are left
    to the ARS rule (R8, R12).

    Args:
        prices: the active price row's prices.
        summary_tokens: the expected size of a summary (tokens).
        summarizer: how the summarizer is billed, one of :data:`SUMMARIZER_KINDS`.
    """

    name = "cache-aware-summarize"

    def __init__(
        self,
        prices: CachePrices,
        *,
        summary_tokens: int,
        summarizer: str = "extractive",
        keep_messages: int | None = None,
    ) -> None:
        compaction(prices, before=0, after=0, summarizer=summarizer)  # checks the kind
        if keep_messages is not None and (isinstance(keep_messages, bool) or keep_messages < 0):
            raise ValueError(f"keep_messages={keep_messages!r} is invalid: allowed an integer >= 0 or None")
        self.prices = prices
        #: what a replay's provenance records of this decision (the price row and where it came from)
        self.provenance: dict[str, str] = {}
        self.summary_tokens = summary_tokens
        self.summarizer = summarizer
        self.keep_messages = keep_messages

    def plan(self, view: Sequence[BaseMessage], ctx: SummarizeContext) -> tuple[Compaction, int]:
        """The compaction this round would make and the expected calls to come."""
        sizes = [ctx.estimate(m) for m in view]
        overhead = max(0, ctx.tokens - sum(sizes))
        keep = ctx.keep_messages if self.keep_messages is None else self.keep_messages
        kept = sum(sizes[len(sizes) - keep :]) if keep else 0
        span = sum(sizes) - kept
        after = overhead + self.summary_tokens + kept
        plan = compaction(
            self.prices,
            before=ctx.tokens,
            after=min(after, ctx.tokens),
            overhead=overhead,
            span=span,
            summary=self.summary_tokens,
            summarizer=self.summarizer,
        )
        return plan, max(1, sum(isinstance(m, AIMessage) for m in view))

    @hookimpl(tryfirst=True)
    def ctxlab_should_summarize(
        self, view: list[BaseMessage], ctx: SummarizeContext
    ) -> SummarizeDecision | None:
        if ctx.forced or ctx.tokens <= ctx.l2_threshold_tokens:
            return None
        plan, horizon = self.plan(view, ctx)
        k = plan.break_even
        words = (
            f"break-even after {k:.1f} calls (extra ${plan.extra_usd:.5f}, "
            f"saving ${plan.saving_per_call_usd:.5f}/call), {horizon} calls expected"
        )
        if horizon >= k:
            return SummarizeDecision(True, f"ars-cache: pays: {words}")
        return SummarizeDecision(False, f"ars-cache: does not pay yet: {words}")


class CacheAwareCutoff:
    """The cutoff of ``ars-cache`` (hook ``ctxlab_select_cutoff``, ``tryfirst``): the ARS rule
    (:class:`~ctxlab.core.builtin.cutoff_rule.KeepRecentCutoff`, R9: never inside a tool call's
    pairing) with its own kept window of ``keep_messages`` messages.  In the cost model a
    compaction's one-time write and its per-call saving both improve with every kept token
    removed (``extra`` and ``saving`` are linear in ``after``), so dollars alone would keep
    nothing; ``keep_messages`` is the floor that keeps the latest exchange verbatim.  Its cutoffs
    are ``kept_as_sent`` (:class:`~ctxlab.core.cutoff.CutoffDecision`): the kept messages go out
    in the form the compacting request sent them until the next compaction, so the next request
    repeats that request and reads it from the cache; ARS would send them whole again below T
    (R3), a second write of the compacted request and more tokens on every call (issue 28).

    Raises:
        ValueError: ``keep_messages`` < 1.
    """

    name = "cache-aware-cutoff"

    def __init__(self, keep_messages: int) -> None:
        if isinstance(keep_messages, bool) or not isinstance(keep_messages, int) or keep_messages < 1:
            raise ValueError(f"keep_messages={keep_messages!r} is invalid: allowed an integer >= 1")
        self.keep_messages = keep_messages
        self._rule = KeepRecentCutoff()

    @hookimpl(tryfirst=True)
    def ctxlab_select_cutoff(self, messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision:
        decision = self._rule.ctxlab_select_cutoff(messages, replace(ctx, keep_messages=self.keep_messages))
        return CutoffDecision(decision.index, f"ars-cache: {decision.reason}", kept_as_sent=True)


class CachedPrefixSummarizer(LLMSummarizer):
    """An LLM summarizer whose request starts like the agent's: the same system message and
    messages (the span, then the kept window: :attr:`SummaryJob.kept`), then one instruction,
    so that a provider that caches prefixes serves all but the instruction from its cache.
    The tools of the agent's request are not sent (LangChain binds them to a model, not to a
    call): an explicit-cache breakpoint set after the tools misses its first entry.  The input
    is the agent's own request plus one instruction, so it is not folded (it fits where that
    request fits, with the agent's model).  A job with no system message and no kept window is
    summarized as :class:`LLMSummarizer` does.
    """

    name = "cached-prefix"

    def summarize(self, job: SummaryJob) -> SummaryResult:
        if job.system is None and not job.kept:
            return super().summarize(job)
        request = self._request(job)
        result = SummaryResult(text="")
        try:
            reply = self.model.invoke(request, config=self._config())
            result.text = self._account(result, "\n".join(str(m.content) for m in request), reply)
        except Exception as exc:  # a failed summary (R10), never raised
            result.error = f"{type(exc).__name__}: {exc}"
        return result

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        if job.system is None and not job.kept:
            return await super().asummarize(job)
        request = self._request(job)
        result = SummaryResult(text="")
        try:
            reply = await self.model.ainvoke(request, config=self._config())
            result.text = self._account(result, "\n".join(str(m.content) for m in request), reply)
        except Exception as exc:  # a failed summary (R10), never raised
            result.error = f"{type(exc).__name__}: {exc}"
        return result

    @staticmethod
    def _request(job: SummaryJob) -> list[BaseMessage]:
        instruction = job.prompt.replace(
            "{messages}",
            f"(the conversation above, except its last {len(job.kept)} messages, which stay verbatim)",
        )
        head = [job.system] if job.system is not None else []
        return [*head, *job.messages, *job.kept, HumanMessage(content=instruction)]
