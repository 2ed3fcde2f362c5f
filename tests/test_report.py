"""Report: tables, report.md, figures (PNG files that open and have the right size), and the
lab staying out of ``import ctxlab``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ctxlab.analysis.report import (
    SUMMARY_COLUMNS,
    calls_frame,
    markdown_table,
    strategy_totals,
    summary_frame,
    write_report,
)
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import CALL_COLUMNS, replay_many

SETTINGS = CompressionSettings(
    summary_threshold=1, summary_keep_messages=2, summary_tool_result_token_limit=100
)


def openai_transcript(path: Path, calls: int = 6, big: int = 900) -> Path:
    """An OpenAI chat message list: a task, then ``calls`` tool calls with ``big``-word results."""
    msgs: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the KeyError in app/config.py (ticket 40512)."},
    ]
    for i in range(calls):
        msgs.append(
            {
                "role": "assistant",
                "content": f"Step {i}: reading app/config.py again.",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": "app/config.py"})},
                    }
                ],
            }
        )
        body = " ".join(f"line{j} value_{i}_{j}" for j in range(big))
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "name": "read_file", "content": body})
    msgs.append({"role": "assistant", "content": "Done: app/config.py no longer raises KeyError."})
    path.write_text(json.dumps(msgs), encoding="utf-8")
    return path


def rows(**over):
    base = {c: None for c in CALL_COLUMNS}
    base.update(
        transcript="t",
        strategy="s",
        call_index=0,
        message_index=1,
        raw_tokens=100,
        view_tokens=100,
        view_system_tokens=10,
        view_user_tokens=90,
        view_assistant_tokens=0,
        view_tool_tokens=0,
        view_summary_tokens=0,
        view_messages=1,
        level="none",
        offloaded=0,
        truncated_args=0,
        summarizer_calls=0,
        summarizer_input_tokens=0,
        summarizer_output_tokens=0,
        forced_by_overflow=False,
        overhead_ms=1.0,
        cache_reusable_tokens=0,
        cache_reusable_share=0.0,
        unmatched_tool_pairs=0,
    )
    base.update(over)
    return base


def test_calls_frame_schema_even_when_empty() -> None:
    empty = calls_frame([])
    assert empty.columns == list(CALL_COLUMNS) and empty.height == 0
    assert summary_frame(empty).columns == list(SUMMARY_COLUMNS)


def test_summary_numbers() -> None:
    df = calls_frame(
        [
            rows(
                call_index=0,
                raw_tokens=100,
                view_tokens=100,
                overhead_ms=1.0,
                cache_reusable_share=0.0,
                retention=None,
            ),
            rows(
                call_index=1,
                raw_tokens=300,
                view_tokens=150,
                level="L1",
                overhead_ms=3.0,
                cache_reusable_share=0.5,
                retention=1.0,
            ),
            rows(
                call_index=2,
                raw_tokens=600,
                view_tokens=150,
                level="L2",
                summarizer_calls=1,
                summarizer_input_tokens=400,
                summarizer_output_tokens=50,
                overhead_ms=5.0,
                cache_reusable_share=0.1,
                retention=0.5,
            ),
            rows(strategy="other", raw_tokens=100, view_tokens=100),
        ]
    )
    s = summary_frame(df)
    r = s.filter(pl.col("strategy") == "s").row(0, named=True)
    assert r["calls"] == 3
    assert r["raw_tokens_total"] == 1000 and r["sent_tokens_total"] == 400
    assert r["saving_pct"] == pytest.approx(60.0)
    assert (r["l1_rounds"], r["l2_rounds"]) == (1, 1)
    assert (r["summarizer_calls"], r["summarizer_input_tokens"], r["summarizer_output_tokens"]) == (
        1,
        400,
        50,
    )
    assert r["mean_overhead_ms"] == pytest.approx(3.0)
    assert r["mean_cache_reusable_share"] == pytest.approx(0.2)
    assert r["mean_retention"] == pytest.approx(0.75)  # the empty value is skipped
    assert r["max_view_tokens"] == 150 and r["max_raw_tokens"] == 600
    totals = strategy_totals(df)
    assert totals["strategy"].to_list() == ["s", "other"]
    assert totals.filter(pl.col("strategy") == "other")["saving_pct"].item() == pytest.approx(0.0)
    md = markdown_table(s)
    assert md.splitlines()[0].startswith(
        "| transcript | strategy | data_provenance | transcript_format | reached_threshold | calls |"
    )
    assert "| 60.0 |" in md


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_write_report_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    good = openai_transcript(tmp_path / "in" / "run.json")
    (tmp_path / "in" / "empty.json").write_text("", encoding="utf-8")
    (tmp_path / "in" / "cut.json").write_text(
        '[{"role": "user", "content": "hi"}, {"role": "assi', encoding="utf-8"
    )
    result = replay_many(
        [tmp_path / "in"], ["ars"], settings=SETTINGS, out_dir=tmp_path / "out", progress=False
    )
    assert result.replayed == 1
    # an empty file in a folder is no transcript: skipped with a warning, not a failure (s39)
    assert sorted(Path(e.source).name for e in result.errors) == ["cut.json"]
    paths = write_report(result, tmp_path / "out", command="pytest")
    calls = pl.read_parquet(paths["calls"])
    assert calls.columns == list(CALL_COLUMNS)
    assert calls.height == 7 and set(calls["transcript"]) == {good.name}
    assert {"L1", "L2"} <= set(calls["level"])
    summary = pl.read_csv(paths["summary"])
    assert summary.columns == list(SUMMARY_COLUMNS)
    report = paths["report"].read_text(encoding="utf-8")
    for needle in (
        "## Settings",
        "T = 1,024 tokens",
        "T2 = 410 tokens",
        "## Per transcript and strategy",
        "## Metric definitions",
        "cache_reusable_tokens",
        "retention",
        "## Errors and skipped files",
        "cut.json",
        "figures/saving_by_strategy.png",
        "figures/budget/run.json__ars.png",
        "## Cost and summary fidelity",
        "anthropic:claude-sonnet-4-5",
        "prices as of 2026-12-01",
        "**needed_recall**",
        "**cost_usd**",
        "figures/cost_per_call.png",
        "figures/frontier.png",
        "cost saving % per run, 95 % CI (anthropic:claude-sonnet-4-5)",
        "qualified runs (anthropic:claude-sonnet-4-5)",
    ):
        assert needle in report, needle
    # the frontier table's row: one run, so no interval (a bootstrap of one value is that value:
    # "[46.0, 46.0]" read as certainty, s40 trial); it summarized, so it qualifies
    ars = summary.filter(pl.col("strategy") == "ars").row(0, named=True)
    saving = round(ars["cost_saving_pct"], 1)
    recall = round(ars["needed_recall"], 3)
    one = "(no interval from 1 run)"
    assert f"| {saving} {one} | {recall} {one} | 1 | 1 |" in report
    rounds = [json.loads(line) for line in (tmp_path / "out" / "summaries.jsonl").read_text().splitlines()]
    assert rounds and all("needed_recall" in r and "span_recall" in r for r in rounds)
    names = sorted(p.relative_to(tmp_path / "out" / "figures").as_posix() for p in paths["figures"])
    assert names == [
        "budget/run.json__ars.png",
        "cost_per_call.png",
        "frontier.png",
        "saving_by_strategy.png",
    ]
    for p in paths["figures"]:
        w, h = _png_size(p)
        assert w >= 400 and h >= 300


def test_strategy_figure_only_with_several_strategies(tmp_path: Path) -> None:
    openai_transcript(tmp_path / "run.json", calls=4)
    result = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False)
    from ctxlab.analysis.plotting import write_figures

    df = result.frame().with_columns(
        pl.when(pl.int_range(pl.len()) < pl.len() // 2)
        .then(pl.lit("a"))
        .otherwise(pl.lit("b"))
        .alias("strategy")
    )
    paths = write_figures(df, None, tmp_path / "fig")
    assert sorted(p.relative_to(tmp_path / "fig").as_posix() for p in paths) == [
        "budget/run.json__a.png",
        "budget/run.json__b.png",
        "saving_by_strategy.png",
        "strategies/run.json.png",
    ]


def test_plot_functions_draw_into_a_given_ax(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from ctxlab.analysis.plotting import plot_budget, plot_savings, plot_strategies, plot_view_parts

    openai_transcript(tmp_path / "run.json", calls=4)
    df = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False).frame()
    fig = Figure()
    axes = fig.subplots(2, 2).ravel()
    assert plot_budget(df, ax=axes[0]) is fig
    assert plot_strategies(df, ax=axes[1]) is fig
    assert plot_savings(df, ax=axes[2]) is fig
    assert plot_view_parts(df, ax=axes[3]) is fig
    ax = axes[0]
    assert ax.get_xlabel() == "model call" and ax.get_ylabel().startswith("tokens (estimate")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "raw (uncompressed)" in labels and "sent (view)" in labels  # compressed: no "= raw" note
    assert any(s.startswith("T = 1,024") for s in labels) and any(s.startswith("T2 = 410") for s in labels)
    assert any(s.startswith("L1 call") for s in labels) and any(s.startswith("L2 call") for s in labels)
    parts = [t.get_text() for t in axes[3].get_legend().get_texts()]
    assert parts[:5] == ["system + tools", "user", "assistant", "tool", "summary"]
    # a new figure when no ax is given, not registered with pyplot
    standalone = plot_budget(df)
    assert isinstance(standalone, Figure) and standalone is not fig


def test_cjk_labels_render_or_fall_back() -> None:
    from ctxlab.analysis.plotting.style import cjk_font, label_text

    if cjk_font() is None:
        assert label_text("如何更换玻璃水.txt") == "???????.txt"
    else:
        assert label_text("如何更换玻璃水.txt") == "如何更换玻璃水.txt"


def test_import_ctxlab_does_not_load_the_lab() -> None:
    code = (
        "import sys, ctxlab\n"
        "bad = [m for m in ('polars', 'matplotlib', 'pyarrow', 'rich', 'tqdm', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- figures: tick labels, line styles, slanted names ------------------------------------------------


def test_token_tick_labels_are_exact() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ctxlab.analysis.plotting import format_tokens, plot_budget

    assert [format_tokens(v) for v in (0, 950, 1000, 1250, 12_500, 17_500, 20_000, 1_500_000)] == [
        "0",
        "950",
        "1k",
        "1.25k",
        "12.5k",
        "17.5k",
        "20k",
        "1.5M",
    ]
    df = calls_frame(
        [
            rows(call_index=i, raw_tokens=v, view_tokens=v, threshold=None)
            for i, v in enumerate([10_000, 20_000])
        ]
    )
    fig = plot_budget(df, yscale="linear")
    ax = fig.axes[0]
    ax.set_yticks([10_000, 12_500, 15_000, 17_500, 20_000])
    FigureCanvasAgg(fig).draw()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["10k", "12.5k", "15k", "17.5k", "20k"]


def test_strategy_lines_differ_in_style_and_marker(tmp_path: Path) -> None:
    from ctxlab.analysis.plotting import plot_strategies

    openai_transcript(tmp_path / "run.json", calls=4)
    df = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False).frame()
    # three strategies that send exactly the same tokens
    df = pl.concat([df.with_columns(pl.lit(name).alias("strategy")) for name in ("a", "b", "c")])
    fig = plot_strategies(df)
    lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
    sent = [lines[f"{n} (sent)"] for n in ("a", "b", "c")]
    # get_linestyle() names every custom dash pattern "--": compare the patterns themselves
    assert len({(ln.get_linestyle(), str(ln._unscaled_dash_pattern)) for ln in sent}) == 3
    assert len({ln.get_marker() for ln in sent}) == 3
    # the line drawn first is the widest, so it shows around the ones drawn on top of it
    assert sent[0].get_linewidth() > sent[1].get_linewidth() > sent[2].get_linewidth()
    assert lines["raw (uncompressed)"].get_linestyle() == "--"


def test_savings_slants_long_names_and_keeps_them_inside(tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ctxlab.analysis.plotting import plot_savings

    openai_transcript(tmp_path / "run.json", calls=3)
    df = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False).frame()

    short = plot_savings(df)
    assert all(t.get_rotation() == 0 for t in short.axes[0].get_xticklabels())

    long_names = ["deepagents-summarization", "langchain-summarization", "ars"]
    many = pl.concat([df.with_columns(pl.lit(n).alias("strategy")) for n in long_names])
    fig = plot_savings(many)
    ax = fig.axes[0]
    assert all(t.get_rotation() == 30 for t in ax.get_xticklabels())
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    names = ax.xaxis.get_tightbbox(renderer)  # the slanted names and the x label, in pixels
    assert names.y0 >= 0 and names.x0 >= 0, "a strategy name is cut off at the figure's edge"


def test_budget_figure_and_sweep_curve(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from ctxlab.analysis.plotting import budget_figure, plot_sweep
    from ctxlab.replay import sweep

    openai_transcript(tmp_path / "run.json", calls=4)
    df = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False).frame()
    fig = budget_figure(df)
    top, bottom = fig.axes
    assert fig.get_suptitle() == "run.json  [ars]"
    assert top.get_xlabel() == "" and bottom.get_xlabel() == "model call"
    assert budget_figure(df, fig=fig) is fig and list(fig.axes) == [top, bottom]  # redrawn in place

    curve = sweep([tmp_path / "run.json"], "summary_l2_trigger_ratio", [0.2, 0.6], settings=SETTINGS)
    fig = plot_sweep(curve)
    assert isinstance(fig, Figure)
    left, right = fig.axes
    assert (
        left.get_ylabel() == "tokens saved (% of raw)" and right.get_ylabel() == "L2 rounds (all transcripts)"
    )
    assert left.get_xlabel() == "summary_l2_trigger_ratio (T2 / T), and below it T2 in tokens"
    assert [t.get_text() for t in left.get_xticklabels()] == ["0.2\n205", "0.6\n614"]
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["saving %", "L2 rounds"]


# --- tables of a replay and of a live agent -----------------------------------------------------------


def test_rounds_offloads_and_summaries_of_a_replay(tmp_path: Path) -> None:
    from ctxlab.analysis.report import offloads_frame, rounds_frame, summaries_text

    openai_transcript(tmp_path / "run.json", calls=5)
    result = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False)
    calls = result.frame()
    rounds = rounds_frame(calls)
    assert set(rounds["level"].to_list()) <= {"L1", "L2"}
    assert rounds.height == calls.filter(pl.col("level") != "none").height > 0
    assert all(0 <= v <= 100 for v in rounds["saved_pct"].to_list())
    offloads = offloads_frame(result)
    assert offloads.columns == ["transcript", "strategy", "path", "bytes", "first_call", "calls"]
    assert offloads.height > 0 and offloads["path"].str.starts_with("/").all()
    assert offloads["calls"].min() >= 1 and offloads["bytes"].min() > 0
    text = summaries_text(result, max_chars=50)
    if result.summaries:
        assert text.startswith("=== run.json [ars] call ") and "more characters]" in text
    else:
        assert text == "(no L2 round: no summary)"


def test_tables_of_a_live_agent(tmp_path: Path) -> None:
    from deepagents.backends import FilesystemBackend
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    from ctxlab import CompressionMiddleware
    from ctxlab.analysis.report import events_frame, files_frame, messages_frame
    from ctxlab.core.builtin import StructuredSummarizer
    from ctxlab.replay import scripted_tool_model

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + " ".join(f"line{j} value_{j}" for j in range(900))

    model = scripted_tool_model([[("read_file", {"path": f"f{i}.py"})] for i in range(4)], final="Done.")
    mw = CompressionMiddleware(
        settings=SETTINGS,
        backend=FilesystemBackend(root_dir=str(tmp_path / "files"), virtual_mode=True),
        summarizer=StructuredSummarizer(),
    )
    agent = create_agent(model, tools=[read_file], middleware=[mw])
    events, state = [], None
    for mode, chunk in agent.stream(
        {"messages": [{"role": "user", "content": "read them"}]}, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            state = chunk
    frame = events_frame(events)
    assert frame.height == len(events) > 0
    assert set(frame["phase"].to_list()) <= {"started", "completed", "failed"}
    assert frame.filter(pl.col("phase") == "completed")["offloaded"].sum() > 0
    assert frame["threshold"].drop_nulls().unique().to_list() == [1024]
    msgs = messages_frame(state["messages"])
    assert msgs.columns == ["i", "type", "tool_calls", "tokens", "text"]
    assert msgs["tool_calls"].to_list()[1:3] == [1, 0] and msgs["text"].str.len_chars().max() <= 70
    files = files_frame(tmp_path / "files")
    assert files.height > 0 and files["path"].str.starts_with("/").all()
    assert model.calls == 5


def test_plots_share_one_calling_convention() -> None:
    """The keyword options are declared once (PlotOptions / FigureOptions) yet every plot shows
    them in its signature, rejects a misspelt one, and picks, titles and returns the same run."""
    import inspect

    from matplotlib.figure import Figure

    from ctxlab.analysis.plotting import (
        budget_figure,
        plot_budget,
        plot_savings,
        plot_strategies,
        plot_sweep,
        plot_view_parts,
    )

    keyword_only = inspect.Parameter.KEYWORD_ONLY
    for plot in (plot_budget, plot_view_parts, plot_strategies, plot_savings, plot_sweep):
        params = inspect.signature(plot).parameters
        assert [(params[n].kind, params[n].default) for n in ("ax", "title")] == [(keyword_only, None)] * 2
        assert list(params)[-2:] == ["ax", "title"], plot.__name__  # no **options left in help()
    assert list(inspect.signature(budget_figure).parameters) == [
        "calls",
        "transcript",
        "strategy",
        "ax",
        "fig",
        "title",
    ]

    df = calls_frame(
        [
            rows(transcript=t, strategy=s, call_index=i, raw_tokens=100 + i, view_tokens=90 + i)
            for t in ("t1", "t2")
            for s in ("a", "b")
            for i in range(3)
        ]
    )
    with pytest.raises(TypeError, match=r"plot_budget\(\) got an unexpected keyword argument 'titel'"):
        plot_budget(df, titel="x")
    with pytest.raises(TypeError, match=r"budget_figure\(\) got an unexpected keyword argument 'axes'"):
        budget_figure(df, axes=None)

    # the default run is the first transcript under its first strategy; a named run is drawn and titled
    assert plot_budget(df).axes[0].get_title() == "t1  [a]"
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_budget(df, "t2", "b", ax=ax, yscale="linear") is fig
    assert ax.get_title() == "t2  [b]" and ax.get_yscale() == "linear"
    assert ax.lines[0].get_ydata().tolist() == [90, 91, 92]
    assert plot_view_parts(df, "t2", "b").axes[0].get_title() == "t2  [b]: view by part"
    assert plot_view_parts(df, "t2", title="mine").axes[0].get_title() == "mine"
    assert plot_strategies(df, "t2", strategies=["b"]).axes[0].get_title() == "t2: strategies"
    assert plot_savings(df, title="saved").axes[0].get_title() == "saved"
    assert budget_figure(df, None, "b", title="both").get_suptitle() == "both"
    assert budget_figure(df, "t2").get_suptitle() == "t2  [a]"


def test_a_misspelt_run_or_strategy_is_an_error_naming_what_the_frame_has(tmp_path: Path) -> None:
    from ctxlab.analysis.plotting import budget_figure, plot_budget, plot_strategies, plot_view_parts

    openai_transcript(tmp_path / "run.json", calls=3)
    df = replay_many([tmp_path / "run.json"], ["ars"], settings=SETTINGS, progress=False).frame()
    transcript = df["transcript"][0]
    for draw in (plot_budget, plot_view_parts, budget_figure):
        with pytest.raises(ValueError, match=r"no transcript 'nope\.json' in the calls frame; it has: '"):
            draw(df, "nope.json")
        with pytest.raises(ValueError, match=r"no strategy 'nope' in the calls frame; it has: 'ars'"):
            draw(df, transcript, "nope")
    with pytest.raises(ValueError, match=r"no strategy 'nope' in the calls frame"):
        plot_strategies(df, strategies=["ars", "nope"])
    assert plot_strategies(df, strategies=["ars"]).axes[0].lines  # a known one still draws


def test_a_cell_is_written_by_the_registry_unit_of_its_column() -> None:
    """Percent columns whose names do not end in ``_pct`` (the feasible and without-failed cost
    savings) printed "46" beside "55.6" in one row (s40 trial): every registry column is written
    by its unit, so one row reads alike."""
    from ctxlab.analysis.cells import cell
    from ctxlab.replay.columns import RUN_REGISTRY

    digits = {"percent": 1, "usd": 4}
    for col in RUN_REGISTRY:
        if col.unit in digits:
            text = cell(46.0, col.name)
            assert text == f"{46.0:.{digits[col.unit]}f}", (col.name, text)
