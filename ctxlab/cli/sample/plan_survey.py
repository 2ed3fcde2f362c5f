"""Turn 1 of the scripted plan: the survey of LangChain's middleware hooks, ``create_agent``'s
wiring, the built-in middleware, DeepAgents' stack and LangGraph's side; ends with the report's
first version."""

from __future__ import annotations

from ctxlab.cli.sample.probes import PY_HOOK_SIGNATURES, PY_ORDER_EXPERIMENT, PY_OVERRIDES, PY_VERSIONS
from ctxlab.cli.sample.sandbox import WORKSPACE
from ctxlab.cli.sample.script import (
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
    edit,
    grep_hits,
    hook_list,
    line_of,
    lines_of,
    observe,
    python,
    read,
    run,
    window,
    write,
)
from ctxlab.cli.sample.sections import deepagents_stack_section, notes_builtins, notes_hooks, report_v1

__all__ = ["turn_survey"]


def turn_survey(t: Turns) -> Plan:
    r = yield t.say(
        "I'll start with a map of the middleware package and the exact versions installed, so that "
        "every line reference in the report is tied to a version.",
        run(f"ls {MW}"),
        python(PY_VERSIONS),
    )
    versions = r[1]
    r = yield t.say(
        "The package is split into one module per built-in middleware plus `types.py`, which should "
        "hold the base class and the hook definitions. Sizes first, to plan my reads.",
        run(f"wc -l {FACTORY} {TYPES} {MW}/__init__.py {LC_SUMM} {MW}/human_in_the_loop.py"),
    )
    r = yield t.say(
        "`types.py` and `factory.py` are both large. I'll list the top-level definitions of `types.py` "
        "before reading it.",
        run(f"grep -n '^class \\|^def ' {TYPES}"),
    )
    class_line = line_of(r[0], "class AgentMiddleware", 1)
    r = yield t.say(
        f"`AgentMiddleware` is defined at line {class_line}. I'll read the first part of the file, "
        "which should cover the request/response types and the start of the base class.",
        read(TYPES, offset=1, limit=420),
    )
    r = yield t.say(
        "That covers `ModelRequest` (with `override()`), `ModelResponse` and the state types. Now the "
        "hook methods themselves: one grep for every hook name, sync and async.",
        run(f"{HOOK_DEF_GREP} {TYPES}"),
    )
    hook_lines = r[0]
    for first, second in (("before_agent", "before_model"), ("after_model", "after_agent")):
        r = yield t.say(
            f"Reading the `{first}` and `{second}` definitions side by side.",
            window(TYPES, line_of(hook_lines, f"def {first}(", class_line)),
            window(TYPES, line_of(hook_lines, f"def {second}(", class_line)),
        )
    for hook in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
        line = line_of(hook_lines, f"def {hook}(", class_line)
        r = yield t.say(
            f"`{hook}` is at line {line}; reading its signature and the first part of its docstring.",
            window(TYPES, line, size=16),
        )
        if hook == "awrap_model_call":
            r = yield t.say(
                "The async variant has its own default. Let me see what the default body does when a "
                "subclass only implements the sync one.",
                window(TYPES, line + 14, before=0, size=20),
            )
    r = yield t.say(
        "Let me confirm the hook surface at runtime rather than from the source alone: parameter "
        "names and whether each default is a coroutine.",
        python(PY_HOOK_SIGNATURES),
    )
    signatures = r[0]
    r = yield t.say(
        "Now the decorator helpers (`@before_model`, `@wrap_model_call`, ...) further down the file.",
        run(f"grep -n '^def \\|can_jump_to\\|hook_config' {TYPES}"),
    )
    deco = line_of(r[0], "def before_model", 700)
    r = yield t.say(
        "Reading the decorator section, which shows how a plain function becomes a middleware class.",
        read(TYPES, offset=max(1, deco - 30), limit=420),
    )
    r = yield t.say(
        "Decorators build a subclass on the fly with the function as the hook. `hook_config` carries "
        "`can_jump_to`. Let me read `hook_config` itself.",
        window(TYPES, line_of(r[0], "def hook_config", deco), size=18),
    )
    r = yield t.say(
        "Next, which built-in middleware overrides which hook. I'll compute it instead of grepping "
        "each file: compare every class's attributes with `AgentMiddleware`'s.",
        python(PY_OVERRIDES),
    )
    overrides = r[0]

    # --- the factory ---------------------------------------------------------------------
    r = yield t.say(
        "Now `create_agent`. Top-level functions of `factory.py` first.",
        run(f"grep -n '^def \\|^async def ' {FACTORY}"),
    )
    factory_defs = r[0]
    chain_model = line_of(factory_defs, "_chain_model_call_handlers", 100)
    chain_tool = line_of(factory_defs, "_chain_tool_call_wrappers", 200)
    create = line_of(factory_defs, "def create_agent", 600)
    r = yield t.say(
        f"`_chain_model_call_handlers` (line {chain_model}) is what composes `wrap_model_call`. "
        "Reading the helpers at the top of the file in one go.",
        read(FACTORY, offset=1, limit=480),
    )
    r = yield t.say(
        "The composition is a right fold: the first middleware in the list becomes the outermost "
        "wrapper. Reading the tool-call chaining as well.",
        window(FACTORY, chain_tool, size=18),
    )
    r = yield t.say(
        "Both chains fold the same way. Now the body of `create_agent` where nodes and edges are added.",
        run(f"grep -n 'add_node\\|add_conditional_edges\\|add_edge' {FACTORY}"),
    )
    edges = r[0]
    first_node = line_of(edges, "add_node", create)
    r = yield t.say(
        f"The graph is assembled from line {first_node} onwards. Reading the main part of "
        "`create_agent`, from the middleware bookkeeping to the node wiring.",
        read(FACTORY, offset=max(create, first_node - 260), limit=460),
    )
    r = yield t.say(
        "Let me read the rest of the wiring, where the before/after nodes are chained and the jump "
        "destinations are resolved.",
        read(FACTORY, offset=first_node + 200, limit=420),
    )
    r = yield t.say(
        "I want the exact spot where `after_model` nodes are chained in reverse order.",
        run(f"grep -n 'reversed\\|after_model_node\\|after_agent_node' {FACTORY}"),
    )
    rev = line_of(r[0], "reversed", first_node)
    r = yield t.say(
        f"`reversed(...)` at line {rev}. Reading the lines around it.",
        window(FACTORY, rev, before=4, size=16),
    )
    r = yield t.say(
        "And the conditional edges that implement `jump_to` (`model`, `tools`, `end`).",
        run(f"grep -n '_make_model_to_tools_edge\\|_make_tools_to_model_edge\\|jump_to' {FACTORY}"),
    )
    jump = line_of(r[0], "def _resolve_jump", line_of(r[0], "jump_to", first_node))
    r = yield t.say(
        "Reading the jump resolution helper.",
        window(FACTORY, jump, size=18),
    )
    r = yield t.say(
        "Reading the model-to-tools edge, which decides whether tool calls are sent to the tool node.",
        window(FACTORY, line_of(r[0] + "\n" + edges, "def _make_model_to_tools_edge", jump), size=18),
    )
    r = yield t.say(
        "Tool calls are dispatched one `Send` per call, which is how parallel tool calls run as "
        "separate tasks. Let me confirm the exact line.",
        run(f"grep -n 'Send(' {FACTORY}"),
    )
    send = line_of(r[0], "Send(", jump)
    r = yield t.say(
        "Reading around the `Send` dispatch.",
        window(FACTORY, send, before=8, size=14),
    )
    r = yield t.say(
        "The static picture is clear. Now an experiment to pin the runtime order: three probe "
        "middlewares, each logging `before_model`, `after_model` and entering/leaving "
        "`wrap_model_call`, on an agent with a fake model.",
        python(PY_ORDER_EXPERIMENT),
    )
    order = r[0]
    r = yield t.say(
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
    for i in range(0, len(LC_MODULES), 2):
        pair = LC_MODULES[i : i + 2]
        r = yield t.say(
            f"Built-in middleware, batch {i // 2 + 1} of {len(LC_MODULES) // 2}: `{pair[0]}` and "
            f"`{pair[1]}`. Class and hook definitions first, for both at once.",
            *(run(f"{HOOK_GREP} {MW}/{mod}.py") for mod in pair),
        )
        outs = dict(zip(pair, r, strict=True))
        for mod in pair:
            hook_table[mod] = grep_hits(outs[mod], limit=10)
            class_line = line_of(outs[mod], "class ", 1)
            defs = lines_of(outs[mod], "def ") or [class_line]
            hooks = hook_list(outs[mod])
            r = yield t.say(
                f"`{mod}.py` defines {hooks}; the class starts at line {class_line}. Reading its header "
                "and constructor arguments to see what it is configured with.",
                window(f"{MW}/{mod}.py", class_line, before=0, size=20),
            )
            r = yield t.say(
                f"From the header: {observe(r[0])}. The first hook is at line {defs[0]}; reading how it "
                "is implemented.",
                window(f"{MW}/{mod}.py", defs[0], size=20),
            )
            if mod in LC_LARGE:
                r = yield t.say(
                    f"The hook body ({observe(r[0], 2)}) delegates to helpers further down, and "
                    f"`{mod}.py` is one of the more involved middlewares, so I'll read it in full (the "
                    "tool caps the output; that's fine for an overview).",
                    read(f"{MW}/{mod}.py"),
                )
    r = yield t.say(
        "I have the hook inventory of the built-in middleware. Writing it down with line references.",
        write(f"{NOTES}/02_builtin_middleware.md", notes_builtins(hook_table)),
    )

    # --- DeepAgents -----------------------------------------------------------------------
    r = yield t.say(
        "Now DeepAgents. The middleware stack is assembled in `create_deep_agent`; first the list of "
        "middleware modules and where each middleware is instantiated in `graph.py`.",
        run(f"ls {DA}"),
        run("grep -n 'def create_deep_agent\\|Middleware(' deepagents/graph.py"),
    )
    stack = r[1]
    cda = line_of(stack, "def create_deep_agent", 1)
    main_stack = line_of(stack, "SubAgentMiddleware(", cda)
    r = yield t.say(
        f"`create_deep_agent` starts at line {cda}; the main stack is built around line {main_stack}. "
        "Reading the main agent's stack assembly in full.",
        read("deepagents/graph.py", offset=max(cda, main_stack - 120), limit=330),
    )
    r = yield t.say(
        "And the start of `create_deep_agent` with its docstring, to see which arguments feed the stack.",
        read("deepagents/graph.py", offset=cda, limit=260),
    )
    da_table: dict[str, list[str]] = {}
    for i in range(0, len(DA_MODULES), 3):
        group = DA_MODULES[i : i + 3]
        r = yield t.say(
            "DeepAgents middleware modules: " + ", ".join(f"`{g}`" for g in group) + ". Hook "
            "definitions first, in parallel.",
            *(run(f"{HOOK_GREP} {DA}/{mod}.py") for mod in group),
        )
        outs = dict(zip(group, r, strict=True))
        for mod in group:
            da_table[mod] = grep_hits(outs[mod], limit=10)
            class_line = line_of(outs[mod], "Middleware(", line_of(outs[mod], "class ", 1))
            defs = lines_of(outs[mod], "def ") or [class_line]
            hooks = hook_list(outs[mod])
            r = yield t.say(
                f"`{mod}.py` implements {hooks}. Reading the middleware class header (line "
                f"{class_line}) for its state schema and tools.",
                window(f"{DA}/{mod}.py", class_line, before=0, size=16),
            )
            yield t.say(
                f"Noted {observe(r[0])}. Now its first hook (line {defs[0]}).",
                window(f"{DA}/{mod}.py", defs[0], size=16),
            )
    r = yield t.say(
        "`PatchToolCallsMiddleware` is short and directly relevant to message pairing; reading it whole.",
        read(f"{DA}/patch_tool_calls.py"),
    )
    r = yield t.say(
        "The filesystem middleware is the biggest module. Its tools and the large-result eviction "
        "live there; reading the tool-call wrapper region.",
        run(
            f"grep -n 'def wrap_tool_call\\|def awrap_tool_call\\|def _intercept_large_tool_result\\|tool_token_limit_before_evict' {DA}/filesystem.py"
        ),
    )
    evict = line_of(r[0], "def _intercept_large_tool_result", line_of(r[0], "wrap_tool_call", 1))
    r = yield t.say(
        "Reading the large-result interception code in full.",
        read(f"{DA}/filesystem.py", offset=max(1, evict - 40), limit=360),
    )
    r = yield t.say(
        "Now `SubAgentMiddleware`: how a `task` tool call becomes a nested agent run.",
        read(f"{DA}/subagents.py", offset=1, limit=380),
    )
    r = yield t.say(
        "Where is the sub-agent's result turned into a ToolMessage for the parent?",
        run(f"grep -n 'ToolMessage(\\|Command(' {DA}/subagents.py"),
    )
    r = yield t.say(
        "Reading that spot.",
        window(f"{DA}/subagents.py", line_of(r[0], "ToolMessage(", 1), before=10, size=16),
    )

    # --- LangGraph ------------------------------------------------------------------------
    r = yield t.say(
        "Last piece of the survey: LangGraph's side. `wrap_tool_call` is executed by `ToolNode`, so "
        "let me find where it is invoked there.",
        run(f"grep -n 'wrap_tool_call\\|awrap_tool_call\\|tool_call_wrapper' {TOOL_NODE}"),
    )
    tn = line_of(r[0], "wrap_tool_call", 1)
    r = yield t.say(
        f"The wrapper is consulted around line {tn}. Reading the `ToolNode` execution path in full.",
        read(TOOL_NODE, offset=max(1, tn - 200), limit=440),
    )
    r = yield t.say(
        "And how `StateGraph.add_node` records input schemas, which is why middleware `state_schema`s "
        "merge into one graph state.",
        run(f"grep -n 'def add_node\\|def compile\\|_add_schema' {STATE_GRAPH}"),
    )
    r = yield t.say(
        "Reading `_add_schema` and the start of `add_node`.",
        window(STATE_GRAPH, line_of(r[0], "def _add_schema", 1), size=16),
        window(STATE_GRAPH, line_of(r[0], "def add_node", 1), size=12),
    )
    r = yield t.say(
        "Checking that my notes are in place before writing the report.",
        run("ls workspace/notes workspace/report"),
    )
    r = yield t.say(
        "Writing the first version of the report.",
        write(REPORT, report_v1(versions, order, overrides, hook_table, da_table)),
    )
    r = yield t.say(
        "Reading back the top of the report to check the formatting.",
        read(f"{WORKSPACE}/{REPORT}", offset=1, limit=24),
    )
    r = yield t.say(
        "The ordering section should say explicitly that the experiment output is verbatim. Small fix.",
        edit(REPORT, "## 3. Ordering", "## 3. Ordering (verified by experiment, output verbatim)"),
    )
    r = yield t.say(
        "I'll add a section on the DeepAgents stack order, which the first draft only mentioned in passing.",
        add_section(deepagents_stack_section(stack)),
    )
    r = yield t.say(
        "Final check of the report size.",
        run(
            f"wc -l -c workspace/{REPORT} workspace/{NOTES}/01_hooks_and_factory.md workspace/{NOTES}/02_builtin_middleware.md"
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
