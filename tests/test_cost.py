"""Cost with prompt caching on hand-built runs whose price is known by construction."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from ctxlab.replay.cost import CallTokens, PromptCache, price_run, total_cost, view_segments
from ctxlab.replay.metrics import RequestView, cache_reusable_tokens, make_measure, view_parts
from ctxlab.replay.prices import PriceRow

M = 1_000_000

OPENAI = PriceRow(
    "openai",
    "test",
    "automatic",
    input=2.0,
    cached_input=0.5,
    cache_write=2.0,
    output=8.0,
    min_prefix_tokens=1024,
    granularity_tokens=128,
    ttl_seconds=300,
)
ANTHROPIC = PriceRow(
    "anthropic",
    "test",
    "explicit",
    input=3.0,
    cached_input=0.3,
    cache_write=3.75,
    output=15.0,
    min_prefix_tokens=1024,
    ttl_seconds=300,
)
GEMINI = PriceRow(
    "google",
    "test",
    "implicit",
    input=0.30,
    cached_input=0.03,
    cache_write=0.30,
    output=2.5,
    min_prefix_tokens=2048,
)
DEEPSEEK = PriceRow(
    "deepseek",
    "test",
    "implicit",
    input=0.56,
    cached_input=0.07,
    cache_write=0.56,
    output=1.68,
    min_prefix_tokens=64,
    granularity_tokens=64,
)
FLAT = PriceRow("none", "test", "none", input=1.0, cached_input=1.0, cache_write=1.0, output=2.0)


def call(*parts: tuple[str, int], out: int = 0, time: float | None = None, kind: str = "main") -> CallTokens:
    return CallTokens(sum(t for _, t in parts), out, segments=tuple(parts), time=time, kind=kind)


# --- automatic prefix caching (OpenAI-style) ---------------------------------------------------------


def test_a_shared_2048_token_prefix_is_read_at_the_cached_price() -> None:
    first = call(("sys", 1000), ("task", 1048), out=100)
    second = call(("sys", 1000), ("task", 1048), ("obs", 500), out=100)
    c1, c2 = price_run([first, second], OPENAI)
    assert (c1.cache_read_tokens, c1.cache_write_tokens) == (0, 0)
    assert c1.total_usd == pytest.approx((2048 * 2.0 + 100 * 8.0) / M)
    assert (c2.cache_read_tokens, c2.uncached_input_tokens) == (2048, 500)
    assert c2.total_usd == pytest.approx((2048 * 0.5 + 500 * 2.0 + 100 * 8.0) / M)
    assert c2.uncached_usd == pytest.approx((2548 * 2.0 + 100 * 8.0) / M)


def test_hits_count_in_128_token_steps_and_only_from_1024_tokens() -> None:
    _, c = price_run([call(("p", 2100)), call(("p", 2100), ("q", 10))], OPENAI)
    assert c.cache_read_tokens == 2048
    _, c = price_run([call(("p", 1000)), call(("p", 1000), ("q", 500))], OPENAI)
    assert c.cache_read_tokens == 0


def test_a_changed_message_ends_the_reusable_prefix() -> None:
    first = call(("sys", 1100), ("obs", 3000))
    trimmed = call(("sys", 1100), ("obs-trimmed", 200), ("next", 50))
    _, c = price_run([first, trimmed], OPENAI)
    assert c.cache_read_tokens == 1024  # 1,100 tokens of system, counted down to 128-token steps


def test_the_common_prefix_alone_prices_like_the_segments() -> None:
    by_number = [
        CallTokens(2048, 100, common_prefix_tokens=0),
        CallTokens(2548, 100, common_prefix_tokens=2048),
    ]
    by_segments = [
        call(("sys", 1000), ("task", 1048), out=100),
        call(("sys", 1000), ("task", 1048), ("o", 500), out=100),
    ]
    assert price_run(by_number, OPENAI) == price_run(by_segments, OPENAI)


def test_a_common_prefix_shorter_than_the_previous_request_is_read() -> None:
    # the previous request (3,000 tokens) is cached whole; this one repeats its first 2,100
    calls = [CallTokens(3000, common_prefix_tokens=0), CallTokens(2500, common_prefix_tokens=2100)]
    assert price_run(calls, OPENAI)[1].cache_read_tokens == 2048
    # the oracle wrote only up to the breakpoint the next call repeats, so it reads it all
    assert price_run(calls, ANTHROPIC, breakpoint="oracle")[1].cache_read_tokens == 2100
    # with the breakpoint at the end of the request, the entry (3,000 tokens) is not repeated
    assert price_run(calls, ANTHROPIC, breakpoint="last")[1].cache_read_tokens == 0


def test_an_empty_request_is_uncached() -> None:
    assert price_run([CallTokens(0, 5, segments=())], ANTHROPIC)[0].total_usd == pytest.approx(5 * 15.0 / M)


def test_an_entry_older_than_the_lifetime_is_not_read() -> None:
    calls = [call(("p", 4096), time=0.0), call(("p", 4096), ("q", 1), time=400.0)]
    assert price_run(calls, OPENAI)[1].cache_read_tokens == 0
    calls = [call(("p", 4096), time=0.0), call(("p", 4096), ("q", 1), time=200.0)]
    assert price_run(calls, OPENAI)[1].cache_read_tokens == 4096


# --- explicit breakpoints (Anthropic-style) ----------------------------------------------------------

S, U, A, V, B, W = ("S", 2000), ("U", 100), ("A", 50), ("V", 100), ("B", 50), ("W", 100)


def anthropic_run(times: tuple[float | None, ...] = (None, None, None)) -> list[CallTokens]:
    return [call(S, U, time=times[0]), call(S, U, A, V, time=times[1]), call(S, U, A, V, B, W, time=times[2])]


def test_the_oracle_writes_the_reusable_prefix_at_the_premium_and_later_calls_read_it() -> None:
    c1, c2, c3 = price_run(anthropic_run(), ANTHROPIC, breakpoint="oracle")
    assert price_run(anthropic_run(), ANTHROPIC, breakpoint="reusable") == [c1, c2, c3]  # its old name
    assert (c1.cache_read_tokens, c1.cache_write_tokens, c1.uncached_input_tokens) == (0, 2100, 0)
    assert c1.total_usd == pytest.approx(2100 * 3.75 / M)
    assert (c2.cache_read_tokens, c2.cache_write_tokens, c2.uncached_input_tokens) == (2100, 150, 0)
    assert c2.total_usd == pytest.approx((2100 * 0.3 + 150 * 3.75) / M)
    # the last call is reused by no one: it reads and writes nothing more
    assert (c3.cache_read_tokens, c3.cache_write_tokens, c3.uncached_input_tokens) == (2250, 0, 150)
    assert c3.total_usd == pytest.approx((2250 * 0.3 + 150 * 3.0) / M)


def test_a_breakpoint_on_the_last_message_also_writes_what_no_call_reads() -> None:
    c3 = price_run(anthropic_run(), ANTHROPIC, breakpoint="last")[2]
    assert (c3.cache_read_tokens, c3.cache_write_tokens) == (2250, 150)


def test_an_entry_expires_five_minutes_after_its_last_use() -> None:
    expired = price_run(anthropic_run((0.0, 100.0, 500.0)), ANTHROPIC, breakpoint="oracle")[2]
    assert (expired.cache_read_tokens, expired.uncached_input_tokens) == (0, 2400)
    # the read at 250 s refreshes the entry: still alive at 500 s
    refreshed = price_run(anthropic_run((0.0, 250.0, 500.0)), ANTHROPIC, breakpoint="oracle")[2]
    assert refreshed.cache_read_tokens == 2250


def test_no_write_below_the_minimum_prefix() -> None:
    c1, c2 = price_run([call(("S", 500)), call(("S", 500), ("U", 10))], ANTHROPIC)
    assert (c1.cache_write_tokens, c2.cache_read_tokens) == (0, 0)


def test_rewriting_the_prefix_every_call_costs_more_than_no_cache() -> None:
    # a strategy whose view changes right after a short system message: every write is wasted
    calls = [call(("sys", 200), (f"view{i}", 3000)) for i in range(4)]
    costs = price_run(calls, ANTHROPIC, breakpoint="last")
    totals = total_cost(costs)
    assert totals.cache_read_tokens == 0
    assert totals.total_usd == pytest.approx(4 * 3200 * 3.75 / M)
    assert totals.total_usd > totals.uncached_usd
    # writing only what the next call reuses: the system message is under the minimum, so nothing
    oracle = total_cost(price_run(calls, ANTHROPIC, breakpoint="oracle"))
    assert oracle.total_usd == pytest.approx(totals.uncached_usd)
    # an agent's breakpoints write what it cannot know no one reads: as the last-message breakpoint
    assert total_cost(price_run(calls, ANTHROPIC)).total_usd == pytest.approx(totals.total_usd)


def test_the_agent_policy_keeps_the_system_prefix_cached_across_a_compaction() -> None:
    # system 1,500 + tools 500: an agent's breakpoint after them survives a rewritten view
    head = (("sys", 1500), ("tools", 500))
    calls = [call(*head, ("view", 3000)), call(*head, ("summary", 800), ("kept", 200))]
    agent = price_run(calls, ANTHROPIC)  # the default policy
    assert (agent[0].cache_read_tokens, agent[0].cache_write_tokens) == (0, 5000)
    assert (agent[1].cache_read_tokens, agent[1].cache_write_tokens) == (2000, 1000)
    # one breakpoint on the last message: the compaction rereads nothing
    assert price_run(calls, ANTHROPIC, breakpoint="last")[1].cache_read_tokens == 0
    # the oracle writes only what the next call repeats: the head, read after the compaction
    oracle = price_run(calls, ANTHROPIC, breakpoint="oracle")
    assert (oracle[0].cache_write_tokens, oracle[1].cache_read_tokens) == (2000, 2000)


def test_the_agent_policy_reads_only_entries_within_the_lookback_of_a_breakpoint() -> None:
    from ctxlab.replay.cost import agent_breakpoints

    first = call(("sys", 1500), ("t", 500), ("m", 3000))

    def grown(n: int) -> CallTokens:
        return call(("sys", 1500), ("t", 500), ("m", 3000), *((f"n{i}", 10) for i in range(n)))

    # four breakpoints: the head, the last message, 20 and 40 blocks before it
    assert agent_breakpoints(grown(65).segments or ()) == [2000, 5250, 5450, 5650]
    # the 5,000-token entry ends 65 blocks before the last breakpoint, 25 before the farthest one:
    # out of every lookback, only the head entry is seen
    assert price_run([first, grown(65)], ANTHROPIC)[1].cache_read_tokens == 2000
    assert price_run([first, grown(65)], ANTHROPIC, breakpoint="last")[1].cache_read_tokens == 5000
    # 25 blocks back: within the lookback of the breakpoint 20 blocks before the end
    assert price_run([first, grown(25)], ANTHROPIC)[1].cache_read_tokens == 5000
    assert price_run([first, grown(5)], ANTHROPIC)[1].cache_read_tokens == 5000


def test_a_long_context_tier_prices_the_whole_request() -> None:
    from ctxlab.replay.prices import PriceTier

    tiered = PriceRow(
        "anthropic",
        "tiered",
        "explicit",
        input=3.0,
        cached_input=0.3,
        cache_write=3.75,
        output=15.0,
        min_prefix_tokens=1024,
        tiers=(PriceTier(200_000, 6.0, 0.6, 7.5, 22.5),),
    )
    below, above = price_run([call(("p", 200_000), out=1000), call(("q", 200_001), out=1000)], tiered)
    assert below.total_usd == pytest.approx((200_000 * 3.75 + 1000 * 15.0) / M)
    assert above.total_usd == pytest.approx((200_001 * 7.5 + 1000 * 22.5) / M)
    assert above.uncached_usd == pytest.approx((200_001 * 6.0 + 1000 * 22.5) / M)


def test_the_explicit_rule_works_from_common_prefix_numbers() -> None:
    calls = [
        CallTokens(2100, common_prefix_tokens=0),
        CallTokens(2250, common_prefix_tokens=2100),
        CallTokens(2400, common_prefix_tokens=2250),
    ]
    assert price_run(calls, ANTHROPIC, breakpoint="oracle") == price_run(
        anthropic_run(), ANTHROPIC, breakpoint="oracle"
    )


# --- implicit caching (Gemini/DeepSeek-style) --------------------------------------------------------


def test_gemini_reads_an_eligible_prefix_at_a_90_percent_discount() -> None:
    _, c = price_run([call(("p", 3000)), call(("p", 3000), ("q", 1000))], GEMINI)
    assert (c.cache_read_tokens, c.cache_write_tokens) == (3000, 0)
    assert c.total_usd == pytest.approx((3000 * 0.03 + 1000 * 0.30) / M)
    _, c = price_run([call(("p", 2000)), call(("p", 2000), ("q", 1000))], GEMINI)
    assert c.cache_read_tokens == 0  # under Gemini 2.5's 2,048-token minimum


def test_deepseek_counts_hits_in_64_token_units() -> None:
    _, c = price_run([call(("p", 1000)), call(("p", 1000), ("q", 5))], DEEPSEEK)
    assert c.cache_read_tokens == 960


def test_no_caching_prices_every_input_token_at_the_input_price() -> None:
    costs = price_run([call(("p", 3000)), call(("p", 3000), ("q", 1000), out=10)], FLAT)
    assert costs[1].total_usd == pytest.approx((4000 * 1.0 + 10 * 2.0) / M)


# --- summarizer calls and totals ---------------------------------------------------------------------


def test_a_summarizer_call_without_a_prompt_is_uncached_and_leaves_the_cache_alone() -> None:
    summ = CallTokens(5000, 300, kind="summarizer")
    calls = [call(("p", 4096)), summ, call(("p", 4096), ("q", 10))]
    costs = price_run(calls, OPENAI)
    assert costs[1].cache_read_tokens == 0
    assert costs[1].total_usd == pytest.approx((5000 * 2.0 + 300 * 8.0) / M)
    assert costs[2].cache_read_tokens == 4096
    totals = total_cost(costs)
    assert (totals.calls, totals.summarizer_calls) == (2, 1)
    assert totals.summarizer_usd == pytest.approx(costs[1].total_usd)
    assert totals.total_usd == pytest.approx(sum(c.total_usd for c in costs))


def test_a_summarizer_call_that_starts_like_the_main_call_reads_its_prefix() -> None:
    summ = call(("p", 4096), ("summarize this", 50), kind="summarizer")
    costs = price_run([call(("p", 4096)), summ], OPENAI)
    assert costs[1].cache_read_tokens == 4096


def test_prompt_cache_charges_one_call_at_a_time() -> None:
    cache = PromptCache(OPENAI)
    cache.charge(call(("p", 2048)))
    assert cache.charge(call(("p", 2048), ("q", 1))).cache_read_tokens == 2048


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="breakpoint"):
        price_run([], ANTHROPIC, breakpoint="middle")
    with pytest.raises(ValueError, match="more than input_tokens"):
        CallTokens(10, segments=(("p", 20),))
    with pytest.raises(ValueError, match=">= 0"):
        CallTokens(-1)


# --- from a replay's request views -------------------------------------------------------------------


def test_view_segments_sum_to_the_view_and_share_the_replays_reusable_prefix() -> None:
    measure = make_measure("char-class")
    sys, task, ans, obs = (
        SystemMessage("You are an agent."),
        HumanMessage("task " * 50),
        AIMessage("ok"),
        HumanMessage("x"),
    )
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    prev, cur = RequestView(sys, tools, [task]), RequestView(sys, tools, [task, ans, obs])
    segs_prev, segs_cur = view_segments(prev, measure), view_segments(cur, measure)
    assert sum(t for _, t in segs_cur) == sum(view_parts(cur, measure).values())
    free = PriceRow("t", "t", "automatic", input=1.0, cached_input=0.0, cache_write=1.0, output=0.0)
    _, c = price_run(
        [
            CallTokens(sum(t for _, t in segs_prev), segments=segs_prev),
            CallTokens(sum(t for _, t in segs_cur), segments=segs_cur),
        ],
        free,
    )
    assert c.cache_read_tokens == cache_reusable_tokens(prev, cur, measure)
