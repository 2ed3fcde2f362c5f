"""Simulated time in a replay: how long a summarizer call and an agent step take, and the clock
the middleware's prepared summaries run on (issue 34).

A replay never sleeps.  Each run has a :class:`SimTime`: a clock (seconds from the run's start),
the summarizer's latency (:class:`Latency`, ``--summarizer-latency``), the time one agent step
takes (the main model's answer, ``--call-latency``; by default ``1 s + output tokens / 50`` per
second, tools taking no time), and a seeded random source (one per transcript, so that the
strategies of a transcript draw the same sequence).  A ctxlab middleware's background work runs
on :class:`SimulatedRunner`: it is computed at once, and it is *done* when the clock reaches its
start plus one latency draw per summarizer call it made; a round waiting for it moves the clock.

The stall of a call (:class:`~ctxlab.replay.stall.StallMeasure`) is the simulated time it spent
waiting on compression: the waits for prepared summaries plus one latency draw per summarizer
call made inside the call.  The middleware's own CPU is not part of it (it is ``overhead_ms``).
"""

from __future__ import annotations

import math
import random
import re
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage

from ctxlab.core.preparations import waste_of

__all__ = [
    "OUTPUT_TOKENS_PER_SECOND",
    "STEP_BASE_SECONDS",
    "Latency",
    "SimClock",
    "SimPending",
    "SimTime",
    "SimulatedRunner",
    "parse_seconds",
]

#: the default agent step: a fixed part (request, first token) ...
STEP_BASE_SECONDS = 1.0
#: ... plus the recorded answer's output tokens at this rate (tokens per second)
OUTPUT_TOKENS_PER_SECOND = 50.0

_SECONDS = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s)?\s*$")


def parse_seconds(text: str, what: str = "latency") -> float:
    """``"2s"`` → 2.0, ``"500ms"`` → 0.5, ``"1.5"`` → 1.5 (seconds).

    Raises:
        ValueError: not a finite non-negative duration (the message names ``what``).
    """
    match = _SECONDS.match(str(text))
    value = float(match.group(1)) / (1000.0 if match.group(2) == "ms" else 1.0) if match else math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"{what}={text!r} is invalid: allowed a duration such as 2s, 500ms or 1.5 (seconds, >= 0)"
        )
    return value


@dataclass(frozen=True)
class Latency:
    """A distribution of durations (seconds).

    Attributes:
        kind: ``"fixed"`` (always ``a``), ``"uniform"`` (between ``a`` and ``b``) or
            ``"lognormal"`` (median ``a``, shape ``b``: the standard deviation of the log).
        a, b: its parameters (seconds; ``b`` of a log-normal is unitless).
    """

    kind: Literal["fixed", "uniform", "lognormal"]
    a: float
    b: float = 0.0

    @classmethod
    def optional(cls, spec: str | float | Latency | None, what: str) -> Latency | None:
        """:meth:`parse`, with ``None`` (no latency model) kept as ``None``."""
        return None if spec is None else cls.parse(spec, what)

    def provenance(self, call: Latency | None) -> dict[str, str]:
        """What a run's provenance records of its simulated time: this (the summarizer's) latency
        and the agent step's ``call`` (``None``: ``"auto"``)."""
        return {"summarizer": self.describe(), "agent_step": call.describe() if call is not None else "auto"}

    @classmethod
    def parse(cls, spec: str | float | Latency, what: str = "--summarizer-latency") -> Latency:
        """``"2s"`` (fixed), ``"uniform:1s,3s"``, ``"lognormal:2s,0.5"`` (median, sigma), or a
        number of seconds.

        Raises:
            ValueError: an unknown form or a bad duration (the message names ``what``).
        """
        if isinstance(spec, Latency):
            return spec
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            return cls("fixed", parse_seconds(str(spec), what))
        text = str(spec).strip()
        kind, _, rest = text.partition(":")
        if not rest:
            return cls("fixed", parse_seconds(text, what))
        parts = [p.strip() for p in rest.split(",")]
        if kind == "uniform" and len(parts) == 2:
            low, high = parse_seconds(parts[0], what), parse_seconds(parts[1], what)
            if high < low:
                raise ValueError(f"{what}={text!r} is invalid: uniform:LOW,HIGH needs LOW <= HIGH")
            return cls("uniform", low, high)
        if kind == "lognormal" and len(parts) == 2:
            sigma = float(parts[1]) if re.fullmatch(r"[0-9]*\.?[0-9]+", parts[1]) else math.nan
            if not math.isfinite(sigma):
                raise ValueError(
                    f"{what}={text!r} is invalid: lognormal:MEDIAN,SIGMA needs a number SIGMA >= 0"
                )
            return cls("lognormal", parse_seconds(parts[0], what), sigma)
        raise ValueError(
            f"{what}={text!r} is invalid: allowed a duration (2s, 500ms), uniform:LOW,HIGH or lognormal:MEDIAN,SIGMA"
        )

    def sample(self, rng: random.Random) -> float:
        """One duration (seconds)."""
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        if self.kind == "lognormal":
            return self.a * math.exp(rng.gauss(0.0, self.b)) if self.a > 0 else 0.0
        return self.a

    def describe(self) -> str:
        """The form :meth:`parse` reads."""
        if self.kind == "uniform":
            return f"uniform:{self.a:g}s,{self.b:g}s"
        if self.kind == "lognormal":
            return f"lognormal:{self.a:g}s,{self.b:g}"
        return f"{self.a:g}s"


class SimClock:
    """Seconds of simulated time since the run started."""

    def __init__(self) -> None:
        self.now = 0.0


class SimPending:
    """Background work on simulated time (:class:`ctxlab.core.background.Pending`): its outcome is
    computed; it is done when the clock reaches ``ready_at``."""

    def __init__(self, clock: SimClock, started_at: float, ready_at: float, value: Any) -> None:
        self.clock, self.started_at, self.ready_at, self.value = clock, started_at, ready_at, value

    def done(self) -> bool:
        return self.clock.now >= self.ready_at

    def outcome(self) -> Any:
        return self.value

    def wait(self, timeout: float) -> None:
        """Move the clock to ``ready_at``, or by ``timeout`` when that comes first."""
        self.clock.now = min(max(self.clock.now, self.ready_at), self.clock.now + max(0.0, timeout))

    async def await_(self, timeout: float) -> None:
        self.wait(timeout)

    def on_finish(self, callback: Callable[[Any], None]) -> None:
        callback(self.value)


class SimulatedRunner:
    """:class:`ctxlab.core.background.PrepareRunner` on a :class:`SimClock`: the work runs at once
    (the replay is sequential and deterministic); its result is ready after one ``draw`` (the next
    summarizer call's duration, seconds) per summarizer call it made."""

    def __init__(self, clock: SimClock, draw: Callable[[], float]) -> None:
        self.clock, self._draw = clock, draw

    def now(self) -> float:
        return self.clock.now

    def start(self, work: Callable[[], Any]) -> SimPending:
        started = self.clock.now
        try:
            value = work()
        except Exception as exc:  # the outcome of failed work, as a thread's future holds it
            value = exc
        seconds = sum(self._draw() for _ in range(waste_of(value)["calls"]))
        return SimPending(self.clock, started, started + seconds, value)

    def start_async(self, work: Callable[[], Awaitable[Any]]) -> SimPending:
        raise TypeError("the replay drives the sync path; SimulatedRunner has no async agents")


class SimTime:
    """One run's simulated time (see the module docstring).

    Args:
        summarizer: the latency of one summarizer call; ``None``: no latency model (the stall
            columns stay empty; prepared summaries are ready at the next call).
        step: the duration of one agent step; ``None``: :data:`STEP_BASE_SECONDS` plus the
            answer's output tokens at :data:`OUTPUT_TOKENS_PER_SECOND`.
        seed: the run's random source (a transcript label).  Common random numbers: a draw is
            keyed by the label, what it times (a summarizer call inside a model call, one in the
            background, an agent step), the transcript call it belongs to and its order within
            that call (:func:`zlib.crc32` of them), so the same summarizer call at the same call
            takes the same time in every strategy of the transcript: a paired stall comparison
            compares strategies, not draws.  :meth:`at_call` says which call is under way.
    """

    def __init__(self, summarizer: Latency | None, step: Latency | None = None, seed: str = "") -> None:
        self.timed = summarizer is not None
        self.summarizer = summarizer if summarizer is not None else Latency("fixed", 0.0)
        self.step = step
        self.clock = SimClock()
        self._seed = seed
        self.call = 0
        self._drawn: dict[tuple[str, int], int] = {}
        self.runner = SimulatedRunner(self.clock, lambda: self.summarizer.sample(self._source("background")))

    def at_call(self, call_index: int) -> None:
        """The transcript call now under way (the key of the draws that follow)."""
        self.call = call_index

    def _source(self, kind: str) -> random.Random:
        """The random source of the next draw of ``kind`` (``"summarizer"``, ``"background"`` or
        ``"step"``) in the call under way."""
        n = self._drawn.get((kind, self.call), 0)
        self._drawn[(kind, self.call)] = n + 1
        return random.Random(zlib.crc32(f"{self._seed}\0{kind}\0{self.call}\0{n}".encode()))

    def summarizer_seconds(self, calls: int) -> float:
        """The duration of ``calls`` summarizer calls made one after another (seconds)."""
        return sum(self.summarizer.sample(self._source("summarizer")) for _ in range(max(0, calls)))

    def step_seconds(self, answer: AIMessage, estimate: Callable[[AIMessage], int]) -> float:
        """How long the agent step that produced ``answer`` took (the main model's answer)."""
        if self.step is not None:
            return self.step.sample(self._source("step"))
        usage = answer.usage_metadata
        out = usage.get("output_tokens") if usage else None
        tokens = out if isinstance(out, int) and out >= 0 else estimate(answer)
        return STEP_BASE_SECONDS + tokens / OUTPUT_TOKENS_PER_SECOND
