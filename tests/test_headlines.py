"""Headlines that hold (issue 27): every mean names its population, no winner inside the noise,
no "best" when nothing reached T, sources weighed alike, warnings that say what each strategy
did, and baselines that give the same rows twice."""

from __future__ import annotations

import random
import re
from pathlib import Path

import polars as pl
import pytest

from ctxlab import CompressionSettings
from ctxlab.analysis.verdict_warnings import grouped
from ctxlab.analysis.verdicts import executive_summary
from ctxlab.replay import CALL_COLUMNS, ReplayResult, replay_many, strategies
from ctxlab.replay.strategies import make_lab_manager
from ctxlab.replay.stratified import balanced_mean
from ctxlab.replay.table import summary_frame

RAW = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw"
KATY = RAW / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"


def call(
    transcript: str, strategy: str, saving: float, *, fmt: str = "claude_code", acted: bool = True
) -> dict:
    """One call of a run whose request is 1,000 tokens; ``saving`` % of it not sent."""
    row = dict.fromkeys(CALL_COLUMNS)
    row.update(
        transcript=transcript,
        strategy=strategy,
        data_provenance="real",
        transcript_format=fmt,
        call_index=0,
        message_index=1,
        raw_tokens=1000,
        view_tokens=round(1000 * (1 - saving / 100)),
        view_messages=1,
        level="L2" if acted else "none",
        offloaded=0,
        truncated_args=0,
        summarizer_calls=0,
        summarizer_input_tokens=0,
        summarizer_output_tokens=0,
        after_failed_summary=False,
        forced_by_overflow=False,
        overflow_errors=0,
        overhead_ms=1.0,
        cache_reusable_tokens=0,
        threshold=500.0,
        l2_threshold=200.0,
        trigger_reached=acted,
        unmatched_tool_pairs=0,
        unrecorded_prefix_tokens=0,
    )
    return row


def tokens_line(result: ReplayResult) -> str:
    return next(b.line() for b in executive_summary(result).best if b.objective == "tokens")


def test_an_interval_holding_zero_names_no_winner() -> None:
    rng = random.Random(3)
    rows = []
    for i in range(12):  # a and b save the same on average: the paired interval holds 0
        base = rng.uniform(20, 40)
        rows += [call(f"r{i}", "a", base + rng.gauss(0, 4)), call(f"r{i}", "b", base + rng.gauss(0, 4))]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a", "b"]))
    assert "**no detectable difference** between" in line and "Best for" not in line
    assert "95 % CI -" in line  # the interval, holding 0, is printed
    # a real gap: a winner, its interval beside it
    rows = [c for i in range(12) for c in (call(f"r{i}", "a", 50 + i % 3), call(f"r{i}", "b", 30 + i % 3))]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a", "b"]))
    assert line.startswith("Best for tokens: **a**") and "vs b: +20.0 points per run" in line


def test_a_reference_floor_is_never_named_best() -> None:
    # floor-identifiers saves most here, but a floor is what strategies are measured against
    rows = [
        c
        for i in range(12)
        for c in (call(f"r{i}", "floor-identifiers", 60 + i % 3), call(f"r{i}", "a", 30 + i % 3))
    ]
    line = tokens_line(ReplayResult(rows=rows, strategies=["floor-identifiers", "a"]))
    assert line.startswith("Best for tokens: **a**") and "floor-identifiers" not in line


def test_a_run_a_strategy_compressed_counts_as_reached_by_its_own_trigger() -> None:
    # a trigger that is not a token count (ADK's event window) fires below T: the run it
    # compressed is one its trigger reached, so "reached" never counts fewer runs than "compressed"
    rows = [call(f"r{i}", "adk", 20.0 if i < 3 else 0.0, acted=i < 3) for i in range(5)]
    for r in rows:
        r["trigger_reached"] = None
        r["raw_tokens"] = 100  # below T = 500 on every call
    lines = executive_summary(ReplayResult(rows=rows, strategies=["adk"])).plain()
    assert any("adk 3 reached / 3 compressed" in line for line in lines), lines


def test_means_are_over_the_compressed_runs_beside_all_runs() -> None:
    rows = [call(f"r{i}", "a", 50.0 if i < 2 else 0.0, acted=i < 2) for i in range(10)]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a"]))
    # two runs of ten differ from no compression (the other eight are ties): no winner, and the
    # line says both means
    assert "too few paired runs to name a winner** (2 of 10 paired runs differ" in line
    assert "a 50.0 % over the 2 run(s) it compressed; 10.0 % over all 10 runs" in line


def test_no_best_line_when_no_run_reached_t() -> None:
    rows = [
        c
        for i in range(3)
        for c in (call(f"r{i}", "a", 0.0, acted=False), call(f"r{i}", "b", 0.0, acted=False))
    ]
    summary = executive_summary(ReplayResult(rows=rows, strategies=["a", "b"]))
    assert summary.best == []
    assert any(
        line.startswith("No transcript reached T: no strategy compressed anything") for line in summary.lines
    )
    assert not any("Best for" in line for line in summary.plain())


def test_a_one_source_folder_is_weighed_and_warned_about() -> None:
    """20 runs of one ShareGPT-like source where a wins big, 3 Claude Code runs where b wins: the
    plain mean says a, the source-balanced one says neither carries it alone."""
    rows = []
    for i in range(20):
        rows += [call(f"s{i}", "a", 60.0 + i % 2, fmt="sharegpt"), call(f"s{i}", "b", 20.0, fmt="sharegpt")]
    for i in range(3):
        rows += [
            call(f"c{i}", "a", 10.0 + i, fmt="claude_code"),
            call(f"c{i}", "b", 40.0 + i, fmt="claude_code"),
        ]
    result = ReplayResult(rows=rows, strategies=["a", "b"])
    summary = executive_summary(result)
    warning = next(w for w in summary.warnings if w.startswith("One source holds most of the runs"))
    assert "sharegpt has 20 of 23 (87 %)" in warning
    assert any(
        line.startswith("Runs by source (format): sharegpt 20, claude_code 3") for line in summary.lines
    )
    line = tokens_line(result)
    # a − b: +40.5 on the ShareGPT runs, −30 on the Claude Code runs: balanced +5.25, not the plain +31.3
    assert "over 2 sources" in line and "in 2 sources, stratified" in line
    cmp = next(b for b in summary.best if b.objective == "tokens").versus
    assert cmp is not None and cmp.difference == pytest.approx((40.5 - 30.0) / 2, abs=0.05)


def test_the_stratified_interval_is_seeded_and_keeps_each_source() -> None:
    values = {f"s{i}": float(i) for i in range(20)} | {"c0": 100.0, "c1": 110.0}
    sources = {t: ("big" if t.startswith("s") else "small") for t in values}
    one = balanced_mean(values, sources)
    assert one == balanced_mean(values, sources)  # seeded
    assert one.mean == pytest.approx((9.5 + 105.0) / 2) and one.plain == pytest.approx(
        sum(values.values()) / 22
    )
    assert one.low < one.mean < one.high and one.sources == 2 and one.runs == 22


def test_pooled_and_per_run_figures_that_disagree_in_sign_are_warned_about() -> None:
    """One long run saves, many short ones lose: pooled positive, the mean per run negative."""
    rows = [call("long", "a", 40.0)]
    rows[0].update(raw_tokens=100_000, view_tokens=60_000)
    rows += [call(f"short{i}", "a", -20.0) for i in range(5)]
    warnings = executive_summary(ReplayResult(rows=rows, strategies=["a"])).warnings
    assert any(
        w.startswith("a: the pooled token saving is +37.1 %")
        and "over the 6 run(s) it compressed is -10.0 %" in w
        for w in warnings
    ), warnings


def test_designed_declines_are_not_declined_summaries() -> None:
    rows = [call("r0", "hybrid", 30.0), call("r1", "hybrid", 30.0), call("r2", "hybrid", 30.0)]
    rows[0]["summary_declined"] = "declined: hybrid: masking is enough (9000 tokens < T = 16384)"
    rows[1]["summary_declined"] = "no valid cutoff: 3 messages, keep 10"
    summary = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    assert summary["declined_summaries"].to_list() == [0, 1, 0]
    warnings = executive_summary(ReplayResult(rows=rows, strategies=["hybrid"])).warnings
    assert any("hybrid: 1 round(s) found no valid cutoff" in w for w in warnings)


def test_repeated_warnings_are_one_line_with_a_count() -> None:
    names = ["ars", "ars-fast", "hybrid"]
    assert grouped(["ars: 19 rounds.", "hybrid: 3 rounds.", "ars-fast: 19 rounds."], names) == [
        "ars and ars-fast: 19 rounds.",
        "hybrid: 3 rounds.",
    ]
    assert grouped(["ars thrashed in 2 run(s): a.", "ars-fast thrashed in 2 run(s): a."], names) == [
        "ars and ars-fast thrashed in 2 run(s): a."
    ]
    assert grouped(["x thrashed.", "y failed.", "x thrashed.", "x thrashed."]) == [
        "x thrashed (×3).",
        "y failed.",
    ]


def test_every_built_in_strategy_gives_the_same_rows_twice() -> None:
    """Two identical serial replays: identical rows (wall time aside), summaries and history
    names for every registered strategy, DeepAgents' included."""
    assert KATY.is_file(), f"shared transcript missing: {KATY}"
    names = sorted(strategies(make_lab_manager(load_entrypoints=True)))
    assert {"deepagents-summarization", "langchain-summarization", "recorded", "ars", "hybrid"} <= set(names)
    settings = CompressionSettings(summary_threshold=2, summary_keep_messages=4)

    def run() -> tuple[list[dict], list[dict]]:
        r = replay_many([KATY], names, settings=settings, progress=False, limit_calls=12)
        assert not r.errors, r.errors
        rows = [{k: v for k, v in row.items() if k != "overhead_ms"} for row in r.rows]
        return rows, [
            {k: s.get(k) for k in ("strategy", "call_index", "text", "file_path")} for s in r.summaries
        ]

    first, second = run(), run()
    assert first[1] == second[1]
    assert first[0] == second[0]
    deep = [s for s in first[1] if s["strategy"] == "deepagents-summarization"]
    assert deep and all(s["file_path"] and "session_" in s["file_path"] for s in deep)


def test_a_run_still_off_its_recorded_tokens_is_named() -> None:
    rows = [call("r0", "a", 30.0), call("r1", "a", 30.0)]
    result = ReplayResult(rows=rows, strategies=["a"])
    result.prefixes = {
        "r0": {"tokens": 0, "source": "recorded usage", "calls": 9, "off_by": 3.02, "raw_off_by": 3.02},
        "r1": {"tokens": 18_000, "source": "recorded usage", "calls": 9, "off_by": 1.01, "raw_off_by": 0.1},
    }
    warnings = executive_summary(result).warnings
    assert [w for w in warnings if "stays more than 1.5×" in w] == [
        "1 run(s) whose estimate stays more than 1.5× from the recorded input tokens after the unrecorded-prefix "
        "correction (estimate / recorded on the median call): r0 (3.02×); their raw requests are not what the "
        "agent sent."
    ]


def test_too_few_paired_runs_name_no_winner_however_they_agree() -> None:
    """Five runs where a saves 20 points more than b in every one: the interval excludes 0, but
    five runs that all agree cannot exclude no difference (sign test p = 2 · 0.5**5 > 0.05), so no
    winner is named; six can (the same data, one run more)."""
    rows = [c for i in range(5) for c in (call(f"r{i}", "a", 50 + i % 3), call(f"r{i}", "b", 30 + i % 3))]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a", "b"]))
    assert "**too few paired runs to name a winner** (5 < 6" in line and "Best for" not in line
    assert "a − b: +20.0 points per run" in line  # the numbers are still there
    rows += [call("r5", "a", 52.0), call("r5", "b", 32.0)]
    assert tokens_line(ReplayResult(rows=rows, strategies=["a", "b"])).startswith("Best for tokens: **a**")


def test_one_run_per_source_still_gets_an_interval_with_its_spread() -> None:
    """Seven runs, each from its own format, whose differences disagree in sign: the single-run
    sources are resampled among themselves, so the interval is not the point (width 0, as a
    stratum of one run would make it) and it holds 0: no winner."""
    diffs = [3.6, -0.1, 0.0, 2.0, -2.5, 1.0, -1.5]
    rows = []
    for i, d in enumerate(diffs):
        fmt = f"format{i}"
        rows += [call(f"r{i}", "a", 40 + d, fmt=fmt), call(f"r{i}", "b", 40.0, fmt=fmt)]
    est = balanced_mean({f"r{i}": d for i, d in enumerate(diffs)}, {f"r{i}": f"f{i}" for i in range(7)})
    assert est.low < 0 < est.high and est.high - est.low > 1.0
    line = tokens_line(ReplayResult(rows=rows, strategies=["a", "b"]))
    assert "**no detectable difference**" in line and "in 7 sources, stratified" in line


def test_a_measure_only_one_strategy_has_names_no_best() -> None:
    """Identifier recall when only one strategy summarizes: nothing to compare it with."""
    rows = [c for i in range(8) for c in (call(f"r{i}", "ars", 40.0), call(f"r{i}", "masking", 20.0))]
    for r in rows:
        r["needed_identifiers"] = 10 if r["strategy"] == "ars" else None
        r["needed_carried"] = 3 if r["strategy"] == "ars" else None
    best = executive_summary(ReplayResult(rows=rows, strategies=["ars", "masking"])).best
    recall = next((b for b in best if b.objective == "identifier recall"), None)
    assert recall is not None, [b.objective for b in best]
    assert recall.line().startswith("Identifier recall: only **ars** has a value, nothing to compare it with")


def test_a_round_that_changed_nothing_did_not_compress_and_designed_declines_are_not_marked() -> None:
    """Masking before its keep window fills: L1 rounds that send the raw request.  The run is
    not "compressed" (the means over compressed runs leave it out), and its designed "no L2"
    is neither a declined summary in the counts nor a "declined" badge in the inspector."""
    from ctxlab.analysis.inspector import call_failures
    from ctxlab.replay.per_run import compressed_runs

    rows = [call("same", "masking", 0.0), call("cut", "masking", 30.0)]
    for r in rows:
        r["level"] = "L1"
        r["summary_declined"] = "declined: masking strategy: no L2"
    summary = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    assert compressed_runs(summary, "masking") == {"cut"}
    assert summary["declined_summaries"].to_list() == [0, 0]
    assert call_failures(rows[0]) == []
    r13 = {**rows[0], "summary_declined": "no valid cutoff: 3 messages, keep 10"}
    assert call_failures(r13) == [{"kind": "declined", "reason": "no valid cutoff: 3 messages, keep 10"}]
    lines = executive_summary(ReplayResult(rows=rows, strategies=["masking"])).plain()
    assert any("masking 2 reached / 1 compressed" in line for line in lines), lines


def test_a_strategy_that_made_no_summary_is_not_said_to_have_a_summarizer() -> None:
    """Masking never summarizes: the summary's first line and every figure's note say it made
    none, instead of naming the batch's StructuredSummarizer for it."""
    from ctxlab.analysis.run_facts import summarizer_lines, summarizer_note

    rows = [c for i in range(3) for c in (call(f"r{i}", "ars", 40.0), call(f"r{i}", "masking", 20.0))]
    for r in rows:
        r["level"] = "L2" if r["strategy"] == "ars" else "L1"
    result = ReplayResult(rows=rows, strategies=["ars", "masking"])
    result.provenance["summarizers"] = {"ars": "StructuredSummarizer (offline stand-in, not a model)"} | {
        "masking": "StructuredSummarizer (offline stand-in, not a model)"
    }
    line = summarizer_lines(result)[0]
    assert line == (
        "**Summaries written by an offline stand-in, not a model** — ars: StructuredSummarizer (offline "
        "stand-in, not a model). No summary made by masking in these runs."
    )
    assert (
        summarizer_note(result)
        == "summaries: StructuredSummarizer, offline stand-in (ars); none made (masking)"
    )
    # a one-strategy budget figure names its own only (s39 trial: masking's figure named ars's)
    assert summarizer_note(result, ["masking"]) == "summaries: none made (masking)"
    assert summarizer_note(result, ["ars"]) == "summaries: StructuredSummarizer, offline stand-in (ars)"
    # the agent's own summaries (the recorded strategy) are not called a stand-in's
    rows = [call("r0", "recorded", 40.0)]
    rows[0]["level"] = "L2"
    result = ReplayResult(rows=rows, strategies=["recorded"])
    result.provenance["summarizers"] = {"recorded": "the agent's model, as recorded"}
    assert summarizer_lines(result) == ["Summaries written by: recorded: the agent's model, as recorded."]
    assert summarizer_note(result) == "summaries: the agent's model, as recorded (recorded)"


RAG = (
    Path(__file__).resolve().parents[1].parent / "shared/transcripts/raw/deer-flow/web/public/replay/rag.txt"
)


def test_a_trigger_that_stays_silent_on_a_chinese_run_that_reached_t_is_named() -> None:
    """A Chinese DeerFlow run whose request reaches T by the replay's measure: LangChain's own
    counter (about 4 characters a token) stays under T, so the baseline sends it whole; the
    summary says why instead of letting its 0 % stand beside ARS's saving on the same run."""
    assert RAG.is_file(), f"shared transcript missing: {RAG}"
    settings = CompressionSettings(summary_threshold=16)
    result = replay_many([RAG], ["ars", "langchain-summarization"], settings=settings, progress=False)
    assert not result.errors, result.errors
    rows = result.summary()
    by = {r["strategy"]: r for r in rows.iter_rows(named=True)}
    assert by["ars"]["max_raw_tokens"] >= 16 * 1024 and by["ars"]["reached_threshold"]
    assert by["langchain-summarization"]["reached_threshold"] is False
    warnings = [w for w in executive_summary(result).warnings if "own trigger never fired" in w]
    assert warnings == [
        "langchain-summarization: its own trigger never fired in 1 of the 1 run(s) whose uncompressed request "
        "reached T (rag.txt), so it sent them whole: it counts the request its own way, not with the replay's "
        "measure (LangChain's approximate counter, which the LangChain and DeepAgents baselines use, takes about "
        "4 characters a token and undercounts Chinese text and base64 about 3×)."
    ]


def test_one_run_gets_no_interval() -> None:
    """A bootstrap over one run resamples that one value: its "interval" has no width and says
    nothing (the demo printed "95 % CI +55.6 to +55.6, 1 paired runs"); with two runs it has."""
    rows = [call("r0", "a", 55.0), call("r0", "b", 10.0)]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a", "b"]))
    assert "a − b: +45.0 points per run (no interval from 1 paired run)" in line
    assert "a 55.0 % over the 1 run(s) it compressed; 55.0 % over its 1 run (no interval from 1 run)" in line
    assert "% CI" not in line
    rows += [call("r1", "a", 45.0), call("r1", "b", 10.0)]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a", "b"]))
    # two runs: a bootstrap has width now, but no difference is called from 2 (< 6), so none is shown
    assert "a − b: +40.0 points per run (no interval: 2 of 2 differ, < 6)" in line


def test_runs_neither_strategy_acted_on_are_ties_not_evidence() -> None:
    """The trial's case: one DeerFlow run reached T (a saves 47 points there), ten SWE-agent runs
    did not (both 0). Eleven pairs, one of them differs: like a sign test, ties carry no sign, so
    no winner is named; and the lone DeerFlow run, alone in its stratum, no longer gives a
    zero-width interval (it read "95 % CI +23.5 to +23.5, 11 paired runs")."""
    rows = [call("deer", "a", 47.0, fmt="deer_flow"), call("deer", "b", 0.0, fmt="deer_flow", acted=False)]
    for i in range(10):
        rows += [
            call(f"s{i}", "a", 0.0, fmt="swe_agent", acted=False),
            call(f"s{i}", "b", 0.0, fmt="swe_agent", acted=False),
        ]
    best = next(
        b
        for b in executive_summary(ReplayResult(rows=rows, strategies=["a", "b"])).best
        if b.objective == "tokens"
    )
    assert best.versus is not None and best.versus.runs == 11 and best.versus.evidence == 1
    assert not best.decided and best.versus.holds_zero
    line = best.line()
    assert (
        "**too few paired runs to name a winner** (1 of 11 paired runs differ, < 6; the others are ties"
        in line
    )
    assert "+23.5 to +23.5" not in line


def test_the_paired_table_applies_the_summary_rule_and_says_how_many_differ() -> None:
    """The trial's case (s39): the report's "Paired comparisons" table printed "+5.8 [+1.2, +9.2]
    (208)" where 3 of 208 runs differed, an interval the executive summary's rule (ties carry no
    sign, 6 differing runs at least) withholds; where a winner is named, its line and the table
    say how many of the paired runs differ."""
    from ctxlab.analysis.verdicts import verdict_sections

    def table(frame: pl.DataFrame) -> str:
        return ""

    rows = [call(f"d{i}", "a", 30.0 + i, fmt="deer_flow") for i in range(3)]
    rows += [call(f"d{i}", "b", 0.0, fmt="deer_flow", acted=False) for i in range(3)]
    for i in range(20):
        rows += [
            call(f"s{i}", "a", 0.0, fmt="swe_agent", acted=False),
            call(f"s{i}", "b", 0.0, fmt="swe_agent", acted=False),
        ]
    lines = verdict_sections(ReplayResult(rows=rows, strategies=["a", "b"]), table)
    [row] = [line for line in lines if line.startswith("| b | a |")]
    assert "(no interval: 3 of 23 differ, < 6)" in row and "[" not in row.split("|")[3]
    # eight runs differ: an interval, with the count of those that differ beside the paired runs
    rows += [call(f"e{i}", "a", 20.0 + i, fmt="deer_flow") for i in range(5)]
    rows += [call(f"e{i}", "b", 0.0, fmt="deer_flow", acted=False) for i in range(5)]
    result = ReplayResult(rows=rows, strategies=["a", "b"])
    [row] = [line for line in verdict_sections(result, table) if line.startswith("| b | a |")]
    assert "] (28, 8 differ)" in row.split("|")[3]
    line = tokens_line(result)
    assert "Best for tokens: **a**" in line and "28 paired runs (8 differ) in 2 sources" in line


def test_a_saving_bought_by_a_failed_summary_is_no_saving_in_the_verdicts() -> None:
    """The trial's case (s39): a baseline whose summaries failed and fell back to a stub threw
    the history away, and its "saving" ranked it first. A call built on a failed summary (or one
    the provider rejects) counts as sending its uncompressed request: the verdicts' per-run
    savings (tokens and dollars) count a failure as a failure, on the same calls for everyone."""
    rows = []
    for i in range(8):
        good = [call(f"r{i}", "good", 40.0), call(f"r{i}", "good", 40.0)]
        bad = [call(f"r{i}", "bad", 10.0), call(f"r{i}", "bad", 95.0)]
        bad[1]["after_failed_summary"] = True  # the fallback summary dropped almost everything
        for k, row in enumerate(good + bad):
            row["call_index"] = k % 2
        rows += good + bad
    summary = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    bad_runs = summary.filter(pl.col("strategy") == "bad")
    assert bad_runs["saving_pct"].to_list() == [52.5] * 8  # what it sent, failure included
    assert bad_runs["saving_pct_feasible"].to_list() == pytest.approx([5.0] * 8)  # (100 + 0) / 2000 saved
    line = tokens_line(ReplayResult(rows=rows, strategies=["good", "bad"]))
    assert "Best for tokens: **good**" in line and "vs bad: +35.0 points per run" in line
    assert "(a failure saves nothing)" in line


def test_one_sentence_weighs_both_of_its_means_alike() -> None:
    """The trial's case (s39): "ars -0.4 % over the 17 run(s) it compressed; 1.6 % over all 241
    runs, source-balanced over 12 sources" — a plain mean beside a source-balanced one, opposite
    in sign. Both are source-balanced now, and each says so; the pooled-vs-per-run warning keeps
    comparing the plain mean, and says it is plain."""
    rows = [call(f"d{i}", "a", 48.0 + (-1) ** i, fmt="deer_flow") for i in range(2)]
    rows += [call(f"c{i}", "a", -4.0 + (i - 2) * 0.5, fmt="claude_code") for i in range(5)]
    rows += [call(f"s{i}", "a", 0.0, fmt="swe_agent", acted=False) for i in range(6)]
    line = tokens_line(ReplayResult(rows=rows, strategies=["a"]))
    # compressed runs: (48 + (-4)) / 2 = 22.0 source-balanced (the plain mean would be 10.9)
    assert "22.0 % over the 7 run(s) it compressed, source-balanced over 2 sources;" in line
    assert "14.7 % over all 13 runs, source-balanced over 3 sources" in line  # (48 - 4 + 0) / 3


def test_result_compare_says_when_too_few_runs_differ_to_call() -> None:
    """The Python face of the paired rule (s39 trial: notebook 02's ``result.compare("ars",
    "masking", measure="cost_usd")`` printed an interval excluding 0 from 3 runs with no note)."""
    fmts = ("claude_code", "swe_agent", "deer_flow")
    rows = [
        c
        for i, f in enumerate(fmts)
        for c in (call(f"r{i}", "a", 40.0 + i, fmt=f), call(f"r{i}", "b", 10.0, fmt=f))
    ]
    result = ReplayResult(rows=rows, strategies=["a", "b"])
    text = str(result.compare("a", "b"))
    assert text.startswith("a − b on saving_pct: +31.0 per run (no interval: 3 of 3 differ, < 6")
    assert text.endswith("; too few runs to call: no difference can be excluded")
    rows += [
        c
        for i in range(3, 9)
        for c in (call(f"r{i}", "a", 40.0 + i, fmt="swe_agent"), call(f"r{i}", "b", 10.0, fmt="swe_agent"))
    ]
    assert "too few" not in str(ReplayResult(rows=rows, strategies=["a", "b"]).compare("a", "b"))


def test_the_terminal_ranks_as_compressed_only_runs_that_sent_less() -> None:
    """The s39 trial: the terminal's runs table ("compressed first") put masking's 0.0 % rows
    among the compressed ones (an L1 round that changed nothing), while the executive summary,
    by its own rule, did not count them. One rule (``per_run.compressed``) for both."""
    from ctxlab.cli.output import _ranked
    from ctxlab.replay.per_run import compressed_runs

    idle = call("long", "masking", 0.0)
    idle.update(level="L1", raw_tokens=9000, view_tokens=9000)
    rows = [idle, call("short", "masking", 20.0)]
    rows[1]["level"] = "L1"
    summary = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    assert summary.filter(pl.col("transcript") == "long")["l1_rounds"].to_list() == [1]
    assert _ranked(summary)["transcript"].to_list() == ["short", "long"]  # not by raw tokens first
    assert compressed_runs(summary, "masking") == {"short"}


@pytest.mark.parametrize("seed", range(6))
def test_every_text_of_a_comparison_shows_an_interval_only_where_a_difference_can_be_called(
    seed: int,
) -> None:
    """One rule, every text (the s40 trial: the executive summary printed "95 % CI +0.0 to +80.3"
    from 2 differing runs while the report's table beside it said "no interval"; the notebook's
    ``comparison_table`` printed plain means beside a source-balanced difference): over generated
    runs from several sources with 0–9 runs that differ, the summary line, the table cell, the
    comparison's own text and ``comparison_table`` show an interval exactly when at least
    MIN_PAIRED_RUNS runs differ, never from one run, and the table's means subtract to its
    difference."""
    from ctxlab.analysis.verdicts import _interval
    from ctxlab.replay.paired import comparison_table
    from ctxlab.replay.stats import MIN_PAIRED_RUNS

    rng = random.Random(seed)
    for _ in range(8):
        n = rng.randint(1, 12)
        differ = rng.randint(0, min(n, 9))
        rows = []
        for i in range(n):
            fmt = rng.choice(["claude_code", "openhands", "swe_agent"])
            base = rng.uniform(10, 60)
            gap = rng.uniform(3, 20) if i < differ else 0.0
            rows += [call(f"r{i}", "a", base + gap, fmt=fmt), call(f"r{i}", "b", base, fmt=fmt)]
        result = ReplayResult(rows=rows, strategies=["a", "b"])
        cmp = result.compare("a", "b", measure="saving_pct_feasible")
        shown = cmp.runs > 1 and cmp.evidence >= MIN_PAIRED_RUNS
        assert cmp.evidence == differ
        line = tokens_line(result)
        versus = re.search(r"(?:a − b|vs b): ([^;]*)", line)  # the comparison's part of the line
        assert versus is not None, line
        assert ("% CI" in versus.group(1)) == shown, line
        assert ("% CI" in str(cmp)) == shown, str(cmp)
        assert ("[" in _interval(cmp, "{:+.1f}")) == shown
        if not shown and n > 1:
            assert f"no interval: {differ} of {n} differ, < {MIN_PAIRED_RUNS}" in line
        if n == 1:
            assert "no interval from 1 paired run" in line
        [table] = comparison_table(result.summary(), "saving_pct_feasible", strategies=["a", "b"]).iter_rows(
            named=True
        )
        assert table["differ"] == differ and (table["low"] is not None) == shown
        assert table["mean_a"] - table["mean_b"] == pytest.approx(table["difference"], abs=1e-9)
        plain = result.summary().group_by("strategy").agg(pl.col("saving_pct_feasible").mean())
        want = dict(plain.iter_rows())
        assert table["plain_a"] == pytest.approx(want["a"]) and table["plain_b"] == pytest.approx(want["b"])


def test_the_heatmap_writes_every_cell_as_the_value_rounded_and_never_minus_zero() -> None:
    """Notebook 02's heatmap printed "-0.0" for a run whose saving rounded to zero from below (s40
    trial): each cell is its run's value to one decimal, a zero without a sign."""
    from ctxlab.analysis.plotting import plot_run_heatmap

    rows = [
        call("r0", "a", 30.0),
        call("r0", "b", 0.0, acted=False),
        call("r1", "a", 12.5),
        call("r1", "b", 0.0),
    ]
    rows[1].update(raw_tokens=20_000, view_tokens=20_001)  # b sends one token more: -0.005 %
    frame = ReplayResult(rows=rows, strategies=["a", "b"]).frame()
    assert -0.05 < ReplayResult(rows=rows, strategies=["a", "b"]).summary()["saving_pct"].min() < 0
    fig = plot_run_heatmap(frame, data="all")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts and not any(t.startswith("-0.0") for t in texts), texts
    assert "30.0" in texts and "12.5" in texts
