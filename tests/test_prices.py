"""The price table: the shipped rows, and errors that name the file, the row and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.replay.prices import (
    CACHING_FAMILIES,
    DEFAULT_PRICE_MODEL,
    PriceTableError,
    load_prices,
    parse_prices,
)

GOOD_ROW = """
[[prices]]
provider = "acme"
model = "m1"
caching = "explicit"
input = 3.0
cached_input = 0.3
cache_write = 3.75
output = 15.0
min_prefix_tokens = 1024
ttl_seconds = 300
as_of = 2026-12-01
source = "https://example.com/pricing"
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "my-prices.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_the_shipped_table_covers_four_providers_with_dates_and_sources() -> None:
    table = load_prices()
    assert {r.provider for r in table} >= {"openai", "anthropic", "google", "deepseek"}
    for r in table:
        assert r.caching in CACHING_FAMILIES
        assert r.source.startswith("https://") and len(r.as_of) == 10
        assert r.cached_input <= r.input <= r.output
    assert table.get(DEFAULT_PRICE_MODEL).caching == "explicit"
    gpt = table.get("openai:gpt-4.1")
    assert (gpt.min_prefix_tokens, gpt.granularity_tokens, gpt.cache_write) == (1024, 128, gpt.input)
    sonnet = table.get("anthropic:claude-sonnet-4-5")
    assert sonnet.cache_write == pytest.approx(1.25 * sonnet.input)
    assert sonnet.cached_input == pytest.approx(0.1 * sonnet.input)


def test_a_users_file_replaces_the_table(tmp_path: Path) -> None:
    table = load_prices(write(tmp_path, GOOD_ROW))
    assert table.keys() == ["acme:m1"]
    row = table.get("acme:m1")
    assert (row.as_of, row.ttl_seconds, row.granularity_tokens) == ("2026-12-01", 300.0, 1)
    assert "acme:m1" in row.label() and "2026-12-01" in row.label()
    with pytest.raises(KeyError, match="acme:m1"):
        table.get("openai:gpt-4.1")


def test_a_bad_field_is_named_with_its_file_and_row(tmp_path: Path) -> None:
    path = write(
        tmp_path, GOOD_ROW + GOOD_ROW.replace('"m1"', '"m2"').replace("input = 3.0", 'input = "cheap"')
    )
    with pytest.raises(PriceTableError) as err:
        load_prices(path)
    assert (err.value.path, err.value.row, err.value.field) == (str(path), 2, "input")
    assert str(err.value).startswith(f"{path}: row 2: field 'input': expected a number")


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (("output = 15.0", "output = -1"), "output", "non-negative"),
        (("output = 15.0", "imput = 1.0\noutput = 15.0"), "imput", "unknown field"),
        (('source = "https://example.com/pricing"', ""), "source", "missing"),
        (("cache_write = 3.75", ""), "cache_write", "required with caching = 'explicit'"),
        (('caching = "explicit"', 'caching = "magic"'), "caching", "expected one of"),
        (("as_of = 2026-12-01", 'as_of = "last week"'), "as_of", "expected a date"),
        (("min_prefix_tokens = 1024", "min_prefix_tokens = 10.5"), "min_prefix_tokens", "integer"),
        (("ttl_seconds = 300", "ttl_seconds = 0"), "ttl_seconds", "positive"),
    ],
)
def test_each_invalid_field_is_reported(
    tmp_path: Path, change: tuple[str, str], field: str, problem: str
) -> None:
    with pytest.raises(PriceTableError, match=problem) as err:
        load_prices(write(tmp_path, GOOD_ROW.replace(*change)))
    assert (err.value.row, err.value.field) == (1, field)


def test_file_level_problems() -> None:
    with pytest.raises(PriceTableError, match="already defined in row 1") as err:
        parse_prices(GOOD_ROW + GOOD_ROW, path="dup.toml")
    assert (err.value.row, err.value.field) == (2, "model")
    with pytest.raises(PriceTableError, match="not valid TOML"):
        parse_prices("[[prices]\n", path="broken.toml")
    with pytest.raises(PriceTableError, match=r"\[\[prices\]\] rows"):
        parse_prices("[meta]\nnote = 'empty'\n", path="empty.toml")
    with pytest.raises(PriceTableError, match="only USD"):
        parse_prices('[meta]\ncurrency = "EUR"\n' + GOOD_ROW, path="eur.toml")


def test_automatic_rows_default_to_no_write_premium() -> None:
    text = GOOD_ROW.replace('caching = "explicit"', 'caching = "automatic"').replace(
        "cache_write = 3.75\n", ""
    )
    assert parse_prices(text).get("acme:m1").cache_write == 3.0


TIER = """
[[prices.tiers]]
above_input_tokens = 200000
input = 6.0
cached_input = 0.6
cache_write = 7.5
output = 22.5
"""


def test_long_context_tiers_are_read_and_price_requests_above_them() -> None:
    row = parse_prices(GOOD_ROW + TIER).get("acme:m1")
    assert row.at(200_000) is row  # at the threshold: the base prices
    high = row.at(200_001)
    assert (high.input, high.cached_input, high.cache_write, high.output) == (6.0, 0.6, 7.5, 22.5)
    assert "above 200,000 input tokens: input 6" in row.label()
    sonnet = load_prices().get("anthropic:claude-sonnet-4-5")
    assert [(t.above_input_tokens, t.input, t.output) for t in sonnet.tiers] == [(200_000, 6.0, 22.5)]


@pytest.mark.parametrize(
    ("tier", "field", "problem"),
    [
        (TIER.replace("cache_write = 7.5\n", ""), "tiers[1].cache_write", "missing"),
        (
            TIER.replace("above_input_tokens = 200000", "above_input_tokens = 0"),
            "tiers[1].above_input_tokens",
            ">= 1",
        ),
        (TIER + TIER, "tiers[2].above_input_tokens", "rise strictly"),
        (TIER.replace("output = 22.5", "outputs = 22.5"), "tiers[1].outputs", "unknown field"),
    ],
)
def test_a_bad_tier_is_named(tier: str, field: str, problem: str) -> None:
    with pytest.raises(PriceTableError, match=problem) as err:
        parse_prices(GOOD_ROW + tier, path="tiers.toml")
    assert (err.value.row, err.value.field) == (1, field)
