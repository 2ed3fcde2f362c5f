"""The unrecorded prefix of a file that starts mid-session (ctxlab.replay.prefix): the fixed part
(in every request) apart from the earlier conversation the file lacks (a history message that the
agent's own compaction drops), and one uncompressed request for every strategy of a run.

The run is the real Claude Code session across an automatic compaction
(``../shared/transcripts/incoming/claude-code-compaction``): its file starts mid-session (the first
call records ~148,000 input tokens, the file holds ~1,000 of them) and the agent compacted at
call 10 (the provider then counted 47,114 tokens).  The provider's counts are read from the raw
lines here, without the loaders."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from ctxlab.analysis.verdicts import executive_summary
from ctxlab.replay import ReplayResult, replay_many
from ctxlab.replay.metrics import make_measure
from ctxlab.replay.prefix import HISTORY_KEY, OFF_BY, PREFIX_KEY, estimate_prefix
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import Transcript, recorded_compaction_of

SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared" / "transcripts").resolve()
COMPACTION = SHARED / "incoming" / "claude-code-compaction" / "entire-cli_ca-fca7ea73ac_0_full.jsonl"
BOUNDARY = 10  # the first call after the agent's compaction


def _provider_counts() -> list[int]:
    """The provider's input tokens of every model call, from the raw lines (the last streamed
    line of a message id holds its final usage; cached input included)."""
    if not COMPACTION.is_file():
        pytest.fail(f"transcript not found: {COMPACTION}; these tests need it", pytrace=False)
    usage: dict[str, dict[str, int]] = {}
    for line in COMPACTION.read_text(encoding="utf-8").split("\n"):
        if line.strip() and (x := json.loads(line)).get("type") == "assistant":
            usage[x["message"]["id"]] = x["message"]["usage"]
    return [
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usage.values()
    ]


@pytest.fixture(scope="module")
def transcript() -> Transcript:
    _provider_counts()
    [t] = load_transcripts(COMPACTION)
    return t


@pytest.fixture(scope="module")
def compared(transcript: Transcript) -> ReplayResult:
    """``recorded`` and ``ars`` on the run, ``--unrecorded-prefix auto`` (the default)."""
    return replay_many([transcript], ["recorded", "ars"], keep_views=True, progress=False)


def _rows(result: ReplayResult, strategy: str) -> list[dict[str, object]]:
    return sorted((r for r in result.rows if r["strategy"] == strategy), key=lambda r: int(r["call_index"]))


def test_recorded_sends_what_the_provider_counted_on_every_call(compared: ReplayResult) -> None:
    """Every call of ``recorded`` (what the agent sent) within 1.5× of the provider's count, after
    the compaction too: a prefix measured before it no longer rides on every request (before the
    fix the requests after it were 151-177 K tokens against the provider's 47-78 K)."""
    provider = _provider_counts()
    rows = _rows(compared, "recorded")
    assert [r["recorded_input_tokens"] for r in rows] == provider and len(rows) == 20
    assert provider[BOUNDARY - 1] > 150_000 > 50_000 > provider[BOUNDARY]  # the agent's cut
    ratios = [int(r["view_tokens"]) / n for r, n in zip(rows, provider, strict=True)]
    assert all(1 / OFF_BY <= q <= OFF_BY for q in ratios), [round(q, 2) for q in ratios]
    after = ratios[BOUNDARY:]
    assert 0.9 < statistics.median(after) < 1.1, after
    # over the run the replay's recorded requests add up to what the provider counted (±5 %)
    sent = sum(int(r["view_tokens"]) for r in rows)
    assert abs(sent / sum(provider) - 1) < 0.05, (sent, sum(provider))


def test_every_strategy_has_the_same_uncompressed_request(compared: ReplayResult) -> None:
    """raw_tokens per call are the same for ``recorded`` and ``ars``: the agent's compaction
    summary is in ``recorded``'s requests, never in the uncompressed one."""
    raw = {s: [r["raw_tokens"] for r in _rows(compared, s)] for s in ("recorded", "ars")}
    assert raw["recorded"] == raw["ars"]
    # the raw request grows call by call: the earlier conversation stays in it past the compaction
    assert all(b >= a for a, b in zip(raw["ars"], raw["ars"][1:], strict=False))
    provider = _provider_counts()
    assert abs(int(raw["ars"][0]) / provider[0] - 1) < 0.02


def test_the_fixed_part_is_the_gap_after_the_compaction(
    transcript: Transcript, compared: ReplayResult
) -> None:
    """The fixed part is what the provider counted after the compaction beyond the messages the
    agent sent (measured here from the replay's own ``recorded`` requests); the earlier
    conversation is the rest of the gap before it."""
    prefix = compared.prefixes[transcript.name]
    assert prefix["source"] == "recorded usage" and prefix["calls"] == 10 and prefix["calls_after"] == 10
    provider = _provider_counts()
    rows = _rows(compared, "recorded")
    fixed = int(prefix["tokens"])
    # the messages of recorded's requests after the compaction (its view without the fixed block)
    gaps = [n - (int(r["view_tokens"]) - fixed) for r, n in zip(rows, provider, strict=True)][BOUNDARY:]
    assert abs(fixed - statistics.median(gaps)) <= 0.02 * fixed, (fixed, gaps)
    assert {r["unrecorded_prefix_tokens"] for r in rows} == {fixed}
    before = [n - int(r["raw_tokens"]) for r, n in zip(rows, provider, strict=True)][:BOUNDARY]
    # before the compaction the request holds the fixed part and the earlier conversation
    assert abs(statistics.median(before)) <= 0.01 * provider[0], before
    history = int(prefix["history_tokens"])
    assert 80_000 < history < 120_000 and 30_000 < fixed < 70_000, prefix
    assert not estimate_prefix(transcript, make_measure("char-class")).stays_off


def test_the_earlier_conversation_is_history(transcript: Transcript, compared: ReplayResult) -> None:
    """One marked message at the start of the conversation: in ars's first request and in
    ``recorded``'s requests until the agent's compaction, never after it."""
    label, history = transcript.name, int(compared.prefixes[transcript.name]["history_tokens"])
    meter = make_measure("char-class")
    first = compared.views[(label, "ars", 0)]
    message = first.messages[0]
    assert isinstance(message, HumanMessage) and message.additional_kwargs[HISTORY_KEY]["tokens"] == history
    # the fewest filler words reaching the measured size (as exactly as a word allows)
    assert history <= meter.message_tokens(message) <= history + 2
    assert message.text.startswith("[ctxlab: the earlier conversation.")
    # s40 trial item 7: the filler states nothing about the run (the old one invented "the 12
    # tools or the 3 files it read" for every run) and names what it stands for: the earlier
    # conversation, not the system prompt
    filler = message.text.split("]\n", 1)[1]
    assert "what was said before" in filler and "0 facts about the run" in filler
    assert not any(w in filler for w in ("system prompt", "tool schemas", "12", "3 files"))
    block = first.system.content[-1]["text"].split("]\n", 1)[1]
    assert "a part of each request" in block and not any(w in block for w in ("12", "3 files"))
    assert PREFIX_KEY in first.system.additional_kwargs  # the fixed part stays the block
    for call in range(20):
        sent = compared.views[(label, "recorded", call)].messages
        marked = [m for m in sent if HISTORY_KEY in m.additional_kwargs]
        assert len(marked) == (1 if call < BOUNDARY else 0), call
        if call >= BOUNDARY:
            assert recorded_compaction_of(sent[0]) is not None  # the agent's summary opens the view
    # a history message like any other: ARS summarized it away once it could
    last = compared.views[(label, "ars", 19)].messages
    assert not any(HISTORY_KEY in m.additional_kwargs for m in last)


def test_the_old_prefix_on_every_request_is_warned_about(transcript: Transcript) -> None:
    """Given the whole gap as a prefix of every request (what auto measured before the split),
    ``recorded`` after the compaction is ~2× the provider's count: the run is named; without any
    prefix it is far below: named too."""
    provider = _provider_counts()
    for setting, above in ((148_974, True), ("off", False)):
        result = replay_many([transcript], ["recorded"], progress=False, unrecorded_prefix=setting)
        prefix = result.prefixes[transcript.name]
        after = prefix["after_off_by"]
        assert after is not None and ((after > OFF_BY) if above else (after < 1 / OFF_BY)), (setting, after)
        rows = _rows(result, "recorded")[BOUNDARY:]
        worst = max(int(r["view_tokens"]) / n for r, n in zip(rows, provider[BOUNDARY:], strict=True))
        assert (worst > OFF_BY) == above
        warnings = [w for w in executive_summary(result).warnings if "stays more than 1.5×" in w]
        assert len(warnings) == 1 and f"{after:.2f}× after the agent's compaction" in warnings[0], warnings
        assert "the recorded ones" in warnings[0]


def test_a_prefix_above_t_is_warned_about(transcript: Transcript) -> None:
    from ctxlab import CompressionSettings

    settings = CompressionSettings(summary_threshold=40)  # T = 40,960 tokens, below the ~50,000 fixed part
    result = replay_many([transcript], ["recorded"], progress=False, settings=settings)
    fixed = int(result.prefixes[transcript.name]["tokens"])
    assert fixed >= settings.entry_threshold_tokens
    warnings = [w for w in executive_summary(result).warnings if "unrecorded prefix alone" in w]
    assert warnings == [
        f"1 run(s) whose unrecorded prefix alone is at least T ({int(settings.entry_threshold_tokens):,} tokens): "
        f"{transcript.name} ({fixed:,} tokens); every request of every strategy starts above the trigger, and "
        "no strategy compresses that part."
    ]
    default = replay_many([transcript], ["recorded"], progress=False)
    assert not [w for w in executive_summary(default).warnings if "unrecorded prefix alone" in w]


def test_the_report_and_run_json_say_both_parts(transcript: Transcript, tmp_path: Path) -> None:
    from ctxlab.cli.main import main

    out = tmp_path / "out"
    argv = [
        "compare",
        str(COMPACTION),
        "--strategies",
        "recorded",
        "--out",
        str(out),
        "--no-progress",
        "--no-figures",
    ]
    assert main(argv) == 0
    prefix = json.loads((out / "run.json").read_text(encoding="utf-8"))["unrecorded_prefix"][transcript.name]
    fixed, history = prefix["tokens"], prefix["history_tokens"]
    assert history > fixed > 0 and prefix["calls_after"] == 10 and 0.9 < prefix["after_off_by"] < 1.1
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"| {transcript.name} | {fixed:,} | {history:,} | recorded usage | 10 + 10 after |" in report
    assert f"their earlier conversation (median {history:,} tokens) is one history message" in report


def test_a_summary_that_folded_the_placeholder_is_said(compared: ReplayResult) -> None:
    """The trial's case (s39): ars's only L2 round on this run summarized ctxlab's placeholder
    for the ~99,000 tokens the file lacks into a 511-token summary, and ars silently dropped out
    of the fidelity lines. The warning names the strategy, the run and the placeholder's size;
    ``recorded`` (the agent's own summary) is not named."""
    held = int(compared.prefixes[COMPACTION.name]["history_tokens"])
    assert held > 0
    first_l2 = [r for r in _rows(compared, "ars") if r["level"] == "L2"]
    assert first_l2  # ars summarized, its first round over the placeholder
    warnings = [w for w in executive_summary(compared).warnings if "placeholder" in w]
    assert warnings == [
        f"ars: its first summary in 1 run(s) folded ctxlab's placeholder for the earlier conversation the "
        f"recording lacks ({COMPACTION.name}: {held:,} tokens): that summary's size and fidelity say nothing "
        "about a real history, and its saving counts the placeholder as an old message like any other."
    ]
