"""The figure of two findings of *The Complexity Trap* (Lindenbauer et al., 2025, arXiv:2508.21433)
next to ctxlab's measurements of them (:func:`plot_findings`; the measurements are
:func:`ctxlab.analysis.findings.findings`).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Protocol, Unpack

import polars as pl

from ctxlab.analysis.paper import PAPER
from ctxlab.analysis.plotting.options import FigureOptions, open_panels, with_options

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ctxlab.core.settings import CompressionSettings

__all__ = ["FindingsResult", "plot_findings"]


class FindingsResult(Protocol):
    """What :func:`plot_findings` reads of a :class:`ctxlab.analysis.findings.Findings` (the
    frames of :func:`~ctxlab.analysis.findings.share_by_agent`,
    :func:`~ctxlab.analysis.findings.observation_shares` and
    :func:`~ctxlab.analysis.findings.strategy_savings`, the settings and the tokenizer's name)."""

    @property
    def by_agent(self) -> pl.DataFrame: ...
    @property
    def shares(self) -> pl.DataFrame: ...
    @property
    def savings(self) -> pl.DataFrame | None: ...
    @property
    def settings(self) -> CompressionSettings: ...
    @property
    def measure(self) -> str: ...


@with_options(FigureOptions)
def plot_findings(result: FindingsResult, **options: Unpack[FigureOptions]) -> Figure:
    """The paper's numbers next to ctxlab's, in two panels: observation share per agent (left, in
    % of agent-turn tokens; dots: runs, bar: pooled, line: median run; the paper's share dashed)
    and the saving per strategy against the raw run (right, in %; ctxlab's bars, the paper's
    hatched; off when ``result.savings`` is ``None`` or empty).

    Args:
        result: a :class:`ctxlab.analysis.findings.Findings` (:func:`ctxlab.analysis.findings.findings`).
        ax: the two panels' axes (left, right), all of one figure; ``fig``: redraw into this
            figure; ``title``: the figure title (default: ``"The Complexity Trap, reproduced on
            public runs"``) — :class:`~ctxlab.analysis.plotting.options.FigureOptions`.

    Returns:
        The figure of ``ax`` or ``fig``, or a new ``matplotlib.figure.Figure`` (not registered
        with pyplot) of 11 x 4.6 inches.

    Raises:
        TypeError: an unknown keyword option.  ValueError: ``ax`` and ``fig`` both, or ``ax`` not
        two axes of one figure.
    """
    fig, (left, right) = open_panels(options, 1, 2, (11, 4.6), width_ratios=(1, 1.3))
    agents = [a for a in result.by_agent["agent"].to_list() if a != "all"]
    pooled = dict(zip(result.by_agent["agent"], result.by_agent["turn_share_pct"], strict=True))
    left.bar(range(len(agents)), [pooled[a] or 0 for a in agents], color="#ff7f0e", alpha=0.8, label="pooled")
    for i, a in enumerate(agents):
        runs = [
            100 * s
            for s in result.shares.filter(pl.col("agent") == a)["turn_share"].to_list()
            if s is not None
        ]
        left.scatter(
            [i] * len(runs), runs, s=14, color="#333333", zorder=3, label="one run" if i == 0 else None
        )
        if runs:
            median = statistics.median(runs)
            left.hlines(
                median,
                i - 0.4,
                i + 0.4,
                color="#333333",
                lw=2,
                label="median run" if i == 0 else "_nolegend_",
            )
    left.axhline(
        PAPER.observation_share_pct, color="#d62728", ls="--", label=f"paper {PAPER.observation_share_pct} %"
    )
    left.set_xticks(range(len(agents)), agents)
    left.set_ylim(0, 100)
    left.set_ylabel(f"observation share of agent-turn tokens, % ({result.measure})")
    left.set_title("observations in agent turns")
    left.legend(loc="lower right", fontsize=8)
    if result.savings is not None and not result.savings.is_empty():
        s = result.savings
        overall = s.filter(pl.col("agent") == ("all" if "all" in s["agent"] else s["agent"][0]))
        names = overall["strategy"].to_list()
        x = range(len(names))
        right.bar(
            [i - 0.27 for i in x], overall["saving_pct"], width=0.27, color="#1f77b4", label="ctxlab: sent"
        )
        right.bar(
            x, overall["cost_saving_pct"], width=0.27, color="#9ecae1", label="ctxlab: sent + summarizer"
        )
        paper = [v if v is not None else 0.0 for v in overall["paper_saving_pct"].to_list()]
        right.bar([i + 0.27 for i in x], paper, width=0.27, color="white", edgecolor="#d62728", hatch="//",
                  label="paper (Qwen3-Coder 480B, cost)")  # fmt: skip
        right.set_xticks(list(x), names)
        right.set_ylabel("saving against the raw run, %")
        right.set_ylim(0, 100)
        right.legend(loc="upper left", fontsize=8)
        t = result.settings.entry_threshold_tokens
        right.set_title(f"saving by strategy (T = {t:,} tokens, all runs pooled)")
    else:
        right.set_axis_off()
    fig.suptitle(options.get("title") or "The Complexity Trap, reproduced on public runs", fontsize=12)
    return fig
