"""The incremental caches give the from-scratch answer (issue 12: per-call cost while compressing).

Each property drives one cache over a sequence of histories that grow, are rewritten in the
middle (a message replaced by id), lose messages (``RemoveMessage``), are reloaded (every message
a new object with the same content: a checkpoint round trip) or start over, and compares every
answer with the answer of a cache that never saw anything before:

* :func:`ctxlab.core.messages.sendable_view` (the orphan scan it remembers per view prefix);
* :meth:`ctxlab.core.estimation.EstimateCache.messages_tokens` (the running sums of a prefix and
  the per-message / per-content estimates);
* the L1 trimmers' memoized copies (:mod:`ctxlab.core.builtin.trimmers`): a view trimmed with
  the memo equals a view trimmed by fresh trimmers.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import add_messages

from ctxlab.core.builtin.trimmers import ArgumentTruncation, ToolResultOffload
from ctxlab.core.estimation import CharClassEstimator, EstimateCache
from ctxlab.core.identity import is_prefix
from ctxlab.core.l1 import TrimContext
from ctxlab.core.messages import SCAN_SLOTS, ScanMemory, sendable_view
from ctxlab.core.settings import CompressionSettings

# one step of a history's life: grow by k messages, replace the message at a position, remove
# the message at a position, reload (new objects, same content), or drop the first messages
# (a view after a cutoff)
_STEP = st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 6)),
    st.tuples(st.just("replace"), st.integers(0, 10_000)),
    st.tuples(st.just("remove"), st.integers(0, 10_000)),
    st.tuples(st.just("reload"), st.integers(-3, 10_000)),
    st.tuples(st.just("drop_call"), st.integers(0, 10_000)),
    st.tuples(st.just("cut"), st.integers(1, 8)),
)


class _Source:
    """Deterministic messages: AIMessages with 0-2 tool calls (some ``write_file`` with a long
    argument), their results (some long, some answering a call id that is behind a cut or was
    never issued), user turns."""

    def __init__(self, seed: int) -> None:
        self.k = seed * 1000
        self.open: list[str] = []

    def next(self, draw: Any) -> BaseMessage:
        self.k += 1
        k = self.k
        kind = draw(st.sampled_from(["ai", "tool", "tool", "human", "orphan"]))
        if kind == "ai":
            calls = []
            for j in range(draw(st.integers(0, 2))):
                cid = f"c{k}-{j}"
                name = draw(st.sampled_from(["bash", "write_file"]))
                args = (
                    {"content": "x = 1\n" * draw(st.sampled_from([3, 500]))} if name == "write_file" else {}
                )
                calls.append({"name": name, "args": args, "id": cid, "type": "tool_call"})
                self.open.append(cid)
            return AIMessage(content=f"step {k}", tool_calls=calls, id=f"m{k}")
        if kind == "tool" and self.open:
            cid = self.open.pop(draw(st.integers(0, len(self.open) - 1)))
            size = draw(st.sampled_from([1, 40, 400]))
            return ToolMessage(content=f"line {k} ok\n" * size, tool_call_id=cid, name="bash", id=f"m{k}")
        if kind == "orphan":
            return ToolMessage(content="late", tool_call_id=f"never-{k}", name="bash", id=f"m{k}")
        return HumanMessage(content=f"user turn {k}", id=f"m{k}")


def _life(draw: Any) -> list[list[BaseMessage]]:
    """The successive histories of one run (lists of message objects)."""
    source = _Source(draw(st.integers(0, 50)))
    history: list[BaseMessage] = []
    out = []
    for op, n in draw(st.lists(_STEP, min_size=1, max_size=25)):
        if op == "grow" or not history:
            history = list(add_messages(history, [source.next(draw) for _ in range(max(1, n))]))
        elif op == "replace":
            old = history[n % len(history)]
            new = old.model_copy(update={"content": f"{old.content} (edited)"})
            history = list(add_messages(history, [new]))
        elif op == "remove":
            history = list(add_messages(history, [RemoveMessage(id=str(history[n % len(history)].id))]))
        elif op == "drop_call":
            # remove an AIMessage whose result stays (that result becomes an orphan), then grow:
            # the new history is longer than the old one and shares both its ends
            answered = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
            callers = [
                m
                for m in history[:-1]
                if isinstance(m, AIMessage) and answered & {c["id"] for c in m.tool_calls}
            ]
            if callers:
                gone = callers[n % len(callers)]
                history = list(add_messages(history, [RemoveMessage(id=str(gone.id))]))
            history = list(add_messages(history, [source.next(draw) for _ in range(2)]))
        elif op == "reload":
            # new objects, same content; with n >= 0 one of them edited (same id) as well
            history = copy.deepcopy(history)
            if n >= 0:
                i = n % len(history)
                old = history[i]
                history[i] = old.model_copy(update={"content": f"{old.content} (reloaded, edited)"})
        else:
            history = history[min(n, len(history) - 1) :]
        out.append(history)
    return out


@st.composite
def lives(draw: Any) -> list[list[BaseMessage]]:
    return _life(draw)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives())
def test_sendable_view_equals_a_scan_from_scratch(histories: list[list[BaseMessage]]) -> None:
    memory = ScanMemory()
    for view in histories:
        got = sendable_view(view, memory)
        fresh = sendable_view(list(view))  # no memory: a whole scan
        assert got == fresh
        assert sendable_view(list(view), ScanMemory()) == fresh  # an empty memory
        assert (got is view) == (fresh == view)  # no orphan: the view itself
        assert len(memory) <= SCAN_SLOTS


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives(), lives(), st.lists(st.booleans(), min_size=50, max_size=50))
def test_interleaved_scan_memories_give_the_views_of_each_alone(
    first: list[list[BaseMessage]], second: list[list[BaseMessage]], order: list[bool]
) -> None:
    # two middlewares (two memories) and two threads of one middleware (one shared memory) serve
    # two histories in an interleaved order: every view is the one a memory serving it alone
    # gives (and that a whole scan gives); no memory sees the other middleware's views
    shared, mine, theirs, alone_a, alone_b = (ScanMemory() for _ in range(5))
    expected_a = [sendable_view(v, alone_a) for v in first]
    expected_b = [sendable_view(v, alone_b) for v in second]
    assert expected_a == [sendable_view(list(v)) for v in first]
    a, b = iter(zip(first, expected_a, strict=True)), iter(zip(second, expected_b, strict=True))
    pending = [*order, *([True] * len(first)), *([False] * len(second))]
    for pick_a in pending:
        step = next(a if pick_a else b, None)
        if step is None:
            continue
        view, want = step
        assert sendable_view(view, shared) == want  # two threads, one middleware
        assert sendable_view(view, mine if pick_a else theirs) == want  # two middlewares
    assert all(len(m) <= SCAN_SLOTS for m in (shared, mine, theirs))


def test_a_scan_memory_resumes_a_grown_view_and_goes_with_its_owner() -> None:
    import gc
    import weakref

    call = AIMessage("", tool_calls=[{"name": "bash", "args": {}, "id": "c1", "type": "tool_call"}], id="a")
    history: list[BaseMessage] = [
        HumanMessage("go", id="h"),
        call,
        ToolMessage("ok", tool_call_id="c1", id="t"),
    ]
    memory = ScanMemory(slots=2)
    assert sendable_view(history, memory) is history and len(memory) == 1
    grown = [*history, ToolMessage("late", tool_call_id="c1", id="t2")]
    # the remembered issuer set answers for the old part: c1 was issued, the result is no orphan
    assert sendable_view(grown, memory) is grown
    reloaded = copy.deepcopy(grown)  # new objects, same content: found by content
    assert sendable_view(reloaded, memory) is reloaded
    assert len(memory) == 1  # each view replaced the one it extended
    probe = weakref.ref(history[0])
    del memory
    history.clear()
    grown.clear()
    gc.collect()
    assert probe() is None, "the scan memory outlived its owner"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives())
def test_estimate_cache_equals_a_fresh_cache(histories: list[list[BaseMessage]]) -> None:
    estimator = CharClassEstimator()
    cache = EstimateCache(estimator.message_tokens, estimator.tools_tokens)
    for history in histories:
        expected = sum(estimator.message_tokens(m) for m in history)
        assert cache.messages_tokens(history) == expected
        assert cache.messages_tokens(history[: len(history) // 2]) == sum(
            estimator.message_tokens(m) for m in history[: len(history) // 2]
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives(), st.integers(0, 10_000))
def test_head_tokens_equal_the_sum_of_the_head(histories: list[list[BaseMessage]], at: int) -> None:
    """An L2 round's span (``head_tokens``, issue 31) is the sum of its messages' estimates, read
    from the list the round just totalled, from another remembered one, or summed afresh."""
    estimator = CharClassEstimator()
    cache = EstimateCache(estimator.message_tokens, estimator.tools_tokens)
    for history in histories:
        k = at % (len(history) + 1)
        expected = sum(estimator.message_tokens(m) for m in history[:k])
        assert cache.head_tokens(history, k) == expected  # before the list is totalled
        cache.messages_tokens(history)
        assert cache.head_tokens(history, k) == expected
        assert cache.head_tokens(tuple(history), k) == expected


def _trim(
    trimmers: tuple[ArgumentTruncation, ToolResultOffload],
    view: list[BaseMessage],
    files: dict[str, str],
    epoch: Any = None,
) -> tuple[list[BaseMessage], list[Any]]:
    estimator = CharClassEstimator()

    def save(tool: str | None, text: str) -> str:
        path = f"/outputs/large_tool_results/{tool}-{abs(hash(text))}.txt"
        files[path] = text
        return path

    ctx = TrimContext(
        settings=CompressionSettings(),
        estimate=estimator.message_tokens,
        save_tool_result=save,
        token_limit=60,
        file_exists=lambda p: p in files,
        files_epoch=epoch,
        file_owned=(lambda p: p in files) if epoch is not None else None,
    )
    out = list(view)
    reports = [t.ctxlab_l1_trim(out, ctx) for t in trimmers]
    return out, [(r.trimmer, r.offloaded, r.truncated_args, r.errors) for r in reports]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives())
def test_memoized_trims_equal_fresh_trims(histories: list[list[BaseMessage]]) -> None:
    kept = (ArgumentTruncation(), ToolResultOffload())
    files: dict[str, str] = {}
    previous: list[BaseMessage] = []
    previous_source: list[BaseMessage] = []
    for history in histories:
        got, got_reports = _trim(kept, history, files)
        fresh, fresh_reports = _trim((ArgumentTruncation(), ToolResultOffload()), history, files)
        assert got == fresh
        assert got_reports == fresh_reports
        # a trimmed message that was trimmed before is the same copy (the estimate cache's
        # prefix reuse depends on it)
        if previous and is_prefix(previous_source, history):
            assert is_prefix(previous, got)
        previous, previous_source = got, list(history)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives(), st.lists(st.booleans(), min_size=30, max_size=30))
def test_trims_trusted_within_a_files_epoch_equal_fresh_trims(
    histories: list[list[BaseMessage]], vanish: list[bool]
) -> None:
    # spec: R5, R6 — issue 31: while the files a middleware wrote are unchanged (one files
    # epoch), the trimmers take over the copies of their last pass and visit only new messages;
    # a vanished file starts a new epoch. Every view and report equals fresh trimmers' (which
    # check every file), and no copy names a file that is not there.
    kept = (ArgumentTruncation(), ToolResultOffload())
    files: dict[str, str] = {}
    epoch = 0
    named: set[str] = set()
    for history, gone in zip(histories, vanish, strict=False):
        if gone and named:
            files.pop(sorted(named)[0], None)  # a file the last view named vanished behind its back
            epoch += 1
        got, got_reports = _trim(kept, history, files, epoch=epoch)
        named = {r["path"] for _, offloaded, _, _ in got_reports for r in offloaded if r["path"]}
        assert named <= set(files), "a copy names a file that vanished"
        fresh, fresh_reports = _trim((ArgumentTruncation(), ToolResultOffload()), history, files)
        assert got == fresh
        assert got_reports == fresh_reports


# --- forgetting messages behind the cutoff (ctxlab_forget, EstimateCache.forget; spec R9/R11) ----


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives(), st.integers(min_value=0, max_value=40))
def test_estimate_cache_after_forgetting_equals_a_fresh_cache(
    histories: list[list[BaseMessage]], cut: int
) -> None:
    # spec: R9 R11 — entries of messages behind the cutoff are dropped; a forgotten message that
    # comes back (an older checkpoint resumed) is estimated again, never wrongly
    estimator = CharClassEstimator()
    cache = EstimateCache(estimator.message_tokens, estimator.tools_tokens)
    for history in histories:
        assert cache.messages_tokens(history) == sum(estimator.message_tokens(m) for m in history)
        cache.forget(history[:cut])
        assert cache.messages_tokens(history[cut:]) == sum(estimator.message_tokens(m) for m in history[cut:])
        assert cache.messages_tokens(history) == sum(estimator.message_tokens(m) for m in history)


def test_estimate_cache_forget_drops_the_entries_and_remembered_lists() -> None:
    estimator = CharClassEstimator()
    cache = EstimateCache(estimator.message_tokens, estimator.tools_tokens)
    history: list[BaseMessage] = [HumanMessage(f"message {i}", id=f"h{i}") for i in range(10)]
    cache.messages_tokens(history)
    assert len(cache._by_object) == 10 and len(cache._by_content) == 10
    cache.forget(history[:6])
    assert len(cache._by_object) == 4 and len(cache._by_content) == 4
    assert cache._prefixes == []  # the remembered list started with a forgotten message
    misses = cache.misses
    assert cache.messages_tokens(history) == sum(estimator.message_tokens(m) for m in history)
    assert cache.misses == misses + 6  # only the forgotten ones are estimated again


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lives(), st.integers(min_value=0, max_value=40))
def test_trims_after_forgetting_equal_fresh_trims(histories: list[list[BaseMessage]], cut: int) -> None:
    # spec: R9 R11 — the trimmers' memos forget messages behind the cutoff; needed again, the
    # same copies come out as from fresh trimmers
    kept = (ArgumentTruncation(), ToolResultOffload())
    files: dict[str, str] = {}
    limit_settings = CompressionSettings(summary_tool_result_token_limit=60)  # _trim's token_limit
    for history in histories:
        got, _ = _trim(kept, history, files)
        for t in kept:
            t.ctxlab_forget([*history[:cut], *got[:cut]], limit_settings)
        remembered = sum(
            1 for t in kept for m in history[:cut] if t._memo.get(m, 60 if t is kept[1] else None)
        )
        assert remembered == 0
        again, again_reports = _trim(kept, history, files)
        fresh, fresh_reports = _trim((ArgumentTruncation(), ToolResultOffload()), history, files)
        assert again == fresh
        assert again_reports == fresh_reports


def test_trim_progress_resumes_only_a_view_that_extends_the_remembered_one() -> None:
    from ctxlab.core.l1 import TrimProgress

    a, b, c = HumanMessage("a", id="a"), HumanMessage("b", id="b"), HumanMessage("c", id="c")
    progress = TrimProgress()
    assert progress.resume([a, b]) == (0, [])
    progress.remember([a, b], [1], key=60)
    assert progress.resume([a, b, c], key=60) == (2, [1])  # grew: visit 1 again, then c
    assert progress.resume([a, b, c], key=30) == (0, [])  # another token limit
    assert progress.resume([b, c], key=60) == (0, [])  # cut (R9/R11): a whole pass
    assert progress.resume([a], key=60) == (0, [])  # shorter: a whole pass
    progress.clear()
    assert progress.resume([a, b, c], key=60) == (0, [])
