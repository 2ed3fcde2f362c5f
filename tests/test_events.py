"""``context_compression`` events (spec R14) and their SSE frames (R15)."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from ctxlab import CompressionMiddleware, CompressionSettings, to_sse
from ctxlab.core.events import EVENT_TYPE, PHASES, CompressionEvent, EventStats, make_event

KEYS = {
    "type",
    "phase",
    "level",
    "tokens_before",
    "tokens_after",
    "threshold",
    "l2_threshold",
    "forced_by_overflow",
    "cutoff_index",
    "file_path",
    "error",
    "stats",
}


def test_make_event_has_every_documented_key():
    ev = make_event("started", tokens_before=10)
    assert set(ev) == KEYS == set(CompressionEvent.__annotations__)
    assert ev["type"] == EVENT_TYPE == "context_compression"
    assert ev["phase"] == "started" and ev["tokens_before"] == 10 and ev["level"] is None
    assert PHASES == ("started", "completed", "failed", "prepared")  # prepared: issue 34
    with pytest.raises(ValueError, match="phase"):
        make_event("finished")


def parse_frame(frame):
    assert frame.endswith("\n\n")
    lines = frame[:-2].split("\n")
    assert len(lines) == 2, lines  # one event line, one data line: valid SSE
    assert lines[0] == "event: context_compression"
    assert lines[1].startswith("data: ")
    return json.loads(lines[1][len("data: ") :])


def test_to_sse_frame_format():
    # spec: R15 — SSE events named context_compression, JSON data on one line, Chinese readable
    ev = make_event(
        "failed",
        level="L2",
        tokens_before=123,
        error="摘要失败: line one\nline two",
        file_path="/outputs/conversation_history/x.md",
    )
    frame = to_sse(ev)
    assert parse_frame(frame) == ev
    assert "摘要失败" in frame  # not \\u-escaped
    assert "\\n" in frame  # the newline in the error is escaped inside the JSON


def test_to_sse_refuses_other_dicts():
    for bad in ({"type": "other"}, {"phase": "started"}, "event", None):
        with pytest.raises(ValueError):
            to_sse(bad)


def test_every_event_of_a_real_round_maps_to_a_frame(mw_kit, tmp_path):
    # spec: R14/R15 — the events the middleware writes (with their stats) are SSE-ready
    settings = CompressionSettings(
        summary_threshold=1, summary_keep_messages=2, summary_tool_result_token_limit=100
    )
    mw = CompressionMiddleware(
        settings=settings, backend=mw_kit.backend(tmp_path), summarizer=mw_kit.FakeSummarizer()
    )
    msgs = [
        (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(600, f"FACT-{i}", i), id=f"m{i}")
        for i in range(12)
    ]
    msgs += mw_kit.tool_pair("c1", "读取", mw_kit.cjk(3000), ai_id="a-c1", tool_id="t-c1")
    msgs.append(HumanMessage("继续", id="last"))
    rec = mw_kit.Driver(mw, msgs).round()
    evs = mw_kit.ctx_events(rec)
    assert [e["phase"] for e in evs] == ["started", "completed"]
    for ev in evs:
        assert set(ev) >= KEYS
        assert set(ev["stats"]) <= EventStats.__optional_keys__  # the typed payload covers the stats
        data = parse_frame(to_sse(ev))
        assert data["phase"] == ev["phase"] and data["cutoff_index"] == ev["cutoff_index"]
    done = parse_frame(to_sse(evs[-1]))
    assert done["level"] == "L2" and done["file_path"].startswith("/outputs/conversation_history/")
    assert done["stats"]["offloaded"] and done["stats"]["summarizer"]["calls"] == 1
    assert {"offloaded", "truncated_args", "summarizer", "tokens_l1", "tokens_after"} <= set(done["stats"])
