"""Google ADK's sliding-window compaction with overlap, implemented from its documentation.

Source: Google Agent Development Kit docs, *Compress agent context for performance*
(https://google.github.io/adk-docs/context/compaction/, ``docs/context/compaction.md`` of
google/adk-docs; read December 2026), and the docstring of ADK Python's
``_process_compaction_events`` (how compacted ranges become the model's context).  The rules:

* An **invocation** is one user-initiated turn: a user message and everything the agent does
  until the next one.
* ``compaction_interval`` (> 0): the number of completed new invocations that triggers a
  compaction; ``overlap_size``: how many previously compacted invocations the next compaction
  includes again.  The documentation's example (interval 3, overlap 1): when invocation 3
  completes, invocations 1–3 are summarized; when 6 completes, invocations 3–6; when 9
  completes, 6–9.
* The context keeps only the summaries that no other summary's range contains; each is placed
  where its range ends, and the raw events inside a kept range are left out.

ctxlab's choices: a user message is a user request (:func:`ctxlab.core.marks.is_user_request`:
not a text observation, not a summary); the compaction that the completion of invocation ``k``
triggers is in the view from the first call of invocation ``k + 1`` on (ADK's runner compacts
after the invocation, before the next); a summary is ctxlab's offline structured summary of the
range's messages (:class:`ctxlab.core.builtin.StructuredSummarizer`), an assistant message as ADK
attributes it to the agent.  A single-task coding transcript has one invocation, so this strategy
never compacts it: that is ADK's rule (the documentation recommends it for "regular, predictable
text chats"; its token-based compaction is a different strategy).  The record is kept on the
middleware: the strategy is ``per_run``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.marks import is_user_request, langchain_summary_kwargs
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryJob
from ctxlab_field.view import Edit, ViewMiddleware

__all__ = [
    "AdkCompaction",
    "AdkSlidingWindowMiddleware",
    "SlidingWindow",
    "adk_sliding_window",
    "invocations",
]


@dataclass(frozen=True)
class SlidingWindow:
    """``EventsCompactionConfig``'s sliding-window fields (the documentation's example values)."""

    compaction_interval: int = 3
    overlap_size: int = 1

    def __post_init__(self) -> None:
        if self.compaction_interval <= 0 or self.overlap_size < 0:
            raise ValueError(f"{self}: allowed compaction_interval > 0 and overlap_size >= 0")


@dataclass(frozen=True)
class AdkCompaction:
    """One compaction: invocations ``start``..``end`` (1-based, inclusive) and their summary."""

    start: int
    end: int
    summary: BaseMessage


def invocations(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """The messages split into invocations: each starts at a user request (messages before the
    first one join the first invocation)."""
    out: list[list[BaseMessage]] = []
    for m in messages:
        if is_user_request(m) or not out:
            out.append([m])
        else:
            out[-1].append(m)
    return out


def _kept(compactions: Sequence[AdkCompaction]) -> list[AdkCompaction]:
    """The compactions no other one contains (ADK keeps only non-subsumed summaries)."""
    return [
        c
        for c in compactions
        if not any(
            o is not c and o.start <= c.start and c.end <= o.end and (o.start, o.end) != (c.start, c.end)
            for o in compactions
        )
    ]


def view_of(invs: Sequence[Sequence[BaseMessage]], compactions: Sequence[AdkCompaction]) -> list[BaseMessage]:
    """The context: kept summaries at the end of their range, raw invocations outside every range."""
    kept = _kept(compactions)
    out: list[BaseMessage] = []
    for k, inv in enumerate(invs, start=1):
        if not any(c.start <= k <= c.end for c in kept):
            out.extend(inv)
        out.extend(c.summary for c in sorted(kept, key=lambda c: c.end) if c.end == k)
    return out


class AdkSlidingWindowMiddleware(ViewMiddleware):
    """ADK's sliding-window compaction as a ctxlab baseline: an ``L2`` round on each compaction."""

    def __init__(
        self, window: SlidingWindow, *, summarizer: object = None, name: str = "adk-sliding-window"
    ) -> None:
        super().__init__(name)
        self.window = window
        self.summarizer = summarizer if summarizer is not None else StructuredSummarizer()
        self.compactions: list[AdkCompaction] = []

    def edit(self, request: ModelRequest) -> Edit:
        invs = invocations(list(request.messages))
        completed = len(invs) - 1  # the last invocation is the one this call belongs to
        new: list[AdkCompaction] = []
        last = self.compactions[-1].end if self.compactions else 0
        while completed - last >= self.window.compaction_interval:
            end = last + self.window.compaction_interval
            start = 1 if last == 0 else max(1, last - self.window.overlap_size + 1)
            span = [m for inv in invs[start - 1 : end] for m in inv]
            result = self.summarizer.summarize(  # type: ignore[attr-defined]
                SummaryJob(messages=span, prompt="{messages}", budget_tokens=10**9)
            )
            summary = AIMessage(content=result.text, additional_kwargs=langchain_summary_kwargs())
            new.append(AdkCompaction(start, end, summary))
            self.compactions.append(new[-1])
            last = end
        view = view_of(invs, self.compactions)
        if not new:
            return Edit(view)
        span_tokens = sum(
            self.measure.messages_tokens([m for inv in invs[c.start - 1 : c.end] for m in inv]) for c in new
        )
        covered = sum(len(inv) for inv in invs[: new[-1].end])
        return Edit(
            view,
            "L2",
            stats={"adk_ranges": [[c.start, c.end] for c in new]},
            summary=new[-1].summary,
            cutoff_index=covered,
            summarizer={
                "calls": len(new),
                "input_tokens": span_tokens,
                "output_tokens": sum(self.measure.message_tokens(c.summary) for c in new),
                "usage_reported": False,
                "error": None,
            },
        )


def adk_sliding_window(settings: CompressionSettings | None = None) -> AdkSlidingWindowMiddleware:
    """The strategy ``adk-sliding-window``: the documentation's example configuration
    (``compaction_interval=3``, ``overlap_size=1``); ADK's sliding window has no token threshold,
    so ``settings`` is not used."""
    return AdkSlidingWindowMiddleware(SlidingWindow())
