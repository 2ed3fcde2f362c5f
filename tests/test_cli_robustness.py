"""The CLI and the batch loader under hostile input: clear errors, nothing lost, no stale output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxlab.cli.main import main
from ctxlab.transcripts import load_many

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "transcripts" / "raw"
GOOD = SHARED / "claude-code" / "snapshot-tests" / "tests" / "coverage-test-fix" / "transcript.jsonl"


@pytest.fixture()
def good_copy(tmp_path: Path) -> Path:
    assert GOOD.is_file(), f"shared transcript missing: {GOOD} (../shared must sit beside the repo)"
    folder = tmp_path / "batch"
    folder.mkdir()
    shutil.copy(GOOD, folder / "good.jsonl")
    return folder


def test_deeply_nested_json_is_reported_and_the_batch_goes_on(good_copy: Path) -> None:
    (good_copy / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (good_copy / "deep_obj.json").write_text(
        json.dumps({"messages": []})[:-2] + "[" * 3000 + "]" * 3000 + "]}"
    )
    transcripts, errors = load_many([good_copy])
    assert [Path(t.source).name for t in transcripts] == ["good.jsonl"]
    names = sorted(Path(e.path).name for e in errors)
    assert names == ["deep.json", "deep_obj.json"]
    assert all(str(e).startswith(str(good_copy)) for e in errors)  # the message names the file


def test_missing_plugins_dir_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["replay", "--plugins-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert code == 2
    assert "--plugins-dir" in capsys.readouterr().err


def test_out_that_is_a_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, good_copy
) -> None:
    target = tmp_path / "afile"
    target.write_text("x")
    code = main(["replay", str(good_copy), "--out", str(target), "--no-progress", "--no-figures"])
    assert code == 2
    assert "not a folder" in capsys.readouterr().err
    assert target.read_text() == "x"


def test_plugins_dir_hooks_apply_to_the_replayed_middleware(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("CTXLAB_PLUGINS_DIR", raising=False)
    plug = tmp_path / "plug"
    plug.mkdir()
    (plug / "no_l2.py").write_text(
        "from ctxlab.core.cutoff import CutoffDecision\n"
        "from ctxlab.core.hookspecs import hookimpl\n\n"
        "@hookimpl(tryfirst=True)\n"
        "def ctxlab_select_cutoff(messages, ctx):\n"
        "    return CutoffDecision(None, 'plugins-dir rule: never summarize')\n"
    )
    common = ["--summary-threshold", "2", "--summary-keep-messages", "4", "--no-progress", "--no-figures"]
    assert main(["replay", str(GOOD), "--out", str(tmp_path / "a"), *common]) == 0
    assert main(["replay", str(GOOD), "--out", str(tmp_path / "b"), "--plugins-dir", str(plug), *common]) == 0
    import polars as pl

    default = pl.read_parquet(tmp_path / "a" / "calls.parquet")
    ruled = pl.read_parquet(tmp_path / "b" / "calls.parquet")
    assert (default["level"] == "L2").sum() > 0
    assert (ruled["level"] == "L2").sum() == 0


def test_a_reused_out_folder_keeps_no_stale_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    common = ["--summary-threshold", "2", "--summary-keep-messages", "4", "--no-progress"]
    assert main(["compare", str(GOOD), "--strategies", "ars,masking", "--out", str(out), *common]) == 0
    assert any("ars" in p.name for p in (out / "figures").rglob("*.png"))
    assert main(["replay", str(GOOD), "--strategy", "masking", "--out", str(out), *common]) == 0
    assert not any("ars" in p.name for p in (out / "figures").rglob("*.png"))
    assert not (out / "files").exists() or not any("ars" in p.name for p in (out / "files").rglob("*"))
    summaries = (out / "summaries.jsonl").read_text() if (out / "summaries.jsonl").exists() else ""
    assert '"ars"' not in summaries
