"""The per-call columns (``calls.parquet``), in the frame's order.

A column is one :class:`~ctxlab.replay.columns.registry.CallColumn` entry here plus one field of
:class:`~ctxlab.replay.columns.rows.CallRow` (in its measure's TypedDict,
:mod:`ctxlab.replay.columns.rows`; ``tests/test_columns.py`` fails when they drift); the measure
named in the entry computes it (:mod:`ctxlab.replay.measures`).
"""

from __future__ import annotations

import polars as pl

from ctxlab.replay.columns import definitions as d
from ctxlab.replay.columns.registry import CallColumn
from ctxlab.replay.columns.stall import STALL_CALL_COLUMNS

__all__ = ["CALL_REGISTRY", "VIEW_PARTS"]

#: the parts a view is split into (columns ``view_<part>_tokens``)
VIEW_PARTS = ("system", "user", "assistant", "tool", "summary")

_PART_TEXT = {
    "system": "the system message and the tool schemas",
    "user": "user messages (everything not in another part)",
    "assistant": "assistant messages",
    "tool": "tool results (ToolMessages and observation-marked messages)",
    "summary": "summary messages (marked lc_source=summarization)",
}

_Int, _Str, _Float, _Bool = pl.Int64, pl.String, pl.Float64, pl.Boolean

#: every per-call column, in the frame's column order
CALL_REGISTRY: tuple[CallColumn, ...] = (
    CallColumn("transcript", _Str, "label", "the transcript's label", "run"),
    CallColumn("strategy", _Str, "label", "the strategy's label", "run"),
    CallColumn(
        "data_provenance",
        _Str,
        "label",
        "where the transcript comes from: real, scripted or synthetic",
        "run",
        detail=d.DATA_PROVENANCE,
    ),
    CallColumn(
        "transcript_format",
        _Str,
        "label",
        "the format (the agent) that wrote the transcript: the source the verdicts group and weight runs by",
        "run",
    ),
    CallColumn("call_index", _Int, "index", "the model call's position in the run (0-based)", "run"),
    CallColumn(
        "message_index", _Int, "index", "the recorded assistant message's position in the transcript", "run"
    ),
    CallColumn(
        "raw_tokens", _Int, "tokens", "estimate of the uncompressed request", "view", detail=d.RAW_TOKENS
    ),
    CallColumn("view_tokens", _Int, "tokens", "estimate of the request sent", "view", detail=d.VIEW_TOKENS),
    *(
        CallColumn(f"view_{p}_tokens", _Int, "tokens", f"view_tokens of {_PART_TEXT[p]}", "view")
        for p in VIEW_PARTS
    ),
    CallColumn("view_messages", _Int, "messages", "messages in the view sent", "view"),
    CallColumn(
        "over_window",
        _Bool,
        "flag",
        "the uncompressed request is above the provider's context window: no agent could have sent it, "
        "so the no-compression baseline of this call is infeasible (empty: no window)",
        "window",
        nullable=True,
        detail=d.OVER_WINDOW,
    ),
    CallColumn(
        "level", _Str, "label", "the call's compression level: none, L1 or L2", "compression", detail=d.LEVEL
    ),
    CallColumn(
        "cutoff_index",
        _Int,
        "index",
        "the L2 cutoff set by this call (empty: none set)",
        "compression",
        nullable=True,
        detail=d.CUTOFF_INDEX,
    ),
    CallColumn(
        "state_cutoff_index",
        _Int,
        "index",
        "the L2 cutoff in effect after the call (empty: none)",
        "compression",
        nullable=True,
    ),
    CallColumn("offloaded", _Int, "count", "tool results L1 offloaded in this call", "compression"),
    CallColumn(
        "truncated_args", _Int, "count", "tool-call arguments L1 truncated in this call", "compression"
    ),
    CallColumn(
        "summarizer_calls",
        _Int,
        "count",
        "summarizer calls of this call's L2 round",
        "compression",
        detail=d.SUMMARIZER_USAGE,
        heading="summarizer_*",
    ),
    CallColumn("summarizer_input_tokens", _Int, "tokens", "the summarizer's input tokens", "compression"),
    CallColumn("summarizer_output_tokens", _Int, "tokens", "the summarizer's output tokens", "compression"),
    CallColumn(
        "summary_error",
        _Str,
        "label",
        "why this call's L2 summary failed (empty: no L2 round, or it succeeded)",
        "compression",
        nullable=True,
    ),
    CallColumn(
        "summary_fallback",
        _Str,
        "label",
        "the canned text a foreign middleware committed instead of a summary (empty: none)",
        "compression",
        nullable=True,
        detail=d.SUMMARY_FAILURES,
        heading="summary failures",
    ),
    CallColumn(
        "summary_declined",
        _Str,
        "label",
        "why a ctxlab round sent a view above T2 without summarizing (empty: not declined)",
        "compression",
        nullable=True,
    ),
    CallColumn(
        "summary_rejected",
        _Str,
        "label",
        "why a ctxlab round's summary was not committed (empty: not rejected)",
        "compression",
        nullable=True,
    ),
    CallColumn(
        "after_failed_summary",
        _Bool,
        "flag",
        "the request was built on a failed or fallback summary, this call's or an earlier one's",
        "compression",
    ),
    CallColumn(
        "forced_by_overflow", _Bool, "flag", "the round was forced by a context overflow (R12)", "compression"
    ),
    CallColumn(
        "overflow_errors",
        _Int,
        "count",
        "requests the provider stand-in refused with ContextOverflowError (0 without a window)",
        "compression",
    ),
    CallColumn(
        "overhead_ms",
        _Float,
        "ms",
        "wall time inside the middleware minus the model handler",
        "compression",
        detail=d.OVERHEAD_MS,
    ),
    CallColumn(
        "cache_reusable_tokens",
        _Int,
        "tokens",
        "the prompt-cache reusable prefix shared with the previous request",
        "view",
        detail=d.CACHE_REUSABLE_TOKENS,
    ),
    CallColumn(
        "cache_reusable_share",
        _Float,
        "share",
        "cache_reusable_tokens / view_tokens (empty: an empty view)",
        "view",
        nullable=True,
    ),
    CallColumn(
        "retention",
        _Float,
        "share",
        "share of the earlier identifiers the answer uses that are still in the view (empty: none)",
        "retention",
        nullable=True,
        detail=d.RETENTION,
    ),
    CallColumn(
        "threshold",
        _Float,
        "tokens",
        "T, the entry threshold (empty: a foreign middleware)",
        "compression",
        nullable=True,
    ),
    CallColumn(
        "trigger_reached",
        _Bool,
        "flag",
        "the strategy's own trigger fired in this call: a ctxlab round started (the request reached T), "
        "LangChain's or DeepAgents' counter reached its trigger, the agent itself cut the request "
        "(recorded); empty: a foreign middleware that does not say",
        "compression",
        nullable=True,
    ),
    CallColumn(
        "l2_threshold",
        _Float,
        "tokens",
        "T2, the L2 threshold (empty: a foreign middleware)",
        "compression",
        nullable=True,
    ),
    CallColumn(
        "unmatched_tool_pairs",
        _Int,
        "count",
        "broken tool pairs in the view (must be 0)",
        "tool_pairs",
        detail=d.UNMATCHED_TOOL_PAIRS,
    ),
    CallColumn(
        "rejected_reason",
        _Str,
        "label",
        "why a provider would refuse the request sent: unmatched_tool_pairs, over_window (empty: none)",
        "tool_pairs",
        nullable=True,
        detail=d.REJECTED_REASON,
    ),
    CallColumn(
        "raw_rejected_reason",
        _Str,
        "label",
        "why a provider would refuse the uncompressed request, by the rule of rejected_reason: "
        "unmatched_tool_pairs (the transcript's own: a tool result no earlier message calls); such a "
        "call's no-compression baseline is infeasible, like over_window (empty: none)",
        "tool_pairs",
        nullable=True,
        detail=d.RAW_REJECTED_REASON,
    ),
    CallColumn(
        "output_tokens",
        _Int,
        "tokens",
        "the recorded answer's tokens (empty: no price row)",
        "cost",
        nullable=True,
        detail=d.OUTPUT_TOKENS,
    ),
    CallColumn(
        "cache_read_tokens", _Int, "tokens", "input tokens read from the prompt cache", "cost", nullable=True
    ),
    CallColumn(
        "cache_write_tokens",
        _Int,
        "tokens",
        "input tokens written to the prompt cache",
        "cost",
        nullable=True,
    ),
    CallColumn(
        "cost_usd",
        _Float,
        "usd",
        "the call's cost with prompt caching (empty: no price row)",
        "cost",
        nullable=True,
        detail=d.COST_USD,
    ),
    CallColumn(
        "summarizer_cost_usd",
        _Float,
        "usd",
        "the cost of the call's summarizer calls",
        "cost",
        nullable=True,
        detail=d.SUMMARIZER_COST_USD,
    ),
    CallColumn(
        "raw_cost_usd",
        _Float,
        "usd",
        "the cost of the uncompressed request",
        "cost",
        nullable=True,
        detail=d.RAW_COST_USD,
    ),
    CallColumn(
        "cost_read_usd",
        _Float,
        "usd",
        "of cost_usd, the input tokens read from the prompt cache",
        "cost",
        nullable=True,
        detail=d.COST_BREAKDOWN,
        heading="cost breakdown",
    ),
    *(
        CallColumn(name, _Float, "usd", definition, "cost", nullable=True)
        for name, definition in (
            ("cost_write_usd", "of cost_usd, the input tokens written to the cache"),
            ("cost_uncached_usd", "of cost_usd, the input tokens neither read from nor written to the cache"),
            ("cost_output_usd", "of cost_usd, the output tokens"),
            ("raw_cost_read_usd", "of raw_cost_usd, the input tokens read from the cache"),
            ("raw_cost_write_usd", "of raw_cost_usd, the input tokens written to the cache"),
        )
    ),
    CallColumn(
        "span_identifiers",
        _Int,
        "count",
        "distinct identifiers in the span the L2 round summarized (empty: no L2 round)",
        "fidelity",
        nullable=True,
    ),
    CallColumn(
        "span_carried", _Int, "count", "of span_identifiers, those in the summary", "fidelity", nullable=True
    ),
    CallColumn(
        "needed_identifiers",
        _Int,
        "count",
        "identifiers later turns use that stood only in the span (empty: no L2 round)",
        "fidelity",
        nullable=True,
    ),
    CallColumn(
        "needed_carried",
        _Int,
        "count",
        "of needed_identifiers, those in the summary",
        "fidelity",
        nullable=True,
    ),
    CallColumn(
        "probes",
        _Int,
        "count",
        "probes drawn from the later turns for this call's L2 round (empty: no L2 round)",
        "fidelity",
        nullable=True,
        detail=d.PROBES,
        heading="probes, probe_pass_rate",
    ),
    CallColumn(
        "probes_passed",
        _Int,
        "count",
        "of probes, those the summary passes: it names the subject and states its attribute",
        "fidelity",
        nullable=True,
    ),
    CallColumn(
        "dump_probes_passed",
        _Int,
        "count",
        "of probes, those the identifier-dump floor at the summary's size passes (empty: no L2 round)",
        "fidelity",
        nullable=True,
        detail=d.FLOORS,
        heading="reference floors",
    ),
    CallColumn(
        "recent_probes_passed",
        _Int,
        "count",
        "of probes, those the keep-recent floor (the span's last messages verbatim) at the summary's size passes",
        "fidelity",
        nullable=True,
    ),
    CallColumn(
        "summary_tokens",
        _Int,
        "tokens",
        "tokens of the summary message(s) this call's L2 round committed (empty: no L2 round)",
        "fidelity",
        nullable=True,
    ),
    CallColumn(
        "recorded_input_tokens",
        _Int,
        "provider_tokens",
        "the provider's input tokens of the recorded call, cached input included (empty: the transcript records none)",
        "recorded_usage",
        nullable=True,
    ),
    CallColumn(
        "unrecorded_prefix_tokens",
        _Int,
        "tokens",
        "the unrecorded prefix added to every request of the run (its fixed part), in raw_tokens and "
        "view_tokens (0: none)",
        "recorded_usage",
        detail=d.UNRECORDED_PREFIX,
    ),
    *STALL_CALL_COLUMNS,
)
