"""Whole figures and files: the two-panel budget figure of the notebooks and the explorer
(:func:`budget_figure`), and the report's PNG files (:func:`figure_name`, :func:`save_png`,
:func:`write_figures`)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import polars as pl

from ctxlab.analysis.plotting.distributions import plot_savings
from ctxlab.analysis.plotting.options import FigureOptions, PlotOptions, open_panels, with_options
from ctxlab.analysis.plotting.plots import plot_budget, plot_strategies, plot_view_parts
from ctxlab.analysis.plotting.runs import one_value, pick_run
from ctxlab.analysis.plotting.style import font_families, label_text, use_log

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.figure import Figure

__all__ = [
    "budget_figure",
    "budget_png_figure",
    "figure_name",
    "reaching_runs",
    "run_threshold",
    "save_png",
    "transcript_yscale",
    "write_figures",
]


@with_options(FigureOptions)
def budget_figure(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    **options: Unpack[FigureOptions],
) -> Figure:
    """The token budget of one run in two panels sharing the x axis (model calls).

    Top: the request view split by part, stacked (:func:`plot_view_parts`).  Bottom: raw vs
    sent tokens, T and T2, and markers on the calls where L1 and L2 ran (:func:`plot_budget`).

    Args:
        calls: the per-call frame of a replay (``ReplayResult.frame()``).
        transcript, strategy: which run (default: the first in ``calls``).
        ax: the two panels' axes (top, bottom), all of one figure, instead of a new figure.
        fig: redraw into this figure (its two axes are cleared) instead of making a new one;
            used by :mod:`ctxlab.analysis.widgets` to update one figure in place.
        title: a figure title (default: ``"<transcript>  [<strategy>]"``).

    ``ax``, ``fig`` and ``title`` are :class:`~ctxlab.analysis.plotting.options.FigureOptions`.

    Returns:
        The figure (a ``matplotlib.figure.Figure`` not registered with pyplot when new).

    Raises:
        TypeError: an unknown keyword option.  ValueError: ``ax`` and ``fig`` both, or ``ax`` not
        two axes of one figure.
    """
    fig, (top, bottom) = open_panels(options, 2, 1, (10, 7.6), sharex=True)
    run = pick_run(calls, transcript, strategy)
    plot_view_parts(
        calls,
        run.transcript,
        run.strategy,
        ax=top,
        title="request view by part (stacked), thresholds",
        show_raw=True,
        thresholds=True,
    )
    plot_budget(
        calls, run.transcript, run.strategy, ax=bottom, title="raw vs sent, thresholds, compression rounds"
    )
    top.set_xlabel("")
    top.tick_params(labelbottom=False)
    fig.suptitle(
        label_text(options.get("title") or run.title()),
        fontfamily=font_families(),
        fontsize=12,
    )
    return fig


def figure_name(*parts: str) -> str:
    """A safe, unique-enough PNG file name for a run: letters and digits of any script (a Chinese
    transcript's name stays readable), ``._-``, at most ~100 bytes of UTF-8
    (:func:`ctxlab.replay.names.safe_name` of the parts joined by ``__``)."""
    from ctxlab.replay import safe_name

    return safe_name("__".join(parts), limit=99, empty="figure") + ".png"


def save_png(fig: Figure, path: Path, note: str | None = None) -> Path:
    """Render ``fig`` with the Agg canvas to ``path`` as PNG (100 dpi) and return ``path``.  Labels
    go through :func:`~ctxlab.analysis.plotting.style.label_text`, so no glyph is missing (a
    missing-glyph warning is not silenced: it would be a bug).  ``note``: a line written small at
    the figure's bottom left (the report names what wrote the summaries on every figure)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    if note:
        # below everything the figure draws (its x label included): the saved image grows to
        # hold the line instead of writing it over the axis label
        # wrapped to the figure's width (7-pt text is about 4.3 px a character at 100 dpi), so a
        # long note adds lines below instead of widening the image beside the plot
        chars = max(40, int(fig.get_figwidth() * 100 / 4.3))
        fig.text(
            0.005,
            -0.005,
            label_text(textwrap.fill(note, width=chars, break_long_words=False)),
            fontsize=7,
            color="#555555",
            ha="left",
            va="top",
            fontfamily=font_families(),
        )
    # the saved image holds everything drawn: a long tick label (a strategy's name on diff.png's
    # y axis) is never cut at the edge
    fig.savefig(path, dpi=100, bbox_inches="tight", pad_inches=0.08, pil_kwargs={"compress_level": 3})
    return path


def reaching_runs(calls: pl.DataFrame, settings: Any = None) -> list[tuple[str, str]]:
    """The runs (transcript, strategy) whose raw request reaches the entry threshold T in some
    call (the row's ``threshold``, else ``settings.entry_threshold_tokens``; a run with neither
    counts as reaching), in first-seen order."""
    out = []
    for (transcript, strategy), df in calls.group_by("transcript", "strategy", maintain_order=True):
        T = run_threshold(df, settings)
        if T is None or max(df["raw_tokens"].to_list(), default=0) >= T:
            out.append((str(transcript), str(strategy)))
    return out


def run_threshold(run_calls: pl.DataFrame, settings: Any = None) -> float | None:
    """T of one run in tokens: its rows' ``threshold``, else ``settings.entry_threshold_tokens``
    (a foreign middleware's rows have none, but the baselines trigger at the settings' T:
    ``ctxlab-baselines``), else ``None``."""
    return one_value(run_calls["threshold"]) or getattr(settings, "entry_threshold_tokens", None)


@with_options(PlotOptions)
def budget_png_figure(
    calls: pl.DataFrame,
    transcript: str,
    strategy: str,
    settings: Any = None,
    yscale: str = "auto",
    **options: Unpack[PlotOptions],
) -> Figure:
    """The report's budget figure of one run (:func:`plot_budget`, same options and ``yscale``),
    with the T line of :func:`run_threshold` also for a run whose rows carry none (LangChain's and
    DeepAgents' summarization)."""
    run = calls.filter((pl.col("transcript") == transcript) & (pl.col("strategy") == strategy))
    own = one_value(run["threshold"]) if run.height else None
    threshold = None if own else run_threshold(run, settings)
    return plot_budget(calls, transcript, strategy, threshold=threshold, yscale=yscale, **options)


def transcript_yscale(calls: pl.DataFrame, transcript: str) -> str:
    """One token axis for every figure of ``transcript``: ``"log"`` when any strategy's own
    figure would be logarithmic (:func:`~ctxlab.analysis.plotting.style.use_log` ``"auto"``: the raw
    peak above 10× that strategy's sent peak), else ``"linear"``, so that two strategies' figures
    of one run are never drawn on different scales (a trial saw ars on log beside LangChain's
    baseline on linear, which shrank ars's saving to the eye)."""
    run = calls.filter(pl.col("transcript") == transcript)
    if run.is_empty():
        return "linear"
    raw_peak = float(run["raw_tokens"].max() or 0)  # type: ignore[arg-type]
    sent = run.group_by("strategy").agg(pl.col("view_tokens").max())["view_tokens"].to_list()
    return "log" if any(use_log("auto", raw_peak, float(p or 0)) for p in sent) else "linear"


def write_figures(
    calls: pl.DataFrame,
    summary: pl.DataFrame | None,
    out_dir: str | Path,
    *,
    settings: Any = None,
    runs: str = "all",
    data: str = "real",
    note: str | None = None,
    note_of: Callable[[str], str] | None = None,
) -> list[Path]:
    """Write the report's PNGs (Agg canvas) and return their paths:

    * ``budget/<transcript>__<strategy>.png`` per run (:func:`budget_png_figure`);
    * ``strategies/<transcript>.png`` per transcript when there are several strategies
      (:func:`plot_strategies`);
    * ``saving_by_strategy.png`` (:func:`plot_savings`: the per-run distribution over the runs
      ``data`` names, default the real ones).

    Args:
        runs: ``"all"``: the per-run and per-transcript figures of every run; ``"reached"``: only
            of the runs that reach T (:func:`reaching_runs`), where compression can show.
        note: a line on every figure (:func:`save_png`): what wrote the summaries.
        note_of: the line of one strategy's budget figure (``strategy -> line``: its own
            summarizer only); ``None``: ``note``.

    Raises:
        ValueError: ``runs`` is neither.
    """
    if runs not in ("all", "reached"):
        raise ValueError(f"runs={runs!r} is invalid: allowed 'all' or 'reached'")
    out = Path(out_dir)
    (out / "budget").mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    if calls.is_empty():
        return paths
    T = getattr(settings, "entry_threshold_tokens", None)
    paths.append(save_png(plot_savings(calls, data=data, threshold=T), out / "saving_by_strategy.png", note))
    chosen = (
        reaching_runs(calls, settings)
        if runs == "reached"
        else [
            (str(t), str(s))
            for t, s in calls.select("transcript", "strategy").unique(maintain_order=True).iter_rows()
        ]
    )
    scales = {t: transcript_yscale(calls, t) for t in dict.fromkeys(t for t, _ in chosen)}
    for transcript, strategy in chosen:
        fig = budget_png_figure(calls, transcript, strategy, settings, yscale=scales[transcript])
        own = note_of(strategy) if note_of is not None else note
        paths.append(save_png(fig, out / "budget" / figure_name(transcript, strategy), own))
    if calls["strategy"].n_unique() > 1:
        (out / "strategies").mkdir(parents=True, exist_ok=True)
        for transcript in scales:
            fig = plot_strategies(calls, transcript, yscale=scales[transcript])
            paths.append(save_png(fig, out / "strategies" / figure_name(transcript), note))
    return paths
