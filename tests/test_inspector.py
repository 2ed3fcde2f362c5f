"""The call inspector's data: the views a replay writes into its run folder
(``ctxlab.replay.views``), the page ``ctxlab show`` makes of them (``ctxlab.analysis.inspector``),
and the CLI.  The real sample transcript, real strategies, real files; the browser test is in
tests/test_browser.py."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ctxlab.analysis.inspector import INSPECTOR_FILE, InspectorError, inspector_data, write_inspector
from ctxlab.replay import replay_many
from ctxlab.replay.views import ViewsError, read_views, view_file, view_files
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

CALLS = 140  # the sample's first 140 calls: L1 rounds from about call 110, then its first L2 round


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("inspect") / "run"
    from ctxlab.analysis.report import write_report

    result = replay_many(
        [SAMPLE_TRANSCRIPT],
        ["ars", "masking"],
        out_dir=out,
        write_views=True,
        limit_calls=CALLS,
        progress=False,
    )
    assert not result.errors
    result.files_dir = out / "files"
    write_report(result, out, figures="none")
    return out


def calls(run_dir: Path, strategy: str) -> dict[int, dict]:
    frame = pl.read_parquet(run_dir / "calls.parquet").filter(pl.col("strategy") == strategy)
    return {r["call_index"]: r for r in frame.iter_rows(named=True)}


def test_views_hold_each_calls_raw_and_sent_view_with_the_runs_tokens(run_dir: Path) -> None:
    rows = calls(run_dir, "ars")
    views = read_views(view_file(run_dir, "sample_run.json", "ars"))
    assert [c["call_index"] for c in views.calls] == list(range(CALLS))
    for c in views.calls:
        row = rows[c["call_index"]]
        sent = sum(views.tokens[i] for i in c["sent"])
        raw = sum(views.tokens[i] for i in views.raw[: c["raw_count"]])
        # what is not messages (system message and tool schemas) is the same in both requests
        assert row["view_tokens"] - sent == row["raw_tokens"] - raw > 0
        assert len(c["sent"]) == row["view_messages"]
        assert c["raw_count"] == row["message_index"] - 1  # the transcript's system message is first
    first_l2 = min(i for i, r in rows.items() if r["level"] == "L2")
    l2 = views.call(first_l2)
    marks = [views.marks[i] for i in l2["sent"]]
    assert marks[0] == "summary" and "offloaded" in marks
    assert {e["phase"] for e in l2["events"]} == {"started", "completed"}
    # the offloads the sent view names are among those the round's event reports (R6)
    completed = next(e for e in l2["events"] if e["phase"] == "completed")
    sent_paths = {views.paths[i] for i in l2["sent"] if views.marks[i] == "offloaded"}
    assert sent_paths and sent_paths <= set(completed["stats"]["offloaded"])
    assert len(completed["stats"]["offloaded"]) == rows[first_l2]["offloaded"]
    with pytest.raises(KeyError, match="no call 500"):
        views.call(500)


def test_the_page_data_links_offloads_and_carries_every_summary(run_dir: Path) -> None:
    data = inspector_data(run_dir)
    assert data["problems"] == [] and data["command"] is None
    assert [(r["transcript"], r["strategy"]) for r in data["runs"]] == [
        ("sample_run.json", "ars"),
        ("sample_run.json", "masking"),
    ]
    ars = data["runs"][0]
    offloaded = [m for m in ars["messages"] if m["mark"] == "offloaded"]
    assert offloaded and all(m["href"] and (run_dir / m["href"]).is_file() for m in offloaded)
    assert all(
        m["href"].startswith("files/sample_run.json/ars/outputs/large_tool_results/") for m in offloaded
    )
    summaries = [json.loads(line) for line in (run_dir / "summaries.jsonl").read_text().splitlines()]
    assert [s["text"] for s in ars["summaries"]] == [s["text"] for s in summaries if s["strategy"] == "ars"]
    assert ars["summaries"][0]["href"] and (run_dir / ars["summaries"][0]["href"]).is_file()
    assert ars["calls"][42]["row"]["view_tokens"] == calls(run_dir, "ars")[42]["view_tokens"]


def test_the_page_is_self_contained(run_dir: Path) -> None:
    page = write_inspector(run_dir)
    assert page == run_dir / INSPECTOR_FILE
    html = page.read_text(encoding="utf-8")
    block = re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S)
    assert block is not None
    page_code = html.replace(block.group(1), "")  # the transcripts' text may mention anything
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|@import|url\(|https?://|fetch\(", page_code)
    assert "</script>" not in block.group(1) and "<" not in block.group(1)
    assert json.loads(block.group(1))["runs"][0]["summaries"][0]["text"].startswith("[Context summary]")


def test_a_bad_views_file_is_reported_and_the_other_runs_shown(run_dir: Path, tmp_path: Path, capsys) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    bad = view_file(copy, "sample_run.json", "masking")
    with gzip.open(bad, "wt", encoding="utf-8") as f:
        f.write('{"kind": "run", "transcript": "sample_run.json", "strategy": "masking", "version": 1}\n')
        f.write("{not json\n")
    with pytest.raises(ViewsError, match=r"masking.jsonl.gz: line 2: not JSON"):
        read_views(bad)
    write_inspector(copy)
    assert "masking.jsonl.gz: line 2: not JSON" in capsys.readouterr().err
    data = inspector_data(copy)
    assert [r["strategy"] for r in data["runs"]] == ["ars"] and len(data["problems"]) == 1


def test_a_folder_without_views_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InspectorError, match="no such run folder"):
        inspector_data(tmp_path / "missing")
    with pytest.raises(InspectorError, match="no views/ in this run folder"):
        inspector_data(tmp_path)
    assert view_files(tmp_path) == []


def test_cli_replay_writes_views_and_html_and_show_rewrites_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ctxlab = [sys.executable, "-m", "ctxlab"]
    run = subprocess.run(
        [*ctxlab, "replay", "--limit-calls", "20", "--out", str(out), "--html", "--no-figures"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert (
        "views/ (the raw and sent view of every call, 1 run)" in run.stdout and "inspect.html" in run.stdout
    )
    assert (out / "inspect.html").is_file() and len(read_views(view_files(out)[0]).calls) == 20
    assert not (out / ".ctxlab-staging").exists()
    (out / "inspect.html").unlink()
    show = subprocess.run([*ctxlab, "show", str(out)], capture_output=True, text=True, timeout=120)
    assert show.returncode == 0 and (out / "inspect.html").is_file()
    missing = subprocess.run([*ctxlab, "show", str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 1 and "no such run folder" in missing.stderr


# --- the notebook widget (ctxlab.analysis.call_inspector) -----------------------------------------


def test_the_widget_shows_the_call_the_slider_picks(run_dir: Path) -> None:
    from ctxlab.analysis.call_inspector import CallInspector, inspect_calls

    inspector = inspect_calls(run_dir, call=42)
    assert isinstance(inspector, CallInspector)
    assert list(inspector.transcript.options) == ["sample_run.json"]
    assert list(inspector.strategy.options) == ["ars", "masking"] and inspector.call.max == CALLS - 1
    rows = calls(run_dir, "ars")
    before = inspector.view.value
    raw_42 = f"raw view: {rows[42]['raw_tokens']:,} tokens, 90 messages"
    assert raw_42 in before and "no summary yet at this call" in before
    assert before.count("data-mark='kept'") == 2 * 91  # below T: raw and sent alike, system included

    first_l2 = min(i for i, r in rows.items() if r["level"] == "L2")
    inspector.call.value = first_l2  # the L2 round: the summary leads, the raw view marks the span
    after = inspector.view.value
    assert after != before and f"summary in effect (call {first_l2})" in after
    assert "data-mark='summary'" in after and after.count("data-mark='summarized'") > 200
    assert "[Context summary]" in after and "offloaded" in after

    inspector.compare.value = "masking"  # strategy vs strategy: a third column
    assert "sent view (masking)" in inspector.view.value
    assert "data-mark='changed'" in inspector.view.value  # masking rewrote old tool results


def test_the_widget_over_a_result_finds_its_run_folder(run_dir: Path, tmp_path: Path) -> None:
    from ctxlab.analysis.call_inspector import inspect_calls, run_folder_of
    from ctxlab.replay import replay

    result = replay(SAMPLE_TRANSCRIPT, "ars", limit_calls=5, out_dir=tmp_path / "one", write_views=True)
    assert run_folder_of(result) == tmp_path / "one"
    inspector = inspect_calls(result, call=3)  # no calls.parquet: the rows come from the result
    assert inspector.call.max == 4
    assert inspector.record()["row"]["view_tokens"] == result.rows[3]["view_tokens"] > 0
    assert f"raw view: {result.rows[3]['raw_tokens']:,} tokens" in inspector.view.value
    with pytest.raises(InspectorError, match="write_views=True"):
        run_folder_of(replay(SAMPLE_TRANSCRIPT, "ars", limit_calls=2))
