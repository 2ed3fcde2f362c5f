"""Section 1 of ``ctxlab bench``: the per-call cost of the middleware against LangChain's, below
the trigger (steady state; while compressing: :mod:`~ctxlab.cli.bench.compressing`).

:class:`~ctxlab.CompressionMiddleware` (the model answers at once) against LangChain's
``SummarizationMiddleware``, driven as ``create_agent`` drives them and timed in CPU time of the
measuring thread (:mod:`~ctxlab.cli.bench.contenders`), over long histories built from the real
transcripts and synthetic histories; the whole-run cost is fitted against the history length
(``time ∝ N^k``).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxlab.cli.bench.contenders import (
    call_positions,
    fake_summarizer,
    langchain_step,
    run_ars,
    timed_middleware,
)
from ctxlab.cli.bench.timing import fit_exponent

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, SystemMessage

    #: (system message, state messages) of one history
    History = tuple[SystemMessage | None, list[BaseMessage]]

__all__ = [
    "CallCost",
    "OverheadResult",
    "OverheadRow",
    "bench_overhead",
    "drive_ars",
    "drive_langchain",
    "real_histories",
    "synthetic_history",
]


_WORDS = [
    "the",
    "build",
    "step",
    "compiles",
    "each",
    "module",
    "and",
    "the",
    "test",
    "run",
    "checks",
    "every",
    "case",
    "against",
    "the",
    "expected",
    "output",
    "then",
    "the",
    "report",
    "lists",
    "failures",
    "with",
    "their",
    "file",
    "and",
    "line",
    "so",
    "the",
    "next",
    "change",
    "can",
    "fix",
    "them",
]


def synthetic_history(n: int, seed: int = 0) -> History:
    """(system message, ``n`` messages) of a deterministic agent run: a user task, then
    assistant turns with one ``bash`` call each and its result (100–3,000 characters of log or
    code lines), a user follow-up every 40 messages.  Every message has an id, as LangGraph's
    ``add_messages`` gives them."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    rng = random.Random(seed)
    system = SystemMessage(content="You are a coding agent. Use the bash tool. " * 20, id="sys")
    msgs: list[BaseMessage] = [
        HumanMessage(content="Fix the failing tests in the parser module. " * 5, id="m0")
    ]
    step = 0
    while len(msgs) < n:
        i = len(msgs)
        if i % 40 == 0:
            msgs.append(
                HumanMessage(
                    content=f"Please also check case {i}: " + " ".join(rng.choices(_WORDS, k=30)), id=f"m{i}"
                )
            )
            continue
        last = msgs[-1]
        if isinstance(last, AIMessage):
            cid = last.tool_calls[0]["id"] or ""
            lines = []
            for j in range(rng.randint(2, 60)):
                if rng.random() < 0.5:
                    lines.append(
                        f"tests/test_parser.py::test_case_{step}_{j} {'PASSED' if rng.random() < 0.8 else 'FAILED'}"
                    )
                else:
                    lines.append(f"    {' '.join(rng.choices(_WORDS, k=rng.randint(3, 9)))}({j}, x={step})")
            msgs.append(ToolMessage(content="\n".join(lines), tool_call_id=cid, name="bash", id=f"m{i}"))
            continue
        step += 1
        thought = " ".join(rng.choices(_WORDS, k=rng.randint(10, 40)))
        msgs.append(
            AIMessage(
                content=thought,
                id=f"m{i}",
                tool_calls=[
                    {
                        "name": "bash",
                        "args": {"command": f"pytest tests/test_parser.py -k case_{step} -q"},
                        "id": f"call-{step}",
                        "type": "tool_call",
                    }
                ],
            )
        )
    return system, msgs[:n]


def real_histories(transcripts_dir: Path, limit: int | None = None) -> dict[str, History]:
    """Long histories from the real transcripts: the 200 τ-bench runs concatenated, and the
    mini-swe-agent runs concatenated (system messages dropped after the first; ids kept unique).
    ``limit`` cuts each to its first ``limit`` messages."""
    from langchain_core.messages import SystemMessage

    from ctxlab.transcripts import load_many

    raw = transcripts_dir / "raw" if (transcripts_dir / "raw").is_dir() else transcripts_dir
    out: dict[str, History] = {}
    for label, sub in (
        ("τ-bench runs concatenated", "tau-bench"),
        ("mini-swe-agent runs concatenated", "mini-swe-agent"),
    ):
        folder = raw / sub
        if not folder.is_dir():
            continue
        transcripts, _ = load_many([folder])
        system: SystemMessage | None = None
        msgs: list[BaseMessage] = []
        for t in transcripts:
            for k, m in enumerate(t.messages):
                if isinstance(m, SystemMessage):
                    system = system or m
                    continue
                msgs.append(m if m.id is not None else m.model_copy(update={"id": f"{t.run_id}-{k}"}))
        if limit is not None:
            msgs = msgs[:limit]
        if msgs:
            out[f"{label} ({len(msgs):,} messages)"] = (system, msgs)
    return out


def drive_ars(
    system: SystemMessage | None,
    messages: Sequence[BaseMessage],
    plugins: Callable[[], Sequence[object]] = list,
    repeat: int = 1,
    tools: Sequence[Any] = (),
) -> list[float]:
    """Per-call CPU seconds (``time.thread_time``) inside ``CompressionMiddleware.wrap_model_call``
    at every model call of ``messages`` (the model answers at once with the history's own next
    assistant message, its time excluded), below the entry threshold (steady state).

    The whole run is repeated ``repeat`` times with a fresh middleware (its estimate cache makes
    a call depend on the previous ones) and each call keeps its best time.  ``plugins()`` makes
    the middleware's extra plugins (for instance another estimator); ``tools``: the tool schemas
    of every request.

    Raises:
        ValueError: a message has no id or shares one (the state is built with ``add_messages``,
            which would merge them).
    """
    from ctxlab.core.settings import CompressionSettings

    ids = {m.id for m in messages}
    if None in ids or len(ids) != len(messages):
        raise ValueError("drive_ars needs messages with unique ids")
    best: list[float] = []
    settings = CompressionSettings(summary_threshold=1e9)
    for _ in range(repeat):
        calls, _harness = run_ars(
            system,
            messages,
            lambda: timed_middleware(settings=settings, backend=_NoBackend(), plugins=list(plugins())),
            tools=tools,
        )
        times = [c.seconds for c in calls]
        best = [min(a, b) for a, b in zip(best, times, strict=True)] if best else times
    return best


def drive_langchain(
    system: SystemMessage | None, messages: Sequence[BaseMessage], max_calls: int, repeat: int = 1
) -> tuple[list[float], int]:
    """Per-call CPU seconds of LangChain's ``SummarizationMiddleware`` driven as ``create_agent``
    drives it (``before_model(state, runtime)``, then the model call, which it does not wrap; the
    model answers at once), with a trigger it never reaches.  Its ``before_model`` keeps no state
    between calls, so at most ``max_calls`` evenly spaced calls are timed, each the best of
    ``repeat`` runs of the same state; returns (times, stride).  ``system`` is not a state
    message (``create_agent`` passes it beside the state), so LangChain never counts it."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.runtime import Runtime

    mw = SummarizationMiddleware(model=fake_summarizer(), trigger=("tokens", 10**12))
    runtime: Runtime[Any] = Runtime(context=None, store=None, stream_writer=lambda _e: None)
    positions = call_positions(messages)
    stride = max(1, math.ceil(len(positions) / max_calls))
    times = []
    for k in positions[stride - 1 :: stride]:
        state: dict[str, Any] = {"messages": list(messages[:k])}
        times.append(min(langchain_step(mw, state, runtime).seconds for _ in range(repeat)))
    return times, stride


class _NoBackend:
    """A backend that refuses writes (below the threshold nothing is ever written)."""

    def write(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called below T
        raise RuntimeError("the overhead benchmark writes no files")


@dataclass
class CallCost:
    """One contender over one history: mean per-call milliseconds over the run (``ms``) and over
    its last tenth of calls (``tail_ms``: the cost at N messages), whole-run seconds (CPU)."""

    ms: float
    tail_ms: float
    total_s: float


@dataclass
class OverheadRow:
    """One history: ctxlab, LangChain (every ``langchain_stride``-th call timed; its whole run
    extrapolated) and, when installed, ctxlab with the fast estimator plugin (``fast``)."""

    history: str
    messages: int
    calls: int
    ars: CallCost
    langchain: CallCost
    langchain_stride: int
    fast: CallCost | None = None

    @property
    def ratio(self) -> float:
        return self.langchain.ms / self.ars.ms if self.ars.ms else float("inf")

    @property
    def tail_ratio(self) -> float:
        return self.langchain.tail_ms / self.ars.tail_ms if self.ars.tail_ms else float("inf")


@dataclass
class OverheadResult:
    """Section 1 below the trigger: the rows and the growth fits (while compressing:
    :mod:`~ctxlab.cli.bench.compressing`)."""

    rows: list[OverheadRow] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    ars_exponent: float = float("nan")
    langchain_exponent: float = float("nan")
    fast_exponent: float = float("nan")


def _ms(times: Sequence[float]) -> float:
    return 1000 * statistics.fmean(times) if times else 0.0


def _tail(times: Sequence[float]) -> Sequence[float]:
    return times[-max(1, len(times) // 10) :]


def _cost(times: Sequence[float], stride: int = 1) -> CallCost:
    return CallCost(ms=_ms(times), tail_ms=_ms(_tail(times)), total_s=sum(times) * stride)


def bench_overhead(transcripts_dir: Path, quick: bool, log: Callable[[str], None] = print) -> OverheadResult:
    """Section 1: per-call overhead and whole-run growth (see module docstring)."""
    from ctxlab.cli.bench.plugged import strategy_plugins

    fast_plugins: Callable[[], Sequence[object]] | None = strategy_plugins("ars-fast")
    result = OverheadResult()
    sizes = [250, 500, 1000] if quick else [1000, 2000, 4000, 8000]
    max_calls = 30 if quick else 120
    from ctxlab.cli.bench.realistic import realistic_history

    realistic = 2000 if quick else 8000
    system0, msgs0, tools0 = realistic_history(realistic)
    histories: dict[str, tuple[SystemMessage | None, list[BaseMessage], list[Any]]] = {
        f"realistic coding agent, 6 tool schemas ({realistic:,} messages)": (system0, msgs0, tools0)
    }
    histories.update(
        (k, (sy, m, [])) for k, (sy, m) in real_histories(transcripts_dir, 1000 if quick else None).items()
    )
    for n in sizes:
        histories[f"synthetic {n:,} messages"] = (*synthetic_history(n), [])
    fast_totals: list[float] = []
    repeat = 2 if quick else 3
    for name, (system, msgs, tools) in histories.items():
        ars = drive_ars(system, msgs, repeat=repeat, tools=tools)
        fast = (
            drive_ars(system, msgs, fast_plugins, repeat=repeat, tools=tools)
            if fast_plugins is not None
            else []
        )
        lc, stride = drive_langchain(system, msgs, max_calls, repeat=2)
        row = OverheadRow(
            history=name,
            messages=len(msgs),
            calls=len(ars),
            ars=_cost(ars),
            langchain=_cost(lc, stride),
            langchain_stride=stride,
            fast=_cost(fast) if fast else None,
        )
        if name.startswith("synthetic"):
            fast_totals.append(sum(fast))
        result.rows.append(row)
        log(
            f"  {name}: ctxlab {row.ars.ms:.3f} ms/call, LangChain {row.langchain.ms:.3f} ms/call "
            f"({row.ratio:.1f}x; last tenth {row.tail_ratio:.1f}x)"
        )
    synth = [r for r in result.rows if r.history.startswith("synthetic")]
    result.sizes = [r.messages for r in synth]
    if len(synth) >= 2:
        result.ars_exponent = fit_exponent(result.sizes, [r.ars.total_s for r in synth])
        result.langchain_exponent = fit_exponent(result.sizes, [r.langchain.total_s for r in synth])
        if all(fast_totals):
            result.fast_exponent = fit_exponent(result.sizes, fast_totals)
    return result
