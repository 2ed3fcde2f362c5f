"""Report: tables, report.md, figures (PNG files that open and have the right size), and the
lab staying out of ``import ctxlab``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ctxlab.replay import CALL_COLUMNS, replay_many
from ctxlab.report import (
    SUMMARY_COLUMNS,
    calls_frame,
    markdown_table,
    strategy_totals,
    summary_frame,
    write_report,
)
from ctxlab.settings import CompressionSettings

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
    assert md.splitlines()[0].startswith("| transcript | strategy | calls |")
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
    assert sorted(Path(e.source).name for e in result.errors) == ["cut.json", "empty.json"]
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
        "empty.json",
        "cut.json",
        "figures/saving_by_strategy.png",
        "figures/budget/run.json__ars.png",
    ):
        assert needle in report, needle
    assert (tmp_path / "out" / "summaries.jsonl").is_file()
    names = sorted(p.relative_to(tmp_path / "out" / "figures").as_posix() for p in paths["figures"])
    assert names == ["budget/run.json__ars.png", "saving_by_strategy.png"]
    for p in paths["figures"]:
        w, h = _png_size(p)
        assert w >= 400 and h >= 300


def test_strategy_figure_only_with_several_strategies(tmp_path: Path) -> None:
    openai_transcript(tmp_path / "run.json", calls=3)
    result = replay_many([tmp_path / "run.json"], ["ars", "ars"], settings=SETTINGS, progress=False)
    from ctxlab.plotting import write_figures

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

    from ctxlab.plotting import plot_budget, plot_savings, plot_strategies, plot_view_parts

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
    from ctxlab.plotting import _text, cjk_font

    if cjk_font() is None:
        assert _text("如何更换玻璃水.txt") == "???????.txt"
    else:
        assert _text("如何更换玻璃水.txt") == "如何更换玻璃水.txt"


def test_import_ctxlab_does_not_load_the_lab() -> None:
    code = (
        "import sys, ctxlab\n"
        "bad = [m for m in ('polars', 'matplotlib', 'pyarrow', 'rich', 'tqdm', 'ipywidgets') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
