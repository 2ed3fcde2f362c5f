"""The typed row of a replay's per-call table: one TypedDict per measure (what its ``measure()``
returns, checked by mypy) and :class:`CallRow`, all of them; the columns themselves are declared
in :mod:`ctxlab.replay.columns.calls`.
"""

from __future__ import annotations

from typing import TypedDict

from ctxlab.replay.columns.stall import StallColumns

__all__ = [
    "MEASURE_TYPES",
    "CallRow",
    "CompressionColumns",
    "CostColumns",
    "FidelityColumns",
    "LabelColumns",
    "RecordedUsageColumns",
    "RetentionColumns",
    "StallColumns",
    "ToolPairsColumns",
    "ViewColumns",
    "WindowColumns",
]


# The typed row: one TypedDict per measure (what its ``measure()`` returns, checked by mypy), and
# CallRow, all of them.  A column's Python type is declared once, in its measure's TypedDict;
# tests/test_columns.py checks each against the registry (keys, dtype, nullable).


class LabelColumns(TypedDict):
    """The ``run`` measure's columns."""

    transcript: str
    strategy: str
    data_provenance: str
    transcript_format: str
    call_index: int
    message_index: int


class ViewColumns(TypedDict):
    """The ``view`` measure's columns."""

    raw_tokens: int
    view_tokens: int
    view_system_tokens: int
    view_user_tokens: int
    view_assistant_tokens: int
    view_tool_tokens: int
    view_summary_tokens: int
    view_messages: int
    cache_reusable_tokens: int
    cache_reusable_share: float | None


class WindowColumns(TypedDict):
    """The ``window`` measure's column."""

    over_window: bool | None


class CompressionColumns(TypedDict):
    """The ``compression`` measure's columns."""

    level: str
    cutoff_index: int | None
    state_cutoff_index: int | None
    offloaded: int
    truncated_args: int
    summarizer_calls: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    summary_error: str | None
    summary_fallback: str | None
    summary_declined: str | None
    summary_rejected: str | None
    after_failed_summary: bool
    forced_by_overflow: bool
    overflow_errors: int
    overhead_ms: float
    threshold: float | None
    trigger_reached: bool | None
    l2_threshold: float | None


class RetentionColumns(TypedDict):
    """The ``retention`` measure's column."""

    retention: float | None


class ToolPairsColumns(TypedDict):
    """The ``tool_pairs`` measure's columns."""

    unmatched_tool_pairs: int
    rejected_reason: str | None
    raw_rejected_reason: str | None


class CostColumns(TypedDict):
    """The ``cost`` measure's columns (filled when the run is over)."""

    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    summarizer_cost_usd: float | None
    raw_cost_usd: float | None
    cost_read_usd: float | None
    cost_write_usd: float | None
    cost_uncached_usd: float | None
    cost_output_usd: float | None
    raw_cost_read_usd: float | None
    raw_cost_write_usd: float | None


class FidelityColumns(TypedDict):
    """The ``fidelity`` measure's columns (filled when the run is over)."""

    span_identifiers: int | None
    span_carried: int | None
    needed_identifiers: int | None
    needed_carried: int | None
    probes: int | None
    probes_passed: int | None
    dump_probes_passed: int | None
    recent_probes_passed: int | None
    summary_tokens: int | None


class RecordedUsageColumns(TypedDict):
    """The ``recorded_usage`` measure's column."""

    recorded_input_tokens: int | None
    unrecorded_prefix_tokens: int


class CallRow(
    LabelColumns,
    ViewColumns,
    WindowColumns,
    CompressionColumns,
    RetentionColumns,
    ToolPairsColumns,
    CostColumns,
    FidelityColumns,
    RecordedUsageColumns,
    StallColumns,
):
    """One model call of a replay: every column of :data:`CALL_REGISTRY`, each typed by its dtype
    (``| None`` where the column is nullable; ``None`` is an empty cell), as the columns of its
    measure (the frame's column order is the registry's).  The definitions and units are the
    registry's (``docs/columns.md``)."""


#: each measure's typed columns (:attr:`CallColumn.measure` -> its TypedDict)
MEASURE_TYPES: dict[str, type] = {
    "run": LabelColumns,
    "view": ViewColumns,
    "window": WindowColumns,
    "compression": CompressionColumns,
    "retention": RetentionColumns,
    "tool_pairs": ToolPairsColumns,
    "cost": CostColumns,
    "fidelity": FidelityColumns,
    "recorded_usage": RecordedUsageColumns,
    "stall": StallColumns,
}
