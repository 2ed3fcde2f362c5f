"""The ``ctxlab`` command: end to end in a subprocess on real shared transcripts, settings
validation (exit 2, no traceback), bad files in a batch, plugins listing, bench dispatch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import polars as pl
import pytest

from ctxlab.analysis.report import SUMMARY_COLUMNS
from ctxlab.cli.main import main
from ctxlab.replay import CALL_COLUMNS

REPO = Path(__file__).resolve().parents[1]
RAW = REPO.parent / "shared" / "transcripts" / "raw"
KATY = RAW / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"
OPENCODE = RAW / "opencode" / "session-ses_434e.md"


@pytest.fixture(scope="module")
def shared() -> Path:
    for p in (KATY, OPENCODE):
        assert p.is_file(), (
            f"shared transcript missing: {p}. The tests need the shared data folder beside the repository "
            "(../shared/transcripts/raw)."
        )
    return RAW


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLBACKEND": "Agg", "COLUMNS": "160"}
    return subprocess.run(
        [sys.executable, "-m", "ctxlab.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def test_replay_end_to_end_on_real_transcripts(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("replay", str(KATY), str(OPENCODE), "--out", str(out), "--summary-threshold", "8")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    # the terminal summary table
    assert "session-ses_434e.md" in proc.stdout and "katy.traj" in proc.stdout
    assert "saving %" in proc.stdout and "T = 8,192 tokens" in proc.stdout
    # cost per strategy, naming the price row and its date, and identifier recall
    assert "prices: anthropic:claude-sonnet-4-5 as of 2026-12-01" in proc.stdout
    assert "identifier recall" in proc.stdout and "probe pass" in proc.stdout and "cost $" in proc.stdout
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls.columns == list(CALL_COLUMNS)
    assert sorted(calls["transcript"].unique()) == ["katy.traj", "session-ses_434e.md"]
    assert calls.filter(pl.col("transcript") == "katy.traj").height == 18  # 18 recorded model calls
    assert calls.filter(pl.col("transcript") == "session-ses_434e.md").height == 15
    # ses_434e grows to ~39k tokens: with T = 8,192 it is compressed
    assert "L2" in calls.filter(pl.col("transcript") == "session-ses_434e.md")["level"].to_list()
    assert (calls["view_tokens"] <= calls["raw_tokens"]).all()
    assert calls["unmatched_tool_pairs"].sum() == 0
    summary = pl.read_csv(out / "summary.csv")
    assert summary.columns == list(SUMMARY_COLUMNS) and summary.height == 2
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "T = 8,192 tokens" in report and "## Metric definitions" in report
    pngs = sorted(p.relative_to(out / "figures").as_posix() for p in (out / "figures").rglob("*.png"))
    # katy.traj never reaches T = 8,192 tokens: no budget figure for it unless --figures all
    assert pngs == [
        "budget/session-ses_434e.md__ars.png",
        "cost_per_call.png",
        "frontier.png",
        "saving_by_strategy.png",
    ]
    assert "Budget figures for the 1 of 2 runs whose raw request reaches T" in report
    for p in pngs:
        assert (out / "figures" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"figures/{p}" in report


def test_compare_two_strategies(shared: Path, tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "tight.py").write_text(
        "from ctxlab.core.hookspecs import hookimpl\n"
        "@hookimpl\n"
        "def ctxlab_register_strategies(register):\n"
        "    register('never-cut', lambda settings: [NeverCut()], 'no L2')\n"
        "class NeverCut:\n"
        "    @hookimpl\n"
        "    def ctxlab_select_cutoff(self, messages, ctx):\n"
        "        from ctxlab.core.cutoff import CutoffDecision\n"
        "        return CutoffDecision(None, 'never')\n",
        encoding="utf-8",
    )
    out = tmp_path / "cmp"
    proc = run_cli(
        "compare",
        str(OPENCODE),
        "--strategies",
        "ars,never-cut",
        "--out",
        str(out),
        "--summary-threshold",
        "8",
        "--plugins-dir",
        str(tmp_path / "plugins"),
        "--limit-calls",
        "10",
    )
    assert proc.returncode == 0, proc.stderr
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls.group_by("strategy").len().sort("strategy").rows() == [("ars", 10), ("never-cut", 10)]
    assert "L2" not in calls.filter(pl.col("strategy") == "never-cut")["level"].to_list()
    assert (out / "figures" / "strategies" / "session-ses_434e.md.png").is_file()
    assert "per strategy, all runs" in proc.stdout


def test_price_model_and_price_file(shared: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    args = ["replay", str(OPENCODE), "--out", str(out), "--limit-calls", "4", "--no-figures", "--no-progress"]
    assert main([*args, "--price-model", "openai:gpt-4.1"]) == 0
    assert "prices: openai:gpt-4.1 as of" in capsys.readouterr().out
    gpt = pl.read_parquet(out / "calls.parquet")
    # a user's file with one row at twice the prices: every cost doubles
    prices = tmp_path / "prices.toml"
    prices.write_text(
        '[[prices]]\nprovider = "mine"\nmodel = "double"\ncaching = "automatic"\ninput = 4.0\n'
        "cached_input = 1.0\noutput = 16.0\nmin_prefix_tokens = 1024\ngranularity_tokens = 128\n"
        'as_of = 2026-11-30\nsource = "https://example.com"\n',
        encoding="utf-8",
    )
    assert main([*args, "--prices", str(prices), "--price-model", "mine:double"]) == 0
    mine = pl.read_parquet(out / "calls.parquet")
    assert mine["cost_usd"].to_list() == pytest.approx([2 * c for c in gpt["cost_usd"].to_list()])
    assert "mine:double" in (out / "report.md").read_text(encoding="utf-8")


def test_bad_price_file_or_row_exits_2(tmp_path: Path, capsys) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text(
        '[[prices]]\nprovider = "a"\nmodel = "b"\ncaching = "none"\ninput = "x"\noutput = 1.0\n'
        'as_of = 2026-11-30\nsource = "https://example.com"\n',
        encoding="utf-8",
    )
    assert main(["replay", "x.json", "--prices", str(prices), "--price-model", "a:b"]) == 2
    err = capsys.readouterr().err
    assert f"{prices}: row 1: field 'input'" in err and "Traceback" not in err
    assert main(["replay", "x.json", "--price-model", "nobody:nothing"]) == 2
    err = capsys.readouterr().err
    assert "no price row 'nobody:nothing'" in err and "openai:gpt-4.1" in err


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [
        ("--summary-threshold", "-1", "summary_threshold"),
        ("--summary-threshold", "abc", "summary_threshold"),
        ("--summary-keep-messages", "-3", "summary_keep_messages"),
        ("--summary-tool-result-token-limit", "0", "summary_tool_result_token_limit"),
        ("--summary-l2-trigger-ratio", "nan", "summary_l2_trigger_ratio"),
    ],
)
def test_invalid_setting_exits_2_naming_the_field(flag: str, value: str, field: str, capsys) -> None:
    assert main(["replay", "nowhere.json", flag, value]) == 2
    err = capsys.readouterr().err
    assert field in err and "allowed" in err and "Traceback" not in err


def test_invalid_setting_in_a_subprocess(tmp_path: Path) -> None:
    proc = run_cli("replay", "x.json", "--summary-threshold", "0", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "summary_threshold" in proc.stderr and "Traceback" not in proc.stderr


def test_prompt_without_placeholder_is_refused(tmp_path: Path, capsys) -> None:
    prompt = tmp_path / "p.txt"
    prompt.write_text("Summarize please.", encoding="utf-8")
    assert main(["replay", "x.json", "--summary-prompt-file", str(prompt)]) == 2
    assert "summary_prompt" in capsys.readouterr().err


def test_config_file_and_flag_override(shared: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "ctx.toml"
    cfg.write_text("[settings]\nsummary_threshold = 8\nsummary-keep-messages = 6\n", encoding="utf-8")
    out = tmp_path / "o"
    code = main(
        [
            "replay",
            str(OPENCODE),
            "--config",
            str(cfg),
            "--summary-keep-messages",
            "4",
            "--out",
            str(out),
            "--no-figures",
            "--no-progress",
        ]
    )
    assert code == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| `summary_threshold` | 8 |" in report
    assert "| `summary_keep_messages` | 4 |" in report  # the flag wins over the file
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"summary_threshold": 8, "typo_field": 1}), encoding="utf-8")
    assert main(["replay", str(OPENCODE), "--config", str(bad), "--out", str(out)]) == 2


def test_bad_files_are_reported_and_skipped(shared: Path, tmp_path: Path) -> None:
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "katy.traj").write_bytes(KATY.read_bytes())
    (folder / "empty.json").write_text("", encoding="utf-8")
    (folder / "truncated.json").write_text(KATY.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    out = tmp_path / "out"
    # without --keep-going a bad file stops the run before anything is replayed or written; an
    # empty file is no transcript: skipped and listed, never a failure in a folder (s39)
    proc = run_cli("replay", str(folder), "--out", str(out), "--no-figures")
    assert proc.returncode == 1, proc.stderr
    assert "truncated.json" in proc.stderr and "--keep-going" in proc.stderr
    assert "not transcripts: empty.json" in proc.stderr
    assert not out.exists()
    # with --keep-going the good file is replayed, the bad ones are listed, and the exit is still 1
    proc = run_cli("replay", str(folder), "--out", str(out), "--no-figures", "--keep-going")
    assert proc.returncode == 1, proc.stderr
    assert "truncated.json" in proc.stdout and "empty.json" not in proc.stdout  # the failures
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls["transcript"].unique().to_list() == ["katy.traj"] and calls.height == 18
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Errors and skipped files", 1)[1]
    assert "empty.json" in section and "truncated.json" in section
    # the broken file failed the run (exit 1): it is said to have failed to load, not to have been
    # "skipped" like the empty file (s40 trial), in the report, run.json and the terminal
    assert f"- failed to load: `{folder / 'truncated.json'}" in section
    assert f"- file: `{folder / 'empty.json'}: byte 0: skipped: empty file`" in section
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert next(p for p in record["problems"] if "truncated.json" in p).startswith("failed to load: ")
    assert "  - failed to load: " in proc.stdout


def test_nothing_replayable_exits_1_and_writes_nothing(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.json").write_text("", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["replay", str(tmp_path / "empty.json"), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "empty.json" in err and "nothing to replay; nothing written" in err
    assert not out.exists()


def test_unknown_strategy_exits_2(capsys) -> None:
    assert main(["compare", "x.json", "--strategies", "ars,nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown strategy 'nope'" in err and "ars" in err


def test_replay_without_path_uses_the_bundled_sample(tmp_path: Path) -> None:
    from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

    assert Path(SAMPLE_TRANSCRIPT).is_file(), f"bundled sample missing: {SAMPLE_TRANSCRIPT}"
    out = tmp_path / "demo"
    assert main(["replay", "--out", str(out), "--limit-calls", "5", "--no-figures", "--no-progress"]) == 0
    calls = pl.read_parquet(out / "calls.parquet")
    assert calls.height == 5 and calls["transcript"].unique().to_list() == [Path(SAMPLE_TRANSCRIPT).name]


def test_plugins_listing(capsys) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    for needle in ("ctxlab.builtin.arg-truncation", "ctxlab_l1_trim", "ars", "openai_chat", "mini_swe_agent"):
        assert needle in out, needle


def test_bench_dispatch(monkeypatch, capsys) -> None:
    seen = []
    fake = types.ModuleType("ctxlab.cli.bench")
    fake.main = lambda argv: seen.append(argv) or 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ctxlab.cli.bench", fake)
    assert main(["bench", "--quick", "x"]) == 3
    assert seen == [["--quick", "x"]]


def test_bench_missing_module(monkeypatch, capsys) -> None:
    import importlib

    real = importlib.import_module

    def fake_import(name, *a, **k):
        if name == "ctxlab.cli.bench":
            raise ModuleNotFoundError("No module named 'ctxlab.cli.bench'", name="ctxlab.cli.bench")
        return real(name, *a, **k)

    monkeypatch.delitem(sys.modules, "ctxlab.cli.bench", raising=False)
    monkeypatch.setattr(importlib, "import_module", fake_import)
    assert main(["bench"]) == 1
    assert "ctxlab.cli.bench is missing" in capsys.readouterr().err


def test_bad_summarizer_model_is_a_clear_error(capsys) -> None:
    assert main(["replay", str(OPENCODE), "--summarizer-model", "nosuchprovider:foo", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--summarizer-model nosuchprovider:foo" in err and "Traceback" not in err
