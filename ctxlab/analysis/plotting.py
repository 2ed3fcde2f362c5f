"""Figures of a replay: token budget per call, strategies side by side, saving by strategy, the
view split by part, the two-panel budget figure of the notebooks and the explorer, and the curve
of a settings sweep.

Every plot function takes the per-call frame (:func:`ctxlab.analysis.report.calls_frame`), an optional
matplotlib ``ax`` to draw into, and returns the figure.  Without ``ax`` a new
``matplotlib.figure.Figure`` is made that is *not* registered with pyplot: in Jupyter it shows
once when it is the cell's value, and it never leaks into pyplot's figure list.  Files are
rendered with the Agg canvas (no GUI backend is touched).

Labels with CJK text render with a CJK font when one is installed (``fc-list :lang=zh``:
Noto Sans CJK, Source Han Sans, WenQuanYi, ...); without one, non-ASCII characters in labels
are replaced by ``?`` so that nothing renders as empty boxes.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab.replay.metrics import VIEW_PARTS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "budget_figure",
    "cjk_font",
    "figure_name",
    "format_tokens",
    "plot_budget",
    "plot_savings",
    "plot_strategies",
    "plot_sweep",
    "plot_view_parts",
    "write_figures",
]

_CJK_NAMES = (
    "Noto Sans CJK",
    "Noto Serif CJK",
    "Source Han Sans",
    "Source Han Serif",
    "WenQuanYi",
    "Droid Sans Fallback",
    "AR PL",
    "SimHei",
    "Microsoft YaHei",
    "PingFang",
    "Hiragino Sans GB",
    "Heiti",
    "Sarasa",
    "Noto Sans SC",
    "Noto Sans TC",
    "Noto Sans JP",
)
_COLORS = {
    "raw": "#555555",
    "sent": "#1f77b4",
    "T": "#ff7f0e",
    "T2": "#d62728",
    "L1": "#ff7f0e",
    "L2": "#d62728",
}
_PART_COLORS = {
    "system": "#8c8c8c",
    "user": "#2ca02c",
    "assistant": "#1f77b4",
    "tool": "#ff7f0e",
    "summary": "#9467bd",
}
_STRATEGY_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#ff7f0e")
#: per strategy line: styles and markers cycle with the colours, so that two strategies whose
#: lines coincide stay distinguishable (the raw line is the only plain dashed one)
_STRATEGY_STYLES = ("-", (0, (6, 2)), "-.", (0, (2, 1)), (0, (8, 2, 1, 2, 1, 2)), (0, (3, 1)))
_STRATEGY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


@functools.lru_cache(maxsize=1)
def cjk_font() -> str | None:
    """The family name of an installed font with CJK glyphs, or ``None``."""
    from matplotlib import font_manager

    for entry in font_manager.fontManager.ttflist:
        if any(entry.name.startswith(n) for n in _CJK_NAMES):
            return entry.name
    return None


def _families() -> list[str]:
    cjk = cjk_font()
    return [cjk, "DejaVu Sans"] if cjk else ["DejaVu Sans"]


def _text(s: Any) -> str:
    """A label that renders: kept as is with a CJK font, else non-ASCII becomes ``?``."""
    s = str(s)
    if cjk_font() is None:
        s = s.encode("ascii", "replace").decode("ascii")
    return s.replace("$", r"\$")


def _shorten(s: str, n: int = 70) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1) :] if cjk_font() else "..." + s[-(n - 3) :]


def _new_axes(ax: Axes | None, size: tuple[float, float] = (9.0, 4.8)) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax  # type: ignore[return-value]
    from matplotlib.figure import Figure

    # fixed margins instead of a layout engine: one draw per save (constrained layout draws twice)
    fig = Figure(figsize=size, dpi=100)
    w, h = size
    fig.subplots_adjust(left=min(0.2, 0.75 / w), right=1 - 0.2 / w, bottom=0.55 / h, top=1 - 0.4 / h)
    return fig, fig.add_subplot()


#: with ``yscale="auto"`` the y axis turns logarithmic when raw exceeds sent this many times
LOG_RATIO = 10.0


def _use_log(yscale: str, raw_peak: float, sent_peak: float) -> bool:
    if yscale not in ("auto", "linear", "log"):
        raise ValueError(f"yscale={yscale!r} is invalid: allowed 'auto', 'linear' or 'log'")
    if yscale == "auto":
        return sent_peak > 0 and raw_peak > LOG_RATIO * sent_peak
    return yscale == "log"


def format_tokens(value: float, _pos: Any = None) -> str:
    """A token count as a short tick label: ``950``, ``1.25k``, ``12.5k``, ``20k``, ``1.5M``.

    Thousands and millions keep up to three decimals, trailing zeros dropped, so that a tick is
    never rounded to a neighbour's label (12,500 is ``12.5k``, not ``12k``).
    """
    if not math.isfinite(value):
        return ""
    for scale, suffix in ((1_000_000, "M"), (1000, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3f}".rstrip("0").rstrip(".") + suffix
    return f"{value:.0f}"


def _tokens_axis(ax: Axes, log: bool = False) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    if log:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(format_tokens))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("model call", fontfamily=_families())
    ax.set_ylabel("tokens (estimate, log scale)" if log else "tokens (estimate)", fontfamily=_families())
    ax.grid(True, alpha=0.3, linewidth=0.6)
    if not log:
        ax.set_ylim(bottom=0)


def _title_and_legend(ax: Axes, title: str) -> None:
    fam = _families()
    ax.set_title(_text(title), fontfamily=fam, fontsize=11)
    ax.legend(loc="best", prop={"family": fam, "size": 8.5}, framealpha=0.85)


def _threshold_lines(ax: Axes, T: float | None, T2: float | None, peak: float, log: bool) -> float:
    """T (dash-dot) and T2 (dotted) as labelled horizontal lines; a threshold far above the data
    (over 1.6 × ``peak`` on a linear axis) would squash the lines, so it is only named in the
    legend, "(above the plot)".  Returns the highest value drawn (at least ``peak``)."""
    top = peak
    for value, key, style, width in ((T, "T", "-.", 1.2), (T2, "T2", ":", 1.4)):
        if value is None:
            continue
        if log or value <= peak * 1.6:
            ax.axhline(
                value, color=_COLORS[key], linestyle=style, linewidth=width, label=f"{key} = {value:,.0f}"
            )
            top = max(top, value)
        else:
            label = f"{key} = {value:,.0f} (above the plot)"
            ax.plot([], [], color=_COLORS[key], linestyle=style, linewidth=width, label=label)
    return top


def _select(calls: pl.DataFrame, transcript: str | None, strategy: str | None) -> pl.DataFrame:
    df = calls
    if transcript is not None:
        df = df.filter(pl.col("transcript") == transcript)
    if strategy is not None:
        df = df.filter(pl.col("strategy") == strategy)
    return df.sort("call_index")


def _pick_run(
    calls: pl.DataFrame, transcript: str | None, strategy: str | None
) -> tuple[str | None, str | None, pl.DataFrame]:
    """``(transcript, strategy, its calls)``: a run named in full, or defaulting to the first
    transcript of ``calls`` and its first strategy."""
    if transcript is None and calls.height:
        transcript = calls["transcript"][0]
    if strategy is None and calls.height:
        strategy = _select(calls, transcript, None)["strategy"][0]
    return transcript, strategy, _select(calls, transcript, strategy)


def _one(values: pl.Series) -> float | None:
    vals = [v for v in values.drop_nulls().unique().to_list() if v is not None]
    return float(vals[0]) if vals else None


def plot_budget(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    *,
    ax: Axes | None = None,
    threshold: float | None = None,
    l2_threshold: float | None = None,
    title: str | None = None,
    yscale: str = "auto",
) -> Figure:
    """Token budget per model call of one run: raw vs sent lines, horizontal T and T2 lines,
    markers on the calls that ran L1 and L2.

    Args:
        calls: the per-call frame (filtered to one run, or name it with ``transcript``/``strategy``).
        transcript, strategy: which run (default: the first of each in ``calls``).
        ax: draw here instead of a new figure.
        threshold, l2_threshold: T and T2 in tokens (default: the rows' ``threshold`` columns).
        title: the axes title (default: ``"<transcript> - <strategy>"``).
        yscale: ``"linear"``, ``"log"``, or ``"auto"`` (log when raw peaks above 10x sent, so that
            a heavily compressed run stays readable).
    """
    transcript, strategy, df = _pick_run(calls, transcript, strategy)
    raw_peak = max(df["raw_tokens"].to_list(), default=0)
    sent_peak = max(df["view_tokens"].to_list(), default=0)
    log = _use_log(yscale, raw_peak, sent_peak)
    fig, ax = _new_axes(ax)
    x = df["call_index"].to_list()
    # raw is drawn dashed on top, so that it stays visible where nothing was compressed
    same = df.height > 0 and (df["view_tokens"] == df["raw_tokens"]).all()
    sent_label = "sent (view) = raw: nothing compressed" if same else "sent (view)"
    ax.plot(x, df["view_tokens"].to_list(), color=_COLORS["sent"], linewidth=2.2, label=sent_label, zorder=2)
    ax.plot(
        x,
        df["raw_tokens"].to_list(),
        color=_COLORS["raw"],
        linestyle="--",
        linewidth=1.4,
        label="raw (uncompressed)",
        zorder=3,
    )
    T = threshold if threshold is not None else (_one(df["threshold"]) if df.height else None)
    T2 = l2_threshold if l2_threshold is not None else (_one(df["l2_threshold"]) if df.height else None)
    peak = max([*df["raw_tokens"].to_list(), *df["view_tokens"].to_list(), 1])
    top = _threshold_lines(ax, T, T2, peak, log)
    size = 60 if len(x) <= 80 else 34  # smaller markers on long runs
    for level, marker in (("L1", "^"), ("L2", "D")):
        sel = df.filter(pl.col("level") == level)
        if sel.height:
            ax.scatter(
                sel["call_index"].to_list(),
                sel["view_tokens"].to_list(),
                marker=marker,
                s=size,
                color=_COLORS[level],
                edgecolor="black",
                linewidth=0.6,
                zorder=5,
                label=f"{level} call ({sel.height})",
            )
    _tokens_axis(ax, log)
    if log:
        low = min(
            [v for v in (*df["view_tokens"].to_list(), *(t for t in (T, T2) if t)) if v and v > 0], default=1
        )
        ax.set_ylim(max(1.0, low * 0.6), top * 1.5)
    else:
        ax.set_ylim(0, top * 1.08)
    if x:
        ax.set_xlim(min(x) - 0.5, max(x) + 0.5)
    _title_and_legend(ax, title or f"{_shorten(str(transcript))}  [{strategy}]")
    return fig


def plot_strategies(
    calls: pl.DataFrame,
    transcript: str | None = None,
    *,
    ax: Axes | None = None,
    strategies: Sequence[str] | None = None,
    title: str | None = None,
    yscale: str = "auto",
) -> Figure:
    """Sent tokens per call of one transcript, one line per strategy (raw as a dashed line);
    ``yscale`` as for :func:`plot_budget`.

    Each strategy has its own colour, line style and marker, and lines drawn first are wider:
    two strategies that send the same tokens (an estimator variant that never changes a
    decision, say) show as a wide line with a narrower one of another style inside it, and
    their markers sit at different calls.
    """
    if transcript is None and calls.height:
        transcript = calls["transcript"][0]
    df = _select(calls, transcript, None)
    names = list(strategies or df["strategy"].unique(maintain_order=True).to_list())
    fig, ax = _new_axes(ax)
    if df.height:
        first = df.filter(pl.col("strategy") == names[0]) if names else df
        ax.plot(
            first["call_index"].to_list(),
            first["raw_tokens"].to_list(),
            color=_COLORS["raw"],
            linestyle="--",
            linewidth=1.4,
            label="raw (uncompressed)",
            zorder=3 + len(names),  # on top: visible where a strategy sends everything
        )
    n = max(1, len(names))
    for i, name in enumerate(names):
        sel = df.filter(pl.col("strategy") == name)
        every = max(1, sel.height // 10)  # about ten markers per line, shifted per strategy
        ax.plot(
            sel["call_index"].to_list(),
            sel["view_tokens"].to_list(),
            linewidth=1.5 + 1.5 * (n - 1 - i) / max(1, n - 1),  # 3.0 down to 1.5
            linestyle=_STRATEGY_STYLES[i % len(_STRATEGY_STYLES)],
            marker=_STRATEGY_MARKERS[i % len(_STRATEGY_MARKERS)],
            markersize=5,
            markevery=((i * every) // n, every),
            color=_STRATEGY_COLORS[i % len(_STRATEGY_COLORS)],
            label=_text(f"{name} (sent)"),
            zorder=2 + i,
        )
    T = _one(df["threshold"]) if df.height else None
    peak = max([*df["raw_tokens"].to_list(), 1]) if df.height else 1
    log = _use_log(yscale, peak, max(df["view_tokens"].to_list(), default=0))
    _threshold_lines(ax, T, None, peak, log)
    _tokens_axis(ax, log)
    _title_and_legend(ax, title or f"{_shorten(str(transcript))}: strategies")
    return fig


#: strategy names longer than this many characters turn the x labels of :func:`plot_savings`
ROTATE_NAMES_OVER = 10


def plot_savings(calls: pl.DataFrame, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Bar chart of the overall saving % per strategy: ``100 × (1 − Σ sent / Σ raw)`` over all
    calls of all transcripts; each bar is labelled with its value and the number of runs.

    Strategy names longer than :data:`ROTATE_NAMES_OVER` characters are written at an angle;
    on a figure made here, the bottom margin grows to fit them.
    """
    from ctxlab.replay.table import strategy_totals

    totals = strategy_totals(calls)
    names = totals["strategy"].to_list() if totals.height else []
    longest = max((len(n) for n in names), default=0)
    rotate = longest > ROTATE_NAMES_OVER
    own = ax is None
    size = (max(4.5, (1.1 if rotate else 1.4) * max(1, len(names)) + 2.5), 4.2)
    if rotate:  # the slanted names take room below the axes: a taller figure keeps the bars' height
        size = (size[0], size[1] + 0.04 * longest)
    fig, ax = _new_axes(ax, size)
    fam = _families()
    values = [v if v is not None else 0.0 for v in (totals["saving_pct"].to_list() if totals.height else [])]
    runs = totals["transcripts"].to_list() if totals.height else []
    bars = ax.bar(
        range(len(names)),
        values,
        color=[_STRATEGY_COLORS[i % len(_STRATEGY_COLORS)] for i in range(len(names))],
        width=0.6,
    )
    for rect, v, n in zip(bars, values, runs, strict=True):
        ax.annotate(
            f"{v:.1f} %\n({n} run{'s' if n != 1 else ''})",
            (rect.get_x() + rect.get_width() / 2, max(v, 0)),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=9,
            fontfamily=fam,
        )
    labels = [_text(n) for n in names]
    if rotate:
        ax.set_xticks(
            range(len(names)), labels, fontfamily=fam, rotation=30, ha="right", rotation_mode="anchor"
        )
    else:
        ax.set_xticks(range(len(names)), labels, fontfamily=fam)
    ax.set_xlim(-0.75, max(1, len(names)) - 0.25)  # a lone bar does not fill the axes
    ax.set_ylabel("tokens saved (% of raw)", fontfamily=fam)
    ax.set_xlabel("strategy", fontfamily=fam)
    hi = max([*values, 0.0])
    lo = min([*values, 0.0])
    ax.set_ylim(min(lo * 1.15, 0), max(hi * 1.25, 10))
    ax.set_yticks([t for t in ax.get_yticks() if min(lo * 1.15, 0) <= t <= 100])  # room, not a 120 %
    ax.axhline(0, color="black", linewidth=0.8)
    ax.grid(True, axis="y", alpha=0.3, linewidth=0.6)
    ax.set_title(_text(title or "Saving by strategy (all transcripts)"), fontfamily=fam, fontsize=11)
    if own and rotate:
        _fit_margins(fig, ax)
    return fig


def _fit_margins(fig: Figure, ax: Axes, pad_inches: float = 0.08) -> None:
    """Widen the bottom (and, if need be, the left) margin of a figure made here so that the
    slanted x tick labels and the x label fit inside it (measured with an Agg renderer)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    pad = pad_inches * fig.dpi
    box, labels = ax.get_window_extent(renderer), ax.xaxis.get_tightbbox(renderer)
    below = box.y0 - labels.y0  # pixels under the axes
    fig.subplots_adjust(bottom=min(0.6, (below + pad) / fig.bbox.height))
    left_of = box.x0 - min(labels.x0, ax.yaxis.get_tightbbox(renderer).x0)  # pixels left of the axes
    fig.subplots_adjust(left=min(0.5, max(fig.subplotpars.left, (left_of + pad) / fig.bbox.width)))


def plot_view_parts(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    show_raw: bool = False,
    thresholds: bool = False,
) -> Figure:
    """Stacked areas of the view split by part per call: system (+ tool schemas), user,
    assistant, tool results, summary; ``show_raw`` adds the raw request as a dashed line,
    ``thresholds`` the T and T2 lines (as in :func:`plot_budget`)."""
    transcript, strategy, df = _pick_run(calls, transcript, strategy)
    fig, ax = _new_axes(ax)
    x = df["call_index"].to_list()
    if df.height:
        ys = [df[f"view_{p}_tokens"].to_list() for p in VIEW_PARTS]
        ax.stackplot(
            x,
            *ys,
            labels=[p if p != "system" else "system + tools" for p in VIEW_PARTS],
            colors=[_PART_COLORS[p] for p in VIEW_PARTS],
            alpha=0.85,
            linewidth=0,
        )
        if show_raw:
            ax.plot(x, df["raw_tokens"].to_list(), color="black", linestyle="--", linewidth=1.0, label="raw")
        ax.set_xlim(min(x), max(x) if len(x) > 1 else min(x) + 1)
        if thresholds:
            peak = max([*df["view_tokens"].to_list(), *(df["raw_tokens"].to_list() if show_raw else []), 1])
            top = _threshold_lines(ax, _one(df["threshold"]), _one(df["l2_threshold"]), peak, False)
            ax.set_ylim(0, top * 1.08)
    _tokens_axis(ax)
    _title_and_legend(ax, title or f"{_shorten(str(transcript))}  [{strategy}]: view by part")
    return fig


# --- the two-panel budget figure and the sweep curve ----------------------------------------------


def budget_figure(
    calls: pl.DataFrame,
    transcript: str | None = None,
    strategy: str | None = None,
    *,
    fig: Figure | None = None,
    title: str | None = None,
) -> Figure:
    """The token budget of one run in two panels sharing the x axis (model calls).

    Top: the request view split by part, stacked (:func:`plot_view_parts`).  Bottom: raw vs
    sent tokens, T and T2, and markers on the calls where L1 and L2 ran (:func:`plot_budget`).

    Args:
        calls: the per-call frame of a replay (``ReplayResult.frame()``).
        transcript, strategy: which run (default: the first in ``calls``).
        fig: redraw into this figure (its two axes are cleared) instead of making a new one;
            used by :mod:`ctxlab.analysis.widgets` to update one figure in place.
        title: a figure title (default: ``"<transcript>  [<strategy>]"``).

    Returns:
        The figure (a ``matplotlib.figure.Figure`` not registered with pyplot when new).
    """
    from matplotlib.figure import Figure

    if fig is None:
        fig = Figure(figsize=(10, 7.6), dpi=100, layout="constrained")
    if len(fig.axes) == 2:
        top, bottom = fig.axes
        top.clear()
        bottom.clear()
    else:
        fig.clear()
        top, bottom = fig.subplots(2, 1, sharex=True)
    transcript, strategy, _ = _pick_run(calls, transcript, strategy)
    plot_view_parts(
        calls,
        transcript,
        strategy,
        ax=top,
        title="request view by part (stacked), thresholds",
        show_raw=True,
        thresholds=True,
    )
    plot_budget(calls, transcript, strategy, ax=bottom, title="raw vs sent, thresholds, compression rounds")
    top.set_xlabel("")
    top.tick_params(labelbottom=False)
    fig.suptitle(
        _text(title or f"{_shorten(str(transcript))}  [{strategy}]"), fontfamily=_families(), fontsize=12
    )
    return fig


def plot_sweep(
    frame: pl.DataFrame,
    *,
    setting: str = "summary_l2_trigger_ratio",
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """The curve of a sweep (:func:`ctxlab.replay.engine.sweep`): saving % (left axis, line) and L2
    rounds (right axis, bars) against the setting's value.

    Args:
        frame: the sweep's frame.
        setting: the swept field (the x label).
        ax: draw here instead of a new figure.
        title: the axes title.

    Returns:
        The figure.
    """
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9, 4.8), dpi=100, layout="constrained")
        ax = fig.add_subplot()
    fig = ax.figure  # type: ignore[assignment]
    x = frame["value"].to_list()
    width = 0.6 * (min(b - a for a, b in itertools.pairwise(x)) if len(x) > 1 else 0.1)
    right = ax.twinx()
    bars = right.bar(x, frame["l2_rounds"].to_list(), width=width, color=_COLORS["L2"], alpha=0.3)
    right.set_ylabel("L2 rounds (all transcripts)")
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    (line,) = ax.plot(x, frame["saving_pct"].to_list(), marker="o", color=_COLORS["sent"], linewidth=2)
    ax.set_zorder(right.get_zorder() + 1)
    ax.patch.set_visible(False)
    ratio = setting == "summary_l2_trigger_ratio"
    if ratio and "T2" in frame.columns:  # each ratio with the T2 it makes, in tokens
        ax.set_xticks(x, [f"{v:g}\n{t2:,.0f}" for v, t2 in zip(x, frame["T2"].to_list(), strict=True)])
        ax.set_xlabel("summary_l2_trigger_ratio (T2 / T), and below it T2 in tokens")
    else:
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel(setting + (" (T2 / T)" if ratio else ""))
    ax.set_ylabel("tokens saved (% of raw)")
    ax.set_ylim(0, max(100.0, *(v or 0 for v in frame["saving_pct"].to_list())))
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.legend([line, bars], ["saving %", "L2 rounds"], loc="upper right", framealpha=0.85)
    ax.set_title(_text(title or f"sweep over {setting}"), fontfamily=_families(), fontsize=11)
    return fig


# --- files -------------------------------------------------------------------------------------


def figure_name(*parts: str) -> str:
    """A safe, unique-enough PNG file name for a run: ASCII, at most ~100 characters
    (:func:`ctxlab.replay.engine.safe_name` of the parts joined by ``__``)."""
    from ctxlab.replay import safe_name

    return safe_name("__".join(parts), limit=99, empty="figure") + ".png"


def _save(fig: Figure, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        fig.savefig(path, dpi=100, pil_kwargs={"compress_level": 3})
    return path


def write_figures(
    calls: pl.DataFrame, summary: pl.DataFrame | None, out_dir: str | Path, *, settings: Any = None
) -> list[Path]:
    """Write the report's PNGs (Agg canvas) and return their paths:

    * ``budget/<transcript>__<strategy>.png`` per run (:func:`plot_budget`);
    * ``strategies/<transcript>.png`` per transcript when there are several strategies
      (:func:`plot_strategies`);
    * ``saving_by_strategy.png`` (:func:`plot_savings`).
    """
    out = Path(out_dir)
    (out / "budget").mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    if calls.is_empty():
        return paths
    paths.append(_save(plot_savings(calls), out / "saving_by_strategy.png"))
    runs = calls.select("transcript", "strategy").unique(maintain_order=True).iter_rows()
    for transcript, strategy in runs:
        fig = plot_budget(calls, transcript, strategy)
        paths.append(_save(fig, out / "budget" / figure_name(transcript, strategy)))
    if calls["strategy"].n_unique() > 1:
        (out / "strategies").mkdir(parents=True, exist_ok=True)
        for transcript in calls["transcript"].unique(maintain_order=True).to_list():
            fig = plot_strategies(calls, transcript)
            paths.append(_save(fig, out / "strategies" / figure_name(transcript)))
    return paths
