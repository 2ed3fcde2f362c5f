"""The ``stall`` measure of a replay (issue 34): how long each call waited on compression in
simulated time (:mod:`ctxlab.replay.latency`), and what the summaries prepared in the background
(:mod:`ctxlab.core.prepare`) did: started, used, wasted (with their summarizer calls, tokens and
dollars).  Its columns are in :mod:`ctxlab.replay.columns.stall`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.events import EVENT_TYPE
from ctxlab.replay.columns import StallColumns
from ctxlab.replay.observer import CallObservation
from ctxlab.replay.share import TranscriptShare

if TYPE_CHECKING:
    from ctxlab.core.preparations import Preparations
    from ctxlab.replay.latency import SimTime
    from ctxlab.replay.prices import PriceRow

__all__ = ["StallMeasure"]

_WASTE_KEYS = ("calls", "input_tokens", "output_tokens")


class StallMeasure:
    """The ``stall`` columns of each call.

    Per call: the prepared summaries started (``prepared`` events with ``status="started"``),
    used (the L2 round's ``stats["prepared"]``) and discarded (with their cost); with a latency
    model (``sim.timed``) the stall: the clock's move during the call (waits for prepared
    summaries) plus one latency draw per summarizer call made inside the call (none for a
    committed prepared summary: its calls ran in the background).  Then the clock moves by the
    call's agent step.  When the run ends, the preparation left open on the run's thread is
    discarded and counted on the last call.

    Args:
        sim: the run's simulated time (``None``: no clock; the stall stays empty).
        preparations: the middleware's prepared summaries (``None``: a foreign middleware).
        key: the run's thread id (the preparations' key).
        price: the price row of ``prepared_wasted_usd`` (``None``: empty).
        estimate: tokens of an answer (the agent step of an answer without recorded usage).
        share: what the runs of the transcript share (:mod:`ctxlab.replay.share`): the agent
            step without a step latency depends on the answer only (``None``: not shared).
    """

    names: tuple[str, ...] = ("stall",)

    def __init__(
        self,
        sim: SimTime | None,
        preparations: Preparations | None,
        key: str,
        price: PriceRow | None,
        estimate: Callable[[BaseMessage], int],
        share: TranscriptShare | None = None,
    ) -> None:
        self.sim, self.preparations, self.key, self.price = sim, preparations, key, price
        self.estimate = estimate
        self.share = share
        self.call_start = sim.clock.now if sim is not None else 0.0
        self.last_row: dict[str, Any] | None = None

    def _usd(self, tokens_in: int, tokens_out: int) -> float | None:
        if self.price is None:
            return None
        return (tokens_in * self.price.input + tokens_out * self.price.output) / 1_000_000

    def measure(self, obs: CallObservation, row: dict[str, Any]) -> StallColumns:
        prepared = [
            (e.get("stats") or {}).get("prepared") or {}
            for e in obs.call.events
            if isinstance(e, dict) and e.get("type") == EVENT_TYPE and e.get("phase") == "prepared"
        ]
        discarded = [p for p in prepared if p.get("status") == "discarded"]
        waste = (
            {k: sum(int((p.get("wasted") or {}).get(k) or 0) for p in discarded) for k in _WASTE_KEYS}
            if discarded
            else dict.fromkeys(_WASTE_KEYS, 0)
        )
        used = (obs.stats.get("prepared") or {}).get("status") == "used"
        stall: float | None = None
        if self.sim is not None:
            waited = self.sim.clock.now - self.call_start  # waits for prepared summaries
            inside = 0 if used else int(obs.summarizer.get("calls") or 0)
            summarizing = self.sim.summarizer_seconds(inside)
            self.sim.clock.now += summarizing + self._step_seconds(obs)
            self.call_start = self.sim.clock.now
            self.sim.at_call(obs.call_index + 1)
            stall = waited + summarizing if self.sim.timed else None
        self.last_row = row
        return {
            "stall_s": stall,
            "prepared_started": sum(1 for p in prepared if p.get("status") == "started"),
            "prepared_used": used,
            "prepared_wasted": len(discarded),
            "prepared_wasted_calls": waste["calls"],
            "prepared_wasted_input_tokens": waste["input_tokens"],
            "prepared_wasted_output_tokens": waste["output_tokens"],
            "prepared_wasted_usd": self._usd(waste["input_tokens"], waste["output_tokens"]),
        }

    def _answer_tokens(self, answer: AIMessage) -> int:
        return self.estimate(answer)

    def _step_seconds(self, obs: CallObservation) -> float:
        """The agent step of the call: drawn from the step latency when there is one, else a
        function of the recorded answer only, computed once per transcript call (``share``)."""
        sim = self.sim
        assert sim is not None
        if sim.step is not None or self.share is None:
            return sim.step_seconds(obs.answer, self._answer_tokens)
        return self.share.call_value(
            "step_seconds", obs.call_index, lambda: sim.step_seconds(obs.answer, self._answer_tokens)
        )

    def finish(self, messages: Sequence[BaseMessage]) -> None:
        """Discard the run's open preparation (never used: the transcript ended) on the last row."""
        row = self.last_row
        if self.preparations is None or row is None:
            return
        for waste in self.preparations.drain(self.key, "the run ended before it was used"):
            spent: Mapping[str, int] = waste or {}
            row["prepared_wasted"] += 1
            for key in _WASTE_KEYS:
                row[f"prepared_wasted_{key}"] += int(spent.get(key) or 0)
            row["prepared_wasted_usd"] = self._usd(
                row["prepared_wasted_input_tokens"], row["prepared_wasted_output_tokens"]
            )
