"""The look shared by every figure: fonts (CJK included), colours, line styles, the token axis and
its tick labels, threshold lines, titles and legends, and figure margins.

Labels with Chinese, Japanese or Korean text render with a CJK font: first the Noto Sans CJK
collection of the ``noto-cjk-sans-otc`` package (a lab dependency, installed by ``make setup``
and the conda environment from PyPI; registered with matplotlib's font manager on first use, no
system font needed), else an installed one (Noto Sans CJK, Source Han Sans, WenQuanYi, ...).
A character that none of the label fonts has (an emoji, say) is replaced by ``?``
(:func:`label_text`), so that no label renders as empty boxes and matplotlib warns of no missing
glyph.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "COLORS",
    "LOG_RATIO",
    "PART_COLORS",
    "STRATEGY_COLORS",
    "STRATEGY_MARKERS",
    "STRATEGY_STYLES",
    "cjk_font",
    "covered",
    "fit_margins",
    "font_families",
    "format_tokens",
    "label_text",
    "new_axes",
    "packaged_cjk_font",
    "shorten",
    "threshold_lines",
    "title_and_legend",
    "tokens_axis",
    "use_log",
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
COLORS = {
    "raw": "#555555",
    "sent": "#1f77b4",
    "T": "#ff7f0e",
    "T2": "#d62728",
    "L1": "#ff7f0e",
    "L2": "#d62728",
    "failed": "#000000",
    "rejected": "#bcbd22",
    "declined": "#17becf",
}
PART_COLORS = {
    "system": "#8c8c8c",
    "user": "#2ca02c",
    "assistant": "#1f77b4",
    "tool": "#ff7f0e",
    "summary": "#9467bd",
}
STRATEGY_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#ff7f0e")
#: per strategy line: styles and markers cycle with the colours, so that two strategies whose
#: lines coincide stay distinguishable (the raw line is the only plain dashed one)
STRATEGY_STYLES = ("-", (0, (6, 2)), "-.", (0, (2, 1)), (0, (8, 2, 1, 2, 1, 2)), (0, (3, 1)))
STRATEGY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


#: the module of the pip package that ships the Noto Sans CJK collection (``FONT_PATH``)
CJK_FONT_MODULE = "noto_cjk_sans_otc"


@functools.lru_cache(maxsize=1)
def packaged_cjk_font() -> str | None:
    """Register the Noto Sans CJK collection of the ``noto-cjk-sans-otc`` package with
    matplotlib's font manager and return its family name; ``None`` when the package is missing
    or its font cannot be read."""
    import importlib

    from matplotlib import font_manager

    try:
        path = str(importlib.import_module(CJK_FONT_MODULE).FONT_PATH)
        font_manager.fontManager.addfont(path)
        return str(font_manager.FontProperties(fname=path).get_name())
    except (ImportError, AttributeError, OSError, RuntimeError):
        return None


@functools.lru_cache(maxsize=1)
def cjk_font() -> str | None:
    """The family name of a font with CJK glyphs: the packaged one (:func:`packaged_cjk_font`),
    else an installed one; ``None`` when there is none."""
    from matplotlib import font_manager

    packaged = packaged_cjk_font()
    if packaged is not None:
        return packaged
    for entry in font_manager.fontManager.ttflist:
        if any(entry.name.startswith(n) for n in _CJK_NAMES):
            return entry.name
    return None


def font_families() -> list[str]:
    """The ``fontfamily`` of every label: DejaVu Sans (Latin, Greek, Cyrillic, symbols) first,
    then the CJK font (:func:`cjk_font`) when there is one; matplotlib falls back from one to
    the next per character."""
    cjk = cjk_font()
    return ["DejaVu Sans", cjk] if cjk else ["DejaVu Sans"]


@functools.lru_cache(maxsize=1)
def covered() -> frozenset[int]:
    """The code points the label fonts (:func:`font_families`) have glyphs for."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    points: set[int] = set()
    for family in font_families():
        path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
        points.update(FT2Font(path).get_charmap())
    return frozenset(points)


def label_text(s: Any) -> str:
    """A label that renders: every character the label fonts lack (:func:`covered`) becomes
    ``?``; ``$`` is escaped (no mathtext)."""
    text = str(s)
    have = covered()
    text = "".join(c if ord(c) in have or c in "\n\t" else "?" for c in text)
    return text.replace("$", r"\$")


def shorten(s: str, n: int = 70) -> str:
    """``s`` cut to its last ``n`` characters behind an ellipsis (``…`` with a CJK font, else
    ``...``), for transcript names in titles."""
    return s if len(s) <= n else "…" + s[-(n - 1) :] if cjk_font() else "..." + s[-(n - 3) :]


def new_axes(ax: Axes | None, size: tuple[float, float] = (9.0, 4.8)) -> tuple[Figure, Axes]:
    """``(figure, axes)`` to draw into: ``ax`` and its figure, or, when ``ax`` is ``None``, a new
    ``Figure`` of ``size`` inches (width, height) at 100 dpi, not registered with pyplot."""
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


def use_log(yscale: str, raw_peak: float, sent_peak: float) -> bool:
    """Whether the token axis is logarithmic: ``"log"``, ``"linear"``, or ``"auto"`` (when the raw
    peak exceeds :data:`LOG_RATIO` × the sent peak; peaks in tokens).

    Raises:
        ValueError: ``yscale`` is none of the three.
    """
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


def tokens_axis(ax: Axes, log: bool = False) -> None:
    """Label ``ax`` as model calls (x, integer ticks) against tokens (y, :func:`format_tokens`
    ticks; from 0 unless ``log``) and draw a light grid."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    if log:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(format_tokens))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("model call", fontfamily=font_families())
    ax.set_ylabel("tokens (estimate, log scale)" if log else "tokens (estimate)", fontfamily=font_families())
    ax.grid(True, alpha=0.3, linewidth=0.6)
    if not log:
        ax.set_ylim(bottom=0)


def title_and_legend(ax: Axes, title: str) -> None:
    """Set the axes title (through :func:`label_text`) and a legend in :func:`font_families`."""
    fam = font_families()
    ax.set_title(label_text(title), fontfamily=fam, fontsize=11)
    ax.legend(loc="best", prop={"family": fam, "size": 8.5}, framealpha=0.85)


def threshold_lines(ax: Axes, T: float | None, T2: float | None, peak: float, log: bool) -> float:
    """T (dash-dot) and T2 (dotted) as labelled horizontal lines; a threshold far above the data
    (over 1.6 × ``peak`` on a linear axis) would squash the lines, so it is only named in the
    legend, "(above the plot)".  Returns the highest value drawn (at least ``peak``)."""
    top = peak
    for value, key, style, width in ((T, "T", "-.", 1.2), (T2, "T2", ":", 1.4)):
        if value is None:
            continue
        if log or value <= peak * 1.6:
            ax.axhline(
                value, color=COLORS[key], linestyle=style, linewidth=width, label=f"{key} = {value:,.0f}"
            )
            top = max(top, value)
        else:
            label = f"{key} = {value:,.0f} (above the plot)"
            ax.plot([], [], color=COLORS[key], linestyle=style, linewidth=width, label=label)
    return top


def fit_margins(fig: Figure, ax: Axes, pad_inches: float = 0.08) -> None:
    """Widen the bottom (and, if need be, the left) margin of a figure made here so that the
    slanted x tick labels and the x label fit inside it (measured with an Agg renderer)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    pad = pad_inches * fig.dpi
    box, labels = ax.get_window_extent(renderer), ax.xaxis.get_tightbbox(renderer)
    y_labels = ax.yaxis.get_tightbbox(renderer)
    if labels is None or y_labels is None:  # an invisible axis: nothing to make room for
        return
    below = box.y0 - labels.y0  # pixels under the axes
    fig.subplots_adjust(bottom=min(0.6, (below + pad) / fig.bbox.height))
    left_of = box.x0 - min(labels.x0, y_labels.x0)  # pixels left of the axes
    fig.subplots_adjust(left=min(0.5, max(fig.subplotpars.left, (left_of + pad) / fig.bbox.width)))
