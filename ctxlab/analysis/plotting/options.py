"""The calling convention of the plots, stated once: the keyword options every plot takes
(:class:`PlotOptions`, :class:`FigureOptions`, taken as PEP 692 ``**options: Unpack[...]``), the
decorator that shows them in the plot's signature and rejects unknown ones (:func:`with_options`),
and the axes a plot draws into, titled and given a legend when it is done (:class:`Panel`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from ctxlab.analysis.plotting.style import new_axes, title_and_legend

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FigureOptions", "Panel", "PlotOptions", "with_options"]


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
    """The keyword options of a whole figure (``budget_figure``); each defaults to ``None``.

    * ``fig``: redraw into this matplotlib ``Figure`` (its axes are reused or replaced);
      ``None``: a new one, not registered with pyplot.
    * ``title``: the figure title; ``None`` (or empty): the figure's own, naming the run.
    """

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
