"""Every figure of ctxlab: token budget per call, strategies side by side, saving by strategy, the
view split by part, the two-panel budget figure of the notebooks and the explorer, the curve of
a settings sweep, the cost per call, and the findings of *The Complexity Trap* next to the paper's.

Every plot function takes its data (mostly the per-call frame,
:func:`ctxlab.analysis.report.calls_frame`), the keyword options of :class:`PlotOptions` (an
optional matplotlib ``ax`` to draw into, a ``title``) or, for a figure of several panels, of
:class:`FigureOptions` (``ax``: one axes per panel, ``fig``, ``title``), and returns the figure;
a misspelt option is a ``TypeError`` naming it.  Without ``ax`` a new
``matplotlib.figure.Figure`` is made that is *not* registered with pyplot: in Jupyter it shows
once when it is the cell's value, and it never leaks into pyplot's figure list.  Files are
rendered with the Agg canvas (no GUI backend is touched).

Labels with CJK text render with a CJK font when one is installed; without one, non-ASCII
characters in labels are replaced by ``?`` (:mod:`~ctxlab.analysis.plotting.style`).

The package, by job: :mod:`~ctxlab.analysis.plotting.style` (fonts, colours, axes),
:mod:`~ctxlab.analysis.plotting.runs` (which rows a plot draws),
:mod:`~ctxlab.analysis.plotting.options` (the keyword options every plot takes, and its axes),
:mod:`~ctxlab.analysis.plotting.plots` (the plots into one axes each),
:mod:`~ctxlab.analysis.plotting.figures` (the two-panel budget figure and the report's PNG files),
:mod:`~ctxlab.analysis.plotting.cost` (the cost per call and its PNG),
:mod:`~ctxlab.analysis.plotting.frontier` (cost saving against identifier recall, and its PNG),
:mod:`~ctxlab.analysis.plotting.stall` (each L2 round's wait on compression, and its PNG),
:mod:`~ctxlab.analysis.plotting.diff` (two experiments' paired differences, ``ctxlab diff``),
:mod:`~ctxlab.analysis.plotting.findings` (the paper's findings and ctxlab's),
:mod:`~ctxlab.analysis.plotting.distributions` (the per-run plots: the saving distribution, the
transcript × strategy heatmap, saving or cost against identifier recall).
"""

from __future__ import annotations

from ctxlab.analysis.plotting.cost import COST_FIGURE, plot_cost_per_call, write_cost_figure
from ctxlab.analysis.plotting.diff import DIFF_FIGURE, plot_diff, write_diff_figure
from ctxlab.analysis.plotting.distributions import (
    ROTATE_NAMES_OVER,
    plot_recall_scatter,
    plot_run_heatmap,
    plot_savings,
)
from ctxlab.analysis.plotting.figures import budget_figure, figure_name, reaching_runs, write_figures
from ctxlab.analysis.plotting.findings import plot_findings
from ctxlab.analysis.plotting.frontier import FRONTIER_FIGURE, plot_frontier, write_frontier_figure
from ctxlab.analysis.plotting.options import FigureOptions, PlotOptions
from ctxlab.analysis.plotting.plots import (
    plot_budget,
    plot_strategies,
    plot_sweep,
    plot_view_parts,
)
from ctxlab.analysis.plotting.stall import STALL_FIGURE, plot_stall, write_stall_figure
from ctxlab.analysis.plotting.style import LOG_RATIO, cjk_font, format_tokens

__all__ = [
    "COST_FIGURE",
    "DIFF_FIGURE",
    "FRONTIER_FIGURE",
    "LOG_RATIO",
    "ROTATE_NAMES_OVER",
    "STALL_FIGURE",
    "FigureOptions",
    "PlotOptions",
    "budget_figure",
    "cjk_font",
    "figure_name",
    "format_tokens",
    "plot_budget",
    "plot_cost_per_call",
    "plot_diff",
    "plot_findings",
    "plot_frontier",
    "plot_recall_scatter",
    "plot_run_heatmap",
    "plot_savings",
    "plot_stall",
    "plot_strategies",
    "plot_sweep",
    "plot_view_parts",
    "reaching_runs",
    "write_cost_figure",
    "write_diff_figure",
    "write_figures",
    "write_frontier_figure",
    "write_stall_figure",
]
