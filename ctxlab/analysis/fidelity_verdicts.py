"""What the executive summary (:mod:`ctxlab.analysis.verdicts`) says about summary fidelity and
about requests a provider would reject (issue 28).

* :func:`fidelity_line`: per strategy with probes, its probe pass rate beside the two reference
  floors scored on the same rounds (``dump_probe_pass_rate``, ``recent_probe_pass_rate``;
  :mod:`ctxlab.replay.probes`), pooled over its L2 rounds, with the probe count.
* :func:`fidelity_warnings`: a strategy that does not beat a floor on its own rounds has no claim
  to summary fidelity; a strategy that sent requests a provider would reject (``rejected_calls``)
  has them left out of its savings, with the saving over its valid calls.

The floor strategies themselves (``floor-*``) are not judged against their own floors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

__all__ = ["fidelity_line", "fidelity_warnings"]


def _judged(totals: pl.DataFrame) -> list[Mapping[str, Any]]:
    """The strategy totals rows with probes, the floor strategies left out."""
    if "probe_pass_rate" not in totals.columns:
        return []
    return [
        r
        for r in totals.iter_rows(named=True)
        if r.get("probe_pass_rate") is not None and not str(r["strategy"]).startswith("floor-")
    ]


def _over(row: Mapping[str, Any]) -> str:
    """`` over N probes`` (a rate of 1.000 over one probe says little), or nothing when unknown."""
    n = row.get("probes")
    return f" over {int(n)} probe{'s' if int(n) != 1 else ''}" if n is not None else ""


def fidelity_line(totals: pl.DataFrame) -> str | None:
    """One sentence: each strategy's probe pass rate and the floors' on the same probes; ``None``
    when no strategy has a probe."""
    judged = _judged(totals)
    if not judged:
        return None
    parts = [
        f"{r['strategy']} {r['probe_pass_rate']:.3f}{_over(r)} (identifier dump "
        f"{r['dump_probe_pass_rate']:.3f}, keep-recent {r['recent_probe_pass_rate']:.3f})"
        for r in sorted(judged, key=lambda r: -float(r["probe_pass_rate"]))
    ]
    return (
        "Summary fidelity (probes passed, pooled over each strategy's L2 rounds; the reference floors "
        "on the same probes at the same size): " + "; ".join(parts) + "."
    )


def fidelity_warnings(totals: pl.DataFrame) -> list[str]:
    """The warnings about fidelity floors and rejected requests (module docstring)."""
    out: list[str] = []
    for r in _judged(totals):
        floor = max(float(r["dump_probe_pass_rate"] or 0.0), float(r["recent_probe_pass_rate"] or 0.0))
        if float(r["probe_pass_rate"]) <= floor:
            out.append(
                f"{r['strategy']} does not beat the reference floors on its own rounds (probe pass "
                f"{r['probe_pass_rate']:.3f}; identifier dump {r['dump_probe_pass_rate']:.3f}, keep-recent "
                f"{r['recent_probe_pass_rate']:.3f}): no claim to summary fidelity."
            )
    if "rejected_calls" in totals.columns:
        for r in totals.iter_rows(named=True):
            rejected = int(r.get("rejected_calls") or 0)
            if rejected:
                valid = r.get("cost_saving_pct_without_failed")
                rest = (
                    f"; its dollar saving over the valid calls is {valid:.1f} %" if valid is not None else ""
                )
                raw = int(r.get("raw_rejected_calls") or 0)
                own = (
                    f"; the uncompressed request is refused on {raw} call(s) as well (the transcript's own "
                    "unmatched pairs: raw_rejected_calls)"
                    if raw
                    else ""
                )
                out.append(
                    f"{r['strategy']}: {rejected} request(s) a provider would reject (unmatched tool "
                    f"calls/results), left out of its savings{rest}{own}."
                )
    return out
