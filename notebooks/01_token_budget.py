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
# the real run: the longest mini-swe-agent transcript of the shared set (relative to
# ../shared/transcripts); see ctxlab.transcripts.locate.LONG_MINI_SWE_AGENT_RUN
RUN = "raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json"
SCALED_THRESHOLD_K = 32  # summary_threshold for a run that never reaches the default 100 K
SAMPLE_CALLS = 160 if SMALL else None  # model calls of the bundled sample to replay (None: all 225)
SHOW_EXPLORER = True  # build the interactive explorer at the end

# %% [markdown]
# # Token budget of one run
#
# A compression strategy decides, before every model call, what the model receives. This
# notebook replays a recorded agent run call by call through ctxlab's ARS strategy
# (`ctxlab.replay.engine.replay`: the real `CompressionMiddleware`, fed the transcript one model call at
# a time, no model and no network) and shows for each call:
#
# * the **request size split by part**: system message + tool schemas, user, assistant, tool
#   results, summary (stacked);
# * the **thresholds**: T = `summary_threshold` × 1024 tokens, where a compression round starts,
#   and T2 = T × `summary_l2_trigger_ratio`, above which the L1-trimmed view goes on to L2;
# * the calls where **L1** (large tool results offloaded to files, a preview kept) and **L2**
#   (older history summarized behind a cutoff) ran;
# * **what was offloaded** (paths and sizes) and **the summary** written at each L2 round;
# * **what the model actually received** at any call: the raw and the sent view side by side
#   (the call inspector).
#
# Token counts are estimates by ctxlab's default character-class estimator, the same one that
# triggers compression (spec R16).

# %%
import tempfile

import polars as pl

from ctxlab import CompressionSettings
from ctxlab.analysis.export import save_figure
from ctxlab.analysis.plotting import budget_figure
from ctxlab.analysis.report import offloads_frame, rounds_frame, summaries_text
from ctxlab.replay import replay
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT, transcript_path

_ = pl.Config(tbl_rows=16, tbl_cols=-1, fmt_str_lengths=100, tbl_width_chars=180)

# %% [markdown]
# ## A real mini-swe-agent run
#
# `pytest-dev__pytest-6197` is a real SWE-bench Verified run of mini-swe-agent with Gemini 3 Pro:
# 92 model calls; the agent runs one shell command per turn and its output comes back as the next
# user message (ctxlab marks those as *observations*, treated like tool results).

# %%
run = load_transcripts(transcript_path(RUN))[0]
print(f"{run.name}: {len(run.messages)} messages, format {run.format}, model {run.model}")

# %% [markdown]
# ### With the ARS defaults
#
# T = 100 × 1024 = 102,400 tokens. This run's largest request (printed below, measured by the
# replay) stays below T (the orange dash-dot line) for the whole run, so under the defaults
# **nothing is compressed** and every call is sent as recorded (sent = raw). T2 (red dotted) only
# matters once a round has started.

# %%
defaults = replay(run, "ars")
peak = defaults.frame()["raw_tokens"].max()
print(f"largest request: {peak:,} tokens; T = {defaults.settings.entry_threshold_tokens:,} tokens")
defaults.summary().select(
    "transcript", "calls", "raw_tokens_total", "saving_pct", "l1_rounds", "l2_rounds", "max_raw_tokens"
)

# %%
fig = budget_figure(defaults.frame(), title=f"{run.name}: ARS defaults (T = 100 K)")
save_figure(fig, "nb01_budget_defaults")
fig

# %% [markdown]
# ### With the entry threshold scaled to the run
#
# Same strategy, every default kept except `summary_threshold` = 32 (T = 32,768 tokens,
# T2 = 0.4 × T = 13,107 tokens). In the top panel the orange band (tool results, i.e. command
# output) and the blue band (assistant turns) grow until the request reaches T; then the round
# runs L1 (offload large outputs) and, as the L1 view is still above T2, L2: the history before
# the cutoff becomes one summary message (purple) and the request drops to the kept messages.

# %%
settings = CompressionSettings(summary_threshold=SCALED_THRESHOLD_K)
# out_dir + write_views: the run folder keeps every call's raw and sent view (for the inspector)
run_dir = tempfile.mkdtemp(prefix="ctxlab-nb01-")
scaled = replay(run, "ars", settings=settings, out_dir=run_dir, write_views=True)
calls = scaled.frame()
scaled.summary().select(
    "calls",
    "raw_tokens_total",
    "sent_tokens_total",
    "saving_pct",
    "l1_rounds",
    "l2_rounds",
    "summarizer_input_tokens",
    "summarizer_output_tokens",
)

# %%
fig = budget_figure(calls, title=f"{run.name}: ARS, summary_threshold = {SCALED_THRESHOLD_K}")
save_figure(fig, "nb01_budget")
fig

# %% [markdown]
# The calls where a compression round ran: `saved_pct` is the share of that call's raw request
# that was not sent; `cutoff_index` is where L2 cut (a position in the full message history);
# `summarizer_*` are the summarizer's tokens (the offline structured summarizer here: estimates).

# %%
rounds_frame(calls)

# %% [markdown]
# ### What L1 offloaded
#
# Each large tool result is written once to `/outputs/large_tool_results/<tool>-<sha256>.txt`
# (the path the model sees) and replaced in the view by that path and a preview of at most
# `summary_tool_result_token_limit` (300) tokens. `first_call` is the call that first offloaded
# it, `calls` how many calls sent the preview instead of the full text.

# %%
offloads = offloads_frame(scaled)
print(f"{offloads.height} files, {offloads['bytes'].sum():,} bytes")
offloads.select("path", "bytes", "first_call", "calls")

# %% [markdown]
# ### The summary at each L2 round
#
# The structured offline summarizer (task, files touched, commands run, errors seen, current
# state) stands in for the agent's model; each round summarizes the previous summary together
# with the newer messages, so facts survive from round to round. The summary is written in the
# language of the user's messages (`summary_language="auto"`): English here, header and labels
# alike; `summary_language="zh"` gives the seed's Chinese template.

# %%
print(summaries_text(scaled, max_chars=1800))

# %% [markdown]
# ### Call by call: what the model received
#
# `ctxlab.analysis.call_inspector.inspect_calls` shows one call at a time: the raw view (what an
# uncompressed agent would have sent) beside the sent view, each message marked kept, offloaded,
# truncated, summarized (behind the cutoff), summary or observation, with its tokens, the
# tokens per part, the summary in effect and the call's events. Move the slider (or pick a
# call: it opens at the first L2 round). `ctxlab show RUN_DIR` writes the same as one HTML page.

# %%
from ctxlab.analysis.call_inspector import inspect_calls

first_l2 = calls.filter(pl.col("level") == "L2")["call_index"].min()
inspector = inspect_calls(scaled, call=first_l2)
print(f"call {inspector.call.value}: {inspector.record()['row']['view_tokens']:,} tokens sent")
inspector

# %% [markdown]
# ## The bundled sample, with the ARS defaults
#
# `ctxlab/data/sample_run.json` is a long scripted agent run with real tools (it reads the
# installed LangChain sources and writes a report). Its requests do cross the default T, so the
# true ARS defaults act: from the first call above T, **L1** offloads the large file reads and
# keeps the view under T2 for a while (orange triangles); when the L1 view exceeds T2, **L2**
# summarizes (red diamond). Under CI only the first calls are replayed.

# %%
sample = load_transcripts(SAMPLE_TRANSCRIPT)[0]
sample_result = replay(sample, "ars", limit_calls=SAMPLE_CALLS)
sample_calls = sample_result.frame()
sample_result.summary().select(
    "calls", "raw_tokens_total", "sent_tokens_total", "saving_pct", "l1_rounds", "l2_rounds"
)

# %%
fig = budget_figure(sample_calls, title="bundled sample: ARS defaults")
save_figure(fig, "nb01_budget_sample")
fig

# %%
rounds_frame(sample_calls).filter(pl.col("level") == "L2")

# %%
offloads_frame(sample_result).select("path", "bytes", "first_call", "calls").head(10)

# %%
print(summaries_text(sample_result, max_chars=1500))

# %% [markdown]
# ## Explore
#
# `ctxlab.analysis.widgets.explore()` replays a run again whenever a setting changes and redraws this
# chart in place: pick a transcript and a strategy, move the sliders, switch the summary language
# (auto, Chinese, English). An invalid value (a threshold of 0, say) shows its error above
# the chart. Each change replays the whole run (a few seconds for the sample).

# %%
if SHOW_EXPLORER:
    from ctxlab.analysis.widgets import explore

    explorer = explore([run], settings=settings)
    print(f"explorer ready: {explorer.calls.height} calls, error: {explorer.error}")
explorer if SHOW_EXPLORER else None
