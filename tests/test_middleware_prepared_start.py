"""When a prepared summary starts (issue 34, the start rule of ``ctxlab.core.prepare``): only
when the L2 round that would commit it is in reach and can take it.

* Below T the L1 view of a copy tells whether the round at T sends the L1 view (R7); then the
  preparation waits for the L1-only rounds instead of summarizing a span that those rounds
  would outgrow.
* The request a commit is expected to leave at that round — the kept window now, the summary
  (the previous one's size; the first: the empty summary message) and the growth until the
  round (``T − estimate`` below T, ``T2 − L1 estimate`` in an L1-only round) — must be at most
  T2, the limit over which the round refuses it; a fixed part (system prompt, tool schemas) over
  T2 is never prepared: no commit could take it.

Real parts: the middleware through ``ModelNodeHarness`` (a real ``ModelRequest``, the
``Command`` applied as LangGraph's model node applies it), LangChain's ``create_agent`` with a
checkpointer, a real ``FilesystemBackend``, the real background thread.  The summarizer is an
offline fake chat model that repeats the facts it was shown.
"""

from __future__ import annotations

import re
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
#: T = 2048 tokens, T2 = 1638 tokens, preparation from 0.6 T (1228) or 0.6 T2 (983), keep 2
SETTINGS = CompressionSettings(
    summary_threshold=2,
    summary_keep_messages=2,
    summary_l2_trigger_ratio=0.8,
    summary_prepare_ratio=0.6,
    summary_prepare_wait_s=10,
    summary_tool_result_token_limit=40,
)


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


def prepared(rec: dict, status: str) -> list[dict]:
    """The ``prepared`` events of a round with this status (stats and the event's own fields)."""
    return [
        {**e["stats"]["prepared"], "tokens_before": e["tokens_before"], "l2_threshold": e["l2_threshold"]}
        for e in rec["events"]
        if e.get("phase") == "prepared" and e["stats"]["prepared"]["status"] == status
    ]


def completed(rec: dict) -> dict | None:
    done = [e for e in rec["events"] if e.get("phase") == "completed"]
    return done[-1] if done else None


def tool_step(kit: Any, n: int) -> list:
    """One agent step: a tool call and its result of about 300 tokens (L1 keeps ~40 of them)."""
    call = {"name": "lookup", "args": {"item": str(n)}, "id": f"c{n}", "type": "tool_call"}
    return [
        AIMessage(f"FACT-M{n} looking up item {n}", tool_calls=[call], id=f"a{n}"),
        ToolMessage(kit.fill(1200, f"FACT-T{n}", seed=n), tool_call_id=f"c{n}", name="lookup", id=f"t{n}"),
    ]


def test_below_t_it_waits_for_the_l1_only_rounds_and_the_l2_round_commits_it(mw_kit, tmp_path):
    # spec: R3, R7, R8, R9, R11 — tool results L1 shrinks: when the request passes 0.6 T, the L1
    # view plus the growth to T stays under T2, so the round at T sends the L1 view (R7); the
    # preparation starts in an L1-only round, with the growth until the L2 round allowed for
    summ = FactSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [HumanMessage("FACT-U0 look up every item", id="u0")], thread_id="t-1")
    t, t2 = SETTINGS.entry_threshold_tokens, SETTINGS.l2_threshold_tokens
    first_start: dict | None = None
    for n in range(1, 60):
        d.append(*tool_step(mw_kit, n))
        rec = d.round()
        assert rec["exc"] is None, repr(rec["exc"])
        done = completed(rec)
        starts = prepared(rec, "started")
        if done is None:  # below T (R3): the state's messages as they are, and nothing prepared
            assert rec["update"] is None and starts == []
            assert mw_kit.view_matches(rec["calls"][-1]["messages"], rec["state_before"], None) is None
            if rec["events"]:  # only prepared events may appear below T; here none does
                raise AssertionError(rec["events"])
        if starts and first_start is None:
            assert done is not None and done["level"] == "L1"  # an L1-only round started it
            first_start = starts[0]
            est1 = done["tokens_after"]  # the L1 estimate of that round
            assert first_start["tokens_before"] >= t  # the raw request was at T already
            assert first_start["growth_tokens"] == int(t2) - est1 > 0
            # the kept window now + the summary + the growth: at most T2, more than the growth
            assert first_start["growth_tokens"] < first_start["expected_tokens"] <= t2
        if done is not None and done["level"] == "L2":
            break
    else:
        raise AssertionError("no L2 round")
    assert first_start is not None
    # the L2 round commits the prepared span (R11: its end), the request stays under T2
    assert done["stats"]["prepared"]["status"] == "used"
    assert d.event["cutoff_index"] == first_start["cutoff_index"] == done["cutoff_index"]
    assert done["tokens_after"] <= t2
    view = rec["calls"][-1]["messages"]
    assert mw_kit.view_matches(view, rec["state_before"], d.event) is None
    assert mw_kit.pairing_problems(view, rec["state_before"]) == []
    summary = mw_kit.text(d.event["summary_message"])
    covered = {
        f for m in rec["state_before"][: d.event["cutoff_index"]] for f in FACT.findall(mw_kit.text(m))
    }
    assert "FACT-U0" in summary and set(FACT.findall(summary)) <= covered
    assert mw.preparations.stats["started"] == 1 and mw.preparations.stats["used"] == 1
    assert mw.preparations.stats["wasted_calls"] == 0 and summ.calls == 1


@tool
def lookup(item: str) -> str:
    """Look an item up; returns a few hundred characters about it."""
    return f"FACT-T{item} " + "the record lists its owner, its size and when it last changed. " * 6


class LoopModel(BaseChatModel):
    """The agent's model: asks for ``lookup(<n>)`` ``steps`` times, then answers."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    steps: int = 30
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


def test_a_fixed_part_over_t2_is_never_prepared_in_a_live_loop(mw_kit, tmp_path):
    # spec: R8, R9, R10, R11, R14 — create_agent with a checkpointer and a system prompt larger
    # than T2 (than T, as Claude Code's prompt at T = 16k): L2 rounds come when the
    # re-summarize guard lets them, L1-only rounds between them; every commit would leave the request over T2 (the round refuses it), so nothing is
    # prepared; the L2 rounds summarize themselves as without preparation
    summ = FactSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    system = "You are a careful agent. " + mw_kit.fill(10000, "FACT-SYS", seed=7)
    model = LoopModel()
    agent = create_agent(
        model=model, tools=[lookup], system_prompt=system, middleware=[mw], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "fixed-over-t2"}, "recursion_limit": 200}
    request = {"messages": [HumanMessage("FACT-U0 look up every item", id="u0")]}
    chunks = list(agent.stream(request, config, stream_mode=["updates", "custom"]))
    events = [c for m, c in chunks if m == "custom" and c.get("type") == "context_compression"]
    l2_done = [e for e in events if e["phase"] == "completed" and e["level"] == "L2"]
    assert l2_done, "the loop never summarized"
    assert min(e["tokens_before"] for e in events) > SETTINGS.l2_threshold_tokens  # the fixed part
    assert [e for e in events if e["phase"] == "prepared"] == []
    assert all("prepared" not in e["stats"] for e in l2_done)
    assert mw.preparations.stats["started"] == 0
    # every summarizer call is made in a round (none in the background) and counted by its event:
    # the L2 rounds', and a round whose summary was not committed (rejected: it completes as L1)
    completed = [e for e in events if e["phase"] == "completed"]
    assert summ.calls == sum((e["stats"].get("summarizer") or {}).get("calls", 0) for e in completed)
    state = agent.get_state(config).values
    event = state["_summarization_event"]
    last_view = [m for m in model.received[-1] if m.type != "system"]
    assert mw_kit.view_matches(last_view, state["messages"][:-1], event) is None
    assert mw_kit.pairing_problems(last_view, state["messages"]) == []
    assert "FACT-U0" in mw_kit.text(event["summary_message"])  # R10: the request survives
