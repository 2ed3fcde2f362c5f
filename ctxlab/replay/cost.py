"""What model calls cost in money, with the prompt caching of each provider family.

**Definition.**  A call's cost, in US dollars, is::

    cost_usd = uncached_input × input + cache_read × cached_input + cache_write × cache_write_price
               + output × output_price            (prices in USD per million tokens, /1e6)

where ``cache_read`` are the input tokens the provider serves from its prompt cache, ``cache_write``
the input tokens it writes to the cache at a premium (explicit caching only) and ``uncached_input``
the rest of the input.  Tokens are whatever the caller counts them with (in a replay: the run's
measuring estimator, :mod:`ctxlab.replay.metrics`); prices come from a :class:`PriceRow`
(:mod:`ctxlab.replay.prices`).  A run's cost sums its calls, the summarizer's calls included
(:func:`total_cost`).

**Cache state.**  Calls are priced in order against the cache the earlier calls left.  A call
describes its request either as ``segments`` — ``(key, tokens)`` of its parts in order (system
message, tool schemas, each message; keys compare equal when the content is the same, e.g.
:func:`ctxlab.replay.metrics.request_keys`) — or, when only a number is known, as
``common_prefix_tokens``, the tokens it shares at its start with the previous call of the same
``kind`` (the replay's ``cache_reusable_tokens``).  With segments the cache is shared by every call
of the run (a provider caches per account, so a summarizer call that starts like a main call
reads its prefix); with a common prefix each ``kind`` is a chain of its own.  A call with neither
(the usual summarizer call: its prompt is not recorded) is priced as an uncached call and leaves
the cache as it was.

**The families** (``PriceRow.caching``):

``automatic`` (OpenAI-style)
    Every request is cached.  A request reads the longest cached prefix, counted down to a
    multiple of ``granularity_tokens`` and only when that reaches ``min_prefix_tokens`` (OpenAI:
    1,024 tokens in 128-token steps).  No write premium.
``explicit`` (Anthropic-style)
    Cache breakpoints: the prefix up to each is written at ``cache_write`` (a premium) unless it is
    already cached, and only when it has ``min_prefix_tokens``; the tokens from the hit to the last
    breakpoint are billed as written.  A request reads the longest prefix an earlier breakpoint
    wrote that it repeats and that ends within :data:`LOOKBACK_BLOCKS` blocks before one of its own
    breakpoints (the provider looks back about 20 content blocks; a block is a segment here).
    Where the breakpoints go is a *policy* (:data:`BREAKPOINTS`, ``breakpoint=`` of
    :func:`price_run`):

    ``agent`` (the default: what an agent can do, knowing only its own request)
        Anthropic's four breakpoints: after the system message and tool schemas (it survives a
        compaction), on the last message, and 20 and 40 blocks before it
        (:func:`agent_breakpoints`), so that the lookback covers the last 60 blocks.
    ``last``
        one breakpoint on the last message, with no bound on the lookback.
    ``oracle`` (for comparison only; ``"reusable"`` is its old name, the cost columns' placement
    before issue 28)
        one breakpoint at the end of the *reusable prefix*: the part of this request that the next
        call of the same kind repeats (nothing is written when nothing is reused), no bound on the
        lookback.  No agent knows the next call.  With one breakpoint it is the cheapest placement
        (nothing written that is not read); the agent's four breakpoints can beat it when a long
        system prefix outlives a compaction.

    An entry lives ``ttl_seconds`` after its last write or read (Anthropic: 5 minutes by default).
    A request whose input is above a long-context tier of the row (``PriceRow.tiers``) is priced
    whole at that tier's prices (:meth:`ctxlab.replay.prices.PriceRow.at`).
``implicit`` (Gemini/DeepSeek-style)
    Priced as ``automatic`` with the row's discount (``cached_input``), minimum and steps.  The
    providers do not promise hits; every eligible prefix is counted as one, so this is a lower
    bound on the cost.
``none``
    No caching: every input token at ``input``.

Time: a call's ``time`` (seconds, any origin) expires entries older than ``ttl_seconds``; when
either time is ``None`` the calls are taken to be within the lifetime.

**What this does not capture.**  Token counts are the caller's (estimates in a replay), not the
provider's tokenizer; prefixes are matched part by part, so a request that diverges inside a
message reuses nothing of that message; one breakpoint per request, no limit on how far back a
breakpoint looks; no batch discounts, no storage fees (Gemini's
explicit caches), no 1-hour writes; reasoning tokens that a transcript does not record are not
counted; the cache of a run is not shared with other runs (concurrent agents sharing a system
prompt would pay less); implicit hits are assumed.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ctxlab.replay.columns import report_definitions
from ctxlab.replay.metrics import RequestView, common_prefix, request_keys
from ctxlab.replay.prices import PriceRow

if TYPE_CHECKING:
    from ctxlab.core.estimation import EstimateCache

__all__ = [
    "BREAKPOINTS",
    "COST_DEFINITIONS",
    "DEFAULT_BREAKPOINTS",
    "LOOKBACK_BLOCKS",
    "CallCost",
    "CallTokens",
    "CostTotals",
    "PromptCache",
    "price_run",
    "total_cost",
    "view_segments",
]

#: the breakpoint policies of explicit caching (see the module docstring); ``"reusable"`` is
#: accepted as the old name of ``"oracle"``
BREAKPOINTS = ("agent", "last", "oracle")
#: the policy of the cost columns: what an agent can do
DEFAULT_BREAKPOINTS = "agent"
#: content blocks before a breakpoint at which a provider looks for an earlier cache entry
#: (Anthropic: "up to approximately 20 blocks"); a block is a segment here (a message)
LOOKBACK_BLOCKS = 20

Segments = tuple[tuple[Hashable, int], ...]
_KEY, _TOKENS = itemgetter(0), itemgetter(1)


@dataclass(frozen=True)
class CallTokens:
    """One model call as the cost model sees it.

    Attributes:
        input_tokens: tokens of the request (≥ the sum of ``segments``; tokens past the segments
            are never cached).
        output_tokens: tokens of the answer.
        segments: ``(key, tokens)`` of the request's parts in order (hashable keys), or ``None``.
        common_prefix_tokens: tokens shared with the start of the previous call of the same
            ``kind`` (used when ``segments`` is ``None``); ``None`` with no segments: uncached.
        time: when the call was made, in seconds; ``None``: unknown (within every lifetime).
        kind: ``"main"`` (the agent's model) or ``"summarizer"``, for the totals.

    Raises:
        ValueError: a negative count, or segments longer than ``input_tokens``.
    """

    input_tokens: int
    output_tokens: int = 0
    segments: Segments | None = None
    common_prefix_tokens: int | None = None
    time: float | None = None
    kind: str = "main"

    def __post_init__(self) -> None:
        if self.input_tokens < 0 or self.output_tokens < 0:
            raise ValueError(f"token counts must be >= 0, got {self.input_tokens}, {self.output_tokens}")
        if self.common_prefix_tokens is not None and self.common_prefix_tokens < 0:
            raise ValueError(f"common_prefix_tokens must be >= 0, got {self.common_prefix_tokens}")
        if self.segments is not None:
            total = sum(map(_TOKENS, self.segments))
            if total > self.input_tokens or min(map(_TOKENS, self.segments), default=0) < 0:
                raise ValueError(f"segments hold {total} tokens, more than input_tokens={self.input_tokens}")


@dataclass(frozen=True)
class CallCost:
    """What one call costs: its tokens by price class and US dollars by price class.

    ``uncached_usd`` is the same call with no cache at all (every input token at ``input``).
    """

    kind: str
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    input_usd: float
    cache_read_usd: float
    cache_write_usd: float
    output_usd: float
    uncached_usd: float

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens

    @property
    def total_usd(self) -> float:
        """The call's cost in US dollars."""
        return self.input_usd + self.cache_read_usd + self.cache_write_usd + self.output_usd


@dataclass
class _Entry:
    tokens: int
    last_used: float | None


def _chain(
    segments: Segments, previous: tuple[Segments, list[int], list[int]] | None = None
) -> tuple[list[int], list[int]]:
    """Chained hashes of every prefix (one per segment) and the cumulative tokens; ``previous``
    (segments, hashes, cumulative tokens of another request) gives those of the segments the two
    share at their start."""
    hashes: list[int] = []
    cum: list[int] = []
    h, total = 0, 0
    if previous is not None:
        k = common_prefix(segments, previous[0])
        hashes, cum = previous[1][:k], previous[2][:k]
        if k:
            h, total = hashes[-1], cum[-1]
        segments = segments[k:]
    for key, tokens in segments:
        h = hash((h, key))
        total += tokens
        hashes.append(h)
        cum.append(total)
    return hashes, cum


@dataclass
class PromptCache:
    """A provider's prompt cache over the calls of one run, for one price row.

    Call :meth:`charge` for each call in order; :func:`price_run` does so for a whole run and
    places the explicit breakpoints.
    """

    price: PriceRow
    _prefixes: dict[int, _Entry] = field(default_factory=dict)
    _chains: dict[str, list[_Entry]] = field(default_factory=dict)
    _last: tuple[Segments, list[int], list[int]] | None = None  # the previous request's chain

    def _alive(self, entry: _Entry, now: float | None) -> bool:
        ttl = self.price.ttl_seconds
        return ttl is None or now is None or entry.last_used is None or now - entry.last_used <= ttl

    def _cost(self, call: CallTokens, read: int, write: int) -> CallCost:
        p = self.price.at(call.input_tokens)  # a long-context tier prices the whole request
        uncached = call.input_tokens - read - write
        output_usd = call.output_tokens * p.output / 1e6
        return CallCost(
            kind=call.kind,
            input_tokens=call.input_tokens,
            cache_read_tokens=read,
            cache_write_tokens=write,
            output_tokens=call.output_tokens,
            input_usd=uncached * p.input / 1e6,
            cache_read_usd=read * p.cached_input / 1e6,
            cache_write_usd=write * p.cache_write / 1e6,
            output_usd=output_usd,
            uncached_usd=call.input_tokens * p.input / 1e6 + output_usd,
        )

    def _countable(self, tokens: int) -> int:
        """A matched prefix as the provider counts it: in steps, from the minimum on."""
        p = self.price
        steps = (tokens // p.granularity_tokens) * p.granularity_tokens
        return steps if steps >= max(p.min_prefix_tokens, 1) else 0

    def charge(
        self,
        call: CallTokens,
        *,
        write_to: int | None = None,
        breakpoints: Sequence[int] | None = None,
        lookback: int | None = None,
    ) -> CallCost:
        """Price ``call`` against the cache so far, then record what it leaves in the cache.

        Args:
            call: the call.
            write_to: explicit caching only: the tokens up to the breakpoint (with segments, the
                breakpoint goes at the last segment boundary at or before it); ``None``: the end
                of the request; ``0``: no breakpoint.  Ignored by the other families.
            breakpoints: explicit caching with segments only: several breakpoints (tokens up to
                each); replaces ``write_to``.  An entry is written at each breakpoint whose
                prefix reaches the minimum and is not cached yet; the tokens from the hit to the
                last breakpoint are billed as written.
            lookback: explicit caching with segments only: a request reads an entry only when it
                ends within this many segments before one of its breakpoints (the provider looks
                back a bounded number of content blocks, :data:`LOOKBACK_BLOCKS`); ``None``: no
                bound.

        Returns:
            The call's :class:`CallCost`.
        """
        family = self.price.caching
        if family == "none" or (call.segments is None and call.common_prefix_tokens is None):
            return self._cost(call, 0, 0)
        if call.segments is not None:
            if breakpoints is None:
                breakpoints = [sum(map(_TOKENS, call.segments)) if write_to is None else write_to]
            return self._charge_segments(call, call.segments, breakpoints, lookback, family)
        return self._charge_chain(call, call.common_prefix_tokens or 0, write_to, family)

    def _charge_segments(
        self,
        call: CallTokens,
        segments: Segments,
        breakpoints: Sequence[int],
        lookback: int | None,
        family: str,
    ) -> CallCost:
        if not segments:
            return self._cost(call, 0, 0)
        hashes, cum = _chain(segments, self._last)
        self._last = (segments, hashes, cum)
        now = call.time
        if family == "explicit":
            # each breakpoint at the last segment boundary within its tokens
            marks = sorted({k for t in breakpoints if (k := bisect.bisect_right(cum, t) - 1) >= 0})
            best = -1
            for k in range(len(hashes) - 1, -1, -1):  # the longest cached prefix a breakpoint sees
                if lookback is not None and not any(0 <= b - k <= lookback for b in marks):
                    continue
                entry = self._prefixes.get(hashes[k])
                if entry is not None and self._alive(entry, now):
                    best = k
                    break
            read = cum[best] if best >= 0 else 0
            if best >= 0:
                self._prefixes[hashes[best]].last_used = now
            write = 0
            minimum = self.price.min_prefix_tokens
            for b in marks:
                if cum[b] > read and cum[b] >= minimum:
                    write = cum[b] - read  # the last breakpoint's prefix, from the hit on
                    self._prefixes[hashes[b]] = _Entry(cum[b], now)
            return self._cost(call, read, write)
        matched = 0
        for h, c in zip(hashes, cum, strict=True):
            entry = self._prefixes.get(h)
            if entry is None or not self._alive(entry, now):
                break
            matched = c
        for h, c in zip(hashes, cum, strict=True):  # the whole request is cached now
            self._prefixes[h] = _Entry(c, now)
        return self._cost(call, self._countable(matched), 0)

    def _charge_chain(self, call: CallTokens, common: int, write_to: int | None, family: str) -> CallCost:
        now = call.time
        common = min(common, call.input_tokens)
        alive = [e for e in self._chains.get(call.kind, []) if self._alive(e, now)]
        if family == "explicit":
            # entries end at earlier breakpoints of this kind's calls, all prefixes of the previous
            # call: those within the part this call shares with it are prefixes of this call too
            alive = [e for e in alive if e.tokens <= common]
            hit = max(alive, key=lambda e: e.tokens, default=None)
            read = hit.tokens if hit is not None else 0
            if hit is not None:
                hit.last_used = now
            bp = call.input_tokens if write_to is None else min(write_to, call.input_tokens)
            write = 0
            if bp > read and bp >= self.price.min_prefix_tokens:
                write = bp - read
                alive.append(_Entry(bp, now))
            self._chains[call.kind] = alive  # expired entries never come back
            return self._cost(call, read, write)
        # the previous request is cached whole: this call reads what it shares with it
        matched = max((min(e.tokens, common) for e in alive), default=0)
        self._chains[call.kind] = [_Entry(call.input_tokens, now)]
        return self._cost(call, self._countable(matched), 0)


def _shared_tokens(a: CallTokens, b: CallTokens) -> int:
    """Tokens at the start of ``a`` that ``b`` repeats (by segments, else ``b``'s common prefix)."""
    if a.segments is not None and b.segments is not None:
        n = common_prefix(list(map(_KEY, a.segments)), list(map(_KEY, b.segments)))
        return sum(map(_TOKENS, a.segments[:n]))
    if b.common_prefix_tokens is not None:
        return min(b.common_prefix_tokens, a.input_tokens)
    return 0


def agent_breakpoints(segments: Segments) -> list[int]:
    """The ``"agent"`` policy's breakpoints of a request, in tokens up to each: after the system
    message and the tool schemas, on the last message, and :data:`LOOKBACK_BLOCKS` and twice that
    many segments before the last one (Anthropic's four breakpoints, spread so that together they
    look back over the last ``3 × LOOKBACK_BLOCKS`` blocks)."""
    cum = list(itertools.accumulate(map(_TOKENS, segments)))
    n = len(cum)
    marks = {min(1, n - 1), n - 1, n - 1 - LOOKBACK_BLOCKS, n - 1 - 2 * LOOKBACK_BLOCKS}
    return sorted(cum[k] for k in marks if k >= 0)


def price_run(
    calls: Sequence[CallTokens], price: PriceRow, *, breakpoint: str = DEFAULT_BREAKPOINTS
) -> list[CallCost]:
    """Price the calls of one run in order (a fresh :class:`PromptCache`), one cost per call.

    Args:
        calls: the run's calls in the order they were made, summarizer calls included (before the
            main call they served).
        price: the price row.
        breakpoint: explicit caching only, the breakpoint policy (:data:`BREAKPOINTS`, module
            docstring): ``"agent"`` (default, :func:`agent_breakpoints`, hits looked up at most
            :data:`LOOKBACK_BLOCKS` blocks before a breakpoint); ``"last"`` one on the last
            message; ``"oracle"`` (``"reusable"`` is its old name) one at the end of the prefix the
            next call of the same kind repeats — no agent can place it; for comparison only.

    Raises:
        ValueError: an unknown ``breakpoint``.
    """
    breakpoint = "oracle" if breakpoint == "reusable" else breakpoint
    if breakpoint not in BREAKPOINTS:
        raise ValueError(f"breakpoint={breakpoint!r} is invalid: allowed one of {BREAKPOINTS}")
    following: dict[int, int | None] = {}
    last_of_kind: dict[str, int] = {}
    for i in range(len(calls) - 1, -1, -1):
        following[i] = last_of_kind.get(calls[i].kind)
        last_of_kind[calls[i].kind] = i
    cache = PromptCache(price)
    out: list[CallCost] = []
    for i, call in enumerate(calls):
        write_to: int | None = None
        if price.caching == "explicit" and breakpoint == "oracle":
            j = following[i]
            write_to = _shared_tokens(call, calls[j]) if j is not None else 0
        if price.caching == "explicit" and breakpoint == "agent" and call.segments:
            out.append(
                cache.charge(call, breakpoints=agent_breakpoints(call.segments), lookback=LOOKBACK_BLOCKS)
            )
            continue
        out.append(cache.charge(call, write_to=write_to))
    return out


@dataclass(frozen=True)
class CostTotals:
    """The sums over a run's (or a strategy's) call costs; tokens, and US dollars.

    ``main_usd``: the agent's calls; ``summarizer_usd``: the summarizer's; ``uncached_usd``: all of
    them with no cache.
    """

    calls: int = 0
    summarizer_calls: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    main_usd: float = 0.0
    summarizer_usd: float = 0.0
    uncached_usd: float = 0.0

    @property
    def total_usd(self) -> float:
        """Main and summarizer calls, in US dollars."""
        return self.main_usd + self.summarizer_usd


def total_cost(costs: Iterable[CallCost]) -> CostTotals:
    """Sum call costs; ``calls`` counts the ``"main"`` calls, ``summarizer_calls`` the others."""
    acc: dict[str, Any] = dict.fromkeys(
        (
            "calls",
            "summarizer_calls",
            "input_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "output_tokens",
        ),
        0,
    )
    main = summ = uncached = 0.0
    for c in costs:
        if c.kind == "main":
            acc["calls"] += 1
            main += c.total_usd
        else:
            acc["summarizer_calls"] += 1
            summ += c.total_usd
        acc["input_tokens"] += c.input_tokens
        acc["cache_read_tokens"] += c.cache_read_tokens
        acc["cache_write_tokens"] += c.cache_write_tokens
        acc["output_tokens"] += c.output_tokens
        uncached += c.uncached_usd
    return CostTotals(**acc, main_usd=main, summarizer_usd=summ, uncached_usd=uncached)


def view_segments(
    request: RequestView, measure: EstimateCache, keys: Sequence[Any] | None = None
) -> Segments:
    """The segments of a request for :class:`CallTokens`: system message, tool schemas, then each
    view message, keyed by :func:`ctxlab.replay.metrics.request_keys` (``keys`` when precomputed)
    with their tokens by ``measure``; they sum to the request's tokens."""
    keys = list(keys) if keys is not None else request_keys(request)
    system = measure.message_tokens(request.system) if request.system is not None else 0
    out: list[tuple[Hashable, int]] = [(keys[0], system), (keys[1], measure.tools_tokens(request.tools))]
    out.extend((keys[2 + i], measure.message_tokens(m)) for i, m in enumerate(request.messages))
    return tuple(out)


#: definitions printed in report.md (keys are column names; from the column registry)
COST_DEFINITIONS: dict[str, str] = report_definitions("cost")
