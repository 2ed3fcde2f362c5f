"""End to end: CompressionMiddleware inside real agents.

* ``langchain.agents.create_agent`` with a scripted tool-calling fake model, real tools whose
  output is large (a real source file of the installed langchain package; a deterministic
  20,000-character report), a real ``FilesystemBackend`` and a SQLite checkpointer, streamed with
  ``stream_mode=["updates", "custom"]``; then a second agent instance continues the thread from
  the checkpoint and must see the rebuilt effective context (R11);
* the same with ``AsyncSqliteSaver`` and ``astream``;
* ``deepagents.create_deep_agent`` with the built-in summarization replaced (R17 and the
  DeepAgents assembly).

Only the LLMs are fakes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import langchain
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ctxlab import CompressionMiddleware, CompressionSettings

PKG = Path(langchain.__file__).parent
SOURCE = "agents/middleware/summarization.py"
SYSTEM = "You are a test agent. Use the tools, then answer briefly."
#: T = 2048 tokens, T2 = 819 tokens, tool results over 300 tokens offloaded, keep 2
SETTINGS = CompressionSettings(
    summary_threshold=2,
    summary_keep_messages=2,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.4,
)


@tool
def read_source(module_path: str) -> str:
    """Read a source file of the installed langchain package (path relative to the package)."""
    return (PKG / module_path).read_text(encoding="utf-8")


def report_text(topic: str) -> str:
    lines = []
    i = 0
    while sum(len(x) + 1 for x in lines) < 20000:
        status = "ok" if i % 5 else "retry"
        lines.append(
            f"[{topic}] line {i:05d}: step {i % 7} finished with status {status}; elapsed {i * 37 % 1000} ms"
        )
        i += 1
    return "\n".join(lines)[:20000]


@tool
def build_report(topic: str) -> str:
    """Generate a deterministic 20,000-character status report on a topic."""
    return report_text(topic)


def call(name, args, cid):
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def script():
    return [
        call("read_source", {"module_path": SOURCE}, "call-1"),
        call("build_report", {"topic": "alpha"}, "call-2"),
        call("build_report", {"topic": "beta"}, "call-3"),
        call("build_report", {"topic": "gamma"}, "call-4"),
        AIMessage(content="All reports read. FACT-FINAL"),
    ]


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_agent(mw_kit, files_root, checkpointer, model):
    mw = CompressionMiddleware(
        settings=SETTINGS, backend=mw_kit.backend(files_root), summarizer=mw_kit.FakeSummarizer()
    )
    agent = create_agent(
        model=model,
        tools=[read_source, build_report],
        middleware=[mw],
        checkpointer=checkpointer,
        system_prompt=SYSTEM,
    )
    return agent, mw


def check_first_run(mw_kit, files_root, custom, values, model, thread_id):
    # spec: R14/R15 — custom context_compression events arrive, L1 and L2, started/completed
    evs = [e for e in custom if isinstance(e, dict) and e.get("type") == "context_compression"]
    phases = [(e["phase"], e["level"]) for e in evs]
    assert ("started", None) in phases
    assert ("completed", "L1") in phases and ("completed", "L2") in phases
    assert not any(p == "failed" for p, _ in phases)
    l2 = [e for e in evs if e["level"] == "L2"]
    # spec: R11 — the checkpoint holds the latest event; R10 its history file exists
    ev = values["_summarization_event"]
    assert set(ev) >= {"cutoff_index", "summary_message", "file_path"}
    assert ev["cutoff_index"] == l2[-1]["cutoff_index"] and ev["file_path"] == l2[-1]["file_path"]
    assert isinstance(ev["summary_message"], HumanMessage)
    assert "SUMMARY-" in ev["summary_message"].content
    assert "FACT-TASK" in ev["summary_message"].content  # the request survives (verbatim or summarized)
    files = mw_kit.files(files_root)
    hist = ev["file_path"].lstrip("/")
    assert hist.startswith(f"outputs/conversation_history/{thread_id}-") and hist in files
    # spec: R6 — the offload file exists with the full tool output
    source = (PKG / SOURCE).read_text(encoding="utf-8")
    assert files[f"outputs/large_tool_results/read_source-{sha(source)}.txt"] == source
    for topic in ("alpha", "beta", "gamma"):
        text = report_text(topic)
        assert files[f"outputs/large_tool_results/build_report-{sha(text)}.txt"] == text
    # the state keeps every message in full (R6, R11: nothing deleted)
    msgs = values["messages"]
    assert [type(m).__name__ for m in msgs].count("ToolMessage") == 4
    assert (
        next(m for m in msgs if isinstance(m, ToolMessage) and m.tool_call_id == "call-1").content == source
    )
    # what the model saw: the system prompt once, offloaded results, then a summary
    for req in model.received:
        assert isinstance(req[0], SystemMessage) and req[0].content == SYSTEM
        assert not any(isinstance(m, SystemMessage) for m in req[1:])
        assert sum(len(m.content) for m in req if isinstance(m.content, str)) < 30000
    assert any(m.additional_kwargs.get("lc_source") == "summarization" for m in model.received[-1])
    return ev


def check_continuation(values_before, model2):
    # spec: R11 — a new agent instance rebuilds [summary, *state[cutoff:]] from the checkpoint
    ev = values_before["_summarization_event"]
    first = model2.received[0]
    assert isinstance(first[0], SystemMessage)
    view = first[1:]
    assert view[0].id == ev["summary_message"].id and view[0].content == ev["summary_message"].content
    expected = [*values_before["messages"][ev["cutoff_index"] :]]
    assert [m.id for m in view[1:-1]] == [m.id for m in expected]
    assert isinstance(view[-1], HumanMessage) and view[-1].content == "FACT-NEXT and now, one line please"


def test_create_agent_sqlite_stream_and_resume(mw_kit, tmp_path):
    # spec: R6, R10, R11, R14, R15 (check_first_run: events, checkpoint, files); R11 again on resume
    files_root = tmp_path / "files"
    db = tmp_path / "checkpoints.sqlite"
    config = {"configurable": {"thread_id": "thread-e2e"}}
    model = mw_kit.ScriptedModel(script=script(), profile={"max_input_tokens": 200_000})
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        agent, _ = make_agent(mw_kit, files_root, SqliteSaver(conn), model)
        custom, updates = [], []
        for mode, chunk in agent.stream(
            {"messages": [HumanMessage("FACT-TASK read the sources and build three reports")]},
            config,
            stream_mode=["updates", "custom"],
        ):
            (custom if mode == "custom" else updates).append(chunk)
        assert any("model" in u for u in updates) and any("tools" in u for u in updates)
        values = agent.get_state(config).values
        check_first_run(mw_kit, files_root, custom, values, model, "thread-e2e")
        assert model.answered == 5
    finally:
        conn.close()

    # a SECOND agent: new create_agent, new middleware, same sqlite file, same thread
    conn2 = sqlite3.connect(db, check_same_thread=False)
    try:
        model2 = mw_kit.ScriptedModel(script=[AIMessage("continuing")], profile={"max_input_tokens": 200_000})
        agent2, _ = make_agent(mw_kit, files_root, SqliteSaver(conn2), model2)
        before = agent2.get_state(config).values
        assert (
            before["_summarization_event"]["cutoff_index"] == values["_summarization_event"]["cutoff_index"]
        )
        agent2.invoke({"messages": [HumanMessage("FACT-NEXT and now, one line please")]}, config)
        check_continuation(before, model2)
        after = agent2.get_state(config).values
        assert len(after["messages"]) == len(before["messages"]) + 2  # nothing deleted
    finally:
        conn2.close()


async def test_create_agent_async_sqlite_astream_and_resume(mw_kit, tmp_path):
    # spec: R6, R10, R11, R14, R15 through astream (awrap_model_call), as the sync test above
    files_root = tmp_path / "files"
    db = str(tmp_path / "checkpoints.sqlite")
    config = {"configurable": {"thread_id": "thread-async"}}
    model = mw_kit.ScriptedModel(script=script(), profile={"max_input_tokens": 200_000})
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        agent, mw = make_agent(mw_kit, files_root, saver, model)
        summarizer = mw._summarizer
        custom = []
        async for mode, chunk in agent.astream(
            {"messages": [HumanMessage("FACT-TASK read the sources and build three reports")]},
            config,
            stream_mode=["updates", "custom"],
        ):
            if mode == "custom":
                custom.append(chunk)
        values = (await agent.aget_state(config)).values
        check_first_run(mw_kit, files_root, custom, values, model, "thread-async")
        assert summarizer.calls and all(c["async"] for c in summarizer.calls)  # the async driver ran
    async with AsyncSqliteSaver.from_conn_string(db) as saver2:
        model2 = mw_kit.ScriptedModel(script=[AIMessage("continuing")], profile={"max_input_tokens": 200_000})
        agent2, _ = make_agent(mw_kit, files_root, saver2, model2)
        before = (await agent2.aget_state(config)).values
        await agent2.ainvoke({"messages": [HumanMessage("FACT-NEXT and now, one line please")]}, config)
        check_continuation(before, model2)


# ------------------------------------------------------------------------------------------------
# DeepAgents
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def recorded_create_agent(monkeypatch):
    """Records the middleware stacks that ``create_deep_agent`` hands to ``create_agent``."""
    import deepagents.graph as dg

    stacks = []
    real = dg.create_agent

    def spy(*args, **kwargs):
        stacks.append(list(kwargs.get("middleware") or []))
        return real(*args, **kwargs)

    monkeypatch.setattr(dg, "create_agent", spy)
    return stacks


def is_deepagents_summarization(m):
    return type(m).__module__.startswith("deepagents.middleware.summarization")


def test_deep_agent_uses_compression_instead_of_builtin_summarization(
    mw_kit, tmp_path, recorded_create_agent
):
    # spec: R17 + assembly — for_deep_agent replaces DeepAgents' SummarizationMiddleware by name;
    # files land in the deep agent's own backend
    from deepagents import create_deep_agent

    backend = mw_kit.backend(tmp_path)
    model = mw_kit.ScriptedModel(
        script=[call("build_report", {"topic": "deep"}, "c1"), AIMessage("done")],
        profile={"max_input_tokens": 200_000},
    )
    # the deep agent's tool schemas alone are ~2.5k tokens: T = 4096, T2 = 3277 (L1 suffices)
    settings = SETTINGS.replace(summary_threshold=4, summary_l2_trigger_ratio=0.8)
    mw = CompressionMiddleware.for_deep_agent(
        settings=settings, backend=backend, summarizer=mw_kit.FakeSummarizer()
    )
    assert mw.name == "SummarizationMiddleware"
    conn = sqlite3.connect(tmp_path / "deep.sqlite", check_same_thread=False)
    try:
        agent = create_deep_agent(
            model=model,
            tools=[build_report],
            system_prompt="DEEP-SYSTEM You build reports.",
            middleware=[mw],
            backend=backend,
            checkpointer=SqliteSaver(conn),
        )
        # the main stack: our instance in the summarization slot, DeepAgents' own is gone
        (main,) = recorded_create_agent
        assert any(m is mw for m in main)
        assert [m.name for m in main].count("SummarizationMiddleware") == 1
        assert not any(is_deepagents_summarization(m) for m in main)
        names = [m.name for m in main]
        assert names.index("FilesystemMiddleware") < names.index("SummarizationMiddleware")
        # the general-purpose sub-agent inherits the same instance (shared settings and file scope)
        subagent_mw = next(m for m in main if type(m).__name__ == "SubAgentMiddleware")
        for spec in subagent_mw._subagents:
            stack = spec.get("middleware") or []
            assert any(m is mw for m in stack), spec["name"]
            assert not any(is_deepagents_summarization(m) for m in stack), spec["name"]

        config = {"configurable": {"thread_id": "deep-thread"}}
        custom = []
        for mode, chunk in agent.stream(
            {"messages": [HumanMessage("FACT-TASK build one report")]},
            config,
            stream_mode=["updates", "custom"],
        ):
            if mode == "custom":
                custom.append(chunk)
        evs = [e for e in custom if isinstance(e, dict) and e.get("type") == "context_compression"]
        assert [(e["phase"], e["level"]) for e in evs] == [("started", None), ("completed", "L1")]
        assert evs[0]["tokens_before"] >= settings.entry_threshold_tokens
        text = report_text("deep")
        files = mw_kit.files(tmp_path)
        assert files[f"outputs/large_tool_results/build_report-{sha(text)}.txt"] == text
        # the deep agent can read the offloaded file through its own backend (virtual path)
        path = f"/outputs/large_tool_results/build_report-{sha(text)}.txt"
        assert "[deep] line 00000" in str(backend.read(path))
        assert model.answered == 2
        last = model.received[-1]
        assert isinstance(last[0], SystemMessage) and "DEEP-SYSTEM" in last[0].content
        assert not any("DEEP-SYSTEM" in str(m.content) for m in last[1:])
        tool_msg = next(m for m in last if isinstance(m, ToolMessage))
        assert path in tool_msg.content and len(tool_msg.content) < len(text)
    finally:
        conn.close()


def test_deep_agent_l2_event_is_checkpointed(mw_kit, tmp_path):
    # spec: R11/R17 — inside a deep agent, L2 state goes to the checkpoint and the history file to
    # the deep agent's backend; later model calls see [summary, *state[cutoff:]]
    from deepagents import create_deep_agent

    backend = mw_kit.backend(tmp_path)
    model = mw_kit.ScriptedModel(
        script=[call("build_report", {"topic": f"t{i}"}, f"c{i}") for i in range(4)] + [AIMessage("done")],
        profile={"max_input_tokens": 200_000},
    )
    settings = SETTINGS.replace(summary_threshold=4, summary_l2_trigger_ratio=0.8)
    mw = CompressionMiddleware.for_deep_agent(
        settings=settings, backend=backend, summarizer=mw_kit.FakeSummarizer()
    )
    conn = sqlite3.connect(tmp_path / "deep.sqlite", check_same_thread=False)
    try:
        agent = create_deep_agent(
            model=model,
            tools=[build_report],
            system_prompt="DEEP-SYSTEM You build reports.",
            middleware=[mw],
            backend=backend,
            checkpointer=SqliteSaver(conn),
        )
        config = {"configurable": {"thread_id": "deep-l2"}}
        custom = [
            c
            for mode, c in agent.stream(
                {"messages": [HumanMessage("FACT-TASK build four reports")]},
                config,
                stream_mode=["updates", "custom"],
            )
            if mode == "custom"
        ]
        levels = [
            e["level"] for e in custom if e.get("type") == "context_compression" and e["phase"] == "completed"
        ]
        assert "L1" in levels and "L2" in levels
        values = agent.get_state(config).values
        ev = values["_summarization_event"]
        assert ev["cutoff_index"] > 0 and ev["file_path"].startswith("/outputs/conversation_history/deep-l2-")
        assert "FACT-TASK" in str(backend.read(ev["file_path"]))
        last = model.received[-1]
        assert last[1].id == ev["summary_message"].id
        assert [m.id for m in last[2:]] == [m.id for m in values["messages"][ev["cutoff_index"] : -1]]
    finally:
        conn.close()


def summary_chunks(chunks):
    return [m for m, _meta in chunks if "SUMMARY-" in str(m.content)]


def test_summarizer_output_never_reaches_the_messages_stream(mw_kit, tmp_path):
    # spec: R10 — the summarizer call is tagged TAG_NOSTREAM, so stream_mode="messages" (what a
    # chat front end relays to the user) never carries the summary tokens
    model = mw_kit.ScriptedModel(script=script(), profile={"max_input_tokens": 200_000})
    agent, mw = make_agent(mw_kit, tmp_path, None, model)
    chunks, custom = [], []
    for mode, chunk in agent.stream(
        {"messages": [HumanMessage("FACT-TASK go")]}, stream_mode=["messages", "custom"]
    ):
        (chunks if mode == "messages" else custom).append(chunk)
    assert len(mw._summarizer.calls) >= 1  # L2 ran
    assert any(e["level"] == "L2" for e in custom if e.get("phase") == "completed")
    assert any("FACT-FINAL" in str(m.content) for m, _ in chunks)  # the main model's output is streamed
    assert summary_chunks(chunks) == []


async def test_summarizer_output_never_reaches_the_messages_stream_async(mw_kit, tmp_path):
    # spec: R10 — the same through astream (awrap_model_call)
    model = mw_kit.ScriptedModel(script=script(), profile={"max_input_tokens": 200_000})
    agent, mw = make_agent(mw_kit, tmp_path, None, model)
    chunks = [
        c
        async for mode, c in agent.astream(
            {"messages": [HumanMessage("FACT-TASK go")]}, stream_mode=["messages"]
        )
    ]
    assert mw._summarizer.calls and all(c["async"] for c in mw._summarizer.calls)
    assert any("FACT-FINAL" in str(m.content) for m, _ in chunks)
    assert summary_chunks(chunks) == []
