"""The frontier figure: cost saving against identifier recall per strategy, one panel per price row
(:func:`plot_frontier`), and its PNG in a report's ``figures/`` folder (:func:`write_frontier_figure`).

The values are those of :func:`ctxlab.analysis.frontier.frontier_frame` (the column registry's
``cost_saving_pct`` and ``needed_recall``).  Up and to the right is better.  A strategy without
an L2 summary (masking) has no identifier recall: it is drawn on a strip left of the axis, at
"no summary".  The uncertainty is :func:`ctxlab.analysis.frontier.frontier_intervals`: a hollow
marker at the mean per-run cost saving and identifier recall with error bars spanning their 95 %
bootstrap intervals (the recall's over the runs with a summarized span); it sits apart from the
pooled marker when long runs dominate the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import polars as pl

from ctxlab.analysis.frontier import frontier_frame, frontier_intervals
from ctxlab.analysis.plotting.figures import save_png
from ctxlab.analysis.plotting.options import FigureOptions, open_panels, with_options
from ctxlab.analysis.plotting.style import STRATEGY_COLORS, font_families, label_text
from ctxlab.replay.columns import axis_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FRONTIER_FIGURE", "MARKERS", "NO_SUMMARY_X", "plot_frontier", "write_frontier_figure"]

#: the file name of the figure in a report's ``figures/`` folder
FRONTIER_FIGURE = "frontier.png"
#: the markers of the strategies, one per round of the colour palette
MARKERS = ("o", "s", "^", "D")
#: where a strategy without a summary (no identifier recall) is drawn on the recall axis
NO_SUMMARY_X = -0.1


def _error_bars(ax: Axes, ci: pl.DataFrame, color: str, marker: str) -> None:
    """The mean per run with its intervals (hollow marker, error bars in x and y)."""
    if ci.is_empty() or ci["cost_saving_mean"][0] is None:
        return
    y, y_low, y_high = (float(ci[c][0]) for c in ("cost_saving_mean", "cost_saving_low", "cost_saving_high"))
    recall = ci["needed_recall_mean"][0]
    x = NO_SUMMARY_X if recall is None else float(recall)
    xerr = None
    if recall is not None:
        xerr = [[x - float(ci["needed_recall_low"][0])], [float(ci["needed_recall_high"][0]) - x]]
    ax.errorbar(
        [x],
        [y],
        yerr=[[y - y_low], [y_high - y]],
        xerr=xerr,
        fmt=marker,
        markersize=7,
        markerfacecolor="white",
        markeredgecolor=color,
        ecolor=color,
        elinewidth=1.2,
        capsize=3,
        zorder=3,
    )


def _panel(
    ax: Axes, frame: pl.DataFrame, intervals: pl.DataFrame, styles: dict[str, tuple[str, str]], key: str
) -> None:
    fam = font_families()
    for name, (color, marker) in styles.items():
        _error_bars(ax, intervals.filter(pl.col("strategy") == name), color, marker)
        rows = frame.filter(pl.col("strategy") == name)
        runs = rows.filter(~pl.col("pooled") & pl.col("cost_saving_pct").is_not_null())
        xs = [NO_SUMMARY_X if r is None else r for r in runs["needed_recall"].to_list()]
        ax.scatter(
            xs, runs["cost_saving_pct"].to_list(), s=16, color=color, marker=marker, alpha=0.45, linewidths=0
        )
        pooled = rows.filter(pl.col("pooled"))
        if pooled.is_empty() or pooled["cost_saving_pct"][0] is None:
            continue
        x = pooled["needed_recall"][0]
        y = float(pooled["cost_saving_pct"][0])
        x = NO_SUMMARY_X if x is None else float(x)
        ax.scatter(
            [x],
            [y],
            s=90,
            color=color,
            marker=marker,
            edgecolors="black",
            linewidths=0.8,
            zorder=4,
            label=label_text(name),
        )
    ax.axhline(0, color="#555555", lw=0.8, ls="--")
    ax.axvspan(NO_SUMMARY_X - 0.06, NO_SUMMARY_X + 0.06, color="#eeeeee", zorder=0)
    ax.set_xlim(NO_SUMMARY_X - 0.08, 1.02)
    ticks = [NO_SUMMARY_X, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    ax.set_xticks(ticks, ["no\nsummary", "0", "0.2", "0.4", "0.6", "0.8", "1"], fontfamily=fam)
    ax.set_xlabel(axis_label("needed_recall"), fontfamily=fam)
    ax.set_ylabel(axis_label("cost_saving_pct"), fontfamily=fam)
    ax.set_title(label_text(key), fontfamily=fam, fontsize=10)
    ax.grid(True, alpha=0.3, linewidth=0.6)


@with_options(FigureOptions)
def plot_frontier(calls_by_price: Mapping[str, pl.DataFrame], **options: Unpack[FigureOptions]) -> Figure:
    """Cost saving (%, y) against identifier recall (x) per strategy, one panel per price row: small
    dots are runs, large dots the strategy pooled over its runs (in the legend; past the colour
    palette a strategy gets the next of :data:`MARKERS`), hollow markers with error bars the
    mean per run and its 95 % bootstrap intervals (module docstring).  A run without an L2
    round has no identifier recall and is drawn at "no summary".

    Args:
        calls_by_price: ``{"provider:model": per-call frame}``, each replayed under that price row
            (:func:`ctxlab.analysis.frontier.frontier_frame`).
        ax: one axes per price row, all of one figure; ``fig``: redraw into this figure;
            ``title``: the figure title (default: ``"Cost saving vs identifier recall (up and right is
            better)"``) — :class:`~ctxlab.analysis.plotting.options.FigureOptions`.

    Returns:
        The figure (a new one, not registered with pyplot, of 5.6 inches wide per panel plus 2.2 for the legend, when no
        ``ax``/``fig`` is given).

    Raises:
        TypeError: an unknown keyword option.  ValueError: as
        :func:`~ctxlab.analysis.frontier.frontier_frame`; ``ax`` not one axes per price row.
    """
    frame = frontier_frame(calls_by_price)
    intervals = frontier_intervals(calls_by_price)
    # 2.2 inches right of the panels for the legend
    fig, axes = open_panels(
        options, 1, len(calls_by_price), (5.6 * len(calls_by_price) + 2.2, 4.8), sharey=True
    )
    names = list(dict.fromkeys(frame["strategy"].to_list()))
    n = len(STRATEGY_COLORS)  # past the palette, the colours come again with another marker
    styles = {s: (STRATEGY_COLORS[i % n], MARKERS[(i // n) % len(MARKERS)]) for i, s in enumerate(names)}
    for ax, key in zip(axes, calls_by_price, strict=True):
        where = pl.col("price_row") == key
        _panel(ax, frame.filter(where), intervals.filter(where), styles, key)
    title = options.get("title") or "Cost saving vs identifier recall (up and right is better)"
    fam = font_families()
    fig.suptitle(label_text(title), fontfamily=fam, fontsize=11)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:  # one legend for the panels: large dots pooled per strategy, small dots its runs
        from matplotlib.layout_engine import ConstrainedLayoutEngine

        legend: dict[str, Any] = {
            "title": "pooled per strategy\n(small: its runs;\nhollow with bars: the\nsource-balanced mean\nper run, 95 % CI)",
            "prop": {"family": fam, "size": 8},
            "title_fontsize": 8,
        }
        if isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
            # right of the panels, where no point or interval can be (inside, a fixed corner and
            # then matplotlib's "best" both sat on an interval: the s38 and s39 trials; under
            # them it met the note save_png writes at the bottom)
            fig.legend(handles, labels, loc="outside right upper", frameon=False, **legend)
        else:  # the caller's own axes without a layout engine: right of the last panel, outside
            # it too ("best" inside still sat on points); a saved or inline figure takes it whole
            axes[-1].legend(
                handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, **legend
            )
    return fig


def write_frontier_figure(
    calls: pl.DataFrame, out_dir: str | Path, *, price_key: str, note: str | None = None
) -> Path | None:
    """Write :data:`FRONTIER_FIGURE` (:func:`plot_frontier` of one price row) into ``out_dir`` and
    return its path; ``None`` when ``calls`` is empty or has no cost (no price row).  ``note``: a
    line on the figure (what wrote the summaries)."""
    if calls.is_empty() or calls["cost_usd"].is_null().all():
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return save_png(plot_frontier({price_key: calls}), out / FRONTIER_FIGURE, note)
