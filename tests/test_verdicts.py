"""Verdicts a researcher can defend (issue 19): per-run statistics, paired bootstrap intervals,
data provenance, every strategy's failures (fallback summaries, thrash), the executive summary,
plugin problems as results, and terminal tables readable at 80 columns."""

from __future__ import annotations

import json
import os
import pty
import random
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from langchain_core.messages import HumanMessage

from ctxlab.analysis.report import write_report
from ctxlab.analysis.verdicts import executive_summary
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import ReplayResult, replay_many
from ctxlab.replay.failures import FALLBACK_TEXTS, fallback_of
from ctxlab.replay.paired import paired_comparison
from ctxlab.replay.per_run import per_run_stats
from ctxlab.replay.prices import load_prices
from ctxlab.replay.sources import data_provenance
from ctxlab.replay.stats import NO_COMPRESSION, bootstrap_mean, pooled_runs
from ctxlab.replay.table import CALL_COLUMNS, summary_frame
from ctxlab.transcripts import load_many
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

REPO = Path(__file__).resolve().parents[1]
RAW = REPO.parent / "shared" / "transcripts" / "raw"
FALLBACK_RUN = RAW / "opencode" / "session-ses_4313.md"  # LangChain's summarizer input overflows here
PONY = RAW / "openhands" / "evaluation" / "benchmarks" / "multi_swe_bench" / "examples" / "output.jsonl"
KATY = RAW / "swe-agent" / "trajectories" / "demonstrations" / "ctf" / "crypto" / "katy.traj"
T16 = CompressionSettings(summary_threshold=16)


@pytest.fixture(scope="module", autouse=True)
def shared() -> None:
    for p in (FALLBACK_RUN, PONY, KATY, SAMPLE_TRANSCRIPT):
        assert p.is_file(), f"shared transcript missing: {p} (the tests need ../shared beside the repository)"


def row(**over: object) -> dict[str, object]:
    base: dict[str, object] = dict.fromkeys(CALL_COLUMNS)
    base.update(
        transcript="t",
        strategy="s",
        data_provenance="real",
        call_index=0,
        message_index=1,
        raw_tokens=100,
        view_tokens=100,
        view_messages=1,
        level="none",
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
        threshold=1000.0,
        l2_threshold=400.0,
        unmatched_tool_pairs=0,
    )
    base.update(over)
    return base


def two_strategy_rows(n: int, shift: float, seed: int = 7) -> tuple[list[dict[str, object]], float]:
    """``n`` runs of one call each; strategy ``a`` saves ``shift`` points more than ``b`` on
    average (with noise); returns the rows and the exact mean difference of the built data."""
    rng = random.Random(seed)
    rows, diffs = [], []
    for i in range(n):
        b = rng.uniform(10, 40)
        a = b + shift + rng.gauss(0, 3)
        diffs.append(a - b)
        for name, saving in (("a", a), ("b", b)):
            sent = round(1000 * (1 - saving / 100))
            rows.append(
                row(transcript=f"run{i}", strategy=name, raw_tokens=1000, view_tokens=sent, level="L1")
            )
    # the difference the frame holds (sent tokens are rounded to whole tokens)
    frame = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    by = {(r["transcript"], r["strategy"]): r["saving_pct"] for r in frame.iter_rows(named=True)}
    exact = sum(by[(f"run{i}", "a")] - by[(f"run{i}", "b")] for i in range(n)) / n
    return rows, exact


def test_paired_interval_contains_the_known_difference_and_is_seeded() -> None:
    rows, exact = two_strategy_rows(30, shift=5.0)
    result = ReplayResult(rows=rows, strategies=["a", "b"])
    cmp = result.compare("a", "b", measure="saving_pct")
    assert cmp.runs == 30 and cmp.dropped == 0
    assert cmp.difference == pytest.approx(exact)
    assert cmp.low is not None and cmp.high is not None
    assert cmp.low < exact < cmp.high
    assert cmp.low > 0, "a consistent 5-point gain over 30 runs must not include 0"
    assert 3.0 < exact < 7.0  # the built shift, up to the noise
    again = result.compare("a", "b", measure="saving_pct")
    assert (again.low, again.high) == (cmp.low, cmp.high)  # seeded: the same interval
    other = result.compare("a", "b", measure="saving_pct", seed=1)
    assert (other.low, other.high) != (cmp.low, cmp.high)
    reverse = result.compare("b", "a", measure="saving_pct")
    assert reverse.difference == pytest.approx(-exact)
    assert "95 % CI" in str(cmp) and "30 runs" in str(cmp)


def test_bootstrap_of_a_constant_is_that_constant_and_bad_arguments_name_the_field() -> None:
    assert bootstrap_mean([2.5] * 8) == (2.5, 2.5, 2.5)
    assert bootstrap_mean([4.0]) == (4.0, 4.0, 4.0)
    with pytest.raises(ValueError, match=r"confidence=1\.5"):
        bootstrap_mean([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError, match="resamples=0"):
        bootstrap_mean([1.0, 2.0], resamples=0)
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_mean([])


def test_no_compression_is_a_strategy_and_unknown_names_are_refused() -> None:
    rows, _ = two_strategy_rows(6, shift=2.0)
    summary = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    vs_raw = paired_comparison(summary, "b", NO_COMPRESSION, "saving_pct")
    assert vs_raw.mean_b == 0.0 and vs_raw.difference == pytest.approx(vs_raw.mean_a)
    with pytest.raises(ValueError, match="'nope' is not in the runs"):
        paired_comparison(summary, "nope", "a")
    with pytest.raises(KeyError, match="no per-run column 'savings'"):
        paired_comparison(summary, "a", "b", "savings")


def test_per_run_statistics_report_runs_below_t_apart() -> None:
    rows = []
    for i in range(5):  # 5 runs: 2 reach T (1000) and save 40 / 60 %, 3 stay below and save 0
        big = i < 2
        raw = 2000 if big else 500
        sent = raw * (0.6 if i == 0 else 0.4) if big else raw
        rows.append(
            row(
                transcript=f"r{i}",
                raw_tokens=raw,
                view_tokens=int(sent),
                level="L2" if big else "none",
                trigger_reached=big,
            )
        )
    summary = summary_frame(pl.DataFrame(rows, schema={c: None for c in CALL_COLUMNS}, orient="row"))
    stats = per_run_stats(summary).filter(pl.col("strategy") == "s").row(0, named=True)
    assert (stats["reached"], stats["runs"]) == (2, 5)
    assert stats["median"] == 0.0  # most runs never compress
    assert stats["median_reached"] == pytest.approx(50.0)
    assert (stats["q1_reached"], stats["q3_reached"]) == (pytest.approx(45.0), pytest.approx(55.0))
    assert stats["pooled"] == pytest.approx(100 * (1 - (1200 + 800 + 1500) / (4000 + 1500)))


def test_thrashing_run_is_counted_flagged_and_warned() -> None:
    levels = {
        "thrash": ["none", "L2", "L2", "L2", "none", "none"],  # 3 consecutive
        "spread": ["L2", "none", "L2", "none", "L2", "none", "L2", "none"],  # 4 within 10 calls
        "calm": ["L2", "L2", "none", "none", "none", "none", "none", "none", "none", "none", "none", "L2"],
    }
    rows = [
        row(transcript=t, call_index=i, level=lv, raw_tokens=2000, view_tokens=800 if lv == "L2" else 2000)
        for t, seq in levels.items()
        for i, lv in enumerate(seq)
    ]
    result = ReplayResult(rows=rows, strategies=["s"], settings=CompressionSettings(summary_threshold=1))
    summary = result.summary()
    got = {r["transcript"]: r for r in summary.iter_rows(named=True)}
    assert (got["thrash"]["max_consecutive_summaries"], got["thrash"]["summary_thrash"]) == (3, True)
    assert (got["spread"]["max_summaries_in_window"], got["spread"]["summary_thrash"]) == (4, True)
    assert (got["calm"]["max_consecutive_summaries"], got["calm"]["summary_thrash"]) == (2, False)
    warnings = executive_summary(result).warnings
    # one line per strategy, however many runs thrashed (grouped, issue 27)
    assert [w for w in warnings if "thrashed" in w] == [
        "s thrashed (summarized again and again) in 2 run(s): thrash (3 consecutive calls), spread (4 times "
        "within 10 calls) (each a summarizer call and a cache rewrite)."
    ]
    assert not any("calm" in w for w in warnings)


def test_failures_outside_l2_rounds_are_never_summaries_of_zero_rounds(tmp_path: Path) -> None:
    # "edit's summaries failed 2 of 0 times" was said of a strategy whose failures are its own
    # compaction errors at L1 (Inspect's "Compaction insufficient"): "X of Y" counts summaries
    # against L2 rounds only; failures in calls without an L2 round are said apart
    error = "Compaction insufficient"
    levels = {
        "edit": [("L1", None), ("L1", error), ("L1", error), ("none", None)],
        "mixed": [("L1", error), ("L2", error), ("L2", None), ("none", None)],
        "ars": [("L2", error), ("L2", None), ("none", None), ("none", None)],
    }
    rows = [
        row(
            transcript="t",
            strategy=s,
            call_index=i,
            level=lv,
            summary_error=err,
            raw_tokens=2000,
            view_tokens=900,
        )
        for s, calls in levels.items()
        for i, (lv, err) in enumerate(calls)
    ]
    result = ReplayResult(
        rows=rows, strategies=list(levels), settings=CompressionSettings(summary_threshold=1)
    )
    got = {r["strategy"]: r for r in result.summary().iter_rows(named=True)}
    assert {s: (r["summary_errors"], r["failed_outside_l2"], r["l2_rounds"]) for s, r in got.items()} == {
        "edit": (2, 2, 0),
        "mixed": (2, 1, 2),
        "ars": (1, 0, 2),
    }
    failed = [w for w in executive_summary(result).warnings if "failed" in w]
    assert [w.split(";")[0] for w in failed] == [
        "edit's compression failed in 2 call(s): 2 without an L2 round (the strategy's own error, not a "
        "failed summary)",
        "mixed's compression failed in 2 call(s): 1 without an L2 round (the strategy's own error, not a "
        "failed summary) and 1 of its 2 L2 summaries",
        "ars's summaries failed 1 of 2 times",
    ]
    for w in failed:
        numbers = re.search(r"failed (\d+) of (\d+) times", w)
        assert numbers is None or int(numbers[1]) <= int(numbers[2]), w
    report = Path(write_report(result, tmp_path, figures="none")["report"]).read_text(encoding="utf-8")
    assert "**edit: compression failed in 2 calls, 2 of them without an L2 round" in report
    assert "**ars: 1 L2 summaries failed.**" in report


def test_fallback_text_is_recognised_in_langchain_and_deepagents_messages() -> None:
    from ctxlab_baselines import OfflineSummaryModel
    from deepagents.middleware.summarization import SummarizationMiddleware as DeepSummarization
    from langchain.agents.middleware import SummarizationMiddleware

    text = "Previous conversation was too long to summarize."
    assert text in FALLBACK_TEXTS
    lc = SummarizationMiddleware(model=OfflineSummaryModel(), trigger=("tokens", 10))
    assert fallback_of(lc._build_new_messages(text)[0].text) == text
    assert fallback_of(lc._build_new_messages("The user asked for X; we did Y.")[0].text) is None
    deep = DeepSummarization(model=OfflineSummaryModel(), backend=None, trigger=("tokens", 10))
    for path in ("/conversation_history/s.md", None):
        assert fallback_of(deep._build_new_messages_with_path(text, path)[0].text) == text
    assert fallback_of(HumanMessage(content=text).text) == text


def test_langchain_fallback_summaries_are_failed_summaries_in_a_real_replay(tmp_path: Path) -> None:
    result = replay_many([FALLBACK_RUN], ["langchain-summarization"], settings=T16, progress=False)
    calls = result.frame()
    fallbacks = calls.filter(pl.col("summary_fallback").is_not_null())
    assert fallbacks.height >= 1
    assert set(fallbacks["summary_fallback"]) == {"Previous conversation was too long to summarize."}
    assert set(fallbacks["level"]) == {"L2"}
    first = fallbacks["call_index"].min()
    after = calls.filter(pl.col("call_index") >= first)["after_failed_summary"]
    assert after.all(), "every call after a fallback summary is built on it"
    run = result.summary().row(0, named=True)
    assert run["fallback_summaries"] == fallbacks.height
    assert run["summary_errors"] >= run["fallback_summaries"]
    assert run["saving_pct_without_failed"] < run["saving_pct"]
    records = [s for s in result.summaries if s.get("fallback")]
    assert len(records) == fallbacks.height and all(s["error"] is None for s in records)
    assert not result.errors, "a baseline's fallback is a result, not a failed run"
    lines = executive_summary(result).warnings
    assert any(
        w.startswith(
            f"langchain-summarization's summaries failed {run['summary_errors']} of {run['l2_rounds']} times"
        )
        for w in lines
    ), lines
    report = Path(write_report(result, tmp_path, figures="none")["report"]).read_text(encoding="utf-8")
    head = report.splitlines()
    assert head[2] == "## Executive summary"
    # the summarizer first: the baseline's offline stand-in, named as such
    assert head[4] == (
        "- **Summaries written by an offline stand-in, not a model** — langchain-summarization: "
        "OfflineSummaryModel (offline stand-in, not a model)."
    )
    assert head[5].startswith(
        f"- **1 of 1 transcripts reached T = {T16.entry_threshold_tokens:,} tokens** (real runs"
    )
    per_run = report[report.index("## Per-run statistics") : report.index("## Paired comparisons")]
    assert "| no compression | 1 | 1 | 0 |  | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 |" in per_run
    saving = run["saving_pct_feasible"]
    assert f"| langchain-summarization | 1 | 1 | 1 | {saving:.1f} | {saving:.1f} |" in per_run


def test_provenance_tags_and_pooled_runs_leave_the_scripted_sample_out() -> None:
    loaded, errors = load_many([str(SAMPLE_TRANSCRIPT), str(KATY)])
    assert not errors
    tags = {t.name: data_provenance(t) for t in loaded}
    assert tags == {"sample_run.json": "scripted", "katy.traj": "real"}
    synthetic = loaded[1].__class__(
        messages=loaded[1].messages[:3], source="<made in code>", run_id="x", format="f"
    )
    assert data_provenance(synthetic) == "synthetic"
    result = replay_many([SAMPLE_TRANSCRIPT, KATY], ["ars"], settings=T16, progress=False, limit_calls=12)
    summary = result.summary()
    assert dict(summary.select("transcript", "data_provenance").iter_rows()) == {
        "sample_run.json": "scripted",
        "katy.traj": "real",
    }
    pool = pooled_runs(summary)
    assert pool.summary["transcript"].to_list() == ["katy.traj"]
    assert pool.label == "real runs" and pool.left_out == {"scripted": 1}
    assert pooled_runs(summary, "all").summary.height == 2
    only_scripted = pooled_runs(summary.filter(pl.col("data_provenance") == "scripted"))
    assert only_scripted.label == "all runs, none real: scripted"
    with pytest.raises(ValueError, match="data='fake' is invalid"):
        pooled_runs(summary, "fake")
    lines = executive_summary(result).markdown()
    assert any("Left out of the pooled statements and figures: scripted 1 transcript" in x for x in lines)


def test_money_warning_when_every_strategy_costs_more() -> None:
    rows = [
        row(
            transcript="t",
            strategy=s,
            cost_usd=cost,
            raw_cost_usd=1.0,
            summarizer_cost_usd=0.0,
            output_tokens=1,
            level="L1",
            trigger_reached=True,
        )
        for s, cost in (("a", 1.2), ("b", 1.05))
    ]
    price = load_prices().get("anthropic:claude-sonnet-4-5")
    result = ReplayResult(rows=rows, strategies=["a", "b"], price=price)
    summary = executive_summary(result)
    assert summary.warnings[:3] == [
        "Every strategy costs more than no compression under this price row (anthropic:claude-sonnet-4-5).",
        "a costs 20.0 % more than no compression (pooled over its feasible calls, anthropic:claude-sonnet-4-5, "
        "prompt caching counted).",
        "b costs 5.0 % more than no compression (pooled over its feasible calls, anthropic:claude-sonnet-4-5, "
        "prompt caching counted).",
    ]
    dollars = next(b for b in summary.best if b.objective == "dollars with caching")
    assert dollars.strategy == NO_COMPRESSION


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "MPLBACKEND": "Agg", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ctxlab", *args], capture_output=True, text=True, env=full, timeout=600
    )


def test_broken_plugin_is_recorded_and_strict_exits_1(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "broken.py").write_text("def oops(:\n    pass\n", encoding="utf-8")
    (plugins / "loud.py").write_text(
        "from ctxlab.core.hookspecs import hookimpl\n"
        "@hookimpl\n"
        "def ctxlab_on_event(event):\n"
        "    raise RuntimeError('observer bug')\n",
        encoding="utf-8",
    )
    common = [str(PONY), "--summary-threshold", "16", "--plugins-dir", str(plugins), "--figures", "none"]
    lax = run_cli("replay", *common, "--out", str(tmp_path / "lax"))
    assert lax.returncode == 0, lax.stderr
    report = (tmp_path / "lax" / "report.md").read_text(encoding="utf-8")
    assert "plugin problem: `" in report and "broken.py failed to load: invalid syntax" in report
    assert "RuntimeError: observer bug" in report and 'loud.py", line 4, in ctxlab_on_event' in report
    record = json.loads((tmp_path / "lax" / "run.json").read_text(encoding="utf-8"))
    names = {p["plugin"] for p in record["plugin_problems"]}
    assert str(plugins / "broken.py") in names and "dir:loud.py" in names
    loud = next(p for p in record["plugin_problems"] if p["plugin"] == "dir:loud.py")
    assert "raise RuntimeError('observer bug')" in loud["traceback"]
    meta = json.loads(pl.read_parquet_metadata(tmp_path / "lax" / "calls.parquet")["ctxlab"])
    assert meta["plugin_problems"] == record["plugin_problems"]
    strict = run_cli("replay", *common, "--out", str(tmp_path / "strict"), "--strict")
    assert strict.returncode == 1
    assert "plugin problem(s) (--strict)" in strict.stderr
    assert (tmp_path / "strict" / "report.md").is_file()  # recorded, then the exit status


def _run_in_terminal(args: list[str], columns: int) -> str:
    """Run the CLI with stdout on a pseudo-terminal of ``columns`` columns (rich reads $COLUMNS)."""
    master, slave = pty.openpty()
    env = {**os.environ, "MPLBACKEND": "Agg", "COLUMNS": str(columns), "TERM": "dumb"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxlab", *args], stdout=slave, stderr=subprocess.DEVNULL, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=600) == 0
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", b"".join(chunks).decode("utf-8", "replace")).replace(
        "\r", ""
    )


def test_terminal_at_80_columns_shows_every_number_whole(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["compare", str(PONY), str(KATY), "--strategies", "ars,masking,langchain-summarization"]
    text = _run_in_terminal([*args, "--summary-threshold", "16", "--out", str(out), "--figures", "none"], 80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "…" not in text
    assert text.index("executive summary:") < text.index("┏"), "the executive summary comes first"
    summary = pl.read_csv(out / "summary.csv")
    table_cells = {c.strip() for line in lines if line.startswith("│") for c in line.split("│")}
    ranked = summary.sort("raw_tokens_total", descending=True)
    for r in ranked.filter((pl.col("l1_rounds") + pl.col("l2_rounds")) > 0).iter_rows(named=True):
        shown = f"{r['saving_pct']:.1f}" + ("*" if r["summary_errors"] else "")
        assert shown in table_cells, f"{r['transcript']} [{r['strategy']}] saving {shown} not shown whole"
    assert "(at 80 columns: left out" in text  # the dropped columns are named
    first_row = next(line for line in lines if line.startswith("│ output.jsonl"))
    assert first_row, "the runs that compressed are ranked first"
    costs = text[text.index("cost and summary fidelity per strategy") :]
    assert "│ no compression" in costs
    assert "per strategy, all runs" in text and "more runs in" not in text  # 12 runs < --top 40


def test_fit_table_drops_columns_by_priority_and_never_cuts_a_number() -> None:
    import io

    from rich.console import Console

    from ctxlab.cli.output import fit_table

    rows = [
        {
            "transcript": "a-rather-long-transcript-name-that-folds.jsonl",
            "n": 1234567 * (i + 1),
            "x": 0.123456,
        }
        for i in range(3)
    ]
    columns = [
        ("transcript", lambda r: r["transcript"]),
        ("raw tokens", lambda r: f"{r['n']:,}"),
        ("sent tokens", lambda r: f"{r['n'] // 2:,}"),
        ("saving %", lambda r: f"{100 * r['x']:.1f}"),
        ("cache share", lambda r: f"{r['x']:.3f}"),
        ("max view", lambda r: f"{r['n'] * 10:,}"),
    ]
    out = io.StringIO()
    con = Console(file=out, width=40, force_terminal=False, color_system=None)
    table, dropped = fit_table("t", columns, rows, con.width)
    con.print(table)
    text = out.getvalue()
    assert all(len(line) <= 40 for line in text.splitlines())
    assert dropped == ["max view", "cache share", "sent tokens"]  # last in PRIORITY first
    for r in rows:
        assert f"{r['n']:,}" in text and "12.3" in text
    assert "…" not in text
