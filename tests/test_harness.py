"""``ModelNodeHarness`` against a real LangGraph agent.

The same ``CompressionMiddleware`` settings drive two runs of one scripted conversation (two
user turns, tool calls whose large results are offloaded, an L1 round and then L2 rounds):

* a real ``langchain.agents.create_agent`` loop: a langchain_core fake chat model, a real tool,
  an ``InMemorySaver`` checkpointer and a thread id;
* the harness, the test running the tool and adding its result as the tools node would.

Call by call, the messages the model received, the state messages and ``_summarization_event``
after the model node, and the custom stream events must be equal (sync and async).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware.types import AgentMiddleware, ExtendedModelResponse, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.replay import ModelNodeHarness

SYSTEM = "You are a test agent. Look things up, then answer."
THREAD = "thread-harness"
#: T = 1,024 tokens, T2 = 563 tokens; tool results over 200 tokens are offloaded; keep 2 messages
SETTINGS = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=2,
    summary_tool_result_token_limit=200,
    summary_l2_trigger_ratio=0.55,
)


def report(key: str) -> str:
    return "\n".join(
        f"{key} row {i:03d}: value {i * 37 % 101} status {'ok' if i % 4 else 'late'}" for i in range(80)
    )


@tool
def lookup(key: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Look up the report of a key."""
    # an explicit id: add_messages would give the result a random one
    return ToolMessage(
        content=report(key), tool_call_id=tool_call_id, name="lookup", id=f"tool-{tool_call_id}"
    )


class FakeToolModel(GenericFakeChatModel):
    """langchain_core's fake chat model that takes tools and records every prompt it gets."""

    seen: list[list[BaseMessage]]

    def __init__(self, script: list[AIMessage]) -> None:
        super().__init__(messages=iter(script), seen=[], profile={"max_input_tokens": 100_000})

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append([m.model_copy(deep=True) for m in messages])
        return super()._generate(messages, *args, **kwargs)


def thought(i: int) -> str:
    return f"Step {i}: " + " ".join(f"the figures for part {i}.{k} look consistent" for k in range(12))


def lookup_call(i: int) -> AIMessage:
    tc = {"name": "lookup", "args": {"key": f"key-{i}"}, "id": f"call-{i}", "type": "tool_call"}
    return AIMessage(content=thought(i), id=f"ai-{i}", tool_calls=[tc])


TURNS = [
    (HumanMessage("Collect the reports of keys 1 to 4 and compare them. " * 3, id="user-1"), [1, 2, 3, 4]),
    (HumanMessage("Now keys 5 and 6, then one line of conclusion.", id="user-2"), [5, 6]),
]


def script() -> list[AIMessage]:
    out: list[AIMessage] = []
    for n, (_, keys) in enumerate(TURNS):
        out += [lookup_call(i) for i in keys]
        out.append(AIMessage(f"Turn {n + 1} done.", id=f"ai-final-{n + 1}"))
    return out


def middleware(tmp_path: Any, name: str) -> CompressionMiddleware:
    from deepagents.backends import FilesystemBackend

    root = tmp_path / name
    root.mkdir()
    return CompressionMiddleware(
        settings=SETTINGS,
        backend=FilesystemBackend(root_dir=str(root), virtual_mode=True),
        summarizer=StructuredSummarizer(),
    )


def snapshot(values: dict[str, Any]) -> tuple[list[BaseMessage], Any]:
    return list(values["messages"]), values.get("_summarization_event")


def model_steps(agent: Any, config: Any) -> list[tuple[list[BaseMessage], Any]]:
    """The checkpoints written right after each model node, oldest first."""
    history = list(reversed(list(agent.get_state_history(config))))
    out = []
    for before, after in itertools.pairwise(history):
        if before.next == ("model",) and after.metadata.get("source") == "loop":
            out.append(snapshot(after.values))
    return out


def run_agent(tmp_path: Any, mode: str) -> dict[str, Any]:
    model = FakeToolModel(script())
    agent = create_agent(
        model=model,
        tools=[lookup],
        system_prompt=SYSTEM,
        middleware=[middleware(tmp_path, f"agent-{mode}")],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": THREAD}}
    events: list[Any] = []

    async def astream(inp: Any) -> None:
        async for chunk in agent.astream(inp, config, stream_mode="custom"):
            events.append(chunk)

    for human, _ in TURNS:
        inp = {"messages": [human]}
        if mode == "sync":
            events.extend(agent.stream(inp, config, stream_mode="custom"))
        else:
            asyncio.run(astream(inp))
    return {"seen": model.seen, "steps": model_steps(agent, config), "events": events}


def run_harness(tmp_path: Any, mode: str) -> dict[str, Any]:
    model = FakeToolModel(script())
    harness = ModelNodeHarness(
        middleware(tmp_path, f"harness-{mode}"),
        model=model,
        tools=[lookup],
        system_message=SYSTEM,
        thread_id=THREAD,
    )
    steps = []
    for human, _ in TURNS:
        harness.add(human)
        while True:
            call = harness.call() if mode == "sync" else asyncio.run(harness.acall())
            steps.append(snapshot(harness.state))
            assert call.response is not None
            answer = call.response.result[-1]
            assert isinstance(answer, AIMessage)
            if not answer.tool_calls:
                break
            harness.add(*(lookup.invoke({**tc, "type": "tool_call"}) for tc in answer.tool_calls))
    views = [[v.system, *v.messages] for v in harness.views]
    return {"seen": model.seen, "steps": steps, "events": harness.events, "views": views}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_harness_matches_create_agent_call_by_call(tmp_path, mode):
    agent = run_agent(tmp_path, mode)
    mine = run_harness(tmp_path, mode)

    n_calls = sum(len(keys) + 1 for _, keys in TURNS)
    assert len(agent["seen"]) == len(mine["seen"]) == len(mine["views"]) == n_calls
    for i in range(n_calls):
        assert mine["seen"][i] == agent["seen"][i], f"model call {i}: the prompts differ"
        assert mine["views"][i] == agent["seen"][i], f"model call {i}: the harness view differs"
    assert len(agent["steps"]) == len(mine["steps"]) == n_calls
    for i, ((a_msgs, a_event), (h_msgs, h_event)) in enumerate(
        zip(agent["steps"], mine["steps"], strict=True)
    ):
        assert h_msgs == a_msgs, f"model call {i}: state messages differ"
        assert h_event == a_event, f"model call {i}: _summarization_event differs"
    assert mine["events"] == agent["events"]

    # the history reaches L1 first, then L2 (so both paths were compared)
    levels = [e["level"] for e in agent["events"] if e["phase"] == "completed"]
    assert "L1" in levels and "L2" in levels and levels.index("L1") < levels.index("L2")
    # the thread id reached the middleware through the LangGraph config (R10: history file name)
    event = mine["steps"][-1][1]
    assert event["file_path"].startswith(f"/outputs/conversation_history/{THREAD}-")
    # the model saw the summary instead of the early messages
    assert agent["seen"][-1][1].id == event["summary_message"].id


class _Scripted(AgentMiddleware):
    """before_model drops the first message; wrap_model_call returns a Command with a key and a
    message replacement."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {"messages": [RemoveMessage(id=state["messages"][0].id)]}

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        response = handler(request)
        runtime = request.runtime
        runtime.stream_writer({"seen": len(request.messages)})
        edited = request.messages[0].model_copy(update={"content": "edited"})
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"note": 1, "messages": [edited]})
        )


def test_harness_applies_before_model_then_response_then_command():
    h = ModelNodeHarness(_Scripted(), messages=[HumanMessage("a", id="a"), HumanMessage("b", id="b")])
    call = h.call(AIMessage("answer", id="r"))
    assert [m.id for m in call.views[0].messages] == ["b"]  # before_model's removal came first
    assert [(m.id, m.content) for m in h.state["messages"]] == [("b", "edited"), ("r", "answer")]
    assert h.state["note"] == 1 and call.events == h.events == [{"seen": 1}]
    assert isinstance(call.response, ModelResponse) and call.seconds >= 0


def test_harness_errors_keep_the_before_model_update():
    class Boom(_Scripted):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            raise ValueError("boom")

    h = ModelNodeHarness(Boom(), messages=[HumanMessage("a", id="a"), HumanMessage("b", id="b")])
    with pytest.raises(ValueError, match="boom"):
        h.call(AIMessage("x", id="x"))
    assert [m.id for m in h.state["messages"]] == ["b"]


def test_harness_rejects_what_no_agent_could_use():
    class Bad(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return "text"

    with pytest.raises(TypeError, match="returned str"):
        ModelNodeHarness(Bad(), messages=[HumanMessage("a", id="a")]).call(AIMessage("x"))
    # no answer: the model is invoked, and the default model (the replay placeholder) refuses
    with pytest.raises(RuntimeError, match="placeholder model"):
        ModelNodeHarness(AgentMiddleware(), messages=[HumanMessage("a", id="a")]).call()
