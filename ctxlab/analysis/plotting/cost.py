"""The cost-per-call figure of a replay (:func:`plot_cost_per_call`) and its PNG in a report's
``figures/`` folder (:func:`write_cost_figure`).

Both read the per-call frame's ``*_usd`` columns (US dollars under the replay's price row,
:mod:`ctxlab.replay.cost`), totalled per strategy by :func:`ctxlab.replay.table.strategy_totals`
(the table :func:`ctxlab.analysis.costs.cost_table` shows the same totals).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import polars as pl

from ctxlab.analysis.plotting.figures import save_png
from ctxlab.analysis.plotting.options import PlotOptions, with_options
from ctxlab.analysis.plotting.style import fit_margins, font_families, label_text, new_axes
from ctxlab.replay.stats import pooled_runs
from ctxlab.replay.table import strategy_totals

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COST_FIGURE", "plot_cost_per_call", "write_cost_figure"]

#: the file name of the figure in a report's ``figures/`` folder
COST_FIGURE = "cost_per_call.png"


@with_options(PlotOptions)
def plot_cost_per_call(
    calls: pl.DataFrame, *, price_label: str | None = None, **options: Unpack[PlotOptions]
) -> Figure:
    """Mean cost per model call by strategy, side by side (US dollars, all transcripts): the main
    model's calls and the summarizer's stacked, with the uncompressed requests under the same
    caching ("no compression") as the first bar.

    Args:
        calls: the per-call frame (:func:`ctxlab.analysis.report.calls_frame`), every strategy.
        price_label: a line written under the title, e.g. ``"anthropic:claude-sonnet-4-5,
            2026-12-01"``; ``None``: none.
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title (default: ``"Cost per call by strategy (all transcripts, with
            prompt caching)"``).

    Returns:
        The figure of ``ax``, or a new one (not registered with pyplot).

    Raises:
        TypeError: an unknown keyword option.
    """
    totals = strategy_totals(calls)
    names = totals["strategy"].to_list()
    calls_n = totals["calls"].to_list()
    summ = [
        (s or 0.0) / max(n, 1) for s, n in zip(totals["summarizer_cost_usd"].to_list(), calls_n, strict=True)
    ]
    total = [(c or 0.0) / n for c, n in zip(totals["cost_usd"].to_list(), calls_n, strict=True)]
    main = [t - s for t, s in zip(total, summ, strict=True)]
    raw_sum = calls["raw_cost_usd"].sum() if calls.height else 0.0
    raw = float(raw_sum or 0.0) / max(calls.height, 1)
    given = options.get("ax")
    fig, ax = new_axes(given, (max(5.0, 1.3 * (len(names) + 1) + 2.5), 4.4))
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
    head = options.get("title") or "Cost per call by strategy (all transcripts, with prompt caching)"
    ax.set_title(label_text(head + (f"\n{price_label}" if price_label else "")), fontfamily=fam, fontsize=10)
    ax.legend(loc="best", prop={"family": fam, "size": 8.5}, framealpha=0.85)
    if given is None:
        fit_margins(fig, ax)
    return fig


def write_cost_figure(
    calls: pl.DataFrame,
    out_dir: str | Path,
    *,
    price_label: str | None = None,
    data: str = "real",
    note: str | None = None,
) -> Path | None:
    """Write :data:`COST_FIGURE` (:func:`plot_cost_per_call`) into ``out_dir`` (Agg canvas, 100
    dpi) over the runs ``data`` names (:func:`ctxlab.replay.stats.pooled_runs`, default the real
    ones; the title says which) and return its path; ``None`` when ``calls`` is empty or has no
    cost (no price row).  ``note``: a line on the figure (what wrote the summaries)."""
    if calls.is_empty() or calls["cost_usd"].is_null().all():
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pool = pooled_runs(calls, data)
    title = f"Cost per call by strategy ({pool.label}, with prompt caching)"
    fig = plot_cost_per_call(pool.summary, price_label=price_label, title=title)
    return save_png(fig, out / COST_FIGURE, note)
