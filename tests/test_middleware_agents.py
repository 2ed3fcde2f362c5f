"""CompressionMiddleware inside real agent loops: where its files live, who can read them, what the
trigger counts (issue 9, part B: kinds 10, 11, 12).

Real parts: ``langchain.agents.create_agent`` and ``deepagents.create_deep_agent`` with a
checkpointer, DeepAgents' ``StateBackend`` (the thread's files in the checkpointed state) and
``FilesystemBackend``, DeepAgents' own ``read_file`` tool, sub-agents and Skills.  Only the chat
model is a fake: it answers from what it received (it reads the offload path it was shown), and
``bind_tools`` returns itself.  Every test runs ``invoke`` (sync driver) and ``ainvoke`` (async).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ConfigDict, Field

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator

EST = CharClassEstimator()
PATH_RE = re.compile(r"/outputs/large_tool_results/[A-Za-z0-9_-]+-[0-9a-f]{64}\.txt")
#: the deep agent's own tool schemas are ~2.5k tokens: T = 4096, T2 = 3277 (L1 suffices)
DEEP = CompressionSettings(
    summary_threshold=4,
    summary_keep_messages=2,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.8,
)
#: for a plain create_agent: T = 1024, T2 = 1024
PLAIN = DEEP.replace(summary_threshold=1, summary_l2_trigger_ratio=1.0)


def report_text(topic: str) -> str:
    lines, i = [], 0
    while sum(len(x) + 1 for x in lines) < 20000:
        lines.append(f"[{topic}] line {i:05d}: step {i % 7} finished; elapsed {i * 37 % 1000} ms")
        i += 1
    return "\n".join(lines)[:20000]


@tool
def build_report(topic: str) -> str:
    """Generate a deterministic 20,000-character status report on a topic."""
    return report_text(topic)


class ReactiveModel(BaseChatModel):
    """A fake chat model that answers with ``respond(messages)``, records every message list it
    receives, and can fail its ``fail_on``-th call once (a provider 500)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    respond: Any
    received: list = Field(default_factory=list)
    fail_on: int = 0
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "mw-reactive"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        self.received.append(list(messages))
        if self.calls == self.fail_on:
            raise RuntimeError("upstream returned 500 Internal Server Error (injected)")
        return ChatResult(generations=[ChatGeneration(message=self.respond(list(messages)))])


def call(name: str, args: dict, cid: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def reader(read_tool: str, path_arg: str) -> Callable[[list], AIMessage]:
    """Build a report; read the offloaded file the view names with ``read_tool``; then answer."""

    def respond(messages):
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == "build_report":
            found = PATH_RE.search(str(last.content))
            if found is None:
                return AIMessage("no path was shown")
            return call(read_tool, {path_arg: found.group(0)}, "read-1")
        if isinstance(last, ToolMessage) and last.name == read_tool:
            return AIMessage("DONE")
        return call("build_report", {"topic": "deep"}, "build-1")

    return respond


def run(agent, inputs, config, mode):
    if mode == "sync":
        return agent.invoke(inputs, config)
    return asyncio.run(agent.ainvoke(inputs, config))


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


@pytest.fixture(autouse=True)
def no_files_in_cwd(tmp_path, monkeypatch):
    """The local default backend lands in a temporary folder, never in the repository."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CTXLAB_FILES_DIR", str(tmp_path / "ctxlab-files"))


def read_result(values, tool_name):
    return next(m for m in values["messages"] if isinstance(m, ToolMessage) and m.name == tool_name)


# ------------------------------------------------------------------------------------------------
# 10. the file a view names exists in that thread's file scope (StateBackend)
# ------------------------------------------------------------------------------------------------


def paths_named(model):
    return {p for msgs in model.received for m in msgs for p in PATH_RE.findall(str(m.content))}


@pytest.mark.parametrize("scenario", ["second_thread", "failed_step"])
def test_state_backend_file_exists_in_each_threads_scope(mw_kit, mode, scenario):
    # spec: R6, R17 — DeepAgents' StateBackend keeps files in each thread's checkpointed state.
    # second_thread: one middleware (one backend object) serves a second thread with the same tool
    # output; failed_step: the model failed after L1 had written the file, and the user tried again
    # (LangGraph drops the failed step's writes).  Every path a view names is in the thread's files.
    from deepagents import create_deep_agent
    from deepagents.backends import StateBackend

    mw = CompressionMiddleware.for_deep_agent(
        settings=DEEP, backend=StateBackend(), summarizer=mw_kit.FakeSummarizer()
    )
    runs = [("thread-a", 0), ("thread-b", 0)] if scenario == "second_thread" else [("thread-c", 2)]
    for thread, fail_on in runs:
        model = ReactiveModel(respond=reader("read_file", "file_path"), fail_on=fail_on)
        agent = create_deep_agent(
            model=model, tools=[build_report], middleware=[mw], checkpointer=InMemorySaver()
        )
        config = {"configurable": {"thread_id": thread}}
        inputs: Any = {"messages": [HumanMessage("FACT-TASK build the deep report and read it")]}
        if fail_on:
            with pytest.raises(RuntimeError, match="injected"):
                run(agent, inputs, config, mode)
            inputs = {"messages": [HumanMessage("please try again")]}
        values = run(agent, inputs, config, mode)
        named = paths_named(model)
        assert named, thread
        missing = named - set(values.get("files") or {})
        assert not missing, (thread, missing)
        # and the model could read it: DeepAgents' read_file found the full report
        assert "[deep] line 00000" in str(read_result(values, "read_file").content), thread


# ------------------------------------------------------------------------------------------------
# 11. the model can read what it is told to read
# ------------------------------------------------------------------------------------------------


def test_deep_agent_default_backend_is_the_agents_own(mw_kit, mode):
    # spec: R17 — without a backend, for_deep_agent writes where the deep agent reads (DeepAgents'
    # default StateBackend): read_file on the path of the preview returns the full result
    from deepagents import create_deep_agent

    model = ReactiveModel(respond=reader("read_file", "file_path"))
    mw = CompressionMiddleware.for_deep_agent(settings=DEEP, summarizer=mw_kit.FakeSummarizer())
    agent = create_deep_agent(
        model=model, tools=[build_report], middleware=[mw], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "deep-default"}}
    values = run(agent, {"messages": [HumanMessage("FACT-TASK build the report and read it")]}, config, mode)
    result = str(read_result(values, "read_file").content)
    assert "[deep] line 00000" in result and "not found" not in result.lower()
    assert paths_named(model) <= set(values["files"])


def test_sub_agent_reads_what_its_view_names(mw_kit, mode):
    # spec: R17 — a sub-agent shares the middleware and its parent's file scope: the general-purpose
    # sub-agent offloads, reads the file with its own read_file, and the file returns to the parent
    from deepagents import create_deep_agent

    def respond(messages):
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        in_sub = bool(humans) and str(humans[0].content).startswith("SUB:")
        last = messages[-1]
        if not in_sub:
            if isinstance(last, ToolMessage) and last.name == "task":
                return AIMessage("MAIN DONE")
            return call(
                "task",
                {"description": "SUB: build the report and read it", "subagent_type": "general-purpose"},
                "t-1",
            )
        return reader("read_file", "file_path")(messages)

    model = ReactiveModel(respond=respond)
    mw = CompressionMiddleware.for_deep_agent(settings=DEEP, summarizer=mw_kit.FakeSummarizer())
    agent = create_deep_agent(
        model=model, tools=[build_report], middleware=[mw], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "deep-sub"}}
    values = run(agent, {"messages": [HumanMessage("FACT-TASK delegate")]}, config, mode)
    sub_reads = [
        m
        for msgs in model.received
        for m in msgs
        if isinstance(m, ToolMessage) and m.name == "read_file" and m.tool_call_id == "read-1"
    ]
    assert sub_reads, "the sub-agent never read the file"
    assert "[deep] line 00000" in str(sub_reads[-1].content)
    assert paths_named(model) <= set(values.get("files") or {})  # the sub-agent's files came back


def test_create_agent_gets_a_read_tool_for_the_outputs(mw_kit, mode):
    # spec: R6, R17 — a plain create_agent has no file tool: the middleware contributes
    # read_saved_output, which reads through the middleware's own backend
    model = ReactiveModel(respond=reader("read_saved_output", "path"))
    mw = CompressionMiddleware(settings=PLAIN, summarizer=mw_kit.FakeSummarizer())
    assert [t.name for t in mw.tools] == ["read_saved_output"]
    agent = create_agent(model=model, tools=[build_report], middleware=[mw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "plain"}}
    values = run(agent, {"messages": [HumanMessage("FACT-TASK build the report and read it")]}, config, mode)
    result = str(read_result(values, "read_saved_output").content)
    assert "[deep] line 00000" in result and not result.startswith("Error")
    # it reads saved outputs only
    (read_tool,) = mw.tools
    assert read_tool.func is not None
    assert read_tool.func("/etc/passwd", None).startswith("Error")
    assert read_tool.func("/outputs/large_tool_results/../../x.txt", None).startswith("Error")


# ------------------------------------------------------------------------------------------------
# 12. in DeepAgents the estimate counts what the model receives
# ------------------------------------------------------------------------------------------------


def test_deep_agent_estimate_counts_skills_added_after_compression(mw_kit, tmp_path, mode):
    # spec: R16, R3/R4 — Skills (after ctxlab in DeepAgents' stack) add 30 skill descriptions to
    # the system message; the trigger counts the system message the model receives
    from deepagents import create_deep_agent
    from deepagents.backends import FilesystemBackend

    root = tmp_path / "agent-root"
    for i in range(30):
        folder = root / "skills" / f"skill-{i:02d}"
        folder.mkdir(parents=True)
        description = f"Skill {i} " + mw_kit.fill(420, seed=i)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:02d}\ndescription: {description}\n---\n\nDo it.\n"
        )
    backend = FilesystemBackend(root_dir=str(root), virtual_mode=True)
    model = ReactiveModel(respond=lambda messages: AIMessage("hello"))
    mw = CompressionMiddleware.for_deep_agent(
        settings=DEEP, backend=backend, summarizer=mw_kit.FakeSummarizer()
    )
    agent = create_deep_agent(
        model=model, middleware=[mw], backend=backend, skills=["/skills/"], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "skills"}}
    events: list = []
    inputs = {"messages": [HumanMessage("FACT-TASK say hello")]}
    if mode == "sync":
        for kind, chunk in agent.stream(inputs, config, stream_mode=["custom", "updates"]):
            if kind == "custom":
                events.append(chunk)
    else:

        async def collect():
            async for kind, chunk in agent.astream(inputs, config, stream_mode=["custom", "updates"]):
                if kind == "custom":
                    events.append(chunk)

        asyncio.run(collect())
    (sent,) = model.received
    system = sent[0]
    assert isinstance(system, SystemMessage) and "skill-29" in str(system.content)
    skills_tokens = EST.message_tokens(system)
    assert skills_tokens > DEEP.entry_threshold_tokens - 2600  # the skills alone push the request over T
    started = [e for e in events if e.get("type") == "context_compression" and e["phase"] == "started"]
    assert started, "the trigger did not see the system message the model received"
    assert started[0]["tokens_before"] >= skills_tokens


# ------------------------------------------------------------------------------------------------
# s40 trial item 9: settings under which every round summarizes again are said, once
# ------------------------------------------------------------------------------------------------


@tool
def read_log(step: int) -> str:
    """Read the build log of one step."""
    return f"step {step}: compiled src/module_{step}.py\n" * 300


def test_a_fixed_part_above_t2_is_said_once_per_middleware(mode):
    # spec: R8, R9, R16 — DeepAgents' system prompt and tool schemas (never summarized) are above
    # T2 = 0.4 × 4 × 1024: every round's L2 ends above T2 and the next round summarizes again.
    # The old middleware did so on every call without a word; now one warning per instance names
    # the measured fixed part, T2 and what to change
    from deepagents import create_deep_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from ctxlab.core.thrash import SummaryThrashWarning
    from ctxlab.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel.from_turns([tool_call("read_log", step=i) for i in range(1, 9)] + ["done"])
    settings = CompressionSettings(summary_threshold=4, summary_keep_messages=4)
    mw = CompressionMiddleware.for_deep_agent(settings=settings)
    agent = create_deep_agent(model=model, tools=[read_log], middleware=[mw], checkpointer=InMemorySaver())
    with pytest.warns(SummaryThrashWarning) as said:
        run(agent, {"messages": [("user", "Which step failed?")]}, {"configurable": {"thread_id": "t"}}, mode)
    assert model.summary_calls >= 3  # L2 again and again ...
    thrash = [str(w.message) for w in said if issubclass(w.category, SummaryThrashWarning)]
    assert len(thrash) == 1  # ... said once
    found = re.search(
        r"fixed part \(system message and tool schemas, never summarized\) is ([\d,]+) tokens", thrash[0]
    )
    assert found is not None and int(found.group(1).replace(",", "")) > 1638, thrash
    assert "above T2 = 1,638 tokens" in thrash[0]
    assert "Raise summary_threshold (now 4 K) or summary_l2_trigger_ratio (now 0.4)" in thrash[0]


def test_settings_that_get_below_t2_say_nothing(mode):
    # the README's create_agent example: L2 brings the request under T2, no warning
    from ctxlab.core.thrash import SummaryThrashWarning
    from ctxlab.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel.from_turns([tool_call("read_log", step=i) for i in range(1, 9)] + ["done"])
    mw = CompressionMiddleware(settings=CompressionSettings(summary_threshold=4, summary_keep_messages=4))
    agent = create_agent(model, tools=[read_log], middleware=[mw], checkpointer=InMemorySaver())
    import warnings

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        run(agent, {"messages": [("user", "Which step failed?")]}, {"configurable": {"thread_id": "t"}}, mode)
    assert model.summary_calls >= 1  # it did summarize
    assert not [w for w in said if issubclass(w.category, SummaryThrashWarning)]
