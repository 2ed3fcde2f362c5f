"""The cost and summary-fidelity views of a replay: a table per strategy and the cost-per-call figure.

Both read the per-call frame (:func:`ctxlab.analysis.report.calls_frame`): the ``*_usd`` columns
(US dollars under the replay's price row, :mod:`ctxlab.replay.cost`) and the fidelity counts
(:mod:`ctxlab.replay.fidelity`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ctxlab.analysis.plotting.figures import save_png
from ctxlab.analysis.plotting.style import fit_margins, font_families, label_text, new_axes
from ctxlab.replay.stats import pooled_runs
from ctxlab.replay.table import MEASURE_COLUMNS, strategy_totals

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["COST_FIGURE", "COST_TABLE_COLUMNS", "cost_table", "plot_cost_per_call", "write_cost_figure"]

#: the file name of the figure in a report's ``figures/`` folder
COST_FIGURE = "cost_per_call.png"

#: the columns of :func:`cost_table`
COST_TABLE_COLUMNS = (
    "strategy",
    "transcripts",
    "calls",
    "l2_rounds",
    "cost_per_call_usd",
    *MEASURE_COLUMNS,
)


def cost_table(calls: pl.DataFrame) -> pl.DataFrame:
    """One row per strategy over all transcripts: calls, L2 rounds, cost per call and in total
    (US dollars, the summarizer's included), the uncompressed reference, the cost saving in % and
    the pooled span and needed recall (:data:`COST_TABLE_COLUMNS`)."""
    totals = strategy_totals(calls)
    if totals.is_empty():
        return pl.DataFrame(schema={c: pl.Float64 for c in COST_TABLE_COLUMNS}).with_columns(
            pl.col("strategy").cast(pl.String)
        )
    return totals.with_columns(
        (pl.col("cost_usd") / pl.col("calls")).alias("cost_per_call_usd"),
    ).select(COST_TABLE_COLUMNS)


def plot_cost_per_call(
    calls: pl.DataFrame, *, ax: Axes | None = None, title: str | None = None, price_label: str | None = None
) -> Figure:
    """Mean cost per model call by strategy, side by side (US dollars, all transcripts): the main
    model's calls and the summarizer's stacked, with the uncompressed requests under the same
    caching ("no compression") as the first bar.  ``price_label`` (e.g. ``"anthropic:claude-sonnet-4-5,
    2026-12-01"``) is written under the title."""
    totals = cost_table(calls)
    names = totals["strategy"].to_list() if totals.height else []
    calls_n = totals["calls"].to_list() if totals.height else []
    summ = [
        (s or 0.0) / max(n, 1) for s, n in zip(totals["summarizer_cost_usd"].to_list(), calls_n, strict=True)
    ]
    total = [v or 0.0 for v in totals["cost_per_call_usd"].to_list()] if totals.height else []
    main = [t - s for t, s in zip(total, summ, strict=True)]
    raw_sum = calls["raw_cost_usd"].sum() if calls.height else 0.0
    raw = float(raw_sum or 0.0) / max(calls.height, 1)
    own = ax is None
    fig, ax = new_axes(ax, (max(5.0, 1.3 * (len(names) + 1) + 2.5), 4.4))
    fam = font_families()
    x = list(range(len(names) + 1))
    ax.bar([0], [raw], color="#bbbbbb", width=0.6, hatch="//", edgecolor="#555555", label="no compression")
    ax.bar(x[1:], main, color="#1f77b4", width=0.6, label="main model")
    ax.bar(x[1:], summ, bottom=main, color="#d62728", width=0.6, alpha=0.85, label="summarizer")
    for xi, v in zip(x, [raw, *total], strict=True):
        ax.annotate(
            f"${v:.4f}",
            (xi, v),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=8.5,
            fontfamily=fam,
        )
    labels = [label_text("no compression"), *(label_text(n) for n in names)]
    ax.set_xticks(
        x,
        labels,
        fontfamily=fam,
        rotation=20 if len(names) > 3 else 0,
        ha="right" if len(names) > 3 else "center",
    )
    ax.set_ylabel("US dollars per model call (mean)", fontfamily=fam)
    ax.set_ylim(0, max([raw, *total, 1e-9]) * 1.2)
    ax.grid(True, axis="y", alpha=0.3, linewidth=0.6)
    head = title or "Cost per call by strategy (all transcripts, with prompt caching)"
    ax.set_title(label_text(head + (f"\n{price_label}" if price_label else "")), fontfamily=fam, fontsize=10)
    ax.legend(loc="best", prop={"family": fam, "size": 8.5}, framealpha=0.85)
    if own:
        fit_margins(fig, ax)
    return fig


def write_cost_figure(
    calls: pl.DataFrame, out_dir: str | Path, *, price_label: str | None = None, data: str = "real"
) -> Path | None:
    """Write :data:`COST_FIGURE` into ``out_dir`` (Agg canvas) over the runs ``data`` names
    (:func:`ctxlab.replay.stats.pooled_runs`, default the real ones; the title says which);
    ``None`` when there is no cost."""
    if calls.is_empty() or calls["cost_usd"].is_null().all():
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pool = pooled_runs(calls, data)
    title = f"Cost per call by strategy ({pool.label}, with prompt caching)"
    fig = plot_cost_per_call(pool.summary, price_label=price_label, title=title)
    return save_png(fig, out / COST_FIGURE)
