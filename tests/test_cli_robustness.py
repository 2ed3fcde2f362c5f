"""The CLI and the batch loader under hostile input: clear errors, nothing lost, no stale output."""

from __future__ import annotations

import json
import os
import shutil
import threading
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


# --- non-regular files and symlink loops (issue 9, kind 23) ------------------------------------


def finishes(fn, timeout: float = 60.0):
    """``fn()`` run in a daemon thread; fails the test (instead of hanging it) when it blocks."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # reported to the test below
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "blocked (a FIFO opened for reading waits for a writer forever)"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_alone_or_in_a_folder_is_skipped_with_a_message(
    good_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = good_copy / "pipe.jsonl"
    os.mkfifo(fifo)
    transcripts, errors = finishes(lambda: load_many([good_copy]))
    assert [Path(t.source).name for t in transcripts] == ["good.jsonl"]
    (err,) = errors
    assert Path(err.path) == fifo and "not a regular file" in str(err) and "FIFO" in str(err)
    # alone, through the CLI: it returns, names the file, and says why
    code = finishes(
        lambda: main(["replay", str(fifo), "--out", str(tmp_path / "o"), "--no-progress", "--no-figures"])
    )
    assert code == 1
    out = capsys.readouterr()
    assert "pipe.jsonl" in out.out + out.err and "not a regular file" in out.out + out.err
    # a folder with a FIFO still replays its other transcripts with --keep-going (a bad file is
    # a failure: exit 1, and it is named)
    code = finishes(
        lambda: main(
            [
                "replay",
                str(good_copy),
                "--out",
                str(tmp_path / "p"),
                "--no-progress",
                "--no-figures",
                "--keep-going",
            ]
        )
    )
    out = capsys.readouterr()
    assert code == 1 and "not a regular file" in out.out + out.err
    assert (tmp_path / "p" / "calls.parquet").is_file()


def test_a_symlink_loop_is_reported_as_a_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop.name)  # points at itself
    broken = tmp_path / "broken.jsonl"
    broken.symlink_to("nowhere.jsonl")
    _, errors = load_many([loop, broken])
    reasons = {Path(e.path).name: str(e) for e in errors}
    assert "symbolic link loop" in reasons["loop.jsonl"] and "no such file" not in reasons["loop.jsonl"]
    assert "broken symbolic link" in reasons["broken.jsonl"]
    code = main(["replay", str(loop), "--out", str(tmp_path / "o"), "--no-progress", "--no-figures"])
    assert code == 1
    out = capsys.readouterr()
    assert "symbolic link loop" in out.out + out.err
