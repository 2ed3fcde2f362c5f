"""Section 1 of ``ctxlab bench``, part two: the middlewares WHILE COMPRESSING (issue 12, target 1).

The same synthetic agent runs (:func:`~ctxlab.cli.bench.overhead.synthetic_history`) are driven
through ctxlab's ``CompressionMiddleware`` and LangChain's ``SummarizationMiddleware``
(:mod:`~ctxlab.cli.bench.contenders`, CPU time of the measuring thread), with a trigger both
reach.  T is matched in tokens: ctxlab's entry threshold ``summary_threshold × 1024`` is
LangChain's ``trigger=("tokens", T)``, each counted with its own default estimator; LangChain
keeps as many messages as ctxlab (``keep=("messages", summary_keep_messages)``); both summarize
with the same fake chat model.  Every run is repeated in shuffled order of the contenders and
each call keeps its best time.  Measured:

* per-call CPU time by kind of call (ctxlab: below T, L1-only round, L2 round; LangChain: no
  summary, summary) and whole-run CPU time, at the default T, the default T with
  ``summary_l2_trigger_ratio=1`` (many L1-only rounds) and a small T;
* growth: whole-run time at several history lengths, fitted as ``N^k``;
* peak memory of a whole run (``tracemalloc``, the history built beforehand);
* the first model call after a checkpoint reload and the genuine next one (the state through
  LangGraph's checkpoint serde, ``JsonPlusSerializer``: new message objects with the same
  content), ctxlab with the run's middleware instance (same process) and with a fresh one, below
  T and while compressing; and a fresh process's very first call (cold).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxlab.cli.bench.contenders import (
    RunCall,
    fake_summarizer,
    langchain_step,
    make_backend,
    run_ars,
    run_langchain,
    timed_middleware,
    writer_cpu,
)
from ctxlab.cli.bench.overhead import synthetic_history
from ctxlab.cli.bench.timing import fit_exponent

__all__ = ["CompressingResult", "CompressingRow", "ReloadRow", "bench_compressing"]


@dataclass
class CompressingRow:
    """One scenario: medians of per-call CPU milliseconds by kind (``{kind: (calls, ms)}``) and
    whole-run CPU seconds of each contender."""

    scenario: str
    messages: int
    threshold_tokens: int
    ars: dict[str, tuple[int, float]]
    langchain: dict[str, tuple[int, float]]
    ars_total_s: float
    langchain_total_s: float
    #: ctxlab's file backend (:data:`~ctxlab.cli.bench.contenders.BACKENDS`)
    backend: str = "in memory"
    #: the history (:data:`HISTORIES`)
    history: str = "synthetic"
    #: CPU seconds of ctxlab's write-behind thread over the run (not in ``ars_total_s``)
    writer_s: float = 0.0
    #: CPU seconds of the summarizer steps, left out of both contenders' times
    ars_summarizer_s: float = 0.0
    langchain_summarizer_s: float = 0.0

    def ratio(self, ars_kind: str, lc_kind: str = "all") -> float | None:
        """LangChain's median for ``lc_kind`` over ctxlab's for ``ars_kind`` (``None``: a kind
        that did not occur)."""
        a, b = self.ars.get(ars_kind), self.langchain.get(lc_kind)
        if a is None or b is None or a[1] <= 0:
            return None
        return b[1] / a[1]

    @property
    def total_ratio(self) -> float:
        return self.langchain_total_s / self.ars_total_s if self.ars_total_s else float("inf")


@dataclass
class ReloadRow:
    """A run stopped at history length ``messages``, its checkpointed state reloaded through
    LangGraph's checkpoint serde (new message objects, same content), then two model calls:
    the ``first`` on the reloaded state and the genuine ``next`` one (the first call's answer
    and the transcript's next messages appended, as the run goes on).  CPU milliseconds of the
    middleware, medians over ``reloads`` reloads, each from a run of its own.

    ``ars_*``: the run's own ``CompressionMiddleware`` instance with the caches of its run (a
    reload in the same process); ``ars_fresh_*``: a new instance built for the reload (what a
    new process pays, imports apart).  ``langchain_*``: ``SummarizationMiddleware``, which keeps
    nothing between calls (the run's instance; a new one would be the same).
    """

    case: str
    messages: int
    reloads: int
    ars_first_ms: float
    ars_next_ms: float
    ars_fresh_first_ms: float
    ars_fresh_next_ms: float
    langchain_first_ms: float
    langchain_next_ms: float

    @property
    def ratio(self) -> float:
        """LangChain's first call over ctxlab's (same process); the target is ≥ 5 (issue 12)."""
        return self.langchain_first_ms / self.ars_first_ms if self.ars_first_ms else float("inf")

    @property
    def fresh_ratio(self) -> float:
        """LangChain's first call over a fresh ctxlab middleware's first call."""
        return self.langchain_first_ms / self.ars_fresh_first_ms if self.ars_fresh_first_ms else float("inf")


@dataclass
class CompressingResult:
    rows: list[CompressingRow] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    ars_exponent: float = float("nan")
    langchain_exponent: float = float("nan")
    ars_peak_mb: float = float("nan")
    langchain_peak_mb: float = float("nan")
    memory_messages: int = 0
    reloads: list[ReloadRow] = field(default_factory=list)
    #: whole-run growth per real backend and kind of round: (backend, scenario, ctxlab k, LangChain k)
    growth: list[tuple[str, str, float, float]] = field(default_factory=list)
    cold_ars_ms: float = float("nan")
    cold_langchain_ms: float = float("nan")


def _settings(summary_threshold: float, ratio: float) -> Any:
    from ctxlab.core.settings import CompressionSettings

    return CompressionSettings(summary_threshold=summary_threshold, summary_l2_trigger_ratio=ratio)


#: the histories of section 1: name -> (system, messages, tool schemas) of ``n`` messages
HISTORIES = ("realistic", "synthetic")


def history_of(kind: str, n: int) -> tuple[Any, list[Any], list[Any]]:
    """(system message, ``n`` messages, tool schemas) of the ``kind`` history (:data:`HISTORIES`):
    the realistic coding-agent run (:func:`~ctxlab.cli.bench.realistic.realistic_history`, six
    tool schemas) or the synthetic one (:func:`~ctxlab.cli.bench.overhead.synthetic_history`, no
    schemas)."""
    if kind == "realistic":
        from ctxlab.cli.bench.realistic import realistic_history

        return realistic_history(n)
    if kind == "synthetic":
        system, msgs = synthetic_history(n)
        return system, msgs, []
    raise ValueError(f"history must be one of {', '.join(HISTORIES)}, not {kind!r}")


def _ars_maker(settings: Any, backend: str = "in memory") -> Callable[[], Any]:
    """A maker of fresh timed middlewares, each with a fresh ``backend``
    (:func:`~ctxlab.cli.bench.contenders.make_backend`; a ``FilesystemBackend`` in a new empty
    folder under the system's temporary directory, on disk)."""
    model = fake_summarizer()

    def make() -> Any:
        folder = tempfile.mkdtemp(prefix="ctxlab-bench-files-")
        _FOLDERS.append(folder)
        return timed_middleware(settings=settings, backend=make_backend(backend, folder), summarizer=model)

    return make


#: the folders the FilesystemBackend runs wrote to (removed at the end of :func:`bench_compressing`)
_FOLDERS: list[str] = []


def _best(runs: list[list[RunCall]]) -> list[RunCall]:
    """Each call's best time over the runs (the runs are deterministic: the same kinds)."""
    return [
        RunCall(min(c.seconds for c in calls), calls[0].level, min(c.summarizer_seconds for c in calls))
        for calls in zip(*runs, strict=True)
    ]


def _medians(calls: Sequence[RunCall]) -> dict[str, tuple[int, float]]:
    out = {"all": (len(calls), 1000 * statistics.median(c.seconds for c in calls))}
    for kind in sorted({c.level for c in calls}):
        times = [c.seconds for c in calls if c.level == kind]
        out[kind] = (len(times), 1000 * statistics.median(times))
    return out


def _scenario(
    name: str,
    n: int,
    threshold: float,
    ratio: float,
    rounds: int,
    seed: int,
    backend: str = "in memory",
    history: str = "synthetic",
) -> CompressingRow:
    system, msgs, tools = history_of(history, n)
    settings = _settings(threshold, ratio)
    make = _ars_maker(settings, backend)
    t = settings.entry_threshold_tokens
    ars_runs: list[list[RunCall]] = []
    lc_runs: list[list[RunCall]] = []
    writer: list[float] = []
    order = [0, 1]
    rng = random.Random(seed)
    for _ in range(rounds):
        rng.shuffle(order)
        for who in order:
            if who == 0:
                calls, harness = run_ars(system, msgs, make, tools=tools)
                ars_runs.append(calls)
                writer.append(writer_cpu(harness.middleware))
                harness.middleware._own_files.queue.shutdown()
            else:
                lc_runs.append(run_langchain(msgs, t, settings.summary_keep_messages)[0])
    ars, lc = _best(ars_runs), _best(lc_runs)
    return CompressingRow(
        scenario=name,
        messages=n,
        threshold_tokens=t,
        ars=_medians(ars),
        langchain=_medians(lc),
        ars_total_s=sum(c.seconds for c in ars),
        langchain_total_s=sum(c.seconds for c in lc),
        backend=backend,
        history=history,
        writer_s=min(writer),
        ars_summarizer_s=min(sum(c.summarizer_seconds for c in run) for run in ars_runs),
        langchain_summarizer_s=min(sum(c.summarizer_seconds for c in run) for run in lc_runs),
    )


def _peak_mb(run: Callable[[], Any]) -> float:
    """Peak traced memory of ``run()`` above what was traced before it (MB)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        kept = run()
        peak = tracemalloc.get_traced_memory()[1]
        del kept
    finally:
        tracemalloc.stop()
    return (peak - base) / 1e6


def _reloaded(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` through LangGraph's checkpoint serializer (``JsonPlusSerializer``
    ``dumps_typed``/``loads_typed``, as a checkpointer stores and loads a thread's channel
    values): new objects, the same content."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    out: dict[str, Any] = serde.loads_typed(serde.dumps_typed(state))
    return out


def _ars_pair(harness: Any, msgs: Sequence[Any], first: int, nxt: int) -> tuple[float, float]:
    """CPU seconds of ``harness``'s middleware on the call answered by ``msgs[first]`` (the
    messages before it already added), then on the next call (``msgs[nxt]``), the first
    answer and the messages between appended as the run would."""
    mw = harness.middleware
    harness.call(msgs[first])
    one = float(mw.last_cpu)
    harness.add(*msgs[first + 1 : nxt])
    harness.call(msgs[nxt])
    return one, float(mw.last_cpu)


def _reload(case: str, n: int, threshold: float, reloads: int) -> ReloadRow:
    """Reloads after a run of ``n`` synthetic messages: each contender runs to the call before
    the last but one, its state is round-tripped through the checkpoint serde, the messages
    that came since are added (the new invocation's input), and the last two model calls are
    timed (:class:`ReloadRow`).  ctxlab runs anew for every reload, so that no reload sees the
    caches of another; LangChain keeps no state, so one run serves all reloads."""
    from langgraph.runtime import Runtime

    from ctxlab.cli.bench.contenders import call_positions
    from ctxlab.replay.harness import ModelNodeHarness, apply_update

    system, msgs, tools = history_of("realistic", n)
    settings = _settings(threshold, 0.4)
    positions = call_positions(msgs)
    first, nxt, stop = positions[-2], positions[-1], positions[-3]
    runtime: Runtime[Any] = Runtime(context=None, store=None, stream_writer=lambda _e: None)
    _lc_calls, lc_mw, lc_state = run_langchain(msgs, settings.entry_threshold_tokens, 10, upto=stop + 1)
    end = stop + 1
    warm: list[tuple[float, float]] = []
    fresh: list[tuple[float, float]] = []
    lc: list[tuple[float, float]] = []
    for _ in range(reloads):
        make = _ars_maker(settings, "FilesystemBackend")
        _calls, harness = run_ars(system, msgs, make, upto=stop + 1, tools=tools)
        checkpoint = harness.state
        harness.state = _reloaded(checkpoint)
        harness.add(*msgs[end:first])
        warm.append(_ars_pair(harness, msgs, first, nxt))
        fresh_mw = timed_middleware(
            settings=settings, backend=harness.middleware._backend, summarizer=fake_summarizer()
        )
        new = ModelNodeHarness(fresh_mw, system_message=system, tools=tools, record=False)
        new.state = _reloaded(checkpoint)
        new.add(*msgs[end:first])
        fresh.append(_ars_pair(new, msgs, first, nxt))
        state = _reloaded(lc_state)
        apply_update(state, {"messages": list(msgs[end:first])})
        one = langchain_step(lc_mw, state, runtime).seconds
        apply_update(state, {"messages": list(msgs[first:nxt])})
        lc.append((one, langchain_step(lc_mw, state, runtime).seconds))

    def ms(pairs: list[tuple[float, float]], i: int) -> float:
        return 1000 * statistics.median(p[i] for p in pairs)

    return ReloadRow(
        case=case,
        messages=first,
        reloads=reloads,
        ars_first_ms=ms(warm, 0),
        ars_next_ms=ms(warm, 1),
        ars_fresh_first_ms=ms(fresh, 0),
        ars_fresh_next_ms=ms(fresh, 1),
        langchain_first_ms=ms(lc, 0),
        langchain_next_ms=ms(lc, 1),
    )


_COLD = """
import json, sys, tempfile, time
from ctxlab.cli.bench.compressing import history_of
from ctxlab.cli.bench.contenders import make_backend, fake_summarizer, langchain_step, timed_middleware, call_positions
from ctxlab.replay.harness import ModelNodeHarness, apply_update
n = int(sys.argv[2])
system, msgs, tools = history_of("realistic", n)
k = call_positions(msgs)[-1]
if sys.argv[1] == "ars":
    folder = tempfile.mkdtemp(prefix="ctxlab-bench-files-")
    mw = timed_middleware(backend=make_backend("FilesystemBackend", folder), summarizer=fake_summarizer())
    h = ModelNodeHarness(mw, system_message=system, tools=tools, messages=msgs[:k], record=False)
    h.call(msgs[k])
    print(json.dumps(mw.last_cpu))
    import shutil
    shutil.rmtree(folder, ignore_errors=True)
else:
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.runtime import Runtime
    mw = SummarizationMiddleware(model=fake_summarizer(), trigger=("tokens", 102400), keep=("messages", 10))
    state = {"messages": []}
    apply_update(state, {"messages": list(msgs[:k])})
    print(json.dumps(langchain_step(mw, state, Runtime(context=None, store=None, stream_writer=print)).seconds))
"""


def _cold(who: str, n: int, runs: int) -> float:
    """Median CPU ms of a fresh process's first call (``who``: ``"ars"`` or ``"langchain"``)."""
    out = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _COLD, who, str(n)], capture_output=True, text=True, check=True
        )
        out.append(1000 * float(json.loads(done.stdout.strip().splitlines()[-1])))
    return statistics.median(out)


def bench_compressing(quick: bool, log: Callable[[str], None] = print) -> CompressingResult:
    """Section 1, while compressing (see the module docstring): the real backends first
    (:data:`~ctxlab.cli.bench.contenders.BACKENDS`), each at 2,000 and 8,000 messages with L1-only
    and with L2 rounds, then the in-memory backend as an extra row, and a small T."""
    try:
        return _bench_compressing(quick, log)
    finally:
        for folder in _FOLDERS:
            shutil.rmtree(folder, ignore_errors=True)
        _FOLDERS.clear()


#: the two kinds of rounds at the default T: (scenario, L2 trigger ratio)
ROUNDS = (("default T, L1-only rounds (L2 ratio 1.0)", 1.0), ("default T, L2 rounds (L2 ratio 0.4)", 0.4))


def _plan(quick: bool) -> list[tuple[str, str, int, float, float, str]]:
    """The rows of the section: (history, scenario, messages, summary_threshold, L2 ratio,
    backend), the realistic history on the README's ``FilesystemBackend`` first (issue 31: the
    setup a user runs), then the synthetic history of issue 20."""
    n = 2000 if quick else 8000
    sizes = [500, 2000] if quick else [2000, 8000]
    small = 4 if quick else 8
    l1_only, l2 = ROUNDS
    plan = [("realistic", l2[0], size, 100.0, l2[1], "FilesystemBackend") for size in sizes]
    plan.append(("realistic", l1_only[0], n, 100.0, l1_only[1], "FilesystemBackend"))
    plan.append(("realistic", l2[0], n, 100.0, l2[1], "StateBackend"))
    plan += [
        ("synthetic", name, size, 100.0, ratio, "FilesystemBackend")
        for name, ratio in ROUNDS
        for size in sizes
    ]
    plan.append(("synthetic", f"small T ({small}K), L2 ratio 0.4", n, float(small), 0.4, "in memory"))
    return plan


def _bench_compressing(quick: bool, log: Callable[[str], None]) -> CompressingResult:
    result = CompressingResult()
    n = 2000 if quick else 8000
    rounds = 1 if quick else 3
    for i, (history, name, size, threshold, ratio, backend) in enumerate(_plan(quick)):
        row = _scenario(name, size, threshold, ratio, rounds, seed=i, backend=backend, history=history)
        result.rows.append(row)
        log(
            f"  {history}, {backend}, {name}, {size:,} messages: ctxlab {row.ars_total_s:.2f} s "
            f"(+ writer thread {row.writer_s:.2f} s), LangChain {row.langchain_total_s:.2f} s CPU "
            f"({row.total_ratio:.1f}x); medians ctxlab "
            + ", ".join(f"{k} {v[1]:.3f} ms" for k, v in row.ars.items())
            + "; LangChain "
            + ", ".join(f"{k} {v[1]:.3f} ms" for k, v in row.langchain.items())
        )
    result.sizes = sorted({r.messages for r in result.rows if r.scenario == ROUNDS[1][0]})
    for history in HISTORIES:
        for name, _ratio in ROUNDS:
            runs = [
                r
                for r in result.rows
                if r.history == history and r.backend == "FilesystemBackend" and r.scenario == name
            ]
            if len({r.messages for r in runs}) < 2:
                continue
            k = fit_exponent([r.messages for r in runs], [r.ars_total_s for r in runs])
            lk = fit_exponent([r.messages for r in runs], [r.langchain_total_s for r in runs])
            result.growth.append((f"{history}, FilesystemBackend", name, k, lk))
            log(f"  {history}, {name}: whole run ~ N^k, ctxlab k={k:.2f}, LangChain k={lk:.2f}")
    first = [g for g in result.growth if g[1] == ROUNDS[1][0]]
    result.ars_exponent = first[0][2] if first else float("nan")
    result.langchain_exponent = first[0][3] if first else float("nan")
    system, msgs, tools = history_of("realistic", n)
    settings = _settings(100.0, 0.4)
    result.memory_messages = n
    result.ars_peak_mb = _peak_mb(
        lambda: run_ars(system, msgs, _ars_maker(settings, "FilesystemBackend"), tools=tools)
    )
    result.langchain_peak_mb = _peak_mb(lambda: run_langchain(msgs, settings.entry_threshold_tokens, 10))
    log(f"  peak memory: ctxlab +{result.ars_peak_mb:.1f} MB, LangChain +{result.langchain_peak_mb:.1f} MB")
    reloads = 3 if quick else 5
    result.reloads = [
        _reload("below T (T never reached)", n, 1e6, reloads),
        _reload("while compressing (default T)", n, 100.0, reloads),
    ]
    for r in result.reloads:
        log(
            f"  reload {r.case}: first call ctxlab {r.ars_first_ms:.2f} ms (fresh instance "
            f"{r.ars_fresh_first_ms:.2f} ms), LangChain {r.langchain_first_ms:.2f} ms ({r.ratio:.1f}x, fresh "
            f"{r.fresh_ratio:.1f}x); next call ctxlab {r.ars_next_ms:.3f} ms, LangChain {r.langchain_next_ms:.3f} ms"
        )
    result.cold_ars_ms = _cold("ars", n, 2 if quick else 3)
    result.cold_langchain_ms = _cold("langchain", n, 2 if quick else 3)
    log(f"  cold first call: ctxlab {result.cold_ars_ms:.1f} ms, LangChain {result.cold_langchain_ms:.1f} ms")
    return result
