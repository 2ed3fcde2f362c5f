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
THRESHOLD_K = 16  # summary_threshold in K tokens (T = 16,384 tokens): low enough that L2 runs
SHARE = 0.5  # the new cutoff rule keeps the recent messages that fit in SHARE × T2 tokens
# the mini-swe-agent runs of the shared set (relative to ../shared/transcripts); under CI four
RUNS = "raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs"
SMALL_RUNS = [
    "pytest-dev__pytest-6197",
    "astropy__astropy-13398",
    "sphinx-doc__sphinx-7440",
    "matplotlib__matplotlib-26466",
]
FOCUS = "matplotlib__matplotlib-26466.traj.json"  # the run shown call by call

# %% [markdown]
# # Write a plugin
#
# Every step of an ARS compression round is a [pluggy](https://pluggy.readthedocs.io) hook
# (`ctxlab/core/hookspecs.py`), and ARS's own behaviour is a set of plugins registered *last*, so a
# plugin of yours overrides a default just by implementing the same hook. A plugin imports what it
# needs from `ctxlab.sdk`: `hookimpl`, the types the hooks receive and return, and helpers. This
# notebook writes two small plugins, registers them, and compares them with the default on the
# same real runs:
#
# 1. a **cutoff rule** (`ctxlab_select_cutoff`): where L2 cuts the history;
# 2. an **estimator** (`ctxlab_estimate_message`): how many tokens a message costs, which decides
#    when a round starts.

# %%
import tempfile

import polars as pl

from ctxlab import CompressionMiddleware, CompressionSettings, describe_plugins
from ctxlab.analysis.export import save_figure
from ctxlab.analysis.plotting import plot_savings, plot_strategies
from ctxlab.analysis.report import strategy_totals
from ctxlab.core.files import default_backend
from ctxlab.replay import make_lab_manager, replay, replay_many
from ctxlab.sdk import (
    CutoffDecision,
    RegisterStrategy,
    StructuredSummarizer,
    hookimpl,
    message_text,
    valid_cut_positions,
)
from ctxlab.transcripts import load_many
from ctxlab.transcripts.locate import shared_dir

_ = pl.Config(tbl_rows=40, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=200, float_precision=2)

# %% [markdown]
# ## 1. A cutoff rule
#
# The default rule (`KeepRecentCutoff`) cuts as late as possible: L2 keeps exactly
# `summary_keep_messages` (10) recent messages, however small or large they are. The rule below
# keeps **as many recent messages as fit in a token budget** (`SHARE` × T2), and never fewer
# than `summary_keep_messages`: when the recent messages are small, more of them stay verbatim.
#
# A hook receives the effective messages and a `CutoffContext` (`keep_messages`, `estimate`,
# `target_tokens` = T2, ...), and returns a `CutoffDecision` whose `index` is where to cut
# (everything before it is summarized). `valid_cut_positions` says where a cut would not separate
# a tool call from its results (spec R9). Returning `CutoffDecision(None, ...)` means "no valid
# cutoff" (L2 falls back to the L1 view); returning `None` would defer to the default rule.


# %%
class TokenBudgetCutoff:
    """Keep the most recent messages that fit in `share` × T2 tokens (at least keep_messages)."""

    name = "token-budget-cutoff"

    def __init__(self, share: float = 0.5) -> None:
        self.share = share

    @hookimpl
    def ctxlab_select_cutoff(self, messages, ctx):
        ok = valid_cut_positions(messages)
        first = 2 if ctx.has_previous_summary else 1  # summarize at least one new message
        budget = self.share * ctx.target_tokens
        kept, best = 0, None
        for c in range(len(messages) - 1, first - 1, -1):  # walk back from the newest message
            kept += ctx.estimate(messages[c])
            if c > len(messages) - ctx.keep_messages:
                continue  # inside the keep_messages window
            if kept > budget and best is not None:
                break  # over budget: keep the last valid cut found
            if ok[c]:
                best = c
        return CutoffDecision(best, f"kept the recent messages within {budget:,.0f} tokens")


# %% [markdown]
# ## 2. An estimator
#
# The flat "4 characters per token" rule many tools use, in three lines. Its counts differ from
# the default character-class estimator's (lower on code, JSON and logs, about 3× lower on
# Chinese, higher on some prose), so compression rounds start at other calls. The comparison
# still measures every request with one shared estimator, so the saving columns stay comparable.


# %%
class FourCharsPerToken:
    name = "four-chars-per-token"

    @hookimpl
    def ctxlab_estimate_message(self, message):
        return 4 + len(message_text(message)) // 4


# %% [markdown]
# ## Register them
#
# **As plugins of one middleware**: `CompressionMiddleware(plugins=[...])`. Each middleware owns
# its plugin manager, so the plugin affects this instance only. `describe_plugins` lists what is
# loaded and which hooks each implements: the new rule is registered after the built-ins and runs
# first.

# %%
middleware = CompressionMiddleware(
    settings=CompressionSettings(summary_threshold=THRESHOLD_K),
    plugins=[TokenBudgetCutoff(SHARE)],
    summarizer=StructuredSummarizer(),  # offline; None: the agent's own model summarizes
    backend=default_backend(tempfile.mkdtemp(prefix="ctxlab-nb03-")),  # where offloads go
)
pl.DataFrame(
    [
        {"plugin": p.name, "source": p.source, "hooks": ", ".join(p.hooks)}
        for p in describe_plugins(middleware.plugin_manager)
    ]
)

# %% [markdown]
# **As named strategies**, for side-by-side comparison: a plugin implementing
# `ctxlab_register_strategies` registers a name and a factory returning the plugins that, on top of
# the ARS defaults, make up the strategy (`register` is typed: a wrong argument is refused, naming
# it). An installed package does the same through the `ctxlab` entry-point group, with the hook a
# top-level function of the module its entry point names; see `plugins/`.


# %%
class MyStrategies:
    @hookimpl
    def ctxlab_register_strategies(self, register: RegisterStrategy) -> None:
        register(
            "ars-token-budget",
            lambda settings: [TokenBudgetCutoff(SHARE)],
            "ARS, L2 keeps what fits SHARE × T2",
        )
        register(
            "ars-4chars", lambda settings: [FourCharsPerToken()], "ARS with a flat 4 characters per token"
        )


pm = make_lab_manager([MyStrategies()])
STRATEGIES = ["ars", "ars-token-budget", "ars-4chars"]

# %% [markdown]
# ## Compare with the default on the same runs

# %%
folder = shared_dir() / "transcripts" / RUNS
paths = [folder / name / f"{name}.traj.json" for name in SMALL_RUNS] if SMALL else [folder]
transcripts, errors = load_many(paths)
settings = CompressionSettings(summary_threshold=THRESHOLD_K)
result = replay_many(transcripts, STRATEGIES, settings=settings, pm=pm, progress=False)
calls = result.frame()
print(
    f"{len(transcripts)} transcripts, {calls.height:,} model calls, {len(errors) + len(result.errors)} problems"
)

# %% [markdown]
# Over all runs: the token-budget rule keeps more recent context verbatim, so a little less is
# saved; the flat estimator moves the start of each round, earlier on some runs and later on
# others (see the table per transcript). `unmatched_tool_pairs` stays 0: the new rule never cut
# between a tool call and its result. Runs whose requests never reach T show 0 everywhere.

# %%
strategy_totals(calls).select(
    "strategy",
    "calls",
    "sent_tokens_total",
    "saving_pct",
    "l1_rounds",
    "l2_rounds",
    "summarizer_input_tokens",
    "mean_retention",
    "mean_cache_reusable_share",
    "unmatched_tool_pairs",
)

# %%
result.summary().pivot(on="strategy", index="transcript", values="saving_pct").sort("transcript")

# %% [markdown]
# One run call by call: the flat estimator reaches T a few calls later than the default; after
# the L2 round, the token-budget rule keeps more recent messages, so its requests stay larger.

# %%
focus = next(label for label in calls["transcript"].unique(maintain_order=True) if label.endswith(FOCUS))
fig = plot_strategies(calls, focus, title=f"{focus}: the default vs two plugins")
save_figure(fig, "nb03_plugin")
fig

# %%
fig = plot_savings(
    calls,
    title=f"saving by strategy ({len(transcripts)} runs, T = {settings.entry_threshold_tokens:,} tokens)",
)
save_figure(fig, "nb03_savings")
fig

# %% [markdown]
# ## The plugin in a middleware instance
#
# A `CompressionMiddleware` instance can be replayed directly too: this is the middleware built
# above with `plugins=[TokenBudgetCutoff(...)]`, as it would run inside an agent. Its L2 rounds
# match the named strategy's on the same run; its saving is a little lower because an instance
# adds its read tool (`read_saved_output`, for the offloaded results) to every request, which the
# replay of a named strategy leaves out (the recorded agent never had it). Built with
# `read_tool=False`, the instance sends what the named strategy sends.

# %%
run = next(t for t in transcripts if t.name == FOCUS)
direct = replay(run, middleware, settings=settings)
without_read_tool = CompressionMiddleware(
    settings=CompressionSettings(summary_threshold=THRESHOLD_K),
    plugins=[TokenBudgetCutoff(SHARE)],
    summarizer=StructuredSummarizer(),
    backend=default_backend(tempfile.mkdtemp(prefix="ctxlab-nb03-")),
    read_tool=False,
)
bare = replay(run, without_read_tool, settings=settings)
named = result.summary().filter((pl.col("transcript") == focus) & (pl.col("strategy") == "ars-token-budget"))
pl.concat(
    [
        direct.summary().with_columns(pl.lit("instance, with its read tool").alias("strategy")),
        bare.summary().with_columns(pl.lit("instance, read_tool=False").alias("strategy")),
        named,
    ]
).select("transcript", "strategy", "calls", "saving_pct", "l2_rounds")
