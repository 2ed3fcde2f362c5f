"""The column registry: every column of a replay's tables declared once.

Two kinds of column:

* :class:`CallColumn`: one value per model call, a column of ``calls.parquet``
  (:func:`ctxlab.replay.table.calls_frame`), a key of the typed row :class:`CallRow`;
  :data:`CALL_REGISTRY`, in the frame's column order.
* :class:`RunColumn`: one value per transcript × strategy (``summary.csv``,
  :func:`ctxlab.replay.table.summary_frame`) or per strategy over all its transcripts
  (:func:`ctxlab.replay.table.strategy_totals`), with the polars expression that aggregates the
  per-call columns; :data:`RUN_REGISTRY`, in ``summary.csv``'s column order.

Each entry names its polars dtype, its unit (:data:`UNITS`), a one-line definition, how it
aggregates, and the measure that computes it (:mod:`ctxlab.replay.measures`).  Everything that
shows a column reads it from here: the frames' schemas and aggregations, ``report.md``'s metric
definitions (:func:`report_definitions`), the plots' axis labels (:func:`axis_label`) and the
column tables in ``docs/columns.md`` (:func:`columns_markdown`; ``python -m
ctxlab.replay.columns`` prints them).  Adding a column: ``docs/architecture.md``, "Adding a
column".
"""

from __future__ import annotations

from ctxlab.replay.columns.calls import CALL_REGISTRY, VIEW_PARTS
from ctxlab.replay.columns.registry import UNITS, CallColumn, RunColumn
from ctxlab.replay.columns.rows import (
    MEASURE_TYPES,
    CallRow,
    CompressionColumns,
    CostColumns,
    FidelityColumns,
    LabelColumns,
    RecordedUsageColumns,
    RetentionColumns,
    StallColumns,
    ToolPairsColumns,
    ViewColumns,
    WindowColumns,
)
from ctxlab.replay.columns.runs import RUN_REGISTRY

__all__ = [
    "CALL_REGISTRY",
    "MEASURE_TYPES",
    "REPORT_DEFINITIONS",
    "RUN_REGISTRY",
    "UNITS",
    "VIEW_PARTS",
    "CallColumn",
    "CallRow",
    "CompressionColumns",
    "CostColumns",
    "FidelityColumns",
    "LabelColumns",
    "RecordedUsageColumns",
    "RetentionColumns",
    "RunColumn",
    "StallColumns",
    "ToolPairsColumns",
    "ViewColumns",
    "WindowColumns",
    "axis_label",
    "column",
    "columns_markdown",
    "measure_columns",
    "report_definitions",
    "unit",
]

#: the columns whose long definition ``report.md`` prints, in the order it prints them
REPORT_DEFINITIONS: tuple[str, ...] = (
    "data_provenance",
    "raw_tokens",
    "unrecorded_prefix_tokens",
    "over_window",
    "view_tokens",
    "saving_pct",
    "reached_threshold",
    "level",
    "cutoff_index",
    "overhead_ms",
    "cache_reusable_tokens",
    "retention",
    "unmatched_tool_pairs",
    "rejected_reason",
    "raw_rejected_reason",
    "summarizer_calls",
    "summary_fallback",
    "cost_usd",
    "summarizer_cost_usd",
    "raw_cost_usd",
    "cost_read_usd",
    "output_tokens",
    "span_recall",
    "needed_recall",
    "probes",
    "dump_probes_passed",
    "stall_s",
)

_BY_NAME: dict[str, CallColumn | RunColumn] = {
    **{c.name: c for c in RUN_REGISTRY},
    **{c.name: c for c in CALL_REGISTRY},  # a name in both (``summarizer_calls``): the per-call one
}


def column(name: str) -> CallColumn | RunColumn:
    """The registry entry of a column (per-call first when the name is in both tables).

    Raises:
        KeyError: no column of that name (the message lists the known ones).
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no column {name!r} in the column registry; known: {sorted(_BY_NAME)}") from None


def unit(name: str) -> str:
    """The unit of a column (one of :data:`UNITS`).  Raises ``KeyError`` for an unknown column."""
    return column(name).unit


def axis_label(name: str) -> str:
    """The axis label of a column for a plot: its ``label`` when it has one, else its name with
    its unit in brackets (``"view_tokens (tokens)"``; no bracket for labels, flags and indexes).

    Raises:
        KeyError: an unknown column.
    """
    entry = column(name)
    if entry.label is not None:
        return entry.label
    shown = UNITS[entry.unit]
    return f"{entry.name} ({shown})" if shown else entry.name


def measure_columns(measure: str) -> tuple[str, ...]:
    """The per-call columns a measure computes (:attr:`CallColumn.measure`), in frame order."""
    known = _MEASURE_COLUMNS.get(measure)
    if known is None:  # the registry is a constant: each measure's columns are listed once
        known = _MEASURE_COLUMNS[measure] = tuple(c.name for c in CALL_REGISTRY if c.measure == measure)
    return known


_MEASURE_COLUMNS: dict[str, tuple[str, ...]] = {}


def report_definitions(group: str | None = None) -> dict[str, str]:
    """The long definitions ``report.md`` prints, ``{heading: text}`` in :data:`REPORT_DEFINITIONS`
    order; ``group`` keeps one group: ``"cost"`` or ``"fidelity"`` (the columns those measures
    compute), ``"metric"`` (the others); ``None``: all."""
    out: dict[str, str] = {}
    for name in REPORT_DEFINITIONS:
        entry = column(name)
        kind = entry.measure if entry.measure in ("cost", "fidelity") else "metric"
        if entry.detail is not None and group in (None, kind):
            out[entry.heading or entry.name] = entry.detail
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def columns_markdown() -> str:
    """The two column tables of ``docs/columns.md`` (per call, per run), from the registry."""
    lines = [
        "### Per call (`calls.parquet`)",
        "",
        "| column | dtype | unit | measure | definition |",
        "|---|---|---|---|---|",
    ]
    for c in CALL_REGISTRY:
        dtype = f"{c.dtype}" + (" (nullable)" if c.nullable else "")
        lines.append(f"| `{c.name}` | {dtype} | {c.unit} | {c.measure} | {_cell(c.definition)} |")
    lines += [
        "",
        "### Per run (`summary.csv`, strategy totals)",
        "",
        "| column | dtype | unit | from | aggregation | across runs | definition |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in RUN_REGISTRY:
        source = ", ".join(f"`{s}`" for s in r.source) or "-"
        lines.append(
            f"| `{r.name}` | {r.dtype} | {r.unit} | {source} | {r.how} | {r.over_runs} | {_cell(r.definition)} |"
        )
    return "\n".join(lines) + "\n"
