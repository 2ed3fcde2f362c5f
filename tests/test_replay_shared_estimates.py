"""A replay batch estimates each recorded message once and the numbers stay the same (issue 31).

The batch's measuring estimator (``ReplayBatch.meter``) is shared with every strategy whose
middleware counts as it does (``EstimateCache.share_with``): a message the meter already
estimated is taken with its estimate and fingerprint, never estimated or fingerprinted again.
The unrecorded prefix's filler block is sized in a few estimates instead of a bisection's.
Both are checked against the straightforward computation on real public transcripts: every
token column of every call equal, and the work actually saved (estimator and fingerprint calls
counted per message object).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, SystemMessage

import ctxlab.core.estimation.cache as cache_module
import ctxlab.replay.prefix as prefix_module
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.estimation.cache import EstimateCache
from ctxlab.replay import replay_many
from ctxlab.replay.metrics import make_measure
from ctxlab.replay.prefix import fewest_words, prefix_text
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import Transcript

RAW = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw"
#: real runs of several agents; the Claude Code one records its usage (an unrecorded prefix)
FILES = (
    RAW / "claude-code" / "snapshot-tests" / "tests" / "coverage-test-fix" / "transcript.jsonl",
    RAW
    / "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source"
    / "marshmallow-code__marshmallow-1867.traj",
)
FIVE = ["ars", "masking", "hybrid", "langchain-summarization", "deepagents-summarization"]


def _reference_fewest(tokens: int, count: Callable[[int], int]) -> int:
    """The bisection prefix_text used before issue 31: the fewest words reaching ``tokens``."""
    lo, hi = 0, max(1, tokens)
    while count(hi) < tokens:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if count(mid) < tokens:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _reference_text(label: str, words: int) -> str:
    words_ = prefix_module._WORDS
    return label + "".join(words_[i % len(words_)] for i in range(words))


@pytest.fixture(scope="module")
def transcripts() -> list[Transcript]:
    assert all(f.is_file() for f in FILES), "the shared transcripts (../shared/transcripts/raw) are missing"
    out = [t for f in FILES for t in load_transcripts(f)]
    assert any(m.usage_metadata for t in out for m in t.messages if hasattr(m, "usage_metadata"))
    return out


def _token_columns(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = sorted(k for k in rows[0] if "token" in k or k in ("over_window", "rejected_reason"))
    assert "view_tokens" in keys and "raw_tokens" in keys and "unrecorded_prefix_tokens" in keys
    return [(r["strategy"], r["transcript"], r["call_index"], *(r[k] for k in keys)) for r in rows]


@pytest.mark.parametrize("source", ["measured from the recorded usage of 12 calls", "x"])
def test_the_filler_is_the_fewest_words_a_bisection_finds(source: str) -> None:
    meter = make_measure("char-class")
    empty = meter.message_tokens(SystemMessage([]))
    probes = Counter[str]()
    for tokens in [*range(1, 300), 999, 4_096, 18_000, 18_001, 52_345]:
        label = prefix_module._LABEL.format(n=tokens, source=source)

        def count(words: int, who: str, label: str = label) -> int:
            probes[who] += 1
            block = {"type": "text", "text": _reference_text(label, words)}
            return meter.message_tokens(SystemMessage([block])) - empty

        want = _reference_fewest(tokens, lambda w: count(w, "bisection"))
        assert fewest_words(tokens, lambda w: count(w, "new")) == want, tokens
        assert prefix_text(tokens, meter, source) == _reference_text(label, want)
    assert probes["new"] < probes["bisection"] / 2


def test_fewest_words_on_a_count_with_steps() -> None:
    """A count that rises by several tokens at once and stays flat in between (like rounding)."""
    for tokens in range(1, 200):
        for label in (0, 7, 50):

            def count(words: int, label: int = label) -> int:
                return label + 3 * (words // 4)

            assert fewest_words(tokens, count) == _reference_fewest(tokens, count), (tokens, label)


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Counter[int], Counter[int], list[Any]]]:
    """(estimates per message object id, fingerprints per message object id, the objects kept alive)."""
    estimates, prints, alive = Counter[int](), Counter[int](), []
    inner_estimate, inner_print = CharClassEstimator.message_tokens, cache_module._fingerprint

    def estimate(self: CharClassEstimator, message: BaseMessage) -> int:
        if type(self) is CharClassEstimator:  # the char-class measure (not the tiktoken window's)
            estimates[id(message)] += 1
            alive.append(message)
        return inner_estimate(self, message)

    def fingerprint(message: BaseMessage) -> Any:
        prints[id(message)] += 1
        alive.append(message)
        return inner_print(message)

    monkeypatch.setattr(CharClassEstimator, "message_tokens", estimate)
    monkeypatch.setattr(cache_module, "_fingerprint", fingerprint)
    yield estimates, prints, alive


def test_five_strategies_estimate_and_fingerprint_each_recorded_message_once(
    transcripts: list[Transcript], counted: tuple[Counter[int], Counter[int], list[Any]], tmp_path: Path
) -> None:
    estimates, prints, _ = counted
    res = replay_many(transcripts, FIVE, out_dir=tmp_path, progress=False)
    assert not res.errors and {r["strategy"] for r in res.rows} == set(FIVE)
    recorded = [m for t in transcripts for m in t.messages]
    # every recorded message reached the estimator and the fingerprint exactly once for the batch
    assert [estimates[id(m)] for m in recorded] == [1] * len(recorded)
    assert [prints[id(m)] for m in recorded] == [1] * len(recorded)


def test_token_columns_equal_a_replay_without_sharing(
    transcripts: list[Transcript], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shared = replay_many(transcripts, FIVE, out_dir=tmp_path / "shared", progress=False)
    # the straightforward computation: each middleware estimates through its own hook, the
    # prefix block is sized by bisection
    monkeypatch.setattr(EstimateCache, "share_with", lambda self, other: None)
    monkeypatch.setattr(prefix_module, "fewest_words", _reference_fewest)
    alone = replay_many(transcripts, FIVE, out_dir=tmp_path / "alone", progress=False)
    assert any(r["unrecorded_prefix_tokens"] for r in shared.rows)
    assert _token_columns(shared.rows) == _token_columns(alone.rows)
