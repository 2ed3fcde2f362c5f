"""Issue 28: ``ars-cache``'s kept window goes out, until the next compaction, as the compacting
request sent it (``CutoffDecision.kept_as_sent``), so the next request repeats that request and a
prompt cache reads it; ARS's own cutoff keeps R3 (below T the effective messages go whole).

Checked on the view each call sent, the state and event the round wrote (both drivers), and on
the replay's cost rows of a hand-built run priced at Claude Sonnet 4.5."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.builtin.cutoff_rule import KeepRecentCutoff
from ctxlab.core.cache import CacheAwareCutoff
from ctxlab.core.cutoff import CutoffDecision
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.l2 import kept_as_sent
from ctxlab.replay import replay_many
from ctxlab.transcripts import Transcript

#: T = 2,048 tokens, T2 = 819 tokens, tool results above 300 tokens are offloaded (R6)
SETTINGS = CompressionSettings(summary_threshold=2, summary_l2_trigger_ratio=0.4)


class ArsKeepTwo:
    """The ARS cutoff rule keeping 2 messages, without ``kept_as_sent`` (R3 below T)."""

    @hookimpl(tryfirst=True)
    def ctxlab_select_cutoff(self, messages, ctx):
        from dataclasses import replace

        return KeepRecentCutoff().ctxlab_select_cutoff(messages, replace(ctx, keep_messages=2))


def turn(kit, i: int, chars: int) -> list[BaseMessage]:
    call = {"name": "bash", "args": {"command": f"cat part{i}.txt"}, "id": f"c{i}", "type": "tool_call"}
    return [
        AIMessage(f"Reading part {i}.", id=f"a{i}", tool_calls=[call]),
        ToolMessage(kit.fill(chars, f"FACT-R{i}", seed=i), id=f"t{i}", tool_call_id=f"c{i}", name="bash"),
    ]


def text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else str(m.content)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("cutoff", ["ars-cache", "ars"])
def test_the_kept_window_goes_out_as_the_compacting_request_sent_it(mw_kit, tmp_path, mode, cutoff):
    plugin = CacheAwareCutoff(2) if cutoff == "ars-cache" else ArsKeepTwo()
    mw = CompressionMiddleware(
        settings=SETTINGS,
        backend=mw_kit.backend(tmp_path),
        summarizer=mw_kit.FakeSummarizer(mode="fixed"),
        plugins=[plugin],
    )
    msgs: list[BaseMessage] = [HumanMessage("FACT-TASK read the parts and fix parse.py.", id="h0")]
    for i in range(4):
        msgs += turn(mw_kit, i, 2_400)  # ~600 tokens each: above T together, offloaded by L1
    driver = mw_kit.Driver(mw, msgs, mode=mode, system=SystemMessage("You are a coding agent."))
    first = driver.round(append_response=False)
    assert first["exc"] is None
    compacted = first["calls"][-1]["messages"]
    # the compacting request: the summary, then the latest exchange with its result offloaded (R6)
    assert [type(m) for m in compacted] == [HumanMessage, AIMessage, ToolMessage]
    assert "outputs/large_tool_results/" in text(compacted[2]) and "FACT-R3" in text(compacted[2])
    assert len(text(compacted[2])) < 2_400
    # the state keeps the full text (R6); the event says how many kept messages stay as sent
    stored = next(m for m in driver.state["messages"] if m.id == "t3")
    assert len(text(stored)) >= 2_400 and "outputs/large_tool_results/" not in text(stored)
    event = driver.event
    assert event is not None
    assert event.get("kept_as_sent") == (2 if cutoff == "ars-cache" else None)

    driver.append(*turn(mw_kit, 4, 200))  # a short result: the next request is below T (R3)
    second = driver.round(append_response=False)
    assert second["exc"] is None and mw_kit.ctx_events(second) == []  # below T: no round (R3)
    sent = second["calls"][-1]["messages"]
    assert [m.id for m in sent[1:]] == ["a3", "t3", "a4", "t4"]
    if cutoff == "ars-cache":
        # the same request again, then the new exchange: its prefix is the compacting request
        assert [text(m) for m in sent[:3]] == [text(m) for m in compacted]
        assert text(sent[4]) == text(turn(mw_kit, 4, 200)[1])  # a new result goes whole below T
    else:
        # ARS below T sends the effective messages as stored: the kept result whole again
        assert text(sent[2]) == text(stored)


def test_kept_as_sent_reads_only_a_positive_count_within_the_view():
    eff = [HumanMessage("summary"), AIMessage("a"), HumanMessage("b")]
    assert kept_as_sent({"kept_as_sent": 2}, eff) == 2
    assert kept_as_sent({"kept_as_sent": 9}, eff) == 2  # never past the view
    for bad in (None, 0, -1, True, "2", 1.5):
        assert kept_as_sent({"kept_as_sent": bad}, eff) == 0
    assert kept_as_sent({}, eff) == 0 and kept_as_sent(None, eff) == 0
    assert CutoffDecision(3).kept_as_sent is False  # the ARS rule's default


def _parts(turns: int = 10) -> Transcript:
    """A hand-built run: each turn reads a part (~1,000-token result, offloaded by L1)."""
    words = lambda n, tag: " ".join(f"{tag}{i % 97} w{i}" for i in range(n))  # noqa: E731
    m: list[BaseMessage] = [SystemMessage("You are a coding agent."), HumanMessage("Fix src/parse.py.")]
    for i in range(turns):
        call = {"id": f"c{i}", "name": "bash", "args": {"command": f"cat part{i}.txt"}, "type": "tool_call"}
        m.append(AIMessage(f"Reading part {i}: " + words(60, f"a{i}y"), tool_calls=[call]))
        m.append(ToolMessage(f"part{i}: " + words(120, f"r{i}x"), tool_call_id=f"c{i}", name="bash"))
    m.append(AIMessage("Done."))
    return Transcript(messages=m, source="parts.json", run_id="parts.json", format="test")


def _replay():
    result = replay_many(
        [_parts()],
        ["ars-cache"],
        settings=CompressionSettings(summary_threshold=4),
        price_model="anthropic:claude-sonnet-4-5",
        progress=False,
        keep_views=True,
    )
    rows = sorted(result.rows, key=lambda r: r["call_index"])
    # the first compaction followed by a call below T
    i = next(k for k, r in enumerate(rows[:-1]) if r["level"] == "L2" and rows[k + 1]["level"] == "none")
    return result, rows, i


def test_after_a_compaction_the_next_call_reads_the_compacted_request_from_the_cache(monkeypatch):
    result, rows, i = _replay()
    label = rows[i]["transcript"]
    compacted = result.views[(label, "ars-cache", i)].messages
    after = result.views[(label, "ars-cache", i + 1)].messages
    assert [text(m) for m in after[: len(compacted)]] == [text(m) for m in compacted]
    assert "outputs/large_tool_results/" in text(compacted[-1])
    # priced at Sonnet 4.5 with the agent's breakpoints: the whole compacted request is read,
    # only the new exchange is written
    whole = rows[i]["cache_read_tokens"] + rows[i]["cache_write_tokens"]
    assert whole == rows[i]["view_tokens"]
    assert rows[i + 1]["cache_read_tokens"] == whole
    assert rows[i + 1]["cache_write_tokens"] == rows[i + 1]["view_tokens"] - rows[i]["view_tokens"]

    # the same run with the ARS form below T (the kept result whole again): the cache misses at
    # the kept result, the compacted request is written again and the request is larger
    select = CacheAwareCutoff.ctxlab_select_cutoff

    def whole_again(self, messages, ctx):
        d = select(self, messages, ctx)
        return CutoffDecision(d.index, d.reason)

    monkeypatch.setattr(CacheAwareCutoff, "ctxlab_select_cutoff", hookimpl(tryfirst=True)(whole_again))
    _, before, j = _replay()
    assert j == i and before[i]["view_tokens"] == rows[i]["view_tokens"]
    assert before[i + 1]["cache_read_tokens"] < rows[i + 1]["cache_read_tokens"]
    assert before[i + 1]["view_tokens"] > rows[i + 1]["view_tokens"]
    assert before[i + 1]["cost_usd"] > rows[i + 1]["cost_usd"]
