"""The replay's incremental measurements (ctxlab.replay.tracking, the word-by-word identifier scan,
the middleware a batch reuses) give the values of the plain, rescanning definitions.

* every row's view split, cache-reusable prefix and retention equal the plain functions of
  :mod:`ctxlab.replay.metrics` recomputed on the kept views;
* replaying A then B with one middleware per strategy gives B's rows of B replayed alone, row for
  row (nothing leaks from one transcript into the next), for the built-in strategy and the
  plugin packages' (masking, hybrid, ars-fast); a strategy whose plugin keeps a run's state on
  itself does so only when registered ``per_run=True``;
* identifiers scanned word by word equal the patterns run on whole texts.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

from ctxlab import hookimpl
from ctxlab.core.cutoff import SummarizeDecision
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import make_lab_manager, replay_many
from ctxlab.replay.metrics import (
    IdentifierIndex,
    cache_reusable_tokens,
    extract_identifiers,
    extract_identifiers_whole,
    make_measure,
    retention,
    unmatched_tool_pairs,
    view_parts,
)
from ctxlab.replay.tracking import PairsTracker
from ctxlab.transcripts import load_many

RAW = Path(__file__).resolve().parents[1].parent / "shared" / "transcripts" / "raw"
#: small runs of several formats, some with L1 and L2 rounds at a small T
FILES = [
    "claude-code/snapshot-tests/tests/python-to-rust-port/transcript.jsonl",
    "swe-agent/trajectories/demonstrations/ctf/crypto/katy.traj",
    "mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-16255/django__django-16255.traj.json",
    "openhands/tests/runtime/trajs/basic.json",
]
#: T = 4 K tokens: the runs above compress (L1 and L2) part of the time
SMALL_T = CompressionSettings(summary_threshold=4, summary_tool_result_token_limit=500)
#: columns that are wall time, not results
TIMING = {"overhead_ms"}


@pytest.fixture(scope="module")
def transcripts() -> list[Any]:
    assert RAW.is_dir(), f"shared transcripts missing: {RAW} (the tests need ../shared beside the repository)"
    loaded, errors = load_many([RAW / f for f in FILES])
    assert not errors
    assert len(loaded) == len(FILES)
    return loaded


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _rows(result: Any, transcript: str | None = None) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k not in TIMING}
        for r in result.rows
        if transcript is None or r["transcript"] == transcript
    ]


def test_rows_equal_the_plain_measures(transcripts: list[Any], tmp_path: Path) -> None:
    res = replay_many(
        transcripts, ["ars"], settings=SMALL_T, out_dir=tmp_path, keep_views=True, progress=False
    )
    assert not res.errors
    assert {r["level"] for r in res.rows} >= {"none", "L1", "L2"}, "the runs must exercise compression"
    measure = make_measure("char-class")
    index = IdentifierIndex()
    by_label = {t.name: t for t in transcripts}
    checked = 0
    for label in by_label:
        calls = [r for r in res.rows if r["transcript"] == label]
        messages = by_label[label].messages
        previous = None
        for row in calls:
            view = res.views[(label, "ars", row["call_index"])]
            parts = view_parts(view, measure)
            assert [row[f"view_{p}_tokens"] for p in parts] == list(parts.values())
            assert row["view_tokens"] == sum(parts.values())
            assert row["cache_reusable_tokens"] == cache_reusable_tokens(previous, view, measure)
            answer = messages[row["message_index"]]
            assert isinstance(answer, AIMessage)
            earlier = [m for m in messages[: row["message_index"]] if not isinstance(m, SystemMessage)]
            expected = retention(answer, earlier, view.messages, index=index)
            assert _same(row["retention"], expected), (label, row["call_index"])
            previous = view
            checked += 1
    assert checked == len(res.rows) > 50


@pytest.mark.parametrize(
    ("strategy", "level"), [("ars", "L2"), ("masking", "L1"), ("hybrid", "L1"), ("ars-fast", "L2")]
)
def test_a_then_b_equals_b_alone(transcripts: list[Any], tmp_path: Path, strategy: str, level: str) -> None:
    # one middleware per strategy serves every transcript of a batch: its state must not carry over
    (b,) = [t for t in transcripts if "python-to-rust-port" in t.source]  # compresses (L2, offloads)
    (a,) = [t for t in transcripts if "katy" in t.source]
    both = replay_many([a, b], [strategy], settings=SMALL_T, out_dir=tmp_path / "both", progress=False)
    alone = replay_many([b], [strategy], settings=SMALL_T, out_dir=tmp_path / "alone", progress=False)
    assert not both.errors and not alone.errors
    rows_b = _rows(both, b.name)
    assert rows_b == _rows(alone)
    assert level in {r["level"] for r in rows_b}, "B must compress for the check to mean something"
    assert [o for o in both.offloads if o["transcript"] == b.name] == alone.offloads
    assert [s for s in both.summaries if s["transcript"] == b.name] == alone.summaries
    # each run's offloads were written to its own folder
    assert alone.offloads or strategy != "ars"
    for o in alone.offloads:
        assert o["bytes"] is not None and o["bytes"] > 0


class _WarmUpOnSelf:
    """A plugin that keeps a run's state on itself: it declines the first 3 L2 decisions it sees."""

    name = "warm-up-on-self"

    def __init__(self) -> None:
        self.decisions = 0

    @hookimpl(tryfirst=True)
    def ctxlab_should_summarize(self, view: list[Any], ctx: Any) -> SummarizeDecision | None:
        self.decisions += 1
        return SummarizeDecision(False, "warming up") if self.decisions <= 3 else None


class _WarmUpStrategies:
    name = "warm-up-strategies"

    def __init__(self, per_run: bool) -> None:
        self.per_run = per_run

    @hookimpl
    def ctxlab_register_strategies(self, register: Any) -> None:
        register("warm-up", lambda settings: [_WarmUpOnSelf()], "test", per_run=self.per_run)


@pytest.mark.parametrize("per_run", [True, False])
def test_a_then_b_of_a_strategy_keeping_state_on_its_plugin(
    transcripts: list[Any], tmp_path: Path, per_run: bool
) -> None:
    # a strategy registered with per_run=True gets a middleware per run; without it, its plugin's
    # state leaks from A into B (what the reuse contract forbids, and what this check detects)
    (b,) = [t for t in transcripts if "python-to-rust-port" in t.source]
    (a,) = [t for t in transcripts if "django" in t.source]
    pm = make_lab_manager([_WarmUpStrategies(per_run)], load_entrypoints=True)
    # T = 3 K tokens: A asks for more L2 decisions than the plugin declines (3), so its state
    # on self changes what B gets when the middleware is shared
    settings = CompressionSettings(summary_threshold=3, summary_tool_result_token_limit=500)
    kw: dict[str, Any] = {"settings": settings, "pm": pm, "progress": False}
    both = replay_many([a, b], ["warm-up"], out_dir=tmp_path / "both", **kw)
    alone = replay_many([b], ["warm-up"], out_dir=tmp_path / "alone", **kw)
    assert not both.errors and not alone.errors
    assert "L2" in {r["level"] for r in _rows(both, a.name)}, "A must reach L2 decisions"
    assert (_rows(both, b.name) == _rows(alone)) is per_run


@pytest.mark.parametrize(
    "text",
    [
        "see http://example.com/a/b.py and file:///etc/hosts:12 or C:/Users/x/app.py",
        "a:/abs/path x::/root/dir/file.txt ::abc_def ~/notes/todo.md ../up/one.py",
        "os.path.join(self.assertEqual) ValueError AError __init__ _private_name CamelCaseName",
        "numbers 1234 12.3456 v2.0.1 0x1F2E3D 2024-01-02 #56789 ١٢٣٤٥",
        "ﬁle.PY \u212aelvin.txt ſcript.ps1 naïve_name Ünïcode.Name",
        "tabs\tand\u00a0nbsp\u2003em-space\u3000ideographic/path/x.rs\nnew\x1cline.md",
        "trailing dots pkg.mod. end.py.. e.g. i.e. etc. x.y",
        "",
    ],
)
def test_word_scan_equals_whole_text_scan(text: str) -> None:
    assert extract_identifiers(text) == extract_identifiers_whole(text)
    memo: dict[str, tuple[str, ...]] = {}
    assert extract_identifiers(text, memo) == extract_identifiers_whole(text)
    assert extract_identifiers(text, memo) == extract_identifiers_whole(text)  # from the memo


def test_word_scan_equals_whole_text_scan_on_transcripts(transcripts: list[Any]) -> None:
    from ctxlab.replay.identifiers import message_search_text as _message_search_text

    memo: dict[str, tuple[str, ...]] = {}
    texts = [_message_search_text(m) for t in transcripts for m in t.messages]
    texts.append(" ".join(texts)[:450_000])  # longer than the scanned 400,000 characters
    found = 0
    for text in texts:
        expected = extract_identifiers_whole(text)
        assert extract_identifiers(text, memo) == expected
        found += len(expected)
    assert found > 1000


def test_earlier_identifiers_answer_as_the_whole_set(transcripts: list[Any]) -> None:
    # `ident in earlier` searches the earlier texts and scans only the messages holding it
    from ctxlab.replay.identifiers import EarlierIdentifiers

    for t in transcripts:
        messages = t.messages
        index = IdentifierIndex()
        every = set().union(*(index.present(m) for m in messages))
        # identifiers, and pieces of texts that are not identifiers (substrings of words)
        candidates = sorted(every) + sorted({w[:-1] for w in every if len(w) > 5}) + ["zzzz_not_there"]
        earlier = EarlierIdentifiers(IdentifierIndex())
        expected: set[str] = set()
        for i, m in enumerate(messages):
            if i % 7 == 3:  # ask between additions: the answers follow the growing history
                assert {c for c in candidates if c in earlier} == expected & set(candidates)
            earlier.add(m)
            if not isinstance(m, SystemMessage):
                expected |= index.present(m)
        assert {c for c in candidates if c in earlier} == expected & set(candidates)
        assert earlier.all() == expected
        assert any(c in expected for c in candidates) and any(c not in expected for c in candidates)


def test_earlier_identifiers_scan_only_the_words_holding_the_identifier() -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    from ctxlab.replay.identifiers import EarlierIdentifiers

    index = IdentifierIndex()
    earlier = EarlierIdentifiers(index)
    others = [
        ToolMessage(f"line {i} of plain words with some_name_{i} inside", tool_call_id="c") for i in range(50)
    ]
    target = HumanMessage("please open\tsrc/pkg/module.py now, then pkg/module.pyc")
    for m in [*others, target]:
        earlier.add(m)
    assert "pkg/module.py" in earlier  # a path suffix of src/pkg/module.py
    assert "some_name_7" in earlier
    assert "pkg/module" not in earlier  # a substring, not an identifier
    assert "open" not in earlier and "zzzz_none" not in earlier
    # only the words holding a searched text: src/pkg/module.py, some_name_7, pkg/module.pyc, open
    assert index.words_scanned == 4
    assert index.messages_scanned == 0, "no message was scanned whole"
    index.identifiers(target)
    assert index.messages_scanned == 1
    assert index.mentions(target, earlier) and not index.mentions(others[3], {"nothing_here"})


def test_earlier_identifiers_of_a_text_longer_than_the_scanned_part() -> None:
    # the head and tail of a long text are scanned, as for the message's own identifier set
    from langchain_core.messages import ToolMessage

    from ctxlab.replay.identifiers import EarlierIdentifiers

    filler = "word " * 50_000  # 250,000 characters
    long = ToolMessage(f"head_name {filler} middle_name {filler} tail_name", tool_call_id="c")
    index = IdentifierIndex()
    earlier = EarlierIdentifiers(index)
    earlier.add(long)
    assert "head_name" in earlier and "tail_name" in earlier
    assert "middle_name" not in earlier
    assert {"head_name", "tail_name"} <= index.present(long) and "middle_name" not in index.present(long)


def test_run_measure_reads_the_middleware_estimates_only_when_they_count_alike(
    transcripts: list[Any],
) -> None:
    # a run through a ctxlab middleware that estimates as the measure reads its estimates (never
    # writing them: the middleware's own work, hence overhead_ms, stays that of a live run)
    from ctxlab.replay import make_lab_manager
    from ctxlab.replay.building import build_middleware
    from ctxlab.replay.metrics import run_measure
    from ctxlab.replay.strategies import strategies

    pm = make_lab_manager(load_entrypoints=True)
    meter = make_measure("char-class")
    _, ars = build_middleware("ars", settings=CompressionSettings(), pm=pm)
    measure = run_measure(ars, "char-class", meter)
    assert measure is not meter, "ars estimates with the built-in char-class estimator"
    assert run_measure(ars, "tiktoken", meter) is meter
    _, foreign = build_middleware("langchain-summarization", settings=CompressionSettings(), pm=pm)
    assert run_measure(foreign, "char-class", meter) is meter
    # another estimator plugin registered beside the built-in one (ctxlab-fast-estimator, installed
    # by `make setup`): required, so that this check cannot drop out
    assert "ars-fast" in strategies(pm), "the ctxlab-fast-estimator plugin is not installed (make setup)"
    _, fast = build_middleware("ars-fast", settings=CompressionSettings(), pm=pm)
    assert run_measure(fast, "char-class", meter) is meter

    own = ars.estimates  # type: ignore[attr-defined]
    messages = [m for t in transcripts for m in t.messages]
    seen = messages[::2]  # the middleware estimated these
    for m in seen:
        own.message_tokens(m)
    before = (own.hits, own.misses)
    order = list(own._by_object._data)  # the middleware's LRU order: what it evicts next
    assert [measure.message_tokens(m) for m in messages] == [meter.message_tokens(m) for m in messages]
    assert (own.hits, own.misses) == before, "the middleware's cache was used as the measure's"
    assert list(own._by_object._data) == order, "the measure's reads reordered the middleware's LRU"
    own.message_tokens(messages[1])
    assert own.misses == before[1] + 1, "the measure wrote into the middleware's cache"
    tools = [t.tools for t in transcripts if t.tools]
    assert [measure.tools_tokens(x) for x in tools] == [meter.tools_tokens(x) for x in tools]


def _answered(messages: list[Any], upto: int) -> set[tuple[str | None, str]]:
    """The ``(AIMessage id, call id)`` pairs answered before message ``upto``, as the observer keeps them."""
    issuer: dict[str, str | None] = {}
    out: set[tuple[str | None, str]] = set()
    for m in messages[:upto]:
        if isinstance(m, AIMessage):
            issuer.update({tc["id"]: m.id for tc in m.tool_calls if tc.get("id")})
        elif isinstance(m, ToolMessage):
            out.add((issuer.get(m.tool_call_id), m.tool_call_id))
    return out


def test_pairs_followed_call_by_call_equal_the_rescan(transcripts: list[Any], tmp_path: Path) -> None:
    res = replay_many(
        transcripts, ["ars", "masking"], settings=SMALL_T, out_dir=tmp_path, keep_views=True, progress=False
    )
    assert not res.errors
    by_label = {t.name: t for t in transcripts}
    for label, t in by_label.items():
        for strategy in ("ars", "masking"):
            pairs = PairsTracker()
            rows = [r for r in res.rows if r["transcript"] == label and r["strategy"] == strategy]
            for row in rows:
                view = res.views[(label, strategy, row["call_index"])].messages
                answered = _answered(t.messages, row["message_index"])
                expected = unmatched_tool_pairs(view, answered)
                assert pairs.count(view, answered) == expected == row["unmatched_tool_pairs"]


def test_pairs_tracker_on_rewritten_views_with_reused_ids_and_orphans() -> None:
    def call(i: str, *cids: str) -> AIMessage:
        return AIMessage("", id=i, tool_calls=[{"name": "t", "args": {}, "id": c} for c in cids])

    a1, a2, a3 = call("a1", "c1", "c2"), call("a2", "c1"), call("a3", "c3", "c3")
    r1, r2, r1b, r3 = (
        ToolMessage("x", tool_call_id=c, id=f"r-{c}-{n}") for n, c in enumerate(["c1", "c2", "c1", "c3"])
    )
    orphan = ToolMessage("y", tool_call_id="zz", id="o")
    views = [
        [a1],
        [a1, r1, r2],
        [a1, r1, r2, a2],  # c1 reused: the new call is open
        [a1, r1, r2, a2, r1b, orphan],  # grows: answered, and an orphan
        [a1, a2, r1b],  # rewritten: a1's results dropped (missing once answered)
        [a1, a2, r1b, a3],  # grows: a duplicate call id in one message
        [a2, r1b, a3, r3, orphan],  # rewritten again
        [a2, r1b, a3, r3, orphan, r2],  # grows with a result whose call left the view
    ]
    answered_now: set[tuple[str | None, str]] = {("a1", "c1"), ("a1", "c2"), ("a2", "c1"), ("a3", "c3"), "zz"}  # type: ignore[arg-type]
    pairs = PairsTracker()
    counts = []
    for view in views:
        got, expected = pairs.count(view, answered_now), unmatched_tool_pairs(view, answered_now)
        assert got == expected
        counts.append(got)
    assert max(counts) >= 2 and 0 in counts  # the cases are not all trivial
