"""``ctxlab eval``'s engine: one Inspect task under several strategies, read back into ctxlab's frames.

:func:`run_eval` runs the task once per strategy with Inspect's own ``eval()`` (its parallel
samples, its model providers, its logs), the same samples, the same ``seed`` and ``epochs`` each
time; the strategy reaches the task as the task argument ``strategy`` (a task written for
``ctxlab eval`` takes it and passes :func:`~ctxlab.integrations.inspect.compaction.compaction_strategy`'s
answer to its agent, as the shipped :func:`~ctxlab.integrations.inspect.task.context_recall`
does).  Each log is then annotated with ctxlab's per-call measures
(:func:`~ctxlab.integrations.inspect.measures.annotate_log`) and written back, so that ``inspect
view`` shows them, and its samples become rows of one frame (:func:`sample_rows`), from which
:mod:`ctxlab.analysis.success` draws the success table, the paired comparisons and the executive
summary; :func:`write_eval_report` writes ``report.md``, ``samples.csv`` and
``figures/success.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log, write_eval_log

from ctxlab.analysis.success import (
    paired_markdown,
    paired_success,
    success_markdown,
    success_summary,
    success_table,
)
from ctxlab.integrations.inspect.measures import MEASURE, annotate_log, sample_rows
from ctxlab.replay.prices import DEFAULT_PRICE_MODEL, PriceRow, load_prices

__all__ = ["EvalResult", "run_eval", "write_eval_report"]

#: the shipped offline task (``ctxlab eval`` without TASK)
OFFLINE_TASK = "ctxlab/context_recall"


@dataclass
class EvalResult:
    """What :func:`run_eval` produced.

    Attributes:
        frame: one row per sample, epoch and strategy (:func:`...measures.sample_rows`).
        logs: the annotated Inspect log of each strategy (its path).
        failed: strategies whose eval did not finish (``status`` other than ``success``), with
            the error; their samples are in ``frame`` as failures when they have any.
        task, model, epochs, seed, price: how it ran.
    """

    frame: pl.DataFrame
    logs: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    task: str = OFFLINE_TASK
    model: str = ""
    epochs: int = 1
    seed: int = 0
    price: PriceRow | None = None


def _task(task: str | None, strategy: str, args: dict[str, Any]) -> Any:
    if task in (None, OFFLINE_TASK):
        from ctxlab.integrations.inspect.task import context_recall

        return context_recall(strategy=strategy, **args)
    return task


def run_eval(
    strategies: Sequence[str],
    *,
    model: str,
    out: Path,
    task: str | None = None,
    task_args: dict[str, Any] | None = None,
    epochs: int = 1,
    seed: int = 0,
    price: PriceRow | None = None,
    max_samples: int | None = None,
    limit: int | None = None,
) -> EvalResult:
    """Run ``task`` (``None``: the offline task) under each strategy; see the module doc.

    Args:
        strategies: strategy names (``none`` or registered ones), each once.
        model: the Inspect model (``ctxlab/reader`` offline, ``anthropic/claude-sonnet-4-5``, ...).
        out: the output folder (logs go to ``out/logs``).
        task: an Inspect task reference (``file.py@name``, a registered name) or ``None``.
        task_args: more task arguments (``strategy`` is set per run).
        epochs, seed: Inspect's epochs and the generation seed, the same for every strategy.
        price: the price row dollars are counted with (default: the cost columns' default row).
        max_samples, limit: Inspect's ``max_samples`` (parallel samples) and ``limit``.

    Raises:
        ValueError: a strategy named twice, or none.
    """
    if not strategies:
        raise ValueError("no strategy to evaluate")
    twice = sorted({s for s in strategies if list(strategies).count(s) > 1})
    if twice:
        raise ValueError(f"strategy {twice[0]!r} is named twice")
    price = price or load_prices().get(DEFAULT_PRICE_MODEL)
    provenance = "scripted" if model.startswith("ctxlab/") else "real"
    args = dict(task_args or {})
    result = EvalResult(
        pl.DataFrame(), task=task or OFFLINE_TASK, model=model, epochs=epochs, seed=seed, price=price
    )
    rows: list[dict[str, Any]] = []
    for name in strategies:
        (log,) = inspect_eval(
            _task(task, name, args),
            task_args={**args, "strategy": name} if task not in (None, OFFLINE_TASK) else {},
            model=model,
            epochs=epochs,
            seed=seed,
            log_dir=str(out / "logs"),
            display="none",
            fail_on_error=False,
            max_samples=max_samples,
            limit=limit,
            score_display=False,
        )
        if log.status != "success":
            result.failed[name] = str(log.error.message if log.error else log.status)
        full = read_eval_log(log.location, resolve_attachments=True)
        annotate_log(full, name, price)
        write_eval_log(full, full.location)
        result.logs[name] = str(full.location)
        rows.extend(sample_rows(full, provenance))
    result.frame = pl.DataFrame(rows)
    return result


def write_eval_report(result: EvalResult, out: Path, command: str = "") -> dict[str, Path]:
    """``report.md`` (the executive summary, the success table, the paired comparisons, the logs),
    ``samples.csv`` (the frame) and ``figures/success.png`` in ``out``; returns their paths."""
    from ctxlab.analysis.plotting.success import write_success_figure

    out.mkdir(parents=True, exist_ok=True)
    frame = result.frame
    table = success_table(frame)
    names = table["strategy"].to_list()
    base = "none" if "none" in names else names[0]
    lines = [f"# ctxlab eval: {result.task}", ""]
    if command:
        lines += [f"`{command}`", ""]
    price = result.price
    lines += [
        f"Model {result.model}; {result.epochs} epoch(s), seed {result.seed}; tokens by ctxlab's {MEASURE} "
        f"measure; dollars under {price.key if price else '?'} (prices as of {price.as_of if price else '?'}), "
        "prompt caching counted.",
        "",
        "## Executive summary",
        "",
        *[f"- {line}" for line in success_summary(frame, base, result.model)],
    ]
    if result.failed:
        lines += ["", "Evals that did not finish (their samples count as failures):", ""]
        lines += [f"- {k}: {v}" for k, v in result.failed.items()]
    lines += ["", "## Success per strategy", "", success_markdown(table), ""]
    pairs = paired_success(frame, base) if len(names) > 1 else []
    if pairs:
        lines += [f"## Paired with {base} (success difference per sample)", "", paired_markdown(pairs), ""]
    lines += [
        "## Inspect logs (open with `inspect view`; ctxlab's measures are in each sample's metadata)",
        "",
    ]
    lines += [f"- {k}: `{v}`" for k, v in result.logs.items()]
    lines += ["", "![success against cost](figures/success.png)", ""]
    written = {"report": out / "report.md", "samples": out / "samples.csv"}
    written["report"].write_text("\n".join(lines), encoding="utf-8")
    frame.write_csv(written["samples"])
    written["figure"] = write_success_figure(table, out / "figures")
    return written
