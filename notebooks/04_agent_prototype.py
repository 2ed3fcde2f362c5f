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
N_FILES = 12 if SMALL else 24  # real source files the scripted agent reads, two per turn
THRESHOLD_K = 8  # summary_threshold in K tokens: T = 8 × 1024 tokens, small on purpose

# %% [markdown]
# # The middleware in an agent prototype
#
# This notebook wires `ctxlab.CompressionMiddleware` into a LangChain v1 agent
# (`langchain.agents.create_agent`) the way a prototype would, and shows what the middleware
# leaves behind:
#
# 1. the **`context_compression` events** streamed in LangGraph's `custom` stream mode
#    (spec R14) while the agent runs;
# 2. the **checkpointed `_summarization_event`** in a SQLite checkpoint (spec R11) — the
#    recoverable truth, readable after a restart;
# 3. the **effective messages** rebuilt from that event (`ctxlab.core.messages.effective_messages`):
#    what the model sees on the next call;
# 4. the **files** the middleware wrote: offloaded tool results and the conversation history.
#
# The chat model is fake (scripted tool calls, no API key, no network); the tool is real: it
# reads source files of the installed `langchain` package, so tool results are real, large texts.

# %%
import sqlite3
import tempfile
from pathlib import Path

import langchain
import polars as pl
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from ctxlab import SUMMARY_PROMPT_EN, CompressionMiddleware, CompressionSettings, to_sse
from ctxlab.analysis.report import events_frame, files_frame, messages_frame
from ctxlab.core.builtin.summarizers import StructuredSummarizer
from ctxlab.core.messages import effective_messages
from ctxlab.replay import scripted_tool_model

_ = pl.Config(tbl_rows=30, tbl_cols=-1, fmt_str_lengths=90, tbl_width_chars=200)

# %% [markdown]
# ## A real tool
#
# `read_source` returns the full text of a file of the installed `langchain` package. Files of
# `langchain/agents/middleware/` are 4–80 kB, far above the L1 limit of 300 tokens per tool
# result, so L1 will offload them.

# %%
LANGCHAIN_DIR = Path(langchain.__file__).parent


@tool
def read_source(path: str) -> str:
    """Read a source file of the installed langchain package (path relative to the package)."""
    return (LANGCHAIN_DIR / path).read_text(encoding="utf-8")


files = sorted(
    p.relative_to(LANGCHAIN_DIR).as_posix() for p in (LANGCHAIN_DIR / "agents" / "middleware").glob("*.py")
)
files = [f for f in files if not f.endswith("__init__.py")][:N_FILES]
files

# %% [markdown]
# ## A fake tool-calling model
#
# `scripted_tool_model` builds a small `BaseChatModel` whose `bind_tools` returns itself and
# whose every call returns the next scripted turn: here, two parallel `read_source` calls per
# turn, then a final answer.

# %%
turns = [[("read_source", {"path": f}) for f in files[i : i + 2]] for i in range(0, len(files), 2)]
model = scripted_tool_model(turns, say="Reading two more files (turn {i}).", final="I have read every file.")
len(turns), turns[0]

# %% [markdown]
# ## The agent: middleware, file backend, SQLite checkpointer
#
# Settings are deliberately small so that both levels happen within a few turns:
# T = 8 × 1024 = 8,192 tokens, T2 = 0.4 × T ≈ 3,277 tokens, 4 messages kept by L2, and the
# English summary prompt. The summarizer is ctxlab's offline `StructuredSummarizer` (the fake
# main model cannot summarize; a real agent would pass no `summarizer` and the agent's own model
# would summarize, spec R10). Files go to a DeepAgents `FilesystemBackend` in a temporary folder.

# %%
work = Path(tempfile.mkdtemp(prefix="ctxlab-nb04-"))
settings = CompressionSettings(
    summary_threshold=THRESHOLD_K,
    summary_keep_messages=4,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.4,
    summary_prompt=SUMMARY_PROMPT_EN,
)
middleware = CompressionMiddleware(
    settings=settings,
    backend=FilesystemBackend(root_dir=str(work / "files"), virtual_mode=True),
    summarizer=StructuredSummarizer(),
)
conn = sqlite3.connect(work / "checkpoints.sqlite", check_same_thread=False)
agent = create_agent(
    model,
    tools=[read_source],
    system_prompt="You read source code and report what you find.",
    middleware=[middleware],
    checkpointer=SqliteSaver(conn),
)
config = {"configurable": {"thread_id": "prototype"}}
settings.entry_threshold_tokens, settings.l2_threshold_tokens

# %% [markdown]
# ## Streaming: graph updates and `context_compression` events
#
# `stream_mode=["updates", "custom"]` yields `(mode, chunk)` pairs: `updates` are the graph's
# node outputs (`model`, `tools`), `custom` carries the middleware's events. Each compression
# round emits `started` (the estimate reached T) and `completed` with its level: `L1` (large tool
# results offloaded, no state change) or `L2` (a summary, a cutoff and a history file).

# %%
steps, events = [], []
question = {"messages": [{"role": "user", "content": "Survey LangChain's agent middleware sources."}]}
for mode, chunk in agent.stream(question, config, stream_mode=["updates", "custom"]):
    if mode == "custom" and chunk.get("type") == "context_compression":
        events.append(chunk)
        steps.append(f"event: {chunk['phase']} {chunk['level'] or ''}".strip())
    elif mode == "updates":
        steps.append("update: " + ", ".join(chunk))
print("\n".join(steps))

# %% [markdown]
# The events as a table: `tokens_before` is the estimate of the effective messages, `tokens_after`
# the estimate of the view actually sent; `threshold` and `l2_threshold` are T and T2 (tokens).

# %%
events_frame(events).select(
    "phase",
    "level",
    "tokens_before",
    "tokens_after",
    "threshold",
    "l2_threshold",
    "offloaded",
    "cutoff_index",
)

# %% [markdown]
# A front end receives the same events as Server-Sent Events named `context_compression`
# (spec R15); the last one, as a frame:

# %%
print(to_sse(events[-1])[:600])

# %% [markdown]
# ## The checkpointed `_summarization_event`
#
# SSE is only a notification; the truth is the private state key `_summarization_event` in the
# checkpoint. We read it back through a *new* connection to the SQLite file, as a restarted
# process would.

# %%
conn.close()
conn = sqlite3.connect(work / "checkpoints.sqlite", check_same_thread=False)
reader = create_agent(model, tools=[read_source], middleware=[middleware], checkpointer=SqliteSaver(conn))
state = reader.get_state(config).values
event = state.get("_summarization_event")
assert event is not None, "no L2 round happened: raise N_FILES or lower THRESHOLD_K"
{k: v for k, v in event.items() if k != "summary_message"}

# %% [markdown]
# The summary message the model will see in place of the summarized messages:

# %%
print(event["summary_message"].content)

# %% [markdown]
# ## Effective messages rebuilt from the event
#
# The state keeps every message (L2 never deletes history, spec R11); the model sees
# `[summary, *messages[cutoff_index:]]`. Token counts are the default estimator's.

# %%
effective = effective_messages(state["messages"], event)
print(
    f"state messages: {len(state['messages'])}, effective messages: {len(effective)}, "
    f"cutoff_index: {event['cutoff_index']}"
)
messages_frame(effective)

# %% [markdown]
# These are the messages *before* L1: on the next call L1 trims them again in a fresh copy
# (the tool results above 300 tokens are offloaded in the view only), so state and checkpoint
# always keep the full text (spec R6). For comparison, the full state history the checkpoint
# holds:

# %%
messages_frame(state["messages"]).select("i", "type", "tool_calls", "tokens")

# %% [markdown]
# ## Files written by the middleware
#
# Offloaded tool results (`/outputs/large_tool_results/<tool>-<sha256>.txt`, spec R6) and the
# conversation history of each L2 round (`/outputs/conversation_history/...`, spec R10), as the
# model sees their paths.

# %%
files_frame(work / "files")

# %%
history = (work / "files" / event["file_path"].lstrip("/")).read_text(encoding="utf-8")
print(history[:1200])

# %% [markdown]
# ## A second question after the restart
#
# A new process continues the thread from the checkpoint: the middleware rebuilds the effective
# messages from the checkpointed event, and a new L2 round summarizes the previous summary with
# the newer messages. Its `cutoff_index` is again a position in the *full* state messages
# (cumulative, spec R11).

# %%
sources = sorted(p.relative_to(LANGCHAIN_DIR).as_posix() for p in LANGCHAIN_DIR.rglob("*.py"))
more = [f for f in sources if f not in files and not f.endswith("__init__.py")][:8]
turns2 = [[("read_source", {"path": f}) for f in more[i : i + 2]] for i in range(0, len(more), 2)]
model2 = scripted_tool_model(turns2, final="Second survey done.")
agent2 = create_agent(model2, tools=[read_source], middleware=[middleware], checkpointer=SqliteSaver(conn))
events2 = [
    chunk
    for mode, chunk in agent2.stream(
        {"messages": [{"role": "user", "content": "Now read a few more langchain modules."}]},
        config,
        stream_mode=["updates", "custom"],
    )
    if mode == "custom"
]
events_frame(events2).select("phase", "level", "tokens_before", "tokens_after", "cutoff_index")

# %%
state2 = agent2.get_state(config).values
event2 = state2["_summarization_event"]
print(
    f"state messages: {len(state2['messages'])}, cutoff_index: {event['cutoff_index']} -> {event2['cutoff_index']}"
)
print(event2["summary_message"].content[:900])

# %%
conn.close()
