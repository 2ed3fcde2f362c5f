"""Cost and fidelity columns of a replay: the wiring from the engine's rows to the measures."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.replay.prices import DEFAULT_PRICE_MODEL, PriceRow
from ctxlab.replay.run_measures import RUN_MEASURE_COLUMNS, resolve_price, summarized_span

SETTINGS = CompressionSettings(
    summary_threshold=1, summary_keep_messages=2, summary_tool_result_token_limit=100
)
# one US dollar per million input tokens, two per million output tokens, no caching
FLAT = PriceRow("flat", "one-two", "none", input=1.0, cached_input=1.0, cache_write=1.0, output=2.0)
M = 1_000_000


def transcript(path: Path, calls: int = 8) -> Path:
    """The first tool result holds ``magic_token_4711``; later results are long; the last answer
    uses the token, which by then stood only in the summarized span."""
    msgs: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find the setting that breaks app/config.py."},
    ]
    for i in range(calls):
        msgs.append(
            {
                "role": "assistant",
                "content": f"Step {i}: reading part {i}.",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"part": i})},
                    }
                ],
            }
        )
        body = "the culprit is magic_token_4711" if i == 0 else " ".join(f"word{j}" for j in range(600))
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "name": "read_file", "content": body})
    msgs.append({"role": "assistant", "content": "Done: remove magic_token_4711 from app/config.py."})
    path.write_text(json.dumps(msgs), encoding="utf-8")
    return path


def test_every_row_gets_the_measure_columns_and_costs_follow_the_token_columns(tmp_path: Path) -> None:
    result = replay_many(
        [transcript(tmp_path / "run.json")], ["ars"], settings=SETTINGS, progress=False, price_model=FLAT
    )
    assert result.price == FLAT
    assert all(set(RUN_MEASURE_COLUMNS) <= set(r) for r in result.rows)
    calls = result.frame()
    assert "L2" in calls["level"].to_list()
    for r in calls.iter_rows(named=True):
        assert r["cost_usd"] == pytest.approx((r["view_tokens"] + 2 * r["output_tokens"]) / M)
        assert r["raw_cost_usd"] == pytest.approx((r["raw_tokens"] + 2 * r["output_tokens"]) / M)
        summ = (r["summarizer_input_tokens"] + 2 * r["summarizer_output_tokens"]) / M
        assert r["summarizer_cost_usd"] == pytest.approx(summ)
        assert (r["cache_read_tokens"], r["cache_write_tokens"]) == (0, 0)
    total = result.summary().row(0, named=True)
    assert total["cost_usd"] == pytest.approx(calls["cost_usd"].sum() + calls["summarizer_cost_usd"].sum())
    assert total["cost_saving_pct"] == pytest.approx(100 * (1 - total["cost_usd"] / total["raw_cost_usd"]))


def test_each_round_records_its_fidelity_in_the_summary_and_the_row(tmp_path: Path) -> None:
    result = replay_many([transcript(tmp_path / "run.json")], ["ars"], settings=SETTINGS, progress=False)
    calls = result.frame()
    rounds = [s for s in result.summaries if s["strategy"] == "ars"]
    assert rounds
    for s in rounds:
        row = calls.filter(pl.col("call_index") == s["call_index"]).row(0, named=True)
        assert row["needed_identifiers"] == s["needed_identifiers"]
        assert row["needed_carried"] == s["needed_carried"]
        assert row["span_identifiers"] == s["span_identifiers"] > 0
    # the token of the first tool result was summarized away and used by the last answer
    first = rounds[0]
    assert first["needed_identifiers"] >= 1
    assert ("magic_token_4711" in first["dropped"]) == ("magic_token_4711" not in first["text"])
    no_round = calls.filter(pl.col("level") != "L2")
    assert no_round["needed_identifiers"].is_null().all()
    total = result.summary().row(0, named=True)
    assert total["needed_recall"] == pytest.approx(
        calls["needed_carried"].sum() / calls["needed_identifiers"].sum()
    )


def test_explicit_caching_reads_what_the_previous_call_shared(tmp_path: Path) -> None:
    roomy = SETTINGS.replace(summary_threshold=16)  # no compression: every view repeats the last one
    result = replay_many([transcript(tmp_path / "run.json")], ["ars"], settings=roomy, progress=False)
    assert result.price is not None and result.price.key == DEFAULT_PRICE_MODEL
    calls = result.frame().sort("call_index")
    assert calls["cache_read_tokens"][0] == 0
    grown = calls.filter(pl.col("cache_reusable_tokens") >= 1024)
    assert grown.height >= 3 and (grown["cache_read_tokens"] == grown["cache_reusable_tokens"]).all()
    # an agent's breakpoint on the last message: each call writes the rest of its request
    read = calls["cache_read_tokens"]
    expected = pl.when(calls["view_tokens"] >= 1024).then(calls["view_tokens"] - read).otherwise(0)
    assert calls.select(expected.alias("w"))["w"].to_list() == calls["cache_write_tokens"].to_list()
    # the oracle (an upper bound): each call writes only what the next one repeats, the last nothing
    oracle = replay_many(
        [transcript(tmp_path / "run.json")],
        ["ars"],
        settings=roomy,
        progress=False,
        cache_breakpoints="oracle",
    )
    calls = oracle.frame().sort("call_index")
    nxt = calls["cache_reusable_tokens"].shift(-1).fill_null(0)
    read = calls["cache_read_tokens"]
    expected = pl.when((nxt >= 1024) & (nxt > read)).then(nxt - read).otherwise(0)
    assert calls.select(expected.alias("w"))["w"].to_list() == calls["cache_write_tokens"].to_list()
    assert (calls["cache_read_tokens"] + calls["cache_write_tokens"] <= calls["view_tokens"]).all()
    assert oracle.frame()["cost_usd"].sum() < result.frame()["cost_usd"].sum()
    assert oracle.provenance["cost_model"]["cache_breakpoints"] == "oracle"


def test_resolve_price() -> None:
    assert resolve_price().key == DEFAULT_PRICE_MODEL
    assert resolve_price("openai:gpt-4.1").caching == "automatic"
    assert resolve_price(FLAT) is FLAT
    with pytest.raises(KeyError, match="no price row"):
        resolve_price("nobody:nothing")


def test_the_summarized_span_is_what_the_view_no_longer_holds() -> None:
    a, b = HumanMessage("task", id="1"), AIMessage("step", id="2")
    c = ToolMessage("long output", tool_call_id="t", id="3")
    c_trimmed = ToolMessage("[trimmed]", tool_call_id="t", id="3")  # L1 in place: same id
    d = HumanMessage("new", id="4")
    summary = HumanMessage("summary", id="s", additional_kwargs={"lc_source": "summarization"})
    assert summarized_span([a, b, c], [d], [summary, c_trimmed, d]) == [a, b]
    no_ids = [HumanMessage("x"), HumanMessage("y")]
    assert summarized_span(no_ids, [], [summary, HumanMessage("y")]) == [no_ids[0]]
