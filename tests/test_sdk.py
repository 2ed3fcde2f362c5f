"""``ctxlab.sdk``, the public face of compression plugins (issue 18, part 4).

* the SDK names the very objects the core defines (old import paths keep working) and imports
  the core floor only;
* a plugin is a module: one whose top-level functions are ``@hookimpl`` functions works from a
  plugins folder and from an entry point naming the module, in a real ``create_agent`` loop with
  a checkpointer and a DeepAgents backend (the view the model saw is the plugin's);
* the typed ``register`` of ``ctxlab_register_strategies`` refuses wrong types and values with
  an error naming the argument.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings
from typing import Any

import pytest
from deepagents.backends import FilesystemBackend
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

import ctxlab
import ctxlab.core.sdk
import ctxlab.sdk
from ctxlab import CompressionMiddleware, CompressionSettings, describe_plugins
from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.plugins import PluginWarning
from ctxlab.replay import make_lab_manager, strategies
from ctxlab.sdk import RegisterStrategy, Strategy, hookimpl

# T = 1024 tokens; T2 = T: an L1 view is sent up to T, so L1 runs without L2 on a small history
SETTINGS = CompressionSettings(summary_threshold=1, summary_keep_messages=2, summary_l2_trigger_ratio=1.0)
MARK = "TRIMMED-BY-A-MODULE-PLUGIN"

#: a plugin that is a module: every hook a top-level function, typed with the SDK
MODULE_PLUGIN = f'''
from ctxlab.sdk import CompressionSettings, RegisterStrategy, TrimContext, TrimReport, hookimpl, is_tool_result

EVENTS = []


@hookimpl
def ctxlab_l1_trim(view, ctx: TrimContext) -> TrimReport:
    for i, m in enumerate(view):
        if is_tool_result(m) and m.id not in ctx.protect_ids:
            view[i] = m.model_copy(update={{"content": "{MARK}"}})
    return TrimReport(trimmer="module-trim")


@hookimpl
def ctxlab_on_event(event) -> None:
    EVENTS.append(event["phase"])


def _strategy(settings: CompressionSettings) -> list[object]:
    return []


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    register("module-strategy", _strategy, "registered by a module", levels={{"L1": "module-trim"}}, per_run=True)
'''


class ToolThenAnswer(BaseChatModel):
    """Calls ``read_log`` once, then answers; records every message list it receives."""

    received: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "sdk-tool-then-answer"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolThenAnswer:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        if len(self.received) == 1:
            reply = AIMessage(
                "", tool_calls=[{"name": "read_log", "args": {}, "id": "c1", "type": "tool_call"}]
            )
        else:
            reply = AIMessage("DONE")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def read_log() -> str:
    """Read the build log."""
    return "\n".join(f"line {i:04d}: compiling module_{i}.py ... ok" for i in range(300))


def run_agent(mw: CompressionMiddleware) -> tuple[ToolThenAnswer, dict[str, Any]]:
    model = ToolThenAnswer()
    agent = create_agent(model=model, tools=[read_log], middleware=[mw], checkpointer=InMemorySaver())
    values = agent.invoke(
        {"messages": [HumanMessage("FACT-TASK read the build log")]}, {"configurable": {"thread_id": "sdk"}}
    )
    return model, values


def assert_the_module_trimmed(model: ToolThenAnswer, values: dict[str, Any]) -> None:
    # spec: R6 (the state keeps the whole tool result; only the request view is trimmed)
    first, second = model.received
    assert not any(isinstance(m, ToolMessage) for m in first)
    (seen,) = [m for m in second if isinstance(m, ToolMessage)]
    assert seen.content == MARK  # the view the model saw is the module plugin's
    (kept,) = [m for m in values["messages"] if isinstance(m, ToolMessage)]
    assert str(kept.content).startswith("line 0000: compiling") and MARK not in str(kept.content)


def middleware(tmp_path: Any, **kw: Any) -> CompressionMiddleware:
    return CompressionMiddleware(
        settings=SETTINGS,
        backend=FilesystemBackend(root_dir=str(tmp_path / "files"), virtual_mode=True),
        summarizer=StructuredSummarizer(),
        **kw,
    )


# --- the names ------------------------------------------------------------------------------------


def test_the_sdk_names_the_objects_the_core_defines() -> None:
    from ctxlab.core import cutoff, l1, settings, summarize
    from ctxlab.core import strategy as core_strategy
    from ctxlab.replay import Strategy as ReplayStrategy

    assert ctxlab.sdk.__all__ == ctxlab.core.sdk.__all__
    for name in ctxlab.core.sdk.__all__:
        assert getattr(ctxlab.sdk, name) is getattr(ctxlab.core.sdk, name), name
    # the old import paths are the same objects
    assert ctxlab.sdk.CutoffDecision is cutoff.CutoffDecision
    assert ctxlab.sdk.SummarizeContext is cutoff.SummarizeContext
    assert ctxlab.sdk.TrimContext is l1.TrimContext
    assert ctxlab.sdk.CompressionSettings is settings.CompressionSettings
    assert ctxlab.sdk.SummaryResult is summarize.SummaryResult
    assert ctxlab.sdk.hookimpl is ctxlab.hookimpl
    assert ReplayStrategy is Strategy is core_strategy.Strategy


def test_the_sdk_imports_the_core_floor_only() -> None:
    code = (
        "import sys, ctxlab.sdk; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('polars', 'matplotlib', 'ipywidgets') "
        "or m.startswith(('ctxlab.replay', 'ctxlab.analysis', 'ctxlab.cli', 'ctxlab.transcripts'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- a plugin is a module ---------------------------------------------------------------------------


def test_a_module_plugin_from_a_folder_runs_in_a_real_agent(tmp_path: Any) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "module_trim.py").write_text(MODULE_PLUGIN)
    mw = middleware(tmp_path, plugins_dir=folder)
    module = sys.modules["ctxlab_dir_plugin_module_trim"]
    infos = {p.name: p for p in describe_plugins(mw.plugin_manager)}
    assert mw.plugin_manager.get_plugin("dir:module_trim.py") is module  # the module itself
    assert infos["dir:module_trim.py"].hooks == (
        "ctxlab_l1_trim",
        "ctxlab_on_event",
        "ctxlab_register_strategies",
    )
    model, values = run_agent(mw)
    assert_the_module_trimmed(model, values)
    assert module.EVENTS == ["started", "completed"]
    found = strategies(make_lab_manager(plugins_dir=folder))["module-strategy"]
    assert (found.description, found.levels, found.per_run) == (
        "registered by a module",
        {"L1": "module-trim"},
        True,
    )


def fake_distribution(root: Any, tag: str, source: str) -> str:
    """A fake installed distribution ``sdkplug-<tag>`` on ``root`` whose ``ctxlab`` entry point
    names a module (``name = module``, no attribute): the real importlib.metadata path."""
    module = f"fake_sdk_module_{tag}"
    (root / f"{module}.py").write_text(source)
    info = root / f"sdkplug_{tag}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sdkplug-{tag}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ctxlab]\nsdk-{tag} = {module}\n")
    return module


def test_a_module_plugin_from_an_entry_point(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    name = fake_distribution(site, "m1", MODULE_PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, name, raising=False)  # the module leaves with the test
    pm = make_lab_manager(load_entrypoints=True, read_env=False)
    module = sys.modules[name]
    assert pm.get_plugin("sdk-m1") is module
    info = {p.name: p for p in describe_plugins(pm)}["sdk-m1"]
    assert info.source == "entry point (sdkplug-m1 0.1)"
    assert strategies(pm)["module-strategy"].levels == {"L1": "module-trim"}
    # the same module's compression hooks reach a middleware that loads the entry points
    mw = middleware(tmp_path, load_entrypoints=True)
    assert mw.plugin_manager.get_plugin("sdk-m1") is module
    model, values = run_agent(mw)
    assert_the_module_trimmed(model, values)
    assert module.EVENTS == ["started", "completed"]


def test_an_entry_point_module_without_hooks_is_reported_and_skipped(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    name = fake_distribution(site, "m2", "from ctxlab.sdk import hookimpl\n\nVALUE = 1\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, name, raising=False)  # the module leaves with the test
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pm = make_lab_manager(load_entrypoints=True, read_env=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    assert messages == [
        f"ctxlab plugin 'sdk-m2' (sdkplug-m2 0.1) skipped: its entry point names the module {name}, "
        "which defines no module-level @hookimpl function"
    ]
    assert pm.get_plugin("sdk-m2") is None
    assert "masking" in strategies(pm)  # the other installed plugins still load


def test_estimator_hooks_make_an_estimator_a_plugin() -> None:
    # spec: R16 (estimates in tokens; a plugin estimator overrides the built-in one)
    from ctxlab import make_plugin_manager
    from ctxlab.sdk import CharClassEstimator, EstimatorHooks

    class DoubleText(EstimatorHooks, CharClassEstimator):
        name = "double-text"

        def text_tokens(self, text: str) -> int:
            return 2 * CharClassEstimator().text_tokens(text)

    plugin, message = DoubleText(), HumanMessage("the estimate of this message, twice over")
    pm = make_plugin_manager([plugin])
    assert pm.hook.ctxlab_estimate_message(message=message) == plugin.message_tokens(message)
    assert plugin.message_tokens(message) > CharClassEstimator().message_tokens(message)
    tools = [{"name": "ls", "description": "list a folder"}]
    assert pm.hook.ctxlab_estimate_tools(tools=tools) == plugin.tools_tokens(tools)
    assert {p.name: p.hooks for p in describe_plugins(pm)}["double-text"] == (
        "ctxlab_estimate_message",
        "ctxlab_estimate_tools",
    )


# --- the typed register -------------------------------------------------------------------------------


def _plugins(settings: CompressionSettings) -> list[object]:
    return []


class Registers:
    """A strategy plugin calling ``register`` with the arguments it was given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    @hookimpl
    def ctxlab_register_strategies(self, register: RegisterStrategy) -> None:
        register(*self.args, **self.kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((3, _plugins), {}, TypeError, "strategy name must be a str, got int 3"),
        (("", _plugins), {}, ValueError, "strategy name '' is invalid"),
        ((" padded", _plugins), {}, ValueError, "strategy name ' padded' is invalid"),
        (("s", "not callable"), {}, TypeError, "strategy 's': factory must be callable"),
        (("s", _plugins, None), {}, TypeError, "strategy 's': description must be a str, got NoneType"),
        (("s", _plugins), {"per_run": "yes"}, TypeError, "strategy 's': per_run must be a bool, got str"),
        (("s", _plugins), {"levels": ["L1"]}, TypeError, "strategy 's': levels must be a mapping"),
        (("s", _plugins), {"levels": {"L3": "x"}}, ValueError, "levels key 'L3' is invalid: allowed L1, L2"),
        (("s", _plugins), {"levels": {"L1": ""}}, ValueError, "levels['L1'] must be a non-empty str"),
        (("ars", _plugins), {}, ValueError, "strategy 'ars' is registered twice"),
    ],
)
def test_register_refuses_a_wrong_argument_naming_it(
    args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    pm = make_lab_manager([Registers(*args, **kwargs)], read_env=False)
    with pytest.raises(error) as raised:
        strategies(pm)
    assert message in str(raised.value)


def test_register_keeps_what_it_was_given() -> None:
    pm = make_lab_manager([Registers("mine", _plugins, "one line", levels={"L2": "digest"}, per_run=True)])
    mine = strategies(pm)["mine"]
    assert mine == Strategy("mine", _plugins, "one line", per_run=True)
    assert mine.levels == {"L2": "digest"} and mine.factory(SETTINGS) == []


def test_the_register_protocol_has_the_strategy_record_arguments() -> None:
    # the typed callback and the record it builds name the same arguments, with the same defaults
    protocol = inspect.signature(RegisterStrategy.__call__).parameters
    record = inspect.signature(Strategy).parameters
    assert list(protocol) == ["self", "name", "factory", "description", "levels", "per_run", "settings"]
    for arg in ("name", "factory", "description", "per_run"):
        assert protocol[arg].default == record[arg].default, arg
    assert protocol["levels"].kind is inspect.Parameter.KEYWORD_ONLY and protocol["levels"].default is None
    assert protocol["per_run"].kind is inspect.Parameter.KEYWORD_ONLY
    # the settings fields a strategy changes (issue 34: ars-prepared); None: none
    assert (
        protocol["settings"].kind is inspect.Parameter.KEYWORD_ONLY and protocol["settings"].default is None
    )
