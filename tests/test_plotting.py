"""One plotting home (issue 18): every figure of ``ctxlab.analysis`` is defined in
``ctxlab.analysis.plotting`` and takes ``ax=`` and ``title=``; the cost-per-call and findings
figures draw what their tables say, into the axes they are given.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from matplotlib.figure import Figure

import ctxlab.analysis
from ctxlab.analysis.costs import cost_table
from ctxlab.analysis.findings import (
    Findings,
    compare_with_paper,
    observation_shares,
    share_by_agent,
    strategy_savings,
)
from ctxlab.analysis.paper import PAPER
from ctxlab.analysis.plotting import plot_cost_per_call, plot_findings
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many


def figure_functions() -> dict[str, Callable[..., Any]]:
    """Every public function of every module of ``ctxlab.analysis`` annotated to return a
    ``Figure``, by ``module.name`` of where it is found (re-exports included)."""
    found: dict[str, Callable[..., Any]] = {}
    modules = pkgutil.walk_packages(ctxlab.analysis.__path__, "ctxlab.analysis.")
    for info in modules:
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
        for name in names:
            value = getattr(module, name)
            if not inspect.isfunction(value):
                continue
            returns = inspect.signature(value).return_annotation
            if str(getattr(returns, "__name__", returns)).split(".")[-1] == "Figure":
                found[f"{info.name}.{name}"] = value
    return found


def test_every_figure_function_is_in_plotting_and_takes_ax_and_title() -> None:
    functions = figure_functions()
    names = {f.__name__ for f in functions.values()}
    moved = {"plot_cost_per_call", "plot_findings"}
    assert moved | {"plot_budget", "plot_savings", "plot_strategies", "plot_sweep", "budget_figure"} <= names
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    for where, function in functions.items():
        assert function.__module__.startswith("ctxlab.analysis.plotting."), (
            f"{where} is defined outside plotting"
        )
        params = inspect.signature(function).parameters
        for option in ("ax", "title"):
            assert option in params, f"{where} takes no {option}="
            assert (params[option].kind, params[option].default) == (keyword_only, None), where
    # the old homes re-export the very same functions (notebooks and the README import them there)
    assert functions["ctxlab.analysis.costs.plot_cost_per_call"] is plot_cost_per_call
    assert functions["ctxlab.analysis.findings.plot_findings"] is plot_findings


def openai_run(path: Path, calls: int = 6, big: int = 900) -> Path:
    """An OpenAI chat message list: a task, then ``calls`` tool calls with ``big``-word results."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the KeyError in app/config.py."},
    ]
    for i in range(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        msgs.append(
            {"role": "assistant", "content": f"Step {i}: reading app/config.py.", "tool_calls": [call]}
        )
        body = " ".join(f"line{j} value_{i}_{j}" for j in range(big))
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "name": "read_file", "content": body})
    msgs.append({"role": "assistant", "content": "Done."})
    path.write_text(json.dumps(msgs), encoding="utf-8")
    return path


SETTINGS = CompressionSettings(
    summary_threshold=1, summary_keep_messages=2, summary_tool_result_token_limit=100
)


def test_cost_per_call_draws_the_cost_table_into_the_given_ax(tmp_path: Path) -> None:
    result = replay_many(
        [openai_run(tmp_path / "run.json")], ["ars", "masking"], settings=SETTINGS, progress=False
    )
    calls = result.frame()
    table = {r["strategy"]: r for r in cost_table(calls).iter_rows(named=True)}
    assert table["ars"]["summarizer_cost_usd"] > 0, "the run must reach L2 for the stacked bar to show"
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_cost_per_call(calls, ax=ax, title="mine", price_label="price row") is fig
    assert ax.get_title() == "mine\nprice row"
    # bars: no compression, then main model per strategy, then the summarizer stacked on them
    heights = [p.get_height() for p in ax.patches]
    raw, main, summ = heights[0], heights[1:3], heights[3:5]
    assert raw == pytest.approx(calls["raw_cost_usd"].sum() / calls.height)
    for i, name in enumerate(("ars", "masking")):
        row = table[name]
        assert main[i] + summ[i] == pytest.approx(row["cost_per_call_usd"])
        assert summ[i] == pytest.approx(row["summarizer_cost_usd"] / row["calls"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["no compression", "ars", "masking"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "no compression",
        "main model",
        "summarizer",
    ]
    own = plot_cost_per_call(calls)
    assert own is not fig and own.axes[0].get_title().startswith("Cost per call by strategy")
    with pytest.raises(TypeError, match=r"plot_cost_per_call\(\) got an unexpected keyword argument 'titel'"):
        plot_cost_per_call(calls, titel="x")


def test_findings_figure_draws_shares_and_savings_into_the_given_axes(tmp_path: Path) -> None:
    path = openai_run(tmp_path / "run.json", calls=12, big=400)
    settings = CompressionSettings(summary_threshold=1)
    shares = observation_shares([path], measure="char-class")
    by_agent = share_by_agent(shares)
    savings = strategy_savings([path], ["masking", "ars"], settings=settings, measure="char-class")
    result = Findings(
        shares=shares,
        by_agent=by_agent,
        savings=savings,
        comparison=compare_with_paper(by_agent, savings),
        settings=settings,
        measure="char-class",
    )
    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert plot_findings(result, ax=(left, right), title="ours") is fig
    assert fig.get_suptitle() == "ours" and list(fig.axes) == [left, right]
    pooled = by_agent.filter(pl.col("agent") != "all")["turn_share_pct"].to_list()
    assert [p.get_height() for p in left.patches] == pytest.approx(pooled)
    assert left.lines[-1].get_ydata()[0] == PAPER.observation_share_pct  # the paper's share, dashed
    sent = [p.get_height() for p in right.patches][: savings.height]
    assert sent == pytest.approx(savings["saving_pct"].to_list())
    assert (
        right.get_title()
        == f"saving by strategy (T = {settings.entry_threshold_tokens:,} tokens, all runs pooled)"
    )
    # a new figure of its own, or redrawn in place into fig=
    own = plot_findings(result)
    assert own is not fig and own.get_suptitle() == "The Complexity Trap, reproduced on public runs"
    assert plot_findings(result, fig=own) is own and len(own.axes) == 2
    with pytest.raises(ValueError, match=r"ax= and fig= both given"):
        plot_findings(result, ax=(left, right), fig=own)
    with pytest.raises(ValueError, match=r"ax= must be 2 matplotlib Axes \(one per panel\)"):
        plot_findings(result, ax=[left])
    with pytest.raises(ValueError, match=r"ax= must be axes of one figure, got axes of 2 figures"):
        plot_findings(result, ax=(left, own.axes[0]))
    with pytest.raises(TypeError, match=r"plot_findings\(\) got an unexpected keyword argument 'titel'"):
        plot_findings(result, titel="x")


def test_budget_figure_draws_into_the_panels_it_is_given(tmp_path: Path) -> None:
    from ctxlab.analysis.plotting import budget_figure

    calls = replay_many(
        [openai_run(tmp_path / "run.json")], ["ars"], settings=SETTINGS, progress=False
    ).frame()
    fig = Figure()
    top, bottom = fig.subplots(2, 1)
    assert budget_figure(calls, ax=[top, bottom], title="both") is fig
    assert fig.get_suptitle() == "both" and list(fig.axes) == [top, bottom]
    assert bottom.lines[0].get_ydata().tolist() == calls["view_tokens"].to_list()  # sent, per call
    assert top.get_title() == "request view by part (stacked), thresholds"


def test_every_figure_of_one_transcript_shares_its_token_scale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ARS sends a Chinese DeerFlow run at a fraction of its raw size (its own figure would be
    logarithmic), LangChain's baseline sends most of it (linear): both figures of the run, and the
    strategies' overlay, are drawn on one scale, the log one."""
    from ctxlab.analysis.plotting import figures
    from ctxlab.analysis.plotting.style import use_log
    from ctxlab.transcripts.locate import shared_dir

    deer = shared_dir() / "transcripts/raw/deer-flow/web/public/replay/china-food-delivery.txt"
    assert deer.is_file(), f"shared transcript missing: {deer}"
    result = replay_many(
        [deer],
        ["ars", "langchain-summarization"],
        settings=CompressionSettings(summary_threshold=16),
        progress=False,
    )
    calls = result.frame()
    own = {
        s: use_log("auto", float(calls["raw_tokens"].max()), float(g["view_tokens"].max()))  # type: ignore[arg-type]
        for (s,), g in calls.group_by("strategy")
    }
    assert own == {"ars": True, "langchain-summarization": False}  # each alone would differ
    seen: dict[str, str] = {}
    budget, strategies = figures.budget_png_figure, figures.plot_strategies

    def spy_budget(
        calls: Any, transcript: str, strategy: str, settings: Any = None, yscale: str = "auto", **kw: Any
    ) -> Figure:
        seen[strategy] = yscale
        return budget(calls, transcript, strategy, settings, yscale=yscale, **kw)

    def spy_overlay(calls: Any, transcript: str, **kw: Any) -> Figure:
        seen["overlay"] = kw["yscale"]
        fig = strategies(calls, transcript, **kw)
        assert fig.axes[0].get_yscale() == "log"
        return fig

    monkeypatch.setattr(figures, "budget_png_figure", spy_budget)
    monkeypatch.setattr(figures, "plot_strategies", spy_overlay)
    paths = figures.write_figures(calls, None, tmp_path, settings=result.settings)
    assert seen == {"ars": "log", "langchain-summarization": "log", "overlay": "log"}
    assert len([p for p in paths if p.parent.name == "budget"]) == 2


def test_a_saved_figure_holds_its_longest_tick_label(tmp_path: Path) -> None:
    """diff.png cut its y label "langchain-summarization" at the left edge (trial): every PNG is
    saved to the bounding box of what it draws, so the image's edge columns stay blank."""
    from matplotlib.figure import Figure as MplFigure
    from PIL import Image

    from ctxlab.analysis.plotting.figures import save_png

    fig = MplFigure(figsize=(4, 2))
    ax = fig.add_subplot()
    ax.barh([0, 1], [1.0, 2.0])
    ax.set_yticks([0, 1], ["langchain-summarization-with-a-long-name", "ars"])
    path = save_png(fig, tmp_path / "long.png")
    with Image.open(path) as png:
        grey = png.convert("L")
        edge = [grey.getpixel((x, y)) for x in (0, 1) for y in range(grey.height)]
    assert min(edge) > 200, "ink at the image's left edge: a label was cut"
