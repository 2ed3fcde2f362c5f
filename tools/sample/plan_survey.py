"""Turn 1 of the scripted plan: the survey of LangChain's middleware hooks, ``create_agent``'s
wiring, the built-in middleware, DeepAgents' stack and LangGraph's side; ends with the report's
first version."""

from __future__ import annotations

from tools.sample.calls import edit, python, read, run, window, write
from tools.sample.probes import PY_HOOK_SIGNATURES, PY_ORDER_EXPERIMENT, PY_OVERRIDES, PY_VERSIONS
from tools.sample.sandbox import WORKSPACE
from tools.sample.script import (
    DA,
    DA_MODULES,
    FACTORY,
    HOOK_DEF_GREP,
    HOOK_GREP,
    LC_LARGE,
    LC_MODULES,
    LC_SUMM,
    MW,
    NOTES,
    REPORT,
    STATE_GRAPH,
    TOOL_NODE,
    TYPES,
    Plan,
    Turns,
    add_section,
    grep_hits,
    hook_list,
    line_of,
    lines_of,
    observe,
    per_module,
    steps,
)
from tools.sample.sections import deepagents_stack_section, notes_builtins, notes_hooks, report_v1

__all__ = ["turn_survey"]


def turn_survey(t: Turns) -> Plan:
    _, versions, _, top_defs = yield from steps(
        t,
        (
            "I'll start with a map of the middleware package and the exact versions installed, so that "
            "every line reference in the report is tied to a version.",
            run(f"ls {MW}"),
            python(PY_VERSIONS),
        ),
        (
            "The package is split into one module per built-in middleware plus `types.py`, which should "
            "hold the base class and the hook definitions. Sizes first, to plan my reads.",
            run(f"wc -l {FACTORY} {TYPES} {MW}/__init__.py {LC_SUMM} {MW}/human_in_the_loop.py"),
        ),
        (
            "`types.py` and `factory.py` are both large. I'll list the top-level definitions of `types.py` "
            "before reading it.",
            run(f"grep -n '^class \\|^def ' {TYPES}"),
        ),
    )
    class_line = line_of(top_defs, "class AgentMiddleware", 1)
    _, hook_lines = yield from steps(
        t,
        (
            f"`AgentMiddleware` is defined at line {class_line}. I'll read the first part of the file, "
            "which should cover the request/response types and the start of the base class.",
            read(TYPES, offset=1, limit=420),
        ),
        (
            "That covers `ModelRequest` (with `override()`), `ModelResponse` and the state types. Now the "
            "hook methods themselves: one grep for every hook name, sync and async.",
            run(f"{HOOK_DEF_GREP} {TYPES}"),
        ),
    )
    for first, second in (("before_agent", "before_model"), ("after_model", "after_agent")):
        yield t.say(
            f"Reading the `{first}` and `{second}` definitions side by side.",
            window(TYPES, line_of(hook_lines, f"def {first}(", class_line)),
            window(TYPES, line_of(hook_lines, f"def {second}(", class_line)),
        )
    for hook in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
        line = line_of(hook_lines, f"def {hook}(", class_line)
        yield t.say(
            f"`{hook}` is at line {line}; reading its signature and the first part of its docstring.",
            window(TYPES, line, size=16),
        )
        if hook == "awrap_model_call":
            yield t.say(
                "The async variant has its own default. Let me see what the default body does when a "
                "subclass only implements the sync one.",
                window(TYPES, line + 14, before=0, size=20),
            )
    signatures, decorator_defs = yield from steps(
        t,
        (
            "Let me confirm the hook surface at runtime rather than from the source alone: parameter "
            "names and whether each default is a coroutine.",
            python(PY_HOOK_SIGNATURES),
        ),
        (
            "Now the decorator helpers (`@before_model`, `@wrap_model_call`, ...) further down the file.",
            run(f"grep -n '^def \\|can_jump_to\\|hook_config' {TYPES}"),
        ),
    )
    deco = line_of(decorator_defs, "def before_model", 700)
    r = yield t.say(
        "Reading the decorator section, which shows how a plain function becomes a middleware class.",
        read(TYPES, offset=max(1, deco - 30), limit=420),
    )
    _, overrides, factory_defs = yield from steps(
        t,
        (
            "Decorators build a subclass on the fly with the function as the hook. `hook_config` carries "
            "`can_jump_to`. Let me read `hook_config` itself.",
            window(TYPES, line_of(r[0], "def hook_config", deco), size=18),
        ),
        (
            "Next, which built-in middleware overrides which hook. I'll compute it instead of grepping "
            "each file: compare every class's attributes with `AgentMiddleware`'s.",
            python(PY_OVERRIDES),
        ),
        (
            "Now `create_agent`. Top-level functions of `factory.py` first.",
            run(f"grep -n '^def \\|^async def ' {FACTORY}"),
        ),
    )

    # --- the factory ---------------------------------------------------------------------
    chain_model = line_of(factory_defs, "_chain_model_call_handlers", 100)
    chain_tool = line_of(factory_defs, "_chain_tool_call_wrappers", 200)
    create = line_of(factory_defs, "def create_agent", 600)
    *_, edges = yield from steps(
        t,
        (
            f"`_chain_model_call_handlers` (line {chain_model}) is what composes `wrap_model_call`. "
            "Reading the helpers at the top of the file in one go.",
            read(FACTORY, offset=1, limit=480),
        ),
        (
            "The composition is a right fold: the first middleware in the list becomes the outermost "
            "wrapper. Reading the tool-call chaining as well.",
            window(FACTORY, chain_tool, size=18),
        ),
        (
            "Both chains fold the same way. Now the body of `create_agent` where nodes and edges are added.",
            run(f"grep -n 'add_node\\|add_conditional_edges\\|add_edge' {FACTORY}"),
        ),
    )
    first_node = line_of(edges, "add_node", create)
    *_, after_nodes = yield from steps(
        t,
        (
            f"The graph is assembled from line {first_node} onwards. Reading the main part of "
            "`create_agent`, from the middleware bookkeeping to the node wiring.",
            read(FACTORY, offset=max(create, first_node - 260), limit=460),
        ),
        (
            "Let me read the rest of the wiring, where the before/after nodes are chained and the jump "
            "destinations are resolved.",
            read(FACTORY, offset=first_node + 200, limit=420),
        ),
        (
            "I want the exact spot where `after_model` nodes are chained in reverse order.",
            run(f"grep -n 'reversed\\|after_model_node\\|after_agent_node' {FACTORY}"),
        ),
    )
    rev = line_of(after_nodes, "reversed", first_node)
    *_, jumps = yield from steps(
        t,
        (
            f"`reversed(...)` at line {rev}. Reading the lines around it.",
            window(FACTORY, rev, before=4, size=16),
        ),
        (
            "And the conditional edges that implement `jump_to` (`model`, `tools`, `end`).",
            run(f"grep -n '_make_model_to_tools_edge\\|_make_tools_to_model_edge\\|jump_to' {FACTORY}"),
        ),
    )
    jump = line_of(jumps, "def _resolve_jump", line_of(jumps, "jump_to", first_node))
    r = yield t.say(
        "Reading the jump resolution helper.",
        window(FACTORY, jump, size=18),
    )
    *_, sends = yield from steps(
        t,
        (
            "Reading the model-to-tools edge, which decides whether tool calls are sent to the tool node.",
            window(FACTORY, line_of(r[0] + "\n" + edges, "def _make_model_to_tools_edge", jump), size=18),
        ),
        (
            "Tool calls are dispatched one `Send` per call, which is how parallel tool calls run as "
            "separate tasks. Let me confirm the exact line.",
            run(f"grep -n 'Send(' {FACTORY}"),
        ),
    )
    send = line_of(sends, "Send(", jump)
    *_, order = yield from steps(
        t,
        (
            "Reading around the `Send` dispatch.",
            window(FACTORY, send, before=8, size=14),
        ),
        (
            "The static picture is clear. Now an experiment to pin the runtime order: three probe "
            "middlewares, each logging `before_model`, `after_model` and entering/leaving "
            "`wrap_model_call`, on an agent with a fake model.",
            python(PY_ORDER_EXPERIMENT),
        ),
    )
    yield t.say(
        "Confirmed: `before_model` runs A→B→C, `wrap_model_call` nests A(B(C(model))), and "
        "`after_model` runs C→B→A. I'll write my first notes file before moving on to the built-in "
        "middleware.",
        write(
            f"{NOTES}/01_hooks_and_factory.md",
            notes_hooks(versions, signatures, hook_lines, factory_defs, order, overrides),
        ),
    )

    # --- the built-in middleware, one module at a time ------------------------------------
    hook_table: dict[str, list[str]] = {}

    def builtin(mod: str, path: str, grep_output: str) -> Plan:
        hook_table[mod] = grep_hits(grep_output, limit=10)
        class_line = line_of(grep_output, "class ", 1)
        defs = lines_of(grep_output, "def ") or [class_line]
        hooks = hook_list(grep_output)
        r = yield t.say(
            f"`{mod}.py` defines {hooks}; the class starts at line {class_line}. Reading its header "
            "and constructor arguments to see what it is configured with.",
            window(path, class_line, before=0, size=20),
        )
        r = yield t.say(
            f"From the header: {observe(r[0])}. The first hook is at line {defs[0]}; reading how it "
            "is implemented.",
            window(path, defs[0], size=20),
        )
        if mod in LC_LARGE:
            yield t.say(
                f"The hook body ({observe(r[0], 2)}) delegates to helpers further down, and "
                f"`{mod}.py` is one of the more involved middlewares, so I'll read it in full (the "
                "tool caps the output; that's fine for an overview).",
                read(path),
            )

    yield from per_module(
        t,
        MW,
        LC_MODULES,
        2,
        HOOK_GREP,
        lambda k, pair: (
            f"Built-in middleware, batch {k + 1} of {len(LC_MODULES) // 2}: `{pair[0]}` and "
            f"`{pair[1]}`. Class and hook definitions first, for both at once."
        ),
        builtin,
    )
    # --- DeepAgents -----------------------------------------------------------------------
    *_, stack = yield from steps(
        t,
        (
            "I have the hook inventory of the built-in middleware. Writing it down with line references.",
            write(f"{NOTES}/02_builtin_middleware.md", notes_builtins(hook_table)),
        ),
        (
            "Now DeepAgents. The middleware stack is assembled in `create_deep_agent`; first the list of "
            "middleware modules and where each middleware is instantiated in `graph.py`.",
            run(f"ls {DA}"),
            run("grep -n 'def create_deep_agent\\|Middleware(' deepagents/graph.py"),
        ),
    )
    cda = line_of(stack, "def create_deep_agent", 1)
    main_stack = line_of(stack, "SubAgentMiddleware(", cda)
    yield from steps(
        t,
        (
            f"`create_deep_agent` starts at line {cda}; the main stack is built around line {main_stack}. "
            "Reading the main agent's stack assembly in full.",
            read("deepagents/graph.py", offset=max(cda, main_stack - 120), limit=330),
        ),
        (
            "And the start of `create_deep_agent` with its docstring, to see which arguments feed the stack.",
            read("deepagents/graph.py", offset=cda, limit=260),
        ),
    )
    da_table: dict[str, list[str]] = {}

    def deepagents(mod: str, path: str, grep_output: str) -> Plan:
        da_table[mod] = grep_hits(grep_output, limit=10)
        class_line = line_of(grep_output, "Middleware(", line_of(grep_output, "class ", 1))
        defs = lines_of(grep_output, "def ") or [class_line]
        hooks = hook_list(grep_output)
        r = yield t.say(
            f"`{mod}.py` implements {hooks}. Reading the middleware class header (line "
            f"{class_line}) for its state schema and tools.",
            window(path, class_line, before=0, size=16),
        )
        yield t.say(
            f"Noted {observe(r[0])}. Now its first hook (line {defs[0]}).",
            window(path, defs[0], size=16),
        )

    yield from per_module(
        t,
        DA,
        DA_MODULES,
        3,
        HOOK_GREP,
        lambda _k, group: (
            "DeepAgents middleware modules: " + ", ".join(f"`{g}`" for g in group) + ". Hook "
            "definitions first, in parallel."
        ),
        deepagents,
    )
    *_, wrappers = yield from steps(
        t,
        (
            "`PatchToolCallsMiddleware` is short and directly relevant to message pairing; reading it whole.",
            read(f"{DA}/patch_tool_calls.py"),
        ),
        (
            "The filesystem middleware is the biggest module. Its tools and the large-result eviction "
            "live there; reading the tool-call wrapper region.",
            run(
                f"grep -n 'def wrap_tool_call\\|def awrap_tool_call\\|def _intercept_large_tool_result\\|tool_token_limit_before_evict' {DA}/filesystem.py"
            ),
        ),
    )
    evict = line_of(wrappers, "def _intercept_large_tool_result", line_of(wrappers, "wrap_tool_call", 1))
    *_, results = yield from steps(
        t,
        (
            "Reading the large-result interception code in full.",
            read(f"{DA}/filesystem.py", offset=max(1, evict - 40), limit=360),
        ),
        (
            "Now `SubAgentMiddleware`: how a `task` tool call becomes a nested agent run.",
            read(f"{DA}/subagents.py", offset=1, limit=380),
        ),
        (
            "Where is the sub-agent's result turned into a ToolMessage for the parent?",
            run(f"grep -n 'ToolMessage(\\|Command(' {DA}/subagents.py"),
        ),
    )

    # --- LangGraph ------------------------------------------------------------------------
    *_, tool_node = yield from steps(
        t,
        (
            "Reading that spot.",
            window(f"{DA}/subagents.py", line_of(results, "ToolMessage(", 1), before=10, size=16),
        ),
        (
            "Last piece of the survey: LangGraph's side. `wrap_tool_call` is executed by `ToolNode`, so "
            "let me find where it is invoked there.",
            run(f"grep -n 'wrap_tool_call\\|awrap_tool_call\\|tool_call_wrapper' {TOOL_NODE}"),
        ),
    )
    tn = line_of(tool_node, "wrap_tool_call", 1)
    *_, schema = yield from steps(
        t,
        (
            f"The wrapper is consulted around line {tn}. Reading the `ToolNode` execution path in full.",
            read(TOOL_NODE, offset=max(1, tn - 200), limit=440),
        ),
        (
            "And how `StateGraph.add_node` records input schemas, which is why middleware `state_schema`s "
            "merge into one graph state.",
            run(f"grep -n 'def add_node\\|def compile\\|_add_schema' {STATE_GRAPH}"),
        ),
    )
    yield from steps(
        t,
        (
            "Reading `_add_schema` and the start of `add_node`.",
            window(STATE_GRAPH, line_of(schema, "def _add_schema", 1), size=16),
            window(STATE_GRAPH, line_of(schema, "def add_node", 1), size=12),
        ),
        (
            "Checking that my notes are in place before writing the report.",
            run("ls workspace/notes workspace/report"),
        ),
        (
            "Writing the first version of the report.",
            write(REPORT, report_v1(versions, order, overrides, hook_table, da_table)),
        ),
        (
            "Reading back the top of the report to check the formatting.",
            read(f"{WORKSPACE}/{REPORT}", offset=1, limit=24),
        ),
        (
            "The ordering section should say explicitly that the experiment output is verbatim. Small fix.",
            edit(REPORT, "## 3. Ordering", "## 3. Ordering (verified by experiment, output verbatim)"),
        ),
        (
            "I'll add a section on the DeepAgents stack order, which the first draft only mentioned in passing.",
            add_section(deepagents_stack_section(stack)),
        ),
        (
            "Final check of the report size.",
            run(
                f"wc -l -c workspace/{REPORT} workspace/{NOTES}/01_hooks_and_factory.md workspace/{NOTES}/02_builtin_middleware.md"
            ),
        ),
    )
    yield t.say(
        f"The report is in `{REPORT}`. Summary:\n\n"
        "- **Six hook kinds**: node-style `before_agent`, `before_model`, `after_model`, "
        "`after_agent` (return a state update or `None`; may jump with `can_jump_to`), and "
        "wrap-style `wrap_model_call` / `wrap_tool_call` (an onion around the call, `handler` is the "
        "rest of the chain). Each has an `a`-prefixed async twin.\n"
        "- **Ordering** (verified by experiment): `before_*` run in list order, `after_*` in reverse, "
        "and the first middleware's `wrap_model_call` is the outermost layer.\n"
        "- **Wiring**: `create_agent` adds one graph node per node-style hook, chains them, and folds "
        "the wrap hooks into the model node and the `ToolNode`; tool calls are dispatched with one "
        "`Send` per call.\n"
        "- **DeepAgents** builds a fixed stack (todo list, filesystem, sub-agents, summarization, "
        "prompt caching, tool-call patching, ...) and passes it to `create_agent` unchanged; user "
        "middleware goes after the built-ins.\n\n"
        "Notes with the raw inventories are in `notes/`."
    )
