"""The calling convention of the plots, stated once: the keyword options every plot takes
(:class:`PlotOptions`, :class:`FigureOptions`, taken as PEP 692 ``**options: Unpack[...]``), the
decorator that shows them in the plot's signature and rejects unknown ones (:func:`with_options`),
the axes a plot draws into, titled and given a legend when it is done (:class:`Panel`), and the
axes of a figure of several panels (:func:`open_panels`).

Every function of :mod:`ctxlab.analysis` that returns a ``Figure`` lives in this package and
takes ``ax=None`` and ``title=None`` (``tests/test_plotting.py`` checks it): one axes for a plot,
one per panel for a whole figure.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from ctxlab.analysis.plotting.style import new_axes, title_and_legend

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FigureOptions", "Panel", "PlotOptions", "open_panels", "with_options"]


class PlotOptions(TypedDict, total=False):
    """The keyword options of every plot into one axes (``plot_budget``, ``plot_view_parts``,
    ``plot_strategies``, ``plot_savings``, ``plot_sweep``); each defaults to ``None``.

    * ``ax``: draw into this matplotlib ``Axes`` and return its figure; ``None``: a new
      ``Figure`` (not registered with pyplot) with one axes.
    * ``title``: the axes title; ``None`` (or empty): the plot's own, naming what it shows.
    """

    ax: Axes | None
    title: str | None


class FigureOptions(TypedDict, total=False):
    """The keyword options of a whole figure of several panels (``budget_figure``,
    ``plot_findings``); each defaults to ``None``.

    * ``ax``: draw the panels into these matplotlib ``Axes``, one per panel in the figure's order
      (e.g. a column of two from ``fig.subplots(2, 1)``), all of one figure, which is returned;
      ``None``: the axes of ``fig``, or of a new figure.
    * ``fig``: redraw into this matplotlib ``Figure`` (its axes are reused when there is one per
      panel, else replaced); ``None``: a new one, not registered with pyplot.  Not with ``ax``.
    * ``title``: the figure title (``suptitle``); ``None`` (or empty): the figure's own.
    """

    ax: Sequence[Axes] | None
    fig: Figure | None
    title: str | None


F = TypeVar("F", bound=Callable[..., "Figure"])


def with_options(options: type) -> Callable[[F], F]:
    """Decorate a plot that takes ``**options: Unpack[options]`` (``options`` a ``TypedDict`` class
    whose keys all default to ``None``) so that, at run time, it behaves as if it spelt them out:

    * its signature (``help()``, Jupyter's Shift-Tab, ``inspect.signature``) lists each key as a
      keyword-only parameter with default ``None``, in place of ``**options``;
    * a call is checked against that signature first: an unknown keyword (a misspelt ``titel=``),
      a missing or an extra argument raises ``TypeError`` before anything is drawn.

    Type checkers see the function unchanged (PEP 692 checks the options' names and types).
    """
    keyword = inspect.Parameter.KEYWORD_ONLY
    added = [
        inspect.Parameter(name, keyword, default=None, annotation=getattr(hint, "__forward_arg__", hint))
        for name, hint in options.__annotations__.items()
    ]

    def decorate(plot: F) -> F:
        signature = inspect.signature(plot)
        kept = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        shown = signature.replace(parameters=[*kept, *added])

        @functools.wraps(plot)
        def checked(*args: Any, **kwargs: Any) -> Figure:
            try:
                shown.bind(*args, **kwargs)
            except TypeError as err:  # name the plot, as Python does for a function of its own
                raise TypeError(f"{plot.__name__}() {err}") from None
            return plot(*args, **kwargs)

        checked.__signature__ = shown  # type: ignore[attr-defined]
        return cast(F, checked)

    return decorate


@dataclass(frozen=True)
class Panel:
    """The axes one plot draws into (:class:`PlotOptions`' ``ax``, else a new figure's) and the
    title asked for; :meth:`close` titles it, adds the legend and gives the figure back."""

    fig: Figure
    ax: Axes
    title: str | None

    @classmethod
    def open(cls, options: PlotOptions, size: tuple[float, float] = (9.0, 4.8)) -> Panel:
        """The panel of a plot called with ``options``; ``size`` (inches, width and height) is that
        of a new figure, unused when ``options`` names an ``ax``."""
        fig, ax = new_axes(options.get("ax"), size)
        return cls(fig, ax, options.get("title"))

    def close(self, default_title: str) -> Figure:
        """Set the title asked for (or ``default_title``) and the legend; return the figure."""
        title_and_legend(self.ax, self.title or default_title)
        return self.fig


def open_panels(
    options: FigureOptions,
    rows: int,
    cols: int,
    size: tuple[float, float],
    **grid: Any,
) -> tuple[Figure, list[Axes]]:
    """The figure and the ``rows`` x ``cols`` panel axes (row by row) of a whole figure called with
    ``options``: ``options["ax"]`` as given, else the axes of ``options["fig"]`` (cleared, or
    replaced when their number differs), else a new ``Figure`` of ``size`` inches at 100 dpi with
    constrained layout, not registered with pyplot.  ``grid`` goes to ``Figure.subplots`` (e.g.
    ``sharex=True``, ``width_ratios=(1, 2)``) when the axes are made here.

    Raises:
        ValueError: both ``ax`` and ``fig``; ``ax`` is not ``rows * cols`` axes of one figure.
    """
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    count = rows * cols
    given, fig = options.get("ax"), options.get("fig")
    if given is not None:
        if fig is not None:
            raise ValueError("ax= and fig= both given: pass the panels' axes or a figure, not both")
        axes: list[Axes] = [given] if isinstance(given, Axes) else list(given)
        if len(axes) != count or not all(isinstance(a, Axes) for a in axes):
            raise ValueError(f"ax= must be {count} matplotlib Axes (one per panel), got {given!r}")
        figures = {id(a.get_figure(root=True)) for a in axes}
        if len(figures) != 1:
            raise ValueError(f"ax= must be axes of one figure, got axes of {len(figures)} figures")
        root = axes[0].get_figure(root=True)
        assert isinstance(root, Figure)
        return root, axes
    if fig is None:
        fig = Figure(figsize=size, dpi=100, layout="constrained")
    if len(fig.axes) == count:
        for a in fig.axes:
            a.clear()
        return fig, list(fig.axes)
    fig.clear()
    made = fig.subplots(rows, cols, squeeze=False, **grid)
    return fig, [a for row in made for a in row]
