"""Requests a provider would reject (issue 28): a view with a tool result whose call was dropped is
marked per call (``rejected_reason``), counted per run and left out of the savings over valid
calls; the per-run cost breakdown adds up to the cost columns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.analysis.costs import BREAKDOWN_COLUMNS, cost_breakdown
from ctxlab.replay import replay
from ctxlab.transcripts.base import Transcript


def transcript(turns: int = 8) -> Transcript:
    messages: list[Any] = [SystemMessage("You are a coding agent."), HumanMessage("Read every module.")]
    for i in range(turns):
        cid = f"c{i}"
        messages.append(
            AIMessage(
                "", tool_calls=[{"name": "read_file", "args": {"path": f"m{i}.py"}, "id": cid}], id=f"a{i}"
            )
        )
        messages.append(ToolMessage(f"def f{i}():\n" + "    pass\n" * 300, tool_call_id=cid, id=f"t{i}"))
    messages.append(AIMessage("Done.", id="end"))
    return Transcript(messages=messages, source="handmade.json", run_id="handmade", format="test")


class DropOldCalls(AgentMiddleware):
    """From the fifth call on, sends the view without its first assistant message (its tool
    result stays): a request with an unmatched tool result, as some compaction middlewares send."""

    name = "drop-old-calls"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def _view(self, request: ModelRequest) -> ModelRequest:
        self.calls += 1
        if self.calls < 5:
            return request
        first = next(i for i, m in enumerate(request.messages) if isinstance(m, AIMessage))
        return request.override(messages=[m for i, m in enumerate(request.messages) if i != first])

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        return handler(self._view(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        return await handler(self._view(request))


def test_requests_with_unmatched_tool_pairs_are_rejected_and_left_out_of_the_savings() -> None:
    result = replay(transcript(), DropOldCalls(), price_model="anthropic:claude-sonnet-4-5")
    rows = result.rows
    reasons = [r["rejected_reason"] for r in rows]
    assert reasons == [None] * 4 + ["unmatched_tool_pairs"] * (len(rows) - 4)
    assert all((r["unmatched_tool_pairs"] > 0) == (r["rejected_reason"] is not None) for r in rows)
    summary = result.summary().row(0, named=True)
    assert summary["rejected_calls"] == len(rows) - 4
    valid = rows[:4]  # the savings count only the calls a provider would have answered
    cost = sum(r["cost_usd"] + r["summarizer_cost_usd"] for r in valid)
    raw = sum(r["raw_cost_usd"] for r in valid)
    assert summary["cost_saving_pct_without_failed"] == pytest.approx(100 * (1 - cost / raw))
    sent = sum(r["view_tokens"] for r in valid)
    assert summary["saving_pct_without_failed"] == pytest.approx(
        100 * (1 - sent / sum(r["raw_tokens"] for r in valid))
    )
    assert summary["saving_pct"] > summary["saving_pct_without_failed"]  # dropping messages "saved" tokens


def test_the_cost_breakdown_adds_up_to_the_cost_columns() -> None:
    result = replay(transcript(), "ars", price_model="anthropic:claude-sonnet-4-5")
    frame = result.frame()
    parts = cost_breakdown(frame).row(0, named=True)
    assert set(BREAKDOWN_COLUMNS) <= set(parts)
    total = frame["cost_usd"].sum() + frame["summarizer_cost_usd"].sum()
    assert parts["cost_usd"] == pytest.approx(total)
    assert parts["raw_cost_usd"] == pytest.approx(frame["raw_cost_usd"].sum())
    raw_sum = (
        parts["raw_read_usd"] + parts["raw_write_usd"] + parts["raw_uncached_usd"] + parts["raw_output_usd"]
    )
    assert raw_sum == pytest.approx(parts["raw_cost_usd"])
    assert parts["read_usd"] > 0 and parts["write_usd"] > 0  # the agent breakpoints write, later calls read


ORPHAN = (
    '[{"role":"user","content":"hi"},'
    '{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},'
    '{"role":"tool","tool_call_id":"zz","content":"r"},'
    '{"role":"assistant","content":"done"}]'
)


def test_a_transcripts_own_orphan_is_said_on_load_and_its_raw_request_is_infeasible(tmp_path) -> None:
    # s40 trial item 5: a tool result 'zz' that no message calls (and a call 'a' with no result).
    # The load names the file and the message; the uncompressed request a provider would refuse
    # is counted as the provider treats it (raw_rejected_reason, by the rule of rejected_reason),
    # so it is no feasible baseline; below T ars sends the effective messages as they are (spec:
    # R3), and is not charged for a request the raw one could not send either (the old replay
    # said "ars costs 26.6 % more" for a rewrite below T)
    from ctxlab.transcripts import load_transcripts
    from ctxlab.transcripts.base import TranscriptWarning

    path = tmp_path / "orphan.json"
    path.write_text(ORPHAN, encoding="utf-8")
    with pytest.warns(TranscriptWarning) as said:
        (t,) = load_transcripts(path)
    (text,) = [str(w.message) for w in said]
    assert text.startswith(f"{path}: tool result 'zz' (message 2) has no matching call")
    assert "tool call 'a' (message 1) has no result" in text and text in t.metadata["warnings"]
    result = replay(t, "ars", price_model="anthropic:claude-sonnet-4-5")
    rows = result.rows
    assert [r["raw_rejected_reason"] for r in rows] == [None, "unmatched_tool_pairs"]
    assert [r["view_tokens"] for r in rows] == [r["raw_tokens"] for r in rows]  # R3: sent as it is
    assert rows[1]["rejected_reason"] == "unmatched_tool_pairs"  # refused like the raw request
    summary = result.summary().row(0, named=True)
    assert (summary["raw_rejected_calls"], summary["infeasible_calls"]) == (1, 1)
    assert summary["cost_saving_pct_feasible"] == pytest.approx(0.0)
    assert summary["saving_pct_feasible"] == pytest.approx(0.0)


def test_above_t_a_repaired_orphan_is_neither_charged_nor_credited(tmp_path) -> None:
    # the same orphan above T: ars's view carries the result as text saying its call is not in
    # the request (nothing was summarized), which a provider accepts; that call's uncompressed
    # request is refused, so the call is out of the feasible savings either way
    from ctxlab.core.settings import CompressionSettings

    messages: list[Any] = [
        HumanMessage("read it " + "word " * 3000),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "a"}], id="a0"),
        ToolMessage("r", tool_call_id="zz", name="f", id="t0"),
        AIMessage("done", id="a1"),
    ]
    t = Transcript(messages=messages, source="orphan.json", run_id="orphan", format="test")
    settings = CompressionSettings(
        summary_threshold=1, summary_keep_messages=10, summary_l2_trigger_ratio=1.0
    )
    result = replay(t, "ars", settings=settings, price_model="anthropic:claude-sonnet-4-5")
    rows = result.rows
    assert [r["raw_rejected_reason"] for r in rows] == [None, "unmatched_tool_pairs"]
    assert rows[1]["rejected_reason"] is None and rows[1]["level"] == "L1"
    assert rows[1]["view_tokens"] > rows[1]["raw_tokens"]  # the observation's label costs tokens...
    summary = result.summary().row(0, named=True)
    assert summary["infeasible_calls"] == 1
    assert summary["cost_saving_pct_feasible"] == pytest.approx(0.0)  # ...but not against a refused request
