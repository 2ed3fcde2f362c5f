"""The ``recorded`` strategy (issue 21): a replay sends what the agent itself sent, its own
recorded compaction included, beside ARS on the same runs.

Real runs: the Claude Code session across an automatic compaction
(``../shared/transcripts/incoming/claude-code-compaction``) and the Codex CLI rollout of ``wild/``
with a ``compacted`` line added (no public rollout records one).  The provider's counts come from
the raw file, read here without the loaders.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from langchain_core.messages import HumanMessage

from ctxlab.cli.main import main
from ctxlab.replay import replay, replay_many
from ctxlab.replay.metrics import make_measure
from ctxlab.replay.prefix import estimate_prefix
from ctxlab.replay.recorded import RecordedCompactionMiddleware, recorded_view_start
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import recorded_compaction_of

SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared" / "transcripts").resolve()
COMPACTION = SHARED / "incoming" / "claude-code-compaction" / "entire-cli_ca-fca7ea73ac_0_full.jsonl"
CODEX = SHARED / "wild/codex-cli/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"transcript not found: {path}; these tests need it", pytrace=False)
    return path


def _recorded_inputs(path: Path) -> list[int]:
    """The provider's input tokens of every model call, from the raw lines (the last streamed
    line of a message id holds its final usage)."""
    usage: dict[str, dict[str, int]] = {}
    for line in _need(path).read_text(encoding="utf-8").split("\n"):
        if line.strip() and (x := json.loads(line)).get("type") == "assistant":
            usage[x["message"]["id"]] = x["message"]["usage"]
    return [
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usage.values()
    ]


def test_recorded_sends_what_claude_code_sent() -> None:
    recorded = _recorded_inputs(COMPACTION)
    boundary = next(i for i in range(1, len(recorded)) if recorded[i] < recorded[i - 1])
    assert (boundary, recorded[boundary - 1], recorded[boundary]) == (10, 154_719, 47_114)
    # the file starts mid-session: before the compaction the provider counted ~147,000 tokens the
    # file does not hold, most of them the earlier history, which --unrecorded-prefix auto splits
    # into the fixed part of every request and the earlier conversation (tests/test_prefix_history.py);
    # this test follows the file's own messages through the compaction, so without either
    [t] = load_transcripts(COMPACTION)
    prefix = estimate_prefix(t, make_measure("tiktoken"))
    assert 140_000 < prefix.tokens + prefix.history_tokens < 150_000
    rec = replay(COMPACTION, "recorded", keep_views=True, measure="tiktoken", unrecorded_prefix="off")
    ars = replay(COMPACTION, "ars", keep_views=True, measure="tiktoken", unrecorded_prefix="off")
    label = rec.rows[0]["transcript"]
    sent = [r["view_tokens"] for r in rec.rows]
    assert len(sent) == len(recorded) == 20
    # the provider's counts sit beside the estimate, the same for every strategy (the recording's)
    assert [r["recorded_input_tokens"] for r in rec.rows] == recorded
    assert [r["recorded_input_tokens"] for r in ars.rows] == recorded
    totals = rec.frame().group_by("strategy").agg(pl.col("recorded_input_tokens").sum())
    assert totals["recorded_input_tokens"].to_list() == [sum(recorded)]
    # after the boundary the model saw the summary and what followed: so does the replay
    after = rec.views[(label, "recorded", boundary)].messages
    assert isinstance(after[0], HumanMessage) and recorded_compaction_of(after[0]) is not None
    assert all(recorded_compaction_of(m) is None for m in ars.views[(label, "ars", boundary)].messages)
    start = next(i for i, m in enumerate(t.messages) if recorded_compaction_of(m))
    assert [m.id for m in after] == [m.id for m in t.messages[start : start + len(after)]]
    assert [m.id for m in ars.views[(label, "ars", boundary)].messages] == [m.id for m in t.messages[:start]]
    # the agent's compaction is the recorded strategy's L2 round, at the call it first reached
    assert [r["level"] for r in rec.rows] == ["none"] * boundary + ["L2"] + ["none"] * (
        len(sent) - boundary - 1
    )
    assert [s["text"] for s in rec.summaries] == [after[0].text] and [r["level"] for r in ars.rows] == [
        "none"
    ] * 20
    # what the file lacks (the system prompt, the tools, the history before the file starts) is
    # the same in every call of a segment: the sent tokens grow as the recorded input tokens do,
    # within the estimator's error (cl100k against Claude's tokenizer)
    for lo, hi in ((0, boundary - 1), (boundary, len(sent) - 1)):
        ratio = (sent[hi] - sent[lo]) / (recorded[hi] - recorded[lo])
        assert 0.7 < ratio < 1.3, (lo, hi, ratio)
    # ARS (below its threshold here) sends the history the agent had compacted away
    assert ars.rows[boundary]["view_tokens"] > rec.rows[boundary - 1]["view_tokens"] > sent[boundary]
    # the uncompressed request is the same for both: the file's messages without the agent's summary
    assert [r["raw_tokens"] for r in rec.rows] == [r["raw_tokens"] for r in ars.rows]
    saved = 1 - sum(sent) / sum(r["raw_tokens"] for r in rec.rows)
    # the ~12 % of the raw history the model never saw after the boundary, net of the summary it saw
    assert 0.08 < saved < 0.16


def test_recorded_view_start_takes_the_latest_compaction() -> None:
    [t] = load_transcripts(_need(COMPACTION))
    rest = t.messages
    start = next(i for i, m in enumerate(rest) if recorded_compaction_of(m))
    assert recorded_view_start(rest) == start and recorded_view_start(rest[:start]) == 0
    assert RecordedCompactionMiddleware().name == "recorded"


def _codex_compacted(tmp_path: Path) -> Path:
    lines = [json.loads(x) for x in _need(CODEX).read_text(encoding="utf-8").split("\n") if x.strip()]
    cut = next(
        i
        for i, x in enumerate(lines)
        if x["type"] == "response_item" and x["payload"]["type"] == "function_call_output"
    )
    user = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "what is this repo?"}],
    }
    summary = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Summary: ran ls."}],
    }
    lines.insert(
        cut + 1,
        {
            "type": "compacted",
            "payload": {"message": "Summary: ran ls.", "replacement_history": [user, summary]},
        },
    )
    f = tmp_path / "rollout-compacted.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return f


def test_compare_recorded_and_ars_on_every_format_that_records_a_compaction(tmp_path: Path) -> None:
    codex = _codex_compacted(tmp_path)
    out = tmp_path / "out"
    assert (
        main(
            [
                "compare",
                str(COMPACTION),
                str(codex),
                "--strategies",
                "recorded,ars",
                "--no-progress",
                "--no-figures",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    calls = pl.read_parquet(out / "calls.parquet")
    assert (
        sorted(set(zip(calls["transcript"], calls["strategy"], strict=True)))
        == sorted((t, s) for t in set(calls["transcript"]) for s in ("ars", "recorded"))
        and calls["transcript"].n_unique() == 2
    )
    result = replay_many([codex], ["recorded", "ars"], keep_views=True, progress=False)
    label = result.rows[0]["transcript"]
    last = max(r["call_index"] for r in result.rows)
    rec_view = result.views[(label, "recorded", last)].messages
    assert [m.content for m in rec_view[:2]] == ["what is this repo?", "Summary: ran ls."]
    ars_view = result.views[(label, "ars", last)].messages
    assert not any(recorded_compaction_of(m) for m in ars_view) and len(ars_view) > len(rec_view)


def test_recorded_without_a_compaction_sends_everything() -> None:
    [t] = load_transcripts(_need(CODEX))
    rec = replay(t, "recorded")
    ars = replay(t, "ars")
    assert [r["view_tokens"] for r in rec.rows] == [r["view_tokens"] for r in ars.rows]
    assert all(r["view_tokens"] == r["raw_tokens"] for r in rec.rows)
    lines = [json.loads(x) for x in CODEX.read_text(encoding="utf-8").split("\n") if x.strip()]
    counted: list[int] = []
    for x in lines:  # Codex writes each call's token_count event, sometimes twice
        info = x["payload"].get("info") if x["payload"].get("type") == "token_count" else None
        if info and (not counted or info["last_token_usage"]["input_tokens"] != counted[-1]):
            counted.append(info["last_token_usage"]["input_tokens"])
    assert [r["recorded_input_tokens"] for r in rec.rows] == counted and len(counted) == 3
