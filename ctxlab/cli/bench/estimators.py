"""Section 2 of ``ctxlab bench``: token estimators against tiktoken ``cl100k_base``.

Error per content class (:data:`~ctxlab.cli.bench.samples.CLASSES`, samples from
:func:`~ctxlab.cli.bench.samples.collect_samples`) for the core default, the fast estimator
plugin, a flat 4 characters per token and LangChain's ``count_tokens_approximately``; speed as a
ratio to tiktoken on the same texts.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxlab.cli.bench.samples import CLASSES, collect_samples
from ctxlab.cli.bench.timing import cl100k_encoding, interleaved_best

__all__ = ["EstimatorResult", "EstimatorRow", "bench_estimators"]


@dataclass
class EstimatorRow:
    estimator: str
    errors: dict[str, tuple[float, float]]  # class -> (aggregate error, mean |per-sample error|)
    speedup: float  # tiktoken time / this estimator's time, all samples
    class_speedup: dict[str, float] = field(default_factory=dict)


@dataclass
class EstimatorResult:
    rows: list[EstimatorRow] = field(default_factory=list)
    counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # class -> (samples, chars, tokens)


def _estimators() -> dict[str, Callable[[str], int]]:
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from ctxlab.core.estimation import estimate_text_tokens

    out: dict[str, Callable[[str], int]] = {"core default (ctxlab.core.estimation)": estimate_text_tokens}
    try:
        from ctxlab_fast_estimator import fast_text_tokens

        out["fast estimator (ctxlab-fast-estimator)"] = fast_text_tokens
    except ImportError:
        pass
    out["flat 4 chars/token"] = lambda text: max(1, round(len(text) / 4)) if text else 0
    empty = count_tokens_approximately([HumanMessage(content="")], extra_tokens_per_message=0)

    def langchain(text: str, _empty: int = empty) -> int:
        return count_tokens_approximately([HumanMessage(content=text)], extra_tokens_per_message=0) - _empty

    out["LangChain count_tokens_approximately"] = langchain
    return out


def _over(fn: Callable[[str], Any], texts: Sequence[str]) -> Callable[[], list[Any]]:
    """A contender: ``fn`` over every text."""
    return lambda: [fn(t) for t in texts]


def bench_estimators(
    transcripts_dir: Path, quick: bool, log: Callable[[str], None] = print
) -> EstimatorResult:
    """Section 2: error per content class against cl100k_base and speed relative to tiktoken."""
    enc = cl100k_encoding()
    samples = collect_samples(transcripts_dir, per_class_chars=100_000 if quick else 400_000)
    truth = [len(enc.encode_ordinary(s.text)) for s in samples]
    result = EstimatorResult()
    by_class: dict[str, list[int]] = {c: [i for i, s in enumerate(samples) if s.cls == c] for c in CLASSES}
    for c, idx in by_class.items():
        result.counts[c] = (len(idx), sum(len(samples[i].text) for i in idx), sum(truth[i] for i in idx))
    estimators = _estimators()
    texts = [s.text for s in samples]
    repeat = 3 if quick else 7
    contenders: dict[str, Callable[[], Any]] = {"tiktoken": _over(enc.encode_ordinary, texts)}
    for name, fn in estimators.items():
        contenders[name] = _over(fn, texts)
    times = interleaved_best(contenders, repeat)
    fast_name = next((n for n in estimators if n.startswith("fast")), None)
    class_speed: dict[str, float] = {}
    if fast_name is not None:
        fast = estimators[fast_name]
        for c, idx in by_class.items():
            group = [texts[i] for i in idx]
            t = interleaved_best(
                {"tiktoken": _over(enc.encode_ordinary, group), "fast": _over(fast, group)}, repeat
            )
            class_speed[c] = t["tiktoken"] / t["fast"] if t["fast"] else float("inf")
    for name, fn in estimators.items():
        est = [fn(t) for t in texts]
        errors = {}
        for c, idx in by_class.items():
            if not idx:
                continue
            agg = sum(est[i] for i in idx) / sum(truth[i] for i in idx) - 1
            mae = statistics.fmean(abs(est[i] - truth[i]) / truth[i] for i in idx if truth[i])
            errors[c] = (agg, mae)
        row = EstimatorRow(
            name,
            errors,
            times["tiktoken"] / times[name] if times[name] else float("inf"),
            class_speed if name == fast_name else {},
        )
        result.rows.append(row)
        log(
            f"  {name}: "
            + ", ".join(f"{c} {e[0]:+.1%}" for c, e in errors.items())
            + f"; {row.speedup:.1f}x tiktoken"
        )
    return result
