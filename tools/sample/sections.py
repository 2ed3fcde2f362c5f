"""The texts the scripted agent writes (notes files and report sections), built from what its
tools returned: Markdown strings, deterministic for the same tool outputs."""

from __future__ import annotations

from tools.sample.script import DA, FACTORY, MW, TYPES, grep_hits

__all__ = [
    "deepagents_stack_section",
    "notes_builtins",
    "notes_hooks",
    "pairing_section",
    "report_v1",
    "summarization_section",
    "sync_async_section",
]


def _block(text: str) -> str:
    return "```\n" + text.strip("\n") + "\n```"


def notes_hooks(
    versions: str, signatures: str, hook_lines: str, factory_defs: str, order: str, overrides: str
) -> str:
    factory = "\n".join(f"- `factory.py:{h}`" for h in grep_hits(factory_defs, limit=40))
    return f"""# Notes 1: hooks and the agent factory

## Versions
{_block(versions)}

## Hook methods on `AgentMiddleware` (`{TYPES}`)
{_block(hook_lines)}

Runtime view (parameter names; sync/async):
{_block(signatures)}

Two families:
- node-style: `before_agent`, `before_model`, `after_model`, `after_agent`. Each becomes its own
  graph node named `<MiddlewareName>.<hook>`; it receives `(state, runtime)` and returns a state
  update dict or `None`. A hook decorated with `hook_config(can_jump_to=[...])` may return
  `{{"jump_to": "model" | "tools" | "end"}}`.
- wrap-style: `wrap_model_call(request, handler)` and `wrap_tool_call(request, handler)`. They do
  not become nodes: the factory folds them into one callable around the model call (in the model
  node) and around each tool call (in `ToolNode`). `handler` is the rest of the chain; calling it
  zero times short-circuits, calling it twice retries.

## `factory.py` top-level definitions
{factory}

## Built-in overrides (bA before_agent, bM before_model, aM after_model, aA after_agent,
## wM wrap_model_call, wT wrap_tool_call)
{_block(overrides)}

## Order experiment (three probe middlewares A, B, C)
{_block(order)}
"""


def notes_builtins(table: dict[str, list[str]]) -> str:
    parts = ["# Notes 2: built-in LangChain middleware, hook by hook\n"]
    for mod, hits in table.items():
        parts.append(f"## `{MW}/{mod}.py`")
        parts.extend(f"- line {h}" for h in hits) if hits else parts.append("- (no hooks found)")
        parts.append("")
    return "\n".join(parts)


def _hook_rows(table: dict[str, list[str]]) -> str:
    """One Markdown table row per module: its ``def`` hits (from :func:`grep_hits`), each cut to
    60 characters, or ``-``."""
    return "\n".join(
        f"| `{mod}` | {'; '.join(h.split(': ', 1)[1][:60] for h in hits if ' def ' in ' ' + h) or '-'} |"
        for mod, hits in table.items()
    )


def report_v1(
    versions: str, order: str, overrides: str, lc: dict[str, list[str]], da: dict[str, list[str]]
) -> str:
    lc_rows = _hook_rows(lc)
    da_rows = _hook_rows(da)
    return f"""# How LangChain v1 agent middleware works

Survey of the installed packages:
{_block(versions)}

## 1. The hook surface

`AgentMiddleware` (`{TYPES}`) defines six hooks, each with an async twin prefixed `a`:

| hook | style | receives | returns |
|---|---|---|---|
| `before_agent` | node | `(state, runtime)` | state update or `None` |
| `before_model` | node | `(state, runtime)` | state update or `None`, may `jump_to` |
| `after_model` | node | `(state, runtime)` | state update or `None`, may `jump_to` |
| `after_agent` | node | `(state, runtime)` | state update or `None` |
| `wrap_model_call` | wrap | `(request: ModelRequest, handler)` | `ModelResponse` / `AIMessage` / `ExtendedModelResponse` |
| `wrap_tool_call` | wrap | `(request: ToolCallRequest, handler)` | `ToolMessage` or `Command` |

`ModelRequest.override(messages=..., system_message=..., tools=...)` returns a modified copy, so a
wrap-style hook can change what the model sees **without** touching graph state. To change state
from a wrap-style hook, return `ExtendedModelResponse(model_response, command=Command(update=...))`.

Node-style hooks can also be written as functions with the decorators `@before_model`,
`@after_model`, ... which build a middleware class around the function; `@hook_config(can_jump_to=
[...])` declares the jump destinations, which the factory turns into conditional edges.

## 2. How `create_agent` wires them (`{FACTORY}`)

- every node-style hook becomes a node `<Name>.<hook>`; before-nodes are chained in list order in
  front of the model node, after-nodes in reverse order behind it;
- `wrap_model_call` hooks are folded into one handler by `_chain_model_call_handlers`: the first
  middleware in the list is the outermost layer; the same for `wrap_tool_call`, executed inside
  `ToolNode`;
- the model-to-tools edge sends one `Send("tools", ...)` per pending tool call, so parallel tool
  calls run as separate tasks and their ToolMessages are appended in task order;
- middleware `state_schema`s are merged into the graph state, so private keys (for example a
  summarization event) live in the checkpoint.

## 3. Ordering

{_block(order)}

So for middleware `[A, B, C]`: `A.before_model → B.before_model → C.before_model →
A.wrap(B.wrap(C.wrap(model))) → C.after_model → B.after_model → A.after_model`.

## 4. Built-in middleware inventory

Which hooks each built-in overrides (computed by comparing with `AgentMiddleware`):
{_block(overrides)}

Hook definitions per LangChain module (line: definition):

| module | hooks |
|---|---|
{lc_rows}

DeepAgents modules (`{DA}`):

| module | hooks |
|---|---|
{da_rows}

## 5. Open questions

- Does any built-in middleware depend on running before or after another one (beyond its position
  in the list)?
- How do wrap-style hooks behave when the handler raises a context-overflow error?
"""


def deepagents_stack_section(stack: str) -> str:
    hits = "\n".join(f"- `graph.py:{h}`" for h in grep_hits(stack, limit=30))
    return f"""## 4b. The DeepAgents stack

`create_deep_agent` builds the list below (general-purpose sub-agent stack first, then the main
agent's) and passes it to `langchain.agents.create_agent` unchanged; user-supplied middleware is
appended after the built-ins, and a middleware whose `.name` equals a built-in's replaces it.

{hits}

Consequences for a compression middleware:
- it sits inside DeepAgents' own stack, so it sees the request **after** the filesystem and
  sub-agent middleware have added their tools and system-prompt sections, which counts against
  the context budget;
- DeepAgents already ships a `SummarizationMiddleware`; to replace it, our class must be named
  `SummarizationMiddleware` (a different name would run both);
- the filesystem middleware evicts large tool results to the backend on its own
  (`tool_token_limit_before_evict`), so a second offloading layer must recognise already-evicted
  content and not write it twice.
"""


def summarization_section(signatures: str, lc_defs: str, da_defs: str) -> str:
    lc = "\n".join(f"- `summarization.py:{h}`" for h in grep_hits(lc_defs, limit=24))
    da = "\n".join(f"- `deepagents/.../summarization.py:{h}`" for h in grep_hits(da_defs, limit=24))
    return f"""## 5. Summarization: LangChain vs DeepAgents

Constructors (from `inspect.signature`):
{_block(signatures)}

| | LangChain `SummarizationMiddleware` | DeepAgents `SummarizationMiddleware` |
|---|---|---|
| hook | `before_model` (node) | `wrap_model_call` (wrap) |
| trigger | `("tokens", n)`, `("fraction", f)` of the profile window, `("messages", n)`; any of a list | same tuple forms; defaults from the model profile |
| kept | `keep=("messages", 20)` by default, cutoff moved to a safe point | `keep` tuple; cutoff moved to a safe point |
| state | **rewritten**: remove-all + summary + kept messages | **kept**: a `_summarization_event` records cutoff + summary |
| offload | none | evicted messages appended to a markdown file under `/conversation_history/` in the backend |
| arguments | untouched | old `write_file`/`edit_file` arguments truncated before summarizing |
| summary message | `HumanMessage` with a fixed prefix | `HumanMessage` marked as a summary, with the history path |

Definitions in LangChain's module:
{lc}

Definitions in DeepAgents' module:
{da}

Take-aways for ARS: DeepAgents' "keep state, record an event, rebuild the effective messages on
every call" is the design to follow; it makes compression a pure function of (state, event) and
keeps the checkpoint complete. LangChain's rewrite loses the originals and is not reversible.
"""


def sync_async_section(rows: list[str], experiment: str) -> str:
    table = "\n".join(
        f"| `{r.split()[0]}` | {' '.join(r.split()[1:]).replace('[', ' `').replace(']', '`')} |"
        for r in rows
        if r.split()
    )
    return f"""## 6. Sync and async

S = sync hook overridden, A = async twin overridden, `-` = inherited default.
LangChain classes first, then DeepAgents.

| class | hooks |
|---|---|
{table}

What happens under `ainvoke` (experiment: a middleware with only a sync `wrap_model_call`, and one
with both):
{_block(experiment)}

Rules that follow:
- node-style hooks without an async twin are run in a worker thread on the async path;
- a wrap-style hook needs its async twin for `ainvoke`/`astream` (see the experiment above);
- the compression middleware must implement `wrap_model_call` **and** `awrap_model_call`, sharing
  one pure "compression round" function, and call the summarizer with `ainvoke` on the async path
  (history write and summary can then run concurrently with `asyncio.gather`).
"""


def pairing_section(hits: str, trim: str) -> str:
    refs = "\n".join(f"- `{h}`" for h in hits.splitlines()[:24])
    return f"""## 7. Keeping tool calls and results together

A provider rejects a request where a ToolMessage has no preceding AIMessage with a matching tool
call, and most reject an AIMessage whose tool calls are not all answered. Every cutoff or trim must
therefore treat "an AIMessage with tool calls + all its ToolMessages" as one unit.

- **LangChain `SummarizationMiddleware`** searches for a safe cutoff: if the tentative cutoff falls
  on a ToolMessage, it moves back to the AIMessage that issued the call (so the whole group is kept),
  and it checks every tool-call id of that AIMessage.
- **DeepAgents `SummarizationMiddleware`** applies the same rule over the effective messages and
  never separates a parallel group; the offloaded history contains whole groups.
- **`PatchToolCallsMiddleware`** (DeepAgents) repairs the other failure: an AIMessage whose tool
  call never got a result (for example after an interrupt) gets a synthetic ToolMessage saying the
  call was cancelled.
- **`trim_messages`** (langchain_core) does *not* reason about groups by itself; only
  `start_on="human"` (or `end_on`) keeps it from starting on an orphan ToolMessage:

{_block(trim)}

References (`tool_call_id` in the summarizers and the patcher):
{refs}

For ARS: group messages into units (AIMessage + its results, including results that arrive out of
order or interleave with another AIMessage's) before choosing any cutoff, and test the rule with
generated histories rather than a few examples.
"""
