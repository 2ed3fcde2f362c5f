"""The record of a replay written beside its numbers: ``run.json`` (the provenance of
:func:`ctxlab.replay.provenance.provenance` plus the run's problems), the ``calls.parquet`` file
metadata (key ``ctxlab``: the same JSON), and the report's sections on provenance, problems,
overflow rounds and failed summaries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab.analysis.cells import cell
from ctxlab.analysis.run_facts import prompt_not_read

if TYPE_CHECKING:
    from ctxlab.replay import ReplayResult

__all__ = [
    "PARQUET_KEY",
    "accounting_lines",
    "parquet_metadata",
    "prefix_lines",
    "problem_lines",
    "provenance_lines",
    "run_record",
    "write_run_json",
]

#: the ``calls.parquet`` metadata key holding the run record (JSON)
PARQUET_KEY = "ctxlab"
#: what a problem of each kind is called in the report, run.json and the terminal (a file that is
#: no transcript is skipped and listed as a warning, not here: a load problem is a failure)
KINDS = {
    "load": "failed to load",
    "replay": "failed run",
    "summary": "failed summaries",
    "plugin": "plugin problem",
}

#: what a warning of each kind is about in the report
WARNING_KINDS = {"load": "file", "setting": "setting", "run": "run"}


def run_record(result: ReplayResult) -> dict[str, Any]:
    """The provenance (``result.provenance``) plus ``unrecorded_prefix`` (per run: its tokens,
    source, the calls it rests on and how far the estimate stays from the recorded tokens,
    :mod:`ctxlab.replay.prefix`), ``replayed`` (runs), ``calls``, ``problems``
    (one string per problem), ``warnings`` (each warning said while the run was made —
    a loader's, naming the file and the place, a skipped file, a setting outside its
    recommended range, one raised while a run replayed (``kind`` ``"run"``, with its
    ``transcript`` and ``strategy``) —: ``kind``, ``source``, ``where``, ``transcript``,
    ``strategy``, ``message``), ``plugin_problems`` (each plugin that failed to load, was skipped or
    raised in a hook: ``plugin``, ``kind``, ``problem``, ``traceback``) and ``failed_summaries``
    (transcript, strategy, call, error, fallback text)."""
    return {
        **result.provenance,
        "context_window": result.provenance.get("context_window") or result.window,
        "unrecorded_prefix": dict(result.prefixes),
        "replayed": result.replayed,
        "calls": len(result.rows),
        "problems": [f"{KINDS.get(e.kind, e.kind)}: {e}" for e in result.errors],
        "warnings": [
            {
                "kind": w.kind,
                "source": w.source,
                "where": w.where,
                "transcript": w.transcript,
                "strategy": w.strategy,
                "message": str(w),
            }
            for w in getattr(result, "warnings", [])
        ],
        "plugin_problems": [
            {"plugin": e.plugin or e.source, "kind": e.kind, "problem": e.problem, "traceback": e.traceback}
            for e in result.errors
            if e.kind == "plugin" or e.plugin
        ],
        "failed_summaries": [
            {k: s.get(k) for k in ("transcript", "strategy", "call_index", "error", "fallback")}
            for s in result.summaries
            if s.get("error") or s.get("fallback")
        ],
    }


def write_run_json(result: ReplayResult, out: Path) -> Path:
    """Write :func:`run_record` to ``out/run.json`` and return the path."""
    path = out / "run.json"
    path.write_text(json.dumps(run_record(result), indent=2, ensure_ascii=False, default=str) + "\n", "utf-8")
    return path


def parquet_metadata(result: ReplayResult) -> dict[str, str]:
    """``{"ctxlab": <run record as JSON>}`` for ``DataFrame.write_parquet(metadata=...)``; read it
    back with ``polars.read_parquet_metadata(path)["ctxlab"]``."""
    return {PARQUET_KEY: json.dumps(run_record(result), ensure_ascii=False, default=str)}


def provenance_lines(result: ReplayResult) -> list[str]:
    """The report's provenance section (Markdown lines)."""
    p = result.provenance
    if not p:
        return ["Not recorded (the result was not made by `replay_many`)."]
    packages = ", ".join(f"{k} {v}" for k, v in (p.get("packages") or {}).items() if v) or "(none found)"
    lines = [
        f"- ctxlab {p.get('ctxlab')}, Python {p.get('python')} on {p.get('platform')}",
        f"- packages: {packages}",
        f"- command: `{p.get('command')}`" if p.get("command") else "- command: (not run from the CLI)",
        f"- measuring estimator: `{p.get('measure')}`",
        f"- provider context window: {p.get('context_window') or result.window or 'none'}",
        f"- summarizer: {p.get('summarizer')}"
        + (
            " (per strategy: " + "; ".join(f"{k}: {v}" for k, v in (p.get("summarizers") or {}).items()) + ")"
            if p.get("summarizers")
            else ""
        ),
    ]
    env = p.get("environment") or {}
    lines.append(
        "- environment: " + (", ".join(f"`{k}={v}`" for k, v in env.items()) or "no `CTXLAB_*` variable set")
    )
    lines += ["", "Strategies (a row's label is the strategy it names, and nothing else):", ""]
    lines += ["| label | strategy | plugins-folder plugins added (hooks) | level names | description |"]
    lines += ["|---|---|---|---|---|"]
    for label, rec in (p.get("strategies") or {}).items():
        added = "; ".join(
            f"{a['name']} ({', '.join(a['hooks']) or 'observer only'})" for a in rec.get("plugins") or []
        )
        levels = ", ".join(f"{k} = {v}" for k, v in (rec.get("levels") or {}).items())
        desc = str(rec.get("description") or "").replace("|", "\\|")
        lines.append(f"| `{label}` | `{rec.get('strategy')}` | {added or 'none'} | {levels} | {desc} |")
    lines += ["", "Plugins loaded:", "", "| name | source | hooks |", "|---|---|---|"]
    for info in p.get("plugins") or []:
        lines.append(f"| `{info['name']}` | {info['source']} | {', '.join(info['hooks'])} |")
    lines += [
        "",
        "Settings, the measure and the rest are also in `run.json` and in the `ctxlab` metadata "
        "of `calls.parquet`.",
    ]
    return lines


def settings_lines(result: ReplayResult) -> list[str]:
    """The report's "Settings" section: the run's settings (one row per field), T and T2 in
    tokens, and the settings a strategy sets over the run's for its own runs (e.g.
    ``ars-prepared``'s ``summary_prepare_ratio`` 0.8, from its provenance record's
    ``parameters.settings``)."""
    s = result.settings
    lines = ["", "## Settings", "", "| field | value |", "|---|---|"]
    for name, value in s.to_dict().items():
        if name == "summary_prompt" and value is None:
            value = "the built-in template of the summary language"
        elif name == "summary_prompt":
            first = value.strip().splitlines()[0] if value.strip() else ""
            value = f"{len(value)} characters, starting “{first[:60]}”"
            deaf = "; ".join(f"{what} ({', '.join(names)})" for what, names in prompt_not_read(result))
            if deaf:  # the summarizer in use writes its own fixed sections
                value += (
                    f"; **not read** by the summarizer in use: {deaf}: its sections are its own; the prompt "
                    "only sets the summary language (summary_language auto follows a custom prompt's "
                    "language). A model reads it: --summarizer-model"
                )
        lines.append(f"| `{name}` | {cell(value)} |")
    lines += [
        "",
        f"Entry threshold **T = {s.entry_threshold_tokens:,} tokens** (summary_threshold × 1024); L2 "
        f"threshold **T2 = {s.l2_threshold_tokens:,.0f} tokens** (T × summary_l2_trigger_ratio).",
    ]
    own = {
        label: rec["parameters"]["settings"]
        for label, rec in (result.provenance.get("strategies") or {}).items()
        if (rec.get("parameters") or {}).get("settings")
    }
    if own:
        said = "; ".join(
            f"`{label}`: " + ", ".join(f"`{k}` = {cell(v)}" for k, v in fields.items())
            for label, fields in own.items()
        )
        lines += ["", f"Set by a strategy over this table, for its own runs: {said}."]
    return lines


def problem_lines(result: ReplayResult) -> list[str]:
    """The report's errors section: each problem, each failed or text-less summary, then the
    warnings said while the run was made (``result.warnings``: a file loaded with a doubt or
    skipped, a setting outside its recommended range), each naming its file or setting."""
    lines: list[str] = []
    for e in result.errors:
        lines.append(f"- {KINDS.get(e.kind, e.kind)}: `{e}`")
        if e.traceback:
            lines += ["", "  ```", *(f"  {t}" for t in e.traceback.rstrip().splitlines()), "  ```", ""]
    failed = [s for s in result.summaries if s.get("error") or s.get("fallback")]
    if failed:
        lines += ["", f"Failed, text-less or fallback L2 summaries ({len(failed)}):", ""]
        lines += [
            f"- {s.get('transcript')} [{s.get('strategy')}] call {s.get('call_index')}: "
            f"`{s.get('error') or 'fallback text: ' + str(s.get('fallback'))}`"
            for s in failed
        ]
    said = list(getattr(result, "warnings", []))
    if said:
        lines += [""] if lines else []
        lines += [
            f"### Warnings ({len(said)}, not failures: the run used these files and settings as said)",
            "",
        ]
        lines += [f"- {WARNING_KINDS.get(w.kind, w.kind)}: `{w}`" for w in said]
    return lines or ["None."]


def accounting_lines(result: ReplayResult, totals: pl.DataFrame) -> list[str]:
    """Lines under the per-strategy table: overflow rounds (with a window), the saving without the
    calls built on failed summaries, and renamed levels."""
    lines: list[str] = []
    if not totals.height:
        return lines
    rows = list(totals.iter_rows(named=True))
    if result.window:
        lines.append(
            f"Provider context window {result.window}: overflow rounds (calls in which the provider "
            "refused a request above the window and the strategy had to compress again): "
            + ", ".join(f"{r['strategy']} {r['overflow_rounds']}" for r in rows)
            + "."
        )
    for r in rows:
        if r["summary_errors"]:
            without = r["saving_pct_without_failed"]
            outside = min(int(r.get("failed_outside_l2") or 0), int(r["summary_errors"]))
            what = (
                f"{r['summary_errors']} L2 summaries failed.** Its saving of {r['saving_pct']:.1f} % "
                "counts calls sent with a failed summary (a short error notice, no saving)"
                if not outside
                else f"compression failed in {r['summary_errors']} calls, {outside} of them without an "
                "L2 round (the strategy's own error, not a failed summary).** Its saving of "
                f"{r['saving_pct']:.1f} % counts the calls built on a failure"
            )
            lines.append(
                f"**{r['strategy']}: {what}; over the other calls it saves "
                + (f"{without:.1f} %." if without is not None else "nothing (every call was built on one).")
            )
    renamed = {
        label: rec.get("levels")
        for label, rec in (result.provenance.get("strategies") or {}).items()
        if rec.get("levels")
    }
    for label, levels in renamed.items():
        lines.append(
            f"`{label}` names its levels: "
            + ", ".join(
                f"its {k} rounds are {v} rounds (counted in `{k.lower()}_rounds`)" for k, v in levels.items()
            )
            + "."
        )
    return lines


def prefix_lines(result: ReplayResult) -> list[str]:
    """The report's unrecorded-prefix section: per run its fixed part and earlier conversation,
    where they come from, the calls the measure rests on, the estimate over the recorded input
    tokens on the median call before and after the correction, and the ``recorded`` request over
    them after a recorded compaction (:mod:`ctxlab.replay.prefix`)."""
    if not result.prefixes:
        return ["Not recorded."]
    lines = [
        "The part of every request the recording does not hold (system prompt, tool schemas, injected "
        "context), added to every strategy's request as one labelled block of the system message "
        "(`--unrecorded-prefix`; `ctxlab.replay.prefix`). `raw / recorded` is the replay's estimate of the "
        "uncompressed request over the provider's recorded input tokens on the median call before any "
        "recorded compaction, without and with the prefix. A file that starts mid-session also lacks the "
        "earlier conversation: where the run records usage after the agent's compaction, the gap is split "
        "into the fixed part (`prefix tokens`, measured after the compaction) and the `earlier conversation`, "
        "one labelled history message at the start of the conversation (the agent's compaction drops it, "
        "a strategy may summarize it, the raw request keeps it); `recorded after` is the `recorded` "
        "request over the provider's count on the median call after the compaction.",
        "",
        "| run | prefix tokens | earlier conversation | source | calls with usage | raw / recorded before | after "
        "| recorded after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    bare = [label for label, p in result.prefixes.items() if not p.get("calls") and not p.get("tokens")]
    for label, p in sorted(result.prefixes.items()):
        if label in bare:
            continue
        before, after, rec = p.get("raw_off_by"), p.get("off_by"), p.get("after_off_by")
        calls = f"{p.get('calls') or 0}" + (f" + {p['calls_after']} after" if p.get("calls_after") else "")
        lines.append(
            f"| {label} | {int(p.get('tokens') or 0):,} | {int(p.get('history_tokens') or 0):,} | "
            f"{p.get('source')} | {calls} | {'' if before is None else f'{before:.3f}'} | "
            f"{'' if after is None else f'{after:.3f}'} | {'' if rec is None else f'{rec:.3f}'} |"
        )
    if len(bare) == len(result.prefixes):
        lines = lines[:2]  # no table: no run records its usage
    if bare:
        lines += [
            "",
            f"{len(bare)} other run(s) record no usage: no prefix was added to them (the executive summary "
            "names their sources).",
        ]
    return lines
