"""The stall figure of a replay with a latency model (issue 34): how long each L2 round waited on
compression, per strategy (:func:`plot_stall`), and its PNG in a report's ``figures/`` folder
(:func:`write_stall_figure`).

It reads the per-call ``stall_s`` column (simulated seconds a call waited on compression beyond
the middleware's CPU, :mod:`ctxlab.replay.columns.stall`) of the calls whose ``level`` is ``L2``;
the 50 ms line is :data:`~ctxlab.replay.columns.stall.NO_STALL_SECONDS`, and each row's label
gives the round count, the share under that line and the 99th percentile by the same rules as
the per-run columns ``l2_no_stall_share`` and ``l2_stall_p99_s`` (nearest rank above), so the
figure and the executive summary's stall line say the same numbers.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

import polars as pl

from ctxlab.analysis.plotting.figures import save_png
from ctxlab.analysis.plotting.options import PlotOptions, with_options
from ctxlab.analysis.plotting.style import fit_margins, font_families, label_text, new_axes
from ctxlab.replay.columns.stall import NO_STALL_SECONDS
from ctxlab.replay.stats import pooled_runs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["STALL_FIGURE", "l2_stalls", "plot_stall", "write_stall_figure"]

#: the file name of the figure in a report's ``figures/`` folder
STALL_FIGURE = "stall_per_l2_round.png"


def l2_stalls(calls: pl.DataFrame) -> dict[str, list[float]]:
    """Strategy -> the ``stall_s`` of its L2 rounds (seconds, in call order), for every strategy
    of ``calls`` (first-seen order; a strategy without an L2 round maps to ``[]``); ``{}`` when
    the frame has no stall column or no value in it (the replay had no latency model)."""
    if "stall_s" not in calls.columns or calls["stall_s"].is_null().all():
        return {}
    out: dict[str, list[float]] = {s: [] for s in calls["strategy"].unique(maintain_order=True).to_list()}
    rounds = calls.filter((pl.col("level") == "L2") & pl.col("stall_s").is_not_null())
    for strategy, stall in rounds.select("strategy", "stall_s").iter_rows():
        out[str(strategy)].append(float(stall))
    return out


def _p99(values: list[float]) -> float:
    """The 99th percentile by nearest rank above, as polars' ``quantile(0.99, "higher")``."""
    return float(pl.Series(values).quantile(0.99, "higher") or 0.0)


@with_options(PlotOptions)
def plot_stall(calls: pl.DataFrame, *, over: str = "all runs", **options: Unpack[PlotOptions]) -> Figure:
    """Each L2 round's wait on compression (simulated seconds, x) per strategy (rows): one dot
    per round, jittered within its row, the median as a bar, the 50 ms line dashed; the row's
    label says how many rounds, the share under 50 ms and the p99.

    Args:
        calls: the per-call frame with the ``stall`` measure's columns (a replay with
            ``--summarizer-latency``); strategies without an L2 round get an empty row.
        over: which runs the calls pool, for the title (e.g. ``"real runs of 240 transcript(s)"``, :meth:`~ctxlab.replay.stats.PooledRuns.over`).
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title.

    Returns:
        The figure of ``ax``, or a new one (not registered with pyplot).

    Raises:
        ValueError: ``calls`` has no stall value (no latency model): there is nothing to draw.
        TypeError: an unknown keyword option.
    """
    stalls = l2_stalls(calls)
    if not stalls:
        raise ValueError("calls has no stall_s value: replay with --summarizer-latency to measure the stall")
    names = list(stalls)
    given = options.get("ax")
    fig, ax = new_axes(given, (8.5, max(2.4, 0.75 * len(names) + 1.6)))
    fam = font_families()
    top = max([v for vs in stalls.values() for v in vs] + [NO_STALL_SECONDS * 4])
    labels = []
    for row, name in enumerate(names):
        values = stalls[name]
        if values:
            jitter = [((i * 0.618) % 1.0 - 0.5) * 0.5 for i in range(len(values))]
            ax.scatter(
                values, [row + j for j in jitter], s=14, alpha=0.6, color="#1f77b4", linewidths=0, zorder=3
            )
            median = statistics.median(values)
            ax.plot([median, median], [row - 0.32, row + 0.32], color="#d62728", linewidth=2)
            under = sum(v < NO_STALL_SECONDS for v in values) / len(values)
            said = f"{len(values)} L2 round(s), {under:.0%} < {NO_STALL_SECONDS * 1000:g} ms, p99 {_p99(values):.2f} s"
        else:
            said = "no L2 round"
        labels.append(f"{label_text(name)}\n{said}")
    ax.axvline(NO_STALL_SECONDS, color="#555555", linestyle="--", linewidth=1)
    ax.annotate(
        f"{NO_STALL_SECONDS * 1000:g} ms",
        (NO_STALL_SECONDS, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(3, -12),
        textcoords="offset points",
        fontsize=8,
        color="#555555",
        fontfamily=fam,
    )
    ax.plot([], [], color="#d62728", linewidth=2, label="median")
    ax.scatter([], [], s=14, color="#1f77b4", label="one L2 round")
    ax.set_yticks(range(len(names)), labels, fontfamily=fam, fontsize=8.5)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(-0.03 * top, top * 1.08)
    ax.set_xlabel("seconds the L2 round waited on compression (simulated)", fontfamily=fam)
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.6)
    head = options.get("title") or f"Stall per L2 round by strategy ({over})"
    ax.set_title(label_text(head), fontfamily=fam, fontsize=10)
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncol=2,
        prop={"family": fam, "size": 8},
        frameon=False,
    )  # under the axes: a dot may sit anywhere inside them
    if given is None:
        fit_margins(fig, ax)
    return fig


def write_stall_figure(
    calls: pl.DataFrame, out_dir: str | Path, *, data: str = "real", note: str | None = None
) -> Path | None:
    """Write :data:`STALL_FIGURE` (:func:`plot_stall`) into ``out_dir`` over the runs ``data``
    names (:func:`ctxlab.replay.stats.pooled_runs`; the title says which) and return its path;
    ``None`` when those calls have no stall value (no ``--summarizer-latency``)."""
    pool = pooled_runs(calls, data)
    if not l2_stalls(pool.summary):
        return None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig = plot_stall(pool.summary, over=pool.over())
    return save_png(fig, out / STALL_FIGURE, note)
