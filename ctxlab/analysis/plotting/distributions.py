"""Per-run plots: the saving by strategy as a per-run distribution (:func:`plot_savings`), a
transcript × strategy heatmap (:func:`plot_run_heatmap`) and per-run saving or cost against
identifier recall (:func:`plot_recall_scatter`).

A pooled bar hides that most runs may never reach T; these plots show every run.  They read the
per-call frame, aggregate it per run with the registry (``summary_frame``) and use the runs of
:func:`ctxlab.replay.stats.pooled_runs` (default: the real ones); each title says which.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

import polars as pl

from ctxlab.analysis.plotting.options import Panel, PlotOptions, with_options
from ctxlab.analysis.plotting.style import STRATEGY_COLORS, fit_margins, font_families, label_text, shorten
from ctxlab.replay.columns import axis_label, unit
from ctxlab.replay.per_run import per_run_stats, reached_runs
from ctxlab.replay.stats import NO_COMPRESSION, per_run_values, pooled_runs
from ctxlab.replay.table import summary_frame

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ROTATE_NAMES_OVER", "plot_recall_scatter", "plot_run_heatmap", "plot_savings"]

#: strategy names longer than this many characters turn the x labels of :func:`plot_savings`
ROTATE_NAMES_OVER = 10
_GREY = "#9a9a9a"


def _tick(name: str) -> str:
    return "no\ncompression" if name == NO_COMPRESSION else name


@with_options(PlotOptions)
def plot_savings(
    calls: pl.DataFrame,
    *,
    data: str | Sequence[str] = "real",
    threshold: float | None = None,
    **options: Unpack[PlotOptions],
) -> Figure:
    """The per-run token saving by strategy, "no compression" first: a box (median, quartiles)
    over the runs that reached T, every run as a point (grey: a run below T, which never
    compresses and is shown apart), and the pooled saving ``100 × (1 − Σ sent / Σ raw)`` as a
    black diamond.  Each x label says "n of N reached T".

    Strategy names longer than :data:`ROTATE_NAMES_OVER` characters are written at an angle;
    on a figure made here, the bottom margin grows to fit them.

    Args:
        calls: the per-call frame.
        data: which runs (:func:`ctxlab.replay.stats.pooled_runs`; default the real ones).
        threshold: T in tokens for runs that record none (foreign middlewares).
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title (default: ``"Saving per run by strategy (<which runs>)"``).

    Raises:
        TypeError: an unknown keyword option.  ValueError: a bad ``data``.
    """
    summary = summary_frame(calls)
    pool = pooled_runs(summary, data)
    stats = per_run_stats(summary, data=data, threshold=threshold)
    names = stats["strategy"].to_list()
    longest = max((len(n) for n in names if n != NO_COMPRESSION), default=0)
    rotate = longest > ROTATE_NAMES_OVER
    size = (max(5.0, 1.3 * max(1, len(names)) + 2.5), 4.6 + (0.04 * longest if rotate else 0.0))
    panel = Panel.open(options, size)
    fig, ax = panel.fig, panel.ax
    fam = font_families()
    rng = random.Random(0)  # the jitter of the points: the same figure every time
    labels = []
    for i, row in enumerate(stats.iter_rows(named=True)):
        name = str(row["strategy"])
        color = "#555555" if name == NO_COMPRESSION else STRATEGY_COLORS[(i - 1) % len(STRATEGY_COLORS)]
        values = per_run_values(pool.summary, name, "saving_pct")
        reached = reached_runs(pool.summary, name, threshold)
        hit = [v for t, v in values.items() if v is not None and t in reached]
        below = [v for t, v in values.items() if v is not None and t not in reached]
        if hit:
            ax.boxplot(
                [hit],
                positions=[i],
                widths=0.5,
                showfliers=False,
                patch_artist=True,
                boxprops={"facecolor": color, "alpha": 0.25, "edgecolor": color},
                medianprops={"color": color, "linewidth": 1.6},
                whiskerprops={"color": color},
                capprops={"color": color},
            )
        for group, c, lab in (
            (hit, color, "a run that reached T"),
            (below, _GREY, "a run below T (never compresses)"),
        ):
            xs = [i + rng.uniform(-0.18, 0.18) for _ in group]
            ax.scatter(xs, group, s=16, color=c, alpha=0.8, zorder=3, label=lab if i == 1 else None)
        if row["pooled"] is not None:
            ax.scatter(
                [i],
                [row["pooled"]],
                marker="D",
                s=42,
                color="black",
                zorder=4,
                label="pooled (Σ sent / Σ raw)" if i == 1 else None,
            )
            ax.annotate(
                f"{row['pooled']:.1f} %",
                (i, row["pooled"]),
                xytext=(8, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
                fontfamily=fam,
                zorder=5,  # over the box's median line, on a white ground: never read struck through
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
            )
        labels.append(label_text(f"{_tick(name)}\n{row['reached']} of {row['runs']} reached T"))
    if rotate:
        ax.set_xticks(
            range(len(names)), labels, fontfamily=fam, rotation=30, ha="right", rotation_mode="anchor"
        )
    else:
        ax.set_xticks(range(len(names)), labels, fontfamily=fam)
    ax.set_xlim(-0.75, max(1, len(names)) - 0.25)
    ax.set_ylabel("tokens saved per run (% of raw)", fontfamily=fam)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.grid(True, axis="y", alpha=0.3, linewidth=0.6)
    ax.set_title(
        label_text(panel.title or f"Saving per run by strategy ({pool.label})"), fontfamily=fam, fontsize=11
    )
    if len(names) > 1:
        # beside the axes, never over a run's point (the trial saw it cover ars's points at ~80 %)
        ax.legend(
            loc="upper left", bbox_to_anchor=(1.01, 1.0), prop={"family": fam, "size": 8}, framealpha=0.85
        )
    if options.get("ax") is None and rotate:
        fit_margins(fig, ax)
    return fig


@with_options(PlotOptions)
def plot_run_heatmap(
    calls: pl.DataFrame,
    *,
    column: str = "saving_pct",
    data: str | Sequence[str] = "real",
    **options: Unpack[PlotOptions],
) -> Figure:
    """A transcript × strategy heatmap of one per-run column (default ``saving_pct``), each cell
    written with its value ("no compression" first; empty cells blank).

    Raises:
        KeyError: ``column`` is not a per-run column.  TypeError: an unknown keyword option.
    """
    summary = summary_frame(calls)
    pool = pooled_runs(summary, data)
    names = [NO_COMPRESSION, *pool.summary["strategy"].unique(maintain_order=True).to_list()]
    grid = {n: per_run_values(pool.summary, n, column) for n in names}
    transcripts = list(grid[names[0]]) if names else []
    panel = Panel.open(options, (1.2 * len(names) + 4.0, 0.32 * len(transcripts) + 2.0))
    fig, ax = panel.fig, panel.ax
    fam = font_families()
    matrix = [[grid[n].get(t) for n in names] for t in transcripts]
    shown = [[float("nan") if v is None else v for v in row] for row in matrix]
    image = ax.imshow(shown, aspect="auto", cmap="viridis")
    known = [v for row in matrix for v in row if v is not None]
    middle = (min(known, default=0.0) + max(known, default=0.0)) / 2
    for y, row in enumerate(matrix):
        for x, v in enumerate(row):
            if v is not None:
                text = f"{v:.3f}" if unit(column) == "share" else f"{v:,.1f}"
                text = text.removeprefix("-") if float(text.replace(",", "")) == 0 else text  # no "-0.0"
                ink = "white" if v < middle else "black"
                ax.text(x, y, text, ha="center", va="center", fontsize=7, color=ink)
    ticks = [label_text(_tick(n)) for n in names]
    if max((len(n) for n in names if n != NO_COMPRESSION), default=0) > ROTATE_NAMES_OVER:
        ax.set_xticks(range(len(names)), ticks, fontfamily=fam, fontsize=8, rotation=30, ha="right")
    else:
        ax.set_xticks(range(len(names)), ticks, fontfamily=fam, fontsize=8)
    ax.set_yticks(
        range(len(transcripts)), [label_text(shorten(t, 48)) for t in transcripts], fontfamily=fam, fontsize=7
    )
    fig.colorbar(image, ax=ax, label=axis_label(column))
    ax.set_title(label_text(panel.title or f"{column} per run ({pool.label})"), fontfamily=fam, fontsize=11)
    return fig


@with_options(PlotOptions)
def plot_recall_scatter(
    calls: pl.DataFrame,
    *,
    y: str = "saving_pct",
    data: str | Sequence[str] = "real",
    **options: Unpack[PlotOptions],
) -> Figure:
    """Per-run ``y`` (default ``saving_pct``; ``cost_saving_pct`` for dollars) against the run's
    ``needed_recall``, one colour per strategy; runs without an L2 round have no recall and are
    left out (the title counts them).

    Raises:
        KeyError: ``y`` is not a per-run column.  TypeError: an unknown keyword option.
    """
    summary = summary_frame(calls)
    pool = pooled_runs(summary, data)
    panel = Panel.open(options, (7.5, 4.8))
    fig, ax = panel.fig, panel.ax
    fam = font_families()
    shown = missing = 0
    for i, name in enumerate(pool.summary["strategy"].unique(maintain_order=True).to_list()):
        xs = per_run_values(pool.summary, name, "needed_recall")
        ys = per_run_values(pool.summary, name, y)
        pts = [(x, yv) for t, x in xs.items() if x is not None and (yv := ys.get(t)) is not None]
        missing += len(xs) - len(pts)
        shown += len(pts)
        if pts:
            ax.scatter(
                [p[0] for p in pts],
                [p[1] for p in pts],
                s=30,
                alpha=0.85,
                color=STRATEGY_COLORS[i % len(STRATEGY_COLORS)],
                label=label_text(name),
            )
    ax.set_xlabel(axis_label("needed_recall"), fontfamily=fam)
    ax.set_ylabel(axis_label(y), fontfamily=fam)
    ax.set_xlim(-0.05, 1.05)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    head = (
        panel.title
        or f"{y} against identifier recall per run ({pool.label}; {missing} runs without L2 left out)"
    )
    ax.set_title(label_text(head), fontfamily=fam, fontsize=10)
    if shown:
        ax.legend(loc="best", prop={"family": fam, "size": 8}, framealpha=0.85)
    return fig
