"""Issue 10 through the ``ctxlab`` command: overflow rounds, failures that are failures,
provenance, plugins-folder strategies renamed, and the CLI hygiene items (one test each)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

from ctxlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]
RAW = REPO.parent / "shared" / "transcripts" / "raw"
SMALL = RAW / "claude-code" / "snapshot-tests" / "tests" / "coverage-test-fix" / "transcript.jsonl"
OPENCODE = RAW / "opencode" / "session-ses_434e.md"
QUIET = ["--no-progress"]


@pytest.fixture(scope="module", autouse=True)
def shared() -> None:
    for p in (SMALL, OPENCODE):
        assert p.is_file(), f"shared transcript missing: {p} (../shared must sit beside the repository)"


@pytest.fixture(autouse=True)
def no_env_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTXLAB_PLUGINS_DIR", raising=False)


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxlab", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        cwd=cwd,
        timeout=600,
    )


# --- 1. overflow, as a live agent meets it ---------------------------------------------------------


def test_a_24k_window_on_the_sample_shows_its_overflow_rounds(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    assert main(["replay", "--context-window", "24000", "--out", str(out), "--figures", "none", *QUIET]) == 0
    summary = pl.read_csv(out / "summary.csv")
    # the refusals a live create_agent meets (tests/test_differential.py): 11 since the structured
    # summary states what happened to each file and command (issue 28), 12 before
    assert summary["overflow_rounds"].to_list() == [11]
    assert summary["l2_rounds"].to_list() == [11]
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls["overflow_errors"].sum() == 11 and calls["forced_by_overflow"].sum() == 11
    assert (calls["view_tokens"] <= 24_000 * 1.1).all()
    stdout = capsys.readouterr().out
    assert (
        "overflow rounds" in stdout and "context window 24,000 tokens (tiktoken, --context-window)" in stdout
    )
    # the tables put the saving over the feasible calls (the verdicts') and the infeasible count
    # beside the plain saving, which counts requests no agent could send (s40 trial: 86.5 % and
    # 66.7 % stood alone under a summary saying 0.0 %)
    ars = summary.row(0, named=True)
    header = next(line for line in stdout.splitlines() if "feasible saving %" in line and "runs" in line)
    row = next(line for line in stdout.splitlines() if line.startswith("│ ars ") and "│" in line[6:])
    cells = [c.strip() for c in row.strip("│").split("│")]
    names = [c.strip() for c in header.strip("┃").split("┃")]
    assert cells[names.index("feasible saving %")] == f"{ars['saving_pct_feasible']:.1f}"
    assert cells[names.index("infeasible")] == f"{ars['infeasible_calls']:,}" and ars["infeasible_calls"] > 0
    assert "infeasible: calls whose uncompressed request is over the window (24,000 tokens" in stdout
    assert "has a tool result without its call" in stdout
    assert stdout.count("feasible saving %") >= 3  # runs, per strategy, cost (and the cost note)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "overflow rounds (calls in which the provider refused a request above the window" in report
    assert "ars 11" in report


def test_a_window_from_a_model_profile_and_its_errors(tmp_path: Path, capsys) -> None:
    from ctxlab.replay import profile_window

    tokens = profile_window("anthropic:claude-sonnet-4-5")
    assert tokens >= 100_000
    out = tmp_path / "o"
    args = ["replay", str(SMALL), "--context-window-from", "anthropic:claude-sonnet-4-5", "--out", str(out)]
    assert main([*args, "--figures", "none", *QUIET]) == 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["context_window"] == f"{tokens:,} tokens (tiktoken, profile anthropic:claude-sonnet-4-5)"
    assert main(["replay", str(SMALL), "--context-window-from", "nosuch:model", *QUIET]) == 2
    assert "no model profiles for provider 'nosuch'" in capsys.readouterr().err
    assert (
        main(["replay", str(SMALL), "--context-window", "100", "--context-window-from", "anthropic:x"]) == 2
    )
    assert "not both" in capsys.readouterr().err


def test_a_window_no_strategy_fits_fails_the_run_and_writes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    assert main(["replay", str(SMALL), "--context-window", "300", "--out", str(out), *QUIET]) == 1
    err = capsys.readouterr().err
    # the call named is the first one no view fits (issue 24: call 2 now recovers by trimming)
    assert "ContextOverflowError" in err and "nothing written" in err
    assert re.search(r"at call \d+ \(transcript message \d+\)", err), err
    assert not (out / "calls.parquet").exists() and not (out / "files").exists()


# --- 4. failures are failures ----------------------------------------------------------------------


def test_an_unreachable_summarizer_exits_1_and_its_report_lists_the_failed_summaries(tmp_path: Path) -> None:
    out = tmp_path / "o"
    env = {"ANTHROPIC_API_KEY": "ctxlab-test-no-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    proc = run_cli(
        "replay",
        str(OPENCODE),
        "--summarizer-model",
        "anthropic:claude-haiku-4-5",
        "--summary-threshold",
        "8",
        "--limit-calls",
        "12",
        "--figures",
        "none",
        "--out",
        str(out),
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    summary = pl.read_csv(out / "summary.csv")
    errors = summary["summary_errors"][0]
    assert errors >= 1 and errors == summary["l2_rounds"][0]
    # every call from the first failed round on was sent with an error notice: no saving left
    assert summary["saving_pct_without_failed"][0] < summary["saving_pct"][0]
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Errors and skipped files", 1)[1].split("\n## ", 1)[0]
    # the client's own words for the refused connection ("Connection error." in anthropic 2.16,
    # "AnthropicConnectionError: Connection to 127.0.0.1:9 failed" in 2.17)
    assert "failed summaries" in section and "onnection" in section
    assert f"Failed, text-less or fallback L2 summaries ({errors})" in section
    assert "L2 summaries failed.** Its saving" in report
    assert "*" in proc.stdout and "failed summaries" in proc.stdout


def test_a_missing_path_is_a_failure(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    assert main(["replay", str(SMALL), str(tmp_path / "nope.json"), "--out", str(out), *QUIET]) == 1
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "--keep-going" in err
    assert not out.exists()
    assert (
        main(["replay", str(SMALL), str(tmp_path / "nope.json"), "--out", str(out), "--keep-going", *QUIET])
        == 1
    )
    assert pl.read_parquet(out / "calls.parquet").height > 0  # the good file was replayed
    assert "nope.json" in (out / "report.md").read_text(encoding="utf-8")


def test_a_failing_strategy_exits_1_and_keep_going_runs_the_others(tmp_path: Path, capsys) -> None:
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "broken.py").write_text(
        "from ctxlab.core.hookspecs import hookimpl\n"
        "@hookimpl\n"
        "def ctxlab_register_strategies(register):\n"
        "    register('broken', lambda settings: 42, 'a factory that returns nothing usable')\n"
    )
    out = tmp_path / "o"
    args = ["compare", str(SMALL), "--plugins-dir", str(plug), "--out", str(out), *QUIET]
    # without --keep-going the batch stops at the failing strategy: ars ran first and is written
    assert main([*args, "--strategies", "ars,broken"]) == 1
    captured = capsys.readouterr()
    assert "failed run: transcript.jsonl [broken]" in captured.out and "stopped at the first" in captured.err
    assert pl.read_parquet(out / "calls.parquet")["strategy"].unique().to_list() == ["ars"]
    assert "failed run" in (out / "report.md").read_text(encoding="utf-8")
    # broken first: it stops the batch before anything is replayed; --keep-going runs ars too
    assert main([*args, "--strategies", "broken,ars"]) == 1
    assert "nothing could be replayed" in capsys.readouterr().err
    assert main([*args, "--strategies", "broken,ars", "--keep-going"]) == 1
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls["strategy"].unique().to_list() == ["ars"]


# --- 5. provenance, and plugins-folder strategies ------------------------------------------------


NO_L2 = (
    "from ctxlab.core.cutoff import CutoffDecision\n"
    "from ctxlab.core.hookspecs import hookimpl\n\n"
    "@hookimpl(tryfirst=True)\n"
    "def ctxlab_select_cutoff(messages, ctx):\n"
    "    return CutoffDecision(None, 'plugins-dir rule: never summarize')\n"
)


def test_a_plugins_folder_hook_renames_the_strategies_and_the_report_names_it(tmp_path: Path, capsys) -> None:
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "no_l2.py").write_text(NO_L2)
    out = tmp_path / "o"
    common = ["--summary-threshold", "2", "--summary-keep-messages", "4", "--figures", "none", *QUIET]
    assert (
        main(
            [
                "compare",
                str(SMALL),
                "--strategies",
                "ars,masking",
                "--plugins-dir",
                str(plug),
                "--out",
                str(out),
                *common,
            ]
        )
        == 0
    )
    calls = pl.read_parquet(out / "calls.parquet")
    assert sorted(calls["strategy"].unique().to_list()) == ["ars+no_l2", "masking+no_l2"]
    assert (calls["level"] == "L2").sum() == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    provenance = report.split("## Provenance", 1)[1]
    assert "| `ars+no_l2` | `ars` | dir:no_l2.py (ctxlab_select_cutoff) |" in provenance
    assert f"plugins folder ({plug / 'no_l2.py'})" in provenance
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["strategies"]["ars+no_l2"]["plugins"] == [
        {"name": "dir:no_l2.py", "hooks": ["ctxlab_select_cutoff"]}
    ]
    # the same record is the calls.parquet metadata
    meta = json.loads(pl.read_parquet_metadata(out / "calls.parquet")["ctxlab"])
    assert meta["strategies"] == record["strategies"] and meta["command"].startswith("ctxlab compare")


def test_provenance_names_versions_environment_settings_and_command(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CTXLAB_MASKING_KEEP", "7")
    out = tmp_path / "o"
    assert (
        main(
            ["replay", str(SMALL), "--summary-threshold", "2", "--out", str(out), "--figures", "none", *QUIET]
        )
        == 0
    )
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    import ctxlab

    assert record["ctxlab"] and record["python"] == sys.version.split()[0]
    assert record["packages"]["langchain-core"] and record["packages"]["langgraph"]
    assert record["environment"] == {"CTXLAB_MASKING_KEEP": "7"}
    assert (
        record["settings"]["summary_threshold"] == 2 and record["settings"]["entry_threshold_tokens"] == 2048
    )
    assert record["measure"] == "char-class"
    # no --context-window: the window of the price row's model (issue 27), named with its source
    assert record["context_window"].endswith(
        "(tiktoken, the price row's model anthropic:claude-sonnet-4-5 (its profile))"
    )
    assert (
        record["command"]
        == f"ctxlab replay {SMALL} --summary-threshold 2 --out {out} --figures none --no-progress"
    )
    assert any(p["name"] == "ctxlab.builtin.keep-recent-cutoff" for p in record["plugins"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- ctxlab {ctxlab.__version__}" in report.split("## Provenance", 1)[1]
    assert "`CTXLAB_MASKING_KEEP=7`" in report


def test_the_lab_reads_the_plugins_folder_of_the_environment(tmp_path: Path, monkeypatch) -> None:
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "no_l2.py").write_text(NO_L2)
    monkeypatch.setenv("CTXLAB_PLUGINS_DIR", str(plug))
    out = tmp_path / "o"
    assert main(["replay", str(SMALL), "--out", str(out), "--figures", "none", *QUIET]) == 0
    assert pl.read_parquet(out / "calls.parquet")["strategy"].unique().to_list() == ["ars+no_l2"]
    assert json.loads((out / "run.json").read_text())["environment"]["CTXLAB_PLUGINS_DIR"] == str(plug)


# --- 6. CLI hygiene --------------------------------------------------------------------------------


def test_a_strategy_named_twice_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["compare", str(SMALL), "--strategies", "ars,ars", "--out", str(tmp_path / "o")]) == 2
    assert "names 'ars' twice" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_tables_are_written_in_full_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    long_name = "a-transcript-with-a-rather-long-name-that-a-terminal-table-would-cut.jsonl"
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SMALL, folder / long_name)
    proc = run_cli(
        "replay",
        str(folder / long_name),
        "--out",
        str(tmp_path / "o"),
        "--figures",
        "none",
        env={"COLUMNS": "60"},
    )
    assert proc.returncode == 0, proc.stderr
    assert long_name in proc.stdout and "…" not in proc.stdout and "..." not in proc.stdout
    for column in ("raw tokens", "sent tokens", "cache share", "max view", "failed summaries"):
        assert column in proc.stdout


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    proc = run_cli("replay", str(SMALL), "--out", str(tmp_path / "o"), "--figures", "none")
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "it/s" not in proc.stderr and "call/s" not in proc.stderr


def test_version_and_python_dash_m(capsys) -> None:
    import ctxlab

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"ctxlab {ctxlab.__version__} (Python ")
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith(f"ctxlab {ctxlab.__version__}")


@pytest.mark.parametrize(
    "needle",
    [
        "(default: ars)",
        "(default: out/replay)",
        "(default: char-class)",
        "(default: tiktoken)",
        "(default: reached)",
        "(default: 100)",
        "(default: 10)",
        "(default: 300)",
        "(default: 0.4)",
        "(default: the window of the --price-model row's model, from its LangChain profile, when one is known)",
        "(default: auto)",
        "(default: all)",
        "(default: the bundled sample)",
        "(default: the offline structured summary)",
        "(default: $CTXLAB_PLUGINS_DIR, else none)",
        "default: stop at the first failure",
    ],
)
def test_help_shows_the_defaults(needle: str, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert needle in text


def test_no_transcripts_under_a_path_is_said_so_and_nothing_is_written(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("not a transcript")
    out = tmp_path / "o"
    assert main(["replay", str(empty), "--out", str(out), *QUIET]) == 1
    err = capsys.readouterr().err
    assert f"no transcripts found under {empty}" in err and "nothing could be replayed" not in err
    assert not out.exists()


def test_nothing_is_written_when_nothing_was_replayed(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / "report.md").write_text("an earlier run's report")
    # every run fails (no strategy fits a 300-token window): the earlier results stay as they were
    assert main(["replay", str(SMALL), "--context-window", "300", "--out", str(out), *QUIET]) == 1
    assert "nothing could be replayed; nothing written" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]


def test_masking_is_labelled_masking_not_l1(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    args = [
        "compare",
        str(SMALL),
        "--strategies",
        "ars,masking",
        "--summary-threshold",
        "1",
        "--out",
        str(out),
    ]
    assert main([*args, "--figures", "none", *QUIET]) == 0
    stdout = capsys.readouterr().out
    header = next(line for line in stdout.splitlines() if "strategy" in line and "L2" in line)
    assert "masking" in header.split("strategy", 1)[1]  # a column of its own
    masking_row = next(line for line in stdout.splitlines() if "│ masking" in line and "│" in line)
    totals = pl.read_csv(out / "summary.csv").filter(pl.col("strategy") == "masking")
    assert totals["l1_rounds"][0] > 0
    cells = [c.strip() for c in masking_row.split("│")]
    l1_col = [c.strip() for c in header.split("┃")].index("L1")
    assert cells[l1_col] == ""  # not under L1
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "`masking` names its levels: its L1 rounds are masking rounds" in report


def test_the_written_line_lists_everything_written(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    assert (
        main(
            [
                "replay",
                str(OPENCODE),
                "--summary-threshold",
                "8",
                "--limit-calls",
                "12",
                "--out",
                str(out),
                *QUIET,
            ]
        )
        == 0
    )
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("written to"))
    for name in (
        "calls.parquet",
        "summary.csv",
        "report.md",
        "run.json",
        "summaries.jsonl",
        "figures/",
        "files/",
    ):
        assert name in line, name
    figures = sum(1 for _ in (out / "figures").rglob("*.png"))
    files = sum(1 for p in (out / "files").rglob("*") if p.is_file())
    assert f"{figures} figures in figures/" in line and f"files/ ({files} files" in line


def test_plugin_load_problems_are_ctxlab_warning_lines(tmp_path: Path) -> None:
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "broken.py").write_text("def oops(:\n")
    proc = run_cli("plugins", "--plugins-dir", str(plug))
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines and all(x.startswith("ctxlab: warning: ") for x in lines), proc.stderr
    assert any("broken.py" in x for x in lines) and "PluginWarning" not in proc.stderr


def test_bench_quick_never_overwrites_the_committed_benchmarks(tmp_path: Path, capsys) -> None:
    from ctxlab.cli import bench

    committed = REPO / "docs" / "benchmarks.md"
    before = committed.read_bytes()
    assert bench.main(["--quick", "--out", str(REPO / "docs")]) == 2
    assert bench.main(["--quick", "--out", str(committed)]) == 2
    assert "does not overwrite the committed" in capsys.readouterr().err
    assert committed.read_bytes() == before
    assert bench.bench_target(tmp_path / "b") == tmp_path / "b" / "benchmarks.md"
    assert bench.bench_target(tmp_path / "x.md") == tmp_path / "x.md"


def test_bench_writes_under_out(tmp_path: Path) -> None:
    from ctxlab.cli import bench

    assert (bench.default_transcripts_dir() / "raw").is_dir(), "shared transcripts not found (../shared)"
    out = tmp_path / "bench"
    assert bench.main(["--quick", "--sections", "estimators", "--out", str(out)]) == 0
    assert (out / "benchmarks.md").read_text(encoding="utf-8").startswith("# Benchmarks")


# --- 7. figures for everyone ------------------------------------------------------------------------


def test_a_chinese_named_transcript_draws_with_every_glyph(tmp_path: Path) -> None:
    from ctxlab.analysis.plotting.style import cjk_font, packaged_cjk_font

    assert packaged_cjk_font() is not None, "the noto-cjk-sans-otc package is a lab dependency"
    assert cjk_font() == packaged_cjk_font()
    folder = tmp_path / "输入"
    folder.mkdir()
    shutil.copy(SMALL, folder / "数据分析会话.jsonl")
    out = tmp_path / "o"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(
            [
                "compare",
                str(folder),
                "--strategies",
                "ars,masking",
                "--summary-threshold",
                "1",
                "--out",
                str(out),
                *QUIET,
            ]
        )
    assert code == 0
    glyphs = [str(w.message) for w in caught if "Glyph" in str(w.message) or "missing from" in str(w.message)]
    assert glyphs == []
    pngs = sorted(p.relative_to(out / "figures").as_posix() for p in (out / "figures").rglob("*.png"))
    assert any(p.startswith("budget/") for p in pngs) and any(p.startswith("strategies/") for p in pngs)


def test_a_one_call_run_draws_a_visible_point(tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ctxlab.analysis.plotting import plot_budget, plot_strategies, plot_view_parts
    from ctxlab.replay import replay

    result = replay(SMALL, "ars", limit_calls=1)
    calls = result.frame()
    assert calls.height == 1
    fig = plot_budget(calls)
    ax = fig.axes[0]
    assert [line.get_marker() for line in ax.lines[:2]] == ["o", "x"]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    import numpy as np

    pixels = np.asarray(canvas.buffer_rgba())[..., :3].reshape(-1, 3)
    sent = np.array([0x1F, 0x77, 0xB4])  # COLORS["sent"]
    assert (np.abs(pixels.astype(int) - sent).sum(axis=1) < 30).sum() > 20  # the point is drawn
    assert plot_view_parts(calls).axes[0].patches  # a stacked bar, not an empty area
    assert plot_strategies(calls).axes[0].lines[0].get_marker() == "x"


def test_figures_all_draws_every_run(tmp_path: Path) -> None:
    out = tmp_path / "o"
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SMALL, folder / "small.jsonl")  # about 3K tokens: never reaches T = 100K
    assert main(["replay", str(folder), "--out", str(out), *QUIET]) == 0
    assert not list((out / "figures" / "budget").glob("*.png"))
    assert main(["replay", str(folder), "--out", str(out), "--figures", "all", *QUIET]) == 0
    assert [p.name for p in (out / "figures" / "budget").glob("*.png")] == ["small.jsonl__ars.png"]


def test_an_installed_plugin_with_a_cutoff_hook_leaves_ars_alone_and_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # a simulated installed distribution whose entry point implements a compression hook
    site = tmp_path / "site"
    site.mkdir()
    (site / "fake_ctxlab_cutoff_ep.py").write_text(NO_L2)
    info = site / "fakecutoff-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakecutoff\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ctxlab]\nfake-cutoff = fake_ctxlab_cutoff_ep\n")
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "o"
    args = [
        "replay",
        str(SMALL),
        "--summary-threshold",
        "1",
        "--summary-keep-messages",
        "4",
        "--out",
        str(out),
    ]
    assert main([*args, "--figures", "none", *QUIET]) == 0
    err = capsys.readouterr().err
    assert (
        "ctxlab: warning: plugin 'fake-cutoff' (entry point (fakecutoff 0.1)) implements ctxlab_select_cutoff"
        in err
    )
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls["strategy"].unique().to_list() == ["ars"] and (calls["level"] == "L2").sum() > 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert {
        "name": "fake-cutoff",
        "source": "entry point (fakecutoff 0.1)",
        "hooks": ["ctxlab_select_cutoff"],
    } in record["plugins"]
