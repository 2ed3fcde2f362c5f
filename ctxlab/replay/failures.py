"""What counts as a failed, fallback, declined or rejected summary, and as summary thrash: the
rules behind the failure columns of :mod:`ctxlab.replay.columns` (one home for each).

* **Fallback summary** — a foreign middleware's summary message whose summary is a canned
  text, not a summary: LangChain's ``SummarizationMiddleware._create_summary`` (langchain 1.x,
  ``langchain/agents/middleware/summarization.py``) answers
  ``"Previous conversation was too long to summarize."`` when its summarizer input, trimmed to
  ``trim_tokens_to_summarize``, comes out empty, and ``"No previous conversation history."`` when
  there was nothing to summarize; DeepAgents' ``SummarizationMiddleware`` summarizes through the
  same LangChain helper (``deepagents/middleware/summarization.py``, ``_lc_helper._create_summary``),
  so its fallbacks are the same texts.  Both still drop the summarized history, so the saving of a
  fallback is a saving built on a failed summary (:data:`FALLBACK_TEXTS`, :func:`fallback_of`).
* **Declined summary** — a ctxlab round that sent a view still above T2 without summarizing: the
  ``ctxlab_should_summarize`` hook declined (the re-summarize guard, a plugin's rule) or no valid
  cutoff was found (R13) (:func:`declined_of`); a strategy whose own step brought the view to
  at most T2 (masking that was enough) declined nothing.
* **Rejected summary** — a ctxlab round that decided to summarize but did not commit the summary
  (``stats["summary_rejected"]``: the span is smaller than an empty summary message, or the summary
  is bigger than the span; deviations from the seed, ``docs/middleware.md``) (:func:`rejected_of`).
* **Summary thrash** — summaries on :data:`THRASH_CONSECUTIVE` or more consecutive calls of a run,
  or :data:`THRASH_COUNT` or more summaries within :data:`THRASH_WINDOW` consecutive calls: each
  summary rewrites the provider's prompt cache and costs a summarizer call, so a strategy that
  summarizes again and again pays twice for little (the thresholds are ctxlab's choice; they are
  the per-run columns ``max_consecutive_summaries``, ``max_summaries_in_window`` and
  ``summary_thrash``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import polars as pl

__all__ = [
    "FALLBACK_TEXTS",
    "NO_CUTOFF",
    "SUMMARY_OPENINGS",
    "THRASH_CONSECUTIVE",
    "THRASH_COUNT",
    "THRASH_WINDOW",
    "counted_declines",
    "declined_of",
    "fallback_of",
    "is_counted_decline",
    "rejected_of",
]

#: the canned texts LangChain's (and so DeepAgents') summarization puts in place of a summary,
#: with what each means (langchain 1.x ``SummarizationMiddleware._create_summary``)
FALLBACK_TEXTS: dict[str, str] = {
    "Previous conversation was too long to summarize.": (
        "the summarizer input, trimmed to trim_tokens_to_summarize, came out empty"
    ),
    "No previous conversation history.": "there was nothing to summarize",
}

#: how LangChain's and DeepAgents' summary messages open before the summary text
SUMMARY_OPENINGS: tuple[str, ...] = (
    "Here is a summary of the conversation to date:",
    "You are in the middle of a conversation that has been summarized.",
)

#: summaries on this many consecutive calls of a run are thrash
THRASH_CONSECUTIVE = 3
#: ... and so are this many summaries within :data:`THRASH_WINDOW` consecutive calls
THRASH_COUNT = 4
THRASH_WINDOW = 10


def fallback_of(summary_text: str) -> str | None:
    """The fallback text a foreign summary message carries instead of a summary (a key of
    :data:`FALLBACK_TEXTS`), or ``None`` when it carries something else.

    ``summary_text`` is the summary message's text: LangChain's ``"Here is a summary of the
    conversation to date:\n\n<summary>"``, or DeepAgents' message with the history file's path
    and the summary between ``<summary>`` tags; the summary itself must be the fallback text.
    """
    body = summary_text.strip()
    start, end = body.find("<summary>"), body.rfind("</summary>")
    if 0 <= start < end:
        body = body[start + len("<summary>") : end].strip()
    else:
        for opening in SUMMARY_OPENINGS:
            if body.startswith(opening):
                body = body[len(opening) :].strip()
    return body if body in FALLBACK_TEXTS else None


#: how ``summary_declined`` opens when a round wanted a summary but found no valid cutoff (R13):
#: the one kind of decline counted in ``declined_summaries`` (a decision plugin's are by design)
NO_CUTOFF = "no valid cutoff"


def declined_of(stats: Mapping[str, Any], level: str, l2_threshold: float | None) -> str | None:
    """Why a ctxlab round sent a view above T2 without summarizing, or ``None``.

    Args:
        stats: the round's ``completed`` event stats (``tokens_after``, ``l2_decision``,
            ``no_cutoff``, ``summary_rejected``).
        level: the call's level (``"none"``, ``"L1"``, ``"L2"``).
        l2_threshold: T2 in tokens (``None``: a foreign middleware, never declined).

    Returns:
        ``"no valid cutoff: <reason>"`` (R13) or ``"declined: <decision reason>"`` (the
        ``ctxlab_should_summarize`` hook said no) when the view sent (``tokens_after``) is still
        above T2; ``None`` when L2 ran, the view sent is at most T2 (a strategy whose own step
        was enough), or the summary was rejected instead (:func:`rejected_of`).
    """
    if level != "L1" or l2_threshold is None or stats.get("summary_rejected"):
        return None
    if int(stats.get("tokens_after") or 0) <= l2_threshold:
        return None
    if stats.get("no_cutoff"):
        return f"{NO_CUTOFF}: {stats['no_cutoff']}"
    if "l2_decision" in stats:
        return f"declined: {stats['l2_decision']}"
    return None


def is_counted_decline(reason: str | None) -> bool:
    """One call's ``summary_declined``: a declined summary that counts (R13's :data:`NO_CUTOFF`;
    the per-call form of :func:`counted_declines`)."""
    return bool(reason) and str(reason).startswith(NO_CUTOFF)


def counted_declines(columns: Collection[str] = ("summary_declined",)) -> pl.Expr:
    """Per call (``calls.parquet``'s rows, whose column names are ``columns``): a declined summary
    that counts — R13's :data:`NO_CUTOFF` — as ``declined_summaries`` counts it and the figures
    and the inspector mark it; a strategy's designed declines (a decision plugin's, a masking-only
    strategy's) are not.  ``False`` for every row of a frame without ``summary_declined``."""
    if "summary_declined" not in columns:
        return pl.lit(False)
    return pl.col("summary_declined").cast(pl.String).str.starts_with(NO_CUTOFF).fill_null(False)


def rejected_of(stats: Mapping[str, Any]) -> str | None:
    """Why a ctxlab round did not commit its summary (``stats["summary_rejected"]``), or ``None``."""
    reason = stats.get("summary_rejected")
    return str(reason) if reason else None
