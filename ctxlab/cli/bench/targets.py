"""The targets of issue 31 ("cheaper than LangChain while compressing"), read from the sections'
results: each a figure ``ctxlab bench`` measured in this run, its target and whether it is met.

Ratios are LangChain / ctxlab (above 1: ctxlab cheaper) unless the row says otherwise; every one
compares contenders measured side by side in the same run (:mod:`~ctxlab.cli.bench.compressing`,
:mod:`~ctxlab.cli.bench.overhead`, :mod:`~ctxlab.cli.bench.estimators`,
:mod:`~ctxlab.cli.bench.throughput`, :mod:`~ctxlab.cli.bench.scale`).  A figure that a run did not
measure (a ``--sections`` subset, ``--quick`` sizes) is left out, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ctxlab.cli.bench.compressing import ROUNDS, CompressingResult, CompressingRow
from ctxlab.cli.bench.estimators import EstimatorResult
from ctxlab.cli.bench.overhead import OverheadResult
from ctxlab.cli.bench.scale import StartupResult
from ctxlab.cli.bench.throughput import ReplayThroughput

__all__ = [
    "Target",
    "compressing_targets",
    "estimator_targets",
    "log_targets",
    "render_targets",
    "replay_targets",
    "startup_targets",
]


@dataclass
class Target:
    """One target: what is measured, the figure (``unit``: ``"x"`` a ratio, ``"passes"``,
    ``"s"``), the bound and its direction (``at_least``: the figure must reach ``bound``, else stay
    at or below it), and where the figure comes from."""

    measure: str
    value: float
    unit: str
    bound: float
    at_least: bool
    source: str

    @property
    def met(self) -> bool:
        if math.isnan(self.value):
            return False
        return self.value >= self.bound if self.at_least else self.value <= self.bound

    def figure(self) -> str:
        if self.unit == "x":
            return f"{self.value:.2f}×"
        if self.unit == "s":
            return f"{self.value:.3f} s"
        return f"{self.value:.2f} {self.unit}"

    def goal(self) -> str:
        sign = "≥" if self.at_least else "≤"
        return f"{sign} {self.bound:g}{'×' if self.unit == 'x' else ' ' + self.unit}"


def _row(result: CompressingResult, scenario: str) -> CompressingRow | None:
    """The realistic ``FilesystemBackend`` row of ``scenario`` at the longest history."""
    rows = [
        r
        for r in result.rows
        if r.history == "realistic" and r.backend == "FilesystemBackend" and r.scenario == scenario
    ]
    return max(rows, key=lambda r: r.messages) if rows else None


def _ratio(value: float | None) -> float:
    return float("nan") if value is None else value


def compressing_targets(
    compressing: CompressingResult | None, overhead: OverheadResult | None
) -> list[Target]:
    """Section 1's targets: the realistic history on a ``FilesystemBackend`` on disk against
    LangChain's ``SummarizationMiddleware`` in the same run."""
    out: list[Target] = []
    if compressing is not None:
        l1_only, l2 = (_row(compressing, name) for name, _ratio_t2 in ROUNDS)
        if l2 is not None:
            where = f"while compressing, realistic {l2.messages:,} messages, default T, L2 ratio 0.4"
            out += [
                Target("all calls while compressing, median", _ratio(l2.ratio("all")), "x", 2, True, where),
                Target("all calls while compressing, whole run", l2.total_ratio, "x", 2, True, where),
                Target(
                    "L2 rounds, median, summarizer step excluded",
                    _ratio(l2.ratio("L2", "summary")),
                    "x",
                    1,
                    True,
                    where,
                ),
            ]
        if l1_only is not None:
            out.append(
                Target(
                    "L1-only rounds, median (against LangChain's median call)",
                    _ratio(l1_only.ratio("L1")),
                    "x",
                    2,
                    True,
                    f"while compressing, realistic {l1_only.messages:,} messages, default T, L2 ratio 1.0",
                )
            )
        if compressing.langchain_peak_mb > 0:
            out.append(
                Target(
                    "peak memory, ctxlab / LangChain",
                    compressing.ars_peak_mb / compressing.langchain_peak_mb,
                    "x",
                    2,
                    False,
                    f"realistic {compressing.memory_messages:,} messages, tracemalloc",
                )
            )
        for reload in compressing.reloads:
            if reload.case.startswith("while compressing"):
                out.append(
                    Target(
                        "first call after a reload, fresh instance",
                        reload.fresh_ratio,
                        "x",
                        1,
                        True,
                        f"checkpoint reload, realistic {reload.messages:,} messages",
                    )
                )
    if overhead is not None:
        realistic = [r for r in overhead.rows if r.history.startswith("realistic")]
        if realistic:
            r = realistic[0]
            out.append(
                Target(
                    "below T, whole run",
                    r.langchain.total_s / r.ars.total_s if r.ars.total_s else float("nan"),
                    "x",
                    20,
                    True,
                    f"below the trigger, {r.history}",
                )
            )
    return out


def estimator_targets(estimators: EstimatorResult | None) -> list[Target]:
    """Section 2's target: the estimator's plugin-hook path within 2× of the bare function."""
    if estimators is None or math.isnan(estimators.hook_speedup):
        return []
    return [
        Target(
            "estimator, plugin-hook path / bare function (time per message)",
            estimators.bare_speedup / estimators.hook_speedup,
            "x",
            2,
            False,
            f"{estimators.short_texts:,} tool results of 100 characters",
        )
    ]


def replay_targets(replay: ReplayThroughput | None) -> list[Target]:
    """Section 3's targets: the shared corpus replayed with ``ars`` and with five strategies, in
    tiktoken passes of CPU time."""
    if replay is None or not replay.tiktoken_cpu_seconds:
        return []
    out = []
    ars = next((r for r in replay.rows if r.strategy == "ars"), None)
    where = f"{replay.transcripts} transcripts, {replay.chars:,} characters"
    if ars is not None:
        out.append(
            Target("replay, ars", ars.cpu_seconds / replay.tiktoken_cpu_seconds, "passes", 1.5, False, where)
        )
    if replay.five_calls:
        out.append(
            Target(
                "replay, five strategies together",
                replay.five_cpu_seconds / replay.tiktoken_cpu_seconds,
                "passes",
                4,
                False,
                where,
            )
        )
    return out


def startup_targets(startup: StartupResult | None) -> list[Target]:
    """Section 4's target: ``ctxlab --help`` within 0.1 s of CPU."""
    if startup is None or math.isnan(startup.help_cpu_seconds):
        return []
    return [
        Target("ctxlab --help, CPU", startup.help_cpu_seconds, "s", 0.1, False, "fresh interpreter, best run")
    ]


def render_targets(targets: list[Target]) -> list[str]:
    """A Markdown table of ``targets`` (empty when none was measured)."""
    if not targets:
        return []
    out = ["| target (issue 31) | measured | target | met | measured on |", "|---|---:|---:|---|---|"]
    out += [
        f"| {t.measure} | **{t.figure()}** | {t.goal()} | {'yes' if t.met else 'no'} | {t.source} |"
        for t in targets
    ]
    return [*out, ""]


def log_targets(targets: list[Target], log: Callable[[str], None] = print) -> None:
    """Print ``targets`` one a line."""
    for t in targets:
        log(f"  {t.measure}: {t.figure()} (target {t.goal()}: {'met' if t.met else 'not met'})")
