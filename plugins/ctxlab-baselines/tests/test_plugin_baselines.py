"""ctxlab-baselines: LangChain's and DeepAgents' summarization as strategies, offline summarizer."""

from __future__ import annotations

from typing import Any

import pytest
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, get_buffer_string
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from ctxlab import CompressionSettings
from ctxlab.replay import make_lab_manager, strategies

pytest.importorskip("ctxlab_baselines")
from ctxlab_baselines import (
    OfflineSummaryModel,
    deepagents_summarization,
    langchain_summarization,
    parse_prompt_messages,
)

SETTINGS = CompressionSettings(summary_threshold=1.0, summary_keep_messages=4)  # T = 1024 tokens


class ScriptedAgentModel(BaseChatModel):
    """Calls ``run_tests`` ``steps`` times, then answers; records every request it receives."""

    steps: int = 6
    seen: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append(list(messages))
        i = len(self.seen)
        if i <= self.steps:
            msg = AIMessage(
                content=f"Running the tests in src/app/module_{i}.py",
                tool_calls=[
                    {"name": "run_tests", "args": {"path": f"src/app/module_{i}.py"}, "id": f"call-{i}"}
                ],
            )
        else:
            msg = AIMessage(content="All tests pass now.")
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def run_tests(path: str) -> str:
    """Run the tests of one file."""
    return f"{path}: 12 passed\n" + ("collected 12 items ... PASSED\n" * 80)


def is_summary(m: Any) -> bool:
    return isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_source") == "summarization"


def test_prompt_messages_round_trip():
    msgs = [
        HumanMessage(content="Fix a<b & c in /src/x.py"),
        AIMessage(
            content="look", tool_calls=[{"name": "bash", "args": {"command": "cat /src/x.py"}, "id": "c1"}]
        ),
        ToolMessage(content="Traceback\nValueError: bad", tool_call_id="c1"),
    ]
    prompt = (
        "Summarize.\n<messages>\nMessages to summarize:\n"
        + get_buffer_string(msgs, format="xml")
        + "\n</messages>"
    )
    parsed = parse_prompt_messages(prompt)
    assert [type(m) for m in parsed] == [HumanMessage, AIMessage, ToolMessage]
    assert parsed[0].content == "Fix a<b & c in /src/x.py"
    assert parsed[1].content == "look"
    assert parsed[1].tool_calls[0]["name"] == "bash" and parsed[1].tool_calls[0]["args"] == {
        "command": "cat /src/x.py"
    }
    assert parsed[2].content == "Traceback\nValueError: bad"
    assert [type(m) for m in parse_prompt_messages("no markup at all")] == [HumanMessage]
    previous = HumanMessage(content="Here is a summary of the conversation to date:\n\nTask: x")
    (parsed_previous,) = parse_prompt_messages(get_buffer_string([previous], format="xml"))
    assert parsed_previous.additional_kwargs == {"lc_source": "summarization"}


def test_offline_model_returns_a_structured_summary():
    msgs = [
        HumanMessage(content="Fix the parser in /src/parser.py"),
        AIMessage(
            content="",
            tool_calls=[{"name": "bash", "args": {"command": "pytest tests/test_parser.py"}, "id": "c"}],
        ),
        ToolMessage(content="FAILED tests/test_parser.py::test_x - KeyError: 'a'", tool_call_id="c"),
    ]
    out = OfflineSummaryModel().invoke(
        "<messages>\n" + get_buffer_string(msgs, format="xml") + "\n</messages>"
    )
    text = out.content
    assert "Task:\nFix the parser in /src/parser.py" in text
    # the command with what its result said (the result pairs with its call in LangChain's buffer)
    assert "/src/parser.py" in text and "- pytest tests/test_parser.py (FAILED" in text
    assert "KeyError: 'a'): failed" in text
    assert OfflineSummaryModel().bind_tools([run_tests]) is not None


def test_langchain_summarization_summarizes_in_a_real_agent():
    model = ScriptedAgentModel()
    agent = create_agent(model=model, tools=[run_tests], middleware=[langchain_summarization(SETTINGS)])
    result = agent.invoke({"messages": [HumanMessage(content="Make the tests in src/app pass.")]})
    summaries = [m for m in result["messages"] if is_summary(m)]
    assert summaries, "LangChain's middleware never summarized"
    assert "Task:" in summaries[-1].content and "Commands run:" in summaries[-1].content
    assert "run_tests: src/app/module_" in summaries[-1].content
    if len(summaries) > 1 or summaries[-1].content.count("Earlier summary:"):
        # a previous summary is carried over, not taken for the task
        assert "Earlier summary:" in summaries[-1].content
    # the model received the summary first once summarization happened, with 4 kept messages at least
    later = [req for req in model.seen if any(is_summary(m) for m in req)]
    assert later and is_summary(next(m for m in later[0] if not isinstance(m, SystemMessage)))
    assert result["messages"][-1].content == "All tests pass now."


def test_deepagents_summarization_summarizes_in_a_real_agent(tmp_path):
    model = ScriptedAgentModel()
    backend = FilesystemBackend(root_dir=str(tmp_path), virtual_mode=True)
    mw = deepagents_summarization(SETTINGS, backend=backend)
    agent = create_agent(model=model, tools=[run_tests], middleware=[mw])
    result = agent.invoke({"messages": [HumanMessage(content="Make the tests in src/app pass.")]})
    later = [req for req in model.seen if req and is_summary(req[0])]
    assert later, "DeepAgents' middleware never summarized"
    assert "Task:" in later[-1][0].content and "conversation_history" in later[-1][0].content
    assert not any(is_summary(m) for m in result["messages"])  # state messages are kept whole
    assert len([m for m in result["messages"] if isinstance(m, ToolMessage)]) == model.steps
    assert list((tmp_path / "conversation_history").glob("*.md"))


def test_trigger_and_keep_come_from_the_settings():
    mw = langchain_summarization(CompressionSettings(summary_threshold=8, summary_keep_messages=6))
    assert mw.trigger == ("tokens", 8192) and mw.keep == ("messages", 6)
    assert langchain_summarization(CompressionSettings(summary_keep_messages=0)).keep == ("messages", 1)
    da = deepagents_summarization(CompressionSettings(summary_threshold=8, summary_keep_messages=6))
    assert da.name == "SummarizationMiddleware"
    assert da._lc_helper.trigger == ("tokens", 8192) and da._lc_helper.keep == ("messages", 6)


def run_tests_transcript(request: str, run_id: str) -> Any:
    """A recorded run: ``request``, ten ``run_tests`` calls with their results, a final answer (a
    ``Transcript`` for ``replay_many``)."""
    from ctxlab.transcripts.base import Transcript

    msgs: list[Any] = [
        SystemMessage(content="You fix code.", id="s"),
        HumanMessage(content=request, id="u"),
    ]
    for i in range(10):
        msgs.append(
            AIMessage(
                content=f"step {i}",
                id=f"a{i}",
                tool_calls=[{"name": "run_tests", "args": {"path": f"m{i}.py"}, "id": f"c{i}"}],
            )
        )
        msgs.append(
            ToolMessage(content=run_tests.invoke({"path": f"m{i}.py"}), tool_call_id=f"c{i}", id=f"t{i}")
        )
    msgs.append(AIMessage(content="done", id="end"))
    return Transcript(messages=msgs, source="synthetic", run_id=run_id, format="test")


def test_strategies_are_registered_and_replay(tmp_path):
    from langchain.agents.middleware.types import AgentMiddleware

    from ctxlab.replay import replay_many

    pm = make_lab_manager(load_entrypoints=True)
    known = strategies(pm)
    for name in ("langchain-summarization", "deepagents-summarization"):
        assert isinstance(known[name].factory(SETTINGS), AgentMiddleware)
    t = run_tests_transcript("Fix the tests.", "baselines")
    res = replay_many(
        [t],
        ["langchain-summarization", "deepagents-summarization"],
        settings=SETTINGS,
        pm=pm,
        out_dir=tmp_path,
        progress=False,
    )
    assert not res.errors
    for name in ("langchain-summarization", "deepagents-summarization"):
        rows = [r for r in res.rows if r["strategy"] == name]
        assert len(rows) == 11
        assert max(r["view_tokens"] for r in rows) < max(r["raw_tokens"] for r in rows)


class RecordingSummaryModel(BaseChatModel):
    """A chat model standing in for ``--summarizer-model provider:model``: answers every
    summarization request with a numbered marker text and records the requests."""

    asked: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording-summary-model"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.asked.append(list(messages))
        text = f"MODEL-SUMMARY-{len(self.asked)}: the tests of m0.py to m9.py were run."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def test_a_summarizer_chat_model_writes_the_baselines_summaries_too(tmp_path):
    """``replay(..., summarizer_model=<chat model>)`` (``--summarizer-model``): LangChain's and
    DeepAgents' summarization summarize with that model — the summary each committed is the
    model's answer, the model was asked, and the provenance names the model — instead of the
    baselines' offline stand-in."""
    from ctxlab.replay import replay_many

    model = RecordingSummaryModel()
    res = replay_many(
        [run_tests_transcript("Fix it.", "model")],
        ["langchain-summarization", "deepagents-summarization"],
        settings=SETTINGS,
        pm=make_lab_manager(load_entrypoints=True),
        out_dir=tmp_path,
        progress=False,
        summarizer_model=model,
        keep_views=True,
    )
    assert not res.errors
    assert model.asked, "the baselines never asked the given model"
    for name in ("langchain-summarization", "deepagents-summarization"):
        assert "RecordingSummaryModel" in res.provenance["summarizers"][name]
        last = max((k for k in res.views if k[1] == name), key=lambda k: k[2])
        texts = [str(m.content) for m in res.views[last].messages]
        assert any("MODEL-SUMMARY-" in t for t in texts), (name, texts[:2])
