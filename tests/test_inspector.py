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

from ctxlab.analysis.inspector import (
    INSPECTOR_FILE,
    MESSAGE_CHARS,
    InspectorError,
    inspector_data,
)
from ctxlab.analysis.inspector_site import write_inspector, write_site
from ctxlab.replay import replay_many
from ctxlab.replay.views import ViewsError, read_views, view_file, view_files
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT, shared_dir

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


def _data_file(path: Path) -> dict:
    """The run data a run page loads: ``ctxlabRun({...});``."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("ctxlabRun(") and text.rstrip().endswith(");")
    return json.loads(text[len("ctxlabRun(") : text.rstrip().rindex(")")])


def _index_rows(page: str) -> list[dict]:
    """The index page's runs, decoded as ``index.js`` decodes them (text columns by position in
    their table; the run id from its two parts)."""
    block = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S)
    assert block is not None
    data = json.loads(block.group(1))
    rows = []
    for encoded in data["runs"]:
        row = {
            k: data["tables"][k][v] if k in data["tables"] else v
            for k, v in zip(data["keys"], encoded, strict=True)
        }
        rows.append({**row, "id": f"{row['id_transcript']}/{row['id_strategy']}"})
    return rows


def _decode(ranges: list[int]) -> list[int]:
    return [start + k for start, n in zip(ranges[::2], ranges[1::2], strict=True) for k in range(n)]


def test_the_pages_open_from_disk_and_carry_each_run(run_dir: Path) -> None:
    site = write_site(run_dir)
    assert site.index == run_dir / INSPECTOR_FILE and site.runs == 2 and not site.problems
    index = site.index.read_text(encoding="utf-8")
    block = re.search(r'<script id="data" type="application/json">(.*?)</script>', index, re.S)
    assert block is not None and "</script>" not in block.group(1) and "<" not in block.group(1)
    run_page = (site.folder / "run.html").read_text(encoding="utf-8")
    for code in (index.replace(block.group(1), ""), run_page):  # the transcripts' text may say anything
        assert not re.search(
            r"<script[^>]+src=|<link[^>]+href=|@import|https?://|fetch\(|XMLHttpRequest", code
        )
        assert all(u.startswith(("fonts/", "inspect/fonts/")) for u in re.findall(r'url\("([^"]+)"\)', code))
    rows = _index_rows(index)
    assert [(r["transcript"], r["strategy"]) for r in rows] == [
        ("sample_run.json", "ars"),
        ("sample_run.json", "masking"),
    ]
    summary = pl.read_csv(run_dir / "summary.csv")
    ars_row = summary.filter(pl.col("strategy") == "ars").row(0, named=True)
    assert rows[0]["calls"] == CALLS and rows[0]["sent_tokens"] == ars_row["sent_tokens_total"]
    assert rows[0]["format"] == "openai_chat" and rows[0]["reached"] is True
    assert rows[0]["l2"] == ars_row["l2_rounds"] > 0

    ars = _data_file(site.folder / "data" / f"{rows[0]['id']}.js")
    views = read_views(view_file(run_dir, "sample_run.json", "ars"))
    assert [_decode(c["sent"]) for c in ars["calls"]] == [c["sent"] for c in views.calls]
    assert ars["base"] == ".." and ars["siblings"] == [
        {"strategy": "ars", "id": rows[0]["id"]},
        {"strategy": "masking", "id": rows[1]["id"]},
    ]
    offloaded = [m for m in ars["messages"] if m["mark"] == "offloaded"]
    assert offloaded and all((site.folder / ars["base"] / m["href"]).is_file() for m in offloaded)
    assert ars["summaries"][0]["text"].startswith("[Context summary]")
    # the tool schemas with their tokens: with the system message, a request's "system + tools"
    from ctxlab.transcripts import load_transcripts

    recorded = load_transcripts(SAMPLE_TRANSCRIPT)[0].tools
    assert [t["name"] for t in ars["tools"]] == [t["function"]["name"] for t in recorded] and len(
        recorded
    ) == 4
    call = ars["calls"][42]
    system = ars["messages"][call["system"]]["tokens"]
    assert system + ars["tools_tokens"] == call["row"]["view_system_tokens"]
    assert ars["tools_tokens"] >= max(t["tokens"] for t in ars["tools"]) > 0
    assert all(json.loads(t["schema"])["function"]["name"] == t["name"] for t in ars["tools"])


def test_a_run_over_the_bound_is_cut_to_fit_and_says_so(run_dir: Path, tmp_path: Path) -> None:
    full = write_site(run_dir, tmp_path / "full")
    sizes = sorted(size for path, size in full.sizes.items() if path.suffix == ".js")
    bound = sizes[-1] // 2  # below the bigger run's data, above what its texts cut short need
    cut = write_site(run_dir, tmp_path / "cut", data_bytes=bound, quiet=True)
    for path, size in cut.sizes.items():
        if path.suffix == ".js":
            assert size <= bound, path
    assert cut.cut and not cut.over
    for rid, limit in cut.cut.items():
        data = _data_file(cut.folder / "data" / f"{rid}.js")
        assert data["limit"] == limit < MESSAGE_CHARS
        longest = max(len(m["text"]) for m in data["messages"])
        assert longest <= limit + 60  # the text and the "[... N more characters not shown here]" note
    tiny = write_site(run_dir, tmp_path / "tiny", data_bytes=10_000, quiet=True)
    assert sorted(tiny.over) == sorted(r for r in tiny.cut)  # cannot fit: written, and listed


def test_failure_badges_come_from_the_failure_columns(tmp_path: Path) -> None:
    """LangChain's fallback ("Previous conversation was too long to summarize.") on a Chinese
    opencode session at T = 16 K: a badge on the call, on the summary message it committed, in
    the run's problems and the index's fallback count; the CJK font subset covers its text."""
    from ctxlab.analysis.report import write_report
    from ctxlab.core.settings import CompressionSettings

    out = tmp_path / "zh"
    source = shared_dir() / "transcripts" / "raw" / "opencode" / "session-ses_4313.md"
    result = replay_many(
        [source],
        ["langchain-summarization", "ars"],
        settings=CompressionSettings(summary_threshold=16),
        out_dir=out,
        write_views=True,
        limit_calls=30,
        progress=False,
    )
    result.files_dir = out / "files"
    write_report(result, out, figures="none")
    calls = pl.read_parquet(out / "calls.parquet")
    fallbacks = calls.filter(pl.col("summary_fallback").is_not_null())
    declined = calls.filter(pl.col("summary_declined").is_not_null())
    assert fallbacks.height >= 1
    site = write_site(out)
    rows = {r["strategy"]: r for r in _index_rows(site.index.read_text(encoding="utf-8"))}
    assert rows["langchain-summarization"]["fallback"] == fallbacks.height
    assert rows["ars"]["declined"] == declined.filter(pl.col("strategy") == "ars").height
    lc = _data_file(site.folder / "data" / f"{rows['langchain-summarization']['id']}.js")
    expected = [(r["call_index"], "fallback", r["summary_fallback"]) for r in fallbacks.iter_rows(named=True)]
    assert [(f["call_index"], f["kind"], f["reason"]) for f in lc["failures"]] == expected
    first = lc["calls"][expected[0][0]]
    assert first["failures"] == [
        {"kind": "fallback", "reason": "Previous conversation was too long to summarize."}
    ]
    summary_messages = [
        lc["messages"][i] for i in _decode(first["sent"]) if lc["messages"][i]["mark"] == "summary"
    ]
    assert summary_messages and all(
        m["failure"].startswith("fallback: Previous conversation") for m in summary_messages
    )
    assert lc["summaries"][0]["failure"] == "fallback: Previous conversation was too long to summarize."
    ars = _data_file(site.folder / "data" / f"{rows['ars']['id']}.js")
    assert {f["kind"] for f in ars["failures"]} <= {"declined", "rejected", "failed"}
    assert sum(f["kind"] == "declined" for f in ars["failures"]) == rows["ars"]["declined"]

    # the page's CJK text is in the font subset it references (no CJK system font needed)
    from fontTools.ttLib import TTFont

    from ctxlab.analysis.inspector_fonts import cjk_characters

    assert site.font is not None and site.font.parent == site.folder / "fonts"
    needed = cjk_characters(json.dumps(lc, ensure_ascii=False))
    with TTFont(site.font) as font:
        cmap = font.getBestCmap()
    covered = _font_cmap()  # the collection's face has most, not all (an emoji, ...)
    assert len(needed) > 100 and all(ord(c) in cmap for c in needed if ord(c) in covered)
    css = (site.folder / "run.html").read_text(encoding="utf-8")
    assert f'url("fonts/{site.font.name}")' in css and "unicode-range: U+" in css
    assert f'url("inspect/fonts/{site.font.name}")' in site.index.read_text(encoding="utf-8")


def _font_cmap() -> dict[int, str]:
    import noto_cjk_sans_otc
    from fontTools.ttLib import TTFont

    from ctxlab.analysis.inspector_fonts import FACE

    with TTFont(noto_cjk_sans_otc.FONT_PATH, fontNumber=FACE, lazy=True) as font:
        return dict(font.getBestCmap())


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
    site = write_site(copy, quiet=True)  # the index lists the readable run and the problem
    assert site.runs == 1 and len(site.problems) == 1
    assert not (site.folder / "data" / "sample_run.json" / "masking.js").exists()


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
    assert (out / "inspect" / "run.html").is_file() and len(
        list((out / "inspect" / "data").rglob("*.js"))
    ) == 1
    assert not (out / ".ctxlab-staging").exists()
    (out / "inspect.html").unlink()
    show = subprocess.run([*ctxlab, "show", str(out)], capture_output=True, text=True, timeout=120)
    assert show.returncode == 0 and (out / "inspect.html").is_file()
    assert "the index of 1 runs" in show.stdout and "bound 4.0 MB" in show.stdout
    elsewhere = tmp_path / "pages" / "sample.html"  # an index page elsewhere: runs beside it
    show = subprocess.run(
        [*ctxlab, "show", str(out), "--out", str(elsewhere)], capture_output=True, text=True
    )
    assert show.returncode == 0 and elsewhere.is_file()
    assert (tmp_path / "pages" / "sample_inspect" / "run.html").is_file()
    data = next((tmp_path / "pages" / "sample_inspect" / "data").rglob("*.js")).read_text(encoding="utf-8")
    assert '"base": "../../out"' in data  # the files the pages link to stay where they are
    too_small = subprocess.run(
        [*ctxlab, "show", str(out), "--max-run-bytes", "5"], capture_output=True, text=True
    )
    assert too_small.returncode == 2 and "--max-run-bytes=5 is invalid" in too_small.stderr
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
