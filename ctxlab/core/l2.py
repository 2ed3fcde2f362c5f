"""The L2 step of a compression round (spec R7-R10): the decision, the cutoff, the summary that
may be committed.  Pure functions of the round's input; :func:`ctxlab.core.compression.
compression_round` runs the effects (history write, summarizer, model calls) around them.

Two rules here go beyond the seed and are listed in ``docs/middleware.md`` ("Deliberate
deviations from the seed"): an L2 is not attempted when its span is smaller than an empty
summary message, and a summary bigger than the span it replaces is not committed (the L1 view is
sent, the reason recorded in the event's ``stats["summary_rejected"]``).  The summary's text is
bounded (:func:`ctxlab.core.summarize.summary_token_limit`) before it is committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage

from ctxlab.core.cutoff import (
    CutoffContext,
    SummarizeContext,
    SummarizeDecision,
    build_summary_message,
    carried_request_tokens,
    history_key,
    history_pieces,
    to_global,
)
from ctxlab.core.estimation import EstimateCache, estimate_text_tokens
from ctxlab.core.events import StatsCommon
from ctxlab.core.files import history_path
from ctxlab.core.hooks import CompressionHooks
from ctxlab.core.messages import message_text
from ctxlab.core.prompts import summary_language_of
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryJob, SummaryResult, bound_summary, summary_token_limit

__all__ = ["L2Plan", "RoundView", "kept_as_sent", "plan_l2", "summary_to_commit"]


class RoundView(Protocol):
    """What the L2 step reads of a round's input (:class:`ctxlab.core.compression.RoundInput`
    has all of it; a protocol keeps this module below the round's)."""

    @property
    def settings(self) -> CompressionSettings: ...
    @property
    def hooks(self) -> CompressionHooks: ...
    @property
    def estimates(self) -> EstimateCache: ...
    @property
    def thread_id(self) -> str | None: ...
    @property
    def summarizer_budget(self) -> int: ...
    @property
    def capacity_tokens(self) -> int | None: ...
    @property
    def stats(self) -> StatsCommon: ...
    @property
    def system(self) -> BaseMessage | None: ...


@dataclass
class L2Plan:
    """An L2 the round is about to run: the local and global cutoffs, the tokens of the L1 view's
    span ``view1[:local]`` the summary replaces, the summarizer job and the history file."""

    local: int
    global_cut: int
    span_tokens: int
    job: SummaryJob
    history_path: str
    #: the history file's text, or a function rendering its pieces where it is written (issue 31)
    history: str | Callable[[], Iterable[str]]
    forced: bool = False
    #: the cutoff rule's :attr:`~ctxlab.core.cutoff.CutoffDecision.kept_as_sent`
    kept_as_sent: bool = False


def plan_l2(
    inp: RoundView,
    eff: list[BaseMessage],
    view1: list[BaseMessage],
    est1: int,
    prev_cut: int | None,
    forced: bool,
) -> L2Plan | None:
    """Decide L2 (hook ``ctxlab_should_summarize``, R7, R8), choose the cutoff (hook
    ``ctxlab_select_cutoff``, R9) and prepare the summary (R10); ``None`` — with the reason in
    ``inp.stats`` — when the L1 view is to be sent instead: declined, no valid cutoff (R13), or a
    span smaller than an empty summary message (it could only grow the request).

    Raises:
        ValueError: a cutoff plugin returned an index outside ``1..len(eff)``.
    """
    s, stats = inp.settings, inp.stats
    has_prev = prev_cut is not None
    decision = inp.hooks.should_summarize(
        list(view1),
        SummarizeContext(
            tokens=est1,
            threshold_tokens=s.entry_threshold_tokens,
            l2_threshold_tokens=s.l2_threshold_tokens,
            keep_messages=s.summary_keep_messages,
            has_previous_summary=has_prev,
            estimate=inp.estimates.message_tokens,
            forced=forced,
        ),
    )
    if decision is None:  # no decision plugin (defaults=False): the ARS rule
        decision = SummarizeDecision(forced or est1 > s.l2_threshold_tokens, "no decision plugin: ARS rule")
    stats["l2_decision"] = decision.reason
    if not decision.summarize:
        return None
    cut = inp.hooks.select_cutoff(
        list(eff),
        CutoffContext.for_round(
            s, inp.estimates.message_tokens, has_previous_summary=has_prev, forced=forced
        ),
    )
    local = cut.index if cut is not None else None
    if local is None:
        if cut is not None and cut.by_design:  # the strategy's own rule: no L2 here
            stats["l2_decision"] = cut.reason
        else:
            stats["no_cutoff"] = cut.reason if cut is not None else "no cutoff plugin answered"
        return None
    if not 1 <= local <= len(eff):
        raise ValueError(f"cutoff plugin returned index {local} outside 1..{len(eff)}")
    global_cut = to_global(local, prev_cut, has_prev)
    start = prev_cut if prev_cut is not None else 0
    previous_summary = message_text(eff[0]) if has_prev else None
    summarized = eff[:local]
    # named by the span (ids, sizes), rendered by the driver where it is written (issue 31)
    path = history_path(inp.thread_id, start, global_cut, history_key(summarized, start, global_cut))

    def history() -> Iterator[str]:  # the document's pieces: written as bytes where the backend allows
        return history_pieces(summarized, start, global_cut, previous_summary)

    span = inp.estimates.head_tokens(view1, local)  # view1 was just totalled (est1)
    language = summary_language_of(s.summary_language, s.summary_prompt, eff)
    request = carried_request_tokens(s.l2_threshold_tokens)
    empty = build_summary_message(eff, local, SummaryResult(text=""), path, language, global_cut, request)
    floor = inp.estimates.message_tokens(empty)
    if span < floor:  # smaller, as the message says: an equal span may still be summarized (issue 30)
        stats["summary_rejected"] = (
            f"not summarized: the span of {span} tokens is smaller than an empty summary message ({floor} tokens)"
        )
        return None
    job = SummaryJob(
        messages=list(view1[:local]),
        prompt=s.prompt_for(language),
        budget_tokens=inp.summarizer_budget,
        previous_summary=previous_summary,
        language=language,
        kept=list(view1[local:]),
        system=inp.system,
    )
    kept_as_sent = cut is not None and cut.kept_as_sent
    return L2Plan(local, global_cut, span, job, path, history, forced, kept_as_sent)


def kept_as_sent(event: Mapping[str, Any] | None, eff: Sequence[BaseMessage]) -> int:
    """How many messages after the summary ``eff[0]`` go out in their L1 form below T: the event's
    ``kept_as_sent`` (issue 28, :attr:`ctxlab.core.cutoff.CutoffDecision.kept_as_sent`), at most
    the messages after the summary; 0 when it has none or a malformed one."""
    n = event.get("kept_as_sent") if event is not None else None
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return 0
    return min(n, len(eff) - 1)


def summary_to_commit(
    inp: RoundView,
    eff: list[BaseMessage],
    plan: L2Plan,
    file_path: str | None,
    result: SummaryResult,
) -> HumanMessage | None:
    """The summary message to commit (R10), or ``None`` — with the reason in
    ``inp.stats["summary_rejected"]`` — when it is bigger than the span it replaces, or when the
    summary failed and the history file could not be written (nothing would hold the summarized
    messages; an overflow-forced round commits all the same, issue 24).

    A result without text is a failed summary (``EmptySummaryError``: the previous summary's body
    is carried, the error recorded); a text longer than :func:`ctxlab.core.summarize.
    summary_token_limit` is bounded first (``stats["summary_cut"]``).  Records the summarizer's
    accounting in ``inp.stats["summarizer"]``.
    """
    stats = inp.stats
    if not result.text.strip() and not result.error:
        result.error = "EmptySummaryError: the summarizer returned no text"
    stats["summarizer"] = {
        "calls": result.calls,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "usage_reported": result.usage_reported,
        "error": result.error,
    }
    if result.text.strip():
        limit = summary_token_limit(inp.summarizer_budget, inp.capacity_tokens)
        text, tokens = bound_summary(result.text, limit)
        if text is not result.text:
            stats["summary_cut"] = {"from_tokens": tokens, "to_tokens": estimate_text_tokens(text)}
            result.text = text
    if result.error and not result.text.strip() and file_path is None and not plan.forced:
        # issue 24: neither a summary nor a history file would hold the summarized messages;
        # sending the L1 view loses nothing (an overflow-forced round commits: it must shrink)
        stats["summary_rejected"] = (
            "not committed: the summary failed and the history file could not be written"
        )
        return None
    language = plan.job.language or "en"
    request = carried_request_tokens(inp.settings.l2_threshold_tokens)
    message = build_summary_message(eff, plan.local, result, file_path, language, plan.global_cut, request)
    size = inp.estimates.message_tokens(message)
    if size > plan.span_tokens:
        stats["summary_rejected"] = (
            f"not committed: the summary ({size} tokens) is bigger than the span it replaces "
            f"({plan.span_tokens} tokens)"
        )
        return None
    return message
