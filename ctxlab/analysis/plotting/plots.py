"""The plots of a replay into one axes each: one run's token budget (:func:`plot_budget`) and
its view split by part (:func:`plot_view_parts`), strategies side by side (:func:`plot_strategies`),
the curve of a settings sweep (:func:`plot_sweep`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

import polars as pl

from ctxlab.analysis.plotting.options import Panel, PlotOptions, with_options
from ctxlab.analysis.plotting.runs import check_names, one_value, pick_run, select_calls
from ctxlab.analysis.plotting.style import (
    COLORS,
    PART_COLORS,
    STRATEGY_COLORS,
    STRATEGY_MARKERS,
    STRATEGY_STYLES,
    font_families,
    label_text,
    shorten,
    threshold_lines,
    tokens_axis,
    use_log,
)
from ctxlab.replay.columns import VIEW_PARTS, axis_label
from ctxlab.replay.failures import counted_declines

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "plot_budget",
    "plot_strategies",
    "plot_sweep",
    "plot_view_parts",
]


@with_options(PlotOptions)
def plot_budget(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    *,
    threshold: float | None = None,
    l2_threshold: float | None = None,
    yscale: str = "auto",
    **options: Unpack[PlotOptions],
) -> Figure:
    """Token budget per model call of one run: raw vs sent lines, horizontal T and T2 lines,
    markers on the calls that ran L1 and L2, and other markers (each in the legend) on the calls
    whose summary failed or was a fallback text, was rejected, or was declined.

    Args:
        calls: the per-call frame (filtered to one run, or name it with ``transcript``/``strategy``).
        transcript, strategy: which run (default: the first of each in ``calls``).
        threshold, l2_threshold: T and T2 in tokens (default: the rows' ``threshold`` columns).
        yscale: ``"linear"``, ``"log"``, or ``"auto"`` (log when raw peaks above 10x sent, so that
            a heavily compressed run stays readable).
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title (default: ``"<transcript>  [<strategy>]"``).

    Returns:
        The figure of ``ax``, or a new one.

    Raises:
        ValueError: ``yscale`` is none of the three; ``transcript`` or ``strategy`` is named but
            not in ``calls``.
        TypeError: an unknown keyword option.
    """
    run = pick_run(calls, transcript, strategy)
    df = run.calls
    raw_peak = max(df["raw_tokens"].to_list(), default=0)
    sent_peak = max(df["view_tokens"].to_list(), default=0)
    log = use_log(yscale, raw_peak, sent_peak)
    panel = Panel.open(options)
    ax = panel.ax
    x = df["call_index"].to_list()
    # raw is drawn dashed on top, so that it stays visible where nothing was compressed
    same = df.height > 0 and (df["view_tokens"] == df["raw_tokens"]).all()
    sent_label = "sent (view) = raw: nothing compressed" if same else "sent (view)"
    lone = len(x) == 1  # a line of one point draws nothing: mark the point
    ax.plot(
        x,
        df["view_tokens"].to_list(),
        color=COLORS["sent"],
        linewidth=2.2,
        label=sent_label,
        zorder=2,
        marker="o" if lone else None,
        markersize=9,
    )
    ax.plot(
        x,
        df["raw_tokens"].to_list(),
        color=COLORS["raw"],
        linestyle="--",
        linewidth=1.4,
        label="raw (uncompressed)",
        zorder=3,
        marker="x" if lone else None,
        markersize=9,
    )
    T = threshold if threshold is not None else (one_value(df["threshold"]) if df.height else None)
    T2 = l2_threshold if l2_threshold is not None else (one_value(df["l2_threshold"]) if df.height else None)
    peak = max([*df["raw_tokens"].to_list(), *df["view_tokens"].to_list(), 1])
    top = threshold_lines(ax, T, T2, peak, log)
    size = 60 if len(x) <= 80 else 34  # smaller markers on long runs
    for label, sel, marker, color in _round_marks(df):
        if sel.height:
            ax.scatter(
                sel["call_index"].to_list(),
                sel["view_tokens"].to_list(),
                marker=marker,
                s=size * (1.5 if marker == "X" else 1.0),
                color=color,
                edgecolor="black",
                linewidth=0.6,
                zorder=6 if marker != "^" else 5,
                label=f"{label} ({sel.height})",
            )
    tokens_axis(ax, log)
    if log:
        low = min(
            [v for v in (*df["view_tokens"].to_list(), *(t for t in (T, T2) if t)) if v and v > 0], default=1
        )
        ax.set_ylim(max(1.0, low * 0.6), top * 1.5)
    else:
        ax.set_ylim(0, top * 1.08)
    if x:
        ax.set_xlim(min(x) - 0.5, max(x) + 0.5)
    return panel.close(run.title())


def _null(df: pl.DataFrame, column: str) -> pl.Expr:
    return pl.col(column).is_null() if column in df.columns else pl.lit(True)


def _round_marks(df: pl.DataFrame) -> list[tuple[str, pl.DataFrame, str, str]]:
    """The calls of a run's compression rounds by what came of them, each with its marker and
    colour (``ctxlab.replay.failures``): L1 rounds; L2 rounds with a summary; failed or fallback
    summaries (the summarizer failed, or a foreign middleware committed its canned text); rejected
    summaries (not committed: bigger than their span); declined summaries (a round that wanted a
    summary and sent a view above T2 without one)."""
    failed = ~(_null(df, "summary_error") & _null(df, "summary_fallback"))
    rejected = ~_null(df, "summary_rejected")
    declined = counted_declines(df.columns)
    return [
        ("L1 call", df.filter((pl.col("level") == "L1") & ~rejected & ~declined), "^", COLORS["L1"]),
        ("L2 call", df.filter((pl.col("level") == "L2") & ~failed), "D", COLORS["L2"]),
        ("failed or fallback summary", df.filter(failed), "X", COLORS["failed"]),
        ("rejected summary (not committed)", df.filter(rejected & ~failed), "s", COLORS["rejected"]),
        (
            "declined summary (above T2, none made)",
            df.filter(declined & ~rejected & ~failed),
            "v",
            COLORS["declined"],
        ),
    ]


@with_options(PlotOptions)
def plot_view_parts(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    *,
    show_raw: bool = False,
    thresholds: bool = False,
    **options: Unpack[PlotOptions],
) -> Figure:
    """Stacked areas of the view (the request sent) split by part per call, in tokens: system
    (+ tool schemas), user, assistant, tool results, summary.

    Args:
        calls, transcript, strategy: the per-call frame and which run, as for :func:`plot_budget`.
        show_raw: add the raw request as a dashed line.
        thresholds: add the T and T2 lines (the rows' ``threshold`` columns, as in :func:`plot_budget`).
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title (default: ``"<transcript>  [<strategy>]: view by part"``).

    Raises:
        TypeError: an unknown keyword option.
        ValueError: ``transcript`` or ``strategy`` is named but not in ``calls``.
    """
    run = pick_run(calls, transcript, strategy)
    df = run.calls
    panel = Panel.open(options)
    ax = panel.ax
    x = df["call_index"].to_list()
    if df.height:
        ys = [df[f"view_{p}_tokens"].to_list() for p in VIEW_PARTS]
        labels = [p if p != "system" else "system + tools" for p in VIEW_PARTS]
        lone = len(x) == 1  # an area over one point has no width: a stacked bar shows it
        if lone:
            bottom = 0.0
            for y, label, part in zip(ys, labels, VIEW_PARTS, strict=True):
                ax.bar(x, y, bottom=bottom, width=0.6, color=PART_COLORS[part], alpha=0.85, label=label)
                bottom += float(y[0] or 0)
        else:
            ax.stackplot(
                x, *ys, labels=labels, colors=[PART_COLORS[p] for p in VIEW_PARTS], alpha=0.85, linewidth=0
            )
        if show_raw:
            ax.plot(
                x,
                df["raw_tokens"].to_list(),
                color="black",
                linestyle="--",
                linewidth=1.0,
                label="raw",
                marker="x" if lone else None,
            )
        ax.set_xlim(min(x) - 0.5, max(x) + 0.5) if lone else ax.set_xlim(min(x), max(x))
        if thresholds:
            peak = max([*df["view_tokens"].to_list(), *(df["raw_tokens"].to_list() if show_raw else []), 1])
            top = threshold_lines(ax, one_value(df["threshold"]), one_value(df["l2_threshold"]), peak, False)
            ax.set_ylim(0, top * 1.08)
    tokens_axis(ax)
    return panel.close(run.title(": view by part"))


@with_options(PlotOptions)
def plot_strategies(
    calls: pl.DataFrame,
    transcript: str | None = None,
    *,
    strategies: Sequence[str] | None = None,
    yscale: str = "auto",
    **options: Unpack[PlotOptions],
) -> Figure:
    """Sent tokens per call of one transcript, one line per strategy (raw as a dashed line).

    Each strategy has its own colour, line style and marker, and lines drawn first are wider:
    two strategies that send the same tokens (an estimator variant that never changes a
    decision, say) show as a wide line with a narrower one of another style inside it, and
    their markers sit at different calls.

    Args:
        calls: the per-call frame.
        transcript: which transcript (default: the first in ``calls``).
        strategies: which strategies, in this order (default: all of the transcript's, first seen first).
        yscale: as for :func:`plot_budget`.
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title (default: ``"<transcript>: strategies"``).

    Raises:
        ValueError: ``yscale`` is none of ``"auto"``, ``"linear"``, ``"log"``; ``transcript`` or
            one of ``strategies`` is named but not in ``calls``.
        TypeError: an unknown keyword option.
    """
    if transcript is None and calls.height:
        transcript = calls["transcript"][0]
    df = select_calls(calls, transcript, None)
    names = list(strategies or df["strategy"].unique(maintain_order=True).to_list())
    check_names(calls, "strategy", names)  # misspelt: in no run at all (a failed run just has no line)
    panel = Panel.open(options)
    ax = panel.ax
    if df.height:
        first = df.filter(pl.col("strategy") == names[0]) if names else df
        ax.plot(
            first["call_index"].to_list(),
            first["raw_tokens"].to_list(),
            color=COLORS["raw"],
            linestyle="--",
            linewidth=1.4,
            label="raw (uncompressed)",
            zorder=3 + len(names),  # on top: visible where a strategy sends everything
            marker="x" if first.height == 1 else None,  # a one-call run: a point, not an empty line
        )
    n = max(1, len(names))
    for i, name in enumerate(names):
        sel = df.filter(pl.col("strategy") == name)
        every = max(1, sel.height // 10)  # about ten markers per line, shifted per strategy
        ax.plot(
            sel["call_index"].to_list(),
            sel["view_tokens"].to_list(),
            linewidth=1.5 + 1.5 * (n - 1 - i) / max(1, n - 1),  # 3.0 down to 1.5
            linestyle=STRATEGY_STYLES[i % len(STRATEGY_STYLES)],
            marker=STRATEGY_MARKERS[i % len(STRATEGY_MARKERS)],
            markersize=5,
            markevery=((i * every) // n, every),
            color=STRATEGY_COLORS[i % len(STRATEGY_COLORS)],
            label=label_text(f"{name} (sent)"),
            zorder=2 + i,
        )
    T = one_value(df["threshold"]) if df.height else None
    peak = max([*df["raw_tokens"].to_list(), 1]) if df.height else 1
    log = use_log(yscale, peak, max(df["view_tokens"].to_list(), default=0))
    threshold_lines(ax, T, None, peak, log)
    tokens_axis(ax, log)
    return panel.close(f"{shorten(str(transcript))}: strategies")


@with_options(PlotOptions)
def plot_sweep(
    frame: pl.DataFrame,
    *,
    setting: str = "summary_l2_trigger_ratio",
    **options: Unpack[PlotOptions],
) -> Figure:
    """The curve of a sweep (:func:`ctxlab.replay.sweep.sweep`): saving % (left axis, line) and L2
    rounds (right axis, bars) against the setting's value.

    Args:
        frame: the sweep's frame.
        setting: the swept field (the x label).
        ax: draw here instead of a new figure (:class:`~ctxlab.analysis.plotting.options.PlotOptions`).
        title: the axes title (default: ``"sweep over <setting>"``).

    Returns:
        The figure.

    Raises:
        TypeError: an unknown keyword option.
    """
    from matplotlib.ticker import MaxNLocator

    ax = options.get("ax")
    title = options.get("title")
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9, 4.8), dpi=100, layout="constrained")
        ax = fig.add_subplot()
    fig = ax.figure  # type: ignore[assignment]
    x = frame["value"].to_list()
    width = 0.6 * (min(b - a for a, b in itertools.pairwise(x)) if len(x) > 1 else 0.1)
    right = ax.twinx()
    bars = right.bar(x, frame["l2_rounds"].to_list(), width=width, color=COLORS["L2"], alpha=0.3)
    right.set_ylabel(axis_label("l2_rounds"))
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    (line,) = ax.plot(x, frame["saving_pct"].to_list(), marker="o", color=COLORS["sent"], linewidth=2)
    ax.set_zorder(right.get_zorder() + 1)
    ax.patch.set_visible(False)
    ratio = setting == "summary_l2_trigger_ratio"
    if ratio and "T2" in frame.columns:  # each ratio with the T2 it makes, in tokens
        ax.set_xticks(x, [f"{v:g}\n{t2:,.0f}" for v, t2 in zip(x, frame["T2"].to_list(), strict=True)])
        ax.set_xlabel("summary_l2_trigger_ratio (T2 / T), and below it T2 in tokens")
    else:
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel(setting + (" (T2 / T)" if ratio else ""))
    ax.set_ylabel(axis_label("saving_pct"))
    ax.set_ylim(0, max(100.0, *(v or 0 for v in frame["saving_pct"].to_list())))
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.legend([line, bars], ["saving %", "L2 rounds"], loc="upper right", framealpha=0.85)
    ax.set_title(label_text(title or f"sweep over {setting}"), fontfamily=font_families(), fontsize=11)
    return fig
