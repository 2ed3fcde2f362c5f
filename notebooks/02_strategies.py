# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
# Parameters (papermill/nbmake style): CI=true selects the small size.
import os

SMALL = os.environ.get("CI") == "true"
THRESHOLD_K = 16  # summary_threshold in K tokens for every strategy (T = 16,384 tokens)
STRATEGIES = [
    "ars",
    "ars-fast",
    "ars-tiktoken",
    "masking",
    "hybrid",
    "langchain-summarization",
    "deepagents-summarization",
]
# the transcripts (relative to ../shared/transcripts): under CI a few long runs of different
# formats; otherwise every public run except the 200 short tau-bench runs, plus the bundled sample
SMALL_SET = [
    "raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json",
    "raw/opencode/session-ses_4313.md",
    "raw/deer-flow/web/public/replay/china-food-delivery.txt",
]
# the summary_l2_trigger_ratio sweep (coarser under CI)
RATIOS = [0.1, 0.4, 0.7, 1.0] if SMALL else [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
FOCUS = "pytest-dev__pytest-6197.traj.json"  # the run shown call by call
FOCUS_STRATEGIES = ["ars", "masking", "hybrid", "langchain-summarization"]  # its lines

# %% [markdown]
# # Strategies side by side
#
# The same recorded runs, replayed call by call through several compression strategies
# (`ctxlab.replay.engine.replay_many`). Each strategy is a name registered by a plugin
# (`ctxlab_register_strategies`): ARS itself and its estimator variants, observation masking,
# a masking + summary hybrid, and LangChain's and DeepAgents' own summarization middlewares as
# baselines. All of them get the same settings, and every token number below is measured with one
# estimator (the default character-class estimator), whatever the strategy uses internally, so
# the columns compare like with like.
#
# The entry threshold is lowered to `summary_threshold` = 16 (T = 16,384 tokens): with the
# default 100 K almost none of the public runs would be compressed at all (see notebook 01).

# %%
import polars as pl

from ctxlab import CompressionSettings
from ctxlab.analysis.export import save_figure
from ctxlab.analysis.plotting import (
    plot_recall_scatter,
    plot_run_heatmap,
    plot_savings,
    plot_strategies,
    plot_sweep,
)
from ctxlab.analysis.report import strategy_totals
from ctxlab.analysis.verdicts import executive_summary, per_run_table
from ctxlab.replay import make_lab_manager, replay_many, strategies, sweep
from ctxlab.replay.paired import comparison_table
from ctxlab.replay.sources import data_provenance
from ctxlab.replay.stats import pooled_runs
from ctxlab.transcripts import load_many
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT, shared_dir

# four decimals: a cost per call is a fraction of a cent (two would print 0.01 for every strategy)
_ = pl.Config(tbl_rows=50, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=220, float_precision=4)

# %% [markdown]
# ## The strategies
#
# Every registered strategy (built-in and from the packages in `plugins/`). Those named in
# `STRATEGIES` are compared; a name that is not installed is reported here and left out.

# %%
pm = make_lab_manager(load_entrypoints=True)
registered = strategies(pm)
chosen = [s for s in STRATEGIES if s in registered]
missing = [s for s in STRATEGIES if s not in registered]
print("not installed, left out:", missing or "none")
pl.DataFrame(
    {
        "strategy": list(registered),
        "compared": [n in chosen for n in registered],
        "description": [s.description for s in registered.values()],
    }
)

# %% [markdown]
# ## The transcripts: one selection for every table and figure
#
# The runs are chosen once, here, and every table, figure, sweep and frontier below uses exactly
# these: the **real** recorded runs (`ctxlab.replay.sources.data_provenance`). The bundled sample
# is loaded too, to show the provenance it is left out by: a scripted run is not an agent's, and
# mixed into one table but not another it would make two numbers of the same strategy disagree.

# %%
raw = shared_dir() / "transcripts" / "raw"
if SMALL:
    loaded, load_errors = load_many([shared_dir() / "transcripts" / p for p in SMALL_SET], pm=pm)
else:
    everything, load_errors = load_many([raw, SAMPLE_TRANSCRIPT], pm=pm)
    loaded = [t for t in everything if t.format != "tau_bench"]
transcripts = [t for t in loaded if data_provenance(t) == "real"]
left_out = [f"{t.name} ({data_provenance(t)})" for t in loaded if data_provenance(t) != "real"]
print(
    f"{len(transcripts)} real transcripts, {len(load_errors)} files not loaded; left out: {left_out or 'none'}"
)
pl.DataFrame(
    {
        "transcript": [t.name for t in transcripts],
        "format": [t.format for t in transcripts],
        "messages": [len(t.messages) for t in transcripts],
    }
)

# %% [markdown]
# ## Replay every transcript × strategy

# %%
settings = CompressionSettings(summary_threshold=THRESHOLD_K)
result = replay_many(transcripts, chosen, settings=settings, pm=pm, progress=False)
calls = result.frame()
print(f"{calls.height:,} model calls replayed, {len(result.errors)} runs failed")
for issue in result.errors:
    print(" -", issue)

# %% [markdown]
# ### The verdict first
#
# What the run supports, computed from it (`ctxlab.analysis.verdicts.executive_summary`, the
# same lines `report.md` and the terminal open with): what wrote the summaries, how many runs
# reached T (and, per strategy, by its own trigger), the provider's window and the unrecorded
# prefix, then per objective either the best strategy or "no detectable difference", each mean
# over the runs the strategy compressed beside the mean over all runs, with its interval, and
# the warnings. Every run here is real (the selection above), so the pooled statements and the
# tables below are over the same runs.

# %%
print("\n".join(executive_summary(result).plain()))
pool = pooled_runs(result.summary())
assert not pool.left_out, "one selection: every run replayed is in every table"
print(f"\npooled over the {pool.label} ({result.summary()['transcript'].n_unique()} runs)")

# %% [markdown]
# ### One row per strategy
#
# Over all transcripts: tokens sent vs raw (the uncompressed requests), `saving_pct`
# = 1 − sent / raw, the compression rounds by level, the summarizer's tokens (L2 summaries; the
# offline structured summarizer stands in for a model here, and as it reports no usage, the
# baselines' summarizer calls are counted by a callback handler and their tokens estimated from
# the prompt and the summary), the middleware's mean overhead per call in milliseconds, the mean
# share of each request a provider's prompt cache could reuse from the previous call, and the
# mean *retention* (of the identifiers the agent went on to mention, the share still in its
# view). `unmatched_tool_pairs` must be 0: no view ever separated a tool call from its result.

# %%
totals = strategy_totals(calls).drop("max_view_tokens", "max_raw_tokens")
totals

# %% [markdown]
# ### Saving % per transcript
#
# The same saving, one row per transcript (a `pivot` of the per-run summary). Short runs that
# never reach T show 0 for every strategy.

# %%
result.summary().pivot(on="strategy", index="transcript", values="saving_pct").sort("transcript")

# %% [markdown]
# ### Per run, not only pooled
#
# A pooled saving (Σ sent / Σ raw) is dominated by the longest runs and says nothing of the runs
# that never reach T. Per strategy: runs whose own trigger fired (`reached` of `runs`) and runs
# it compressed; the per-run saving over the feasible calls (those whose uncompressed request fits
# the provider's window) as its mean over the compressed runs and over all runs, its median and
# interquartile range, the median over the runs that reached T, beside the pooled figure; the same
# for the cost saving with prompt caching.

# %%
per_run = per_run_table(result)
per_run

# %%
ars_row = per_run.filter(pl.col("strategy") == "ars").row(0, named=True)
print(
    f"ars over the {pool.label}: pooled saving {ars_row['saving_pooled_pct']:.1f} %, mean per run "
    f"{ars_row['saving_mean_pct']:.1f} % over {ars_row['runs']} runs and "
    f"{ars_row['saving_mean_compressed_pct'] or 0:.1f} % over the {ars_row['compressed']} it compressed"
)

# %%
fig = plot_savings(calls, threshold=settings.entry_threshold_tokens)
save_figure(fig, "nb02_savings")
fig

# %% [markdown]
# ### Every run × strategy
#
# The saving of each run under each strategy ("no compression" is 0 by definition). A row of
# zeros is a run that never reached T.

# %%
fig = plot_run_heatmap(calls)
save_figure(fig, "nb02_heatmap")
fig

# %% [markdown]
# ### Paired comparisons
#
# The strategies replay the same runs, so they are compared run by run: the mean per-run
# difference A − B and its 95 % percentile-bootstrap interval over runs (2,000 resamples, seed
# 0; `ctxlab.replay.stats`). An interval that holds 0 is no evidence of a difference. `differ`
# counts the runs where A and B differ (the others are ties); with fewer than 6 no difference is
# called and `low`/`high` stay empty. `mean_a`, `mean_b` and `difference` are weighted alike
# (source-balanced over the transcripts' formats), so `mean_a − mean_b` is the difference; the
# plain means are `plain_a`, `plain_b`.

# %%
comparison_table(result.summary(), "saving_pct_feasible").filter(pl.col("a") == "no compression")

# %%
comparison_table(result.summary(), "cost_usd", strategies=["ars", "masking", "hybrid"])

# %%
vs = result.compare("ars", "masking", measure="cost_usd")
print(vs)

# %% [markdown]
# ### One run, call by call
#
# Tokens sent per model call of one long run, one line per strategy (the dashed line is the
# uncompressed request; the ARS estimator variants are left out, they overlap `ars`).
# Summarizing strategies drop sharply at each L2 round and grow again; masking replaces old tool
# results by a placeholder: it grows more slowly but never drops.

# %%
focus = next(label for label in calls["transcript"].unique(maintain_order=True) if label.endswith(FOCUS))
fig = plot_strategies(calls, focus, strategies=[s for s in FOCUS_STRATEGIES if s in chosen])
save_figure(fig, "nb02_strategies")
fig

# %% [markdown]
# ## What it costs, and what each summary kept
#
# Tokens saved is not what a run costs. Providers cache the prefix a request shares with earlier
# ones and bill it at a discount (`ctxlab.replay.cost`): a strategy that rewrites the start of
# its view every call loses that discount, and with explicit caching (Anthropic) it pays the
# cache-write premium again and again. Each call is priced with the provider family's caching
# rule against the cache the run's earlier calls left, the summarizer's calls included (as
# uncached calls); `raw_cost_usd` is the uncompressed requests under the same caching, the
# reference to beat. The price row (`--price-model`, default Claude Sonnet 4.5) is named with
# the day its figures were read and their source; `ctxlab/replay/prices.toml` has the others.
#
# A summary can also drop what the agent needs later. *Identifier recall* (`ctxlab.replay.fidelity`):
# of the identifiers (paths, names, error types, numbers) that later assistant turns used and
# that stood only in the span an L2 round summarized, the share the summary carried. *Span
# recall* is the same share over every identifier of the span. Both are pooled over a strategy's
# rounds; strategies without L2 rounds have none.

# %%
from ctxlab.analysis.costs import cost_table
from ctxlab.analysis.plotting import plot_cost_per_call

price = result.price
print(price.label())
print(price.note)
cost_table(calls)

# %%
fig = plot_cost_per_call(calls, price_label=f"{price.key}, prices as of {price.as_of}")
save_figure(fig, "nb02_cost")
fig

# %% [markdown]
# ### Saving and cost against identifier recall
#
# One point per run and strategy with L2 rounds: what it saved (tokens, then dollars with
# caching) against the share of the needed identifiers its summaries carried. Up and to the
# right is better; a point below 0 costs more than no compression.

# %%
fig = plot_recall_scatter(calls)
save_figure(fig, "nb02_saving_vs_recall")
fig

# %%
fig = plot_recall_scatter(calls, y="cost_saving_pct")
save_figure(fig, "nb02_cost_vs_recall")
fig

# %% [markdown]
# ### Summary fidelity round by round
#
# One row per L2 round (as in `summaries.jsonl`), with the needed identifiers the summary
# dropped. The offline structured summarizer keeps paths and names it finds in the messages it
# summarizes; a real model (`summarizer_model=`) is measured the same way.

# %%
rounds = pl.DataFrame(
    [
        {
            "strategy": s["strategy"],
            "transcript": s["transcript"],
            "call": s["call_index"],
            "span_recall": s.get("span_recall"),
            "needed": s.get("needed_identifiers"),
            "needed_recall": s.get("needed_recall"),
            "dropped": ", ".join((s.get("dropped") or [])[:6]),
        }
        for s in result.summaries
    ],
    schema={
        "strategy": pl.String,
        "transcript": pl.String,
        "call": pl.Int64,
        "span_recall": pl.Float64,
        "needed": pl.Int64,
        "needed_recall": pl.Float64,
        "dropped": pl.String,
    },
)
rounds.group_by("strategy", maintain_order=True).agg(
    pl.len().alias("rounds"),
    pl.col("span_recall").mean().alias("mean_span_recall"),
    pl.col("needed_recall").mean().alias("mean_needed_recall"),
)

# %%
rounds.sort("strategy", "transcript", "call").head(20)

# %% [markdown]
# ## Sweep: `summary_l2_trigger_ratio`
#
# T2 = T × `summary_l2_trigger_ratio` decides when the L1-trimmed view goes on to L2. A low ratio
# summarizes as soon as a round starts; a ratio of 1 lets L1 alone handle every round whose L1
# view fits under T. The ARS strategy is replayed on the same transcripts once per ratio, with
# every other setting unchanged.

# %%
curve = sweep(transcripts, "summary_l2_trigger_ratio", RATIOS, strategy="ars", settings=settings, pm=pm)
curve.select(
    "value",
    "T2",
    "saving_pct",
    "l1_rounds",
    "l2_rounds",
    "summarizer_input_tokens",
    "mean_retention",
    "errors",
)

# %%
fig = plot_sweep(
    curve, title=f"ARS on {len(transcripts)} transcripts, T = {settings.entry_threshold_tokens:,} tokens"
)
save_figure(fig, "nb02_sweep")
fig

# %% [markdown]
# ## Cost saving against identifier recall, on two price rows
#
# What a team deciding on compression asks first: how many dollars a strategy saves against no
# compression, and what its summaries keep of what the agent needed next (`needed_recall`, see
# the cost section). The frontier draws both, per run (small dots) and pooled per strategy (large
# dots), one panel per price row: Claude Sonnet 4.5 (explicit caching, a write premium) and
# GPT-4.1 (automatic caching). Up and to the right is better. `ars-extractive` is ARS with the
# offline extractive summarizer (no model call); `ars-cache` decides when to summarize by expected
# dollars under the run's price row (`price_model`, so each row is its own replay), keeps the last 2 messages and uses the extractive summarizer. The cost model is in
# `docs/cost-model.md`. The hollow markers with error bars are each strategy's mean per run with
# its 95 % bootstrap interval over the runs (`frontier_intervals`, the bootstrap of the paired
# comparisons above); the table gives them beside the pooled values, with how many runs there were
# and how many qualified for identifier recall (runs with a summarized span).

# %%
from ctxlab.analysis.frontier import frontier_table
from ctxlab.analysis.plotting import plot_frontier

FRONTIER_STRATEGIES = [
    s
    for s in ["ars", "ars-extractive", "ars-cache", "masking", "hybrid", "langchain-summarization"]
    if s in registered
]
PRICE_ROWS = ["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"]
by_price = {}
for row in PRICE_ROWS:
    priced = replay_many(transcripts, FRONTIER_STRATEGIES, settings=settings, pm=pm, price_model=row)
    by_price[row] = priced.frame()
frontier_table(by_price)

# %%
fig = plot_frontier(by_price)
save_figure(fig, "nb02_frontier")
fig
