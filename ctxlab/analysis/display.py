"""Inline display of matplotlib figures in Jupyter, whatever the matplotlib backend.

The plot helpers of :mod:`ctxlab.analysis` return bare ``matplotlib.figure.Figure`` objects (not
registered with pyplot, so nothing is shown twice).  IPython shows such an object as a picture
only when a display formatter for ``Figure`` is registered, which matplotlib's *inline* backend
does and the ``Agg`` backend does not: with ``MPLBACKEND=Agg`` in the environment (common in CI,
containers and shared servers), ``fig`` as the last expression of a cell prints
``<Figure size 1000x760 with 2 Axes>`` instead of the chart.

:func:`enable_inline_figures` registers a PNG formatter for ``Figure`` in the running IPython
shell so that a returned or ``display()``-ed figure renders as ``image/png`` under any backend.
Importing :mod:`ctxlab.analysis` (any of its modules) calls it, so notebooks need no
``%matplotlib inline``.  It never overrides a formatter that is already there: with the inline
backend active, or after ``%matplotlib inline``, matplotlib's own formatter (and its
``InlineBackend`` settings) wins; when another image format (``svg``, ``jpeg``) is selected for
figures, the PNG formatter stands aside.  Figures drawn through pyplot follow the backend as
usual.  Outside IPython (a script, a test) it does nothing.
"""

from __future__ import annotations

import io
import sys
from typing import Any

__all__ = ["enable_inline_figures", "figure_png"]

#: the type the formatter is registered for, by name (matplotlib is not imported to register it)
FIGURE_TYPE = ("matplotlib.figure", "Figure")
#: image formats that, when registered for ``Figure`` by someone else, make the PNG one stand aside
_OTHER_IMAGE_FORMATS = ("image/svg+xml", "image/jpeg", "application/pdf")


def _shell() -> Any:
    """The running IPython shell, or ``None`` (IPython is not imported here when absent)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None


def _other_image_format(fig: Any, shell: Any) -> bool:
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", {})
    for mime in _OTHER_IMAGE_FORMATS:
        fmt = formatters.get(mime)
        if fmt is not None and any(isinstance(fig, cls) for cls in fmt.type_printers):
            return True
    return False


def figure_png(fig: Any, *, dpi: float | None = None) -> bytes | None:
    """The PNG bytes of ``fig`` as shown inline (tight bounding box, the figure's own dpi).

    The IPython PNG formatter of :func:`enable_inline_figures`.

    Args:
        fig: a ``matplotlib.figure.Figure``.
        dpi: dots per inch (default: the figure's dpi; a 10 x 7.6 inch figure at 100 dpi is
            about 1000 x 760 pixels).

    Returns:
        PNG bytes, or ``None`` (no PNG output) when the figure is empty (no axes, nothing drawn)
        or another image format is registered for figures in the running shell.
    """
    if not fig.axes and not fig.lines and not fig.texts and not fig.images:
        return None
    shell = _shell()
    if shell is not None and _other_image_format(fig, shell):
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi if dpi is not None else fig.dpi, bbox_inches="tight")
    return buf.getvalue()


def enable_inline_figures(shell: Any = None) -> bool:
    """Show matplotlib figures inline as PNG in the IPython shell, whatever the backend.

    Registers :func:`figure_png` as the ``image/png`` formatter of ``matplotlib.figure.Figure``
    (by name: matplotlib is not imported), unless a PNG formatter for ``Figure`` is already
    registered (the inline backend's, or this one: calling twice is harmless).

    Args:
        shell: an ``InteractiveShell`` (default: the running one, if any).

    Returns:
        ``True`` when figures render as PNG in that shell (registered now or before), ``False``
        outside IPython or when the shell has no PNG formatter.
    """
    shell = shell if shell is not None else _shell()
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    png = formatters.get("image/png") if formatters else None
    if png is None:
        return False
    try:
        png.lookup_by_type(".".join(FIGURE_TYPE))
    except KeyError:
        png.for_type_by_name(*FIGURE_TYPE, figure_png)
    return True
