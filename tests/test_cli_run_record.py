"""The run record keeps what the terminal said: every warning printed while a run is made (a
loader's, a skipped file, a setting outside its range) is in ``report.md`` and ``run.json``;
an interrupted write leaves a folder that says it is unfinished, which ``show`` and ``diff``
refuse; and small usage helps (a misspelt config key)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxlab.cli.main import main

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "transcripts"
KIMI = SHARED / "incoming" / "kimi-cli" / "531d195b-6436-426e-b010-4bf723a992de.jsonl"
KATY = SHARED / "raw" / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"
EMPTY_GEMINI = SHARED / "incoming" / "gemini-cli-empty" / "entire-cli_ec-38b74f08e3_2_full.jsonl"


def _run(*args: str) -> int:
    return main([*args, "--no-progress", "--figures", "none"])


def test_load_and_setting_warnings_reach_report_and_run_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "kimi_cut.jsonl").write_bytes(KIMI.read_bytes()[:40000])  # cut inside line 82
    shutil.copy(KATY, folder / "katy.traj")
    (folder / "notes.csv").write_text("a,b\n", encoding="utf-8")  # not a transcript: skipped, listed
    out = tmp_path / "out"
    code = _run("replay", str(folder), "--out", str(out), "--summary-threshold", "16")
    code_ratio = _run(
        "replay", str(folder), "--out", str(tmp_path / "r"), "--summary-l2-trigger-ratio", "1.5"
    )
    err = capsys.readouterr().err
    assert (code, code_ratio) == (0, 0), err
    assert "kimi_cut.jsonl: line 82: cut off mid-line" in err
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["problems"] == []  # warnings are not failures
    cut = [w for w in record["warnings"] if w["where"] == "line 82"]
    assert [(w["kind"], w["source"]) for w in cut] == [("load", str(folder / "kimi_cut.jsonl"))]
    assert (
        "cut off mid-line" in cut[0]["message"] and "81 complete line(s) before it kept" in cut[0]["message"]
    )
    skipped = [w for w in record["warnings"] if w["source"] == str(folder / "notes.csv")]
    assert len(skipped) == 1 and skipped[0]["message"].endswith(
        "skipped: not a transcript (.csv file): skipped"
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Errors and skipped files", 1)[1].split("\n## ", 1)[0]
    assert "None." not in section
    assert f"- file: `{folder / 'kimi_cut.jsonl'}: line 82: cut off mid-line" in section
    assert "notes.csv" in section
    assert "warning(s): see [Errors and skipped files]" in report.split("## Settings")[0]
    ratio = json.loads((tmp_path / "r" / "run.json").read_text(encoding="utf-8"))["warnings"]
    assert {"kind": "setting", "source": "summary_l2_trigger_ratio", "where": "",
            "message": "summary_l2_trigger_ratio: 1.5 is outside the recommended range 0.1-1.0"} in ratio  # fmt: skip
    ratio_report = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert (
        "- setting: `summary_l2_trigger_ratio: 1.5 is outside the recommended range 0.1-1.0`" in ratio_report
    )


def test_a_clean_run_records_no_warning(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run("replay", str(KATY), "--out", str(out)) == 0
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["warnings"] == [] and record["problems"] == []
    section = (out / "report.md").read_text(encoding="utf-8").split("## Errors and skipped files", 1)[1]
    assert section.split("\n## ", 1)[0].strip() == "None."
