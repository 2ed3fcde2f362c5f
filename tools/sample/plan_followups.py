"""Turns 2 to 4 of the scripted plan: summarization compared, the sync/async table, and how
tool calls stay paired with their results; each adds a section to the report."""

from __future__ import annotations

from tools.sample.calls import edit, python, read, run, window
from tools.sample.probes import (
    PY_ASYNC_EXPERIMENT,
    PY_SUMMARIZATION_SIGNATURES,
    PY_SYNC_ASYNC_BATCH,
    PY_TRIM_EXPERIMENT,
)
from tools.sample.sandbox import WORKSPACE
from tools.sample.script import (
    DA,
    DA_CLASSES,
    DA_MODULES,
    DA_SUMM,
    FACTORY,
    LC_CLASSES,
    LC_MODULES,
    LC_SUMM,
    MSG_UTILS,
    MW,
    OPEN_QUESTIONS,
    REPORT,
    TYPES,
    Plan,
    Turns,
    add_section,
    around,
    line_of,
    lines_of,
    per_module,
    steps,
)
from tools.sample.sections import pairing_section, summarization_section, sync_async_section

__all__ = ["turn_pairing", "turn_summarization", "turn_sync_async"]


def turn_summarization(t: Turns) -> Plan:
    _, signatures, lc_defs, *_, da_defs, _ = yield from steps(
        t,
        (
            "I'll read both summarization middlewares. Sizes and the signatures of both constructors first.",
            run(f"wc -l -c {LC_SUMM} {DA_SUMM}"),
            python(PY_SUMMARIZATION_SIGNATURES),
        ),
        (
            "LangChain's version: where the trigger is evaluated and where the cutoff is chosen.",
            run(f"grep -n 'def \\|trigger\\|keep' {LC_SUMM}"),
        ),
        (
            "Reading LangChain's `SummarizationMiddleware` in full; it is under the tool's output cap.",
            read(LC_SUMM),
        ),
        around(
            LC_SUMM,
            "def _should_summarize",
            "def _determine_cutoff_index",
            "def _partition_messages",
            "def before_model",
            text="Zooming in on `{name}` (line {line}) to quote it precisely.",
            size=16,
            of=-2,
        ),
        (
            "Now DeepAgents' version, which is more than twice as long. Its definitions first.",
            run(f"grep -n '^class \\|^def \\|    def ' {DA_SUMM}"),
        ),
        (
            "Reading the first part of the DeepAgents module (settings, defaults, state).",
            read(DA_SUMM, offset=1, limit=520),
        ),
    )
    middle = line_of(da_defs, "def wrap_model_call", 900)
    *_, prof = yield from steps(
        t,
        (
            f"`wrap_model_call` is at line {middle}: unlike LangChain's, DeepAgents summarizes inside the "
            "model call rather than in `before_model`. Reading the part before it.",
            read(DA_SUMM, offset=max(1, middle - 520), limit=520),
        ),
        (
            "And the model-call hooks themselves.",
            read(DA_SUMM, offset=max(1, middle - 10), limit=480),
        ),
        (
            "The offloading is the part that matters most for us. Where is the history written, and what "
            "path does it use?",
            run(
                f"grep -n 'history_path_prefix\\|conversation_history\\|def _offload\\|backend.write\\|awrite' {DA_SUMM}"
            ),
        ),
        around(
            DA_SUMM,
            "conversation_history",
            "def _offload",
            "backend.write",
            "awrite",
            text="Reading the lines around `{needle}` (line {line}).",
            before=4,
        ),
        (
            'The trigger: DeepAgents accepts the same `("tokens", n)` / `("fraction", f)` / '
            '`("messages", n)` tuples. Let me find the defaults it computes from the model profile.',
            run(
                f"grep -n 'fraction\\|max_input_tokens\\|_compute_summarization_defaults\\|def _get_profile' {DA_SUMM}"
            ),
        ),
    )
    *_, summary_msg = yield from steps(
        t,
        (
            "Reading the profile-based defaults.",
            window(
                DA_SUMM,
                line_of(prof, "def _compute_summarization_defaults", line_of(prof, "max_input_tokens", 1)),
                size=18,
            ),
        ),
        (
            "And the argument truncation (DeepAgents' counterpart of ARS L1 for `write_file`/`edit_file`).",
            run(f"grep -n 'truncate_args\\|max_length\\|def _truncate' {DA_SUMM}"),
        ),
        around(DA_SUMM, "def _truncate", "truncate_args", "max_length", text="Reading the `{needle}` lines."),
        (
            "How does DeepAgents mark an offloaded result so that it is not offloaded twice? Searching "
            "across the middleware package.",
            run(f"grep -rn 'already\\|_evicted\\|offloaded' {DA}"),
        ),
        (
            "Quick check of the summary message format: is it a HumanMessage or a SystemMessage, and is it "
            "tagged?",
            run(f"grep -n 'HumanMessage(\\|lc_source\\|SUMMARY_PREFIX\\|additional_kwargs' {DA_SUMM}"),
        ),
    )
    yield from steps(
        t,
        (
            "Reading where the summary message is built.",
            window(DA_SUMM, line_of(summary_msg, "HumanMessage(", 1), before=6, size=14),
        ),
        (
            "I have what I need. Adding the comparison section to the report.",
            add_section(summarization_section(signatures, lc_defs, da_defs)),
        ),
        (
            "Checking the section landed where intended.",
            run(f"grep -n '^## ' workspace/{REPORT}"),
        ),
    )
    yield t.say(
        "Added section 5, *Summarization: LangChain vs DeepAgents*. In short:\n\n"
        "- **LangChain** summarizes in `before_model`: when the trigger fires (tokens, fraction of the "
        "profile's window, or message count) it picks a cutoff that keeps the last `keep` messages, "
        "replaces everything before with one summary message (`RemoveMessage(REMOVE_ALL_MESSAGES)` + "
        "summary + kept tail) and **rewrites state**. Nothing is offloaded.\n"
        "- **DeepAgents** summarizes inside `wrap_model_call`, keeps the full history in state, records "
        "a `_summarization_event` (cutoff index + summary), **offloads the evicted messages to a "
        "backend file** under `/conversation_history/`, and truncates old `write_file`/`edit_file` "
        "arguments first, which is very close to ARS's L1/L2 split.\n"
        "- Both derive defaults from the model profile's `max_input_tokens` when one is available."
    )


def turn_sync_async(t: Turns) -> Plan:
    lc_specs = [f"langchain.agents.middleware:{name}" for name in LC_CLASSES]
    da_specs = [f"deepagents.middleware:{name}" for name in DA_CLASSES]
    specs = lc_specs + da_specs
    rows: list[str] = []
    for i in range(0, len(specs), 4):
        batch = specs[i : i + 4]
        r = yield t.say(
            f"Computing sync (S) / async (A) overrides for classes {i + 1}–{i + len(batch)} of {len(specs)}.",
            python(PY_SYNC_ASYNC_BATCH.format(specs=batch)),
        )
        rows.extend(line for line in r[0].splitlines() if line.strip())
    experiment, factory_async = yield from steps(
        t,
        (
            "Now the key question: what does the agent do under `ainvoke` when a middleware only has a "
            "sync `wrap_model_call`? An experiment with a sync-only and a dual middleware.",
            python(PY_ASYNC_EXPERIMENT),
        ),
        (
            "Let me find the code path in the factory that produces that behaviour.",
            run(f"grep -n 'awrap_model_call\\|NotImplementedError\\|is not AgentMiddleware' {FACTORY}"),
        ),
    )
    line = line_of(factory_async, "awrap_model_call", 1)
    yield from steps(
        t,
        (
            f"Reading around line {line}.",
            window(FACTORY, line, before=6, size=18),
        ),
        (
            "And the base class's default `awrap_model_call`, to see whether it delegates to the sync one.",
            run(
                f"grep -n 'async def awrap_model_call\\|async def awrap_tool_call\\|async def abefore_model' {TYPES}"
            ),
        ),
        around(
            TYPES,
            "async def awrap_model_call",
            "async def awrap_tool_call",
            text="Reading the default `{name}` body.",
            before=0,
            size=18,
        ),
    )

    def async_defs(mod: str, path: str, grep_output: str) -> Plan:
        found = lines_of(grep_output, "async def a")
        if found:
            text = (
                f"`{mod}.py` has {len(found)} async definition(s), the first at line {found[0]}. "
                "Reading it to see whether it shares code with the sync hook or re-implements it."
            )
        else:
            found = [1]
            text = (
                f"`{mod}.py` has no async definitions at all, so every hook it has runs through the "
                "base class's async defaults. Reading the module header to confirm what it imports."
            )
        yield t.say(text, window(path, found[0], before=1, size=20 if path.startswith(f"{MW}/") else 16))

    for folder, modules, size in ((MW, LC_MODULES, 2), (DA, DA_MODULES, 3)):
        yield from per_module(
            t,
            folder,
            modules,
            size,
            "grep -n 'async def a'",
            lambda _k, group: (
                "Cross-checking the computed table against the source: async definitions in "
                + " and ".join(f"`{m}`" for m in group)
                + "."
            ),
            async_defs,
        )
    yield from steps(
        t,
        (
            "Cross-check from the source: number of async hook definitions per LangChain module.",
            run(f"grep -c 'async def a' {MW}/*.py"),
        ),
        (
            "And the same for DeepAgents.",
            run(f"grep -c 'async def a' {DA}/*.py"),
        ),
        (
            "Two of the DeepAgents middlewares implement only some async hooks; checking which by name.",
            run(
                f"grep -n 'async def a\\(before\\|after\\|wrap\\)' {DA}/memory.py {DA}/skills.py {DA}/subagents.py"
            ),
        ),
        (
            "Adding the sync/async table to the report.",
            add_section(sync_async_section(rows, experiment)),
        ),
        (
            "Verifying the table renders as intended (first rows).",
            run(f"grep -n -A 6 'Sync and async' workspace/{REPORT}"),
        ),
    )
    yield t.say(
        "Added section 6 with a table of every built-in middleware in both packages, sync (S) vs "
        "async (A) per hook.\n\n"
        "- Node-style hooks (`before_*`/`after_*`) without an async twin are **run in a thread** under "
        "`ainvoke`; that works, but blocks nothing and costs a thread hop.\n"
        "- A wrap-style hook **without** an async twin is the risky case: see the experiment output "
        "in the report for what the installed version does.\n"
        "- For our compression middleware: implement both `wrap_model_call` and `awrap_model_call` "
        "(sharing one pure compression function), and run the summarizer with `ainvoke` on the async "
        "path."
    )


def turn_pairing(t: Turns) -> Plan:
    hits, *_, trim_defs = yield from steps(
        t,
        (
            "Where do the middlewares reason about tool-call/result pairs? Searching both packages for "
            "the usual helpers.",
            run(f"grep -rn 'tool_call_id' {LC_SUMM} {DA_SUMM} {DA}/patch_tool_calls.py"),
            run(f"grep -n 'def _find_safe_cutoff\\|def _is_safe_cutoff\\|def _cutoff\\|safe' {LC_SUMM}"),
        ),
        around(
            LC_SUMM,
            "def _find_safe_cutoff",
            "def _is_safe_cutoff",
            "safe",
            text="Reading LangChain's `{name}` logic.",
            size=18,
        ),
        (
            "DeepAgents' equivalent.",
            run(f"grep -n 'safe\\|AIMessage\\|ToolMessage' {DA_SUMM}"),
        ),
        around(
            DA_SUMM,
            "safe",
            "ToolMessage",
            "AIMessage",
            text="Reading DeepAgents' summarization around `{needle}`.",
            before=4,
            size=16,
        ),
        (
            "`trim_messages` in langchain_core is what many users reach for instead; reading its "
            "implementation of the `last` strategy.",
            run(
                f"grep -n 'def trim_messages\\|def _last_max_tokens\\|def _first_max_tokens\\|start_on\\|end_on' {MSG_UTILS}"
            ),
        ),
    )
    tm = line_of(trim_defs, "def _last_max_tokens", line_of(trim_defs, "def trim_messages", 1))
    _, trim = yield from steps(
        t,
        (
            "Reading the `last`-strategy helper and its neighbourhood in full.",
            read(MSG_UTILS, offset=max(1, tm - 250), limit=420),
        ),
        (
            "An experiment: does `trim_messages` keep an AIMessage with two tool calls together with "
            "both ToolMessages at different budgets?",
            python(PY_TRIM_EXPERIMENT),
        ),
    )
    yield from steps(
        t,
        (
            "And `PatchToolCallsMiddleware`'s role: it repairs dangling tool calls (calls without a "
            "result) before the model sees them. Where is it applied?",
            run(f"grep -n 'def before_agent\\|def wrap_model_call\\|ToolMessage(' {DA}/patch_tool_calls.py"),
        ),
        (
            "Writing the pairing section.",
            add_section(pairing_section(hits, trim)),
        ),
        (
            "Reading the whole report once more before summarizing it.",
            read(f"{WORKSPACE}/{REPORT}"),
        ),
        (
            "Renumbering: the open-questions section should come last with its own number.",
            edit(REPORT, OPEN_QUESTIONS, "## 9. Open questions"),
        ),
        (
            "Final size of the deliverables.",
            run(
                "wc -c workspace/report/middleware_survey.md workspace/notes/01_hooks_and_factory.md workspace/notes/02_builtin_middleware.md"
            ),
        ),
    )
    yield t.say(
        "Added section 7 on tool-call/result pairing. Summary of the whole report "
        f"(`{REPORT}`):\n\n"
        "1. **Hooks**: four node-style hooks and two wrap-style hooks, each with an async twin; "
        "decorators build middleware classes from functions.\n"
        "2. **Wiring and order**: `before_*` in list order, `after_*` reversed, first middleware "
        "outermost around the model and tool calls; jumps via `can_jump_to`.\n"
        "3. **Built-ins**: an inventory of which middleware uses which hook, with line references.\n"
        "4. **DeepAgents**: its fixed stack, the filesystem middleware's large-result eviction, "
        "sub-agents as a `task` tool.\n"
        "5. **Summarization**: LangChain rewrites state in `before_model`; DeepAgents keeps state, "
        "records an event and offloads history to files, after truncating old file-tool arguments.\n"
        "6. **Sync/async**: a table per hook; implement both variants of wrap-style hooks.\n"
        "7. **Pairing**: both summarizers move the cutoff so that an AIMessage and all its "
        "ToolMessages fall on the same side; `trim_messages` only guarantees it with `start_on`/"
        "`end_on`; DeepAgents patches dangling calls.\n\n"
        "For our middleware the DeepAgents design is the closer model: keep state, offload, record "
        "an event, and choose cutoffs over whole call/result groups."
    )
