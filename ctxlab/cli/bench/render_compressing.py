"""The Markdown of section 1's second part: the middlewares while compressing
(:mod:`~ctxlab.cli.bench.compressing`)."""

from __future__ import annotations

from ctxlab.cli.bench.compressing import CompressingResult
from ctxlab.cli.bench.realistic import OUTPUT_SIZES

__all__ = ["compressing_section"]


def _verdict(ratio: float | None, target: float) -> str:
    if ratio is None:
        return "–"
    return f"**{ratio:.1f}×** ({'met' if ratio >= target else 'not met'})"


def _sizes() -> str:
    return ", ".join(
        f"{tool} {median:,} ({sigma:g})" for tool, (_s, median, sigma, _cap) in OUTPUT_SIZES.items()
    )


def compressing_section(result: CompressingResult) -> list[str]:
    """Section 1 while compressing: per-call ratios by kind of call, growth, memory, reloads."""
    out = [
        "### While compressing",
        "",
        "The runs go through both middlewares with a trigger both reach (`ctxlab/cli/bench/compressing.py`). "
        "The default rows (issue 31: the setup a user runs) replay the **realistic history** "
        "(`ctxlab/cli/bench/realistic.py`): a coding agent's run with six tool schemas in every request "
        "(bash, read_file, write_file, edit_file, grep, list_files) and heavy-tailed outputs, log-normal per "
        f"tool (median characters and σ: {_sizes()}; one turn in ten with parallel calls, `write_file` "
        "contents and `edit_file` strings of log-normal size), with ctxlab writing its files to the README's "
        "default backend, `FilesystemBackend(root_dir=<new temporary folder>, virtual_mode=True)` on disk; "
        "DeepAgents' `StateBackend` (the files in the state's `files` channel, `DeepAgentFiles` in "
        "`ctxlab/cli/bench/contenders.py`) is a second row. The synthetic history of issue 20 (one `bash` tool, "
        "100–3,000-character results) follows. T is matched in tokens (ctxlab `summary_threshold × 1024` = "
        'LangChain `trigger=("tokens", T)`, each counted by its own default estimator), LangChain keeps as many '
        'messages as ctxlab (`keep=("messages", 10)`), both summarize with the same fake chat model. CPU time '
        "of the measuring thread (`time.thread_time`): ctxlab's `wrap_model_call` minus the model handler, "
        "LangChain's `before_model` plus applying its update through `add_messages`; the **summarizer step** "
        "(ctxlab's `Summarizer.summarize`, LangChain's `_create_summary`: preparing the messages and calling "
        "the model) is left out of both. ctxlab writes its offload files behind on its own thread and waits "
        "for them before the model node returns (`ctxlab/core/writes.py`): that thread's CPU is not in the "
        "per-call times, it is the **writer thread CPU** column. Each run repeated in shuffled order, each "
        "call's best time. Medians per kind of call: ctxlab below T / L1-only round / L2 round, LangChain "
        "without / with a summary. Ratios are LangChain / ctxlab (above 1: ctxlab cheaper); issue 31's "
        "targets: all calls and the whole run ≥ 2×, L1 rounds (against LangChain's median call) ≥ 2×, L2 "
        "rounds (against LangChain's summary calls) ≥ 1×.",
        "",
        "| history | ctxlab backend | scenario | messages | T tokens | ctxlab ms: below T · L1 · L2 (calls) | "
        "LangChain ms: no summary · summary (calls) | all calls (median) | L1 rounds vs LangChain median | "
        "L2 rounds vs LangChain summary | whole run CPU s ctxlab / LangChain | ctxlab writer thread CPU s | "
        "whole run |",
        "|---|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result.rows:
        ars = " · ".join(
            f"{r.ars[k][1]:.3f} ({r.ars[k][0]:,})" if k in r.ars else "–" for k in ("none", "L1", "L2")
        )
        lc = " · ".join(
            f"{r.langchain[k][1]:.3f} ({r.langchain[k][0]:,})" if k in r.langchain else "–"
            for k in ("none", "summary")
        )
        out.append(
            f"| {r.history} | {r.backend} | {r.scenario} | {r.messages:,} | {r.threshold_tokens:,} | {ars} | {lc} | "
            f"{_verdict(r.ratio('all'), 2)} | {_verdict(r.ratio('L1'), 2)} | "
            f"{_verdict(r.ratio('L2', 'summary'), 1)} | {r.ars_total_s:.2f} / {r.langchain_total_s:.2f} | "
            f"{r.writer_s:.2f} | {_verdict(r.total_ratio, 2)} |"
        )
    memory = result.ars_peak_mb / result.langchain_peak_mb if result.langchain_peak_mb > 0 else float("nan")
    growth = "; ".join(
        f"{where}, {scenario}: ctxlab **k = {k:.2f}**, LangChain k = {lk:.2f}"
        for where, scenario, k, lk in result.growth
    )
    out += [
        "",
        f"Growth while compressing (whole-run CPU time at {', '.join(f'{n:,}' for n in result.sizes)} messages, "
        f"fitted as `time ∝ N^k`; 1 = linear): {growth or 'not measured'}.",
        "",
        f"Peak memory of a whole run with compression (realistic history, {result.memory_messages:,} messages, "
        "default T, ctxlab on a `FilesystemBackend`; `tracemalloc`, the history built beforehand): ctxlab "
        f"**+{result.ars_peak_mb:.1f} MB**, LangChain **+{result.langchain_peak_mb:.1f} MB**: ctxlab / LangChain "
        f"**{memory:.2f}×** (target ≤ 2×: {'met' if memory <= 2 else 'not met'}).",
        "",
        "First model call after a checkpoint reload (`_reload` in `ctxlab/cli/bench/compressing.py`, the "
        "realistic history, ctxlab on a `FilesystemBackend`): each contender runs the history to the call before "
        "the last but one; its state (messages and its private keys, e.g. ctxlab's `_summarization_event`) is "
        "round-tripped through LangGraph's checkpoint serializer (`JsonPlusSerializer.dumps_typed`/`loads_typed`, "
        "what a checkpointer stores and loads; no compiled graph is run), giving new message objects with the same content; the "
        "transcript's messages since then are added (the new invocation's input) and the model call is timed "
        '("first"), then the model\'s answer and the next transcript messages are appended and the following '
        'call is timed ("next"). "ctxlab same process" is the run\'s own `CompressionMiddleware` instance with '
        'the caches of its run; "ctxlab fresh instance" is a new middleware over the same backend with empty '
        "caches, what a new process pays apart from imports (the offload files there were not written by it, so "
        "it checks each one its view names). LangChain's `SummarizationMiddleware` keeps nothing between calls. "
        "Median over the reloads, each from a run of its own. Target (issue 31): the fresh instance's first call "
        "≥ 1× LangChain's.",
        "",
        "| case | messages | reloads | ctxlab same process ms: first · next | ctxlab fresh instance ms: first · "
        "next | LangChain ms: first · next | first call, LangChain / ctxlab same process | first call, "
        "LangChain / ctxlab fresh instance |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rr in result.reloads:
        out.append(
            f"| {rr.case} | {rr.messages:,} | {rr.reloads} | {rr.ars_first_ms:.2f} · {rr.ars_next_ms:.2f} | "
            f"{rr.ars_fresh_first_ms:.2f} · {rr.ars_fresh_next_ms:.2f} | "
            f"{rr.langchain_first_ms:.2f} · {rr.langchain_next_ms:.2f} | {_verdict(rr.ratio, 1)} | "
            f"{_verdict(rr.fresh_ratio, 1)} |"
        )
    cold = result.cold_langchain_ms / result.cold_ars_ms if result.cold_ars_ms else float("nan")
    out += [
        "",
        f"A fresh process's very first call (realistic {result.memory_messages:,}-message history, imports done, "
        f"median of fresh processes): ctxlab {result.cold_ars_ms:.1f} ms, LangChain {result.cold_langchain_ms:.1f} "
        f"ms (LangChain / ctxlab {cold:.2f}×; no target).",
        "",
    ]
    return out
