"""Replay of the whole public transcript set (``../shared/transcripts/raw``).

With the ARS defaults (T = 102,400 tokens) only the longest run (``session-ses_4313.md``, ~121k
tokens at its last call) crosses the entry threshold; it is compressed (L2) and every run that
stays below T is sent unchanged.  A second pass with ``summary_threshold=16`` (T = 16,384) makes
L1 and L2 happen across many formats.  Everywhere: one row per recorded assistant turn, the view
never exceeds the uncompressed request, and no tool call is separated from its results.

Marked ``slow`` for selection only: it runs in CI (about 20 s per pass on 2 cores).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from langchain_core.messages import AIMessage

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many, transcript_labels
from ctxlab.transcripts import load_many

pytestmark = pytest.mark.slow

RAW = Path(__file__).resolve().parents[1].parent / "shared" / "transcripts" / "raw"


@pytest.fixture(scope="module")
def transcripts():
    assert RAW.is_dir(), f"shared transcripts missing: {RAW} (the tests need ../shared beside the repository)"
    loaded, errors = load_many(RAW)
    assert not errors, f"public transcripts failed to load: {[str(e) for e in errors]}"
    assert len(loaded) >= 40
    return loaded


def _check_invariants(transcripts, calls: pl.DataFrame) -> None:
    expected = {
        label: sum(isinstance(m, AIMessage) for m in t.messages)
        for t, label in zip(transcripts, transcript_labels(transcripts), strict=True)
    }
    got = dict(calls.group_by("transcript").len().rows())
    missing = {k for k, n in expected.items() if n and k not in got}
    assert not missing, f"runs with assistant turns but no rows: {sorted(missing)}"
    wrong = {k: (got.get(k, 0), n) for k, n in expected.items() if got.get(k, 0) != n}
    assert not wrong, f"call count != assistant turns (got, expected): {wrong}"
    over = calls.filter(pl.col("view_tokens") > pl.col("raw_tokens"))
    assert over.is_empty(), over.select("transcript", "call_index", "raw_tokens", "view_tokens", "level")
    broken = calls.filter(pl.col("unmatched_tool_pairs") != 0)
    assert broken.is_empty(), broken.select("transcript", "call_index", "unmatched_tool_pairs")
    parts = sum(pl.col(f"view_{p}_tokens") for p in ("system", "user", "assistant", "tool", "summary"))
    assert calls.filter(parts != pl.col("view_tokens")).is_empty()
    assert calls.filter(pl.col("retention").is_not_null() & ~pl.col("retention").is_between(0, 1)).is_empty()


def test_public_set_with_default_settings(transcripts, tmp_path: Path) -> None:
    settings = CompressionSettings()
    result = replay_many(transcripts, ["ars"], settings=settings, out_dir=tmp_path, progress=False)
    assert not result.errors, [str(e) for e in result.errors]
    calls = result.frame()
    _check_invariants(transcripts, calls)
    T = settings.entry_threshold_tokens
    peaks = calls.group_by("transcript").agg(pl.col("raw_tokens").max().alias("peak"))
    below = set(peaks.filter(pl.col("peak") < T)["transcript"])
    # short runs never compress: the view is the request, call by call
    short = calls.filter(pl.col("transcript").is_in(below))
    assert short.filter(pl.col("level") != "none").is_empty()
    assert (short["view_tokens"] == short["raw_tokens"]).all()
    # the runs that cross T are compressed from the first call at or over T
    above = sorted(set(peaks["transcript"]) - below)
    assert above == ["session-ses_4313.md"]
    longest = calls.filter(pl.col("transcript") == "session-ses_4313.md").sort("call_index")
    first_over = longest.filter(pl.col("raw_tokens") >= T)["call_index"][0]
    assert longest.filter(pl.col("call_index") < first_over)["level"].unique().to_list() == ["none"]
    assert longest.filter(pl.col("call_index") == first_over)["level"].item() in ("L1", "L2")
    assert "L2" in longest["level"].to_list()
    assert longest["view_tokens"].max() < T
    assert longest.filter(pl.col("level") == "L2")["cutoff_index"].is_sorted()


def test_public_set_with_a_low_threshold(transcripts, tmp_path: Path) -> None:
    settings = CompressionSettings(summary_threshold=16)
    result = replay_many(transcripts, ["ars"], settings=settings, out_dir=tmp_path, progress=False)
    assert not result.errors, [str(e) for e in result.errors]
    calls = result.frame()
    _check_invariants(transcripts, calls)
    levels = calls["level"].value_counts()
    counts = dict(levels.rows())
    assert counts.get("L1", 0) > 0 and counts.get("L2", 0) > 0
    compressed = calls.filter(pl.col("level") != "none")["transcript"].n_unique()
    assert compressed >= 10
    # every run that compressed keeps its sent tokens at or under its raw tokens in total
    per_run = result.summary()
    assert (per_run["sent_tokens_total"] <= per_run["raw_tokens_total"]).all()
    # L2 cutoffs only move forward within a run
    for (_t,), grp in calls.filter(pl.col("state_cutoff_index").is_not_null()).group_by(["transcript"]):
        assert grp.sort("call_index")["state_cutoff_index"].is_sorted()
