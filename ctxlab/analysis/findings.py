"""Two findings of *The Complexity Trap* (Lindenbauer et al., 2025), measured on public runs.

Lindenbauer, Slinko, Felder, Bogomolov, Zharov: *The Complexity Trap: Simple Observation Masking
Is as Efficient as LLM Summarization for Agent Context Management*, DL4C workshop at NeurIPS 2025,
arXiv:2508.21433.  Two of its findings are computed here on recorded runs:

1. **Observations dominate an agent's turns.**  :func:`observation_shares` splits each run's
   messages with :func:`ctxlab.replay.metrics.message_part`: *observations* are tool results
   (ToolMessages, and the text observations that SWE-agent / mini-swe-agent send back as user
   messages, marked ``ctxlab_observation`` by the loaders); *assistant* messages are the agent's
   reasoning and actions (tool-call arguments included); everything else (system prompt, task,
   demonstrations) is *other*.  ``turn_share`` = observation tokens / (observation + assistant
   tokens), the share of the agent's turns that are observations (the paper's Figure 1 split an
   agent turn into observation, action and reasoning).  ``context_share`` weighs each message by
   the number of later model calls whose request carries it (system + tool schemas + every
   earlier message, as :mod:`ctxlab.replay` counts ``raw_tokens``): the share of everything a
   raw agent sends that is observations, which is what its input cost follows.
2. **Observation masking saves about as much as LLM summarization.**  :func:`strategy_savings`
   replays the same runs (:func:`ctxlab.replay.engine.replay_many`, fixed trajectories) through
   ``masking`` (the last 10 tool results kept, older ones replaced by a placeholder; the paper's
   M = 10), ``ars`` and ``langchain-summarization`` with one entry threshold for all, and reports
   the saving against the raw run: ``saving_pct`` = 1 - sent / raw tokens, and
   ``cost_saving_pct`` which also charges the summarizer's input and output tokens (estimates:
   the offline summarizer reports no usage).

:data:`PAPER` holds the paper's numbers with where each was read; :func:`compare_with_paper` puts
them next to ctxlab's, and :func:`plot_findings` (:mod:`ctxlab.analysis.plotting.findings`,
re-exported here) draws them side by side.  Tokens are ``cl100k_base`` (tiktoken, offline) unless ``measure`` says
otherwise; the paper's costs come from its models' own tokenizers and prices.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.analysis.paper import DEFAULT_STRATEGIES, DEFAULT_THRESHOLD_K, PAPER, PaperFindings
from ctxlab.analysis.plotting.findings import plot_findings
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.metrics import make_measure, message_part

if TYPE_CHECKING:
    from ctxlab.transcripts import Transcript

__all__ = [
    "DEFAULT_STRATEGIES",
    "DEFAULT_THRESHOLD_K",
    "PAPER",
    "Findings",
    "PaperFindings",
    "agent_name",
    "compare_with_paper",
    "findings",
    "observation_shares",
    "plot_findings",
    "share_by_agent",
    "strategy_savings",
]

#: display names of the agents, by transcript format
AGENT_NAMES = {"swe_agent": "SWE-agent", "mini_swe_agent": "mini-swe-agent"}
#: strategies compared with the paper's LLM-Summary
SUMMARY_STRATEGIES = ("ars", "langchain-summarization", "deepagents-summarization")


Measure = str | Callable[[BaseMessage], int]
#: the columns of :func:`observation_shares`, in order
SHARE_SCHEMA: dict[str, Any] = {
    **dict.fromkeys(("agent", "transcript", "model"), pl.String),
    **dict.fromkeys(
        ("calls", "observations", "observation_tokens", "assistant_tokens", "other_tokens"), pl.Int64
    ),
    **dict.fromkeys(("turn_share", "total_share", "context_share"), pl.Float64),
    **dict.fromkeys(("context_observation_tokens", "context_tokens"), pl.Int64),
}


def agent_name(transcript: Transcript) -> str:
    """``"SWE-agent"``, ``"mini-swe-agent"``, or the transcript's format name for other agents."""
    return AGENT_NAMES.get(transcript.format, transcript.format)


def _load(items: Any, pm: Any = None) -> tuple[list[Transcript], list[str]]:
    """Transcripts from transcripts, files and folders; the problems of files that failed."""
    from ctxlab.transcripts import Transcript, load_many

    if isinstance(items, (str, Path, Transcript)):
        items = [items]
    transcripts: list[Transcript] = []
    paths: list[str | Path] = []
    for item in items:
        (transcripts if isinstance(item, Transcript) else paths).append(item)
    errors: list[str] = []
    if paths:
        loaded, problems = load_many(paths, pm=pm)
        transcripts.extend(loaded)
        errors.extend(str(e) for e in problems)
    return transcripts, errors


def _counter(measure: Measure) -> tuple[Callable[[BaseMessage], int], Callable[[Sequence[Any]], int], str]:
    if callable(measure):
        return measure, lambda tools: 0, getattr(measure, "__name__", "custom")
    cache = make_measure(measure)
    name = "cl100k_base" if measure == "tiktoken" else str(measure)
    return cache.message_tokens, cache.tools_tokens, name


def observation_shares(transcripts: Any, *, measure: Measure = "tiktoken", pm: Any = None) -> pl.DataFrame:
    """Per run: the tokens of observations, assistant turns and the rest, and their shares.

    Args:
        transcripts: loaded transcripts, files, or folders (walked recursively); files that
            fail to load are skipped (see :func:`findings` for their list).
        measure: ``"tiktoken"`` (``cl100k_base``, offline; default), ``"char-class"`` (ctxlab's
            estimator), or a function giving one message's tokens (tool schemas then count 0).
        pm: the plugin manager of transcript formats (default: with entry points).

    Returns:
        One row per run: ``agent``, ``transcript``, ``model``, ``calls`` (assistant messages),
        ``observations`` (messages), ``observation_tokens``, ``assistant_tokens``,
        ``other_tokens`` (tokens), ``turn_share`` = observation / (observation + assistant)
        tokens, ``total_share`` = observation / all message tokens, ``context_share`` =
        observation tokens / all tokens summed over every call's raw request (fractions in
        0..1; ``None`` when the denominator is 0).
    """
    from ctxlab.replay import transcript_labels

    loaded, _ = _load(transcripts, pm)
    count, count_tools, _ = _counter(measure)
    rows = []
    for t, label in zip(loaded, transcript_labels(loaded), strict=True):
        obs = asst = other = n_obs = calls = 0
        prefix_all, prefix_obs = count_tools(t.tools), 0
        ctx_all = ctx_obs = 0
        for m in t.messages:
            if isinstance(m, AIMessage):  # one model call: its request is everything before it
                calls += 1
                ctx_all += prefix_all
                ctx_obs += prefix_obs
            tokens = count(m)
            part = message_part(m)
            prefix_all += tokens
            if part == "tool":
                obs += tokens
                n_obs += 1
                prefix_obs += tokens
            elif part == "assistant":
                asst += tokens
            else:
                other += tokens
        total = obs + asst + other
        rows.append((
            agent_name(t), label, t.model, calls, n_obs, obs, asst, other,
            obs / (obs + asst) if obs + asst else None, obs / total if total else None,
            ctx_obs / ctx_all if ctx_all else None, ctx_obs, ctx_all,
        ))  # fmt: skip
    return pl.DataFrame(rows, schema=SHARE_SCHEMA, orient="row")


def share_by_agent(shares: pl.DataFrame) -> pl.DataFrame:
    """Pooled shares per agent plus an ``all`` row, next to the paper's.

    Returns:
        ``agent``, ``runs``, ``calls``, ``observation_tokens``, ``assistant_tokens``,
        ``turn_share_pct`` (pooled: the sums' ratio, in percent), ``median_run_pct`` (the median
        of the runs' ``turn_share``), ``context_share_pct`` (pooled) and ``paper_pct``.
    """
    groups = [(a, shares.filter(pl.col("agent") == a)) for a in sorted(set(shares["agent"].to_list()))]
    if len(groups) != 1:
        groups.append(("all", shares))
    rows = []
    for agent, g in groups:
        obs, asst = int(g["observation_tokens"].sum()), int(g["assistant_tokens"].sum())
        ctx_obs, ctx = int(g["context_observation_tokens"].sum()), int(g["context_tokens"].sum())
        runs = [s for s in g["turn_share"].to_list() if s is not None]
        rows.append(
            {
                "agent": agent,
                "runs": g.height,
                "calls": int(g["calls"].sum()),
                "observation_tokens": obs,
                "assistant_tokens": asst,
                "turn_share_pct": 100.0 * obs / (obs + asst) if obs + asst else None,
                "median_run_pct": 100.0 * statistics.median(runs) if runs else None,
                "context_share_pct": 100.0 * ctx_obs / ctx if ctx else None,
                "paper_pct": PAPER.observation_share_pct,
            }
        )
    return pl.DataFrame(rows, schema_overrides={"median_run_pct": pl.Float64, "turn_share_pct": pl.Float64})


def _paper_saving(strategy: str) -> float | None:
    if strategy == "masking":
        return PAPER.masking_saving_pct
    if strategy in SUMMARY_STRATEGIES:
        return PAPER.summary_saving_pct
    return None


def strategy_savings(
    transcripts: Any,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    *,
    settings: CompressionSettings | None = None,
    measure: str = "tiktoken",
    limit_calls: int | None = None,
    pm: Any = None,
) -> pl.DataFrame:
    """Replay the runs through each strategy; the saving against the raw run per agent and in all.

    Args:
        transcripts: loaded transcripts, files, or folders.
        strategies: registered strategy names (default :data:`DEFAULT_STRATEGIES`).
        settings: the settings of every strategy (default: the ARS defaults with
            ``summary_threshold`` = :data:`DEFAULT_THRESHOLD_K`).
        measure: the measuring estimator of the replay (``"tiktoken"`` or ``"char-class"``).
        limit_calls: replay at most this many model calls of each run.
        pm: the plugin manager (default: with entry points, so the plugins' strategies exist).

    Returns:
        ``agent``, ``strategy``, ``runs``, ``calls``, ``raw_tokens``, ``sent_tokens``,
        ``summarizer_tokens`` (input + output, estimates), ``l1_rounds``, ``l2_rounds``,
        ``saving_pct`` = 100 × (1 - sent / raw), ``cost_saving_pct`` = 100 × (1 - (sent +
        summarizer) / raw), and ``paper_saving_pct`` (the paper's masking or LLM-Summary cost
        saving, ``None`` for other strategies).

    Raises:
        KeyError: an unknown strategy.
    """
    from ctxlab.replay import replay_many, transcript_labels

    loaded, _ = _load(transcripts, pm)
    settings = settings or CompressionSettings(summary_threshold=DEFAULT_THRESHOLD_K)
    result = replay_many(
        loaded,
        list(strategies),
        settings=settings,
        measure=measure,
        limit_calls=limit_calls,
        pm=pm,
        progress=False,
    )
    agents = dict(zip(transcript_labels(loaded), (agent_name(t) for t in loaded), strict=True))
    summary = result.summary()
    if summary.is_empty():
        return pl.DataFrame()
    summary = summary.with_columns(pl.col("transcript").replace_strict(agents, default="?").alias("agent"))
    groups = [pl.col("agent"), pl.col("strategy")]
    per_agent = summary.group_by(groups, maintain_order=True).agg(_totals())
    if summary["agent"].n_unique() > 1:
        per_agent = pl.concat([per_agent, summary.group_by("strategy", maintain_order=True).agg(_totals()).select(
            pl.lit("all").alias("agent"), pl.all())])  # fmt: skip
    return per_agent.with_columns(
        (100.0 * (1 - pl.col("sent_tokens") / pl.col("raw_tokens"))).alias("saving_pct"),
        (100.0 * (1 - (pl.col("sent_tokens") + pl.col("summarizer_tokens")) / pl.col("raw_tokens"))).alias(
            "cost_saving_pct"
        ),
        pl.col("strategy").map_elements(_paper_saving, return_dtype=pl.Float64).alias("paper_saving_pct"),
    )


def _totals() -> list[pl.Expr]:
    return [
        pl.len().alias("runs"),
        pl.col("calls").sum().cast(pl.Int64),
        pl.col("raw_tokens_total").sum().alias("raw_tokens"),
        pl.col("sent_tokens_total").sum().alias("sent_tokens"),
        (pl.col("summarizer_input_tokens") + pl.col("summarizer_output_tokens"))
        .sum()
        .alias("summarizer_tokens"),
        pl.col("l1_rounds").sum(),
        pl.col("l2_rounds").sum(),
    ]


def compare_with_paper(by_agent: pl.DataFrame, savings: pl.DataFrame | None = None) -> pl.DataFrame:
    """The paper's numbers and ctxlab's side by side, one finding a row (all values in percent).

    Returns:
        ``finding``, ``paper`` (``None`` where the paper has no such number), ``ctxlab``, ``unit``
        (``"%"``, or ``"pp"`` for a difference of two savings in percentage points), ``note``.
    """
    rows: list[tuple[str, float | None, float | None, str, str]] = []
    for r in by_agent.iter_rows(named=True):
        note = f"{r['runs']} runs, median run {_pct(r['median_run_pct'])}; "
        note += f"share of all request tokens {_pct(r['context_share_pct'])}"
        finding = f"observation share of agent-turn tokens, {r['agent']}"
        rows.append((finding, PAPER.observation_share_pct, r["turn_share_pct"], "%", note))
    if savings is not None and not savings.is_empty():
        overall = savings.filter(
            pl.col("agent") == ("all" if "all" in savings["agent"] else savings["agent"][0])
        )
        by_name = {r["strategy"]: r for r in overall.iter_rows(named=True)}
        # ctxlab's figure beside the paper's dollar saving (which pays for its summarizer) is the
        # one that charges the summarizer's tokens too; tokens not sent alone favour the
        # summarizers (s40 trial: the gap read -12.8 pp instead of -7.5 pp)
        for name, r in by_name.items():
            note = (
                f"{r['runs']} runs; summarizer tokens charged (tokens not sent alone "
                f"{_pct(r['saving_pct'])}); paper: "
                + ("its LLM-Summary's" if name in SUMMARY_STRATEGIES else "its")
                + " dollar saving, ctxlab: tokens (not comparable one to one)"
            )
            rows.append((f"saving vs raw, {name}", r["paper_saving_pct"], r["cost_saving_pct"], "%", note))
        masked = by_name.get("masking")
        for name in SUMMARY_STRATEGIES:
            if masked is not None and name in by_name:
                paper = PAPER.masking_saving_pct - PAPER.summary_saving_pct
                ours = masked["cost_saving_pct"] - by_name[name]["cost_saving_pct"]
                note = (
                    "positive: masking saves more; paper: dollars vs its LLM-Summary, ctxlab: tokens with "
                    "the summarizer's charged"
                )
                rows.append((f"masking's saving minus {name}'s", paper, ours, "pp", note))
    schema = {
        "finding": pl.String,
        "paper": pl.Float64,
        "ctxlab": pl.Float64,
        "unit": pl.String,
        "note": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} %"


@dataclass
class Findings:
    """What :func:`findings` computed (see the module docstring).

    Attributes:
        shares: per run (:func:`observation_shares`); by_agent: :func:`share_by_agent`;
        savings: :func:`strategy_savings` (``None`` when not computed); comparison:
        :func:`compare_with_paper`; settings: the replay settings; measure: the tokenizer's
        name; errors: files that could not be loaded.
    """

    shares: pl.DataFrame
    by_agent: pl.DataFrame
    savings: pl.DataFrame | None
    comparison: pl.DataFrame
    settings: CompressionSettings
    measure: str
    errors: list[str] = field(default_factory=list)


def findings(
    paths_or_transcripts: Any,
    *,
    strategies: Iterable[str] | None = DEFAULT_STRATEGIES,
    settings: CompressionSettings | None = None,
    measure: str = "tiktoken",
    limit_calls: int | None = None,
    pm: Any = None,
) -> Findings:
    """Both findings on the given runs (what ``ctxlab findings PATH...`` prints).

    Args:
        paths_or_transcripts: transcripts, files, or folders (walked recursively).
        strategies: the strategies to replay for the savings; ``None`` or empty: shares only.
        settings, measure, limit_calls, pm: as for :func:`strategy_savings`.

    Raises:
        ValueError: nothing could be loaded.  KeyError: an unknown strategy.
    """
    from ctxlab.replay import make_lab_manager

    pm = pm if pm is not None else make_lab_manager(load_entrypoints=True)
    loaded, errors = _load(paths_or_transcripts, pm)
    if not loaded:
        raise ValueError("no transcript could be loaded" + (f": {errors[0]}" if errors else ""))
    settings = settings or CompressionSettings(summary_threshold=DEFAULT_THRESHOLD_K)
    shares = observation_shares(loaded, measure=measure, pm=pm)
    by_agent = share_by_agent(shares)
    names = list(strategies or ())
    savings = (
        strategy_savings(loaded, names, settings=settings, measure=measure, limit_calls=limit_calls, pm=pm)
        if names
        else None
    )
    return Findings(
        shares=shares,
        by_agent=by_agent,
        savings=savings,
        comparison=compare_with_paper(by_agent, savings),
        settings=settings,
        measure=_counter(measure)[2],
        errors=errors,
    )
