"""``ctxlab diff RUN_A RUN_B`` and ``ReplayResult.diff``: two compare runs of the same transcripts,
at T = 16 K and T = 32 K, paired per strategy over the runs both hold.

The paired intervals are recomputed here from the two ``summary.csv`` files with a bootstrap
written out in the test and compared with what ``ctxlab diff`` prints and writes.  The runs come
from four sources (formats), so, as in ``compare`` (issue 27), the difference is the
source-balanced mean (the mean of each source's mean per-run difference B − A) and the bootstrap
is stratified by source: 2,000 resamples drawn with one ``random.Random(0)``, each drawing within
every source (in the order the sources first appear) as many runs as it has with ``choices`` (a
source of one run keeps its value); the 2.5 % and 97.5 % quantiles of the resampled means, linear
between ranks.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.replay.diff import RunDiffError, diff_folders
from ctxlab.replay.stats import MIN_PAIRED_RUNS
from ctxlab.transcripts.locate import shared_dir

CTXLAB = [sys.executable, "-m", "ctxlab"]
RAW = shared_dir() / "transcripts" / "raw"
PATHS = [RAW / "mini-swe-agent", RAW / "deer-flow", RAW / "claude-code", RAW / "opencode"]
STRATEGIES = "ars,masking,langchain-summarization"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("diff")
    outs = []
    for t in (16, 32):
        out = root / f"t{t}"
        done = subprocess.run(
            [
                *CTXLAB, "compare", *map(str, PATHS), "--strategies", STRATEGIES, "--summary-threshold", str(t),
                "--no-figures", "--keep-going", "--no-progress", "--out", str(out),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr  # 1: a failed (fallback) summary is a failure
        outs.append(out)
    return outs[0], outs[1]


def _bootstrap(pairs: list[tuple[str, float]]) -> tuple[float, float, float]:
    """Source-balanced mean and stratified percentile interval of the per-run differences
    ``(source, difference)`` in run order, written out (module doc of ctxlab.replay.stratified)."""

    def balanced(parts: list[list[float]]) -> float:
        return sum(sum(g) / len(g) for g in parts) / len(parts)

    by: dict[str, list[float]] = {}
    for source, d in pairs:
        by.setdefault(source, []).append(d)
    groups = list(by.values())
    mean = balanced(groups)
    rng = random.Random(0)
    many = [g for g in groups if len(g) > 1]
    single = [g[0] for g in groups if len(g) == 1]  # the single-run sources: one stratum together
    if len(single) == 1:  # a lone one-run source: runs resampled across sources, balanced per draw

        def drawn() -> float:
            got: dict[str, list[float]] = {}
            for source, d in rng.choices(pairs, k=len(pairs)):
                got.setdefault(source, []).append(d)
            return balanced(list(got.values()))

        means = sorted(drawn() for _ in range(2000))
    else:
        means = sorted(
            balanced(
                [
                    *(rng.choices(g, k=len(g)) for g in many),
                    *([v] for v in rng.choices(single, k=len(single))),
                ]
            )
            for _ in range(2000)
        )

    def q(p: float) -> float:
        pos = p * (len(means) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(means) - 1)
        return means[lo] + (means[hi] - means[lo]) * (pos - lo)

    return mean, q(0.025), q(0.975)


def _expected(a: Path, b: Path, strategy: str, column: str) -> tuple[int, int, float, float, float]:
    """Pairs, pairs that differ (ties carry no sign), mean difference B − A, interval."""
    sa, sb = (pl.read_csv(p / "summary.csv").filter(pl.col("strategy") == strategy) for p in (a, b))
    if column == "declined_or_rejected":  # rounds that made no summary by design, not failures
        total = pl.col("declined_summaries") + pl.col("rejected_summaries")
        sa, sb = (s.with_columns(total.alias(column)) for s in (sa, sb))
    real_a = sa.filter(pl.col("data_provenance") == "real")
    va = dict(real_a.select("transcript", column).iter_rows())
    vb = dict(sb.filter(pl.col("data_provenance") == "real").select("transcript", column).iter_rows())
    source = dict(real_a.select("transcript", "transcript_format").iter_rows())
    pairs = [
        (source[t], float(vb[t]) - float(va[t]))
        for t in va
        if t in vb and va[t] is not None and vb[t] is not None
    ]
    runs = len(pairs)
    differ = sum(1 for _, d in pairs if abs(d) > 1e-9)
    return (runs, differ, *_bootstrap(pairs)) if runs else (0, 0, math.nan, math.nan, math.nan)


def test_diff_prints_the_paired_intervals_a_recomputation_finds(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = two_runs
    out = tmp_path / "diff"
    done = subprocess.run(
        [*CTXLAB, "diff", str(a), str(b), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    table = pl.read_csv(out / "diff.csv")
    checked = 0
    for strategy in STRATEGIES.split(","):
        for measure, column in (
            ("tokens", "sent_tokens_total"),
            ("dollars", "cost_usd"),
            ("identifier recall", "needed_recall"),
            ("failed summaries", "summary_errors"),  # compare's own column (s40 trial)
            ("declined summaries", "declined_or_rejected"),
        ):
            row = table.filter((pl.col("strategy") == strategy) & (pl.col("measure") == measure)).row(
                0, named=True
            )
            runs, differ, mean, low, high = _expected(a, b, strategy, column)
            assert row["runs"] == runs
            if not runs:
                assert row["difference"] is None and row["verdict"] == "no pair"
                continue
            assert row["difference"] == pytest.approx(mean, rel=1e-9, abs=1e-12)
            if differ < MIN_PAIRED_RUNS:  # no interval where no difference is called (trial s40)
                assert row["low"] is None and row["high"] is None
            else:
                assert row["low"] == pytest.approx(low, rel=1e-9, abs=1e-12)
                assert row["high"] == pytest.approx(high, rel=1e-9, abs=1e-12)
            if row["verdict"] == "identical":
                assert low == high == mean == 0
            elif differ < MIN_PAIRED_RUNS:  # no difference is called on so few runs that differ
                assert row["verdict"] == (
                    f"too few runs to call ({runs} < {MIN_PAIRED_RUNS})"
                    if differ == runs
                    else f"too few runs to call ({differ} of {runs} differ, < {MIN_PAIRED_RUNS})"
                )
            else:
                assert ("no detectable difference" in row["verdict"]) == (low <= 0 <= high)
            checked += 1
    assert checked >= 10
    # the printed executive summary carries the same intervals
    ars_tokens = table.filter((pl.col("strategy") == "ars") & (pl.col("measure") == "tokens")).row(
        0, named=True
    )
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("ars ("))
    assert line.strip().startswith(
        f"ars ({ars_tokens['runs']} runs, {ars_tokens['sources']} sources, source-balanced)"
    )
    printed = re.search(r"tokens ([+-][\d,]+) \(CI ([+-][\d,]+) to ([+-][\d,]+)\)", line)
    assert printed is not None, line
    assert [int(g.replace(",", "")) for g in printed.groups()] == [
        round(ars_tokens[k]) for k in ("difference", "low", "high")
    ]
    assert "settings.summary_threshold 16 → 32" in done.stdout
    md = (out / "diff.md").read_text(encoding="utf-8")
    assert "| settings.summary_threshold | 16 | 32 | differs |" in md
    assert "| settings.summary_keep_messages | 10 | 10 |  |" in md
    from PIL import Image

    with Image.open(out / "diff.png") as png:
        assert png.format == "PNG" and png.size[0] > 800


def test_result_diff_is_the_folders_diff(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    from_folders = diff_folders(a, b)
    results = [
        replay_many(
            PATHS, STRATEGIES.split(","), settings=CompressionSettings(summary_threshold=t), progress=False
        )
        for t in (16, 32)
    ]
    in_python = results[0].diff(results[1], names=("t16", "t32"))
    assert in_python.table.drop("verdict").equals(from_folders.table.drop("verdict"))
    assert in_python.summary()[2:] == from_folders.summary()[2:]
    assert ("settings.summary_threshold", 16, 32) in in_python.changed()
    from ctxlab.analysis.plotting import plot_diff

    fig = plot_diff(in_python)
    assert [ax.get_title() for ax in fig.axes][:2] == [
        "tokens: B − A (lower is better)",
        "dollars: B − A (lower is better)",
    ]
    # what the colours mean is on the figure (s39 trial: coloured dots, no legend), and a row
    # with too few differing runs to call is drawn hollow
    [legend] = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "B better", "B worse", "no detectable difference", "hollow: too few runs differ to call (no interval)",
    ]  # fmt: skip
    tokens = in_python.table.filter(pl.col("measure") == "tokens")
    few = tokens["verdict"].str.starts_with("too few").to_list()
    hollow = [line.get_markerfacecolor() == "white" for line in fig.axes[0].lines if line.get_marker() == "o"]
    assert hollow == [f for f, d in zip(few, tokens["difference"].to_list(), strict=True) if d is not None]


def test_what_cannot_be_compared_says_why(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = two_runs
    missing = subprocess.run([*CTXLAB, "diff", str(a), str(tmp_path)], capture_output=True, text=True)
    assert missing.returncode == 1 and "not a run folder (no calls.parquet" in missing.stderr
    one = replay_many([RAW / "deer-flow"], ["hybrid"], progress=False)
    other = replay_many([RAW / "deer-flow"], ["masking"], progress=False)
    with pytest.raises(RunDiffError, match="no strategy in common"):
        one.diff(other)


def _summary(transcripts: list[str], provenance: str) -> pl.DataFrame:
    """The per-run frame of runs of one call each (``ars``, 1,000 raw tokens, 600 sent)."""
    from ctxlab.replay import CALL_COLUMNS, ReplayResult

    rows = []
    for t in transcripts:
        row = dict.fromkeys(CALL_COLUMNS)
        row.update(
            transcript=t,
            strategy="ars",
            data_provenance=provenance,
            call_index=0,
            message_index=1,
            raw_tokens=1000,
            view_tokens=600,
            view_messages=1,
            level="L2",
            summarizer_calls=0,
            threshold=500.0,
            l2_threshold=200.0,
            trigger_reached=True,
            unmatched_tool_pairs=0,
        )
        rows.append(row)
    return ReplayResult(rows=rows, strategies=["ars"]).summary()


def test_a_side_without_the_runs_pooled_or_no_run_in_common_is_a_clear_error() -> None:
    """``ctxlab diff out/demo <a real compare>``: the demo's one run is scripted, so the real runs
    pooled by default leave A empty — an error that says so and names ``--data all`` (it was a
    traceback naming internal strategy labels); two folders with no transcript in common: an
    error too (it was exit 0 and an empty figure)."""
    from ctxlab.replay.diff import run_diff

    demo, real = _summary(["sample"], "scripted"), _summary(["sample", "r1"], "real")
    with pytest.raises(RunDiffError, match=r"A holds none of the runs pooled \(real runs\).*--data all"):
        run_diff(demo, real)
    assert run_diff(demo, real, data="all").table.height > 0  # pairs the common run
    with pytest.raises(RunDiffError, match=r"A and B share no run \(transcript\): nothing to pair"):
        run_diff(_summary(["x1", "x2"], "real"), _summary(["y1"], "real"))


def _balanced_means(a: Path, b: Path, strategy: str, column: str) -> tuple[float, float]:
    """The source-balanced means of A and B over the real runs both hold (each source's mean,
    then the mean of those), written out from the two ``summary.csv`` files."""
    sa, sb = (
        pl.read_csv(p / "summary.csv").filter(
            (pl.col("strategy") == strategy) & (pl.col("data_provenance") == "real")
        )
        for p in (a, b)
    )
    va, vb = (dict(s.select("transcript", column).iter_rows()) for s in (sa, sb))
    source = dict(sa.select("transcript", "transcript_format").iter_rows())
    runs = [t for t in va if t in vb and va[t] is not None and vb[t] is not None]
    means = []
    for values in (va, vb):
        by: dict[str, list[float]] = {}
        for t in runs:
            by.setdefault(source[t], []).append(float(values[t]))
        means.append(sum(sum(g) / len(g) for g in by.values()) / len(by))
    return means[0], means[1]


def test_the_means_of_a_and_b_give_the_difference(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    """s39 trial, finding 4: "mean A" and "mean B" were plain means over runs beside a
    source-balanced B − A (143,169 − 102,596 printed beside +65,876).  Now the three are weighted
    alike: the printed mean B − mean A is the printed B − A (to the rounding of the cells), both
    means are the source-balanced means recomputed here, and the plain ones are labelled apart."""
    a, b = two_runs
    out = tmp_path / "diff"
    done = subprocess.run(
        [*CTXLAB, "diff", str(a), str(b), "--out", str(out), "--no-figure"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    table = pl.read_csv(out / "diff.csv")
    md = (out / "diff.md").read_text(encoding="utf-8")
    assert "| mean A | mean B | B − A | 95 % CI | verdict | plain mean A | plain mean B |" in md
    assert "source-balanced" in md.split("| strategy | measure |")[0].split("## Paired differences")[1]
    balanced_differs = 0
    for strategy in STRATEGIES.split(","):
        row = table.filter((pl.col("strategy") == strategy) & (pl.col("measure") == "tokens")).row(
            0, named=True
        )
        assert row["sources"] > 1
        mean_a, mean_b = _balanced_means(a, b, strategy, "sent_tokens_total")
        assert row["mean_a"] == pytest.approx(mean_a, rel=1e-9)
        assert row["mean_b"] == pytest.approx(mean_b, rel=1e-9)
        assert row["mean_b"] - row["mean_a"] == pytest.approx(row["difference"], rel=1e-9, abs=1e-6)
        balanced_differs += abs(row["plain_b"] - row["plain_a"] - row["difference"]) > 1
        cells = next(
            line.split("|")[1:-1] for line in md.splitlines() if line.startswith(f"| {strategy} | tokens |")
        )
        printed_a, printed_b, printed_diff = (int(c.strip().replace(",", "")) for c in cells[4:7])
        assert abs((printed_b - printed_a) - printed_diff) <= 1  # each cell rounded to whole tokens
    assert balanced_differs  # the plain means would not have given B − A here
    assert "mean B − mean A = B − A" in done.stdout


@pytest.fixture(scope="module")
def latency_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One OpenCode session under ars and ars-prepared, at T = 32 K, with the summarizer's
    simulated latency 2 s (A) and 5 s (B), all else the same."""
    root = tmp_path_factory.mktemp("latency")
    outs = []
    for latency in ("2s", "5s"):
        out = root / f"lat{latency}"
        done = subprocess.run(
            [
                *CTXLAB, "compare", str(RAW / "opencode" / "session-ses_4313.md"), "--strategies",
                "ars,ars-prepared", "--summary-threshold", "32", "--summarizer-latency", latency,
                "--figures", "none", "--no-progress", "--out", str(out),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outs.append(out)
    return outs[0], outs[1]


def test_a_changed_latency_is_a_setting_that_differs_and_the_stall_is_compared(
    latency_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """s39 trial, finding 4: two runs differing only in ``--summarizer-latency`` were "0
    setting(s) or version(s) differ" and showed no stall: now the latency is a compared setting
    and the per-run ``stall_total_s`` of each run is a measure of the paired table."""
    a, b = latency_runs
    out = tmp_path / "diff"
    done = subprocess.run(
        [*CTXLAB, "diff", str(a), str(b), "--out", str(out), "--no-figure"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "1 setting(s) or version(s) differ: latency.summarizer 2s → 5s." in done.stdout
    assert "| latency.summarizer | 2s | 5s | differs |" in (out / "diff.md").read_text(encoding="utf-8")
    table = pl.read_csv(out / "diff.csv")
    stalls = {
        p: dict(pl.read_csv(p / "summary.csv").select("strategy", "stall_total_s").iter_rows())
        for p in (a, b)
    }
    for strategy in ("ars", "ars-prepared"):
        row = table.filter((pl.col("strategy") == strategy) & (pl.col("measure") == "stall")).row(
            0, named=True
        )
        assert (row["mean_a"], row["mean_b"]) == (stalls[a][strategy], stalls[b][strategy])
        assert row["difference"] == pytest.approx(stalls[b][strategy] - stalls[a][strategy])
    assert stalls[b]["ars"] > stalls[a]["ars"] > 0  # the longer latency made the agent wait longer
    # --call-latency (the agent step) is compared too
    from ctxlab.replay.diff import load_run_folder, run_diff

    frame, record = load_run_folder(a)
    stepped = {**record, "latency": {**record["latency"], "agent_step": "3s"}}
    assert ("latency.agent_step", "auto", "3s") in run_diff(frame, frame, record, stepped).changed()
    # runs without any stall value get no stall row
    plain = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("stall_total_s"))
    assert "stall" not in run_diff(plain, plain).table["measure"].to_list()


def test_a_run_folder_written_by_an_older_ctxlab_is_read_with_its_new_columns_empty(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """A folder written before a column existed (s40: ``raw_rejected_reason``; the stall columns
    before it) made ``ctxlab diff`` and ``ctxlab show`` fail with polars' ColumnNotFoundError.
    Every reader goes through ``read_calls``: the missing columns are empty, a warning names the
    file and them, and the numbers that do not depend on them are the same."""
    import shutil
    import warnings

    a, b = two_runs
    old = tmp_path / "old"
    shutil.copytree(a, old)
    dropped = ["raw_rejected_reason", "stall_s", "prepared_used"]
    pl.read_parquet(old / "calls.parquet").drop(dropped).write_parquet(old / "calls.parquet")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = diff_folders(old, b)
    lines = {str(w.message) for w in said if "older ctxlab" in str(w.message)}
    assert lines == {
        f"{old / 'calls.parquet'}: written by an older ctxlab, it lacks the column(s) "
        f"{', '.join(dropped)}; they are read as empty (not measured then)"
    }
    fresh = diff_folders(a, b)
    keep = ["strategy", "measure", "runs", "difference"]
    tokens = pl.col("measure") == "tokens"
    assert result.table.filter(tokens).select(keep).equals(fresh.table.filter(tokens).select(keep))
    shown = subprocess.run([*CTXLAB, "show", str(old)], capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0, shown.stderr
    assert "written by an older ctxlab" in shown.stderr and (old / "inspect.html").is_file()
