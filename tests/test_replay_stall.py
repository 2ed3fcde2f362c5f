"""The replay's stall columns and prepared summaries on simulated time (issue 34).

Real parts: real recorded transcripts of the public set (an OpenCode session that reaches
T = 32k tokens several times; a Claude Code session whose recorded prefix is over T2 at 16k),
the registered strategies ``ars`` and ``ars-prepared``, the
column registry's frames; the CLI end to end.  The summarizer is the offline structured one
(one summarizer "call" per summary); its latency is simulated: nothing sleeps.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from ctxlab.core.settings import CompressionSettings
from ctxlab.core.strategy import Strategy
from ctxlab.replay import ReplayResult, make_lab_manager, replay_many
from ctxlab.replay.building import strategy_records
from ctxlab.replay.latency import Latency, SimClock, SimTime, SimulatedRunner, parse_seconds
from ctxlab.replay.run_measures import resolve_price
from ctxlab.replay.table import strategy_totals, summary_frame

SESSION = Path(__file__).resolve().parents[2] / "shared/transcripts/raw/opencode/session-ses_4313.md"
RUST_PORT = (
    Path(__file__).resolve().parents[2]
    / "shared/transcripts/raw/claude-code/snapshot-tests/tests/python-to-rust-port/transcript.jsonl"
)
SETTINGS = CompressionSettings(summary_threshold=32)


@pytest.fixture(scope="module")
def timed_result() -> ReplayResult:
    result = replay_many(
        SESSION, ["ars", "ars-prepared"], settings=SETTINGS, summarizer_latency="2s", progress=False
    )
    assert not [e for e in result.errors if e.kind != "summary"], result.errors
    return result


@pytest.fixture(scope="module")
def timed(timed_result: ReplayResult) -> pl.DataFrame:
    return timed_result.frame()


def test_latency_forms_and_their_errors():
    assert parse_seconds("2s") == 2.0 and parse_seconds("500ms") == 0.5 and parse_seconds("1.5") == 1.5
    assert Latency.parse("2s") == Latency("fixed", 2.0)
    assert Latency.parse("uniform:1s,3s") == Latency("uniform", 1.0, 3.0)
    assert Latency.parse("lognormal:2s,0.5").describe() == "lognormal:2s,0.5"
    for bad in ("2x", "-1s", "uniform:3s,1s", "lognormal:2s,x", "normal:1s,2s", "nan"):
        with pytest.raises(ValueError, match="--summarizer-latency"):
            Latency.parse(bad)
    rng = random.Random(1)
    draws = [Latency.parse("uniform:1s,3s").sample(rng) for _ in range(200)]
    assert all(1.0 <= d <= 3.0 for d in draws) and max(draws) - min(draws) > 1.5


def test_simulated_background_work_is_ready_after_its_latency():
    clock = SimClock()
    two_seconds = Latency("fixed", 2.0)
    runner = SimulatedRunner(clock, lambda: two_seconds.sample(random.Random(0)))

    class Result:
        calls, input_tokens, output_tokens = 2, 0, 0

    from ctxlab.core.preparations import Prepared

    pending = runner.start(lambda: Prepared("h", "/outputs/h.md", result=Result()))  # type: ignore[arg-type]
    assert not pending.done() and pending.outcome() is not None  # computed, not yet "done"
    clock.now = 3.0
    pending.wait(0.5)  # a round waits 0.5 s of simulated time and gives up
    assert clock.now == 3.5 and not pending.done()
    pending.wait(10)  # it is ready at 4 s (two calls of 2 s): the clock moves to it, not further
    assert clock.now == 4.0 and pending.done()
    sim = SimTime(None, seed="t")
    assert not sim.timed and sim.summarizer_seconds(3) == 0.0


def test_synchronous_summaries_stall_by_the_summarizer_latency(timed):
    # issue 34: without preparation every L2 round waits for its summarizer calls
    ars = timed.filter(pl.col("strategy") == "ars")
    l2 = ars.filter(pl.col("level") == "L2")
    assert l2.height >= 3
    assert (l2["stall_s"] == 2.0 * l2["summarizer_calls"]).all() and (l2["stall_s"] >= 2.0).all()
    assert (ars.filter(pl.col("level") != "L2")["stall_s"] == 0.0).all()
    assert ars["prepared_started"].sum() == 0 and ars["prepared_wasted"].sum() == 0


def test_prepared_summaries_remove_the_stall_of_the_rounds_that_use_them(timed):
    prepared = timed.filter(pl.col("strategy") == "ars-prepared")
    l2 = prepared.filter(pl.col("level") == "L2")
    used = l2.filter(pl.col("prepared_used"))
    assert used.height >= 3 and used.height >= l2.height - 2
    assert (used["stall_s"] < 0.05).all()  # ready before T: no wait
    assert (used["summarizer_calls"] >= 1).all()  # the background calls, accounted at the commit
    # the rounds that did not use one summarized themselves, and waited for it
    assert (l2.filter(~pl.col("prepared_used"))["stall_s"] >= 2.0).all()
    assert prepared["prepared_started"].sum() >= used.height
    # every preparation started is used, discarded, or left when the run ended (the last call)
    started, wasted = prepared["prepared_started"].sum(), prepared["prepared_wasted"].sum()
    assert started == used.height + wasted


def test_run_columns_aggregate_the_stall(timed):
    runs = summary_frame(timed)
    totals = strategy_totals(timed)
    for frame in (runs, totals):
        row = frame.filter(pl.col("strategy") == "ars").row(0, named=True)
        assert (
            row["l2_stall_p50_s"] == 2.0 and row["l2_stall_p99_s"] == 2.0 and row["l2_no_stall_share"] == 0.0
        )
        assert row["stall_total_s"] == timed.filter(pl.col("strategy") == "ars")["stall_s"].sum()
        prep = frame.filter(pl.col("strategy") == "ars-prepared").row(0, named=True)
        l2 = timed.filter((pl.col("strategy") == "ars-prepared") & (pl.col("level") == "L2"))
        assert prep["prepared_rounds"] == l2["prepared_used"].sum()
        assert prep["l2_no_stall_share"] == pytest.approx((l2["stall_s"] < 0.05).mean())
        assert prep["l2_stall_p50_s"] == 0.0
        made = l2.height + prep["prepared_wasted"]
        assert prep["prepared_waste_share"] == pytest.approx(prep["prepared_wasted"] / made)


def test_the_simulation_is_deterministic_and_off_without_a_latency(timed):
    again = replay_many(
        SESSION, ["ars-prepared"], settings=SETTINGS, summarizer_latency="2s", progress=False
    ).frame()
    cols = ["stall_s", "prepared_started", "prepared_used", "prepared_wasted", "cutoff_index", "view_tokens"]
    assert again.select(cols).equals(timed.filter(pl.col("strategy") == "ars-prepared").select(cols))
    untimed = replay_many(SESSION, ["ars-prepared"], settings=SETTINGS, progress=False).frame()
    assert untimed["stall_s"].is_null().all()
    # without a latency a prepared summary is ready at the next call: every L2 round that had
    # one started uses it
    assert (
        untimed["prepared_used"].sum()
        >= timed.filter(pl.col("strategy") == "ars-prepared")["prepared_used"].sum()
    )


def test_a_summary_not_ready_by_the_deadline_is_wasted_and_the_round_stalls():
    # a 300 s summarizer and a 1 s deadline: the preparations are late; each L2 round waits 1 s,
    # then summarizes itself (300 s more)
    settings = SETTINGS.replace(summary_prepare_wait_s=1.0)
    slow = replay_many(
        SESSION, ["ars-prepared"], settings=settings, summarizer_latency="300s", progress=False
    ).frame()
    l2 = slow.filter(pl.col("level") == "L2")
    late = l2.filter(pl.col("prepared_wasted") > 0)
    assert late.height >= 3 and not l2["prepared_used"].any()
    assert (late["stall_s"] == 301.0).all()
    # the late ones were discarded unused: wasted summarizer calls, priced at the run's price row
    wasted = slow.filter(pl.col("prepared_wasted") > 0)
    assert wasted["prepared_wasted_calls"].sum() >= late.height
    price = resolve_price(None, None)
    for row in wasted.iter_rows(named=True):
        spent = (
            row["prepared_wasted_input_tokens"] * price.input
            + row["prepared_wasted_output_tokens"] * price.output
        )
        assert row["prepared_wasted_usd"] == pytest.approx(spent / 1e6) and spent > 0


def test_started_preparations_expect_a_request_the_round_takes_and_the_rounds_that_use_them_keep_it():
    # issue 34, the start rule: a preparation starts only when the request its commit is expected
    # to leave (kept window + summary + growth until the L2 round) is one the round takes: at
    # most T2, or at most T when the synchronous round is predicted over T2 as well; the
    # rounds that commit one send at most T2, or at most T with a synchronous floor over T2
    result = replay_many(
        SESSION, ["ars-prepared"], settings=SETTINGS, summarizer_latency="2s", progress=False
    )
    t, t2 = SETTINGS.entry_threshold_tokens, SETTINGS.l2_threshold_tokens
    starts = [
        e["stats"]["prepared"]
        for e in result.events
        if e.get("phase") == "prepared" and e["stats"]["prepared"]["status"] == "started"
    ]
    assert len(starts) >= 3
    for p in starts:
        assert 0 <= p["growth_tokens"] < p["expected_tokens"]
        assert p["expected_tokens"] <= t2 or (p["sync_floor_tokens"] > t2 and p["expected_tokens"] <= t)
    used_events = [
        e
        for e in result.events
        if e.get("phase") == "completed" and e["stats"].get("prepared", {}).get("status") == "used"
    ]
    assert len(used_events) >= 3
    for e in used_events:
        floor = e["stats"]["prepared"].get("sync_floor_tokens")
        assert e["tokens_after"] <= t2 or (floor is not None and floor > t2 and e["tokens_after"] <= t)


def test_a_recorded_prefix_over_t2_is_never_prepared():
    # issue 34: Claude Code's recorded prefix (its system prompt and tool schemas, ~20k tokens)
    # is over T2 at T = 16k; no commit could leave the request under T2, so nothing is prepared
    # (before the start rule: a preparation made and discarded on almost every call) and the
    # L2 rounds are those of ars, each waiting for its summarizer
    settings = CompressionSettings(summary_threshold=16)
    frame = replay_many(
        RUST_PORT, ["ars", "ars-prepared"], settings=settings, summarizer_latency="2s", progress=False
    ).frame()
    ars = frame.filter(pl.col("strategy") == "ars").sort("call_index")
    prepared = frame.filter(pl.col("strategy") == "ars-prepared").sort("call_index")
    assert (prepared["view_system_tokens"] > prepared["l2_threshold"]).all()
    l2 = prepared.filter(pl.col("level") == "L2")
    assert l2.height >= 3 and (l2["stall_s"] >= 2.0).all()
    assert prepared["prepared_started"].sum() == 0 and prepared["prepared_wasted"].sum() == 0
    assert prepared["view_tokens"].to_list() == ars["view_tokens"].to_list()


def test_a_strategy_changes_settings_fields_and_provenance_names_them():
    with pytest.raises(ValueError, match="not a settings field"):
        Strategy("x", lambda s: [], settings={"summary_bogus": 1})
    s = Strategy("x", lambda s: [], settings={"summary_prepare_ratio": 0.8})
    assert s.settings_for(SETTINGS).summary_prepare_ratio == 0.8 and SETTINGS.summary_prepare_ratio is None
    pm = make_lab_manager()
    records = strategy_records(["ars-prepared"], pm, SETTINGS)
    assert records["ars-prepared"]["parameters"]["settings"] == {"summary_prepare_ratio": 0.8}


def test_cli_takes_the_latency_and_names_a_bad_one(tmp_path, capsys):
    from ctxlab.cli.main import main

    code = main(
        [
            "compare",
            str(SESSION),
            "--strategies",
            "ars,ars-prepared",
            "--summarizer-latency",
            "2x",
            "--out",
            str(tmp_path / "bad"),
        ]
    )
    assert code == 2 and "--summarizer-latency='2x' is invalid" in capsys.readouterr().err
    out = tmp_path / "ok"
    code = main(
        [
            "compare",
            str(SESSION),
            "--strategies",
            "ars,ars-prepared",
            "--summarizer-latency",
            "2s",
            "--summary-threshold",
            "32",
            "--out",
            str(out),
            "--no-figures",
            "--no-progress",
        ]
    )
    assert code == 0
    summary = pl.read_csv(out / "summary.csv")
    assert summary.filter(pl.col("strategy") == "ars")["l2_stall_p50_s"].to_list() == [2.0]
    assert summary.filter(pl.col("strategy") == "ars-prepared")["prepared_rounds"].item() >= 3


def test_the_executive_summary_and_the_settings_say_the_stall(timed_result, timed, tmp_path):
    """With a latency model the executive summary says, per strategy, what the stall columns hold
    (the trial found them only in the 58-column table), and the report's Settings section names
    the prepare ratio ars-prepared sets over the run's settings (the table showed it blank)."""
    from ctxlab.analysis.report import write_report
    from ctxlab.analysis.verdicts import executive_summary

    totals = {r["strategy"]: r for r in strategy_totals(timed).iter_rows(named=True)}
    [line] = [x for x in executive_summary(timed_result).lines if x.startswith("Stall (")]
    ars, prep = totals["ars"], totals["ars-prepared"]
    assert "summarizer call 2s, agent step 1 s + the answer's output tokens at 50/s" in line
    assert (
        f"ars {ars['stall_total_s']:,.1f} s over {ars['l2_rounds']} L2 round(s) (p50 2.00 s, p99 2.00 s; "
        "0% waited < 50 ms)" in line
    )
    assert (
        f"ars-prepared {prep['stall_total_s']:,.1f} s over {prep['l2_rounds']} L2 round(s) (p50 0.00 s"
        in line
    )
    assert f"{prep['l2_no_stall_share']:.0%} waited < 50 ms), {prep['prepared_rounds']} prepared" in line
    assert "Stall (" not in "".join(
        executive_summary(
            replay_many(SESSION, ["ars"], settings=SETTINGS, progress=False, limit_calls=30)
        ).lines
    )
    write_report(timed_result, tmp_path, figures="none")
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    settings = report.split("## Settings", 1)[1].split("\n## ", 1)[0]
    assert "| `summary_prepare_ratio` |  |" in settings  # the run's own: off
    assert "`ars-prepared`: `summary_prepare_ratio` = 0.8" in settings
    assert f"| {ars['stall_total_s']:.2f} |" in report.split("## Per strategy", 1)[1]  # seconds: 2 decimals


def test_a_random_latency_draws_the_same_for_the_same_summarizer_call_in_every_strategy():
    """Common random numbers (the s39 trial: with uniform:1s,3s two strategies drew different
    durations for the same synchronous round, one stream shared by every draw of a run): a draw
    is keyed by the transcript, what it times and the call, so a strategy that made background
    summaries earlier (a prepared one) still waits what another waits for the same summarizer call
    at the same call; draws of different calls differ."""
    jitter = Latency.parse("uniform:1s,3s")
    plain, prepared = SimTime(jitter, seed="run-a"), SimTime(jitter, seed="run-a")
    for call in range(10):
        plain.at_call(call)
        prepared.at_call(call)
        if call in (3, 6):  # prepared summaries: background draws the plain strategy never makes
            prepared.runner.start(lambda: None)
            prepared.runner._draw()
    plain.at_call(10)
    prepared.at_call(10)
    assert plain.summarizer_seconds(1) == prepared.summarizer_seconds(1)
    assert plain.summarizer_seconds(1) == prepared.summarizer_seconds(1)  # the second call of call 10
    plain.at_call(11)
    other = plain.summarizer_seconds(1)
    again = SimTime(jitter, seed="run-a")
    again.at_call(10)
    assert other != again.summarizer_seconds(1) and 1.0 <= other <= 3.0
    assert SimTime(jitter, seed="run-b").summarizer_seconds(1) != SimTime(
        jitter, seed="run-a"
    ).summarizer_seconds(1)
    # end to end: the synchronous rounds of a run draw different durations, within the range
    result = replay_many(SESSION, ["ars"], settings=SETTINGS, summarizer_latency=jitter, progress=False)
    stalls = result.frame().filter(pl.col("level") == "L2")["stall_s"].to_list()
    assert len(set(stalls)) > 1 and all(1.0 <= v <= 3.0 for v in stalls)


def test_the_stall_figure_draws_each_l2_round_and_says_what_the_stall_line_says(
    timed_result, timed, tmp_path
):
    """The stall figure (left open two stops: the stall was only in a line and the columns): one
    dot per L2 round at its ``stall_s``, and each strategy's label says the round count, the share
    under 50 ms and the p99 the per-run columns pool; the report lists and embeds it; a replay
    without a latency model draws none and the plot says why."""
    from ctxlab.analysis.plotting import STALL_FIGURE, plot_stall
    from ctxlab.analysis.report import write_report

    totals = {r["strategy"]: r for r in strategy_totals(timed).iter_rows(named=True)}
    fig = plot_stall(timed, over="one session")
    [ax] = fig.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    for label, name in zip(labels, ["ars", "ars-prepared"], strict=True):
        row = totals[name]
        assert label == (
            f"{name}\n{row['l2_rounds']} L2 round(s), {row['l2_no_stall_share']:.0%} < 50 ms, "
            f"p99 {row['l2_stall_p99_s']:.2f} s"
        )
    dots = [c.get_offsets()[:, 0].tolist() for c in ax.collections if len(c.get_offsets())]
    rounds = timed.filter(pl.col("level") == "L2")
    for name, xs in zip(["ars", "ars-prepared"], dots, strict=True):
        assert xs == rounds.filter(pl.col("strategy") == name)["stall_s"].to_list()
    assert "one session" in ax.get_title()
    written = write_report(timed_result, tmp_path)
    assert tmp_path / "figures" / STALL_FIGURE in written["figures"]
    assert f"![stall per L2 round](figures/{STALL_FIGURE})" in (tmp_path / "report.md").read_text(
        encoding="utf-8"
    )
    plain = replay_many(SESSION, ["ars"], settings=SETTINGS, progress=False, limit_calls=60)
    out = write_report(plain, tmp_path / "plain")
    assert not [p for p in out["figures"] if p.name == STALL_FIGURE]
    with pytest.raises(ValueError, match="--summarizer-latency"):
        plot_stall(plain.frame())
