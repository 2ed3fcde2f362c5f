"""Prepared summaries (issue 34): the next L2 summary is made in the background once a request
passes ``summary_prepare_ratio × T`` and committed at T without a summarizer call in the round.

Real parts: the middleware driven through ``ctxlab.replay.ModelNodeHarness`` (a real
``ModelRequest``, the ``Command`` applied as LangGraph's model node applies it), a real
``FilesystemBackend``, LangChain's ``create_agent`` with a checkpointer (sync and async), the
real thread and task runner.  The summarizer is a fake chat model behind a gate (a
``threading.Event`` the test opens), so that each test decides when a background summary is
done; nothing here measures time (that is ``ctxlab bench``'s).
"""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import time
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import ConfigDict, Field

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.marks import is_summary_message
from ctxlab.core.preparations import Preparations
from ctxlab.replay.harness import ModelNodeHarness

FACT = re.compile(r"FACT-[A-Z0-9]+")
#: T = 2048 tokens, T2 = 1638 tokens, preparation from 1228 tokens, keep 2 messages
SETTINGS = CompressionSettings(
    summary_threshold=2,
    summary_keep_messages=2,
    summary_l2_trigger_ratio=0.8,
    summary_prepare_ratio=0.6,
    summary_prepare_wait_s=10,
)


class GatedSummarizer(BaseChatModel):
    """A summarizer model that repeats every ``FACT-…`` marker it was shown.  The calls whose
    number (from 1) is in ``gated`` wait for ``gate`` first; those in ``failing`` raise."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    gate: Any = Field(default_factory=threading.Event)
    gated: set = Field(default_factory=lambda: {1})
    failing: set = Field(default_factory=set)
    calls: list = Field(default_factory=list)
    finished: int = 0

    @property
    def _llm_type(self) -> str:
        return "gated-summarizer"

    def _answer(self, messages: list, n: int) -> ChatResult:
        if n in self.failing:
            self.finished += 1
            raise RuntimeError("injected summarizer failure: 503 Service Unavailable")
        text = "\n".join(str(m.content) for m in messages)
        facts = list(dict.fromkeys(FACT.findall(text)))
        self.finished += 1
        reply = AIMessage(f"SUMMARY-{n}: " + " ".join(facts), usage_metadata=_usage(100, 20))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls.append({"thread": threading.current_thread().name, "async": False})
        n = len(self.calls)
        if n in self.gated:
            assert self.gate.wait(10), "the test never opened the gate"
        return self._answer(messages, n)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls.append({"thread": threading.current_thread().name, "async": True})
        n = len(self.calls)
        if n in self.gated:
            assert await asyncio.to_thread(self.gate.wait, 10), "the test never opened the gate"
        return self._answer(messages, n)


def _usage(i: int, o: int) -> Any:
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


def turn(kit: Any, n: int) -> list:
    """One agent turn of about 150 tokens: a user message and an answer, each with a fact."""
    return [
        HumanMessage(kit.fill(300, f"FACT-H{n}", seed=n), id=f"h{n}"),
        AIMessage(kit.fill(300, f"FACT-A{n}", seed=n + 1), id=f"a{n}"),
    ]


def prepared_events(rec: dict, status: str | None = None) -> list[dict]:
    return [
        e["stats"]["prepared"]
        for e in rec["events"]
        if e.get("phase") == "prepared" and (status is None or e["stats"]["prepared"]["status"] == status)
    ]


def completed(rec: dict) -> dict | None:
    done = [e for e in rec["events"] if e.get("phase") == "completed"]
    return done[-1] if done else None


def wait_until(predicate: Any, what: str) -> None:
    for _ in range(1000):
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def run_until(kit: Any, d: Any, n: int, stop: Any, limit: int = 40) -> tuple[dict, int]:
    """Append turns and run rounds until ``stop(rec)``; returns that round and the next turn number."""
    for _ in range(limit):
        d.append(*turn(kit, n))
        n += 1
        rec = d.round()
        assert rec["exc"] is None, repr(rec["exc"])
        if stop(rec):
            return rec, n
    raise AssertionError("the condition never held")


def l2(rec: dict) -> bool:
    done = completed(rec)
    return done is not None and done["level"] == "L2"


def started(rec: dict) -> bool:
    return bool(prepared_events(rec, "started"))


def check_l2_view(kit: Any, d: Any, rec: dict) -> None:
    """R9, R11: the view is [summary, *state[cutoff:]] with tool pairs whole, and the summary's
    facts are those of the state messages it covers (never a span the state does not have)."""
    view = rec["calls"][-1]["messages"]
    assert kit.view_matches(view, rec["state_before"], d.event) is None
    assert kit.pairing_problems(view, rec["state_before"]) == []
    cut = d.event["cutoff_index"]
    covered = {f for m in rec["state_before"][:cut] for f in FACT.findall(kit.text(m))}
    assert set(FACT.findall(kit.text(d.event["summary_message"]))) <= covered


@pytest.mark.parametrize("reducer", ["add_messages", "concat"])
def test_a_prepared_summary_is_committed_at_t_without_a_summarizer_call(mw_kit, tmp_path, reducer):
    # spec: R3, R9, R10, R11, R14 — below T the call is sent as it is while the summary is made in
    # a background thread; at T the L2 round commits it: no summarizer call in the round
    summ = GatedSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], reducer=reducer, thread_id="t-1")
    rec, n = run_until(mw_kit, d, 0, started)
    # R3: the round that starts it is below T: the state messages as they are, no update
    assert rec["update"] is None and completed(rec) is None
    assert mw_kit.view_matches(rec["calls"][-1]["messages"], rec["state_before"], None) is None
    end = prepared_events(rec, "started")[0]["cutoff_index"]
    # it runs beside the agent: the round returned while the summarizer waits behind the gate
    entry = mw.preparations.get("t-1")
    assert entry is not None and not entry.pending.done()
    summ.gate.set()
    wait_until(entry.pending.done, "the background summary")
    assert summ.calls[0]["thread"] == "ctxlab-prepare"
    rec, n = run_until(mw_kit, d, n, l2)
    done = completed(rec)
    assert done["stats"]["prepared"]["status"] == "used"
    assert done["cutoff_index"] == end == d.event["cutoff_index"]  # R11: the prepared span's end
    assert done["stats"]["prepared"]["sync_cutoff_index"] >= end
    assert len(summ.calls) == 1  # the round itself called no summarizer
    assert done["stats"]["summarizer"]["calls"] == 1  # the background call is accounted here (R16)
    check_l2_view(mw_kit, d, rec)
    # R10: the history file holds the span; the summary carries its facts
    files = mw_kit.files(tmp_path)
    history = [v for k, v in files.items() if k.startswith("outputs/conversation_history/")]
    assert len(history) == 1 and d.event["file_path"] is not None
    facts = [f for m in rec["state_before"][:end] for f in FACT.findall(mw_kit.text(m))]
    assert facts and all(f in history[0] and f in mw_kit.text(d.event["summary_message"]) for f in facts)
    assert mw.preparations.stats == {
        "started": 1,
        "used": 1,
        "discarded": 0,
        "wasted_calls": 0,
        "wasted_input_tokens": 0,
        "wasted_output_tokens": 0,
    }


def test_an_unfinished_preparation_is_waited_for_then_the_round_summarizes_itself(mw_kit, tmp_path):
    # spec: R10, R11 — at T the background summary is still running: the round waits up to
    # summary_prepare_wait_s, then summarizes as without preparation; the late one is wasted
    summ = GatedSummarizer()
    settings = SETTINGS.replace(summary_prepare_wait_s=0.05)
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    rec, n = run_until(mw_kit, d, n, l2)
    done = completed(rec)
    info = done["stats"]["prepared"]
    assert info["status"] == "discarded" and info["reason"].startswith("not ready after")
    assert info["waited_s"] > 0 and info["wasted"] is None  # still running: its cost comes later
    assert prepared_events(rec, "discarded") == [info]
    assert len(summ.calls) == 2 and done["error"] is None  # the round's own summary
    assert done["cutoff_index"] == info["cutoff_index"] or done["cutoff_index"] > 0
    check_l2_view(mw_kit, d, rec)
    summ.gate.set()
    wait_until(lambda: mw.preparations.stats["wasted_calls"] == 1, "the late summary's cost")
    assert mw.preparations.stats["discarded"] == 1 and mw.preparations.stats["wasted_input_tokens"] == 100


def test_a_preparation_that_finishes_during_the_wait_is_used(mw_kit, tmp_path):
    # spec: R11 — the round waits for a running preparation (within summary_prepare_wait_s)
    summ = GatedSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    opener = threading.Timer(0.2, summ.gate.set)
    opener.start()
    rec, n = run_until(mw_kit, d, n, l2)
    opener.join()
    info = completed(rec)["stats"]["prepared"]
    assert info["status"] == "used" and info["waited_s"] > 0
    assert len(summ.calls) == 1
    check_l2_view(mw_kit, d, rec)


def test_a_failed_background_summary_is_never_committed(mw_kit, tmp_path):
    # spec: R10 — the background summarizer raised: the preparation is discarded and the round
    # summarizes itself; the checkpoint never holds the failure
    summ = GatedSummarizer(gated=set(), failing={1})
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    wait_until(lambda: summ.finished == 1, "the background summarizer")
    rec, n = run_until(mw_kit, d, n, l2)
    info = completed(rec)["stats"]["prepared"]
    assert info["status"] == "discarded" and "503 Service Unavailable" in info["reason"]
    # a call that raised bills nothing: the summarizer accounts no call for it (R16)
    assert info["wasted"] == {"calls": 0, "input_tokens": 0, "output_tokens": 0}
    assert d.event["summary_error"] is None and "SUMMARY-2" in mw_kit.text(d.event["summary_message"])
    check_l2_view(mw_kit, d, rec)


@pytest.mark.parametrize("edited", ["h0", "a1"])
def test_a_changed_span_discards_the_preparation(mw_kit, tmp_path, edited):
    # spec: R11 — a message before the prepared end was replaced (an edit): the prepared summary
    # covers a span the state no longer has and is never committed.  The first message of the
    # span is checked on every call (the preparation is replaced at once), every message at T.
    summ = GatedSummarizer(gated=set())
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    wait_until(lambda: summ.finished == 1, "the background summary")
    old = FACT.search(mw_kit.text(next(m for m in d.state["messages"] if m.id == edited))).group(0)
    d.append(type(next(m for m in d.state["messages"] if m.id == edited))("FACT-EDITED rewritten", id=edited))
    rec, n = run_until(mw_kit, d, n, lambda r: bool(prepared_events(r, "discarded")))
    assert prepared_events(rec, "discarded")[0]["reason"] == "messages before its end changed"
    if edited == "h0":  # seen by the cheap check below T: a new preparation of the edited state
        assert started(rec) and not l2(rec)
        rec, n = run_until(mw_kit, d, n, l2)
        assert completed(rec)["stats"]["prepared"]["status"] == "used"
    else:  # seen at T: the round summarizes itself
        assert l2(rec) and completed(rec)["stats"]["prepared"]["status"] == "discarded"
    summary = mw_kit.text(d.event["summary_message"])
    assert "FACT-EDITED" in summary and not re.search(rf"{old}(?!\d)", summary)
    check_l2_view(mw_kit, d, rec)


def test_messages_removed_before_the_prepared_end_discard_it(mw_kit, tmp_path):
    # spec: R11 — RemoveMessage of a message in the span (another middleware, a rewind)
    summ = GatedSummarizer(gated=set())
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    wait_until(lambda: summ.finished == 1, "the background summary")
    d.append(RemoveMessage(id="a1"))
    rec, n = run_until(mw_kit, d, n, lambda r: bool(prepared_events(r, "discarded")))
    assert prepared_events(rec, "discarded")[0]["reason"] == "messages before its end changed"
    rec, n = run_until(mw_kit, d, n, l2)
    assert not re.search(r"FACT-A1(?!\d)", mw_kit.text(d.event["summary_message"]))
    check_l2_view(mw_kit, d, rec)


def test_two_threads_of_one_instance_keep_their_own_preparations(mw_kit, tmp_path):
    # spec: R10, R11 — one middleware serves two LangGraph threads: each commits its own summary
    summ = GatedSummarizer(gated=set())
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    drivers = {t: mw_kit.Driver(mw, [], thread_id=t) for t in ("a", "b")}
    n = {"a": 0, "b": 500}
    for t, d in drivers.items():
        _, n[t] = run_until(mw_kit, d, n[t], started)
    assert sorted(mw.preparations.keys()) == ["a", "b"]
    wait_until(lambda: summ.finished == 2, "both background summaries")
    for t, d in drivers.items():
        rec, n[t] = run_until(mw_kit, d, n[t], l2)
        assert completed(rec)["stats"]["prepared"]["status"] == "used"
        check_l2_view(mw_kit, d, rec)
    facts = {t: set(FACT.findall(mw_kit.text(d.event["summary_message"]))) for t, d in drivers.items()}
    assert facts["a"] and facts["b"] and not facts["a"] & facts["b"]
    assert len(summ.calls) == 2


def test_a_recreated_middleware_summarizes_itself_unless_it_shares_the_preparations(mw_kit, tmp_path):
    # spec: R11 — a host that builds the middleware per run (a LangGraph server): the new instance
    # never sees what the old one prepared (it prepares its own, here too late, and summarizes
    # synchronously); an instance given the old one's preparations commits them
    summ = GatedSummarizer(gated=set())
    first = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(first, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    wait_until(lambda: summ.finished == 1, "the background summary")
    checkpoint = (copy.deepcopy(d.state["messages"]), n)
    late = GatedSummarizer()  # its own background summary never finishes in time
    settings = SETTINGS.replace(summary_prepare_wait_s=0.05)
    d.mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path), summarizer=late)
    rec, _ = run_until(mw_kit, d, n, l2)
    assert completed(rec)["stats"]["prepared"]["reason"].startswith("not ready")
    assert "SUMMARY-2" in mw_kit.text(d.event["summary_message"]) and len(summ.calls) == 1
    assert first.preparations.get("t-1") is not None  # the old instance's: never committed
    check_l2_view(mw_kit, d, rec)
    late.gate.set()
    # the same checkpoint, run by an instance that shares the first one's preparations
    shared = CompressionMiddleware(
        settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=late, preparations=first.preparations
    )
    d2 = mw_kit.Driver(shared, checkpoint[0], thread_id="t-1")
    rec, _ = run_until(mw_kit, d2, checkpoint[1], l2)
    assert completed(rec)["stats"]["prepared"]["status"] == "used"
    assert "SUMMARY-1" in mw_kit.text(d2.event["summary_message"]) and len(summ.calls) == 1
    check_l2_view(mw_kit, d2, rec)


def test_a_checkpoint_resumed_elsewhere_uses_it_only_while_it_matches(mw_kit, tmp_path):
    # spec: R11 — the checkpoint serialized and loaded (new message objects, same content) still
    # matches; an older checkpoint (before the prepared end) does not
    summ = GatedSummarizer(gated=set())
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    states: list[list] = []
    n = 0
    for _ in range(40):
        states.append([m.model_copy(deep=True) for m in d.state["messages"]])
        d.append(*turn(mw_kit, n))
        n += 1
        if started(d.round()):
            break
    old_state = states[-3]  # two turns before the preparation started
    wait_until(lambda: summ.finished == 1, "the background summary")
    serde = JsonPlusSerializer()
    reloaded = serde.loads_typed(serde.dumps_typed(d.state["messages"]))
    assert reloaded[0] is not d.state["messages"][0]
    d2 = mw_kit.Driver(mw, reloaded, thread_id="t-1")
    rec, _ = run_until(mw_kit, d2, n, l2)
    assert completed(rec)["stats"]["prepared"]["status"] == "used"
    check_l2_view(mw_kit, d2, rec)
    # an older checkpoint, continued on two branches: what one branch prepared is discarded on the
    # other (its span is not that state's) and never reaches its summary
    d3 = mw_kit.Driver(mw, old_state, thread_id="t-1")
    rec, _ = run_until(mw_kit, d3, 900, started)
    assert prepared_events(rec, "started")[0]["cutoff_index"] > len(old_state)  # branch messages in it
    wait_until(lambda: summ.finished == 2, "the second background summary")
    d4 = mw_kit.Driver(mw, old_state, thread_id="t-1")
    rec, m = run_until(mw_kit, d4, 700, lambda r: bool(prepared_events(r, "discarded")))
    assert prepared_events(rec, "discarded")[0]["reason"] in (
        "messages before its end changed",
        "messages before its end were removed",
    )
    rec, _ = run_until(mw_kit, d4, m, l2)
    assert "FACT-H90" not in mw_kit.text(d4.event["summary_message"])
    check_l2_view(mw_kit, d4, rec)


def test_a_model_failure_after_the_commit_keeps_the_preparation_for_the_retry(mw_kit, tmp_path):
    # spec: R11, R14 — the main model fails in the round that took the prepared summary: nothing
    # is committed (failed event), and the retry commits the same summary without a new call
    summ = GatedSummarizer(gated=set())
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    wait_until(lambda: summ.finished == 1, "the background summary")
    boom = RuntimeError("upstream returned 500 (injected)")
    for _ in range(40):
        d.append(*turn(mw_kit, n))
        n += 1
        rec = d.round(
            overflow=lambda call, view, system: boom if view and is_summary_message(view[0]) else False
        )
        if rec["exc"] is not None:
            break
    assert rec["exc"] is boom and rec["update"] is None and d.event is None
    assert [e["phase"] for e in rec["events"]] == ["started", "failed"]
    assert mw.preparations.get("t-1") is not None
    rec = d.round()
    assert completed(rec)["stats"]["prepared"]["status"] == "used" and len(summ.calls) == 1
    check_l2_view(mw_kit, d, rec)


def test_async_agents_prepare_in_a_task_and_a_cancelled_run_leaves_the_state(mw_kit, tmp_path):
    # spec: R10, R11, R14 — async: the summary is prepared in a task of the running loop; a run
    # cancelled while it waits for the preparation emits failed and changes nothing; the next
    # run of the same loop commits it
    summ = GatedSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    h = ModelNodeHarness(mw, thread_id="t-async")

    async def main() -> None:
        n = 0
        while not mw.preparations.keys():
            h.add(*turn(mw_kit, n))
            n += 1
            await h.acall(AIMessage(f"ok {n}", id=f"r{n}"))
        entry = mw.preparations.get("t-async")
        for _ in range(500):  # the task runs on this loop, beside the agent
            if summ.calls:
                break
            await asyncio.sleep(0.01)
        assert summ.calls and summ.calls[0]["async"] and not entry.pending.done()
        while True:  # reach T: the round waits for the gated summary and is cancelled
            h.add(*turn(mw_kit, n))
            n += 1
            before = [m.id for m in h.state["messages"]]
            h.events.clear()
            try:
                await asyncio.wait_for(h.acall(AIMessage(f"ok {n}", id=f"r{n}")), timeout=0.3)
            except TimeoutError:
                break
        assert [m.id for m in h.state["messages"]] == before and "_summarization_event" not in h.state
        phases = [e["phase"] for e in h.events if isinstance(e, dict)]
        assert phases == ["started", "failed"]
        assert mw.preparations.get("t-async") is entry
        summ.gate.set()
        h.events.clear()
        await h.acall(AIMessage("after", id="r-after"))
        done = [e for e in h.events if isinstance(e, dict) and e["phase"] == "completed"][-1]
        assert done["level"] == "L2" and done["stats"]["prepared"]["status"] == "used"
        assert len(summ.calls) == 1

    asyncio.run(main())
    event = h.state["_summarization_event"]
    assert set(FACT.findall(mw_kit.text(event["summary_message"]))) <= {
        f for m in h.state["messages"][: event["cutoff_index"]] for f in FACT.findall(mw_kit.text(m))
    }


def test_a_loop_closed_before_the_summary_is_done_leaves_it_unused(mw_kit, tmp_path):
    # spec: R10, R11 — each round in its own asyncio.run: the loop that started the task closes
    # (its task is cancelled); the next L2 round summarizes itself
    summ = GatedSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [], mode="async", thread_id="t-1")
    _, n = run_until(mw_kit, d, 0, started)
    summ.gate.set()
    rec, n = run_until(mw_kit, d, n, l2)
    info = completed(rec)["stats"]["prepared"]
    assert info["status"] == "discarded" and "Cancelled" in info["reason"]
    assert d.event["summary_error"] is None
    check_l2_view(mw_kit, d, rec)


# --- a real agent loop --------------------------------------------------------------------------


@tool
def lookup(item: str) -> str:
    """Look an item up; returns a few hundred characters about it."""
    return f"FACT-T{item} " + "the record lists its owner, its size and when it last changed. " * 6


class LoopModel(BaseChatModel):
    """The agent's model: asks for ``lookup(<n>)`` until it was called ``steps`` times, then
    answers; records what it received."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    steps: int = 30
    received: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "loop-model"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _reply(self, messages: list) -> ChatResult:
        self.received.append(list(messages))
        n = len(self.received)
        if n % self.steps == 0:
            msg = AIMessage(f"done after {n} calls")
        else:
            call = {"name": "lookup", "args": {"item": str(n)}, "id": f"c{n}", "type": "tool_call"}
            msg = AIMessage(f"FACT-M{n} looking up item {n}", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        time.sleep(0.02)  # the agent's step: a background summary has time to finish
        return self._reply(messages)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        await asyncio.sleep(0.02)
        return self._reply(messages)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_create_agent_commits_prepared_summaries_in_a_live_loop(mw_kit, tmp_path, mode):
    # spec: R9, R10, R11, R14 — create_agent with a checkpointer: the stream carries prepared
    # events, L2 rounds commit prepared summaries, and the checkpoint's view rule holds
    summ = GatedSummarizer(gated=set())
    model = LoopModel()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    agent = create_agent(model=model, tools=[lookup], middleware=[mw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"loop-{mode}"}, "recursion_limit": 200}
    request = {"messages": [HumanMessage("FACT-U0 look up every item", id="u0")]}
    events: list[dict] = []

    def collect(chunks: list) -> None:
        events.extend(c for m, c in chunks if m == "custom" and c.get("type") == "context_compression")

    if mode == "sync":
        collect(list(agent.stream(request, config, stream_mode=["updates", "custom"])))
    else:

        async def run() -> None:
            collect([c async for c in agent.astream(request, config, stream_mode=["updates", "custom"])])

        asyncio.run(run())
    state = agent.get_state(config).values
    l2_done = [e for e in events if e["phase"] == "completed" and e["level"] == "L2"]
    used = [e for e in l2_done if e["stats"].get("prepared", {}).get("status") == "used"]
    assert any(e["phase"] == "prepared" for e in events) and used
    assert all(c["async"] is (mode == "async") for c in summ.calls)
    assert mw.preparations.stats["used"] == len(used)
    # each L2 round either used a prepared summary or called the summarizer itself
    assert len(summ.calls) >= len(l2_done)
    event = state["_summarization_event"]
    last_view = model.received[-1]  # the agent has no system prompt
    assert mw_kit.view_matches(last_view, state["messages"][:-1], event) is None
    assert mw_kit.pairing_problems(last_view, state["messages"]) == []
    facts = set(FACT.findall(mw_kit.text(event["summary_message"])))
    assert facts <= {
        f for m in state["messages"][: event["cutoff_index"]] for f in FACT.findall(mw_kit.text(m))
    }
    assert "FACT-U0" in facts  # the first request survives every round (R10)
    assert any(isinstance(m, ToolMessage) for m in state["messages"])


def test_preparations_are_off_by_default(mw_kit, tmp_path):
    # spec: R3 — without summary_prepare_ratio nothing is prepared and no prepared event appears
    summ = GatedSummarizer(gated=set())
    mw = CompressionMiddleware(
        settings=SETTINGS.replace(summary_prepare_ratio=None),
        backend=mw_kit.backend(tmp_path),
        summarizer=summ,
    )
    d = mw_kit.Driver(mw, [], thread_id="t-1")
    rec, _ = run_until(mw_kit, d, 0, l2)
    assert not any(e["phase"] == "prepared" for r in d.records for e in r["events"])
    assert "prepared" not in completed(rec)["stats"] and mw.preparations.stats["started"] == 0
    assert isinstance(mw.preparations, Preparations)
