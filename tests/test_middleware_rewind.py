"""Histories that change under the middleware (issue 30, item 1): undo, rewind, edit-and-resend and
``RemoveMessage`` from another component, across a committed L2 summary.

The stored cutoff is resolved from its anchors (``ctxlab.core.messages.resolve_cutoff``): the
last summarized message, the first kept one, and — for a user request — a digest of its content.
When both anchors are gone the event is dropped, so that no message added after the summary is
ever hidden behind a position that no longer means what it meant.

* A property test (hypothesis) over generated histories with undo / rewind / edit /
  ``RemoveMessage`` between rounds: every message added (or edited) after the last summary is in
  the next view, or behind the cutoff of the summary that view's round commits.
* The same operations in a real ``create_agent`` loop with a checkpointer: ``update_state`` with
  ``RemoveMessage`` (undo, rewind), an edit in place and a fork from an earlier checkpoint
  (edit-and-resend), and an agent middleware that removes old messages by returning
  ``RemoveMessage`` from ``before_model``.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ConfigDict, Field

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.messages import resolve_cutoff
from tests.hypothesis_profiles import middleware_props

PROPS = middleware_props(60)


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


# ------------------------------------------------------------------------------------------------
# resolve_cutoff: the rule, case by case
# ------------------------------------------------------------------------------------------------


def msgs(ids: str) -> list:
    """Messages from a compact spec: ``h`` user, ``a`` assistant; ids ``<letter><n>``."""
    out = []
    for token in ids.split():
        cls = HumanMessage if token[0] == "h" else AIMessage
        out.append(cls(f"text of {token}", id=token))
    return out


def event_at(state: list, cut: int) -> dict:
    from ctxlab.core.cutoff import summarization_event

    return dict(summarization_event(state, cut, HumanMessage("S", id="s"), None, None))


def test_undo_of_the_summarized_turn_drops_the_event():
    # the case: the last summarized message and everything after it are removed, a new
    # request follows; trusting the position would hide the new request behind the summary
    state = msgs("h0 a0 h1 a1 h2 a2")
    event = event_at(state, 4)  # summarized h0 a0 h1 a1; kept h2 a2
    undone = [*msgs("h0 a0 h1"), HumanMessage("the new request", id="new")]
    assert event["cutoff_index"] == len(undone)  # the old position would point past "new"
    assert resolve_cutoff(undone, event) is None


def test_undo_of_the_kept_turn_keeps_the_summary():
    state = msgs("h0 a0 h1 a1 h2 a2")
    event = event_at(state, 4)
    undone = [*msgs("h0 a0 h1 a1"), HumanMessage("again", id="new")]
    assert resolve_cutoff(undone, event) == 4


def test_an_edited_summarized_request_is_sent_again():
    # an edit in place (same id, new content) of the last summarized user request, everything
    # after it removed: the request is sent after the summary, not hidden by it
    state = msgs("h0 a0 h1 a1 h2")
    event = event_at(state, 3)  # last summarized: h1 (a user request: its digest is recorded)
    assert event["last_summarized_digest"] is not None
    edited = [*msgs("h0 a0"), HumanMessage("text of h1, edited", id="h1")]
    assert resolve_cutoff(edited, event) == 2
    assert resolve_cutoff([*msgs("h0 a0 h1")], event) == 3  # unedited: behind the cutoff


def test_pruned_summarized_messages_follow_the_anchors():
    # older rules, unchanged: a component removed summarized messages
    state = msgs("h0 a0 h1 a1 h2 a2")
    event = event_at(state, 4)
    assert resolve_cutoff(msgs("h1 a1 h2 a2"), event) == 2  # the last summarized one is there
    assert resolve_cutoff(msgs("h0 a0 h2 a2"), event) == 2  # only the first kept one is
    # an event without anchors (from before anchors): the position, clamped
    assert resolve_cutoff(msgs("h0 a0"), {"cutoff_index": 4, "summary_message": HumanMessage("S")}) == 2


# ------------------------------------------------------------------------------------------------
# the property over generated histories
# ------------------------------------------------------------------------------------------------


class History:
    """Builds turns with unique ids and ``FACT-R<n>`` markers, and edits a Driver's state the way
    a host does: undo, rewind, edit-and-resend, RemoveMessage of old messages."""

    def __init__(self, kit) -> None:
        self.kit = kit
        self.n = 0

    def next_id(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"

    def turn(self, size: int, tools: int) -> list:
        kit = self.kit
        hid = self.next_id("h")
        out: list = [HumanMessage(kit.fill(size, f"FACT-R{self.n} request", seed=self.n), id=hid)]
        for _ in range(tools):
            cid = self.next_id("c")
            out.append(
                AIMessage(
                    "", id=self.next_id("a"), tool_calls=[{"name": "grep", "args": {"q": cid}, "id": cid}]
                )
            )
            out.append(
                ToolMessage(
                    kit.fill(size * 2, f"FACT-R{self.n} result", seed=self.n),
                    tool_call_id=cid,
                    name="grep",
                    id=self.next_id("t"),
                )
            )
        out.append(
            AIMessage(kit.fill(size // 2, f"FACT-R{self.n} answer", seed=self.n), id=self.next_id("a"))
        )
        return out


ops_st = st.lists(
    st.tuples(
        st.sampled_from(["append", "undo", "rewind", "prune", "edit", "remove_some"]),
        st.integers(min_value=0, max_value=10_000),  # where
        st.integers(min_value=1, max_value=3),  # how many turns / tools
    ),
    min_size=3,
    max_size=8,
)


def apply(op, where, k, d, hist: History, size: int) -> None:
    """Change ``d``'s state as a host would between two model calls."""
    state = d.state["messages"]
    humans = [i for i, m in enumerate(state) if isinstance(m, HumanMessage)]
    if op == "append" or not state or (op in ("rewind", "edit") and not humans):
        d.append(*hist.turn(size, k - 1))
        return
    if op == "undo":  # remove the last k turns' worth of messages, then ask again
        drop = min(len(state) - 1, 3 * k)
        d.state["messages"] = state[: len(state) - drop]
        d.append(*hist.turn(size, 0)[:1])
    elif op == "rewind":  # back to before a user request, then a new one
        i = humans[where % len(humans)]
        d.state["messages"] = state[:i]
        d.append(*hist.turn(size, 0)[:1])
    elif op == "edit":  # edit a user request in place (same id), drop what followed, resend it
        i = humans[where % len(humans)]
        edited = state[i].model_copy(
            update={"content": f"FACT-EDIT{hist.next_id('e')} " + d.mw_kit.fill(size, seed=i)}
        )
        d.state["messages"] = [*state[:i], edited]
    elif op == "prune":  # another middleware: RemoveMessage for the oldest messages
        d.state["messages"] = state[min(len(state) - 1, where % max(1, len(state) // 2) + 1) :]
    elif op == "remove_some":  # another middleware: RemoveMessage for some messages, not the last
        gone = {m.id for j, m in enumerate(state[:-1]) if (j * 7 + where) % 5 == 0}
        d.state["messages"] = [m for m in state if m.id not in gone]


@PROPS
@given(
    ops=ops_st,
    keep=st.integers(min_value=0, max_value=4),
    threshold=st.sampled_from([0.5, 1.0]),
    size=st.sampled_from([300, 700, 1200]),
    mode=st.sampled_from(["sync", "async"]),
)
def test_every_message_added_after_the_last_summary_is_in_the_next_view(
    mw_kit, ops, keep, threshold, size, mode
):
    # spec: R11 — whatever a host did to the history between rounds, a message added (or edited)
    # after the last committed summary is in the next view, unless that very round summarizes it
    hist = History(mw_kit)
    settings_ = CompressionSettings(
        summary_threshold=threshold,
        summary_keep_messages=keep,
        summary_tool_result_token_limit=150,
        summary_l2_trigger_ratio=0.5,
    )
    with tempfile.TemporaryDirectory() as root:
        mw = CompressionMiddleware(
            settings=settings_, backend=mw_kit.backend(root), summarizer=mw_kit.FakeSummarizer()
        )
        initial = [m for _ in range(3) for m in hist.turn(size, 1)]
        d = mw_kit.Driver(mw, initial, mode=mode)
        d.mw_kit = mw_kit
        # what the state held when the current summary was committed: id -> content
        at_commit: dict[str, Any] | None = None
        for r, (op, where, k) in enumerate([("append", 0, 1), *ops]):
            if r:
                apply(op, where, k, d, hist, size)
            state = list(d.state["messages"])
            new = [
                m.id
                for m in state
                if at_commit is not None and (m.id not in at_commit or at_commit[m.id] != m.content)
            ]
            rec = d.round()
            assert rec["exc"] is None, repr(rec["exc"])
            view_ids = {m.id for m in rec["calls"][-1]["messages"]}
            committed = (rec["update"] or {}).get("_summarization_event")
            behind = {m.id for m in state[: committed["cutoff_index"]]} if committed else set()
            hidden = [i for i in new if i not in view_ids and i not in behind]
            assert hidden == [], (
                op,
                hidden,
                [m.id for m in state],
                d.state.get("_summarization_event", {}).get("cutoff_index"),
            )
            # no tool result is sent without its call (an orphan becomes an observation), except
            # below T (spec: R3, the effective messages as they are): a result whose call the host
            # removed from the state goes as it is; one whose call ctxlab summarized never does
            view = rec["calls"][-1]["messages"]
            _counts, orphans = mw_kit_positional(view)
            if orphans:
                assert not mw_kit.ctx_events(rec), orphans  # no round: below T
                issued = {tc["id"] for m in state if isinstance(m, AIMessage) for tc in m.tool_calls}
                assert all(view[i].tool_call_id not in issued for i in orphans)
            if committed:
                at_commit = {m.id: m.content for m in state}


def mw_kit_positional(view):
    issued: set = set()
    orphans = []
    for i, m in enumerate(view):
        if isinstance(m, AIMessage):
            issued.update(tc["id"] for tc in m.tool_calls)
        elif isinstance(m, ToolMessage) and m.tool_call_id not in issued:
            orphans.append(i)
    return None, orphans


# ------------------------------------------------------------------------------------------------
# a real create_agent loop with a checkpointer
# ------------------------------------------------------------------------------------------------


class Recorder(BaseChatModel):
    """Answers every request with ``reply <n>: <the last user request's first words>`` and records
    each message list it receives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    received: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.received.append(list(messages))
        last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        words = " ".join(str(last.content).split()[:2])
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(f"reply {len(self.received)}: {words}"))]
        )


SETTINGS = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=2,
    summary_tool_result_token_limit=200,
    summary_l2_trigger_ratio=0.5,
)


def run(agent, inputs, config, mode):
    return agent.invoke(inputs, config) if mode == "sync" else asyncio.run(agent.ainvoke(inputs, config))


def make_agent(kit, tmp_path, *extra: AgentMiddleware):
    model = Recorder()
    mw = CompressionMiddleware(
        settings=SETTINGS, backend=kit.backend(tmp_path), summarizer=kit.FakeSummarizer()
    )
    agent = create_agent(model=model, tools=[], middleware=[*extra, mw], checkpointer=InMemorySaver())
    return agent, model


def summarized_thread(kit, agent, config, mode, turns: int = 6):
    """Run ``turns`` user requests of ~400 tokens: the thread gets an L2 summary."""
    for i in range(turns):
        run(
            agent,
            {"messages": [HumanMessage(kit.fill(1600, f"FACT-T{i} request", seed=i), id=f"u{i}")]},
            config,
            mode,
        )
    event = agent.get_state(config).values.get("_summarization_event")
    assert event is not None and event["cutoff_index"] > 2
    return event


def sees(model, text: str) -> bool:
    return any(text in str(m.content) for m in model.received[-1])


def test_undo_across_a_summary_in_a_real_agent(mw_kit, tmp_path, mode):
    # spec: R11 — the host undoes the turns back to before the last summarized message
    # (RemoveMessage per id, both anchors gone) and the user asks something new: the model sees it
    agent, model = make_agent(mw_kit, tmp_path)
    config = {"configurable": {"thread_id": "undo"}}
    event = summarized_thread(mw_kit, agent, config, mode)
    state = agent.get_state(config).values["messages"]
    cut = event["cutoff_index"]
    agent.update_state(config, {"messages": [RemoveMessage(id=m.id) for m in state[cut - 1 :]]})
    run(
        agent, {"messages": [HumanMessage("FACT-NEW after the undo, list the files", id="new")]}, config, mode
    )
    assert sees(model, "FACT-NEW after the undo")
    assert model.received[-1][-1].id == "new"


def test_rewind_to_an_earlier_request_in_a_real_agent(mw_kit, tmp_path, mode):
    # spec: R11 — a rewind to before the second request (deep inside the summarized part)
    agent, model = make_agent(mw_kit, tmp_path)
    config = {"configurable": {"thread_id": "rewind"}}
    summarized_thread(mw_kit, agent, config, mode)
    state = agent.get_state(config).values["messages"]
    i = next(j for j, m in enumerate(state) if m.id == "u1")
    agent.update_state(config, {"messages": [RemoveMessage(id=m.id) for m in state[i:]]})
    run(agent, {"messages": [HumanMessage("FACT-REWOUND start over from here", id="again")]}, config, mode)
    assert sees(model, "FACT-REWOUND") and sees(model, "FACT-T0")
    # nothing of the undone turns reaches the model (the stale summary is dropped)
    assert not any(sees(model, f"FACT-T{k}") for k in range(2, 6))


def test_edit_and_resend_in_place_in_a_real_agent(mw_kit, tmp_path, mode):
    # spec: R11 — the user edits the last summarized request (same id, new content) and the
    # answers after it are removed; the edited request is what the model answers
    agent, model = make_agent(mw_kit, tmp_path)
    config = {"configurable": {"thread_id": "edit"}}
    event = summarized_thread(mw_kit, agent, config, mode)
    state = agent.get_state(config).values["messages"]
    last = event["last_summarized_id"]
    i = next(j for j, m in enumerate(state) if m.id == last)
    if not isinstance(state[i], HumanMessage):  # edit the last summarized *request*
        i = max(j for j in range(i + 1) if isinstance(state[j], HumanMessage))
    edited = HumanMessage("FACT-EDITED please do it the other way", id=state[i].id)
    agent.update_state(config, {"messages": [edited, *[RemoveMessage(id=m.id) for m in state[i + 1 :]]]})
    run(agent, {"messages": []}, config, mode)
    assert sees(model, "FACT-EDITED")
    assert model.received[-1][-1].content == "FACT-EDITED please do it the other way"


def test_edit_and_resend_from_an_earlier_checkpoint_in_a_real_agent(mw_kit, tmp_path, mode):
    # spec: R11 — a fork from the checkpoint before a summarized request: that checkpoint's own
    # event goes with it, and the edited request is seen
    agent, model = make_agent(mw_kit, tmp_path)
    config = {"configurable": {"thread_id": "fork"}}
    summarized_thread(mw_kit, agent, config, mode)
    before = next(
        s
        for s in agent.get_state_history(config)
        if "u3" in (ids := [m.id for m in s.values.get("messages", [])]) and "u4" not in ids and not s.next
    )
    run(agent, {"messages": [HumanMessage("FACT-FORKED instead of u4", id="fork-u4")]}, before.config, mode)
    assert sees(model, "FACT-FORKED")


class PruneOldest(AgentMiddleware):
    """Another middleware: before a model call, once the thread holds more than ``limit``
    messages, removes (``RemoveMessage``) its ``drop`` oldest ones; records the messages left."""

    def __init__(self, limit: int, drop: int) -> None:
        super().__init__()
        self.limit, self.drop = limit, drop
        self.left: list = []

    def before_model(self, state, runtime):
        messages = state["messages"]
        if len(messages) <= self.limit:
            self.left.append(list(messages))
            return None
        self.left.append(list(messages[self.drop :]))
        return {"messages": [RemoveMessage(id=m.id) for m in messages[: self.drop]]}

    async def abefore_model(self, state, runtime):
        return self.before_model(state, runtime)


def test_remove_message_from_another_middleware_in_a_real_agent(mw_kit, tmp_path, mode):
    # spec: R11 — a pruning middleware removes the oldest messages, the summary's two anchors
    # among them, and leaves more messages than the stored cutoff: every message it left is in
    # what the model receives or in a history file (summarized); none is hidden behind a position
    # that no longer means what it meant
    pruner = PruneOldest(limit=10_000, drop=0)
    agent, model = make_agent(mw_kit, tmp_path, pruner)
    config = {"configurable": {"thread_id": "prune"}}
    event = summarized_thread(mw_kit, agent, config, mode, turns=4)
    cut = event["cutoff_index"]
    short = 0
    while len(agent.get_state(config).values["messages"]) < 2 * cut + 2:  # small turns: no new summary
        run(agent, {"messages": [HumanMessage(f"FACT-S{short} ok", id=f"s{short}")]}, config, mode)
        short += 1
    assert agent.get_state(config).values["_summarization_event"]["cutoff_index"] == cut
    pruner.limit, pruner.drop = 2 * cut + 1, cut + 1  # the next call: both anchors go
    for i in range(3):
        run(agent, {"messages": [HumanMessage(f"FACT-Q{i} and now?", id=f"q{i}")]}, config, mode)
        seen = {m.id for m in model.received[-1]}
        history = "\n".join(
            v for k, v in mw_kit.files(tmp_path).items() if k.startswith("outputs/conversation_history/")
        )
        for m in pruner.left[-1]:
            assert m.id in seen or str(m.content) in history, (i, m.id, str(m.content)[:30])
        assert model.received[-1][-1].id == f"q{i}"
