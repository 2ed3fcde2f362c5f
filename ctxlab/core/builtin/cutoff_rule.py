"""The built-in ARS cutoff rule (spec R9)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from ctxlab.core.cutoff import CutoffContext, CutoffDecision, first_new_position
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.messages import valid_cut_positions
from ctxlab.core.toolcalls import answered_call_ids, is_result_message, issued_call_ids

#: the messages :func:`last_valid_cut` may read, in multiples of the list's length, before it
#: computes every position at once instead (:func:`~ctxlab.core.messages.valid_cut_positions`)
READ_BUDGET = 2


class KeepRecentCutoff:
    """Cut as late as possible while keeping at least ``keep_messages`` messages.

    The cutoff is the largest valid position ``c <= len(messages) - keep_messages`` (R9): never
    between a tool call and any of its results (paired the way providers pair them:
    :func:`ctxlab.core.messages.tool_pair_spans`), never so that the kept part opens with a
    ToolMessage or SystemMessage.  It must summarize at least one message that is not already
    summarized (``c >= 2`` after a previous summary): re-summarizing only the summary would loop
    on every call when the kept window alone is above the trigger.  No such position: no cutoff
    (R13).  Whether a summary is worth it at all is the L2 decision's question
    (``ctxlab_should_summarize``), not this rule's.
    """

    name = "keep-recent-cutoff"

    @hookimpl(trylast=True)
    def ctxlab_select_cutoff(self, messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision:
        n = len(messages)
        c = last_valid_cut(messages, n - ctx.keep_messages, first_new_position(ctx.has_previous_summary))
        if c is not None:
            return CutoffDecision(c, f"kept {n - c} messages (keep {ctx.keep_messages})")
        return CutoffDecision(
            None, f"no valid cutoff keeps {ctx.keep_messages} of {n} messages and summarizes a new one"
        )


def last_valid_cut(messages: Sequence[BaseMessage], highest: int, lowest: int) -> int | None:
    """The largest ``c`` in ``lowest..highest`` (``lowest >= 0``) where
    :func:`~ctxlab.core.messages.valid_cut_positions` allows a cut, else ``None``; the same
    answer, found from the end (issue 31: an L2 round reads the kept tail and the calls just
    before it, not the whole history).

    A cut at ``c`` separates a call from a result exactly when a result at ``b >= c`` answers a
    call issued before ``c`` (the nearest earlier AIMessage that issued its id, as
    :func:`~ctxlab.core.messages.tool_pair_spans` pairs them).  When the search would read more
    than :data:`READ_BUDGET` times the list (results whose call is far back or missing, many
    invalid positions), every position is computed at once instead.
    """
    n = len(messages)
    budget = READ_BUDGET * n + 64
    for c in range(min(highest, n), lowest - 1, -1):
        if c < n and (isinstance(messages[c], SystemMessage) or is_result_message(messages[c])):
            continue
        crossing, read = _crosses(messages, c, budget)
        budget -= read
        if budget < 0:
            ok = valid_cut_positions(messages)
            return next((k for k in range(min(highest, n), lowest - 1, -1) if ok[k]), None)
        if not crossing:
            return c
    return None


def _crosses(messages: Sequence[BaseMessage], c: int, budget: int) -> tuple[bool, int]:
    """``(whether a cut before messages[c] separates a call from a result, messages read)``;
    it stops once ``budget`` messages are read (the answer is then not used)."""
    issued_after: set[str] = set()  # ids issued at c or later, up to the result being read
    waiting: set[str] = set()  # ids answered at c or later whose call may come before c
    read = 0
    for m in messages[c:]:
        read += 1
        if isinstance(m, AIMessage):
            issued_after.update(issued_call_ids(m))
        for cid in answered_call_ids(m):
            if cid not in issued_after:
                waiting.add(cid)
    if not waiting:
        return False, read
    for k in range(c - 1, -1, -1):  # the nearest earlier issuer of a waiting id, if any
        read += 1
        if read > budget:
            return True, read
        m = messages[k]
        if isinstance(m, AIMessage) and not waiting.isdisjoint(issued_call_ids(m)):
            return True, read
    return False, read
