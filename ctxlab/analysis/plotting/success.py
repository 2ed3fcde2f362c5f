"""The success figure of ``ctxlab eval``: success rate against dollars per sample, per strategy.

The values are :func:`ctxlab.analysis.success.success_table`'s: each strategy is a marker at its
mean dollars per sample (every model call, under the price row's prompt caching) and its success
rate, with a vertical error bar spanning the rate's 95 % bootstrap interval over samples.  Up and
to the left is better.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ctxlab.analysis.plotting.figures import save_png
from ctxlab.analysis.plotting.style import STRATEGY_COLORS, label_text, new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SUCCESS_FIGURE", "plot_success", "write_success_figure"]

#: the file name of the figure in an eval report's ``figures/`` folder
SUCCESS_FIGURE = "success.png"


def plot_success(table: pl.DataFrame, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Success rate (with its interval) against US dollars per sample, one marker per strategy.

    Args:
        table: :func:`ctxlab.analysis.success.success_table`'s frame.
        ax: draw into these axes (default: a new figure).
        title: the title (default: what is drawn and over how many samples).
    """
    fig, ax = new_axes(ax, (7.5, 4.8))
    for i, row in enumerate(table.iter_rows(named=True)):
        color = STRATEGY_COLORS[i % len(STRATEGY_COLORS)]
        x, y = float(row["usd_per_sample"]), 100 * float(row["success_rate"])
        low, high = 100 * float(row["success_low"]), 100 * float(row["success_high"])
        ax.errorbar(
            [x],
            [y],
            yerr=[[y - low], [high - y]],
            fmt="o",
            color=color,
            capsize=4,
            label=label_text(row["strategy"]),
        )
        ax.annotate(
            label_text(row["strategy"]), (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8
        )
    samples = max((int(n) for n in table["samples"].to_list()), default=0)
    ax.set_xlabel("US dollars per sample (every model call, prompt caching counted)")
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(-5, 105)
    ax.margins(x=0.15)
    ax.grid(alpha=0.3)
    ax.set_title(label_text(title or f"task success against cost ({samples} samples per strategy, 95 % CI)"))
    ax.legend(fontsize=8, loc="best")
    return fig


def write_success_figure(table: pl.DataFrame, folder: Path) -> Path:
    """:func:`plot_success` as ``folder/success.png`` (the folder is made); returns the path."""
    folder.mkdir(parents=True, exist_ok=True)
    return save_png(plot_success(table), folder / SUCCESS_FIGURE)
