"""A prepared summary whose commit leaves the request over T2 (issue 34, rule 3 of
``docs/middleware.md``, "Prepared summaries"; ``ctxlab.core.prepare.over_t2_refusal``).

The issue's rule: over T2 the round falls back to its synchronous path.  Its intent is that a
prepared commit never sends a request the synchronous round would have got under T2; it is
kept where that is possible, and reconciled where it is not:

* the synchronous round's least request — its kept window and an empty summary message
  (``sync_floor``, known without the summarizer) — over T2 as well: the commit is taken when
  its request is at most T (and the model's capacity), so the round does not stall for a
  summary that could not do better;
* the synchronous round able to get under T2: the commit over T2 is refused and the round
  summarizes itself, as before.

Real parts: LangChain's ``create_agent`` with a checkpointer and a real ``FilesystemBackend``
(the history files), the middleware through ``ModelNodeHarness`` (a real ``ModelRequest``, the
``Command`` applied as LangGraph's model node applies it), the real background thread.  The
summarizer is an offline fake chat model that repeats the facts it was shown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ConfigDict, Field

from ctxlab import CompressionMiddleware, CompressionSettings

FACT = re.compile(r"FACT-[A-Z0-9]+")
#: T = 4096 tokens, T2 = 1638 tokens, preparation from 0.8 T (3277), keep 6 messages; L1 leaves
#: tool results of up to 2000 tokens as they are
SETTINGS = CompressionSettings(
    summary_threshold=4,
    summary_keep_messages=6,
    summary_l2_trigger_ratio=0.4,
    summary_prepare_ratio=0.8,
    summary_prepare_wait_s=10,
    summary_tool_result_token_limit=2000,
)
T, T2 = SETTINGS.entry_threshold_tokens, SETTINGS.l2_threshold_tokens
#: the characters of one tool result (about 850 tokens)
N_CHARS = 3400


class FactSummarizer(BaseChatModel):
    """A summarizer model that repeats every ``FACT-…`` marker it was shown; counts its calls."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "fact-summarizer"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        facts = list(dict.fromkeys(FACT.findall("\n".join(str(m.content) for m in messages))))
        reply = AIMessage(f"SUMMARY-{self.calls}: " + " ".join(facts))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _record(item: str) -> str:
    line = f"item {item}: the record lists its owner, its size and when it last changed. "
    return f"FACT-T{item} " + (line * 60)[:N_CHARS]


@tool
def lookup(item: str) -> str:
    """Look an item up; returns its record (about 850 tokens)."""
    return _record(item)


class LoopModel(BaseChatModel):
    """The agent's model: asks for ``lookup(<n>)`` ``steps`` times, then answers."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    steps: int = 40
    received: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "loop-model"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.received.append(list(messages))
        n = len(self.received)
        if n >= self.steps:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(f"done after {n} calls"))])
        call = {"name": "lookup", "args": {"item": str(n)}, "id": f"c{n}", "type": "tool_call"}
        msg = AIMessage(f"FACT-M{n} looking up item {n}", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=msg)])


def test_a_kept_window_over_t2_for_the_synchronous_round_too_commits_the_prepared_summary(mw_kit, tmp_path):
    # spec: R8, R9, R10, R11 — the six messages every L2 round keeps hold ~2,600 tokens, over T2
    # (1,638): no L2 round of this loop can get under T2, prepared or not.  The T2
    # fallback would make each of them wait for the summarizer for nothing; reconciled, the
    # round commits the prepared summary (its request over T2, at most T) without calling the
    # summarizer, and every invariant of a synchronous round holds
    summ = FactSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    model = LoopModel()
    agent = create_agent(
        model=model,
        tools=[lookup],
        system_prompt="You are a careful agent.",
        middleware=[mw],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "kept-over-t2"}, "recursion_limit": 200}
    request = {"messages": [HumanMessage("FACT-U0 look up every item", id="u0")]}
    chunks = list(agent.stream(request, config, stream_mode=["updates", "custom"]))
    events = [c for m, c in chunks if m == "custom" and c.get("type") == "context_compression"]
    l2 = [e for e in events if e["phase"] == "completed" and e["level"] == "L2"]
    starts = [
        e["stats"]["prepared"]
        for e in events
        if e["phase"] == "prepared" and e["stats"]["prepared"]["status"] == "started"
    ]
    used = [e for e in l2 if e["stats"].get("prepared", {}).get("status") == "used"]
    assert len(used) >= 3, [e["stats"].get("prepared") for e in l2]
    # started on the prediction that the synchronous round cannot get under T2 either
    assert all(p["expected_tokens"] <= T for p in starts)
    assert all(p["sync_floor_tokens"] > T2 for p in starts if p["expected_tokens"] > T2)
    for e in used:
        p = e["stats"]["prepared"]
        # the synchronous round's least request was over T2; the one sent is over T2, at most T
        assert p["sync_floor_tokens"] > T2 and T2 < e["tokens_after"] <= T
        assert p["cutoff_index"] == e["cutoff_index"] < p["sync_cutoff_index"]
        assert e["stats"]["summarizer"]["calls"] == 1  # the background call, accounted here (R16)
    # the rounds that used one called no summarizer themselves: every call is either a
    # preparation's (in the background) or an L2 round's that had none to use
    sync_rounds = [e for e in l2 if e["stats"].get("prepared", {}).get("status") != "used"]
    assert summ.calls == mw.preparations.stats["started"] + len(sync_rounds)
    assert mw.preparations.stats["used"] == len(used)
    # R11: cumulative, increasing cutoffs
    cuts = [e["cutoff_index"] for e in l2]
    assert cuts == sorted(set(cuts))
    # the checkpoint: the last view is the summary + the state suffix, pairs intact (R9)
    state = agent.get_state(config).values
    event = state["_summarization_event"]
    last_view = [m for m in model.received[-1] if m.type != "system"]
    assert mw_kit.view_matches(last_view, state["messages"][:-1], event) is None
    assert mw_kit.pairing_problems(last_view, state["messages"]) == []
    # R10: the summary folds the earlier ones (the request survives) and names its history
    # file, written through the backend by the round that committed it
    summary = mw_kit.text(event["summary_message"])
    assert "FACT-U0" in summary and event["file_path"] in summary
    written = Path(tmp_path, event["file_path"].lstrip("/")).read_text(encoding="utf-8")
    start = l2[-2]["cutoff_index"] if len(l2) > 1 else 0
    span_facts = {
        f for m in state["messages"][start : event["cutoff_index"]] for f in FACT.findall(mw_kit.text(m))
    }
    assert span_facts and span_facts <= set(FACT.findall(written))


def tool_step(kit: Any, n: int, chars: int) -> list:
    """One agent step: a tool call and its result of ``chars`` characters (L1 keeps it whole)."""
    call = {"name": "lookup", "args": {"item": str(n)}, "id": f"c{n}", "type": "tool_call"}
    return [
        AIMessage(f"FACT-M{n} looking up item {n}", tool_calls=[call], id=f"a{n}"),
        ToolMessage(kit.fill(chars, f"FACT-T{n}", seed=n), tool_call_id=f"c{n}", name="lookup", id=f"t{n}"),
    ]


def test_a_commit_over_t2_where_the_synchronous_round_gets_under_it_falls_back(mw_kit, tmp_path):
    # spec: R8, R9, R10, R11 — the T2 fallback, kept: a preparation starts with a
    # commit expected under T2; then one step brings a long answer and two short messages.  The
    # prepared commit would keep the long answer (over T2), the synchronous cutoff keeps only
    # the short messages (under T2): the round refuses the prepared summary and summarizes
    # itself
    settings = CompressionSettings(
        summary_threshold=4,
        summary_keep_messages=2,
        summary_l2_trigger_ratio=0.4,
        summary_prepare_ratio=0.8,
        summary_prepare_wait_s=10,
        summary_tool_result_token_limit=2000,
    )
    summ = FactSummarizer()
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [HumanMessage("FACT-U0 look up every item", id="u0")], thread_id="t-fallback")
    start: dict | None = None
    for n in range(1, 40):
        d.append(*tool_step(mw_kit, n, 1400))
        rec = d.round()
        assert rec["exc"] is None, repr(rec["exc"])
        starts = [e["stats"]["prepared"] for e in rec["events"] if e.get("phase") == "prepared"]
        assert not [e for e in rec["events"] if e.get("phase") == "completed"], "T reached too early"
        if starts:
            start = starts[0]
            break
    assert start is not None and start["status"] == "started"
    assert start["expected_tokens"] <= T2 and "sync_floor_tokens" not in start  # the usual branch
    # the long answer (~1,900 tokens) and two short messages after it, then the round at T
    long_answer = AIMessage("FACT-LONG " + mw_kit.fill(7600, seed=99), id="long")
    d.append(long_answer, HumanMessage("FACT-U1 and now the last one", id="u1"))
    d.append(*tool_step(mw_kit, 99, 200))
    rec = d.round()
    assert rec["exc"] is None, repr(rec["exc"])
    done = [e for e in rec["events"] if e.get("phase") == "completed"][-1]
    assert done["level"] == "L2"
    info = done["stats"]["prepared"]
    assert info["status"] == "discarded" and info["cutoff_index"] == start["cutoff_index"]
    assert "the synchronous round can get under T2" in info["reason"]
    assert info["wasted"]["calls"] == 1  # the prepared summary was made for nothing
    # the round summarized itself: its own cutoff (keep 2), a request under T2
    assert summ.calls == 2 and done["stats"]["summarizer"]["calls"] == 1
    assert d.event["cutoff_index"] == done["cutoff_index"] == len(rec["state_before"]) - 2
    assert done["tokens_after"] <= T2
    view = rec["calls"][-1]["messages"]
    assert mw_kit.view_matches(view, rec["state_before"], d.event) is None
    assert mw_kit.pairing_problems(view, rec["state_before"]) == []
    assert "FACT-LONG" in mw_kit.text(d.event["summary_message"])
    assert mw.preparations.stats["used"] == 0 and mw.preparations.stats["discarded"] == 1
