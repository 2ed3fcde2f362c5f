"""OpenHands' ``LLMSummarizingCondenser`` (OpenHands Software Agent SDK), from its documented rule.

Why not the SDK's own class: every ``openhands-sdk`` release requires Python ≥ 3.12 and its
modules use 3.12-only syntax (PEP 695 type aliases, nested f-string quotes), while ctxlab's
machines run Python 3.11 (Debian 12); the package cannot be installed or imported here
(``/work/notes/issue-33.md`` has the exact check).  So the condenser's rule is implemented from
its documentation and cited; :func:`condense` is a plain function a test checks against the
documentation's example.

Sources: OpenHands SDK docs, *Context Condenser* (https://docs.openhands.dev/sdk/guides/context-condenser)
and *Condenser* architecture (https://docs.openhands.dev/sdk/arch/condenser), and the class's
docstrings and field documentation in ``openhands-sdk`` 1.58.2
(``openhands/sdk/context/condenser/llm_summarizing_condenser.py``).  The rule, per request:

1. The **view** is the event history with every earlier condensation applied: forgotten events
   left out and the latest summary inserted where the forgotten range began (``summary_offset``).
2. Condense when the view has more than ``max_size`` events (default 240; a *soft* reason) or,
   with ``max_tokens`` set, more than ``max_tokens`` tokens (a *hard* reason).
3. Keep the first ``keep_first`` events (default 2) and never the system prompt; keep a tail of
   ``max_size // 2 − keep_first − 1`` events (for size) or the longest tail that brings the view
   under ``max_tokens // 2`` tokens (for tokens), the shorter of the two when both apply.
4. The forgotten range runs from the first valid boundary at or after the head to the first at or
   after the tail's start (a tool call is never separated from its result).
5. A range smaller than ``minimum_progress`` (10 %) of the view, or empty, is no condensation: for
   the soft reason the view is sent as it is; for the hard reason a *hard context reset*
   summarizes everything after the system prompt.
6. The forgotten events (an earlier summary among them) are summarized into one new summary.

ctxlab's choices: an event is one message (an assistant message with parallel tool calls is one
event, where OpenHands counts one action each); tokens are ctxlab's measure (R16); the summary is
ctxlab's offline structured summary of the forgotten messages
(:class:`ctxlab.core.builtin.StructuredSummarizer`) unless a ctxlab ``Summarizer`` is given
(``ctxlab.core.summarize.LLMSummarizer(model)`` for a real model), so the comparison measures the
rule, not the prompt.  The condenser keeps its record on itself: the strategy is ``per_run``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.marks import langchain_summary_kwargs
from ctxlab.core.messages import valid_cut_positions
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryJob, SummaryResult
from ctxlab_field.view import Edit, ViewMiddleware

__all__ = [
    "CondenserConfig",
    "CondenserRecord",
    "OpenHandsCondenserMiddleware",
    "condense",
    "openhands_summarizing",
]


@dataclass(frozen=True)
class CondenserConfig:
    """``LLMSummarizingCondenser``'s fields (defaults: the SDK's)."""

    max_size: int = 240
    max_tokens: int | None = None
    keep_first: int = 2
    minimum_progress: float = 0.1

    def __post_init__(self) -> None:
        if self.max_size <= 0 or self.keep_first < 0 or not 0.0 < self.minimum_progress < 1.0:
            raise ValueError(f"{self}: allowed max_size > 0, keep_first >= 0, 0 < minimum_progress < 1")
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise ValueError("keep_first must be less than max_size // 2 to leave room for condensation")


@dataclass
class CondenserRecord:
    """What earlier condensations left: the forgotten message ids, the summary and its offset."""

    forgotten: set[str] = field(default_factory=set)
    summary: BaseMessage | None = None
    offset: int = 0

    def view(self, events: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The events with every condensation applied (rule 1)."""
        kept = [m for m in events if (m.id or "") not in self.forgotten]
        if self.summary is not None:
            kept.insert(min(self.offset, len(kept)), self.summary)
        return kept


@dataclass(frozen=True)
class Condensation:
    """One condensation: the events ``forgotten``, where the summary goes, why, and ``hard``
    (a hard context reset)."""

    forgotten: list[BaseMessage]
    offset: int
    reasons: tuple[str, ...]
    hard: bool = False


def _suffix_for_reduction(
    events: Sequence[BaseMessage], tokens: Callable[[Sequence[BaseMessage]], int], reduce: int
) -> int:
    """How many trailing ``events`` to keep so that dropping the others removes ≥ ``reduce`` tokens."""
    dropped = 0
    for i, m in enumerate(events):
        if dropped >= reduce:
            return len(events) - i
        dropped += tokens([m])
    return 0


def condense(
    view: Sequence[BaseMessage], config: CondenserConfig, tokens: Callable[[Sequence[BaseMessage]], int]
) -> Condensation | None:
    """The condensation rule (module doc, rules 2–5) on one view (system message first when there
    is one); ``None``: send the view as it is.  ``tokens`` measures a list of messages."""
    reasons: list[str] = []
    total = tokens(view)
    if config.max_tokens is not None and total > config.max_tokens:
        reasons.append("tokens")
    if len(view) > config.max_size:
        reasons.append("events")
    if not reasons:
        return None
    tails: list[int] = []
    if "events" in reasons:
        tails.append(config.max_size // 2 - config.keep_first - 1)
    if "tokens" in reasons:
        assert config.max_tokens is not None
        tails.append(_suffix_for_reduction(view[config.keep_first :], tokens, total - config.max_tokens // 2))
    tail = min(tails)
    protected = config.keep_first
    if view and isinstance(view[0], SystemMessage):
        protected = max(protected, 1)
    ok = valid_cut_positions(list(view))
    start = next((c for c in range(protected, len(view) + 1) if ok[c]), None)
    end = next((c for c in range(max(len(view) - tail, 0), len(view) + 1) if ok[c]), None)
    forgotten = list(view[start:end]) if start is not None and end is not None and end > start else []
    if forgotten and len(forgotten) >= len(view) * config.minimum_progress:
        assert start is not None
        return Condensation(forgotten, start, tuple(reasons))
    if "tokens" not in reasons:
        return None  # soft: the view as it is, condensed later
    first = 1 if view and isinstance(view[0], SystemMessage) else 0
    return Condensation(list(view[first:]), first, tuple(reasons), hard=True)


class OpenHandsCondenserMiddleware(ViewMiddleware):
    """The condenser as a ctxlab baseline (module doc): an ``L2`` round on each condensation."""

    def __init__(
        self, config: CondenserConfig, *, summarizer: Any = None, name: str = "openhands-summarizing"
    ) -> None:
        super().__init__(name)
        self.config = config
        self.summarizer = summarizer if summarizer is not None else StructuredSummarizer()
        self.record = CondenserRecord()

    def edit(self, request: ModelRequest) -> Edit:
        state = list(request.messages)
        system = [request.system_message] if request.system_message is not None else []

        def tokens(msgs: Sequence[BaseMessage]) -> int:  # the view's messages, as OpenHands counts
            return self.measure.messages_tokens(list(msgs))

        view = [*system, *self.record.view(state)]
        done = condense(view, self.config, tokens)
        if done is None:
            return Edit(view[len(system) :])
        gone = [m for m in done.forgotten if m is not self.record.summary]
        result: SummaryResult = self.summarizer.summarize(
            SummaryJob(messages=list(done.forgotten), prompt="{messages}", budget_tokens=10**9)
        )
        summary = HumanMessage(content=result.text, additional_kwargs=langchain_summary_kwargs())
        self.record.forgotten |= {m.id or "" for m in gone}
        self.record.summary, self.record.offset = summary, done.offset
        new_view = [*system, *self.record.view(state)]
        last = max((i for i, m in enumerate(state) if (m.id or "") in self.record.forgotten), default=-1)
        return Edit(
            new_view[len(system) :],
            "L2",
            stats={
                "condenser_reasons": list(done.reasons),
                "hard_context_reset": done.hard,
                "forgotten": len(gone),
            },
            summary=summary,
            cutoff_index=last + 1,
            summarizer={
                "calls": result.calls or 1,
                "input_tokens": result.input_tokens or self.measure.messages_tokens(done.forgotten),
                "output_tokens": result.output_tokens or self.measure.message_tokens(summary),
                "usage_reported": result.usage_reported,
                "error": result.error,
            },
        )


def openhands_summarizing(settings: CompressionSettings | None = None) -> OpenHandsCondenserMiddleware:
    """The strategy ``openhands-summarizing``: ``max_tokens`` = T (``summary_threshold × 1024``),
    the SDK's defaults otherwise (``max_size=240``, ``keep_first=2``), offline summaries."""
    t = int((settings or CompressionSettings()).entry_threshold_tokens)
    return OpenHandsCondenserMiddleware(CondenserConfig(max_tokens=t))
