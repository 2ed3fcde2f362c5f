"""ctxlab-field: the field's strategies, each checked against its own documentation's example."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from ctxlab import CompressionSettings
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.integrations.inspect.convert import to_inspect, to_langchain
from ctxlab.replay import make_lab_manager, replay_many, strategies
from ctxlab.replay.building import build_middleware, summarizer_of
from ctxlab.transcripts import load_transcripts

pytest.importorskip("ctxlab_field")
from ctxlab_field.adk import AdkSlidingWindowMiddleware, SlidingWindow, invocations
from ctxlab_field.anthropic import PLACEHOLDER, ClearToolUses, clear_tool_uses
from ctxlab_field.inspect_baselines import inspect_edit, inspect_summary, inspect_trim
from ctxlab_field.openhands import CondenserConfig, condense

SETTINGS = CompressionSettings(summary_threshold=1.0, summary_keep_messages=4)  # T = 1024 tokens
FIELD = (
    "inspect-edit",
    "inspect-trim",
    "inspect-summary",
    "anthropic-clear-tool-uses",
    "openhands-summarizing",
)
EST = CharClassEstimator()


def tokens(messages: Any) -> int:
    return sum(EST.message_tokens(m) for m in messages)


class Recorder(BaseChatModel):
    """Calls ``run_tests`` ``steps`` times, then answers; keeps every request it receives."""

    steps: int = 10
    seen: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Recorder:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        self.seen.append(list(messages))
        i = len(self.seen)
        msg = (
            AIMessage(content="", tool_calls=[{"name": "run_tests", "args": {"n": i}, "id": f"c{i}"}])
            if i <= self.steps
            else AIMessage(content="All tests pass now.")
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def run_tests(n: int) -> str:
    """Run test batch n."""
    return f"batch {n}: 5 passed\n" + "".join(f"test_{n}_{k} PASSED in 0.{k}s\n" for k in range(12))


def run_agent(mw: Any, steps: int = 10) -> Recorder:
    model = Recorder(steps=steps)
    agent = create_agent(model=model, tools=[run_tests], middleware=[mw], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage("Make the tests pass.")]}, {"configurable": {"thread_id": "t"}})
    return model


def history(n: int, *, observations: bool = False) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("sys", id="s"), HumanMessage("Fix the parser.", id="u")]
    for i in range(n):
        if observations:  # a text protocol agent (mini-swe-agent): the result is a user message
            out.append(AIMessage(f"THOUGHT {i}\n```bash\nls {i}\n```", id=f"a{i}"))
            out.append(
                HumanMessage(
                    f"<output>{'x' * 200} {i}</output>",
                    id=f"o{i}",
                    additional_kwargs={"ctxlab_observation": True},
                )
            )
        else:
            out.append(
                AIMessage(
                    "", id=f"a{i}", tool_calls=[{"name": "bash", "args": {"cmd": f"ls {i}"}, "id": f"c{i}"}]
                )
            )
            out.append(ToolMessage("y" * 400 + f" {i}", tool_call_id=f"c{i}", name="bash", id=f"t{i}"))
    return out


# --- conversion ---------------------------------------------------------------------------------


def test_conversion_keeps_pairs_and_returns_the_original_objects():
    msgs = history(3)
    converted = to_inspect(msgs[1:], msgs[0])
    assert [m.role for m in converted] == ["system", "user", "assistant", "tool"] * 1 + [
        "assistant",
        "tool",
    ] * 2
    assert isinstance(converted[2], ChatMessageAssistant) and converted[2].tool_calls[0].id == "c0"
    assert isinstance(converted[3], ChatMessageTool) and converted[3].tool_call_id == "c0"
    back = to_langchain(converted, msgs[1:])
    assert back[0].type == "system" and all(a is b for a, b in zip(back[1:], msgs[1:], strict=True))
    edited = converted[3].model_copy(update={"content": "(cleared)"})
    (copy,) = to_langchain([edited], msgs[1:])
    assert isinstance(copy, ToolMessage) and copy.content == "(cleared)" and copy.tool_call_id == "c0"


def test_text_observations_become_tool_results_and_come_back_as_user_messages():
    msgs = history(2, observations=True)
    converted = to_inspect(msgs[1:])
    assert [m.role for m in converted] == ["user", "assistant", "tool", "assistant", "tool"]
    assert converted[1].tool_calls[0].function == "observe" and converted[2].tool_call_id == "obs-o0"
    back = to_langchain(converted, msgs[1:])
    assert all(a is b for a, b in zip(back, msgs[1:], strict=True))  # the synthetic calls are dropped
    (cleared,) = to_langchain([converted[2].model_copy(update={"content": "gone"})], msgs[1:])
    assert isinstance(cleared, HumanMessage) and cleared.additional_kwargs == {"ctxlab_observation": True}


# --- Inspect AI: its own classes (docs: https://inspect.aisi.org.uk/compaction.html) ---------------


def test_inspect_edit_clears_all_but_the_last_three_tool_results_in_a_real_agent():
    # CompactionEdit docs: "keep_tool_uses: how many recent tool use/result pairs to keep after
    # clearing ... Tool output is replaced with placeholder text"; calls stay (keep_tool_inputs=True)
    model = run_agent(inspect_edit(SETTINGS))
    removed = "(Tool result removed)"
    edited = [
        req for req in model.seen if any(m.content == removed for m in req if isinstance(m, ToolMessage))
    ]
    first = [m for m in edited[0] if isinstance(m, ToolMessage)]
    assert len(first) > 3 and [m.content for m in first[:-3]] == [removed] * (len(first) - 3)
    assert all(m.content.startswith("batch ") for m in first[-3:])
    assert sum(len(m.tool_calls) for m in edited[0] if isinstance(m, AIMessage)) == len(first)  # calls kept
    # Inspect's handler then sends the compacted input plus what arrived since: cleared stays cleared
    last = [m for m in model.seen[-1] if isinstance(m, ToolMessage)]
    assert len(last) == 10 and [m.content for m in last[: len(first) - 3]] == [removed] * (len(first) - 3)
    assert model.seen[0][-1].content == "Make the tests pass."  # below T: sent as it is


def test_inspect_trim_keeps_the_input_and_the_newest_messages():
    # CompactionTrim docs: retain system and input messages, preserve 80 % of the rest, keep
    # tool calls paired, never end with an assistant message
    model = run_agent(inspect_trim(SETTINGS))
    last = model.seen[-1]
    assert last[0].content == "Make the tests pass."
    ids = {m.tool_call_id for m in last if isinstance(m, ToolMessage)}
    calls = {tc["id"] for m in last if isinstance(m, AIMessage) for tc in m.tool_calls}
    assert ids == calls and len(ids) < 10  # paired, and the oldest were trimmed
    assert not isinstance(last[-1], AIMessage)


def test_inspect_summary_sends_the_input_and_a_summary():
    # CompactionSummary docs: "input for model should be preamble + summary"
    model = run_agent(inspect_summary(SETTINGS))
    summarized = [
        req for req in model.seen if any("[CONTEXT COMPACTION SUMMARY]" in str(m.content) for m in req)
    ]
    assert summarized
    first = summarized[0]
    assert first[0].content == "Make the tests pass." and "[CONTEXT COMPACTION SUMMARY]" in first[1].content
    assert "Task:" in first[1].content and "run_tests" in first[1].content  # ctxlab's offline summary
    assert first[1].additional_kwargs == {"lc_source": "summarization"}


# --- Anthropic context editing (docs: build-with-claude/context-editing) --------------------------


def test_anthropic_basic_usage_defaults():
    # "specify only the strategy type": trigger 100,000 input tokens, keep 3 tool uses
    config = ClearToolUses.from_api({"type": "clear_tool_uses_20250919"})
    assert config == ClearToolUses(trigger=("input_tokens", 100_000), keep=3)
    msgs = history(10)
    assert not clear_tool_uses(msgs, config, tokens).applied  # far below 100,000 tokens
    big = ClearToolUses(trigger=("input_tokens", 500))
    done = clear_tool_uses(msgs, big, tokens)
    results = [m for m in done.messages if isinstance(m, ToolMessage)]
    assert done.applied and done.cleared_tool_uses == 7 and done.cleared_input_tokens > 0
    assert [m.content for m in results[:7]] == [PLACEHOLDER] * 7 and results[-1].content.endswith(" 9")
    assert next(tc["args"] for m in done.messages if isinstance(m, AIMessage) for tc in m.tool_calls) == {
        "cmd": "ls 0"
    }


def test_anthropic_advanced_configuration_example():
    # the documentation's advanced example: trigger 30,000 input tokens, keep 3 tool uses,
    # clear_at_least 5,000 input tokens, exclude_tools ["web_search"]
    config = ClearToolUses.from_api(
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 30000},
            "keep": {"type": "tool_uses", "value": 3},
            "clear_at_least": {"type": "input_tokens", "value": 5000},
            "exclude_tools": ["web_search"],
        }
    )
    msgs: list[BaseMessage] = [HumanMessage("Research and fix.", id="u")]
    for i in range(12):
        name = "web_search" if i % 3 == 0 else "bash"
        msgs.append(
            AIMessage("", id=f"a{i}", tool_calls=[{"name": name, "args": {"q": str(i)}, "id": f"c{i}"}])
        )
        msgs.append(ToolMessage("z " * 3500 + str(i), tool_call_id=f"c{i}", name=name, id=f"t{i}"))
    assert tokens(msgs) > 30_000
    done = clear_tool_uses(msgs, config, tokens)
    cleared = [m.name for m in done.messages if isinstance(m, ToolMessage) and m.content == PLACEHOLDER]
    assert done.applied and cleared == ["bash"] * 5  # 8 bash uses, the last 3 kept; web_search never
    assert done.cleared_input_tokens >= 5000
    # when the clearable uses free fewer than clear_at_least tokens, the strategy is not applied
    stingy = ClearToolUses(trigger=("input_tokens", 30_000), keep=3, clear_at_least=10**6)
    assert (
        clear_tool_uses(msgs, stingy, tokens).messages == msgs
        and not clear_tool_uses(msgs, stingy, tokens).applied
    )


def test_anthropic_clear_tool_inputs_and_tool_use_trigger():
    # clear_tool_inputs: the tool call parameters are cleared with the results; trigger in tool_uses
    config = ClearToolUses(trigger=("tool_uses", 5), keep=2, clear_tool_inputs=True)
    msgs = history(6)
    done = clear_tool_uses(msgs, config, tokens)
    args = [tc["args"] for m in done.messages if isinstance(m, AIMessage) for tc in m.tool_calls]
    assert args == [{}] * 4 + [{"cmd": "ls 4"}, {"cmd": "ls 5"}]
    assert not clear_tool_uses(history(5), config, tokens).applied  # 5 uses do not exceed 5
    obs = clear_tool_uses(
        history(6, observations=True), ClearToolUses(trigger=("tool_uses", 1), keep=1), tokens
    )
    assert [m.content for m in obs.messages if m.additional_kwargs.get("ctxlab_observation")][:5] == [
        PLACEHOLDER
    ] * 5


# --- OpenHands LLMSummarizingCondenser (docs: sdk/guides/context-condenser) ------------------------


def test_openhands_docs_example_max_size_10_keep_first_2():
    # the guide's example: LLMSummarizingCondenser(llm=..., max_size=10, keep_first=2): condense
    # when there are more than ten events, always keep the first two
    config = CondenserConfig(max_size=10, keep_first=2)
    view = history(4)
    view.append(HumanMessage("Also run the linter.", id="u2"))  # 11 events
    assert condense(view[:10], config, tokens) is None
    done = condense(view, config, tokens)
    assert done is not None and done.reasons == ("events",) and done.offset == 2
    # keep 10 // 2 - 2 - 1 = 2 from the tail; the cut moves past a4/t4 so no pair is split
    assert [m.id for m in done.forgotten] == ["a0", "t0", "a1", "t1", "a2", "t2", "a3", "t3"]


def test_openhands_token_limit_is_a_hard_reason():
    config = CondenserConfig(max_tokens=300, keep_first=2)
    done = condense(history(6), config, tokens)
    assert done is not None and done.reasons == ("tokens",) and not done.hard
    kept = [m for m in history(6) if m not in done.forgotten]
    assert tokens(kept) <= 300 // 2 + 70  # under half the limit, up to one event's rounding


# --- Google ADK sliding window (docs: context/compaction.md) ---------------------------------------


def test_adk_docs_example_interval_3_overlap_1():
    # "If you set compaction_interval to 3 and overlap_size to 1 ... invocation 3 completes: all 3
    # invocations are compressed; invocation 6 completes: invocations 3 to 6; 9: 6 to 9"
    from ctxlab.replay import ModelNodeHarness

    mw = AdkSlidingWindowMiddleware(SlidingWindow(compaction_interval=3, overlap_size=1))
    harness = ModelNodeHarness(mw, system_message="chat", thread_id="adk")
    views = []
    for k in range(1, 11):
        harness.add(HumanMessage(f"question {k}", id=f"u{k}"))
        call = harness.call(AIMessage(f"answer {k}", id=f"a{k}"))
        views.append(call.views[-1].messages)
    assert [(c.start, c.end) for c in mw.compactions] == [(1, 3), (3, 6), (6, 9)]
    assert [m.content for m in views[2]] == ["question 1", "answer 1", "question 2", "answer 2", "question 3"]
    fourth = views[3]  # invocation 4: invocations 1-3 are one summary, placed where they ended
    assert fourth[0].additional_kwargs == {"lc_source": "summarization"} and "question 1" in fourth[0].content
    assert [m.content for m in fourth[1:]] == ["question 4"]
    tenth = views[9]  # no summary contains another: all three kept, in order, then invocation 10
    assert [m.additional_kwargs.get("lc_source") for m in tenth[:3]] == ["summarization"] * 3
    assert [m.content for m in tenth[3:]] == ["question 10"]
    assert len(invocations(harness.state["messages"])) == 10


# --- registered, and replayed on a real transcript -----------------------------------------------


def test_field_strategies_replay_a_real_transcript(tmp_path):
    pm = make_lab_manager(load_entrypoints=True)
    assert {*FIELD, "adk-sliding-window"} <= set(strategies(pm))  # ADK: one invocation, never compacts
    (t,) = load_transcripts(
        "../shared/transcripts/raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/"
        "psf__requests-1142/psf__requests-1142.traj.json"
    )
    res = replay_many(
        [t],
        ["ars", *FIELD],
        settings=CompressionSettings(summary_threshold=8),
        pm=pm,
        out_dir=tmp_path,
        progress=False,
        limit_calls=40,
    )
    assert not res.errors
    frame = res.frame()
    for name in FIELD:
        rows = frame.filter(frame["strategy"] == name)
        assert rows.height == 40
        assert rows["view_tokens"].sum() < rows["raw_tokens"].sum(), name  # each one compressed
        assert (rows["unmatched_tool_pairs"].fill_null(0) == 0).all(), name
    levels = {n: set(frame.filter(frame["strategy"] == n)["level"].to_list()) for n in FIELD}
    assert "L2" in levels["inspect-summary"] and "L2" in levels["openhands-summarizing"]
    assert "L1" in levels["anthropic-clear-tool-uses"] and "L1" in levels["inspect-trim"]


def test_inspect_edit_failures_are_its_own_errors_not_summaries_of_zero_rounds(tmp_path):
    # Inspect raises "Compaction insufficient" when the edit cannot get under T: the call's
    # summary_error at L1.  The executive summary said "inspect-edit's summaries failed N of 0 times".
    from ctxlab.analysis.verdicts import executive_summary

    res = replay_many(
        [
            "../shared/transcripts/raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/"
            "pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json"
        ],
        ["inspect-edit"],
        settings=CompressionSettings(summary_threshold=16),
        pm=make_lab_manager(load_entrypoints=True),
        out_dir=tmp_path,
        progress=False,
        limit_calls=50,
    )
    frame = res.frame()
    failed = frame.filter(frame["summary_error"].is_not_null())
    assert failed.height > 0 and set(failed["level"].to_list()) == {"L1"}
    assert all("Compaction insufficient" in e for e in failed["summary_error"].to_list())
    run = res.summary().row(0, named=True)
    assert (run["summary_errors"], run["failed_outside_l2"], run["l2_rounds"]) == (
        failed.height,
        failed.height,
        0,
    )
    (line,) = [w for w in executive_summary(res).warnings if "failed" in w]
    assert line.startswith(
        f"inspect-edit's compression failed in {failed.height} call(s): {failed.height} without an L2 round"
    ), line
    assert "of 0 times" not in line


def test_inspect_messages_mark_summaries_for_inspect():
    (m,) = to_inspect([HumanMessage("s", id="x", additional_kwargs={"lc_source": "summarization"})])
    assert isinstance(m, ChatMessageUser) and m.metadata == {"summary": True}


async def test_inspect_strategies_replay_from_inside_a_running_event_loop(tmp_path):
    # a notebook cell runs inside an event loop: the sync replay path must still drive Inspect
    msgs = history(12)
    t = __import__("ctxlab.transcripts.base", fromlist=["Transcript"]).Transcript(
        messages=[*msgs, AIMessage("done", id="end")], source="synthetic", run_id="loop", format="test"
    )
    res = replay_many(
        [t],
        ["inspect-edit"],
        settings=CompressionSettings(summary_threshold=0.5),
        pm=make_lab_manager(load_entrypoints=True),
        out_dir=tmp_path,
        progress=False,
    )
    assert not res.errors
    assert "L1" in set(res.frame()["level"].to_list())


def test_the_reports_name_what_writes_each_field_baselines_summaries():
    # the executive summary's first line: an offline Inspect model and ctxlab's structured summary
    # are named as stand-ins, not as "chat model Model" or "none"
    pm = make_lab_manager(load_entrypoints=True)
    settings = CompressionSettings(summary_threshold=8)
    names = {}
    for name in ("inspect-summary", "inspect-edit", "openhands-summarizing", "adk-sliding-window"):
        _, mw = build_middleware(name, settings=settings, pm=pm)
        names[name] = summarizer_of(mw)
    assert (
        names["inspect-summary"] == names["inspect-edit"] == "ctxlab/offline (offline stand-in, not a model)"
    )
    assert names["openhands-summarizing"] == "StructuredSummarizer (offline stand-in, not a model)"
    assert names["adk-sliding-window"] == "StructuredSummarizer (offline stand-in, not a model)"
