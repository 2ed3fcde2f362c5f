"""Section 6 of ``ctxlab bench``: the **stall** of a summary round in a live agent (issue 34).

A real ``langchain.agents.create_agent`` loop with a checkpointer (``InMemorySaver``), driven
with ``invoke`` (sync) and ``ainvoke`` (async).  The agent's model is a fake that takes
:data:`STEP_SECONDS` per answer (a real model takes seconds) and calls a tool whose result adds
about 280 tokens per step; the summarizer is a fake that takes :data:`SUMMARIZER_SECONDS` per
call (sleeping, as a remote model waits).  Three contenders over the same loop:

* **ctxlab prepared**: ``CompressionMiddleware`` with ``summary_prepare_ratio`` (the summary is
  made in the background before T and committed at T);
* **ctxlab synchronous**: the same without it (the summary is made inside the call at T);
* **LangChain**: ``SummarizationMiddleware`` (``before_model``), with the same T in tokens and
  the same number of kept messages.

The **stall** of a model call is the wall time the middleware's hook took, minus its own CPU
time (``time.thread_time``) and minus the model handler's wall time: the time the agent stood
still waiting on compression.  Reported per summary round (ctxlab: the calls that committed an
L2 summary; LangChain: the ``before_model`` calls that summarized): p50, p99, the share under
50 ms and the p99 as a share of the synchronous ctxlab p99 of the same mode, measured in the
same process.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STEP_SECONDS", "SUMMARIZER_SECONDS", "StallResult", "StallRow", "bench_stall", "render_stall"]

#: one answer of the agent's model (seconds)
STEP_SECONDS = 0.35
#: one call of the slow fake summarizer (seconds; the issue's 2 s)
SUMMARIZER_SECONDS = 2.0
#: T = 8 × 1024 tokens, T2 = 0.5 T, 4 messages kept, preparation from 0.7 T
SETTINGS = {
    "summary_threshold": 8,
    "summary_keep_messages": 4,
    "summary_l2_trigger_ratio": 0.5,
}
PREPARE_RATIO = 0.7
#: a call under this is not a stall (seconds)
NO_STALL = 0.05
CONTENDERS = ("ctxlab prepared", "ctxlab synchronous", "LangChain SummarizationMiddleware")


@dataclass
class StallRow:
    """One contender in one mode: the stall of each summary round (seconds) and the run."""

    contender: str
    mode: str
    stalls: list[float] = field(default_factory=list)
    calls: int = 0
    wall_s: float = 0.0

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile of the stalls (nearest rank above; ``None``: no round)."""
        if not self.stalls:
            return None
        ordered = sorted(self.stalls)
        return ordered[min(len(ordered) - 1, max(0, int(-(-q * len(ordered) // 1)) - 1))]

    @property
    def no_stall_share(self) -> float | None:
        return sum(s < NO_STALL for s in self.stalls) / len(self.stalls) if self.stalls else None


@dataclass
class StallResult:
    """Every contender × mode, and what the loop was."""

    rows: list[StallRow]
    steps: int
    step_s: float = STEP_SECONDS
    summarizer_s: float = SUMMARIZER_SECONDS


def _models(summarizer_s: float, step_s: float, steps: int) -> tuple[Any, Any, Any]:
    """(the agent's model, the slow summarizer, the tool) of one run."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    class StepModel(BaseChatModel):
        n: int = 0

        @property
        def _llm_type(self) -> str:
            return "bench-step"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _reply(self) -> ChatResult:
            self.n += 1
            if self.n >= steps:
                return ChatResult(generations=[ChatGeneration(message=AIMessage("all items checked"))])
            call = {"name": "inspect", "args": {"item": self.n}, "id": f"call-{self.n}", "type": "tool_call"}
            msg = AIMessage(f"checking item {self.n}", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=msg)])

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            time.sleep(step_s)
            return self._reply()

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            await asyncio.sleep(step_s)
            return self._reply()

    class SlowSummarizer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "bench-slow-summarizer"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _summary(self) -> ChatResult:
            text = "Summary: items were inspected one by one; each record lists owner, size and date."
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            time.sleep(summarizer_s)
            return self._summary()

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            await asyncio.sleep(summarizer_s)
            return self._summary()

    @tool
    def inspect(item: int) -> str:
        """Inspect an item and return its record."""
        return (
            f"item {item}: " + "the record lists the owner, the size and the date of the last change. " * 14
        )

    return StepModel(), SlowSummarizer(), inspect


class _Files:
    """History files in memory, for sync and async agents (``write``, ``awrite``)."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def write(self, path: str, content: str) -> Any:
        from types import SimpleNamespace

        self.files[path] = content
        return SimpleNamespace(error=None, path=path, files_update=None)

    async def awrite(self, path: str, content: str) -> Any:
        return self.write(path, content)


def _timed_ctxlab(mw: Any, row: StallRow) -> None:
    """Time ``mw``'s hooks on the instance (``create_agent`` binds them when it builds the graph)."""
    sync_hook, async_hook = mw.wrap_model_call, mw.awrap_model_call

    def committed(result: Any) -> bool:
        update = getattr(getattr(result, "command", None), "update", None)
        return isinstance(update, dict) and "_summarization_event" in update

    def wrap(request: Any, handler: Callable[[Any], Any]) -> Any:
        inner = 0.0

        def timed(req: Any) -> Any:
            nonlocal inner
            t = time.perf_counter()
            try:
                return handler(req)
            finally:
                inner += time.perf_counter() - t

        t0, c0 = time.perf_counter(), time.thread_time()
        result = sync_hook(request, timed)
        stall = time.perf_counter() - t0 - inner - (time.thread_time() - c0)
        row.calls += 1
        if committed(result):
            row.stalls.append(max(0.0, stall))
        return result

    async def awrap(request: Any, handler: Callable[[Any], Any]) -> Any:
        inner = 0.0

        async def timed(req: Any) -> Any:
            nonlocal inner
            t = time.perf_counter()
            try:
                return await handler(req)
            finally:
                inner += time.perf_counter() - t

        t0, c0 = time.perf_counter(), time.thread_time()
        result = await async_hook(request, timed)
        stall = time.perf_counter() - t0 - inner - (time.thread_time() - c0)
        row.calls += 1
        if committed(result):
            row.stalls.append(max(0.0, stall))
        return result

    mw.wrap_model_call, mw.awrap_model_call = wrap, awrap


def _timed_langchain(mw: Any, row: StallRow) -> None:
    """Time LangChain's ``before_model`` (where it summarizes) on the instance."""
    sync_hook, async_hook = mw.before_model, mw.abefore_model

    def before(state: Any, runtime: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        result = sync_hook(state, runtime)
        row.calls += 1
        if result is not None:
            row.stalls.append(max(0.0, time.perf_counter() - t0 - (time.thread_time() - c0)))
        return result

    async def abefore(state: Any, runtime: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        result = await async_hook(state, runtime)
        row.calls += 1
        if result is not None:
            row.stalls.append(max(0.0, time.perf_counter() - t0 - (time.thread_time() - c0)))
        return result

    mw.before_model, mw.abefore_model = before, abefore


def run_live(contender: str, mode: str, steps: int, step_s: float, summarizer_s: float) -> StallRow:
    """One live ``create_agent`` run of ``steps`` model calls; its :class:`StallRow`."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from ctxlab.core.middleware import CompressionMiddleware
    from ctxlab.core.settings import CompressionSettings

    model, summarizer, tool = _models(summarizer_s, step_s, steps)
    row = StallRow(contender, mode)
    settings = CompressionSettings(**SETTINGS)  # type: ignore[arg-type]
    mw: Any
    if contender.startswith("LangChain"):
        tokens = int(settings.entry_threshold_tokens)
        # trim_tokens_to_summarize=None: its default trim keeps the last 4,000 tokens starting on
        # a user message, which in this one-request loop is none, and then calls no model at all
        mw = SummarizationMiddleware(
            model=summarizer,
            trigger=("tokens", tokens),
            keep=("messages", settings.summary_keep_messages),
            trim_tokens_to_summarize=None,
        )
        _timed_langchain(mw, row)
    else:
        if contender == "ctxlab prepared":
            settings = settings.replace(summary_prepare_ratio=PREPARE_RATIO)
        mw = CompressionMiddleware(
            settings=settings, backend=_Files(), summarizer=summarizer, read_tool=False
        )
        _timed_ctxlab(mw, row)
    agent: Any = create_agent(model=model, tools=[tool], middleware=[mw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"{contender}-{mode}"}, "recursion_limit": 4 * steps + 10}
    request = {"messages": [HumanMessage("inspect every item, one call each")]}
    t0 = time.perf_counter()
    if mode == "sync":
        agent.invoke(request, config)
    else:
        asyncio.run(agent.ainvoke(request, config))
    row.wall_s = time.perf_counter() - t0
    return row


def bench_stall(quick: bool, log: Callable[[str], None] = print) -> StallResult:
    """Every contender in both modes (:data:`CONTENDERS`); ``quick``: a shorter loop with every
    duration a quarter (a 0.5 s summarizer)."""
    steps, scale = (50, 0.25) if quick else (160, 1.0)
    step_s, summarizer_s = STEP_SECONDS * scale, SUMMARIZER_SECONDS * scale
    rows: list[StallRow] = []
    for mode in ("sync", "async"):
        for contender in CONTENDERS:
            row = run_live(contender, mode, steps, step_s, summarizer_s)
            p50, p99 = row.quantile(0.5), row.quantile(0.99)
            log(
                f"  {mode:5} {contender:34} {len(row.stalls):3} summary rounds, stall p50 "
                f"{_s(p50)}, p99 {_s(p99)}, wall {row.wall_s:.0f} s"
            )
            rows.append(row)
    return StallResult(rows, steps, step_s, summarizer_s)


def _s(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def render_stall(result: StallResult | None) -> str:
    """The Markdown of section 6 (empty when it did not run)."""
    if result is None:
        return ""
    t = SETTINGS["summary_threshold"] * 1024
    out = [
        "",
        "## 6. Stall of a summary round in a live agent",
        "",
        f"`create_agent` with `InMemorySaver`, {result.steps} model calls per run; the agent's model "
        f"answers in {result.step_s:g} s, its tool adds ~280 tokens per step; the summarizer takes "
        f"{result.summarizer_s:g} s per call. T = {t:,} tokens, T2 = 0.5 T, 4 messages kept; ctxlab "
        f'prepared: `summary_prepare_ratio={PREPARE_RATIO}`; LangChain: `trigger=("tokens", {t})`, '
        '`keep=("messages", 4)`, `trim_tokens_to_summarize=None` (its default trim keeps a window '
        "that starts on a user message: in this one-request loop there is none, and it would call no "
        "model). Stall = the hook's wall time minus its own "
        "CPU and the model's time (`ctxlab.cli.bench.stall`), per summary round. p99 vs sync: the p99 as a "
        "share of ctxlab synchronous p99 in the same mode and run.",
        "",
        "| mode | contender | summary rounds | stall p50 | stall p99 | rounds < 50 ms | p99 vs sync | run wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in ("sync", "async"):
        rows = [r for r in result.rows if r.mode == mode]
        sync = next((r.quantile(0.99) for r in rows if r.contender == "ctxlab synchronous"), None)
        for r in rows:
            p99 = r.quantile(0.99)
            share = r.no_stall_share
            ratio = f"{p99 / sync:.1%}" if p99 is not None and sync else "–"
            median = statistics.median(r.stalls) if r.stalls else None
            out.append(
                f"| {mode} | {r.contender} | {len(r.stalls)} | {_s(median)} | {_s(p99)} | "
                f"{'–' if share is None else f'{share:.0%}'} | {ratio} | {r.wall_s:.0f} |"
            )
    return "\n".join(out)
