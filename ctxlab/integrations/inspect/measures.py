"""ctxlab's per-call measures of an Inspect log, and the log annotated with them.

For every sample of an Inspect eval log, each ``ModelEvent`` is one model call; its request (the
input messages, the tool schemas) is measured as a replay measures a view: tokens by ctxlab's
measure (:class:`ctxlab.core.estimation.CharClassEstimator`, R16), the request's segments
(:func:`ctxlab.replay.cost.view_segments`) priced in order under the price row's prompt caching
(:func:`ctxlab.replay.cost.price_run`: cache reads and writes, US dollars).  A call of another
model than the eval's (the summarizer of a compaction) is priced as a ``summarizer`` call.

:func:`annotate_log` writes the result into the log itself, where ``inspect view`` shows it:
each sample's ``metadata["ctxlab"]`` (the per-call rows, the sample's totals and the
``context_compression`` events the strategy wrote) and the eval's ``metadata["ctxlab"]`` (the
strategy, the measure, the price row).  :func:`sample_rows` gives the per-sample rows
``ctxlab eval`` reads back into its frame.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.event import InfoEvent, ModelEvent
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import ChatMessageSystem
from inspect_ai.scorer import value_to_float

from ctxlab.core.estimation import CharClassEstimator, EstimateCache
from ctxlab.integrations.inspect.convert import to_langchain
from ctxlab.replay.cost import CallTokens, price_run, view_segments
from ctxlab.replay.metrics import RequestView
from ctxlab.replay.prices import PriceRow

__all__ = ["MEASURE", "annotate_log", "call_rows", "sample_rows"]

#: the name of the measure the tokens are counted with
MEASURE = "char-class"
_TO_FLOAT = value_to_float()


def _measure() -> EstimateCache:
    est = CharClassEstimator()
    return EstimateCache(est.message_tokens, est.tools_tokens, name=est.name)


def _request(event: ModelEvent) -> RequestView:
    system = next((m for m in event.input if isinstance(m, ChatMessageSystem)), None)
    rest = [m for m in event.input if not isinstance(m, ChatMessageSystem)]
    tools = [
        {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters.model_dump(exclude_none=True),
        }
        for t in event.tools
    ]
    sys_lc = to_langchain([system])[0] if system is not None else None
    return RequestView(system=sys_lc, tools=tools, messages=to_langchain(rest))


def call_rows(
    sample: EvalSample, model: str, price: PriceRow, measure: EstimateCache | None = None
) -> list[dict[str, Any]]:
    """One row per model call of ``sample``: ``call``, ``model``, ``kind`` (``main``: the eval's
    ``model``; ``summarizer``: any other), ``messages``, ``tokens`` (the request, ctxlab's
    measure), ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``cost_usd``,
    ``uncached_usd`` (under ``price``)."""
    measure = measure or _measure()
    events = [e for e in sample.events if isinstance(e, ModelEvent)]
    calls: list[CallTokens] = []
    rows: list[dict[str, Any]] = []
    for i, e in enumerate(events):
        view = _request(e)
        segments = view_segments(view, measure)
        tokens = sum(n for _, n in segments)
        out_msg = e.output.choices[0].message if e.output.choices else None
        out_tokens = measure.message_tokens(to_langchain([out_msg])[0]) if out_msg is not None else 0
        kind = "main" if e.model == model else "summarizer"
        calls.append(CallTokens(input_tokens=tokens, output_tokens=out_tokens, segments=segments, kind=kind))
        rows.append(
            {
                "call": i,
                "model": e.model,
                "kind": kind,
                "messages": len(e.input),
                "tokens": tokens,
                "output_tokens": out_tokens,
            }
        )
    for row, cost in zip(rows, price_run(calls, price), strict=True):
        row.update(
            cache_read_tokens=cost.cache_read_tokens,
            cache_write_tokens=cost.cache_write_tokens,
            cost_usd=cost.total_usd,
            uncached_usd=cost.uncached_usd,
        )
    return rows


def _events(sample: EvalSample) -> list[Any]:
    return [e.data for e in sample.events if isinstance(e, InfoEvent) and e.source == "ctxlab"]


def _success(sample: EvalSample) -> float:
    if sample.error is not None or not sample.scores:
        return 0.0
    score = next(iter(sample.scores.values()))
    return float(_TO_FLOAT(score.value))


def annotate_log(log: EvalLog, strategy: str, price: PriceRow) -> EvalLog:
    """Write ctxlab's measures into ``log`` (module doc) and return it; ``write_eval_log`` saves it.

    Raises:
        ValueError: the log has no samples (read it with ``header_only=False``).
    """
    if log.samples is None:
        raise ValueError(f"{log.location}: the log has no samples")
    measure = _measure()
    model = log.eval.model
    for sample in log.samples:
        rows = call_rows(sample, model, price, measure)
        main = [r for r in rows if r["kind"] == "main"]
        sample.metadata["ctxlab"] = {
            "strategy": strategy,
            "success": _success(sample),
            "calls": len(main),
            "summarizer_calls": len(rows) - len(main),
            "tokens": sum(r["tokens"] for r in rows),
            "max_request_tokens": max((r["tokens"] for r in main), default=0),
            "cost_usd": round(sum(r["cost_usd"] for r in rows), 6),
            "uncached_usd": round(sum(r["uncached_usd"] for r in rows), 6),
            "compression_events": _events(sample),
            "per_call": rows,
        }
    log.eval.metadata = {
        **(log.eval.metadata or {}),
        "ctxlab": {
            "strategy": strategy,
            "measure": MEASURE,
            "price_row": price.key,
            "prices_as_of": price.as_of,
        },
    }
    return log


def sample_rows(log: EvalLog, data_provenance: str) -> list[dict[str, Any]]:
    """One row per sample and epoch of an annotated log: ``transcript`` (``<id>#<epoch>``, the
    pairing key), ``strategy``, ``data_provenance``, ``success`` (the first score as a number: 1
    correct, 0 incorrect or errored), ``error``, ``calls``, ``tokens``, ``cost_usd``."""
    out: list[dict[str, Any]] = []
    for sample in log.samples or []:
        m = sample.metadata.get("ctxlab") or {}
        out.append(
            {
                "transcript": f"{sample.id}#{sample.epoch}",
                "strategy": m.get("strategy"),
                "data_provenance": data_provenance,
                "success": _success(sample),
                "error": sample.error.message if sample.error is not None else None,
                "calls": m.get("calls", 0),
                "tokens": m.get("tokens", 0),
                "cost_usd": m.get("cost_usd", 0.0),
            }
        )
    return out
