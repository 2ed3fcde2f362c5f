"""The spec's own scenarios (ars-summary.md, "Scenarios every change is tested against") and the
per-requirement checks of CompressionMiddleware, each through both drivers: ``wrap_model_call``
(sync) and ``awrap_model_call`` (async).

Every test drives the middleware with a real ``ModelRequest`` (``mw_kit.Driver``), records the
view the model received, applies the returned ``Command`` update the way LangGraph's model node
does, and checks files in a real ``FilesystemBackend(virtual_mode=True)`` and the custom events.
"""

from __future__ import annotations

import asyncio
import logging
import re
import warnings

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.constants import TAG_NOSTREAM

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator, estimate_text_tokens
from ctxlab.core.hookspecs import hookimpl

MODES = ["sync", "async"]
EST = CharClassEstimator()
#: T = 1024 tokens, T2 = 409.6 tokens, tool results over 100 tokens are offloaded, keep 2
SMALL = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=2,
    summary_tool_result_token_limit=100,
    summary_l2_trigger_ratio=0.4,
)
T = SMALL.entry_threshold_tokens
T2 = SMALL.l2_threshold_tokens
LTR_RE = re.compile(r"/outputs/large_tool_results/([A-Za-z0-9_-]+)-([0-9a-f]{64})\.txt")
HIST_RE = re.compile(r"^/outputs/conversation_history/[^/]+$")


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def make_mw(kit, root, *, settings=SMALL, backend=None, summarizer="fake", **kw):
    if summarizer == "fake":
        summarizer = kit.FakeSummarizer()
    mw = CompressionMiddleware(
        settings=settings, backend=backend or kit.backend(root), summarizer=summarizer, **kw
    )
    return mw, summarizer


def conversation(kit, n=12, chars=600, prefix="M"):
    """``n`` alternating user/assistant messages with a ``FACT-<prefix><i>`` marker each."""
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            kit.fill(chars, f"FACT-{prefix}{i}", seed=i), id=f"{prefix.lower()}{i}"
        )
        for i in range(n)
    ]


def check_event_common(e):
    # spec: R14 — every event is a context_compression event with its phase and thresholds
    assert e["type"] == "context_compression"
    assert e["phase"] in ("started", "completed", "failed")
    assert e["threshold"] == T
    assert e["l2_threshold"] == pytest.approx(T2)


def all_view_text(rec):
    return "\n".join(
        [
            m.content if isinstance(m.content, str) else str(m.content)
            for c in rec["calls"]
            for m in c["messages"]
        ]
    )


# ------------------------------------------------------------------------------------------------
# below the entry threshold
# ------------------------------------------------------------------------------------------------


def test_below_threshold_calls_model_with_state_as_is(mw_kit, tmp_path, mode):
    # spec: R3 — below T: effective messages as they are, no L1, no event, no state update
    msgs = [
        HumanMessage("FACT-A hello", id="h0"),
        AIMessage("hi there", id="a0"),
        HumanMessage("next?", id="h1"),
    ]
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None
    assert len(rec["calls"]) == 1
    assert [mw_kit.dump(m) for m in rec["calls"][0]["messages"]] == rec["state_dump_before"]
    assert rec["events"] == []
    assert rec["update"] is None
    assert type(rec["result"]).__name__ == "ModelResponse"
    assert summ.calls == []
    assert mw_kit.files(tmp_path) == {}
    assert rec["state_dump_after"] == rec["state_dump_before"]


# ------------------------------------------------------------------------------------------------
# L1 only
# ------------------------------------------------------------------------------------------------


def l1_history(kit):
    log = kit.fill(8000, "LOG-START", seed=3)
    body = kit.fill(5000, "FILE-BODY", seed=4)
    msgs = [
        HumanMessage("FACT-TASK write the file and read the log", id="h0"),
        *kit.tool_pair(
            "c1",
            "write_file",
            "ok",
            args={"file_path": "/src/app.py", "content": body},
            ai_id="a1",
            tool_id="t1",
        ),
        *kit.tool_pair("c2", "read_log", log, args={"name": "build"}, ai_id="a2", tool_id="t2"),
        AIMessage("the build log is long", id="a3"),
        HumanMessage("go on", id="h1"),
    ]
    return msgs, log, body


def test_l1_only(mw_kit, tmp_path, mode):
    # spec: R4, R5, R6, R7
    msgs, log, body = l1_history(mw_kit)
    # the offload header (with its sha256 path) is ~85 of cl100k's tokens: a 120-token limit leaves
    # the preview room for the head of the result (100 left it within a few tokens of the header)
    settings = SMALL.replace(summary_tool_result_token_limit=120)
    mw, summ = make_mw(mw_kit, tmp_path, settings=settings)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None
    (call,) = rec["calls"]
    view = call["messages"]
    assert [m.id for m in view] == [m.id for m in msgs]

    # R5: the write_file argument is replaced by a marker stating the original length
    content_arg = view[1].tool_calls[0]["args"]["content"]
    assert "truncated" in content_arg and "5000" in content_arg
    assert view[1].tool_calls[0]["args"]["file_path"] == "/src/app.py"

    # R6: the tool result is offloaded to outputs/large_tool_results/<tool>-<sha256>.txt
    t2 = view[4]
    m = LTR_RE.search(t2.content)
    assert m, t2.content[:300]
    assert m.group(1) == "read_log" and m.group(2) == mw_kit.sha(log)
    assert len(t2.content) < len(log)
    assert (
        estimate_text_tokens(t2.content) <= settings.summary_tool_result_token_limit
    )  # preview fits the budget
    assert t2.content.count("LOG-START") == 1  # the preview shows the head of the result
    files = mw_kit.files(tmp_path)
    assert files == {f"outputs/large_tool_results/read_log-{mw_kit.sha(log)}.txt": log}

    # R7: no state change, no summary, completed without cutoff or file path
    assert rec["update"] is None and d.event is None
    assert summ.calls == []
    assert rec["state_dump_after"] == rec["state_dump_before"]
    assert d.state["messages"][1].tool_calls[0]["args"]["content"] == body  # R6: state keeps full text
    assert d.state["messages"][4].content == log
    evs = mw_kit.ctx_events(rec)
    assert [e["phase"] for e in evs] == ["started", "completed"]
    for e in evs:
        check_event_common(e)
    started, completed = evs
    est0 = sum(EST.message_tokens(x) for x in msgs)
    assert started["level"] is None and started["tokens_before"] == est0 >= T
    assert completed["level"] == "L1"
    assert completed["cutoff_index"] is None and completed["file_path"] is None
    assert completed["tokens_before"] == est0
    assert completed["tokens_after"] == sum(EST.message_tokens(x) for x in view) <= T2
    assert completed["error"] is None


# ------------------------------------------------------------------------------------------------
# entering L2
# ------------------------------------------------------------------------------------------------


def test_entering_l2(mw_kit, tmp_path, mode):
    # spec: R8, R9, R10, R11
    msgs = conversation(mw_kit)
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None
    (call,) = rec["calls"]
    view = call["messages"]

    ev = rec["update"]["_summarization_event"]
    assert set(rec["update"]) == {"_summarization_event"}
    cut = ev["cutoff_index"]
    assert cut == 10  # R9: the latest valid cut keeping summary_keep_messages=2
    assert len(msgs) - cut >= SMALL.summary_keep_messages
    summary = ev["summary_message"]
    assert isinstance(summary, HumanMessage)
    assert view[0].id == summary.id and view[0].content == summary.content
    assert [m.id for m in view[1:]] == ["m10", "m11"]
    # the summarizer's output with every summarized fact, and the history path
    assert "SUMMARY-1" in summary.content
    for i in range(10):
        assert f"FACT-M{i}" in summary.content
    assert "FACT-M10" not in summary.content
    assert HIST_RE.match(ev["file_path"]), ev["file_path"]
    assert ev["file_path"] in summary.content

    # R10: history file has the summarized messages in full, not the kept ones
    files = mw_kit.files(tmp_path)
    hist = files[ev["file_path"].lstrip("/")]
    for m in msgs[:10]:
        assert m.content in hist
    assert "FACT-M10" not in hist and "FACT-M11" not in hist
    (sc,) = summ.calls
    assert "FACT-M9" in sc["input"] and "FACT-M10" not in sc["input"]

    # R11: state update applied; no state message deleted
    assert [m.id for m in d.state["messages"][:12]] == [m.id for m in msgs]
    assert len(d.state["messages"]) == 13
    assert rec["state_dump_after"] == rec["state_dump_before"]

    evs = mw_kit.ctx_events(rec)
    assert [e["phase"] for e in evs] == ["started", "completed"]
    for e in evs:
        check_event_common(e)
    done = evs[1]
    assert done["level"] == "L2"
    assert done["cutoff_index"] == cut and done["file_path"] == ev["file_path"]
    assert done["tokens_before"] == sum(EST.message_tokens(x) for x in msgs) >= T
    assert done["tokens_after"] == sum(EST.message_tokens(x) for x in view) < done["tokens_before"]
    assert done["error"] is None and done["forced_by_overflow"] is False

    # R11: the next call rebuilds [summary, *state[cutoff:]] from the event (here below T)
    d.append(HumanMessage("and now?", id="h-next"))
    rec2 = d.round()
    view2 = rec2["calls"][0]["messages"]
    assert mw_kit.view_matches(view2, d.records[-1]["state_before"], d.event) is None
    assert [m.id for m in view2] == [summary.id, "m10", "m11", "mw-resp-1", "h-next"]
    assert rec2["events"] == [] and rec2["update"] is None


# ------------------------------------------------------------------------------------------------
# history write failure
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["error", "raise"])
def test_history_write_failure(mw_kit, tmp_path, mode, how, caplog):
    # spec: R10 — a failed history write logs an error and a warning; summarizing continues;
    # the event's file_path is None
    backend = mw_kit.failing_backend(tmp_path, "conversation_history", how)
    mw, summ = make_mw(mw_kit, tmp_path, backend=backend)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode)
    with caplog.at_level(logging.DEBUG), warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        rec = d.round()
    assert rec["exc"] is None
    assert any("conversation_history" in p for p in backend.writes)  # it was attempted
    ev = rec["update"]["_summarization_event"]
    assert ev["file_path"] is None
    assert ev["cutoff_index"] == 10
    assert len(summ.calls) == 1 and "SUMMARY-1" in ev["summary_message"].content
    assert "conversation_history" not in ev["summary_message"].content
    view = rec["calls"][0]["messages"]
    assert view[0].content == ev["summary_message"].content
    assert not any(k.startswith("outputs/conversation_history") for k in mw_kit.files(tmp_path))
    assert any(r.levelno >= logging.ERROR for r in caplog.records)
    assert any(r.levelno == logging.WARNING for r in caplog.records) or any(
        not issubclass(w.category, DeprecationWarning) for w in wl
    )
    done = mw_kit.ctx_events(rec)[-1]
    assert done["phase"] == "completed" and done["level"] == "L2" and done["file_path"] is None


# ------------------------------------------------------------------------------------------------
# summarizer exception
# ------------------------------------------------------------------------------------------------


def test_summarizer_exception(mw_kit, tmp_path, mode, caplog):
    # spec: R10 — the exception does not propagate; the summary carries the error text and the
    # event records the error
    mw, summ = make_mw(mw_kit, tmp_path, summarizer=mw_kit.FakeSummarizer(mode="raises"))
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode)
    with caplog.at_level(logging.ERROR):
        rec = d.round()
    assert rec["exc"] is None
    assert summ.calls, "the summarizer was not called"
    ev = rec["update"]["_summarization_event"]
    text = ev["summary_message"].content
    assert "429 Too Many Requests" in text
    assert ev.get("summary_error") and "429" in ev["summary_error"]
    view = rec["calls"][0]["messages"]
    assert view[0].content == text
    assert HIST_RE.match(ev["file_path"])  # the history write is independent of the summary
    done = mw_kit.ctx_events(rec)[-1]
    assert done["phase"] == "completed" and done["level"] == "L2"
    assert done["error"] and "429" in done["error"]
    assert any(r.levelno >= logging.ERROR for r in caplog.records)


# ------------------------------------------------------------------------------------------------
# overflow: tail trimming, second overflow
# ------------------------------------------------------------------------------------------------

TAIL_SETTINGS = CompressionSettings(
    summary_threshold=8,
    summary_keep_messages=10,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.4,
)


def parallel_chunks(kit):
    msgs = [
        HumanMessage(kit.fill(400, "FACT-TASK", 180), id="h0"),
        AIMessage(kit.fill(300, seed=181), id="a0"),
        HumanMessage("Read all eight chunks of the report and summarize them.", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[
                {"name": "read_chunk", "args": {"n": i}, "id": f"k{i}", "type": "tool_call"}
                for i in range(1, 9)
            ],
        ),
    ]
    msgs += [
        ToolMessage(
            kit.fill(800, f"chunk {i}:", 181 + i), tool_call_id=f"k{i}", name="read_chunk", id=f"t{i}"
        )
        for i in range(1, 9)
    ]
    return msgs


def chars(view):
    return sum(len(m.content) if isinstance(m.content, str) else len(str(m.content)) for m in view)


class ProviderContextOverflow(RuntimeError, ContextOverflowError):
    """Shaped like a provider's subclass (langchain-anthropic: BadRequestError + ContextOverflowError)."""


@pytest.mark.parametrize("exc_class", [ContextOverflowError, ProviderContextOverflow])
def test_overflow_tail_trimming(mw_kit, tmp_path, mode, exc_class):
    # spec: R12 — overflow (LangChain's error or a provider subclass) forces L1 + L2 + one retry;
    # the kept tail still exceeds the model's capacity, so it is trimmed further and the trim is
    # returned as a messages update by id
    msgs = parallel_chunks(mw_kit)
    originals = {m.id: m.content for m in msgs}
    mw, _ = make_mw(mw_kit, tmp_path, settings=TAIL_SETTINGS)
    d = mw_kit.Driver(mw, msgs, mode=mode, max_input_tokens=1000, overflow_exc=exc_class)
    rec = d.round(overflow=lambda n, view, system: chars(view) > 6500)
    assert rec["exc"] is None
    assert [c["raised"] for c in rec["calls"]] == ["overflow", None]  # exactly one retry
    # R14: a forced round that began below T emits started when L2 starts, completed after the retry
    assert rec["timeline"] == [
        ("call", "overflow"),
        ("event", "started"),
        ("call", "ok"),
        ("event", "completed"),
    ]
    first, retry = (c["messages"] for c in rec["calls"])
    assert [mw_kit.dump(m) for m in first] == rec["state_dump_before"]  # below T: sent as is
    assert chars(retry) < chars(first)
    upd = rec["update"]
    ev = upd["_summarization_event"]
    assert ev["cutoff_index"] == 2
    replaced = upd["messages"]
    assert replaced and {m.id for m in replaced} <= {f"t{i}" for i in range(1, 9)}
    by_id = {m.id: m for m in retry}
    files = mw_kit.files(tmp_path)
    for m in replaced:
        # the checkpoint gets exactly what the model saw, and the original stays readable
        assert m.content == by_id[m.id].content
        p = LTR_RE.search(m.content)
        assert p and files[p.group(0).lstrip("/")] == originals[m.id]
    # applied by id: same length, nothing deleted, the replaced ones now carry the marker
    state = d.state["messages"]
    assert [m.id for m in state[:12]] == [m.id for m in msgs]
    for m in state[:12]:
        if m.id in {r.id for r in replaced}:
            assert m.content == by_id[m.id].content
        else:
            assert m.content == originals[m.id]
    assert mw_kit.view_matches(retry, state[:12], d.event) is None
    evs = mw_kit.ctx_events(rec)
    assert [e["phase"] for e in evs] == ["started", "completed"]
    assert all(e["forced_by_overflow"] for e in evs)
    assert evs[1]["level"] == "L2" and evs[1]["cutoff_index"] == 2
    assert evs[1]["tokens_after"] <= 1000  # fits the model's max_input_tokens


@pytest.mark.parametrize("start", ["below_T", "above_T"])
def test_second_overflow_propagates(mw_kit, tmp_path, mode, start):
    # spec: R12 — if the retry overflows again, the error propagates and failed is emitted
    settings = SMALL if start == "above_T" else SMALL.replace(summary_threshold=4)
    mw, _ = make_mw(mw_kit, tmp_path, settings=settings)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode)
    rec = d.round(overflow=lambda n, view, system: True)
    assert isinstance(rec["exc"], ContextOverflowError)
    assert len(rec["calls"]) == 2  # the first call and exactly one retry
    retry = rec["calls"][1]["messages"]
    assert retry[0].additional_kwargs.get("lc_source") == "summarization"  # the retry was compressed
    evs = mw_kit.ctx_events(rec)
    phases = [e["phase"] for e in evs]
    assert phases[0] == "started" and phases[-1] == "failed" and "completed" not in phases
    failed = evs[-1]
    assert failed["level"] == "L2" and "prompt is too long" in failed["error"]
    assert failed["forced_by_overflow"] is True
    assert d.event is None  # nothing committed
    assert rec["state_dump_after"] == rec["state_dump_before"]


# ------------------------------------------------------------------------------------------------
# no valid cutoff
# ------------------------------------------------------------------------------------------------

NO_CUT = SMALL.replace(summary_keep_messages=10)


def test_no_valid_cutoff_sends_l1_view(mw_kit, tmp_path, mode):
    # spec: R13 — no valid cutoff (keep 10 of 5 messages): the L1 view is sent, no L2
    log = mw_kit.fill(6000, "LOG", seed=9)
    msgs = [
        HumanMessage(mw_kit.fill(1500, "FACT-A", 1), id="h0"),
        AIMessage(mw_kit.fill(1500, "FACT-B", 2), id="a0"),
        *mw_kit.tool_pair("c1", "read_log", log, ai_id="a1", tool_id="t1"),
        HumanMessage(mw_kit.fill(1500, "FACT-C", 3), id="h1"),
    ]
    mw, summ = make_mw(mw_kit, tmp_path, settings=NO_CUT)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None
    (call,) = rec["calls"]
    view = call["messages"]
    assert [m.id for m in view] == [m.id for m in msgs]
    assert LTR_RE.search(view[3].content)  # L1 applied
    assert rec["update"] is None and summ.calls == []
    assert not any(k.startswith("outputs/conversation_history") for k in mw_kit.files(tmp_path))
    evs = mw_kit.ctx_events(rec)
    assert [e["phase"] for e in evs] == ["started", "completed"]
    assert evs[1]["level"] == "L1" and evs[1]["cutoff_index"] is None and evs[1]["file_path"] is None
    assert evs[1]["tokens_after"] > T2  # still above T2: L2 was wanted but impossible


def test_no_valid_cutoff_overflow_propagates(mw_kit, tmp_path, mode):
    # spec: R13 — no cutoff and the L1 view overflows: the error propagates, failed is emitted
    msgs = conversation(mw_kit, n=5, chars=1500)
    mw, summ = make_mw(mw_kit, tmp_path, settings=NO_CUT)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(overflow=lambda n, view, system: True)
    assert isinstance(rec["exc"], ContextOverflowError)
    assert len(rec["calls"]) == 1
    assert summ.calls == []
    evs = mw_kit.ctx_events(rec)
    assert [e["phase"] for e in evs] == ["started", "failed"]
    assert "prompt is too long" in evs[-1]["error"]
    assert d.event is None


# ------------------------------------------------------------------------------------------------
# L2 across rounds: cumulative cutoff, previous summary, latest request
# ------------------------------------------------------------------------------------------------


def test_cumulative_cutoff_over_three_rounds(mw_kit, tmp_path, mode):
    # spec: R11 — cutoff_index is a global position in the state messages (cumulative);
    # R10 — the summarizer sees the previous summary so earlier facts survive
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit, prefix="A"), mode=mode)
    cutoffs = []
    for r, prefix in enumerate(["A", "B", "C"]):
        if r:
            d.append(*conversation(mw_kit, prefix=prefix))
        rec = d.round()
        assert rec["exc"] is None
        ev = rec["update"]["_summarization_event"]
        cutoffs.append(ev["cutoff_index"])
        view = rec["calls"][0]["messages"]
        state = rec["state_before"]
        # the view is [new summary, *state[global cutoff:]]
        assert mw_kit.view_matches(view, state, ev) is None
        assert len(state) - ev["cutoff_index"] >= SMALL.summary_keep_messages
        assert mw_kit.pairing_problems(view, state) == []
        if r:
            prev = rec["event_before"]["summary_message"].content
            # R10: the summarizer input holds the previous summary
            assert "SUMMARY-" + str(r) in summ.calls[-1]["input"]
            assert prev.split("SUMMARY-")[1][:20] in summ.calls[-1]["input"]
            hist = mw_kit.files(tmp_path)[ev["file_path"].lstrip("/")]
            assert "SUMMARY-" + str(r) in hist
    assert cutoffs[0] < cutoffs[1] < cutoffs[2]
    assert cutoffs == [10, 23, 36]  # each round keeps 2 of the effective messages
    final = d.event["summary_message"].content
    for f in ["FACT-A0", "FACT-A9", "FACT-B0", "FACT-B11", "FACT-C9"]:
        assert f in final  # facts from round 1 survive two later summaries
    # every message before the cutoff is in some history file
    hist_all = "\n".join(
        v for k, v in mw_kit.files(tmp_path).items() if k.startswith("outputs/conversation_history")
    )
    for m in d.state["messages"][: cutoffs[-1]]:
        assert m.content in hist_all


def test_latest_user_request_carried_verbatim(mw_kit, tmp_path, mode):
    # spec: R10/R9 (seed: the summary keeps the task) — the latest user request falls before the
    # cutoff: the summary message carries it verbatim
    request = "FACT-REQ Please refactor parser.py so that tokenize() returns spans; keep the public API!"
    msgs = [HumanMessage(request, id="h0")]
    for i in range(6):
        msgs += mw_kit.tool_pair(
            f"c{i}",
            "grep",
            mw_kit.fill(90, f"hit {i}", seed=i),
            args={"q": f"tok{i}"},
            ai_id=f"a{i}",
            tool_id=f"t{i}",
        )
        msgs.append(AIMessage(mw_kit.fill(700, f"FACT-N{i}", seed=i), id=f"n{i}"))
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=mw_kit.FakeSummarizer(mode="fixed"))
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    ev = rec["update"]["_summarization_event"]
    assert ev["cutoff_index"] > 0
    view = rec["calls"][0]["messages"]
    assert not any(isinstance(m, HumanMessage) and m.id == "h0" for m in view)
    assert request in view[0].content
    assert ev["summary_message"].additional_kwargs.get("ctxlab_latest_request") == request
    # a second summary still carries it (it is no longer in the state tail)
    d.append(*[AIMessage(mw_kit.fill(700, f"FACT-P{i}", seed=i), id=f"p{i}") for i in range(8)])
    rec2 = d.round()
    ev2 = rec2["update"]["_summarization_event"]
    assert ev2["cutoff_index"] > ev["cutoff_index"]
    assert request in rec2["calls"][0]["messages"][0].content


def test_system_message_never_summarized_or_duplicated(mw_kit, tmp_path, mode):
    # spec: R9 — the system message is never summarized; R16 it is counted, not copied
    system = SystemMessage("SYSTEM-MARKER-42 You are a careful release assistant. Never skip tests.")
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode, system=system)
    for r in range(2):
        if r:
            d.append(*conversation(mw_kit, prefix="B"))
        rec = d.round()
        assert rec["update"] is not None
        for c in rec["calls"]:
            assert c["system"] is system
            assert not any(isinstance(m, SystemMessage) for m in c["messages"])
            assert not any("SYSTEM-MARKER-42" in mw_kit.text(m) for m in c["messages"])
    assert all("SYSTEM-MARKER-42" not in c["input"] for c in summ.calls)
    assert all("SYSTEM-MARKER-42" not in v for v in mw_kit.files(tmp_path).values())


# ------------------------------------------------------------------------------------------------
# summarizer: nostream tag, the agent's own model
# ------------------------------------------------------------------------------------------------


def test_summarizer_call_tagged_nostream(mw_kit, tmp_path, mode):
    # spec: R10 — the summarizer call carries TAG_NOSTREAM and its role in metadata
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode)
    rec = d.round()
    assert rec["update"] is not None
    assert summ.calls
    for c in summ.calls:
        assert TAG_NOSTREAM in c["tags"]
        assert c["async"] is (mode == "async")
    # the summarizer's usage is reported apart from the main model's (R10, R16)
    stats = mw_kit.ctx_events(rec)[-1]["stats"]
    assert stats["summarizer"]["calls"] == len(summ.calls)
    assert stats["summarizer"]["input_tokens"] > 0


def test_summarizer_none_uses_agent_model(mw_kit, tmp_path, mode):
    # spec: R10 — without a summarizer, the agent's own model (request.model) summarizes,
    # tagged nostream; the main call still goes through the handler
    agent_model = mw_kit.FakeSummarizer()
    mw, _ = make_mw(mw_kit, tmp_path, summarizer=None)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode, model=agent_model)
    rec = d.round()
    assert len(agent_model.calls) == 1
    assert TAG_NOSTREAM in agent_model.calls[0]["tags"]
    ev = rec["update"]["_summarization_event"]
    assert "SUMMARY-1" in ev["summary_message"].content and "FACT-M3" in ev["summary_message"].content
    assert len(rec["calls"]) == 1  # the main call went through the handler


def test_given_summarizer_does_not_invoke_agent_model(mw_kit, tmp_path, mode):
    # spec: R10 — with a summarizer model given, the agent's model is only called via the handler
    main = mw_kit.ScriptedModel()
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode, model=main)
    d.round()
    assert main.received == [] and len(summ.calls) == 1


# ------------------------------------------------------------------------------------------------
# L1 details
# ------------------------------------------------------------------------------------------------


def test_l1_never_changes_state_messages(mw_kit, tmp_path, mode):
    # spec: R6/Words — L1 edits copies only; state messages keep their full text
    msgs, log, body = l1_history(mw_kit)
    msgs.append(
        ToolMessage(
            content=[{"type": "text", "text": mw_kit.fill(3000, "LIST-BLOCK", 5)}],
            tool_call_id="c9",
            name="fetch",
            id="t9",
        )
    )
    msgs.insert(
        -1,
        AIMessage("", id="a9", tool_calls=[{"name": "fetch", "args": {}, "id": "c9", "type": "tool_call"}]),
    )
    objects = list(msgs)
    # a limit with room for a preview beside the header and its 64-hex path
    mw, _ = make_mw(mw_kit, tmp_path, settings=SMALL.replace(summary_tool_result_token_limit=160))
    d = mw_kit.Driver(mw, msgs, mode=mode)
    for _ in range(2):
        rec = d.round()
        assert rec["exc"] is None
        assert rec["state_dump_after"] == rec["state_dump_before"]
    assert all(a is b for a, b in zip(objects, msgs, strict=True))
    assert msgs[1].tool_calls[0]["args"]["content"] == body
    assert msgs[4].content == log
    assert msgs[-1].content[0]["text"].startswith("LIST-BLOCK")
    view = d.records[0]["calls"][0]["messages"]
    assert view[-1].id == "t9" and "LIST-BLOCK" in mw_kit.text(view[-1])
    assert LTR_RE.search(mw_kit.text(view[-1]))  # the list-content result was offloaded too


def test_write_and_edit_args_truncated_in_every_call(mw_kit, tmp_path, mode):
    # spec: R5 — every write_file/edit_file string argument > 2,000 chars, in every call (no
    # recent-call window), is replaced by a marker stating the original length
    def call(cid, name, args):
        return [
            AIMessage(
                "", id=f"a-{cid}", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}]
            ),
            ToolMessage("ok", tool_call_id=cid, name=name, id=f"t-{cid}"),
        ]

    msgs = [HumanMessage("FACT-TASK write the files", id="h0")]
    msgs += call("w1", "write_file", {"file_path": "/a.py", "content": "x" * 2500})
    msgs += call("w2", "write_file", {"file_path": "/b.py", "content": "y" * 2000})  # not longer than 2,000
    msgs += call(
        "e1", "edit_file", {"file_path": "/a.py", "old_string": "o" * 3000, "new_string": "n" * 2001}
    )
    msgs += call("b1", "bash", {"command": "echo " + "z" * 3000})  # other tools are not truncated
    msgs.append(
        AIMessage(
            "",
            id="a-last",
            tool_calls=[
                {
                    "name": "write_file",
                    "args": {"file_path": "/c.py", "content": "w" * 7777},
                    "id": "w3",
                    "type": "tool_call",
                },
                {
                    "name": "edit_file",
                    "args": {"file_path": "/c.py", "old_string": "s", "new_string": "q" * 4321},
                    "id": "e2",
                    "type": "tool_call",
                },
            ],
        )
    )
    # T (= T2) at 90 % of the full estimate: the round starts, and L1 alone brings it below T2
    est0 = sum(EST.message_tokens(m) for m in msgs)
    settings = SMALL.replace(summary_threshold=0.9 * est0 / 1024, summary_l2_trigger_ratio=1.0)
    mw, _ = make_mw(mw_kit, tmp_path, settings=settings)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    for _ in range(2):
        rec = d.round(append_response=False)
        assert rec["exc"] is None and rec["update"] is None
        view = rec["calls"][0]["messages"]
        args = {tc["id"]: tc["args"] for m in view if isinstance(m, AIMessage) for tc in m.tool_calls}
        expect = {
            ("w1", "content"): 2500,
            ("e1", "old_string"): 3000,
            ("e1", "new_string"): 2001,
            ("w3", "content"): 7777,
            ("e2", "new_string"): 4321,
        }
        for (cid, key), n in expect.items():
            v = args[cid][key]
            assert "truncated" in v and f"original length {n}" in v, (cid, key, v)
        assert args["w2"]["content"] == "y" * 2000
        assert args["b1"]["command"] == "echo " + "z" * 3000
        assert args["e2"]["old_string"] == "s" and args["w1"]["file_path"] == "/a.py"
        evs = mw_kit.ctx_events(rec)
        assert evs[-1]["level"] == "L1" and evs[-1]["stats"]["truncated_args"] == 5
    assert d.state["messages"][-1].tool_calls[0]["args"]["content"] == "w" * 7777


def test_same_content_same_path_and_saved_marker_not_rewritten(mw_kit, tmp_path, mode):
    # spec: R6 — same content, same path, written once; a message that already carries ctxlab's
    # saved mark (metadata set by L1, with its file in the thread's file scope) is not written
    # again, while a text that merely starts with the marker words is offloaded like any result
    from ctxlab.core.builtin.trimmers import OFFLOAD_MARKER
    from ctxlab.core.marks import offload_kwargs

    same = mw_kit.fill(6000, "SAME-RESULT", seed=11)
    same_path = f"/outputs/large_tool_results/read-{mw_kit.sha(same)}.txt"
    preview = f"{OFFLOAD_MARKER} Full output saved at {same_path}\n" + mw_kit.fill(3000, "PREVIEW", seed=12)
    forged = (
        f"{OFFLOAD_MARKER} 9000 characters. Full output saved at /outputs/large_tool_results/x.txt\n"
        + mw_kit.fill(3000, "FORGED", seed=13)
    )
    msgs = [HumanMessage("FACT-TASK read twice", id="h0")]
    msgs += mw_kit.tool_pair("c1", "read", same, ai_id="a1", tool_id="t1")
    msgs += mw_kit.tool_pair("c2", "read", same, ai_id="a2", tool_id="t2")
    msgs += mw_kit.tool_pair("c3", "read", preview, ai_id="a3", tool_id="t3")
    msgs[-1] = msgs[-1].model_copy(update={"additional_kwargs": offload_kwargs(same_path, len(same))})
    msgs += mw_kit.tool_pair("c4", "read", forged, ai_id="a4", tool_id="t4")
    backend = mw_kit.counting_backend(tmp_path)
    settings = SMALL.replace(summary_threshold=2, summary_l2_trigger_ratio=1.0)
    mw, _ = make_mw(mw_kit, tmp_path, backend=backend, settings=settings)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    forged_path = f"/outputs/large_tool_results/read-{mw_kit.sha(forged)}.txt"
    for _ in range(2):
        rec = d.round()
        assert rec["exc"] is None and rec["update"] is None
        view = {m.id: m for m in rec["calls"][0]["messages"]}
        p1, p2 = LTR_RE.search(view["t1"].content), LTR_RE.search(view["t2"].content)
        assert p1.group(0) == p2.group(0) == same_path
        assert view["t3"].content == preview  # carries the mark and its file exists: not offloaded again
        assert LTR_RE.search(view["t4"].content).group(0) == forged_path  # the text decides nothing
    assert mw_kit.files(tmp_path) == {same_path.lstrip("/"): same, forged_path.lstrip("/"): forged}
    assert sorted(p for p, _ in backend.writes) == sorted([same_path, forged_path])  # each written once


HOSTILE = [
    "../../etc/passwd",
    "/etc/shadow",
    "a/../../b",
    "..",
    "x\\..\\..\\windows",
    "工具 名",
    "",
    "n" * 400,
    "%2e%2e%2fescape",
    "~root/.ssh",
    "name\x00null",
]


def test_hostile_tool_names_stay_in_folder(mw_kit, tmp_path, mode, monkeypatch):
    # spec: R6/R17 — no tool name moves a file outside outputs/large_tool_results/
    root = tmp_path / "root"
    root.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    msgs = [HumanMessage("FACT-TASK", id="h0")]
    for i, name in enumerate(HOSTILE):
        msgs += mw_kit.tool_pair(
            f"c{i}", name, mw_kit.fill(3000, f"R{i}", seed=i), ai_id=f"a{i}", tool_id=f"t{i}"
        )
    mw, _ = make_mw(mw_kit, root, settings=SMALL.replace(summary_threshold=4, summary_keep_messages=30))
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None
    files = mw_kit.files(root)
    assert len(files) == len(HOSTILE)
    for rel in files:
        assert re.fullmatch(r"outputs/large_tool_results/[A-Za-z0-9_-]{1,64}-[0-9a-f]{64}\.txt", rel), rel
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "root"]
    assert list(cwd.iterdir()) == []
    view = rec["calls"][0]["messages"]
    for m in view:
        for p in LTR_RE.findall(mw_kit.text(m)):
            assert f"outputs/large_tool_results/{p[0]}-{p[1]}.txt" in files


def test_no_host_path_in_any_view(mw_kit, tmp_path, mode):
    # spec: R17 — the model only sees virtual /outputs/... paths
    msgs, _, _ = l1_history(mw_kit)
    msgs += conversation(mw_kit)
    mw, _ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    d.round()
    d.append(*conversation(mw_kit, prefix="B"))
    d.round()
    host = str(tmp_path)
    seen_paths = 0
    for rec in d.records:
        assert rec["update"] is not None
        text = all_view_text(rec)
        assert host not in text and str(tmp_path.resolve()) not in text
        seen_paths += text.count("/outputs/")
    assert seen_paths >= 2
    assert host not in d.event["summary_message"].content
    assert d.event["file_path"].startswith("/outputs/conversation_history/")


# ------------------------------------------------------------------------------------------------
# async: history write and summary run concurrently
# ------------------------------------------------------------------------------------------------


def test_async_history_write_and_summary_run_concurrently(mw_kit, tmp_path):
    # spec: R10 — async path: asyncio.gather of the history write and the summary.  Both wait on
    # one barrier that releases only when both have started; sequential code would time out.
    from deepagents.backends import FilesystemBackend

    state = {"barrier": None, "passed": []}

    class BarrierBackend(FilesystemBackend):
        async def awrite(self, file_path, content):
            if "conversation_history" in file_path:
                await asyncio.wait_for(state["barrier"].wait(), timeout=3)
                state["passed"].append("write")
            return await super().awrite(file_path, content)

    summ = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(
        settings=SMALL, backend=BarrierBackend(root_dir=str(tmp_path), virtual_mode=True), summarizer=summ
    )
    d = mw_kit.Driver(mw, conversation(mw_kit), mode="async")

    barrier = asyncio.Barrier(2)  # bound to the driver's event loop on first use
    state["barrier"] = barrier
    summ.barrier = barrier
    rec = d.round()
    assert rec["exc"] is None
    assert state["passed"] == ["write"] and summ.barrier_passed == [True]
    ev = rec["update"]["_summarization_event"]
    assert ev["file_path"] and "SUMMARY-1" in ev["summary_message"].content
    assert ev.get("summary_error") is None


# ------------------------------------------------------------------------------------------------
# R16: system prompt and tool schemas count
# ------------------------------------------------------------------------------------------------


def test_system_prompt_pushes_estimate_over_threshold(mw_kit, tmp_path, mode):
    # spec: R16 — the system message counts: messages below T plus a long system prompt >= T
    msgs = conversation(mw_kit, n=4, chars=600)
    assert sum(EST.message_tokens(m) for m in msgs) < T
    system = SystemMessage(mw_kit.fill(4000, "SYSTEM", seed=5))
    for sys_msg, expect_round in ((None, False), (system, True)):
        mw, _ = make_mw(mw_kit, tmp_path)
        d = mw_kit.Driver(mw, msgs, mode=mode, system=sys_msg)
        rec = d.round()
        evs = mw_kit.ctx_events(rec)
        if expect_round:
            assert evs and evs[0]["phase"] == "started"
            assert evs[0]["tokens_before"] == sum(EST.message_tokens(m) for m in [system, *msgs]) >= T
            assert rec["calls"][0]["system"] is system
        else:
            assert evs == []


def test_tool_schemas_push_estimate_over_threshold(mw_kit, tmp_path, mode):
    # spec: R16 — tool schemas count
    msgs = conversation(mw_kit, n=4, chars=600)

    def make_tool(i):
        return StructuredTool.from_function(
            func=lambda q="": "ok", name=f"lookup_{i}", description=mw_kit.fill(1500, f"TOOL{i}", seed=i)
        )

    tools = [make_tool(i) for i in range(3)]
    for tl, expect_round in (([], False), (tools, True)):
        mw, _ = make_mw(mw_kit, tmp_path)
        d = mw_kit.Driver(mw, msgs, mode=mode, tools=tl)
        rec = d.round()
        evs = mw_kit.ctx_events(rec)
        assert bool(evs) is expect_round
        assert [t.name for t in rec["calls"][0]["tools"]] == [t.name for t in tl]
        if expect_round:
            assert evs[0]["tokens_before"] >= T > sum(EST.message_tokens(m) for m in msgs)


# ------------------------------------------------------------------------------------------------
# more of R10, R14, R17
# ------------------------------------------------------------------------------------------------


def test_sync_path_writes_history_before_summarizing(mw_kit, tmp_path):
    # spec: R10 — sync path: write the history first, then summarize
    order = []
    backend = mw_kit.counting_backend(tmp_path)
    real_write = backend.write

    def write(path, content):
        order.append(("write", path.split("/")[2]))
        return real_write(path, content)

    backend.write = write

    class OrderedSummarizer(mw_kit.FakeSummarizer):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            order.append(("summarize", None))
            return super()._generate(messages, stop, run_manager, **kwargs)

    mw, _ = make_mw(mw_kit, tmp_path, backend=backend, summarizer=OrderedSummarizer())
    rec = mw_kit.Driver(mw, conversation(mw_kit), mode="sync").round()
    assert rec["update"]["_summarization_event"]["file_path"]
    assert order == [("write", "conversation_history"), ("summarize", None)]


@pytest.mark.parametrize("above_t", [True, False])
def test_other_model_errors_propagate_with_failed_only_after_start(mw_kit, tmp_path, mode, above_t):
    # spec: R14 — failed when a round has started and an unhandled exception escapes; below T
    # nothing started, so no event
    msgs = conversation(mw_kit) if above_t else conversation(mw_kit, n=2, chars=100)
    mw, _ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(overflow=lambda n, view, system: ValueError("upstream 500: internal error"))
    assert isinstance(rec["exc"], ValueError)
    assert len(rec["calls"]) == 1  # not an overflow: no retry
    evs = mw_kit.ctx_events(rec)
    if above_t:
        assert [e["phase"] for e in evs] == ["started", "failed"]
        assert "upstream 500" in evs[-1]["error"] and evs[-1]["level"] == "L2"
    else:
        assert evs == []
    assert d.event is None


def test_backend_factory_gets_the_runtime(mw_kit, tmp_path, mode):
    # spec: R17 — files go through the runtime's backend: a factory runtime -> backend is asked
    # for it (this is how a sub-agent shares its parent thread's file scope)
    seen = []
    backend = mw_kit.backend(tmp_path)

    def factory(runtime):
        seen.append(runtime)
        return backend

    mw = CompressionMiddleware(settings=SMALL, backend=factory, summarizer=mw_kit.FakeSummarizer())
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode)
    rec = d.round()
    assert seen and all(r is not None and hasattr(r, "stream_writer") for r in seen)
    path = rec["update"]["_summarization_event"]["file_path"]
    assert path.lstrip("/") in mw_kit.files(tmp_path)


def test_events_order_and_payloads_l1_then_l2(mw_kit, tmp_path, mode):
    # spec: R14 — started before L1 when the estimate reaches T; completed after the model call
    msgs, _, _ = l1_history(mw_kit)
    mw, _ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["timeline"] == [("event", "started"), ("call", "ok"), ("event", "completed")]
    d.append(*conversation(mw_kit))
    rec = d.round()
    assert rec["timeline"] == [("event", "started"), ("call", "ok"), ("event", "completed")]
    done = mw_kit.ctx_events(rec)[-1]
    assert done["level"] == "L2" and done["cutoff_index"] == d.event["cutoff_index"]
    assert done["file_path"] == d.event["file_path"]
    assert done["stats"]["offloaded"] and all(
        p.startswith("/outputs/large_tool_results/") for p in done["stats"]["offloaded"]
    )


def test_offload_write_failure_keeps_a_preview_and_names_no_path(mw_kit, tmp_path, mode):
    # spec: R6/R17 — when the offload file cannot be written, the view shows a bounded preview and
    # never points the model at a file that does not exist
    msgs, log, _ = l1_history(mw_kit)
    backend = mw_kit.failing_backend(tmp_path, "large_tool_results", "raise")
    mw, _ = make_mw(mw_kit, tmp_path, backend=backend)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None and rec["update"] is None
    t2 = next(m for m in rec["calls"][0]["messages"] if m.id == "t2")
    assert "/outputs/" not in t2.content and "could not be saved" in t2.content
    assert len(t2.content) < len(log) and t2.content.count("LOG-START") == 1
    assert mw_kit.files(tmp_path) == {}
    assert rec["state_dump_after"] == rec["state_dump_before"]
    done = mw_kit.ctx_events(rec)[-1]
    assert done["level"] == "L1" and done["stats"].get("trim_errors")


@pytest.mark.parametrize(
    "path",
    [
        "/skills/public/evil.md",
        "/outputs/../skills/x.md",
        "/outputs/./x.txt",
        "/outputs//x.txt",
        "outputs/x.txt",
        "/etc/passwd",
    ],
)
def test_file_layer_writes_only_under_outputs(mw_kit, tmp_path, path):
    # spec: R17 — paths are validated: nothing outside the virtual outputs/ folder is written
    from ctxlab.core.files import FileWriteError, write_text

    with pytest.raises(FileWriteError):
        write_text(mw_kit.backend(tmp_path), path, "x")
    assert mw_kit.files(tmp_path) == {}


def test_hostile_thread_id_names_history_inside_the_folder(mw_kit, tmp_path, mode):
    # spec: R10/R17 — the history file name comes from the thread id, made safe
    mw, _ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit), mode=mode, thread_id="../../skills/public/x")
    rec = d.round()
    path = rec["update"]["_summarization_event"]["file_path"]
    assert HIST_RE.match(path) and ".." not in path and "skills" in path.rsplit("/", 1)[1]
    assert list(mw_kit.files(tmp_path)) == [path.lstrip("/")]


def test_forced_round_without_cutoff_retries_the_l1_view_once(mw_kit, tmp_path, mode):
    # spec: R12/R13 — an overflow below T forces L1; with no valid cutoff the L1 view, smaller
    # than what overflowed (a result offloaded), is the one retry; if that overflows too the
    # error propagates with failed.  (Nothing to shrink: tests/test_middleware_guards.py.)
    settings = NO_CUT.replace(summary_threshold=4)
    msgs = conversation(mw_kit, n=3, chars=1500)
    msgs += mw_kit.tool_pair(
        "c1", "read_log", mw_kit.fill(3000, "FACT-LOG", seed=8), ai_id="a9", tool_id="t9"
    )
    mw, summ = make_mw(mw_kit, tmp_path, settings=settings)
    ok = mw_kit.Driver(mw, msgs, mode=mode).round(overflow=lambda n, view, system: n == 1)
    assert ok["exc"] is None and [c["raised"] for c in ok["calls"]] == ["overflow", None]
    assert ok["update"] is None and summ.calls == []
    assert mw_kit.ctx_events(ok)[-1]["phase"] == "completed" and mw_kit.ctx_events(ok)[-1]["level"] == "L1"
    bad = mw_kit.Driver(mw, msgs, mode=mode).round(overflow=lambda n, view, system: True)
    assert isinstance(bad["exc"], ContextOverflowError) and len(bad["calls"]) == 2
    evs = mw_kit.ctx_events(bad)
    assert evs[-1]["phase"] == "failed" and evs[-1]["forced_by_overflow"] is True


class FixedCost:
    """An estimator plugin: 128 tokens per message, 1 for a system message, 0 for tools."""

    name = "fixed-cost"

    @hookimpl
    def ctxlab_estimate_message(self, message):
        return 1 if isinstance(message, SystemMessage) else 128

    @hookimpl
    def ctxlab_estimate_tools(self, tools):
        return 0


@pytest.mark.parametrize(
    ("n", "system", "expect"),
    [
        (7, False, "none"),  # 896 < T
        (8, False, "L1"),  # 1024 == T: started (>= T); 1024 == T2: L1 only (not > T2)
        (8, True, "L2"),  # 1025 > T2: L2
    ],
)
def test_threshold_boundaries(mw_kit, tmp_path, mode, n, system, expect):
    # spec: R3 (below T), R4 (>= T starts), R7 (<= T2 stays L1), R8 (strictly > T2 enters L2)
    settings = CompressionSettings(summary_threshold=1, summary_keep_messages=2, summary_l2_trigger_ratio=1.0)
    assert settings.entry_threshold_tokens == 1024 and settings.l2_threshold_tokens == 1024
    mw = CompressionMiddleware(
        settings=settings,
        backend=mw_kit.backend(tmp_path),
        summarizer=mw_kit.FakeSummarizer(),
        plugins=[FixedCost()],
    )
    sys_msg = SystemMessage("sys") if system else None
    rec = mw_kit.Driver(mw, conversation(mw_kit, n=n, chars=50), mode=mode, system=sys_msg).round()
    evs = mw_kit.ctx_events(rec)
    if expect == "none":
        assert evs == [] and rec["update"] is None
        return
    assert evs[0]["phase"] == "started" and evs[0]["tokens_before"] == 128 * n + (1 if system else 0)
    assert evs[-1]["phase"] == "completed" and evs[-1]["level"] == expect
    assert (rec["update"] is not None) is (expect == "L2")


def test_previous_summary_survives_a_failed_summarizer_round(mw_kit, tmp_path, mode):
    # spec: R10 — a summarizer exception does not propagate AND earlier facts survive
    mw, summ = make_mw(mw_kit, tmp_path)
    d = mw_kit.Driver(mw, conversation(mw_kit, prefix="A"), mode=mode)
    first = d.round()["update"]["_summarization_event"]["summary_message"].content
    assert "FACT-A3" in first
    summ.mode = "raises"
    d.append(*conversation(mw_kit, prefix="B"))
    rec = d.round()
    assert rec["exc"] is None
    ev = rec["update"]["_summarization_event"]
    assert "429" in ev["summary_message"].content  # the error text is there
    view_text = "\n".join(mw_kit.text(m) for m in rec["calls"][0]["messages"])
    assert "FACT-A3" in view_text  # the previous summary's facts stay in context


def test_image_only_tool_result_is_not_offloaded_into_a_placeholder(mw_kit, tmp_path, mode):
    # spec: R6 — offloading replaces the body by a path plus a preview within the budget; it
    # never makes the view larger, and the file holds the full result
    b64 = tiny_png_b64(256, 256)
    msgs = [
        HumanMessage("FACT-TASK take a screenshot", id="h0"),
        AIMessage(
            "", id="a1", tool_calls=[{"name": "screenshot", "args": {}, "id": "c1", "type": "tool_call"}]
        ),
        ToolMessage(
            content=[{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}}],
            tool_call_id="c1",
            name="screenshot",
            id="t1",
        ),
    ]
    settings = SMALL.replace(summary_threshold=0.25, summary_l2_trigger_ratio=1.0, summary_keep_messages=5)
    mw, _ = make_mw(mw_kit, tmp_path, settings=settings)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    done = mw_kit.ctx_events(rec)[-1]
    assert done["tokens_after"] <= done["tokens_before"]  # L1 never grows the view
    assert "[image]" not in mw_kit.files(tmp_path).values()


def tiny_png_b64(w, h):
    """A valid w x h RGB PNG (noisy pixels), base64."""
    import base64
    import hashlib
    import struct
    import zlib

    raw = bytearray()
    block = b"seed"
    for _y in range(h):
        raw.append(0)
        row = bytearray()
        while len(row) < w * 3:
            block = hashlib.sha256(block).digest()
            row += block
        raw += row[: w * 3]

    def chunk(tag, data):
        return (
            struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(bytes(raw), 1)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode()


def test_write_file_args_truncated_in_tool_use_content_blocks(mw_kit, tmp_path, mode):
    # spec: R5 — every write_file call in the view, whatever the message format
    body = mw_kit.fill(20000, "BODY", 1)
    call = {
        "name": "write_file",
        "args": {"file_path": "/a.py", "content": body},
        "id": "toolu_01",
        "type": "tool_call",
    }
    ai = AIMessage(
        content=[
            {"type": "text", "text": "writing the file"},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "write_file",
                "input": {"file_path": "/a.py", "content": body},
            },
        ],
        tool_calls=[call],
        id="a1",
    )
    msgs = [
        HumanMessage("FACT-TASK write it", id="h0"),
        ai,
        ToolMessage("ok", tool_call_id="toolu_01", name="write_file", id="t1"),
        HumanMessage("thanks", id="h1"),
    ]
    settings = SMALL.replace(summary_threshold=2, summary_l2_trigger_ratio=0.5)
    mw, _ = make_mw(mw_kit, tmp_path, settings=settings)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    view_ai = next(m for m in rec["calls"][0]["messages"] if m.id == "a1")
    assert "original length 20000" in view_ai.tool_calls[0]["args"]["content"]
    assert body not in str(view_ai.content)  # nor in the tool_use block
    assert mw_kit.ctx_events(rec)[-1]["tokens_after"] < 300


def test_overflow_after_a_declined_l2_forces_l2(mw_kit, tmp_path, mode):
    # spec: R12 — an overflow forces L2 regardless of T2: an L2 the decision declined (here the
    # re-summarize guard: a long system prompt keeps every call above T2) runs once the L1 view
    # overflowed; then one retry
    system = SystemMessage(mw_kit.fill(40000, "SYSTEM-LONG", seed=5))
    mw, summ = make_mw(mw_kit, tmp_path, settings=SMALL.replace(summary_threshold=2))
    d = mw_kit.Driver(mw, conversation(mw_kit, n=10, chars=300), mode=mode, system=system)
    first = d.round()["update"]["_summarization_event"]
    assert first["cutoff_index"] == 8 and len(summ.calls) == 1
    d.append(HumanMessage(mw_kit.fill(300, "FACT-NEXT", 9), id="next"))
    plain = d.round(append_response=False)
    assert plain["update"] is None and len(summ.calls) == 1  # declined without an overflow
    assert mw_kit.ctx_events(plain)[-1]["stats"]["l2_decision"].startswith("resummarize-guard:")
    rec = d.round(overflow=lambda n, view, system: n == 1)
    assert rec["exc"] is None and [c["raised"] for c in rec["calls"]] == ["overflow", None]
    ev = rec["update"]["_summarization_event"]
    assert ev["cutoff_index"] == 10 and "FACT-M9" in ev["summary_message"].content
    assert [m.id for m in rec["calls"][1]["messages"][1:]] == ["mw-resp-1", "next"]
    done = mw_kit.ctx_events(rec)[-1]
    assert done["phase"] == "completed" and done["level"] == "L2" and done["forced_by_overflow"] is True


def test_repeated_summarizer_failures_do_not_grow_the_summary(mw_kit, tmp_path, mode):
    # spec: R10 — earlier facts survive failed rounds, and a summarizer outage must not make
    # "compression" inflate the context round after round (the previous body is carried once)
    mw, summ = make_mw(mw_kit, tmp_path)
    request = HumanMessage("FACT-REQ " + "please keep this request " * 100, id="req")
    d = mw_kit.Driver(mw, [request, *conversation(mw_kit, prefix="A")], mode=mode)
    rec = d.round()
    assert rec["exc"] is None, rec["exc"]
    first = rec["update"]["_summarization_event"]["summary_message"].content
    assert "FACT-A3" in first
    summ.mode = "raises"
    sizes = []
    for r in range(4):
        d.append(*conversation(mw_kit, prefix=f"B{r}"))
        rec = d.round()
        assert rec["exc"] is None
        summary = rec["update"]["_summarization_event"]["summary_message"].content
        assert "FACT-A3" in summary  # the first round's facts are still carried
        assert summary.count("FACT-REQ") <= 1  # the request is carried once, not once per round
        sizes.append(len(summary))
    assert max(sizes) - min(sizes) < 200, sizes  # bounded: no nesting growth per failed round
