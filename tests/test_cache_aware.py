"""ars-cache (issue 23): the cost model of a compaction on hand-built runs, checked against the
replay's prompt-cache pricing, the dollar decision, the cached-prefix summarizer request, and the
strategy on the bundled sample."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import CompressionSettings
from ctxlab.core.cache import CacheAwareSummarize, CachedPrefixSummarizer, CachePrices, compaction
from ctxlab.core.cutoff import SummarizeContext
from ctxlab.core.summarize import SummaryJob
from ctxlab.replay.cost import CallTokens, price_run
from ctxlab.replay.prices import load_prices
from ctxlab.transcripts import Transcript

SAMPLE = Path(__file__).resolve().parents[1] / "ctxlab" / "data" / "sample_run.json"
SONNET = load_prices().get("anthropic:claude-sonnet-4-5")
GPT41 = load_prices().get("openai:gpt-4.1")


def dollars(calls: list[CallTokens], row) -> float:
    return sum(c.total_usd for c in price_run(calls, row, breakpoint="last"))


def run(before: int, after: int, n: int, compact: bool) -> list[CallTokens]:
    """A hand-built run: a call that cached a ``before``-token request, then ``n + 1`` calls that
    repeat it (no compaction) or send an ``after``-token compacted request."""
    first = CallTokens(before, 0, segments=(("history", before),))
    again = CallTokens(after, 0, segments=(("compacted", after),)) if compact else first
    return [first] + [again] * (n + 1)


@pytest.mark.parametrize("row", [SONNET, GPT41], ids=["explicit", "automatic"])
def test_a_compaction_pays_for_itself_after_k_calls(row):
    before, after = 10_240, 4_096  # multiples of OpenAI's 128-token steps
    plan = compaction(CachePrices.of(row), before=before, after=after)
    # explicit: (4096 x 3.75 - 10240 x 0.30) / (6144 x 0.30) = 6.67 calls; automatic (a new
    # prefix is a miss at the input price): (4096 x 2.00 - 10240 x 0.50) / (6144 x 0.50) = 1
    expected = {"explicit": 12_288 / 1_843.2, "automatic": 3_072 / 3_072}[row.caching]
    assert plan.break_even == pytest.approx(expected)
    k = math.ceil(plan.break_even)
    # the replay's cache pricing agrees: after k calls beyond the compacting one it has paid, not before
    assert dollars(run(before, after, k, True), row) <= dollars(run(before, after, k, False), row) + 1e-12
    assert dollars(run(before, after, k - 1, True), row) > dollars(run(before, after, k - 1, False), row)
    extra = dollars(run(before, after, 0, True), row) - dollars(run(before, after, 0, False), row)
    assert extra == pytest.approx(plan.extra_usd)


def test_a_compaction_that_never_pays():
    prices = CachePrices.of(SONNET)
    # a summary as large as what it replaces saves nothing per call: it never pays
    assert compaction(prices, before=5_000, after=5_000).break_even == math.inf
    for n in (1, 10, 100):
        assert dollars(run(5_000, 5_000, n, True), SONNET) > dollars(run(5_000, 5_000, n, False), SONNET)
    # a summarizer that sends the span as new text costs more than one that reuses the cached prefix
    fresh = compaction(prices, before=10_000, after=4_000, span=9_000, summary=1_000, summarizer="fresh")
    cached = compaction(
        prices, before=10_000, after=4_000, span=9_000, summary=1_000, summarizer="cached-prefix"
    )
    assert fresh.extra_usd - cached.extra_usd == pytest.approx((9_000 * 3.0 - 10_000 * 0.3) / 1e6)
    assert fresh.break_even > cached.break_even > compaction(prices, before=10_000, after=4_000).break_even
    with pytest.raises(ValueError, match="summarizer='llm' is invalid"):
        compaction(prices, before=1, after=1, summarizer="llm")
    with pytest.raises(ValueError, match="cached_input=-1 is invalid"):
        CachePrices(3.0, -1, 3.75, 15.0)


def ctx_for(view, tokens):
    return SummarizeContext(
        tokens=tokens,
        threshold_tokens=16_384,
        l2_threshold_tokens=6_553.6,
        keep_messages=2,
        has_previous_summary=False,
        estimate=lambda m: len(str(m.content)) // 4,
    )


def test_the_decision_waits_until_the_expected_calls_reach_break_even():
    rule = CacheAwareSummarize(CachePrices.of(SONNET), summary_tokens=1_000)
    turn = [AIMessage("a" * 4_000), ToolMessage("t" * 12_000, tool_call_id="x")]  # 1,000 + 3,000 tokens
    short = [HumanMessage("task"), *turn, *turn]  # 2 assistant turns, 8,001 tokens
    decision = rule.ctxlab_should_summarize(short, ctx_for(short, 8_001))
    plan, horizon = rule.plan(short, ctx_for(short, 8_001))
    assert horizon == 2 and plan.break_even > 2
    assert decision is not None and not decision.summarize and "does not pay yet" in decision.reason
    long = [HumanMessage("task"), *turn * 6]  # 6 assistant turns, 24,001 tokens
    plan, horizon = rule.plan(long, ctx_for(long, 24_001))
    assert horizon == 6 and plan.break_even <= 6
    decision = rule.ctxlab_should_summarize(long, ctx_for(long, 24_001))
    assert decision is not None and decision.summarize and "pays" in decision.reason
    # at most T2, and a forced round, are the ARS rule's
    assert rule.ctxlab_should_summarize(short, ctx_for(short, 6_000)) is None


def test_cached_prefix_summarizer_sends_the_agents_request_plus_one_instruction(mw_kit):
    model = mw_kit.FakeSummarizer(mode="fixed")
    system = SystemMessage("You are the agent.")
    span = [HumanMessage("FACT-TASK do it"), AIMessage("working")]
    kept = [HumanMessage("and then")]
    job = SummaryJob(
        messages=span, prompt="Summarize: {messages}", budget_tokens=10_000, kept=kept, system=system
    )
    result = CachedPrefixSummarizer(model).summarize(job)
    assert result.error is None and result.text.startswith("SUMMARY-1")
    sent = model.calls[0]["input"].split("\n")
    assert sent[:4] == ["You are the agent.", "FACT-TASK do it", "working", "and then"]
    assert sent[4] == "Summarize: (the conversation above, except its last 1 messages, which stay verbatim)"
    assert "nostream" in model.calls[0]["tags"]


def test_ars_cache_replays_the_sample_with_dollar_decisions():
    from ctxlab.replay import replay

    result = replay(
        SAMPLE,
        "ars-cache",
        settings=CompressionSettings(summary_threshold=16),
        price_model="anthropic:claude-sonnet-4-5",
    )
    reasons = [e["stats"].get("l2_decision") for e in result.events if e.get("stats", {}).get("l2_decision")]
    # above T2 every decision is the dollar rule's; at most T2 the ARS rule's (R7)
    assert all(
        r.startswith("ars-cache: ") or (r.startswith("ars: L1 estimate") and "<= T2" in r) for r in reasons
    )
    paid = [r for r in reasons if r.startswith("ars-cache: pays: ")]
    assert paid
    for r in paid:  # each compaction's break-even is within the calls it expects
        k = float(r.split("break-even after ")[1].split(" calls")[0])
        horizon = int(r.split("/call), ")[1].split(" calls expected")[0])
        assert k <= horizon
    assert all(int(r["summarizer_input_tokens"] or 0) == 0 for r in result.rows)
    with pytest.raises(KeyError, match="nobody:none"):
        replay(SAMPLE, "ars-cache", price_model="nobody:none")


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i % 97} w{i}" for i in range(n))


def _long_plans(turns: int = 3) -> Transcript:
    """A hand-built run: three long assistant plans (~11K tokens each) with a short tool result each."""
    m: list[BaseMessage] = [SystemMessage("You are a coding agent."), HumanMessage("Refactor src/parse.py.")]
    for i in range(turns):
        call = {"id": f"c{i}", "name": "bash", "args": {"command": f"python step{i}.py"}, "type": "tool_call"}
        m.append(AIMessage(f"Plan step {i}: " + _words(2600, f"p{i}"), tool_calls=[call]))
        m.append(ToolMessage(f"ran step{i}.py: ok", tool_call_id=f"c{i}", name="bash"))
    m.append(AIMessage("Done."))
    return Transcript(messages=m, source="plans.json", run_id="plans.json", format="test")


def _decisions(result) -> dict[int, str]:
    return {
        int(e["call_index"]): e["stats"]["l2_decision"]
        for e in result.events
        if e.get("stats", {}).get("l2_decision", "").startswith("ars-cache")
    }


def _numbers(reason: str) -> tuple[float, float, float, int]:
    """(k, extra USD, saving USD per call, horizon) of a decision's reason."""
    k = float(reason.split("break-even after ")[1].split(" calls")[0])
    extra = float(reason.split("(extra $")[1].split(",")[0])
    saving = float(reason.split("saving $")[1].split("/call")[0])
    horizon = int(reason.split("/call), ")[1].split(" calls expected")[0])
    return k, extra, saving, horizon


def test_ars_cache_follows_the_runs_price_row(monkeypatch):
    """The same run under two price rows: at Sonnet 4.5's write premium (explicit caching) the
    compaction on call 3 does not pay within the 3 calls it expects; at GPT-4.1's (automatic: a new
    prefix costs the input price, a cached read a quarter of it) it does, so only that replay
    summarizes.  $CTXLAB_CACHE_PRICE_MODEL names the other row and is ignored, and recorded so."""
    from ctxlab.replay import replay_many

    monkeypatch.setenv("CTXLAB_CACHE_PRICE_MODEL", "anthropic:claude-sonnet-4-5")
    results = {
        row.key: replay_many(
            [_long_plans()],
            ["ars-cache"],
            settings=CompressionSettings(summary_threshold=16),
            price_model=row.key,
            progress=False,
        )
        for row in (SONNET, GPT41)
    }
    sonnet, gpt = (_decisions(results[r.key]) for r in (SONNET, GPT41))
    assert set(sonnet) == set(gpt) and 3 in sonnet
    ks, es, ss, hs = _numbers(sonnet[3])
    kg, eg, sg, hg = _numbers(gpt[3])
    assert hs == hg == 3  # the same view, the same horizon
    assert sonnet[3].startswith("ars-cache: does not pay yet") and ks > 3
    assert gpt[3].startswith("ars-cache: pays") and kg <= 3
    # the cost model's terms move as the rows' prices say: a dearer write (3.75 vs 2.00 per MTok
    # entering the cache, 0.30 vs 0.50 per MTok read) makes the extra cost larger and the saving smaller
    assert es > eg and ss < sg
    assert ss / sg == pytest.approx(SONNET.cached_input / GPT41.cached_input, rel=0.01)
    l2 = {k: int(res.summary()["l2_rounds"].sum()) for k, res in results.items()}
    assert l2 == {SONNET.key: 0, GPT41.key: 1}
    record = results[GPT41.key].provenance["strategies"]["ars-cache"]["parameters"]
    assert record == {
        "price_row": GPT41.key,
        "price_from": "the given price row",
        "ignored": "$CTXLAB_CACHE_PRICE_MODEL=anthropic:claude-sonnet-4-5",
    }
    assert results[SONNET.key].provenance["strategies"]["ars-cache"]["parameters"] == {
        "price_row": SONNET.key,
        "price_from": "the given price row",
    }


def test_cache_plugins_for_an_agent_take_a_price_row_else_the_environment(monkeypatch):
    from ctxlab.core.cache import CacheAwareSummarize
    from ctxlab.replay.strategies import cache_plugins

    monkeypatch.delenv("CTXLAB_CACHE_PRICE_MODEL", raising=False)
    decide = cache_plugins(price="openai:gpt-4.1")[0]
    assert isinstance(decide, CacheAwareSummarize) and decide.prices == CachePrices.of(GPT41)
    default = cache_plugins()[0]
    assert default.provenance == {  # type: ignore[attr-defined]
        "price_row": "anthropic:claude-sonnet-4-5",
        "price_from": "the default price row (no price given)",
    }
    monkeypatch.setenv("CTXLAB_CACHE_PRICE_MODEL", "openai:gpt-4.1")
    fallback = cache_plugins()[0]
    assert fallback.prices == CachePrices.of(GPT41)  # type: ignore[attr-defined]
    assert fallback.provenance["price_from"] == "$CTXLAB_CACHE_PRICE_MODEL"  # type: ignore[attr-defined]
    monkeypatch.setenv("CTXLAB_CACHE_PRICE_MODEL", "nobody:none")
    with pytest.raises(KeyError, match="nobody:none"):
        cache_plugins()


def test_cache_aware_cutoff_keeps_its_own_window_and_never_splits_a_tool_pair():
    from ctxlab.core.cache import CACHE_KEEP_MESSAGES, CacheAwareCutoff
    from ctxlab.core.cutoff import CutoffContext

    call = AIMessage(
        "", tool_calls=[{"name": "bash", "args": {"command": "ls"}, "id": "t1", "type": "tool_call"}]
    )
    msgs = [
        HumanMessage("task"),
        AIMessage("plan"),
        HumanMessage("more"),
        call,
        ToolMessage("out", tool_call_id="t1"),
    ]
    ctx = CutoffContext(
        keep_messages=10, has_previous_summary=False, estimate=lambda m: 1, target_tokens=100.0
    )
    decision = CacheAwareCutoff(CACHE_KEEP_MESSAGES).ctxlab_select_cutoff(msgs, ctx)
    assert CACHE_KEEP_MESSAGES == 2 and decision.index == 3  # the call and its result stay together
    assert decision.reason.startswith("ars-cache: kept 2 messages")
    one = CacheAwareCutoff(1).ctxlab_select_cutoff(msgs, ctx)
    assert one.index == 3  # cutting between the call and its result is never valid (R9)
    with pytest.raises(ValueError, match="keep_messages=0 is invalid"):
        CacheAwareCutoff(0)
