"""``ctxlab eval``'s success measure (:mod:`ctxlab.analysis.success`): the Wilson interval of a
success rate, the executive summary's best (only when told apart, by compare's paired rule) and
what answered, the report's tables (s39 trial, finding 6)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from ctxlab.analysis.success import success_markdown, success_summary, success_table, wilson_interval


def _frame(solved: dict[str, list[int]]) -> pl.DataFrame:
    """One row per sample and strategy: ``success`` as given, 54,243 tokens and $0.0449 each."""
    rows = [
        {
            "transcript": f"s{i}#1",
            "strategy": name,
            "data_provenance": "scripted",
            "success": float(v),
            "tokens": 54_243,
            "cost_usd": 0.0449,
        }
        for name, values in solved.items()
        for i, v in enumerate(values)
    ]
    return pl.DataFrame(rows)


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927) at 95 %, written out: z = 1.959964."""
    z, p = 1.959963984540054, k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def test_a_success_rate_of_nine_in_nine_has_a_wilson_interval_not_a_point() -> None:
    low, high = wilson_interval(9, 9)
    assert low == pytest.approx(9 / (9 + 1.959963984540054**2)) == pytest.approx(0.7009, abs=1e-4)
    assert high == 1.0
    assert wilson_interval(3, 9) == pytest.approx(_wilson(3, 9))
    assert wilson_interval(0, 9)[0] == 0.0 and wilson_interval(0, 9)[1] == pytest.approx(1 - 0.7009, abs=1e-4)
    with pytest.raises(ValueError, match="successes=10 is invalid"):
        wilson_interval(10, 9)
    row = success_table(_frame({"none": [1] * 9})).row(0, named=True)
    assert (row["success_low"], row["success_high"]) == pytest.approx((0.7009, 1.0), abs=1e-4)


def test_no_best_is_named_when_the_top_two_are_not_told_apart() -> None:
    """s39 trial: "Best success rate: none, 100.0 % (95 % CI 100.0 % to 100.0 %)" and then "No
    single winner": none and ars both solved 9 of 9 (no sample differs)."""
    lines = success_summary(
        _frame({"none": [1] * 9, "ars": [1] * 9, "masking": [0, 0, 0, 1, 1, 1, 0, 0, 0]}),
        model="ctxlab/reader",
    )
    assert lines[0].startswith(
        "Answers written by an offline stand-in (ctxlab/reader), not a model: 9 samples"
    )
    assert not any(line.startswith("Best success rate") for line in lines)
    assert lines[1].startswith(
        "No best success rate: none 100.0 % (9 of 9, 95 % CI 70.1 % to 100.0 %) is not told apart from "
        "ars 100.0 % (9 of 9, 95 % CI 70.1 % to 100.0 %)"
    )
    assert "masking 33.3 %" not in lines[1]  # masking is told apart from the top (6 samples differ)
    assert "masking vs none: -66.7 points of success" in lines[3] and lines[3].endswith(": worse.")


def test_a_best_is_named_only_when_it_is_told_apart_from_the_runner_up() -> None:
    """Five samples that differ are below MIN_PAIRED_RUNS: no best, whatever the interval."""
    few = success_summary(_frame({"ars": [1] * 9, "masking": [0] * 5 + [1] * 4}), model="anthropic/x")
    assert few[0].startswith("Answers written by anthropic/x: ")
    assert few[1].startswith("No best success rate: ars 100.0 %")
    assert "too few samples differ to call (5 of 9, < 6)" in few[2]
    many = success_summary(_frame({"ars": [1] * 9, "masking": [0] * 6 + [1] * 3}))
    assert many[1].startswith(
        "Best success rate: ars 100.0 % (9 of 9, 95 % CI 70.1 % to 100.0 %): above every"
    )


def test_the_report_table_formats_its_cells() -> None:
    md = success_markdown(success_table(_frame({"none": [1] * 9, "masking": [0] * 6 + [1] * 3})))
    lines = md.splitlines()
    assert lines[0] == (
        "| strategy | samples | solved | success % | 95 % CI (Wilson) | tokens / solved | $ / solved | $ / sample | errors |"
    )
    assert lines[2] == "| none | 9 | 9 | 100.0 | 70.1 to 100.0 | 54,243 | 0.0449 | 0.0449 | 0 |"
    assert lines[3] == "| masking | 9 | 3 | 33.3 | 12.1 to 64.6 | 162,729 | 0.1347 | 0.0449 | 0 |"
