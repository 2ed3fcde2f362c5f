"""``ctxlab.replay.parallel``: transcripts × strategies × settings on worker processes or Ray give
exactly the serial results (issue 12, target 5).  Speed-ups are measured by ``ctxlab bench``,
never here."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ctxlab.cli.main import main
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.replay.parallel import GridTask, RayUnavailableError, grid_tasks, run_grid, run_task

RAW = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw"
#: small files, several runs per folder, two with the same file name (labels get folder prefixes)
PATHS = [RAW / "claude-code" / "snapshot-tests", RAW / "openhands" / "tests" / "runtime" / "trajs"]
STRATEGIES = ["ars", "masking"]
#: a low threshold, so that L1 and L2 rounds happen (offloads, summaries, events)
SMALL_T = CompressionSettings().replace(summary_threshold=4)


def _rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without ``overhead_ms``, the only wall-time column."""
    return [{k: v for k, v in r.items() if k != "overhead_ms"} for r in rows]


def _same(a: Any, b: Any) -> None:
    assert _rows(a.rows) == _rows(b.rows)
    assert a.summaries == b.summaries
    assert a.offloads == b.offloads
    assert a.events == b.events
    assert [str(e) for e in a.errors] == [str(e) for e in b.errors]
    assert a.strategies == b.strategies
    assert a.sources == b.sources


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    for p in PATHS:
        assert p.is_dir(), f"shared data missing: {p}"
    bad = tmp_path_factory.mktemp("bad") / "broken.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    return [*PATHS, bad]


@pytest.fixture(scope="module")
def serial(paths: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("serial")
    return replay_many(paths, STRATEGIES, settings=SMALL_T, out_dir=out, progress=False), out


def test_the_reference_replay_compresses_and_has_a_load_error(serial: Any) -> None:
    result, _ = serial
    assert {r["level"] for r in result.rows} >= {"L1", "L2"}
    assert result.summaries and result.offloads
    assert [e.kind for e in result.errors] == ["load"]
    assert len({r["transcript"] for r in result.rows}) >= 5


def test_two_processes_give_the_serial_result(serial: Any, paths: list[Path]) -> None:
    reference, out = serial
    grid = run_grid(paths, STRATEGIES, SMALL_T, jobs=2, out_dir=out)
    assert grid.jobs == 2 and len(grid.results) == 1
    _same(grid.results[0], reference)
    assert grid.results[0].files_dir == out / "files"


def test_in_process_grid_over_settings_equals_one_replay_per_point(paths: list[Path], tmp_path: Path) -> None:
    points = [SMALL_T, SMALL_T.replace(summary_l2_trigger_ratio=0.6)]
    grid = run_grid(paths, "ars", points, jobs=1, out_dir=tmp_path)
    assert [r.settings for r in grid.results] == points
    for i, point in enumerate(points):
        ref = replay_many(paths, ["ars"], settings=point, out_dir=tmp_path / f"ref-{i}", progress=False)
        assert _rows(grid.results[i].rows) == _rows(ref.rows)
    # the two points differ, and the frame says which row belongs to which
    assert _rows(grid.results[0].rows) != _rows(grid.results[1].rows)
    frame = grid.frame()
    assert frame.columns[0] == "point"
    assert frame.group_by("point").len().sort("point")["len"].to_list() == [
        len(grid.results[0].rows),
        len(grid.results[1].rows),
    ]


def test_a_task_is_small_and_picklable(paths: list[Path], tmp_path: Path) -> None:
    tasks, load_errors, labels = grid_tasks(paths, STRATEGIES, [SMALL_T], out_dir=tmp_path)
    assert len(load_errors) == 1 and len(tasks) == len(labels) * len(STRATEGIES)
    assert [t.index for t in tasks] == list(range(len(tasks)))
    # labels are the batch's (folder prefixes where file names collide), not the file's own name
    assert len(set(labels)) == len(labels) and any("/" in lab for lab in labels)
    task = pickle.loads(pickle.dumps(tasks[0]))
    assert isinstance(task, GridTask) and task == tasks[0]
    assert len(pickle.dumps(tasks[0])) < 2_000  # a path and names, never a transcript
    result = run_task(task)
    assert {r["transcript"] for r in result.rows} == {task.label}


def test_unknown_strategy_engine_and_jobs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="nope"):
        run_grid(PATHS, ["nope"], out_dir=tmp_path)
    with pytest.raises(ValueError, match="engine"):
        run_grid(PATHS, ["ars"], engine="dask", out_dir=tmp_path)
    with pytest.raises(ValueError, match="jobs"):
        run_grid(PATHS, ["ars"], jobs=0, out_dir=tmp_path)


def test_ray_engine_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(RayUnavailableError, match=r"ctxlab\[ray\]"):
        run_grid(PATHS[:1], ["ars"], engine="ray", out_dir=tmp_path)


def test_ray_local_instance_gives_the_serial_result(serial: Any, paths: list[Path]) -> None:
    pytest.importorskip("ray", reason="the optional extra ctxlab[ray] is not installed")
    reference, out = serial
    grid = run_grid(
        paths,
        STRATEGIES,
        SMALL_T,
        engine="ray",
        ray_init={"num_cpus": 2},
        out_dir=out,
    )
    assert grid.engine == "ray"
    _same(grid.results[0], reference)


def test_cli_compare_with_jobs_writes_the_serial_table(tmp_path: Path) -> None:
    args = ["compare", *map(str, PATHS), "--strategies", "ars,masking", "--summary-threshold", "4"]
    args += ["--no-figures", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    assert main([*args, "--out", str(tmp_path / "two"), "--jobs", "2"]) == 0
    one = pl.read_parquet(tmp_path / "one" / "calls.parquet").drop("overhead_ms")
    two = pl.read_parquet(tmp_path / "two" / "calls.parquet").drop("overhead_ms")
    assert one.height > 0 and one.equals(two)


def test_cli_jobs_2_writes_the_serial_provenance_and_each_skipped_file_once(
    tmp_path: Path, paths: list[Path]
) -> None:
    import json

    args = ["compare", *map(str, paths), "--strategies", "ars", "--summary-threshold", "4", "--keep-going"]
    args += ["--no-figures", "--no-progress", "--price-model", "openai:gpt-4.1"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 1  # the broken file is a failure
    assert main([*args, "--out", str(tmp_path / "two"), "--jobs", "2"]) == 1

    def record(folder: str) -> dict[str, Any]:
        data = json.loads((tmp_path / folder / "run.json").read_text(encoding="utf-8"))
        return {k: v for k, v in data.items() if k not in ("created", "command")}

    one, two = record("one"), record("two")
    assert one["ctxlab"] and one["python"] and one["settings"]["summary_threshold"] == 4
    assert one["cost_model"]["price_row"].startswith("openai:gpt-4.1")
    assert one == two  # the same provenance, problems and counts with one process or two
    reports = [(tmp_path / f / "report.md").read_text(encoding="utf-8") for f in ("one", "two")]
    for report in reports:
        assert report.count("broken.jsonl") == reports[0].count("broken.jsonl") >= 1
        assert "ctxlab None" not in report and "Python None" not in report
    skipped = [p for p in one["problems"] if "broken.jsonl" in json.dumps(p)]
    assert len(skipped) == 1


def test_cli_rejects_zero_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(PATHS[0]), "--strategies", "ars", "--jobs", "0", "--out", str(tmp_path)])
    assert code == 2 and "--jobs=0" in capsys.readouterr().err
