"""Reference floors: two trivial "summaries" a summarizer has to beat to claim fidelity (issue 28).

Neither is meant for production; both are deterministic and call no model, and both hold at most
a token budget (default :data:`~ctxlab.core.builtin.extractive.SUMMARY_TOKENS`, the extractive
summarizer's size, and never more than the round's summary limit).

:class:`IdentifierDumpSummarizer`
    every identifier of the span (paths, dotted, snake_case and CamelCase names, numbers of 4+
    digits: :func:`ctxlab.core.builtin.extractive.identifiers`), the most recent first (messages
    from the last to the first, each message's identifiers in their order), comma-joined until the
    budget is used.  It names everything and states nothing: the floor of identifier recall.
:class:`RecentMessagesSummarizer`
    the last messages of the span verbatim (as the summarizer's history renders them:
    :func:`ctxlab.core.summarize.render_message`), from the last back, until the budget is used;
    the oldest one kept is cut at its start when it does not fit whole.  What plain truncation
    at the same size keeps.

Strategies ``floor-identifiers`` and ``floor-recent`` (:mod:`ctxlab.replay.strategies`) are the
ARS defaults with these summarizers; the replay also scores both floors on every L2 round of every
strategy, at the size of that round's summary (:mod:`ctxlab.replay.run_measures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from ctxlab.core.builtin.extractive import SUMMARY_TOKENS, identifiers
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.messages import message_text
from ctxlab.core.summarize import SummaryJob, SummaryResult, render_message, summary_token_limit

__all__ = [
    "FLOORS",
    "FLOOR_STRATEGIES",
    "ForceIdentifierDump",
    "ForceRecentMessages",
    "IdentifierDumpSummarizer",
    "RecentMessagesSummarizer",
    "identifier_dump",
    "recent_messages",
]


def identifier_dump(messages: Sequence[BaseMessage], max_tokens: int) -> str:
    """The identifier-dump floor of ``messages`` within ``max_tokens`` tokens (module docstring)."""
    seen: set[str] = set()
    out: list[str] = []
    used = 0
    for m in reversed(messages):
        for ident in identifiers(_search_text(m)):
            if ident in seen:
                continue
            seen.add(ident)
            cost = estimate_text_tokens(ident) + 1
            if used + cost > max_tokens:
                return ", ".join(out)
            out.append(ident)
            used += cost
    return ", ".join(out)


def _search_text(message: BaseMessage) -> str:
    calls = getattr(message, "tool_calls", None) or []
    return "\n".join([message_text(message), *(str(c.get("args") or "") for c in calls)])


def recent_messages(messages: Sequence[BaseMessage], max_tokens: int) -> str:
    """The keep-recent floor of ``messages`` within ``max_tokens`` tokens (module docstring)."""
    kept: list[str] = []
    used = 0
    for m in reversed(messages):
        block = render_message(m)
        tokens = estimate_text_tokens(block) + 1
        if used + tokens <= max_tokens:
            kept.append(block)
            used += tokens
            continue
        room = max_tokens - used
        if room > 16:  # the tail of the oldest message that fits
            chars = max(1, int(len(block) * room / tokens * 0.95))
            tail = block[-chars:]
            while tail and estimate_text_tokens(tail) > room:
                tail = tail[len(tail) // 10 + 1 :]
            if tail:
                kept.append("[...] " + tail)
        break
    return "\n\n".join(reversed(kept))


class _Floor:
    """A floor as a summarizer: ``build(messages, max_tokens)``, no model call."""

    name = "floor"

    def __init__(self, max_tokens: int = SUMMARY_TOKENS) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 64:
            raise ValueError(f"max_tokens={max_tokens!r} is invalid: allowed an integer >= 64 (tokens)")
        self.max_tokens = max_tokens

    def build(self, messages: Sequence[BaseMessage], max_tokens: int) -> str:
        raise NotImplementedError

    def summarize(self, job: SummaryJob) -> SummaryResult:
        """The floor of ``job.messages``: no model call (``calls=0``, no tokens billed)."""
        limit = min(self.max_tokens, summary_token_limit(job.budget_tokens, None))
        return SummaryResult(text=self.build(job.messages, limit), calls=0, input_tokens=0, output_tokens=0)

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        return self.summarize(job)


class IdentifierDumpSummarizer(_Floor):
    """The identifier-dump floor (:func:`identifier_dump`).

    Raises:
        ValueError: ``max_tokens`` < 64.
    """

    name = "identifier-dump"

    def build(self, messages: Sequence[BaseMessage], max_tokens: int) -> str:
        return identifier_dump(messages, max_tokens)


class RecentMessagesSummarizer(_Floor):
    """The keep-recent floor (:func:`recent_messages`).

    Raises:
        ValueError: ``max_tokens`` < 64.
    """

    name = "keep-recent"

    def build(self, messages: Sequence[BaseMessage], max_tokens: int) -> str:
        return recent_messages(messages, max_tokens)


#: the floors by short name: ``identifiers`` and ``recent`` (strategies ``floor-<name>``)
FLOORS: dict[str, type[_Floor]] = {
    "identifiers": IdentifierDumpSummarizer,
    "recent": RecentMessagesSummarizer,
}
#: the floors' strategy names: references a strategy is measured against, never named "best"
FLOOR_STRATEGIES = tuple(f"floor-{name}" for name in FLOORS)


class ForceIdentifierDump:
    """Plugin: summarize with :class:`IdentifierDumpSummarizer` (the ``floor-identifiers`` strategy)."""

    name = "identifier-dump-summarizer"

    @hookimpl
    def ctxlab_get_summarizer(self, model: Any, settings: Any) -> Any:
        return IdentifierDumpSummarizer()


class ForceRecentMessages:
    """Plugin: summarize with :class:`RecentMessagesSummarizer` (the ``floor-recent`` strategy)."""

    name = "keep-recent-summarizer"

    @hookimpl
    def ctxlab_get_summarizer(self, model: Any, settings: Any) -> Any:
        return RecentMessagesSummarizer()
