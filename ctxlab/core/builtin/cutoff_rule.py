"""The built-in ARS cutoff rule (spec R9)."""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from ctxlab.core.cutoff import CutoffContext, CutoffDecision, first_new_position
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.messages import valid_cut_positions


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
        ok = valid_cut_positions(messages)
        lowest = first_new_position(ctx.has_previous_summary)
        for c in range(n - ctx.keep_messages, lowest - 1, -1):
            if ok[c]:
                return CutoffDecision(c, f"kept {n - c} messages (keep {ctx.keep_messages})")
        return CutoffDecision(
            None, f"no valid cutoff keeps {ctx.keep_messages} of {n} messages and summarizes a new one"
        )
