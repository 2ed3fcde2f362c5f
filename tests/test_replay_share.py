"""The strategies of one transcript share the per-call work that depends on the transcript only
(issue 31, :mod:`ctxlab.replay.share`), and the numbers stay the same.

Checked on real public transcripts with the five strategies of the bench: the rows of a batch
(one share per transcript) equal the rows of each strategy replayed in a batch of its own (a share
per run), and the shared computations run once per transcript call, not once per strategy —
counted on the functions that do the work (each would run once per strategy without sharing).
The messages reducer's fast path (:class:`~ctxlab.replay.reducer.AppendingMessages`) gives
``add_messages``'s very result, and takes only pure appends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

import ctxlab.replay.measures as measures_module
import ctxlab.replay.provider as provider_module
import ctxlab.replay.run_measures as run_measures_module
import ctxlab.replay.tracking as tracking_module
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.replay.identifiers import IdentifierIndex
from ctxlab.replay.latency import SimTime
from ctxlab.replay.reducer import AppendingMessages
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import Transcript, is_model_call

RAW = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw"
FILES = (
    RAW / "claude-code" / "snapshot-tests" / "tests" / "coverage-test-fix" / "transcript.jsonl",
    RAW
    / "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source"
    / "marshmallow-code__marshmallow-1867.traj",
)
FIVE = ["ars", "masking", "hybrid", "langchain-summarization", "deepagents-summarization"]
#: a low threshold: the strategies compress (views that differ from the history)
OPTIONS: dict[str, Any] = {"settings": CompressionSettings(summary_threshold=4), "progress": False}
#: and a window the Claude Code run's later requests exceed: some strategies fail there (masking
#: first: the strategies after it replay calls the share has not seen yet)
NARROW: dict[str, Any] = {**OPTIONS, "context_window": 21_000}
ORDER = ["masking", "ars", "hybrid", "langchain-summarization", "deepagents-summarization"]


@pytest.fixture(scope="module")
def transcripts() -> list[Transcript]:
    assert all(f.is_file() for f in FILES), "the shared transcripts (../shared/transcripts/raw) are missing"
    return [t for f in FILES for t in load_transcripts(f)]


def _columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "overhead_ms"} for r in rows]  # wall time aside


def _by_run(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["transcript"], r["strategy"]), []).append(r)
    return out


def test_a_shared_batch_gives_the_rows_of_separate_batches(
    transcripts: list[Transcript], tmp_path: Path
) -> None:
    together = replay_many(transcripts, ORDER, out_dir=tmp_path / "together", **NARROW)
    failed = {(e.transcript, e.strategy) for e in together.errors}
    assert ("transcript.jsonl", "masking") in failed and ("transcript.jsonl", "ars") not in failed
    rows = _by_run(_columns(together.rows))
    assert len(rows) == len(ORDER) * len(transcripts) - len(failed)  # a failed run leaves no rows
    compressed = {r["strategy"] for r in together.rows if r["view_tokens"] < r["raw_tokens"]}
    assert {"ars", "masking", "langchain-summarization"} <= compressed  # the slow paths ran too
    assert any(r["over_window"] for r in together.rows) and not all(r["over_window"] for r in together.rows)
    assert any(r["retention"] is not None and r["retention"] < 1 for r in together.rows)
    for s in ORDER:  # each strategy alone: a batch (and a share) of its own
        alone = replay_many(transcripts, [s], out_dir=tmp_path / s, **NARROW)
        assert {(e.transcript, e.strategy) for e in alone.errors} == {k for k in failed if k[1] == s}
        for key, expected in _by_run(_columns(alone.rows)).items():
            assert rows[key] == expected, key


def _counting(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, counts: Counter[Any], key: Callable[..., Any]
) -> None:
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[key(*args, **kwargs)] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_the_transcript_work_runs_once_per_call_for_five_strategies(
    transcripts: list[Transcript], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyed: Counter[Any] = Counter()  # canonical keys made per message object
    mentions: Counter[Any] = Counter()  # "does the answer mention an earlier identifier", per answer
    tallied: Counter[Any] = Counter()  # the uncompressed request grown, per arrival
    priced: Counter[Any] = Counter()  # runs priced, per kind (main requests vs uncompressed ones)
    kept: list[Any] = []  # keeps the counted objects alive: ids stay distinct
    _counting(monkeypatch, tracking_module, "canonical_key", keyed, lambda m: (kept.append(m), id(m))[1])
    _counting(
        monkeypatch,
        IdentifierIndex,
        "mentions",
        mentions,
        lambda self, m, pool: (kept.append(m), m.id or id(m))[1],
    )
    _counting(
        monkeypatch,
        provider_module.RequestTally,
        "add",
        tallied,
        lambda self, ms: (kept.append(ms), tuple(m.id or id(m) for m in ms))[1],
    )
    _counting(
        monkeypatch,
        run_measures_module,
        "price_run",
        priced,
        lambda calls, price, **kw: "main" if any(c.segments for c in calls) else "uncompressed",
    )
    stepped: Counter[Any] = Counter()  # the agent step's duration, per recorded answer
    _counting(monkeypatch, SimTime, "step_seconds", stepped, lambda self, answer, estimate: answer.id)
    result = replay_many(transcripts, FIVE, out_dir=tmp_path, **OPTIONS)
    assert not result.errors
    calls = sum(1 for t in transcripts for m in t.messages if is_model_call(m))
    assert len(result.rows) == len(FIVE) * calls

    # every message object is keyed once for the five trackers (without sharing: once per tracker)
    assert keyed and max(keyed.values()) == 1
    # once per transcript call at most (the views that are still the history ask; not per strategy)
    assert mentions and max(mentions.values()) == 1 and sum(mentions.values()) <= calls
    # the uncompressed request grows once per transcript call, whatever the number of strategies
    assert sum(tallied.values()) == calls and max(tallied.values()) == 1
    # the agent step (no step latency: a function of the recorded answer) timed once per call
    assert sum(stepped.values()) == calls
    # each distinct run's requests priced once (runs that sent the same requests share the price,
    # test_a_shared_batch_gives_the_rows_of_separate_batches); the uncompressed run once per transcript
    assert len(transcripts) <= priced["main"] <= len(FIVE) * len(transcripts)
    assert priced["uncompressed"] == len(transcripts)


def test_the_uncompressed_tokens_are_summed_once_per_call(
    transcripts: list[Transcript], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = Counter[str]()
    original = measures_module.ViewMeasure._raw_messages_tokens

    def counted(self: Any, obs: Any) -> int:
        before = self.share.computed["raw_messages_tokens"]
        value = original(self, obs)
        grown["computed" if self.share.computed["raw_messages_tokens"] > before else "reused"] += 1
        return value

    monkeypatch.setattr(measures_module.ViewMeasure, "_raw_messages_tokens", counted)
    result = replay_many(transcripts[:1], FIVE, out_dir=tmp_path, **OPTIONS)
    calls = len(result.rows) // len(FIVE)
    assert grown == {"computed": calls, "reused": (len(FIVE) - 1) * calls}
    raw = _by_run(result.rows)
    assert all(
        [r["raw_tokens"] for r in rows] == [r["raw_tokens"] for r in raw[next(iter(raw))]]
        for rows in raw.values()
    )


# --- the messages reducer -------------------------------------------------------------------------


def _updates() -> list[Any]:
    h = HumanMessage("task", id="h1")
    a = AIMessage("", id="a1", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}])
    t = ToolMessage("out", tool_call_id="c1", id="t1")
    return [
        [h],  # the first update
        [a, t],  # appends
        [],  # nothing
        AIMessage("single", id="a2"),  # one message, not a list
        [HumanMessage("edited task", id="h1")],  # replaces by id
        [HumanMessage("no id")],  # an id assigned by add_messages
        [AIMessage("x", id="d"), AIMessage("y", id="d")],  # one id twice in the update
        [AIMessageChunk("chunk", id="k1")],  # a chunk, made a message
        [RemoveMessage(id="a2")],  # removed
        [AIMessage("after", id="a3")],  # appends again
        [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("fresh", id="f1")],  # all replaced
        [ToolMessage("more", tool_call_id="c9", id="t9")],
    ]


def _shape(messages: list[Any]) -> list[tuple[str, str, Any]]:
    return [(type(m).__name__, m.id if m.id != "" else None, m.content) for m in messages]


def test_the_reducer_gives_add_messages_result_and_appends_fast() -> None:
    reducer = AppendingMessages()
    ours: list[Any] = []
    theirs: list[Any] = []
    for update in _updates():
        ours = reducer(ours, update)
        theirs = add_messages(theirs, update)  # type: ignore[assignment]
        assert len(ours) == len(theirs)
        for x, y in zip(ours, theirs, strict=True):  # same types, contents and ids (random ones aside)
            assert type(x) is type(y) and x.content == y.content
            assert x.id == y.id or (x.content == "no id" and x.id and y.id)
    # the pure appends (the empty update, the lists of new messages) took the fast path
    assert reducer.appended == 5 and reducer.merged == len(_updates()) - 5


def test_the_reducer_never_trusts_a_list_it_did_not_return() -> None:
    reducer = AppendingMessages()
    state = reducer([], [HumanMessage("a", id="1")])
    other = [HumanMessage("b", id="2")]  # a list of another origin: its ids are not known
    out = reducer(other, [HumanMessage("b again", id="2")])
    assert [m.content for m in out] == ["b again"] and reducer.merged == 2
    out = reducer(state, [HumanMessage("c", id="3")])  # no longer the last list returned
    assert [m.id for m in out] == ["1", "3"] and reducer.appended == 0
