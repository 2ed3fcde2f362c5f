"""The per-run cost and fidelity columns (``summary.csv``, the strategy totals): dollars under the
run's price row and their breakdown, the savings (all calls, valid calls, feasible calls), and the
identifier recall and probe pass rates of the L2 summaries.  Part of
:data:`ctxlab.replay.columns.runs.RUN_REGISTRY`, in its order."""

from __future__ import annotations

import polars as pl

from ctxlab.replay.columns import aggregations as a
from ctxlab.replay.columns import definitions as d
from ctxlab.replay.columns.registry import RunColumn

__all__ = ["COST_AND_FIDELITY"]

_Float, _Int = pl.Float64, pl.Int64
_sum_or_null, _saving, _cost, _pooled = a.sum_or_null, a.saving, a.cost, a.pooled
_valid, _ok_cost, _feasible = a.valid, a.ok_cost, a.feasible
_RATIO = "ratio of the pooled sums"

#: the cost and fidelity columns, in ``summary.csv``'s order
COST_AND_FIDELITY: tuple[RunColumn, ...] = (
    RunColumn(
        "cost_usd",
        _Float,
        "usd",
        "Σ cost_usd + Σ summarizer_cost_usd (empty: no price row)",
        "cost",
        ("cost_usd", "summarizer_cost_usd"),
        "sum",
        expr=_cost,
    ),
    RunColumn(
        "summarizer_cost_usd",
        _Float,
        "usd",
        "Σ summarizer_cost_usd",
        "cost",
        ("summarizer_cost_usd",),
        "sum",
        expr=lambda: _sum_or_null("summarizer_cost_usd"),
    ),
    RunColumn(
        "raw_cost_usd",
        _Float,
        "usd",
        "Σ raw_cost_usd",
        "cost",
        ("raw_cost_usd",),
        "sum",
        expr=lambda: _sum_or_null("raw_cost_usd"),
    ),
    RunColumn(
        "cost_saving_pct",
        _Float,
        "percent",
        "100 × (1 − cost_usd / raw_cost_usd) of the run",
        "cost",
        ("cost_usd", "summarizer_cost_usd", "raw_cost_usd"),
        _RATIO,
        expr=lambda: _saving(_cost(), _sum_or_null("raw_cost_usd")),
        label="dollar saving (% of the uncompressed run's cost)",
    ),
    RunColumn(
        "cost_saving_pct_without_failed",
        _Float,
        "percent",
        "cost_saving_pct over the valid calls: not built on a failed summary, not rejected by the provider",
        "cost",
        ("cost_usd", "summarizer_cost_usd", "raw_cost_usd", "after_failed_summary", "rejected_reason"),
        _RATIO,
        expr=lambda: _saving(_ok_cost(), pl.col("raw_cost_usd").filter(_valid()).sum()),
    ),
    *(
        RunColumn(
            name,
            _Float,
            "usd",
            f"Σ {name}",
            "cost",
            (name,),
            "sum",
            expr=lambda name=name: _sum_or_null(name),  # type: ignore[misc]
        )
        for name in (
            "cost_read_usd",
            "cost_write_usd",
            "cost_uncached_usd",
            "cost_output_usd",
            "raw_cost_read_usd",
            "raw_cost_write_usd",
        )
    ),
    RunColumn(
        "raw_cost_usd_feasible",
        _Float,
        "usd",
        "Σ raw_cost_usd over the calls whose no-compression baseline is feasible (infeasible_calls)",
        "cost",
        ("raw_cost_usd", "over_window", "raw_rejected_reason"),
        "sum",
        expr=lambda: _feasible("raw_cost_usd", nullable=True),
    ),
    RunColumn(
        "cost_saving_pct_feasible",
        _Float,
        "percent",
        "cost_saving_pct over the calls whose no-compression baseline is feasible (not infeasible_calls), "
        "a failure counted as a failure: a call built on a failed summary or rejected by the "
        "provider costs what its uncompressed request costs (its summarizer cost stays); the verdicts' "
        "dollar measure",
        "cost",
        (
            "cost_usd",
            "summarizer_cost_usd",
            "raw_cost_usd",
            "over_window",
            "raw_rejected_reason",
            "after_failed_summary",
            "rejected_reason",
        ),
        _RATIO,
        expr=lambda: _saving(a.counted_cost(), _feasible("raw_cost_usd", nullable=True)),
    ),
    RunColumn(
        "span_recall",
        _Float,
        "share",
        "Σ span_carried / Σ span_identifiers over the L2 rounds",
        "fidelity",
        ("span_carried", "span_identifiers"),
        "pooled ratio",
        expr=lambda: _pooled("span_carried", "span_identifiers"),
        detail=d.SPAN_RECALL,
    ),
    RunColumn(
        "needed_recall",
        _Float,
        "share",
        "Σ needed_carried / Σ needed_identifiers over the L2 rounds",
        "fidelity",
        ("needed_carried", "needed_identifiers"),
        "pooled ratio",
        expr=lambda: _pooled("needed_carried", "needed_identifiers"),
        detail=d.NEEDED_RECALL,
        label="identifier recall (needed_recall, share)",
    ),
    RunColumn(
        "probes",
        _Int,
        "count",
        "Σ probes over the L2 rounds (empty: no probe): what probe_pass_rate is over",
        "fidelity",
        ("probes",),
        "sum",
        expr=lambda: _sum_or_null("probes"),
    ),
    RunColumn(
        "probe_pass_rate",
        _Float,
        "share",
        "Σ probes_passed / Σ probes over the L2 rounds (empty: no probe)",
        "fidelity",
        ("probes_passed", "probes"),
        "pooled ratio",
        expr=lambda: _pooled("probes_passed", "probes"),
        label="probe pass rate",
    ),
    RunColumn(
        "dump_probe_pass_rate",
        _Float,
        "share",
        "Σ dump_probes_passed / Σ probes: the identifier-dump floor on the same rounds and probes",
        "fidelity",
        ("dump_probes_passed", "probes"),
        "pooled ratio",
        expr=lambda: _pooled("dump_probes_passed", "probes"),
    ),
    RunColumn(
        "recent_probe_pass_rate",
        _Float,
        "share",
        "Σ recent_probes_passed / Σ probes: the keep-recent floor on the same rounds and probes",
        "fidelity",
        ("recent_probes_passed", "probes"),
        "pooled ratio",
        expr=lambda: _pooled("recent_probes_passed", "probes"),
    ),
    RunColumn(
        "mean_summary_tokens",
        _Float,
        "tokens",
        "mean summary_tokens over the L2 rounds (empty: none)",
        "fidelity",
        ("summary_tokens",),
        "mean",
        expr=lambda: pl.col("summary_tokens").mean(),
    ),
)
