"""Two experiments compared run by run: ``ctxlab diff RUN_A RUN_B`` and
:meth:`ctxlab.replay.ReplayResult.diff`.

T = 16 K against T = 32 K, a plugin before and after a change, ARS with one summarizer or
another: two replays of the same transcripts.  :func:`run_diff` pairs them **per strategy** over
the runs (transcript labels) both hold and, for each measure of :data:`DIFF_MEASURES`, reports the
mean per-run difference ``B − A`` with the **same** percentile-bootstrap interval as
``compare``'s paired comparisons (:func:`ctxlab.replay.paired.paired_comparison`: 2,000
resamples, seed 0, 95 %; the runs pooled as ``data`` says, by default the real ones; with pairs
from several sources (formats) the mean is source-balanced and the bootstrap stratified by
source, :mod:`ctxlab.replay.stratified`).  The means of A and B beside it are weighted the same
way (source-balanced over the same pairs), so that ``mean B − mean A`` is ``B − A``; the plain
means over the pairs are in ``plain_a`` and ``plain_b``.  An
interval that holds 0 is "no detectable difference", never a winner.  Beside the numbers: every
setting and provenance field of A and B side by side (:attr:`RunDiff.fields`), what only one of
them holds, and a short executive summary (:meth:`RunDiff.summary`).  The figure is
:func:`ctxlab.analysis.plotting.plot_diff`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ctxlab.replay.paired import paired_comparison
from ctxlab.replay.stats import (
    CONFIDENCE,
    MIN_PAIRED_RUNS,
    RESAMPLES,
    SEED,
    pooled_runs,
)

__all__ = [
    "DIFF_MEASURES",
    "TOO_FEW",
    "RunDiff",
    "RunDiffError",
    "diff_folders",
    "format_value",
    "load_run_folder",
    "run_diff",
]

#: measure -> (per-run column, unit, better direction).  ``failed summaries`` is compare's column
#: (``summary_errors``: failed and fallback summaries, :mod:`ctxlab.replay.failures`);
#: ``declined summaries`` (``declined_or_rejected``) counts the rounds that made no summary by
#: design — no valid cutoff (R13) or a commit the T2 rule refused — which are not failures (the
#: s40 trial saw them counted as "failures" beside reports saying 0 failed); ``stall``
#: (:mod:`ctxlab.replay.columns.stall`) only when either run has a value (a run replayed with
#: ``--summarizer-latency``)
DIFF_MEASURES: dict[str, tuple[str, str, str]] = {
    "tokens": ("sent_tokens_total", "tokens sent per run", "lower"),
    "dollars": ("cost_usd", "US dollars per run (prompt caching, summarizer included)", "lower"),
    "identifier recall": ("needed_recall", "share of the needed identifiers the summaries carried", "higher"),
    "failed summaries": (
        "summary_errors",
        "failed and fallback summaries per run (compare's column)",
        "lower",
    ),
    "declined summaries": (
        "declined_or_rejected",
        "L2 rounds per run that made no summary by design: no valid cutoff (R13) or a commit the T2 rule "
        "refused; not failures",
        "lower",
    ),
    "stall": ("stall_total_s", "seconds per run the agent waited on compression (simulated)", "lower"),
}
#: the measures' columns left out of the table when neither run has a value in them
ONLY_WHEN_PRESENT = ("stall_total_s",)
#: the columns of :attr:`RunDiff.table`
TABLE_COLUMNS = (
    "strategy",
    "measure",
    "column",
    "runs",
    "dropped",
    "sources",
    "mean_a",
    "mean_b",
    "difference",
    "low",
    "high",
    "verdict",
    "plain_a",
    "plain_b",
)


class RunDiffError(ValueError):
    """A folder that is not a finished run folder (no ``calls.parquet`` or ``run.json``, or
    marked unfinished), or two runs with no strategy in
    common: names the folder or the strategies."""


def _with_declined(summary: pl.DataFrame) -> pl.DataFrame:
    parts = [c for c in ("declined_summaries", "rejected_summaries") if c in summary.columns]
    total = pl.sum_horizontal([pl.col(c).fill_null(0) for c in parts]) if parts else pl.lit(0)
    return summary.with_columns(total.cast(pl.Float64).alias("declined_or_rejected"))


def load_run_folder(folder: str | Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """``(summary frame, run record)`` of a run folder: the per-run rows of its ``calls.parquet``
    (:func:`ctxlab.replay.table.summary_frame`) and its ``run.json`` (empty when absent).

    Raises:
        RunDiffError: ``folder`` is not a finished run (:func:`ctxlab.replay.run_folder.unfinished`:
            no ``calls.parquet`` or no ``run.json``, or its writing was interrupted).
    """
    from ctxlab.replay.run_folder import unfinished
    from ctxlab.replay.table import read_calls, summary_frame

    root = Path(folder)
    why = unfinished(root)
    if why is not None:
        raise RunDiffError(why)
    meta = json.loads((root / "run.json").read_text(encoding="utf-8"))
    return summary_frame(read_calls(root / "calls.parquet")), meta


def _flat(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a run record worth putting side by side, flat (``settings.summary_threshold``)."""
    out: dict[str, Any] = {}
    for key in ("ctxlab", "python", "measure", "context_window", "summarizer", "price", "command", "created"):
        if key in record:
            out[key] = record.get(key)
    for k, v in (record.get("settings") or {}).items():
        # T and T2 in whole tokens, as the report prints them ("T2 = 6,554")
        whole = k.endswith("_tokens") and isinstance(v, (int, float)) and not isinstance(v, bool)
        out[f"settings.{k}"] = f"{round(v):,}" if whole else v
    for k, v in (record.get("latency") or {}).items():  # --summarizer-latency, --call-latency
        out[f"latency.{k}"] = v
    for k, v in (record.get("packages") or {}).items():
        out[f"packages.{k}"] = v
    out["plugins"] = ", ".join(sorted(str(p.get("name")) for p in record.get("plugins") or []))
    for k, v in (record.get("environment") or {}).items():
        out[f"environment.{k}"] = v
    out["strategies"] = ", ".join(record.get("strategies") or {})
    for key in ("replayed", "calls"):
        if key in record:
            out[key] = record[key]
    if "problems" in record:
        out["problems"] = len(record["problems"] or [])
    return out


#: how a verdict with fewer than MIN_PAIRED_RUNS differing pairs starts (the diff figure reads it)
TOO_FEW = "too few runs to call"


def _verdict(
    diff: float | None, low: float | None, high: float | None, better: str, runs: int, differing: int
) -> str:
    if diff is None or low is None or high is None:
        return "no pair"
    if low == high == diff == 0:
        return "identical"
    if differing < MIN_PAIRED_RUNS:  # ties carry no sign (PairedComparison.too_few)
        if differing == runs:
            return f"{TOO_FEW} ({runs} < {MIN_PAIRED_RUNS})"
        return f"{TOO_FEW} ({differing} of {runs} differ, < {MIN_PAIRED_RUNS})"
    if low <= 0 <= high:
        return "no detectable difference"
    higher = low > 0
    good = higher == (better == "higher")
    return f"B {'higher' if higher else 'lower'} ({'better' if good else 'worse'})"


@dataclass(frozen=True)
class RunDiff:
    """Two replays compared (:func:`run_diff`).

    Attributes:
        a, b: the two experiments' names (folder names, or what the caller gave).
        fields: ``(field, value in A, value in B)`` for every setting and provenance field.
        table: one row per strategy × measure (:data:`TABLE_COLUMNS`): the pairs (``runs``),
            runs dropped for an empty value, the sources (formats) the pairs come from, the
            means in A and B over the pairs (``mean_a``, ``mean_b``) and the mean difference
            ``B − A``, all three source-balanced when ``sources`` > 1 (as in compare), so that
            ``mean_b − mean_a == difference``; its interval ``low``..``high``; the verdict
            (``"B lower (better)"``, ``"no detectable difference"``, ``"identical"``, ``"too few
            runs to call"`` below :data:`~ctxlab.replay.stats.MIN_PAIRED_RUNS` pairs, ...); and
            the plain means over the pairs (``plain_a``, ``plain_b``: every run alike).
        only_a, only_b: strategies only one of them holds.  runs_only: transcripts per
            experiment that the other does not hold (left out of every pair).
        data: the runs pooled (:func:`ctxlab.replay.stats.pooled_runs`' label).
    """

    a: str
    b: str
    fields: list[tuple[str, Any, Any]]
    table: pl.DataFrame
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    runs_only: dict[str, int] = field(default_factory=dict)
    data: str = "real runs"

    def changed(self) -> list[tuple[str, Any, Any]]:
        """The fields that differ (``created`` and ``command`` aside)."""
        return [f for f in self.fields if f[1] != f[2] and f[0] not in ("created", "command")]

    def settings_table(self) -> pl.DataFrame:
        """``field``, ``a``, ``b``, ``same``: the fields side by side, as text."""
        return pl.DataFrame(
            {
                "field": [f[0] for f in self.fields],
                "a": ["" if f[1] is None else str(f[1]) for f in self.fields],
                "b": ["" if f[2] is None else str(f[2]) for f in self.fields],
                "same": [f[1] == f[2] for f in self.fields],
            },
            schema={"field": pl.String, "a": pl.String, "b": pl.String, "same": pl.Boolean},
        )

    def summary(self) -> list[str]:
        """The executive summary: what differs, then per strategy each measure's paired
        difference with its interval and verdict, then what was left out."""
        changed = self.changed()
        what = ", ".join(f"{k} {_short(x)} → {_short(y)}" for k, x, y in changed[:8]) or "none"
        more = f" (and {len(changed) - 8} more)" if len(changed) > 8 else ""
        pct = round(100 * CONFIDENCE)
        lines = [
            f"B = {self.b} against A = {self.a}: {len(changed)} setting(s) or version(s) differ: {what}{more}.",
            f"Per strategy, paired over the runs both hold ({self.data}): mean per-run difference B − A with its "
            f"{pct} % bootstrap interval ({RESAMPLES:,} resamples, seed {SEED}, as in compare; with runs "
            "from several sources the mean is source-balanced and the bootstrap stratified by source, "
            "and so are the means of A and B in the table); an interval holding 0 is no detectable difference.",
        ]
        for strategy in self.table["strategy"].unique(maintain_order=True).to_list():
            rows = self.table.filter(pl.col("strategy") == strategy)
            runs = max(rows["runs"].to_list() or [0])
            sources = max(rows["sources"].to_list() or [1])
            strata = f", {sources} sources, source-balanced" if sources > 1 else ""
            parts = [_phrase(r, runs) for r in rows.iter_rows(named=True)]
            lines.append(f"{strategy} ({runs} runs{strata}): " + "; ".join(parts) + ".")
        if self.only_a or self.only_b:
            lines.append(
                "Not compared: strategies only in A: "
                + (", ".join(self.only_a) or "none")
                + "; only in B: "
                + (", ".join(self.only_b) or "none")
                + "."
            )
        if any(self.runs_only.values()):
            lines.append(
                f"Runs only one holds (left out): {self.runs_only.get('a', 0)} in A, {self.runs_only.get('b', 0)} in B."
            )
        return lines


def _short(v: Any) -> str:
    text = "(none)" if v is None else str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def format_value(v: float | None, column: str, *, signed: bool = True) -> str:
    """A value of :attr:`RunDiff.table` as ``ctxlab diff`` prints it: dollars with 4 decimals
    (below that, 2 significant digits: ``-3.1e-05``, never ``-0.0000``), tokens (a column naming
    tokens) always as whole tokens (``+0``, never ``+0.000``), other values of 100 or more as
    whole numbers, anything else with 3 decimals; ``""`` for an empty value."""
    if v is None:
        return ""
    sign = "+" if signed else ""
    if column == "cost_usd":
        text = f"{v:{sign}.4f}"
        return f"{v:{sign}.1e}" if v != 0 and float(text) == 0 else text
    if "tokens" in column:
        return f"{round(v) + 0:{sign},d}"  # + 0: no "-0"
    if abs(v) >= 100:
        return f"{v:{sign},.0f}"
    return f"{v:{sign}.3f}"


_number = format_value


def _phrase(r: Mapping[str, Any], runs: int) -> str:
    """One measure of a strategy's line; its pairs are named when fewer than the line's ``runs``
    (identifier recall exists only for runs with a summarized span)."""
    measure, column = r["measure"], r["column"]
    if r["difference"] is None:
        return f"{measure}: no run has a value in both"
    over = f" over {r['runs']} runs" if r["runs"] != runs else ""
    if r["verdict"] == "identical":
        where = f"the {r['runs']} run(s) with a value" if over else "every run"
        return f"{measure}: identical in {where}"
    if r["low"] is None or r["high"] is None:  # too few runs differ: the verdict says why
        return f"{measure} {_number(r['difference'], column)}{over}: {r['verdict']}"
    ci = f"CI {_number(r['low'], column)} to {_number(r['high'], column)}"
    return f"{measure} {_number(r['difference'], column)}{over} ({ci}): {r['verdict']}"


def run_diff(
    a: pl.DataFrame,
    b: pl.DataFrame,
    record_a: Mapping[str, Any] | None = None,
    record_b: Mapping[str, Any] | None = None,
    *,
    names: Sequence[str] = ("A", "B"),
    data: str | Sequence[str] = "real",
    measures: Mapping[str, tuple[str, str, str]] = DIFF_MEASURES,
) -> RunDiff:
    """Compare two replays' per-run frames (``summary.csv``'s, :meth:`ReplayResult.summary`).

    Args:
        a, b: the per-run frames of experiment A and B.
        record_a, record_b: their run records (``run.json``, or a result's provenance).
        names: what to call A and B.
        data: which runs are paired (:func:`ctxlab.replay.stats.pooled_runs`; default the real
            ones, all when none is real), as in ``compare``.
        measures: name -> (per-run column, unit, better direction) (:data:`DIFF_MEASURES`).

    Raises:
        RunDiffError: no strategy in common, no run in common, or one side without a run of the
            kind ``data`` pools.  ValueError: a bad ``data``.
    """
    fa, fb = _with_declined(a), _with_declined(b)
    sa = fa["strategy"].unique(maintain_order=True).to_list() if fa.height else []
    sb = fb["strategy"].unique(maintain_order=True).to_list() if fb.height else []
    common = [s for s in sa if s in sb]
    if not common:
        raise RunDiffError(f"no strategy in common: A has {sa or 'none'}, B has {sb or 'none'}")
    tag_a, tag_b = "\x00A", "\x00B"
    both = pl.concat(
        [
            fa.with_columns((pl.col("strategy") + tag_a).alias("strategy")),
            fb.with_columns((pl.col("strategy") + tag_b).alias("strategy")),
        ],
        how="diagonal_relaxed",
    )
    pool = pooled_runs(both, data)
    label = pool.label
    pooled = set(pool.summary["strategy"].to_list()) if pool.summary.height else set()
    for name, tag in zip(names, (tag_a, tag_b), strict=True):
        if not any(str(s).endswith(tag) for s in pooled):
            raise RunDiffError(
                f"{name} holds none of the runs pooled ({label}): its runs are of another kind "
                "(the bundled sample is scripted, not real); --data all pairs every run"
            )
    ta = set(fa["transcript"].to_list()) if fa.height else set()
    tb = set(fb["transcript"].to_list()) if fb.height else set()
    if not ta & tb:
        raise RunDiffError(
            f"{names[0]} and {names[1]} share no run (transcript): nothing to pair "
            f"({len(ta)} run(s) only in {names[0]}, {len(tb)} only in {names[1]})"
        )
    rows = []
    for s in common:
        for name, (column, _unit, better) in measures.items():
            if column not in both.columns:
                continue
            if column in ONLY_WHEN_PRESENT and both[column].is_null().all():
                continue
            c = paired_comparison(both, s + tag_b, s + tag_a, column, data=data)  # B − A
            rows.append(
                {
                    "strategy": s,
                    "measure": name,
                    "column": column,
                    "runs": c.runs,
                    "dropped": c.dropped,
                    "sources": c.sources if c.runs else 0,
                    "mean_a": c.mean_b,
                    "mean_b": c.mean_a,
                    "difference": c.difference,
                    # no interval where the verdict rule calls nothing (< 6 differing runs;
                    # one run's "interval" is its value): blank, as in compare's tables
                    "low": None if c.too_few else c.low,
                    "high": None if c.too_few else c.high,
                    "verdict": _verdict(c.difference, c.low, c.high, better, c.runs, c.evidence),
                    "plain_a": c.plain_b,
                    "plain_b": c.plain_a,
                }
            )
    schema = {
        "strategy": pl.String,
        "measure": pl.String,
        "column": pl.String,
        "runs": pl.Int64,
        "dropped": pl.Int64,
        "sources": pl.Int64,
        **{k: pl.Float64 for k in ("mean_a", "mean_b", "difference", "low", "high")},
        "verdict": pl.String,
        "plain_a": pl.Float64,
        "plain_b": pl.Float64,
    }
    ta = set(fa["transcript"].to_list()) if fa.height else set()
    tb = set(fb["transcript"].to_list()) if fb.height else set()
    flat_a, flat_b = _flat(record_a or {}), _flat(record_b or {})
    keys = list(dict.fromkeys([*flat_a, *flat_b]))
    return RunDiff(
        a=names[0],
        b=names[1],
        fields=[(k, flat_a.get(k), flat_b.get(k)) for k in keys],
        table=pl.DataFrame(rows, schema=schema, orient="row"),
        only_a=[s for s in sa if s not in sb],
        only_b=[s for s in sb if s not in sa],
        runs_only={"a": len(ta - tb), "b": len(tb - ta)},
        data=label,
    )


def diff_folders(a: str | Path, b: str | Path, *, data: str | Sequence[str] = "real") -> RunDiff:
    """:func:`run_diff` of two run folders (``ctxlab replay``/``compare`` output), named by their
    folder names (their paths when the names are equal).

    Raises:
        RunDiffError: a folder without ``calls.parquet``, or no strategy in common.
    """
    (fa, ma), (fb, mb) = load_run_folder(a), load_run_folder(b)
    na, nb = Path(a).name, Path(b).name
    if na == nb:
        na, nb = str(a), str(b)
    return run_diff(fa, fb, ma, mb, names=(na, nb), data=data)
