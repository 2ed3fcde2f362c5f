"""The provider's window in every baseline (issue 27): the replay's window defaults to the price
row's model's, an uncompressed request above it is marked ``over_window`` per call, its
no-compression baseline is infeasible, and savings are stated over the feasible calls."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ctxlab import CompressionSettings
from ctxlab.replay import replay, replay_many
from ctxlab.replay.prices import load_prices
from ctxlab.replay.provider import ContextWindow, profile_window
from ctxlab.transcripts import load_transcripts

RAW = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw"
KATY = RAW / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"


@pytest.fixture(scope="module")
def katy() -> Path:
    assert KATY.is_file(), f"shared transcript missing: {KATY}"
    return KATY


def test_the_window_defaults_to_the_price_rows_model(katy: Path) -> None:
    result = replay(katy, "ars")
    assert result.window is not None and "anthropic:claude-sonnet-4-5" in result.window
    assert result.window.startswith(f"{profile_window('anthropic:claude-sonnet-4-5'):,} tokens")
    assert result.provenance["context_window"] == result.window
    # a row whose provider package ships no profile here: no window, and the provenance says why
    row = next(r for r in load_prices() if r.provider == "openai")
    other = replay(katy, "ars", price_model=row.key)
    assert other.window is None
    assert other.provenance["context_window"].startswith(
        f"none: the price row's model {row.key} has no window"
    )
    assert {r["over_window"] for r in other.rows} == {None}
    assert replay(katy, "ars", context_window=None).provenance["context_window"] == "none (none asked)"


def test_an_over_window_call_is_marked_and_its_baseline_is_infeasible(katy: Path) -> None:
    """A window the run outgrows: the calls whose uncompressed request is above it are marked,
    counted with the provider stand-in's counter; savings are also stated over the others."""
    [t] = load_transcripts(katy)
    window = ContextWindow(6_000)
    settings = CompressionSettings(summary_threshold=4)
    result = replay_many(
        [t], ["ars", "ars-extractive"], settings=settings, context_window=window, progress=False
    )
    calls = result.frame()
    # the uncompressed requests, as the provider stand-in counts them
    exact = [
        window.request_tokens(v.system, v.tools, v.messages)
        for v in replay(t, "recorded", settings=settings, context_window=None, keep_views=True).views.values()
    ]
    ars = calls.filter(pl.col("strategy") == "ars")
    assert ars["over_window"].to_list() == [n > 6_000 for n in exact]
    over = sum(n > 6_000 for n in exact)
    assert 0 < over < len(exact)
    # the flag is the uncompressed request's: the same for every strategy
    other = calls.filter(pl.col("strategy") == "ars-extractive")
    assert other["over_window"].to_list() == ars["over_window"].to_list()
    # sending everything fails there, as a provider would refuse it
    failed = replay_many([t], ["recorded"], settings=settings, context_window=window, progress=False)
    assert [e.kind for e in failed.errors] == ["replay"] and "ContextOverflowError" in failed.errors[
        0
    ].problem
    summary = result.summary().filter(pl.col("strategy") == "ars").row(0, named=True)
    assert summary["infeasible_calls"] == over
    assert summary["infeasible_share"] == pytest.approx(over / len(exact))
    fits = ars.filter(~pl.col("over_window"))
    assert summary["saving_pct_feasible"] == pytest.approx(
        100 * (1 - fits["view_tokens"].sum() / fits["raw_tokens"].sum())
    )
    assert summary["saving_pct_feasible"] != pytest.approx(summary["saving_pct"])
    # the sent requests of ars fit (it compressed, or the provider refused and it compressed again)
    assert all(
        window.request_tokens(v.system, v.tools, v.messages) <= 6_000
        for v in replay(t, "ars", settings=settings, context_window=window, keep_views=True).views.values()
    )


def test_without_a_window_every_call_is_feasible(katy: Path) -> None:
    result = replay(katy, "ars", context_window=None, settings=CompressionSettings(summary_threshold=4))
    summary = result.summary().row(0, named=True)
    assert summary["infeasible_calls"] == 0 and summary["infeasible_share"] is None
    assert summary["saving_pct_feasible"] == pytest.approx(summary["saving_pct"])
