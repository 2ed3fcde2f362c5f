"""Whole figures and files: the two-panel budget figure of the notebooks and the explorer
(:func:`budget_figure`), and the report's PNG files (:func:`figure_name`, :func:`save_png`,
:func:`write_figures`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import polars as pl

from ctxlab.analysis.plotting.options import FigureOptions, open_panels, with_options
from ctxlab.analysis.plotting.plots import plot_budget, plot_savings, plot_strategies, plot_view_parts
from ctxlab.analysis.plotting.runs import one_value, pick_run
from ctxlab.analysis.plotting.style import font_families, label_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["budget_figure", "figure_name", "reaching_runs", "save_png", "write_figures"]


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
    """A safe, unique-enough PNG file name for a run: ASCII, at most ~100 characters
    (:func:`ctxlab.replay.engine.safe_name` of the parts joined by ``__``)."""
    from ctxlab.replay import safe_name

    return safe_name("__".join(parts), limit=99, empty="figure") + ".png"


def save_png(fig: Figure, path: Path) -> Path:
    """Render ``fig`` with the Agg canvas to ``path`` as PNG (100 dpi) and return ``path``.  Labels
    go through :func:`~ctxlab.analysis.plotting.style.label_text`, so no glyph is missing (a
    missing-glyph warning is not silenced: it would be a bug)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100, pil_kwargs={"compress_level": 3})
    return path


def reaching_runs(calls: pl.DataFrame, settings: Any = None) -> list[tuple[str, str]]:
    """The runs (transcript, strategy) whose raw request reaches the entry threshold T in some
    call (the row's ``threshold``, else ``settings.entry_threshold_tokens``; a run with neither
    counts as reaching), in first-seen order."""
    fallback = getattr(settings, "entry_threshold_tokens", None)
    out = []
    for (transcript, strategy), df in calls.group_by("transcript", "strategy", maintain_order=True):
        T = one_value(df["threshold"]) or fallback
        if T is None or max(df["raw_tokens"].to_list(), default=0) >= T:
            out.append((str(transcript), str(strategy)))
    return out


def write_figures(
    calls: pl.DataFrame,
    summary: pl.DataFrame | None,
    out_dir: str | Path,
    *,
    settings: Any = None,
    runs: str = "all",
) -> list[Path]:
    """Write the report's PNGs (Agg canvas) and return their paths:

    * ``budget/<transcript>__<strategy>.png`` per run (:func:`plot_budget`);
    * ``strategies/<transcript>.png`` per transcript when there are several strategies
      (:func:`plot_strategies`);
    * ``saving_by_strategy.png`` (:func:`plot_savings`).

    Args:
        runs: ``"all"``: the per-run and per-transcript figures of every run; ``"reached"``: only
            of the runs that reach T (:func:`reaching_runs`), where compression can show.

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
    paths.append(save_png(plot_savings(calls), out / "saving_by_strategy.png"))
    chosen = (
        reaching_runs(calls, settings)
        if runs == "reached"
        else [
            (str(t), str(s))
            for t, s in calls.select("transcript", "strategy").unique(maintain_order=True).iter_rows()
        ]
    )
    for transcript, strategy in chosen:
        fig = plot_budget(calls, transcript, strategy)
        paths.append(save_png(fig, out / "budget" / figure_name(transcript, strategy)))
    if calls["strategy"].n_unique() > 1:
        (out / "strategies").mkdir(parents=True, exist_ok=True)
        for transcript in dict.fromkeys(t for t, _ in chosen):
            fig = plot_strategies(calls, transcript)
            paths.append(save_png(fig, out / "strategies" / figure_name(transcript)))
    return paths
