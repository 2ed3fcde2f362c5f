"""Property tests of CompressionMiddleware over generated histories and many rounds.

Histories mix user and assistant text (English and CJK), parallel tool calls, the results of
several AIMessages interleaved, out-of-order results, dead calls (never answered), error results,
messages with and without ids, tool-call ids reused across turns (``read_file:0`` in every
response, results right after their call: a result answers the nearest earlier call of its id),
tool calls as LangChain v1 content blocks (``output_version="v1"``), ``write_file``/``edit_file``
arguments as long strings, lists of strings and nested edit lists.  The summarizer sometimes
replies without text (only a reasoning block, only a tool call, an empty string): such a round is
a failed summary (R10).  Each example runs several rounds with tiny thresholds, appends
messages between rounds and applies every ``Command`` update the way LangGraph does
(``_summarization_event`` by assignment, ``messages`` through ``add_messages``).  In EVERY view:

* tool pairing is intact (R9);
* the view is ``[summary, *state[cutoff:]]`` modulo L1 edits (R11), the system message is not in it;
* ``cutoff_index`` never decreases, and keeps ``summary_keep_messages`` (R9, R11);
* every state message is in the view or before the cutoff, where the history files hold it and the
  current summary still carries its fact (R10) — unless the round that summarized it failed: then
  the summary records the error and keeps the earlier facts, never the reasoning text;
* L1 never changes the state messages (R6);
* L1 never grows a message: each view message is estimated at most as its effective message (R6);
* every path a view names exists in the file scope of that view's thread (R6, R17), also when one
  middleware serves several threads through one backend object, when files vanish between rounds,
  and when ``summary_tool_result_token_limit`` shrinks from round to round.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.marks import OFFLOAD_MARKER

EST = CharClassEstimator()

#: raise for a deeper search: ``MW_HYPOTHESIS_EXAMPLES=1000 pytest tests/test_middleware_properties.py``
EXAMPLES = int(os.environ.get("MW_HYPOTHESIS_EXAMPLES", "60"))
PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- history generation -------------------------------------------------------------------------

size = st.integers(min_value=10, max_value=1400)
text_block = st.tuples(
    st.sampled_from(["human", "ai"]), size, st.booleans(), st.booleans()
)  # kind, size, cjk, id
tool_block = st.tuples(
    st.just("tools"),
    st.lists(
        st.integers(min_value=1, max_value=4), min_size=1, max_size=2
    ),  # calls per AIMessage (interleaved)
    st.randoms(use_true_random=False),
    st.lists(st.integers(min_value=10, max_value=3000), min_size=8, max_size=8),  # result sizes
    st.floats(min_value=0, max_value=0.3),  # share of dead calls
    st.floats(min_value=0, max_value=0.3),  # share of error results
    st.booleans(),  # ids
    st.booleans(),  # call ids reused across turns (per-response counters: read_file:0)
    st.booleans(),  # the AIMessages carry their calls as v1 content blocks
)
block = st.one_of(text_block, text_block, tool_block)


class Builder:
    """Turns block specs into messages; every message carries a unique ``FACT-Kn`` marker."""

    def __init__(self, kit):
        self.kit = kit
        self.n = 0

    def marker(self):
        self.n += 1
        return f"FACT-K{self.n}"

    def body(self, n, cjk, marker):
        return f"{marker} " + (self.kit.cjk(n) if cjk else self.kit.fill(n, seed=self.n))

    def build(self, blocks):
        out = []
        for b in blocks:
            if b[0] in ("human", "ai"):
                kind, n, cjk, with_id = b
                m = self.marker()
                cls = HumanMessage if kind == "human" else AIMessage
                out.append(cls(self.body(n, cjk, m), id=f"id-{m}" if with_id else None))
                continue
            self.tool_block(out, *b[1:])
        return out

    def tool_block(self, out, per_ai, rnd, sizes, dead_share, err_share, with_id, reuse, v1):
        """One or more AIMessages with parallel calls; their results follow out of order, some
        before the next AIMessage (interleaved), some never (dead calls), some with error status.
        ``reuse``: call ids are ``<tool>:<j>`` (``j`` counts within the AIMessage), the same every
        turn, and each AIMessage's results come before the next AIMessage (as providers send
        them: a reused id answers the nearest earlier call)."""
        pending = []  # (call id, tool name) not yet answered
        sizes_iter = iter(sizes * 4)

        def answer(k):
            rnd.shuffle(pending)  # out of order
            for _ in range(k):
                if not pending:
                    return
                cid, name = pending.pop()
                if rnd.random() < dead_share:
                    continue  # a dead call: never answered
                m = self.marker()
                body = self.body(next(sizes_iter), rnd.random() < 0.3, m)
                content = [{"type": "text", "text": body}] if rnd.random() < 0.2 else body
                status = "error" if rnd.random() < err_share else "success"
                copies = 2 if rnd.random() < 0.05 else 1  # rarely: two results for one call
                for c in range(copies):
                    out.append(
                        ToolMessage(
                            content,
                            tool_call_id=cid,
                            name=name,
                            status=status,
                            id=f"id-{m}-{c}" if with_id else None,
                        )
                    )

        for k in per_ai:
            m = self.marker()
            tcs = []
            for j in range(k):
                name = rnd.choice(["read_file", "grep", "bash", "write_file", "edit_file", "工具"])
                cid = f"{name}:{j}" if reuse else f"call-{self.marker()}"
                args = {"q": cid}
                if name == "write_file":
                    args = {
                        "file_path": "/w.txt",
                        "content": rnd.choice(["W" * 10, "W" * 2500, ["P" * 1500] * rnd.randint(1, 3)]),
                    }
                elif name == "edit_file":
                    edits = [{"old_string": "O" * 900, "new_string": "N" * 900}] * rnd.randint(1, 2)
                    args = {"file_path": "/w.txt", "edits": edits}
                tcs.append({"name": name, "args": args, "id": cid, "type": "tool_call"})
                pending.append((cid, name))
            mid = f"id-{m}" if with_id else None
            if v1:  # LangChain v1 content blocks: the calls are in the content and in tool_calls
                blocks = [{"type": "text", "text": m}]
                blocks += [
                    {"type": "tool_call", "id": t["id"], "name": t["name"], "args": t["args"]} for t in tcs
                ]
                out.append(AIMessage(content_blocks=blocks, id=mid))
            else:
                out.append(AIMessage(m, tool_calls=tcs, id=mid))
            # some results before the next AIMessage (interleaved); all of them with reused ids
            answer(len(pending) if reuse else rnd.randint(0, len(pending)))
        answer(len(pending))


def marker_of(m):
    text = m.content if isinstance(m.content, str) else "".join(b.get("text", "") for b in m.content)
    return text.split(" ", 1)[0] if text.startswith("FACT-K") else None


settings_st = st.builds(
    CompressionSettings,
    summary_threshold=st.sampled_from([0.25, 0.5, 1.0]),
    summary_keep_messages=st.integers(min_value=0, max_value=5),
    summary_tool_result_token_limit=st.sampled_from([30, 40, 50, 60, 150]),
    summary_l2_trigger_ratio=st.sampled_from([0.2, 0.4, 0.8]),
)


# --- the properties -------------------------------------------------------------------------------


#: summarizer replies: mostly a summary, sometimes one without text (R10: a failed summary)
replies_st = st.lists(
    st.sampled_from(["echo", "echo", "echo", "empty", "reasoning_only", "tool_call_only"]),
    min_size=1,
    max_size=4,
)


def check_files_and_sizes(scope, view, state, event, files):
    """R6, R17: every path the view names is in ``files`` (the thread's file scope); L1 never grew
    a message (the view is [summary, *state[cutoff:]] modulo L1 edits: compare them pairwise)."""
    for p in scope.named_paths(view):
        assert p in files, f"the view names {p}, which does not exist in the thread's file scope"
    tail = state[event["cutoff_index"] :] if event else state
    for v, m in zip(view[1:] if event else view, tail, strict=True):
        assert EST.message_tokens(v) <= EST.message_tokens(m), f"L1 grew {m.type} {m.id}"


def check_round(kit, d, rec, prev_cutoff, keep, files_root, failed_facts, scope=None):
    assert rec["exc"] is None, repr(rec["exc"])
    # R6: the state messages passed in are never changed (deep compare)
    assert rec["state_dump_after"] == rec["state_dump_before"]
    state = rec["state_before"]
    event = rec["event_after"]
    assert rec["calls"], "the model was not called"
    files = kit.files(files_root)
    for call in rec["calls"]:
        view = call["messages"]
        # R9: tool pairing intact
        assert kit.pairing_problems(view, state) == []
        # R11: the view is [summary, *state[cutoff:]] modulo L1 edits
        assert kit.view_matches(view, state, event) is None, kit.view_matches(view, state, event)
        assert not any(isinstance(m, SystemMessage) for m in view)
        assert not any("SYSTEM-PROP" in kit.text(m) for m in view)
        if scope is not None:
            check_files_and_sizes(scope, view, state, event, files)
    cutoff = event["cutoff_index"] if event else 0
    # R11: cutoff_index never decreases
    assert cutoff >= prev_cutoff
    if rec["update"] is not None:
        # R9: at least summary_keep_messages kept after a new cutoff
        assert len(state) - cutoff >= keep
        assert not isinstance(state[cutoff] if cutoff < len(state) else None, ToolMessage)
        summary = event["summary_message"].content
        # R10: a reply without text is a failed summary: the error is recorded, never the reasoning
        assert "PRIVATE-REASONING" not in summary
        assert (
            summary.strip()
            and event["summary_message"].additional_kwargs.get("ctxlab_summary_body") is not None
        )
        if event["summary_error"]:
            failed_facts.update(mk for m in state[prev_cutoff:cutoff] if (mk := marker_of(m)))
    if cutoff:
        # R10: everything before the cutoff is in a history file; text facts survive in the summary
        hist = "\n".join(
            v for k, v in kit.files(files_root).items() if k.startswith("outputs/conversation_history/")
        )
        summary = event["summary_message"].content
        for m in state[:cutoff]:
            mk = marker_of(m)
            if mk is None:
                continue
            fact = re.compile(rf"{mk}(?!\d)")
            assert fact.search(hist), f"{mk} is neither in the view nor in a history file"
            if not isinstance(m, ToolMessage) and mk not in failed_facts:
                assert fact.search(summary), f"{mk} was lost from the summary"
    return cutoff


@PROPS
@given(
    initial=st.lists(block, min_size=3, max_size=20),
    appends=st.lists(st.lists(block, min_size=0, max_size=6), min_size=2, max_size=5),
    cfg=settings_st,
    mode=st.sampled_from(["sync", "async"]),
    reducer=st.sampled_from(["add_messages", "concat"]),
    replies=replies_st,
)
def test_every_view_is_consistent_over_many_rounds(
    mw_kit, mw_scope, initial, appends, cfg, mode, reducer, replies
):
    # spec: R6, R9, R10, R11, R17 — check_round checks them after every round (module docstring)
    b = Builder(mw_kit)
    failed_facts: set[str] = set()
    with tempfile.TemporaryDirectory() as root:
        mw = CompressionMiddleware(
            settings=cfg, backend=mw_kit.backend(root), summarizer=mw_kit.FakeSummarizer(sequence=replies)
        )
        d = mw_kit.Driver(
            mw,
            b.build(initial),
            mode=mode,
            reducer=reducer,
            system=SystemMessage("SYSTEM-PROP you are terse"),
        )
        cutoff = 0
        for r in range(len(appends) + 1):
            if r:
                d.append(*b.build(appends[r - 1]))
            rec = d.round()
            cutoff = check_round(
                mw_kit, d, rec, cutoff, cfg.summary_keep_messages, root, failed_facts, mw_scope
            )


@PROPS
@given(
    initial=st.lists(block, min_size=3, max_size=14),
    appends=st.lists(st.lists(block, min_size=0, max_size=4), min_size=2, max_size=4),
    cfg=settings_st,
    mode=st.sampled_from(["sync", "async"]),
    vanish=st.lists(st.sampled_from(["none", "a", "b", "both"]), min_size=5, max_size=5),
)
def test_threads_sharing_one_middleware_see_only_files_of_their_scope(
    mw_kit, mw_scope, initial, appends, cfg, mode, vanish
):
    # spec: R6, R17 — one middleware and one backend object serve two threads (the backend's file
    # scope is the thread, like DeepAgents' StateBackend); the two histories are equal, so their
    # offload files have the same paths; files of a thread vanish between some rounds
    with tempfile.TemporaryDirectory() as root:
        backend = mw_scope.ThreadScopedBackend(root)
        mw = CompressionMiddleware(settings=cfg, backend=backend, summarizer=mw_kit.FakeSummarizer())
        drivers, cutoffs, builders = {}, {}, {}
        for tid in ("a", "b"):
            builders[tid] = Builder(mw_kit)
            drivers[tid] = mw_kit.Driver(mw, builders[tid].build(initial), mode=mode, thread_id=tid)
            cutoffs[tid] = 0
        for r in range(len(appends) + 1):
            for tid in ("a", "b"):
                if vanish[r] in (tid, "both"):
                    for f in (Path(root) / tid / "outputs" / "large_tool_results").glob("*"):
                        f.unlink()
                d = drivers[tid]
                if r:
                    d.append(*builders[tid].build(appends[r - 1]))
                rec = d.round()
                cutoffs[tid] = check_round(
                    mw_kit, d, rec, cutoffs[tid], cfg.summary_keep_messages, Path(root) / tid, set(), mw_scope
                )


@PROPS
@given(
    initial=st.lists(block, min_size=4, max_size=16),
    appends=st.lists(st.lists(block, min_size=0, max_size=4), min_size=3, max_size=4),
    limits=st.lists(st.sampled_from([300, 150, 100, 60, 50, 40, 30, 20]), min_size=4, max_size=5),
    mode=st.sampled_from(["sync", "async"]),
)
def test_shrinking_tool_result_limit_never_grows_a_message(mw_kit, mw_scope, initial, appends, limits, mode):
    # spec: R6 — an administrator lowers summary_tool_result_token_limit between rounds (a new
    # middleware with the smaller limit, the same checkpoint and backend): the replacement of a
    # tool result fits the limit, or below the path floor is the path alone, or the result stays
    # whole; no message ever grows
    b = Builder(mw_kit)
    limits = sorted(limits, reverse=True)
    with tempfile.TemporaryDirectory() as root:
        backend = mw_kit.backend(root)
        base = CompressionSettings(
            summary_threshold=0.5, summary_keep_messages=2, summary_l2_trigger_ratio=0.8
        )
        d = mw_kit.Driver(None, b.build(initial), mode=mode)
        cutoff = 0
        for r, limit in enumerate(limits[: len(appends) + 1]):
            settings = base.replace(summary_tool_result_token_limit=limit)
            d.mw = CompressionMiddleware(
                settings=settings, backend=backend, summarizer=mw_kit.FakeSummarizer()
            )
            if r:
                d.append(*b.build(appends[r - 1]))
            rec = d.round()
            cutoff = check_round(
                mw_kit, d, rec, cutoff, settings.summary_keep_messages, root, set(), mw_scope
            )
            for call in rec["calls"]:
                for m in call["messages"]:
                    if isinstance(m, ToolMessage) and m.additional_kwargs.get("ctxlab_offloaded"):
                        # within the limit, or (below the path floor, issue 24) the path alone
                        path = m.additional_kwargs["ctxlab_offloaded"]["path"]
                        path_only = mw_kit.text(m) == f"{OFFLOAD_MARKER} Full output saved at {path}"
                        assert EST.message_tokens(m) <= limit or path_only


@PROPS
@given(
    initial=st.lists(block, min_size=4, max_size=20),
    appends=st.lists(st.lists(block, min_size=0, max_size=5), min_size=1, max_size=3),
    cfg=settings_st,
    mode=st.sampled_from(["sync", "async"]),
    capacity=st.integers(min_value=300, max_value=3000),
    limit_chars=st.integers(min_value=1500, max_value=12000),
)
def test_overflow_rounds_keep_views_consistent(
    mw_kit, mw_scope, initial, appends, cfg, mode, capacity, limit_chars
):
    # spec: R12 — with a model that overflows above a size, a round either succeeds after at most
    # one retry, or propagates ContextOverflowError with a failed event; every view (also the
    # rejected ones) keeps tool pairing; a successful round's checkpoint matches what the model saw
    b = Builder(mw_kit)

    def too_big(n, view, system):
        return sum(len(mw_kit.text(m)) for m in view) > limit_chars

    with tempfile.TemporaryDirectory() as root:
        mw = CompressionMiddleware(
            settings=cfg, backend=mw_kit.backend(root), summarizer=mw_kit.FakeSummarizer()
        )
        d = mw_kit.Driver(mw, b.build(initial), mode=mode, max_input_tokens=capacity)
        cutoff = 0
        for r in range(len(appends) + 1):
            if r:
                d.append(*b.build(appends[r - 1]))
            rec = d.round(overflow=too_big)
            assert rec["state_dump_after"] == rec["state_dump_before"]
            assert 1 <= len(rec["calls"]) <= 2
            files = mw_kit.files(root)
            for call in rec["calls"]:
                assert mw_kit.pairing_problems(call["messages"], rec["state_before"]) == []
                # R6, R17: also a view the model rejected names only files that exist
                assert all(p in files for p in mw_scope.named_paths(call["messages"]))
            evs = mw_kit.ctx_events(rec)
            if rec["exc"] is not None:
                assert isinstance(rec["exc"], ContextOverflowError)
                assert evs and evs[-1]["phase"] == "failed"
                assert d.event == rec["event_before"]
                break
            assert rec["calls"][-1]["raised"] is None
            assert not evs or evs[-1]["phase"] == "completed"
            event = d.event
            cut = event["cutoff_index"] if event else 0
            assert cut >= cutoff
            cutoff = cut
            # the checkpoint (state after the update, response excluded) matches the view sent
            view = rec["calls"][-1]["messages"]
            state_after = d.state["messages"][: len(rec["state_before"])]
            # nothing deleted (add_messages gives id-less messages an id: compare modulo ids)
            assert len(d.state["messages"]) == len(rec["state_before"]) + 1
            assert all(mw_kit.same(a, b) for a, b in zip(state_after, rec["state_before"], strict=True))
            assert mw_kit.view_matches(view, state_after, event) is None
            if rec["update"] and "messages" in rec["update"]:
                by_id = {m.id: m for m in view}
                for m in rec["update"]["messages"]:
                    assert m.content == by_id[m.id].content
