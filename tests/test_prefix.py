"""The unrecorded prefix (ctxlab.replay.prefix): measured from recorded usage, added to every
strategy's request as one labelled block, seen by every trigger, the window and the columns.

The recordings are real public runs (the shared Claude Code sessions); the "provider" that counts
their hidden prefix is the cl100k tokenizer (the replay's provider stand-in), the hidden prefix
the real system message and first turns of a SWE-agent run, the replay measures with char-class:
three different things, as in a real replay."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab import CompressionSettings
from ctxlab.cli.main import main
from ctxlab.replay import replay, replay_many
from ctxlab.replay.metrics import make_measure
from ctxlab.replay.prefix import (
    OFF_BY,
    PREFIX_KEY,
    UnrecordedPrefix,
    estimate_prefix,
    parse_prefix_setting,
    prefix_text,
)
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import RECORDED_TRUNCATION_KEY, Transcript

RAW = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw"
CLAUDE = RAW / "claude-code" / "snapshot-tests" / "tests"
COVERAGE = CLAUDE / "coverage-test-fix" / "transcript.jsonl"
SWE = (
    RAW
    / "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source"
    / "marshmallow-code__marshmallow-1867.traj"
)
TIKTOKEN = make_measure("tiktoken")
CHAR_CLASS = make_measure("char-class")


def hidden_system() -> SystemMessage:
    """Real text an agent could have put before every request: a SWE-agent run's first turns."""
    src = load_transcripts(SWE)[0]
    return SystemMessage("\n\n".join(m.text for m in src.messages[:12]))


def recorded_with(transcript: Transcript, hidden: SystemMessage, *, scale: float = 1.0) -> Transcript:
    """``transcript`` whose calls record the provider stand-in's count of (hidden + what the file
    holds before the call) as their input tokens (``scale`` × that count), like a provider's usage."""
    out, seen = [], []
    for m in transcript.messages:
        if isinstance(m, AIMessage):
            n = round(scale * TIKTOKEN.request_tokens(hidden, list(transcript.tools), seen))
            m = m.model_copy(
                update={"usage_metadata": {"input_tokens": n, "output_tokens": 5, "total_tokens": n + 5}}
            )
        out.append(m)
        seen.append(m)
    return Transcript(
        messages=out,
        source=transcript.source,
        run_id=transcript.run_id,
        format=transcript.format,
        tools=transcript.tools,
    )


@pytest.fixture(scope="module")
def recording() -> tuple[Transcript, int]:
    """(a real Claude Code run recording a known hidden prefix, that prefix's provider tokens)."""
    assert COVERAGE.is_file() and SWE.is_file(), (
        "the shared transcripts (../shared/transcripts/raw) are missing"
    )
    hidden = hidden_system()
    return recorded_with(load_transcripts(COVERAGE)[0], hidden), TIKTOKEN.message_tokens(hidden)


def test_a_known_hidden_prefix_is_recovered_within_5_percent(recording: tuple[Transcript, int]) -> None:
    transcript, hidden = recording
    prefix = estimate_prefix(transcript, CHAR_CLASS)
    assert prefix.source == "recorded usage" and prefix.calls == 14
    assert abs(prefix.tokens - hidden) <= 0.05 * hidden, (prefix.tokens, hidden)
    assert 0.95 <= (prefix.off_by or 0) <= 1.05 and (prefix.raw_off_by or 1) < 0.5
    assert not prefix.stays_off


def test_every_request_carries_the_prefix_block_and_raw_tokens_match_the_recording(
    recording: tuple[Transcript, int],
) -> None:
    transcript, _ = recording
    result = replay(transcript, "ars", keep_views=True, settings=CompressionSettings(summary_threshold=64))
    prefix = result.prefixes[transcript.name]
    rows = result.rows
    assert {r["unrecorded_prefix_tokens"] for r in rows} == {prefix["tokens"]}
    ratios = [r["raw_tokens"] / r["recorded_input_tokens"] for r in rows]
    assert abs(statistics.median(ratios) - 1) <= 0.05
    for key, view in result.views.items():
        system = view.system
        assert (
            isinstance(system, SystemMessage)
            and system.additional_kwargs[PREFIX_KEY]["tokens"] == prefix["tokens"]
        )
        block = system.content[-1]
        assert isinstance(block, dict) and block["text"].startswith("[ctxlab: the unrecorded prefix.")
        assert view.messages and view.messages[0].type != "system", key  # the block is not a state message


def test_every_trigger_sees_the_prefix(recording: tuple[Transcript, int]) -> None:
    """T = 4,096 tokens: the hidden prefix alone (about 4,700) is above it, so every strategy's own
    counter reaches its trigger from the first call; without the prefix none does there."""
    transcript, _ = recording
    settings = CompressionSettings(summary_threshold=4)
    names = ["ars", "langchain-summarization", "deepagents-summarization"]
    with_prefix = replay_many([transcript], names, settings=settings, progress=False)
    first = {r["strategy"]: r for r in with_prefix.rows if r["call_index"] == 0}
    assert {s: first[s]["trigger_reached"] for s in names} == dict.fromkeys(names, True)
    without = replay_many([transcript], names, settings=settings, progress=False, unrecorded_prefix="off")
    first = {r["strategy"]: r for r in without.rows if r["call_index"] == 0}
    assert {s: first[s]["trigger_reached"] for s in names} == dict.fromkeys(names, False)
    assert {r["unrecorded_prefix_tokens"] for r in without.rows} == {0}
    assert without.prefixes[transcript.name]["source"] == "off"


def test_a_given_prefix_and_a_run_without_recorded_usage(recording: tuple[Transcript, int]) -> None:
    transcript, _ = recording
    given = replay(transcript, "ars", unrecorded_prefix=1000)
    assert {r["unrecorded_prefix_tokens"] for r in given.rows} == {1000}
    bare = replay(load_transcripts(SWE)[0], "ars")  # SWE-agent records no per-call usage
    assert bare.prefixes[SWE.name] == {
        "tokens": 0,
        "source": "nothing recorded",
        "calls": 0,
        "off_by": None,
        "raw_off_by": None,
        "history_tokens": 0,
        "calls_after": 0,
        "after_off_by": None,
    }
    assert {r["unrecorded_prefix_tokens"] for r in bare.rows} == {0}


def test_the_block_counts_its_size_for_every_counter() -> None:
    text = prefix_text(12_000, CHAR_CLASS)
    block = SystemMessage([{"type": "text", "text": text}])
    assert CHAR_CLASS.message_tokens(block) - CHAR_CLASS.message_tokens(SystemMessage([])) == 12_000
    assert abs(TIKTOKEN.message_tokens(block) - 12_000) <= 0.05 * 12_000  # the provider stand-in
    assert abs(count_tokens_approximately([block]) - 12_000) <= 0.05 * 12_000  # LangChain's counter


def test_a_run_still_off_after_the_correction_is_flagged() -> None:
    """Recorded counts a third of what the file holds (usage without the cached input, say): no
    prefix can be negative, so the corrected median call stays more than 1.5× above them."""
    exact = recorded_with(load_transcripts(COVERAGE)[0], SystemMessage("You are Claude Code."))
    fine = estimate_prefix(exact, CHAR_CLASS)
    assert fine.off_by is not None and not fine.stays_off
    third = Transcript(
        messages=[
            m.model_copy(
                update={
                    "usage_metadata": {
                        **m.usage_metadata,
                        "input_tokens": m.usage_metadata["input_tokens"] // 3,
                    }
                }
            )
            if isinstance(m, AIMessage) and m.usage_metadata
            else m
            for m in exact.messages
        ],
        source=exact.source,
        run_id=exact.run_id,
        format=exact.format,
    )
    prefix = estimate_prefix(third, CHAR_CLASS)
    assert prefix.tokens == 0 and prefix.off_by is not None and prefix.off_by > OFF_BY
    assert prefix.stays_off


def test_calls_after_a_recorded_truncation_are_not_measured(recording: tuple[Transcript, int]) -> None:
    transcript, hidden = recording
    # the agent truncated from call 5 on: later recorded counts are of a smaller request
    marked = [
        m.model_copy(
            update={"additional_kwargs": {**m.additional_kwargs, RECORDED_TRUNCATION_KEY: {"from_call": 5}}}
        )
        if i == 3
        else m
        for i, m in enumerate(transcript.messages)
    ]
    cut = Transcript(
        messages=marked, source=transcript.source, run_id=transcript.run_id, format=transcript.format
    )
    prefix = estimate_prefix(cut, CHAR_CLASS)
    assert prefix.calls == 5 and abs(prefix.tokens - hidden) <= 0.05 * hidden


@pytest.mark.parametrize("value", ["sometimes", "-5", "1.5x"])
def test_a_bad_setting_is_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="auto, off or a number of tokens"):
        parse_prefix_setting(value)
    assert main(["replay", str(COVERAGE), "--unrecorded-prefix", value, "--out", "/nonexistent/x"]) == 2
    assert "--unrecorded-prefix" in capsys.readouterr().err


def test_settings_parse() -> None:
    assert [parse_prefix_setting(v) for v in (None, "AUTO", "off", "18,000", 7)] == [
        "auto",
        "auto",
        "off",
        18000,
        7,
    ]
    assert UnrecordedPrefix(0, "off").as_dict()["source"] == "off"
