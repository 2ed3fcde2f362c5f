"""Issue 9, part A: the kinds of L2 failure that outside tests found, each through both drivers
(``wrap_model_call`` and ``awrap_model_call``) with a real ``ModelRequest`` (``mw_kit.Driver``).

1. tool-call ids reused across turns: a result pairs with the nearest earlier call of its id;
2. the L2 decision follows the seed (``ctxlab_should_summarize``; the re-summarize guard);
3. a stored cutoff past the end of the state keeps the summary;
4. T is not floored;
5. a summarizer reply without text is a failed summary;
6. a summary bigger than the span it replaces is not committed;
7. the history file is the recoverable original;
18. a late tool result never becomes an orphan in a view;
19. summarizer sizing: its own window, the previous summary folded, the committed summary bounded.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings, hookimpl
from ctxlab.core.cutoff import SummarizeDecision
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.marks import is_observation, summary_kwargs
from ctxlab.core.messages import tool_pair_spans, valid_cut_positions

MODES = ["sync", "async"]
EST = CharClassEstimator()
#: T = 1024 tokens, T2 = 409.6 tokens, keep 4
SETTINGS = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=4,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.4,
)


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def make_mw(kit, root, *, settings=SETTINGS, summarizer=None, **kw):
    summarizer = summarizer if summarizer is not None else kit.FakeSummarizer()
    return (
        CompressionMiddleware(settings=settings, backend=kit.backend(root), summarizer=summarizer, **kw),
        summarizer,
    )


def conversation(kit, n=12, chars=600, prefix="M"):
    """``n`` alternating user/assistant messages with a ``FACT-<prefix><i>`` marker each."""
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            kit.fill(chars, f"FACT-{prefix}{i}", seed=i), id=f"{prefix.lower()}{i}"
        )
        for i in range(n)
    ]


def completed(kit, rec):
    evs = [e for e in kit.ctx_events(rec) if e["phase"] == "completed"]
    assert evs, kit.ctx_events(rec)
    return evs[-1]


# ------------------------------------------------------------------------------------------------
# 1. tool-call ids reused across turns
# ------------------------------------------------------------------------------------------------


def reused_id_turns(kit, turns=6, result_chars=600):
    """``turns`` user turns, each one call ``read_file:0`` (a per-response counter, as Kimi and
    some proxies emit) answered right after it."""
    msgs = [HumanMessage("FACT-TASK read the six configs one by one.", id="h0")]
    for t in range(1, turns + 1):
        msgs += [
            AIMessage(
                f"Reading config {t}.",
                id=f"a{t}",
                tool_calls=[{"name": "read_file", "args": {"path": f"svc{t}.yaml"}, "id": "read_file:0"}],
            ),
            ToolMessage(
                kit.fill(result_chars, f"FACT-SVC{t}", seed=t),
                tool_call_id="read_file:0",
                name="read_file",
                id=f"t{t}",
            ),
            AIMessage(kit.fill(120, f"Config {t} checked.", seed=10 + t), id=f"r{t}"),
            HumanMessage(f"Next one please ({t} of {turns} done).", id=f"h{t}"),
        ]
    return msgs


def test_tool_pair_spans_pair_a_result_with_the_nearest_earlier_call(mw_kit):
    # spec: R9 — with reused ids each result closes the nearest earlier call of its id, so the
    # cuts between turns stay valid (id-based pairing made one span from the first call to the
    # last result)
    msgs = reused_id_turns(mw_kit, turns=3)
    assert sorted(tool_pair_spans(msgs)) == [(1, 2), (5, 6), (9, 10)]
    ok = valid_cut_positions(msgs)
    assert [c for c in range(len(msgs) + 1) if ok[c]] == [0, 1, 3, 4, 5, 7, 8, 9, 11, 12, 13]


def test_reused_tool_call_ids_leave_valid_cutoffs(mw_kit, tmp_path, mode):
    # spec: R9 — six turns reuse the id read_file:0: L2 summarizes most of them, keeps 4, and no
    # view holds a result without its call
    msgs = reused_id_turns(mw_kit)
    settings = SETTINGS.replace(summary_threshold=0.5)
    mw, _summ = make_mw(mw_kit, tmp_path, settings=settings)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None, rec["exc"]
    event = rec["update"]["_summarization_event"]
    assert event["cutoff_index"] >= 13 and len(msgs) - event["cutoff_index"] >= 4
    assert "FACT-SVC1" in event["summary_message"].content
    for call in rec["calls"]:
        assert mw_kit.pairing_problems(call["messages"], rec["state_before"]) == []
    # and again, on the next turns: the cutoff keeps moving
    for t in range(7, 10):
        d.append(
            AIMessage(
                f"Reading config {t}.",
                id=f"a{t}",
                tool_calls=[{"name": "read_file", "args": {}, "id": "read_file:0"}],
            ),
            ToolMessage(
                mw_kit.fill(600, f"FACT-SVC{t}", seed=t),
                tool_call_id="read_file:0",
                name="read_file",
                id=f"t{t}",
            ),
            HumanMessage("next", id=f"h{t}"),
        )
        rec = d.round()
        assert rec["exc"] is None
        for call in rec["calls"]:
            assert mw_kit.pairing_problems(call["messages"], rec["state_before"]) == []
    assert d.event["cutoff_index"] > event["cutoff_index"]


# ------------------------------------------------------------------------------------------------
# 2. the L2 decision
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overhead", ["system", "tools"])
def test_first_summary_is_not_blocked_when_the_excess_is_fixed_overhead(mw_kit, tmp_path, mode, overhead):
    # spec: R8 — the L1 estimate strictly above T2 enters L2 (seed: 严格超过该门槛), even when the
    # excess over T2 comes mostly from a long system prompt or many tool schemas
    from langchain_core.tools import StructuredTool

    system, tools = None, []
    if overhead == "system":
        system = SystemMessage(mw_kit.fill(40000, "SYSTEM-LONG", seed=5))
    else:
        tools = [
            StructuredTool.from_function(
                lambda q: q, name=f"tool_{i}", description=mw_kit.fill(700, f"tool {i}", seed=i)
            )
            for i in range(60)
        ]
    settings = SETTINGS.replace(summary_threshold=2)  # T = 2048, T2 = 819.2
    mw, summ = make_mw(mw_kit, tmp_path, settings=settings)
    msgs = conversation(mw_kit, n=10, chars=300)
    d = mw_kit.Driver(mw, msgs, mode=mode, system=system, tools=tools)
    rec = d.round()
    done = completed(mw_kit, rec)
    fixed = done["tokens_before"] - sum(EST.message_tokens(m) for m in msgs)
    assert fixed > 10 * (sum(EST.message_tokens(m) for m in msgs[:6]))  # the excess is overhead
    assert done["level"] == "L2" and rec["update"] is not None
    assert len(summ.calls) == 1
    assert done["stats"]["l2_decision"].startswith("ars:")


class Decide:
    """A decision plugin: answers ``ctxlab_should_summarize`` with ``answer`` (``None`` defers)."""

    name = "decide"

    def __init__(self, answer):
        self.answer = answer
        self.seen = []

    @hookimpl(tryfirst=True)
    def ctxlab_should_summarize(self, view, ctx):
        self.seen.append((len(view), ctx.tokens, ctx.l2_threshold_tokens, ctx.forced))
        return self.answer


def test_should_summarize_hook_decides_l2(mw_kit, tmp_path, mode):
    # spec: R7, R8 — the decision is the firstresult hook ctxlab_should_summarize; the ARS rule is
    # its trylast built-in, so a plugin can keep an L1 view above T2 or summarize below it
    msgs = conversation(mw_kit)
    no = Decide(SummarizeDecision(False, "plugin: not now"))
    mw, summ = make_mw(mw_kit, tmp_path, plugins=[no])
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    done = completed(mw_kit, rec)
    assert done["level"] == "L1" and rec["update"] is None and summ.calls == []
    assert done["stats"]["l2_decision"] == "plugin: not now"
    (n, tokens, t2, forced) = no.seen[0]
    assert n == len(msgs) and tokens == done["stats"]["tokens_l1"] > t2 and forced is False

    # at most T2 after L1 (a large tool result offloaded): a plugin may still summarize
    settings = SETTINGS.replace(summary_l2_trigger_ratio=1.0, summary_tool_result_token_limit=100)
    small = [
        HumanMessage(mw_kit.fill(300, "FACT-TASK", seed=1), id="h0"),
        AIMessage("", id="a0", tool_calls=[{"name": "read_log", "args": {}, "id": "c0"}]),
        ToolMessage(mw_kit.fill(8000, "FACT-LOG", seed=2), tool_call_id="c0", name="read_log", id="t0"),
        *conversation(mw_kit, n=5, chars=300),
    ]
    yes = Decide(SummarizeDecision(True, "plugin: summarize"))
    mw, summ = make_mw(mw_kit, tmp_path / "yes", settings=settings, plugins=[yes])
    rec = mw_kit.Driver(mw, small, mode=mode).round()
    done = completed(mw_kit, rec)
    assert done["tokens_before"] >= settings.entry_threshold_tokens
    assert done["stats"]["tokens_l1"] <= settings.l2_threshold_tokens
    assert done["level"] == "L2" and rec["update"] is not None and len(summ.calls) == 1

    # a plugin that defers leaves the decision to the ARS rule
    defer = Decide(None)
    mw, summ = make_mw(mw_kit, tmp_path / "defer", plugins=[defer])
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert completed(mw_kit, rec)["level"] == "L2" and defer.seen


def test_resummarize_guard_is_explicit(mw_kit, tmp_path, mode):
    # spec: R8 — deviation: after a summary, a fixed overhead above T2 (a long system prompt)
    # would summarize one new message per call; the built-in guard declines until the messages
    # added since hold a tenth of the excess.  It is its own plugin: unregistered, the seed rule
    # summarizes again at once.
    system = SystemMessage(mw_kit.fill(40000, "SYSTEM-LONG", seed=5))
    settings = SETTINGS.replace(summary_threshold=2)
    for guarded in (True, False):
        mw, summ = make_mw(mw_kit, tmp_path / str(guarded), settings=settings)
        if not guarded:
            mw.plugin_manager.unregister(name="ctxlab.builtin.resummarize-guard")
        d = mw_kit.Driver(mw, conversation(mw_kit, n=10, chars=300), mode=mode, system=system)
        assert d.round()["update"] is not None and len(summ.calls) == 1
        d.append(HumanMessage(mw_kit.fill(300, "FACT-NEXT", seed=9), id="next"))
        rec = d.round()
        done = completed(mw_kit, rec)
        if guarded:
            assert rec["update"] is None and len(summ.calls) == 1 and done["level"] == "L1"
            assert done["stats"]["l2_decision"].startswith("resummarize-guard:")
        else:
            assert rec["update"] is not None and len(summ.calls) == 2


# ------------------------------------------------------------------------------------------------
# 3. a stored cutoff past the end of the state
# ------------------------------------------------------------------------------------------------


def test_cutoff_past_the_end_keeps_the_summary(mw_kit, tmp_path, mode):
    # spec: R11 — another component removed messages: the summary stays and nothing it covers is
    # sent again.  An event without an anchor clamps the cutoff to the end of the state.
    summary = HumanMessage(
        "SUMMARY-OLD FACT-OLD the early work", id="ctxlab-summary-30-x", additional_kwargs=summary_kwargs("x")
    )
    msgs = conversation(mw_kit, n=8, chars=700)
    mw, _summ = make_mw(mw_kit, tmp_path, settings=SETTINGS.replace(summary_threshold=0.25))
    d = mw_kit.Driver(mw, msgs, mode=mode)
    d.state["_summarization_event"] = {"cutoff_index": 30, "summary_message": summary, "file_path": None}
    rec = d.round()
    assert rec["exc"] is None, rec["exc"]
    view = rec["calls"][-1]["messages"]
    assert view[0].content.startswith("SUMMARY-OLD") and len(view) == 1
    assert not any("FACT-M0" in mw_kit.text(m) for m in view)


def test_removed_messages_reanchor_the_cutoff(mw_kit, tmp_path, mode):
    # spec: R11 — an event ctxlab wrote names the last summarized message: after another
    # component removed the oldest messages, the kept part is found again by that id
    mw, _summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode)
    first = d.round()["update"]["_summarization_event"]
    cut = first["cutoff_index"]
    assert first["last_summarized_id"] == d.state["messages"][cut - 1].id
    kept_ids = [m.id for m in d.state["messages"][cut:]]
    d.state["messages"] = d.state["messages"][cut - 2 :]  # the oldest messages removed
    d.append(HumanMessage("FACT-NEW what next?", id="new"))
    rec = d.round()
    view = rec["calls"][-1]["messages"]
    assert view[0].id == first["summary_message"].id
    assert [m.id for m in view[1:]][: len(kept_ids)] == kept_ids  # what follows is the kept part
    assert view[-1].id == "new"


# ------------------------------------------------------------------------------------------------
# 4. T is not floored
# ------------------------------------------------------------------------------------------------


class LengthCost:
    """An estimator plugin: a message costs its number of characters; tools nothing."""

    name = "length-cost"

    @hookimpl(tryfirst=True)
    def ctxlab_estimate_message(self, message):
        return len(mw_text_of(message))

    @hookimpl(tryfirst=True)
    def ctxlab_estimate_tools(self, tools):
        return 0


def mw_text_of(m):
    return m.content if isinstance(m.content, str) else str(m.content)


@pytest.mark.parametrize(("chars", "starts"), [(307, False), (308, True)])
def test_entry_threshold_is_not_floored(mw_kit, tmp_path, mode, chars, starts):
    # spec: R3, R4 — summary_threshold 0.3 means T = 307.2 tokens: 307 is below T, 308 reaches it
    settings = SETTINGS.replace(summary_threshold=0.3)
    assert settings.entry_threshold_tokens == pytest.approx(307.2)
    mw, _ = make_mw(mw_kit, tmp_path, settings=settings, plugins=[LengthCost()])
    rec = mw_kit.Driver(mw, [HumanMessage("x" * chars, id="h")], mode=mode).round()
    evs = mw_kit.ctx_events(rec)
    assert bool(evs) is starts
    if starts:
        assert evs[0]["threshold"] == pytest.approx(307.2)


# ------------------------------------------------------------------------------------------------
# 5. a summarizer reply without text
# ------------------------------------------------------------------------------------------------


class EmptyText:
    """A summarizer object whose summary is an empty string without an error."""

    name = "empty-text"

    def summarize(self, job):
        from ctxlab.core.summarize import SummaryResult

        return SummaryResult(text="  \n", calls=1)

    async def asummarize(self, job):
        return self.summarize(job)


@pytest.mark.parametrize("reply", ["empty", "reasoning_only", "tool_call_only", "summarizer_object"])
def test_summarizer_reply_without_text_is_a_failed_summary(mw_kit, tmp_path, mode, reply):
    # spec: R10 — a reply with no text is handled like a summarizer exception: the previous
    # summary's body is kept, the error is recorded in the event; never an empty summary
    summ = mw_kit.FakeSummarizer()
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=summ)
    d = mw_kit.Driver(mw, conversation(mw_kit, prefix="A"), mode=mode)
    first = d.round()["update"]["_summarization_event"]
    assert "FACT-A3" in first["summary_message"].content and first["summary_error"] is None
    if reply == "summarizer_object":
        d.mw, _ = make_mw(mw_kit, tmp_path, summarizer=EmptyText())
    else:
        summ.mode = reply
    d.append(*conversation(mw_kit, prefix="B"))
    rec = d.round()
    assert rec["exc"] is None
    event = rec["update"]["_summarization_event"]
    text = event["summary_message"].content
    assert event["summary_error"] and "no text" in event["summary_error"]
    assert "FACT-A3" in text  # the previous summary's body is kept
    assert "PRIVATE-REASONING" not in text
    assert event["summary_message"].additional_kwargs["ctxlab_summary_body"].strip()
    done = completed(mw_kit, rec)
    assert done["level"] == "L2" and "no text" in done["error"]


# ------------------------------------------------------------------------------------------------
# 6. a summary bigger than what it replaces
# ------------------------------------------------------------------------------------------------


def test_summary_bigger_than_its_span_is_not_committed(mw_kit, tmp_path, mode):
    # spec: R8, R10 — deviation: a summary that makes the request bigger than the span it
    # replaces is not committed; the L1 view is sent and the event says why
    summ = mw_kit.FakeSummarizer(mode="verbose", output_chars=12000)
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=summ)
    msgs = conversation(mw_kit, n=12, chars=500)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None and rec["update"] is None
    assert len(summ.calls) == 1
    assert [m.id for m in rec["calls"][-1]["messages"]] == [m.id for m in msgs]  # the L1 view
    done = completed(mw_kit, rec)
    assert done["level"] == "L1" and "bigger" in done["stats"]["summary_rejected"]
    assert done["stats"]["summarizer"]["calls"] == 1  # the spent call is accounted for


def test_span_smaller_than_a_summary_is_not_summarized(mw_kit, tmp_path, mode):
    # spec: R8, R9 — deviation: a cutoff whose span is smaller than an empty summary message
    # (header, history path) cannot shrink the request: no summarizer call, the L1 view is sent
    msgs = [
        HumanMessage("FACT-H0 hi", id="h0"),
        AIMessage("FACT-A0 hello", id="a0"),
        HumanMessage(mw_kit.fill(4000, "FACT-H1", 1), id="h1"),
        AIMessage(mw_kit.fill(4000, "FACT-A1", 2), id="a1"),
    ]
    mw, summ = make_mw(mw_kit, tmp_path, settings=SETTINGS.replace(summary_keep_messages=2))
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["update"] is None and summ.calls == []
    done = completed(mw_kit, rec)
    assert done["level"] == "L1" and "smaller than" in done["stats"]["summary_rejected"]


# ------------------------------------------------------------------------------------------------
# 7. the history file is the recoverable original
# ------------------------------------------------------------------------------------------------


def test_history_file_is_the_recoverable_original(mw_kit, tmp_path, mode):
    # spec: R10 — seed: 可恢复原文以…历史文件为准 — arguments uncapped, image URLs and whitespace kept
    code = "\n".join(f"    def method_{i}(self):\n        return {i}  # trailing   " for i in range(120))
    spaced = "  FACT-SPACED leading spaces\n\n\n  three blank lines above\ttab\n  "
    http_url = "https://example.org/screens/shot-1.png"
    data_url = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    msgs = [
        HumanMessage(spaced, id="h0"),
        AIMessage(
            "writing",
            id="a0",
            tool_calls=[
                {"name": "write_file", "args": {"file_path": "/src/big.py", "content": code}, "id": "w1"}
            ],
        ),
        ToolMessage("ok", tool_call_id="w1", name="write_file", id="t0"),
        HumanMessage(
            [
                {"type": "text", "text": "FACT-SHOT look at these"},
                {"type": "image_url", "image_url": {"url": http_url}},
                {"type": "image_url", "image_url": {"url": data_url}},
            ],
            id="h1",
        ),
        *conversation(mw_kit, n=8, chars=700),
    ]
    assert len(code) > 3000
    mw, _summ = make_mw(mw_kit, tmp_path)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    event = rec["update"]["_summarization_event"]
    assert event["cutoff_index"] >= 4
    history = mw_kit.files(tmp_path)[event["file_path"].lstrip("/")]
    assert code in history  # the whole argument, whitespace and all
    assert spaced in history
    assert http_url in history and data_url in history


# ------------------------------------------------------------------------------------------------
# 18. a result that arrives after its call was summarized
# ------------------------------------------------------------------------------------------------


def test_late_result_is_never_an_orphan_in_a_view(mw_kit, tmp_path, mode):
    # spec: R9 — a call still unanswered at the cutoff does not block it; when its result arrives
    # later, the call is behind the cutoff: the view carries the result as an observation, never
    # as a ToolMessage without its call (providers reject those)
    msgs = [
        HumanMessage(mw_kit.fill(700, "FACT-TASK", 1), id="h0"),
        AIMessage(
            "starting the long job",
            id="a0",
            tool_calls=[{"name": "long_job", "args": {}, "id": "job-1"}],
        ),
        *conversation(mw_kit, n=10, chars=700),
    ]
    mw, _summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    first = d.round()["update"]["_summarization_event"]
    assert first["cutoff_index"] >= 2  # the unanswered call is summarized
    d.append(
        ToolMessage(
            "FACT-LATE the long job finished: 42 files", tool_call_id="job-1", name="long_job", id="late"
        ),
        HumanMessage("what did the job report?", id="q"),
    )
    rec = d.round()
    assert rec["exc"] is None
    for call in rec["calls"]:
        view = call["messages"]
        assert mw_kit.pairing_problems(view, rec["state_before"]) == []
        late = [m for m in view if m.id == "late"]
        assert len(late) == 1 and is_observation(late[0]) and not isinstance(late[0], ToolMessage)
        assert "FACT-LATE" in mw_kit.text(late[0]) and "long_job" in mw_kit.text(late[0])
        assert "the call itself is in the summarized part" in mw_kit.text(late[0])


def orphan_history(kit, chars):
    """A user turn, a call ``a`` never answered, a result ``zz`` no message issued (s40 trial
    item 5: the agent's own broken history, nothing to do with a summary), a closing answer."""
    return [
        HumanMessage(kit.fill(chars, "FACT-TASK", 1), id="h0"),
        AIMessage("", id="a0", tool_calls=[{"name": "f", "args": {}, "id": "a"}]),
        ToolMessage("FACT-ORPHAN r", tool_call_id="zz", name="f", id="t0"),
        AIMessage("done", id="a1"),
        HumanMessage("and now?", id="h1"),
    ]


def test_below_t_an_orphan_of_the_agents_own_history_is_sent_as_it_is(mw_kit, tmp_path, mode):
    # spec: R3 — below T the effective messages go as they are: no rewrite of a result whose call
    # is in no message (the old code sent it as a human "observation" saying its call was in the
    # summarized part, although nothing was summarized); a provider treats the request as it
    # would treat it without ctxlab
    msgs = orphan_history(mw_kit, 200)
    mw, summ = make_mw(mw_kit, tmp_path)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None and rec["update"] is None and not summ.calls
    (call,) = rec["calls"]
    assert call["messages"] == msgs
    assert isinstance(call["messages"][2], ToolMessage) and call["messages"][2].tool_call_id == "zz"


def test_above_t_an_orphan_whose_call_is_nowhere_says_so(mw_kit, tmp_path, mode):
    # spec: R9 — above T the view ctxlab builds has no orphan; the text it carries says truly
    # where the call is: not in the request (nothing was summarized), not "in the summarized part"
    msgs = orphan_history(mw_kit, 5000)
    settings = CompressionSettings(summary_threshold=1, summary_keep_messages=8, summary_l2_trigger_ratio=1.0)
    mw, summ = make_mw(mw_kit, tmp_path, settings=settings)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None and completed(mw_kit, rec)["level"] == "L1" and not summ.calls
    (call,) = rec["calls"]
    (obs,) = [m for m in call["messages"] if m.id == "t0"]
    assert is_observation(obs) and not isinstance(obs, ToolMessage)
    text = mw_kit.text(obs)
    assert "(id zz) whose call is not in this request" in text and "FACT-ORPHAN" in text
    assert "summarized" not in text


def test_late_result_inside_another_pair_moves_after_it(mw_kit):
    # spec: R9 — converted in place it would split a later call from its results: it goes after them
    from ctxlab.core.messages import sendable_view

    view = [
        HumanMessage("summary"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "x", "args": {}, "id": "c1"}, {"name": "y", "args": {}, "id": "c2"}],
        ),
        ToolMessage("r1", tool_call_id="c1", id="t1"),
        ToolMessage("late", tool_call_id="gone", name="job", id="late"),
        ToolMessage("r2", tool_call_id="c2", id="t2"),
        HumanMessage("next", id="h"),
    ]
    out = sendable_view(view)
    assert [m.id for m in out] == [None, "a1", "t1", "t2", "late", "h"]
    assert is_observation(out[4]) and mw_kit.pairing_problems(out, view) == []
    assert sendable_view(out) == out


# ------------------------------------------------------------------------------------------------
# 19. summarizer sizing
# ------------------------------------------------------------------------------------------------


def test_summarizer_without_profile_is_not_sized_by_the_main_window(mw_kit, tmp_path, mode):
    # spec: R10 — the main model's window sizes the agent's own model only; a separate summarizer
    # without a profile gets the default context, not the (small) main window
    main = mw_kit.ScriptedModel(profile={"max_input_tokens": 3000})
    summ = mw_kit.FakeSummarizer()
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=summ)
    msgs = conversation(mw_kit, n=14, chars=900)
    rec = mw_kit.Driver(mw, msgs, mode=mode, model=main).round()
    assert rec["update"] is not None
    assert len(summ.calls) == 1  # one input: not folded into windows of the main model
    # the agent's own model (summarizer=None) is still sized by its window
    own = mw_kit.FakeSummarizer(profile={"max_input_tokens": 2000})
    mw2 = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path / "own"))
    mw_kit.Driver(mw2, msgs, mode=mode, model=own).round()
    assert len(own.calls) > 1


def test_previous_summary_is_folded_not_cut(mw_kit, tmp_path, mode):
    # spec: R10 — facts of earlier rounds survive: a previous summary larger than one summarizer
    # input is split over several inputs, never cut in the middle
    facts = [f"FACT-P{i}" for i in range(60)]
    body = "\n".join(f"{f} " + mw_kit.fill(500, seed=i) for i, f in enumerate(facts))
    previous = HumanMessage(body, id="ctxlab-summary-3-abc", additional_kwargs=summary_kwargs(body))
    summ = mw_kit.FakeSummarizer(profile={"max_input_tokens": 6000})
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=summ)
    msgs = conversation(mw_kit, n=3, chars=100, prefix="X") + conversation(mw_kit, n=12, chars=700)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    d.state["_summarization_event"] = {"cutoff_index": 3, "summary_message": previous, "file_path": None}
    rec = d.round()
    event = rec["update"]["_summarization_event"]
    seen = "\n".join(c["input"] for c in summ.calls)
    assert len(summ.calls) > 1
    assert all(f in seen for f in facts)  # every fact reached the summarizer
    assert all(f in event["summary_message"].content for f in facts)
    assert "characters omitted" not in seen


def test_committed_summary_is_bounded(mw_kit, tmp_path, mode):
    # spec: R10 — a summarizer reply far larger than its budget is bounded before it is
    # committed, so later rounds do not overflow because of it
    main = mw_kit.ScriptedModel(profile={"max_input_tokens": 8000})
    summ = mw_kit.FakeSummarizer(mode="verbose", output_chars=200_000, profile={"max_input_tokens": 8000})
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=summ, settings=SETTINGS.replace(summary_threshold=4))
    msgs = conversation(mw_kit, n=30, chars=1500)
    rec = mw_kit.Driver(mw, msgs, mode=mode, model=main).round()
    event = rec["update"]["_summarization_event"]
    summary_tokens = EST.message_tokens(event["summary_message"])
    assert summary_tokens <= 0.25 * 8000 * 0.7 + 200
    assert "FACT-M0" in event["summary_message"].content  # the head is kept
    done = completed(mw_kit, rec)
    assert done["stats"]["summary_cut"]["from_tokens"] > 40_000
