"""One home for how a value is written in a Markdown cell of the report (``report.md``): the
per-strategy and per-run tables, the Settings table, the "A vs B" table's frames."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

__all__ = ["cell", "markdown_table"]


def cell(value: Any, column: str = "") -> str:
    """``value`` as a Markdown cell: empty for ``None`` and NaN; floats by the column's unit —
    the column registry's (:func:`ctxlab.replay.columns.unit`) when it knows the column, else its
    name — (percent one decimal, US dollars four, shares and recalls three, ``_ms`` and ``_s`` two,
    other floats whole from 100 up, else three significant digits); integers with thousands
    separators; text with ``|`` escaped and newlines as spaces."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        known = _unit(column)
        if known == "percent" or column.endswith("_pct"):
            return f"{value:.1f}"
        if known == "usd" or column.endswith("_usd"):
            return f"{value:.4f}"
        if "share" in column or "recall" in column or column.startswith("mean_retention"):
            return f"{value:.3f}"
        if column.endswith(("_ms", "_s")):
            return f"{value:.2f}"
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _unit(column: str) -> str | None:
    """The registry's unit of ``column`` (``cost_saving_pct_feasible`` is a percent though its name
    does not end in ``_pct``: the s40 trial saw "46" beside "55.6"); ``None``: not a registry column."""
    from ctxlab.replay.columns import unit

    try:
        return unit(column) if column else None
    except KeyError:
        return None


def markdown_table(df: pl.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (numbers formatted, pipes escaped)."""
    cols = list(columns or df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.select(cols).iter_rows(named=True):
        lines.append("| " + " | ".join(cell(row[c], c) for c in cols) + " |")
    return "\n".join(lines)
