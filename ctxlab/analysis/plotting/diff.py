"""The figure of ``ctxlab diff``: per measure, each strategy's mean per-run difference ``B − A``
with its 95 % bootstrap interval (:class:`ctxlab.replay.diff.RunDiff`), one panel per measure.

A dot right of the dashed zero line means B is higher.  Green: B better (the interval excludes 0
on the better side, :data:`ctxlab.replay.diff.DIFF_MEASURES` says which side that is); red: B
worse; grey: no detectable difference (the interval holds 0), or identical.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import polars as pl

from ctxlab.analysis.plotting.figures import save_png
from ctxlab.analysis.plotting.options import FigureOptions, open_panels, with_options
from ctxlab.analysis.plotting.style import font_families, format_tokens, label_text
from ctxlab.replay.diff import DIFF_MEASURES, TOO_FEW

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ctxlab.replay.diff import RunDiff

__all__ = ["DIFF_FIGURE", "plot_diff", "write_diff_figure"]

#: the figure's file name in the folder ``ctxlab diff`` writes
DIFF_FIGURE = "diff.png"
_COLORS = {"better": "#2b8a3e", "worse": "#c92a2a", "neutral": "#868e96"}
#: the x-axis label of each measure's panel (the long definitions: DIFF_MEASURES)
_AXIS = {
    "tokens": "tokens sent per run",
    "dollars": "US $ per run",
    "identifier recall": "identifier recall (share)",
    "failed summaries": "failed and fallback\nsummaries per run",
    "declined summaries": "declined or not committed\nsummaries per run (not failures)",
    "stall": "seconds waited on compression\nper run (simulated)",
}


def _colour(verdict: str) -> str:
    if "better" in verdict:
        return _COLORS["better"]
    if "worse" in verdict:
        return _COLORS["worse"]
    return _COLORS["neutral"]


def _too_few(verdict: str) -> bool:
    """Too few paired runs differ to call it (:data:`ctxlab.replay.diff.TOO_FEW`)."""
    return verdict.startswith(TOO_FEW)


def _legend(fig: Figure) -> None:
    """What the colours and the hollow dot mean, once under the panels."""
    from matplotlib.lines import Line2D

    def dot(colour: str, hollow: bool = False) -> Line2D:
        return Line2D([], [], marker="o", ls="", color=colour, markerfacecolor="white" if hollow else colour)

    handles = [dot(_COLORS["better"]), dot(_COLORS["worse"]), dot(_COLORS["neutral"]), dot("#555555", True)]
    labels = [
        "B better",
        "B worse",
        "no detectable difference",
        "hollow: too few runs differ to call (no interval)",
    ]
    fig.legend(
        handles, labels, loc="upper center", ncol=4, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 0.0)
    )


def _panel(ax: Axes, rows: pl.DataFrame, strategies: list[str], measure: str) -> None:
    fam = font_families()
    for y, strategy in enumerate(strategies):
        row = rows.filter(pl.col("strategy") == strategy)
        if row.is_empty() or row["difference"][0] is None:
            ax.text(
                0, y, "no pair", ha="center", va="center", fontsize=8, color="#868e96", fontfamily=fam,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5}, zorder=3,
            )  # fmt: skip
            continue
        d = float(row["difference"][0])
        lo, hi = row["low"][0], row["high"][0]  # empty: too few runs differ, no interval (hollow)
        verdict = str(row["verdict"][0])
        colour = _colour(verdict)
        err = None if lo is None or hi is None else [[d - float(lo)], [float(hi) - d]]
        ax.errorbar(
            [d], [y], xerr=err, fmt="o", color=colour, ecolor=colour, capsize=3, markersize=6,
            markerfacecolor="white" if _too_few(verdict) else colour,
        )  # fmt: skip
    ax.axvline(0, color="#555555", lw=0.8, ls="--", zorder=1)
    better = DIFF_MEASURES.get(measure, (measure, "", "higher"))[2]
    ax.set_title(label_text(f"{measure}: B − A ({better} is better)"), fontfamily=fam, fontsize=10)
    ax.set_xlabel(label_text(_AXIS.get(measure, measure)), fontfamily=fam, fontsize=8)
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.6)
    ax.margins(x=0.15)
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(4))  # few ticks: dollar labels are wide
    if measure == "tokens":
        ax.xaxis.set_major_formatter(FuncFormatter(format_tokens))


@with_options(FigureOptions)
def plot_diff(diff: RunDiff, **options: Unpack[FigureOptions]) -> Figure:
    """The paired differences of two experiments (module docstring): one panel per measure of
    ``diff.table``, strategies down the y axis, a dot at the mean per-run difference ``B − A``
    and a bar over its 95 % bootstrap interval.

    Args:
        diff: :func:`ctxlab.replay.diff.run_diff` (or :meth:`ReplayResult.diff`).
        ax: one axes per measure; ``fig``; ``title`` (default ``"B vs A, paired per run"``).

    Raises:
        TypeError: an unknown keyword option.  ValueError: ``ax`` not one axes per measure.
    """
    table = diff.table
    measures = table["measure"].unique(maintain_order=True).to_list() or list(DIFF_MEASURES)
    strategies = table["strategy"].unique(maintain_order=True).to_list()
    height = 1.8 + 0.5 * max(len(strategies), 1)
    fig, axes = open_panels(options, 1, len(measures), (3.6 * len(measures), height), sharey=True)
    fam = font_families()
    for ax, measure in zip(axes, measures, strict=True):
        _panel(ax, table.filter(pl.col("measure") == measure), strategies, measure)
    axes[0].set_yticks(range(len(strategies)), [label_text(s) for s in strategies], fontfamily=fam)
    axes[0].set_ylim(len(strategies) - 0.5, -0.5)
    title = options.get("title") or f"B = {diff.b} vs A = {diff.a}, paired per run ({diff.data}; 95 % CI)"
    fig.suptitle(label_text(title), fontfamily=fam, fontsize=11)
    _legend(fig)
    return fig


def write_diff_figure(diff: RunDiff, out_dir: str | Path) -> Path | None:
    """Write :data:`DIFF_FIGURE` (:func:`plot_diff`) into ``out_dir``; ``None`` when nothing was
    compared."""
    if diff.table.is_empty():
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return save_png(plot_diff(diff), out / DIFF_FIGURE)
