"""The built-in cutoff rule finds its cut from the end (issue 31): the same cut as computing every
valid position (``valid_cut_positions``, R9), on random histories with the pairings that make
cuts invalid — parallel calls, ids reused across turns, results whose call is missing, results
carried as content blocks, calls carried as ``tool_use`` blocks, system and result messages."""

from __future__ import annotations

import random

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.builtin import cutoff_rule
from ctxlab.core.builtin.cutoff_rule import KeepRecentCutoff, last_valid_cut
from ctxlab.core.cutoff import CutoffContext
from ctxlab.core.messages import valid_cut_positions


def _reference(messages: list[BaseMessage], highest: int, lowest: int) -> int | None:
    ok = valid_cut_positions(messages)
    return next((c for c in range(highest, lowest - 1, -1) if ok[c]), None)


def _history(rng: random.Random, n: int) -> list[BaseMessage]:
    ids = [f"call_{k}" for k in range(rng.choice([2, 4, 12]))]  # few ids: reused across turns
    out: list[BaseMessage] = []
    for i in range(n):
        kind = rng.random()
        if kind < 0.3:
            calls = rng.sample(ids, rng.randint(1, min(3, len(ids))))
            if rng.random() < 0.2:  # calls as tool_use blocks
                out.append(
                    AIMessage(
                        content=[{"type": "tool_use", "id": c, "name": "t", "input": {}} for c in calls],
                        tool_calls=[{"id": c, "name": "t", "args": {}} for c in calls],
                    )
                )
            else:
                out.append(
                    AIMessage(content=f"a{i}", tool_calls=[{"id": c, "name": "t", "args": {}} for c in calls])
                )
        elif kind < 0.65:
            out.append(ToolMessage(content=f"r{i}", tool_call_id=rng.choice([*ids, "orphan"]), name="t"))
        elif kind < 0.72:  # results as content blocks in a user message
            out.append(
                HumanMessage(
                    content=[{"type": "tool_result", "tool_use_id": rng.choice(ids), "content": f"r{i}"}]
                )
            )
        elif kind < 0.75:
            out.append(SystemMessage(content=f"s{i}"))
        elif kind < 0.88:
            out.append(HumanMessage(content=f"u{i}"))
        else:
            out.append(AIMessage(content=f"a{i}"))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_same_cut_as_every_position(seed: int) -> None:
    rng = random.Random(seed)
    messages = _history(rng, rng.randint(0, 60))
    n = len(messages)
    for highest in range(-1, n + 1):
        for lowest in (0, 1, 2):
            assert last_valid_cut(messages, highest, lowest) == _reference(messages, highest, lowest), (
                seed,
                highest,
                lowest,
            )


@pytest.mark.parametrize("seed", range(10))
def test_fallback_over_the_read_budget_gives_the_same_cut(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cutoff_rule, "READ_BUDGET", 0)
    rng = random.Random(100 + seed)
    messages = _history(rng, 80)
    # a result whose call is far back makes the search read the history: the budget runs out
    messages.append(ToolMessage(content="late", tool_call_id="call_0", name="t"))
    for highest in range(len(messages) + 1):
        assert last_valid_cut(messages, highest, 1) == _reference(messages, highest, 1)


def test_rule_reports_the_cut_and_kept_count() -> None:
    messages: list[BaseMessage] = [HumanMessage("q")]
    for k in range(6):
        messages += [
            AIMessage(content="", tool_calls=[{"id": f"c{k}", "name": "t", "args": {}}]),
            ToolMessage(content="r", tool_call_id=f"c{k}", name="t"),
        ]
    rule = KeepRecentCutoff()
    ctx = CutoffContext(keep_messages=4, has_previous_summary=False, estimate=lambda m: 1, target_tokens=1.0)
    decision = rule.ctxlab_select_cutoff(messages, ctx)
    # n - keep = 9: the call c4 and its result stay together after the cut
    assert decision.index == _reference(messages, 9, 1) == 9
    assert decision.reason == "kept 4 messages (keep 4)"
    # keeping 3: a cut at 10 would part c4's call from its result, so the cut goes back to 9
    ctx3 = CutoffContext(keep_messages=3, has_previous_summary=False, estimate=lambda m: 1, target_tokens=1.0)
    assert rule.ctxlab_select_cutoff(messages, ctx3).index == _reference(messages, 10, 1) == 9
    # a pair that opens the history only: no cut keeps 12 and summarizes a new message
    ctx12 = CutoffContext(
        keep_messages=12, has_previous_summary=True, estimate=lambda m: 1, target_tokens=1.0
    )
    none = rule.ctxlab_select_cutoff(messages, ctx12)
    assert none.index is None
    assert none.reason == "no valid cutoff keeps 12 of 13 messages and summarizes a new one"
