"""Python snippets the scripted agent runs with ``run_command("python -c ...")``.

Each prints a small, deterministic text (for the installed package versions) that the plan quotes
in its notes and report. :data:`PY_SYNC_ASYNC_BATCH` is a ``str.format`` template over ``specs``
(a list of ``"module:ClassName"``).
"""

from __future__ import annotations

PY_VERSIONS = """import importlib.metadata as md
for name in ("langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "deepagents"):
    print(f"{name:20} {md.version(name)}")"""

PY_HOOK_SIGNATURES = """import inspect
from langchain.agents.middleware import AgentMiddleware
for name in ("before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call"):
    for fn_name in (name, "a" + name):
        fn = getattr(AgentMiddleware, fn_name, None)
        if fn is None:
            print(f"{fn_name:18} (missing)")
            continue
        kind = "async" if inspect.iscoroutinefunction(fn) else "sync"
        params = ", ".join(inspect.signature(fn).parameters)
        print(f"{fn_name:18} {kind:5} ({params})")"""

PY_OVERRIDES = """import langchain.agents.middleware as m
from langchain.agents.middleware import AgentMiddleware
hooks = ["before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call"]
short = dict(zip(hooks, ["bA", "bM", "aM", "aA", "wM", "wT"]))
for name in sorted(m.__all__):
    cls = getattr(m, name)
    if isinstance(cls, type) and issubclass(cls, AgentMiddleware) and cls is not AgentMiddleware:
        own = [short[h] for h in hooks if getattr(cls, h, None) is not getattr(AgentMiddleware, h)]
        print(f"{name:34} {' '.join(own) or '-'}")"""

PY_ORDER_EXPERIMENT = """from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
log = []
class Probe(AgentMiddleware):
    def before_model(self, state, runtime):
        log.append(f"{self.name}.before_model")
    def after_model(self, state, runtime):
        log.append(f"{self.name}.after_model")
    def wrap_model_call(self, request, handler):
        log.append(f"{self.name}.wrap_model_call enter")
        response = handler(request)
        log.append(f"{self.name}.wrap_model_call exit")
        return response
class A(Probe): pass
class B(Probe): pass
class C(Probe): pass
model = GenericFakeChatModel(messages=iter([AIMessage(content="done")]))
agent = create_agent(model, [], middleware=[A(), B(), C()])
agent.invoke({"messages": [("user", "hi")]})
print("graph nodes:", ", ".join(n for n in agent.get_graph().nodes if n not in ("__start__", "__end__")))
print("\\n".join(log))"""

PY_ASYNC_EXPERIMENT = """import asyncio
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
class SyncOnly(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request)
class Both(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request)
    async def awrap_model_call(self, request, handler):
        return await handler(request)
for mw in (SyncOnly(), Both()):
    model = GenericFakeChatModel(messages=iter([AIMessage(content="ok")]))
    agent = create_agent(model, [], middleware=[mw])
    try:
        out = asyncio.run(agent.ainvoke({"messages": [("user", "hi")]}))
        print(f"{type(mw).__name__:9} ainvoke -> {out['messages'][-1].content!r}")
    except Exception as exc:
        print(f"{type(mw).__name__:9} ainvoke -> {type(exc).__name__}: {str(exc)[:160]}")"""

PY_SYNC_ASYNC_BATCH = """import importlib
from langchain.agents.middleware import AgentMiddleware
hooks = ["before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call"]
for spec in {specs!r}:
    module, _, name = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        print(f"{{name:30}} not available ({{type(exc).__name__}})")
        continue
    cells = []
    for h in hooks:
        s = getattr(cls, h, None) is not getattr(AgentMiddleware, h)
        a = getattr(cls, "a" + h, None) is not getattr(AgentMiddleware, "a" + h)
        if s or a:
            cells.append(f"{{h}}[{{'S' if s else '-'}}{{'A' if a else '-'}}]")
    print(f"{{name:30}} {{' '.join(cells) or '(no hooks)'}}")"""

PY_SUMMARIZATION_SIGNATURES = """import inspect
from langchain.agents.middleware import SummarizationMiddleware as LC
from deepagents.middleware import SummarizationMiddleware as DA
for cls in (LC, DA):
    print(cls.__module__ + "." + cls.__name__)
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if name == "self":
            continue
        value = p.default
        if value is inspect.Parameter.empty:
            default = ""
        elif callable(value):
            default = f" = <function {getattr(value, '__name__', type(value).__name__)}>"
        else:
            default = f" = {value!r}"[:70]
        print(f"    {name}{default}")"""

PY_TRIM_EXPERIMENT = """from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
msgs = [
    SystemMessage("sys"),
    HumanMessage("question " * 20),
    AIMessage("", tool_calls=[{"name": "a", "args": {}, "id": "t1"}, {"name": "b", "args": {}, "id": "t2"}]),
    ToolMessage("result a " * 30, tool_call_id="t1"),
    ToolMessage("result b " * 30, tool_call_id="t2"),
    HumanMessage("follow-up"),
]
count = lambda ms: sum(len(m.text) // 4 + 3 for m in ms)
for max_tokens in (200, 120, 40):
    for start_on in (None, "human"):
        kw = {"start_on": start_on} if start_on else {}
        kept = trim_messages(msgs, max_tokens=max_tokens, token_counter=count, strategy="last", include_system=True, **kw)
        print(f"max={max_tokens:3} start_on={start_on!s:5} ->", [type(m).__name__.replace("Message", "") for m in kept])"""
