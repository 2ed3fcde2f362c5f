"""``--resume``: a replay interrupted (killed, or Ctrl-C) keeps the runs it finished, and the same
command with ``--resume`` replays only the others and writes what an uninterrupted run writes;
a checkpoint of another replay (settings, versions) is refused, nothing mixed.  The same for
``run_grid`` (``checkpoint=``, ``resume=``) and ``sweep``.

The CLI tests replay the public set (``raw/``, 240 runs) with two strategies at T = 16 K; the
uninterrupted run is made once.  Only ``overhead_ms`` (wall time) may differ between two runs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import ReplayIssue, ReplayResult, replay_many, sweep
from ctxlab.replay import parallel as parallel_mod
from ctxlab.replay.parallel import run_grid
from ctxlab.replay.resume import ResumeError, RunStore
from ctxlab.transcripts.locate import shared_dir

CTXLAB = [sys.executable, "-m", "ctxlab"]
RAW = shared_dir() / "transcripts" / "raw"
ARGS = [
    "compare", str(RAW), "--strategies", "ars,masking", "--summary-threshold", "16",
    "--no-figures", "--keep-going", "--no-progress",
]  # fmt: skip
WALL = ["overhead_ms"]  # wall time: the one column two identical replays may differ in
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("resume") / "whole"
    done = subprocess.run([*CTXLAB, *ARGS, "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert not (out / ".ctxlab-staging").exists()
    return out


def _stored(out: Path) -> int:
    return sum(1 for _ in (out / ".ctxlab-staging" / "runs").rglob("*.pickle"))


def _start_and_stop(
    out: Path, sig: int, after: int, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Start the compare, stop it with ``sig`` once ``after`` runs are kept."""
    proc = subprocess.Popen(
        [*CTXLAB, *ARGS, *extra, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while _stored(out) < after if (out / ".ctxlab-staging" / "runs").is_dir() else True:
            assert proc.poll() is None, "the compare ended before it could be stopped"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err)


def _same_outputs(a: Path, b: Path) -> None:
    calls_a, calls_b = (pl.read_parquet(p / "calls.parquet").drop(WALL) for p in (a, b))
    assert calls_a.height > 5000 and calls_a.equals(calls_b)
    summary_a, summary_b = (pl.read_csv(p / "summary.csv").drop("mean_overhead_ms") for p in (a, b))
    assert summary_a.equals(summary_b)
    assert (a / "summaries.jsonl").read_text() == (b / "summaries.jsonl").read_text()
    files_a, files_b = (
        sorted(q.relative_to(p) for q in (p / "files").rglob("*") if q.is_file()) for p in (a, b)
    )
    assert files_a == files_b
    views_a, views_b = (sorted(q.relative_to(p) for q in (p / "views").rglob("*.gz")) for p in (a, b))
    assert views_a == views_b and len(views_a) == calls_a.select("transcript", "strategy").unique().height
    assert (
        json.loads((a / "run.json").read_text())["problems"]
        == json.loads((b / "run.json").read_text())["problems"]
    )


def test_a_compare_killed_halfway_and_resumed_equals_an_uninterrupted_one(
    uninterrupted: Path, tmp_path: Path
) -> None:
    out = tmp_path / "killed"
    _start_and_stop(out, signal.SIGKILL, after=200)  # a crash: no clean-up at all
    kept = _stored(out)
    assert 200 <= kept < 480 and not (out / "calls.parquet").exists()
    done = subprocess.run(
        [*CTXLAB, *ARGS, "--out", str(out), "--resume"], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    assert not (out / ".ctxlab-staging").exists()  # published: nothing left to resume
    _same_outputs(uninterrupted, out)


def test_ctrl_c_keeps_the_finished_runs_and_says_how_to_resume(uninterrupted: Path, tmp_path: Path) -> None:
    out = tmp_path / "ctrl-c"
    stopped = _start_and_stop(out, signal.SIGINT, after=100)
    assert stopped.returncode == 130 and "ctxlab: interrupted" in stopped.stderr
    assert "finished run(s) are kept in" in stopped.stderr and "--resume" in stopped.stderr
    kept = _stored(out)
    assert kept >= 100
    # resumed on two worker processes: the parallel engine reads the same checkpoint
    done = subprocess.run(
        [*CTXLAB, *ARGS, "--out", str(out), "--resume", "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    _same_outputs(uninterrupted, out)


def test_resume_refuses_other_settings_or_versions(tmp_path: Path) -> None:
    out = tmp_path / "other"
    _start_and_stop(out, signal.SIGKILL, after=20)
    kept = _stored(out)
    other = [*ARGS[: ARGS.index("16")], "32", *ARGS[ARGS.index("16") + 1 :]]
    refused = subprocess.run([*CTXLAB, *other, "--out", str(out), "--resume"], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "settings.summary_threshold: 16 then, 32 now" in refused.stderr, refused.stderr[-600:]
    assert "nothing was mixed" in refused.stderr
    # the refusal alone: no Ctrl-C message ("stopped while replaying ... the same command with
    # --resume") after it, which a trial read as a second, contradicting instruction
    assert "stopped while replaying" not in refused.stderr
    assert "checked now" in refused.stderr  # the announcement no longer promises the reuse
    spec_path = out / ".ctxlab-staging" / "resume.json"
    spec = json.loads(spec_path.read_text())
    spec["ctxlab"] = "0.0.1"
    spec_path.write_text(json.dumps(spec))
    refused = subprocess.run([*CTXLAB, *ARGS, "--out", str(out), "--resume"], capture_output=True, text=True)
    assert refused.returncode == 2 and 'ctxlab: "0.0.1" then' in refused.stderr
    assert _stored(out) == kept  # nothing replayed, nothing removed


# --- the Python API ---------------------------------------------------------------------------


def _grid_paths() -> list[Path]:
    return [RAW / "openhands", RAW / "deer-flow", RAW / "claude-code"]


def test_run_grid_replays_only_what_its_checkpoint_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = CompressionSettings(summary_threshold=16)
    fresh = run_grid(_grid_paths(), ["ars", "masking"], settings, out_dir=tmp_path / "fresh").results[0]
    first = run_grid(
        _grid_paths(),
        ["ars", "masking"],
        settings,
        out_dir=tmp_path / "ck",
        checkpoint=tmp_path / "ck" / "store",
    ).results[0]
    pickles = sorted((tmp_path / "ck" / "store" / "runs").rglob("*.pickle"))
    assert len(pickles) == fresh.replayed > 10
    for p in pickles[::2]:  # as if the grid had been stopped before these
        p.unlink()
    ran: list[str] = []
    real = parallel_mod.run_task
    monkeypatch.setattr(parallel_mod, "run_task", lambda t: ran.append(f"{t.label}/{t.strategy}") or real(t))
    again = run_grid(
        _grid_paths(),
        ["ars", "masking"],
        settings,
        out_dir=tmp_path / "ck",
        checkpoint=tmp_path / "ck" / "store",
        resume=True,
    ).results[0]
    assert len(ran) == len(pickles[::2])
    for result in (first, again):
        assert result.frame().drop(WALL).equals(fresh.frame().drop(WALL))
    with pytest.raises(ResumeError, match="summary_threshold"):
        run_grid(
            _grid_paths(),
            ["ars", "masking"],
            CompressionSettings(summary_threshold=32),
            out_dir=tmp_path / "ck",
            checkpoint=tmp_path / "ck" / "store",
            resume=True,
        )


def test_a_sweep_resumes_point_by_point(tmp_path: Path) -> None:
    paths = [RAW / "openhands"]
    args = ("summary_l2_trigger_ratio", [0.2, 0.6])
    settings = CompressionSettings(summary_threshold=16)
    plain = sweep(paths, *args, settings=settings)
    first = sweep(paths, *args, settings=settings, checkpoint=tmp_path / "ck")
    one_point = sorted((tmp_path / "ck" / "runs" / "1").rglob("*.pickle"))
    assert one_point and len(list((tmp_path / "ck" / "runs").rglob("*.pickle"))) == 2 * len(one_point)
    for p in one_point:
        p.unlink()
    again = sweep(paths, *args, settings=settings, checkpoint=tmp_path / "ck", resume=True)
    for curve in (first, again):
        assert curve.drop("mean_overhead_ms").equals(plain.drop("mean_overhead_ms"))


def test_a_stored_run_that_failed_is_replayed_again(tmp_path: Path) -> None:
    store = RunStore.open(tmp_path, {"spec": 1}, resume=False)
    ok = replay_many(
        [RAW / "openhands" / "tests" / "runtime" / "trajs" / "basic.json"], ["ars"], progress=False
    )
    store.save("basic.json", "ars", ok)
    failed = ReplayResult(errors=[ReplayIssue(kind="replay", source="x", problem="boom", strategy="masking")])
    store.save("basic.json", "masking", failed)
    loaded = store.load("basic.json", "ars")
    assert loaded is not None and loaded.frame().equals(ok.frame())
    assert store.load("basic.json", "masking") is None and store.finished() == 2
    assert RunStore.open(tmp_path, {"spec": 1}, resume=True).finished() == 2
    with pytest.raises(ResumeError, match=r"spec: 1 then, 2 now"):
        RunStore.open(tmp_path, {"spec": 2}, resume=True)
    assert RunStore.open(tmp_path, {"spec": 2}, resume=False).finished() == 0  # a fresh start
