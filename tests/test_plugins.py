"""The plugin system of ctxlab: one plugin manager per middleware instance, replaceable steps,
plugin listing, plugins folder and entry points, refused plugins (hookspecs in
``ctxlab/core/hookspecs.py``, documented in ``docs/plugins.md``)."""

from __future__ import annotations

import sys
import textwrap
import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from ctxlab import CompressionMiddleware, CompressionSettings, describe_plugins, make_plugin_manager
from ctxlab.core.builtin.cutoff_rule import KeepRecentCutoff
from ctxlab.core.cutoff import CutoffDecision
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.l1 import TrimReport
from ctxlab.core.plugins import PluginWarning
from ctxlab.core.summarize import LLMSummarizer, SummaryResult

#: T = 1024 tokens, T2 = 409.6, offload above 100 tokens, keep 2
SETTINGS = CompressionSettings(
    summary_threshold=1,
    summary_keep_messages=2,
    summary_tool_result_token_limit=100,
    summary_l2_trigger_ratio=0.4,
)
EST = CharClassEstimator()


class Tagger:
    """A trimmer: appends a tag to every plain assistant text in the view (on a copy)."""

    def __init__(self, tag):
        self.tag = tag
        self.name = f"tagger-{tag}"

    @hookimpl
    def ctxlab_l1_trim(self, view, ctx):
        for i, m in enumerate(view):
            if isinstance(m, AIMessage) and not m.tool_calls:
                view[i] = m.model_copy(update={"content": f"{m.content} [{self.tag}]"})
        return TrimReport(trimmer=self.name)


class TenX:
    """An estimator that counts 10x the default."""

    name = "ten-x"

    @hookimpl
    def ctxlab_estimate_message(self, message):
        return 10 * EST.message_tokens(message)

    @hookimpl
    def ctxlab_estimate_tools(self, tools):
        return 10 * EST.tools_tokens(tools)


class CutoffSpy:
    """Records what the cutoff step is given and defers (firstresult: ``None`` passes on)."""

    name = "cutoff-spy"

    def __init__(self):
        self.seen = []

    @hookimpl(tryfirst=True)
    def ctxlab_select_cutoff(self, messages, ctx):
        self.seen.append((list(messages), ctx))
        return None


class FixedCutoff:
    name = "fixed-cutoff"

    def __init__(self, index):
        self.index = index

    @hookimpl
    def ctxlab_select_cutoff(self, messages, ctx):
        return CutoffDecision(self.index, "fixed by a test plugin")


def history(kit, n=12, chars=600):
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(kit.fill(chars, f"FACT-M{i}", seed=i), id=f"m{i}")
        for i in range(n)
    ]


def mw_with(kit, root, plugins=(), settings=SETTINGS, **kw):
    return CompressionMiddleware(
        settings=settings, backend=kit.backend(root), summarizer=kit.FakeSummarizer(), plugins=plugins, **kw
    )


# ------------------------------------------------------------------------------------------------
# isolation
# ------------------------------------------------------------------------------------------------


def test_each_instance_owns_its_plugin_manager(mw_kit, tmp_path):
    # two instances with different plugins side by side in one process give different views
    msgs = [
        HumanMessage("FACT-TASK", id="h0"),
        AIMessage(mw_kit.fill(5000, "A", 1), id="a0"),
        HumanMessage("go", id="h1"),
    ]
    a, b = Tagger("A"), Tagger("B")
    mw_a = mw_with(
        mw_kit,
        tmp_path / "a",
        [a],
        settings=SETTINGS.replace(summary_l2_trigger_ratio=1.0, summary_threshold=0.5),
    )
    mw_b = mw_with(
        mw_kit,
        tmp_path / "b",
        [b],
        settings=SETTINGS.replace(summary_l2_trigger_ratio=1.0, summary_threshold=0.5),
    )
    mw_plain = mw_with(
        mw_kit, tmp_path / "c", settings=SETTINGS.replace(summary_l2_trigger_ratio=1.0, summary_threshold=0.5)
    )
    assert len({id(mw_a.plugin_manager), id(mw_b.plugin_manager), id(mw_plain.plugin_manager)}) == 3
    assert mw_a.plugin_manager.is_registered(a) and not mw_a.plugin_manager.is_registered(b)
    assert not mw_plain.plugin_manager.is_registered(a) and not mw_plain.plugin_manager.is_registered(b)
    views = {}
    for key, mw in (("a", mw_a), ("b", mw_b), ("plain", mw_plain), ("a2", mw_a)):
        rec = mw_kit.Driver(mw, msgs).round()
        assert rec["exc"] is None
        views[key] = rec["calls"][0]["messages"][1].content
    assert views["a"].endswith("[A]") and views["a2"].endswith("[A]")
    assert views["b"].endswith("[B]")
    assert views["plain"] == msgs[1].content


# ------------------------------------------------------------------------------------------------
# replacing one step
# ------------------------------------------------------------------------------------------------


def test_custom_estimator_changes_only_the_estimate(mw_kit, tmp_path):
    # a 10x estimator: compression starts earlier; the trimmers and the cutoff rule act as the
    # defaults do given the same (10x) estimates
    msgs = [HumanMessage("FACT-TASK check the two logs", id="h0")]
    msgs += mw_kit.tool_pair("c1", "read_log", "SMALL ok", ai_id="a1", tool_id="t1")
    msgs += mw_kit.tool_pair("c2", "read_log", mw_kit.fill(400, "MID-LOG", 2), ai_id="a2", tool_id="t2")
    msgs += [
        (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(120, f"FACT-M{i}", seed=i), id=f"m{i}")
        for i in range(6)
    ]
    default_est = [EST.message_tokens(m) for m in msgs]
    # a limit in which a 10x-estimated replacement (path and header) still fits (R6)
    settings = SETTINGS.replace(summary_tool_result_token_limit=700)
    assert sum(default_est) < settings.entry_threshold_tokens <= 10 * sum(default_est)
    t1_est, t2_est = default_est[2], default_est[4]
    limit = settings.summary_tool_result_token_limit
    assert t1_est * 10 <= limit < t2_est * 10 and t2_est <= limit

    plain = mw_kit.Driver(mw_with(mw_kit, tmp_path / "plain", settings=settings), msgs).round()
    assert plain["events"] == [] and plain["update"] is None  # default: below T

    spy = CutoffSpy()
    mw = mw_with(mw_kit, tmp_path / "tenx", [TenX(), spy], settings=settings)
    rec = mw_kit.Driver(mw, msgs).round()
    evs = mw_kit.ctx_events(rec)
    assert evs[0]["phase"] == "started" and evs[0]["tokens_before"] == 10 * sum(default_est)
    # the offload trimmer compared the 10x estimates with the same limit: only t2 is offloaded
    t2_path = f"/outputs/large_tool_results/read_log-{mw_kit.sha(msgs[4].content)}.txt"
    files = mw_kit.files(tmp_path / "tenx")
    assert [k for k in files if "large_tool_results" in k] == [t2_path.lstrip("/")]
    assert evs[-1]["stats"]["offloaded"] == [t2_path]
    # the cutoff is the default rule's answer for the same input (with the 10x estimates)
    ((seen_msgs, ctx),) = spy.seen
    assert ctx.estimate(msgs[0]) == 10 * EST.message_tokens(msgs[0])
    expected = KeepRecentCutoff().ctxlab_select_cutoff(seen_msgs, ctx)
    assert expected.index is not None
    assert rec["update"]["_summarization_event"]["cutoff_index"] == expected.index


def test_custom_cutoff_rule_changes_only_the_cutoff(mw_kit, tmp_path):
    msgs = history(mw_kit)
    msgs.insert(
        3,
        AIMessage(
            "",
            id="aw",
            tool_calls=[
                {
                    "name": "write_file",
                    "args": {"file_path": "/x", "content": "q" * 2500},
                    "id": "w1",
                    "type": "tool_call",
                }
            ],
        ),
    )
    msgs.insert(
        4, mw_kit.ToolMessage(mw_kit.fill(3000, "BIG", 3), tool_call_id="w1", name="write_file", id="tw")
    )
    default = mw_kit.Driver(mw_with(mw_kit, tmp_path / "d"), msgs).round()
    custom = mw_kit.Driver(mw_with(mw_kit, tmp_path / "c", [FixedCutoff(2)]), msgs).round()
    d_ev, c_ev = default["update"]["_summarization_event"], custom["update"]["_summarization_event"]
    assert d_ev["cutoff_index"] == len(msgs) - 2
    assert c_ev["cutoff_index"] == 2
    # L1 identical: the same offload files, the same truncated argument in the kept part
    ltr = lambda root: sorted(k for k in mw_kit.files(root) if "large_tool_results" in k)  # noqa: E731
    assert ltr(tmp_path / "d") == ltr(tmp_path / "c") and len(ltr(tmp_path / "d")) == 1
    c_view = custom["calls"][0]["messages"]
    assert [m.id for m in c_view[1:]] == [m.id for m in msgs[2:]]
    aw = next(m for m in c_view if m.id == "aw")
    assert "original length 2500" in aw.tool_calls[0]["args"]["content"]
    # the summary covers exactly what precedes the custom cutoff
    hist = mw_kit.files(tmp_path / "c")[c_ev["file_path"].lstrip("/")]
    assert "FACT-M0" in hist and "FACT-M1" in hist and "FACT-M2" not in hist
    assert mw_kit.ctx_events(custom)[-1]["level"] == mw_kit.ctx_events(default)[-1]["level"] == "L2"


def test_custom_trimmer_adds_its_edit_and_defaults_still_run(mw_kit, tmp_path):
    log = mw_kit.fill(6000, "LOG", 4)
    msgs = [HumanMessage("FACT-TASK", id="h0"), AIMessage("thinking about it", id="a0")]
    msgs += [
        AIMessage(
            "",
            id="aw",
            tool_calls=[
                {
                    "name": "write_file",
                    "args": {"file_path": "/x", "content": "q" * 2500},
                    "id": "w1",
                    "type": "tool_call",
                }
            ],
        )
    ]
    msgs += [mw_kit.ToolMessage("ok", tool_call_id="w1", name="write_file", id="tw")]
    msgs += mw_kit.tool_pair("c1", "read_log", log, ai_id="a1", tool_id="t1")
    rec = mw_kit.Driver(
        mw_with(
            mw_kit, tmp_path, [Tagger("CUSTOM")], settings=SETTINGS.replace(summary_l2_trigger_ratio=1.0)
        ),
        msgs,
    ).round()
    view = {m.id: m for m in rec["calls"][0]["messages"]}
    assert view["a0"].content == "thinking about it [CUSTOM]"  # the custom edit
    assert "original length 2500" in view["aw"].tool_calls[0]["args"]["content"]  # R5 default
    assert f"read_log-{mw_kit.sha(log)}.txt" in view["t1"].content  # R6 default
    assert msgs[1].content == "thinking about it"  # state untouched


class NoteSummarizer:
    """A summarizer (the ``ctxlab.core.summarize.Summarizer`` protocol) that records its jobs."""

    name = "note-summarizer"

    def __init__(self):
        self.jobs = []

    def summarize(self, job):
        self.jobs.append(job)
        return SummaryResult(text=f"NOTE-SUMMARY of {len(job.messages)} messages")

    async def asummarize(self, job):
        return self.summarize(job)


class SummarizerPlugin:
    name = "summarizer-plugin"

    def __init__(self, answer=True):
        self.answer = answer
        self.asked = []
        self.summarizer = NoteSummarizer()

    @hookimpl
    def ctxlab_get_summarizer(self, model, settings):
        self.asked.append((model, settings))
        return self.summarizer if self.answer else None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_custom_summarizer_writes_the_summary(mw_kit, tmp_path, mode):
    # spec: R10 — without summarizer=, the agent's own model is offered to the summarizer hook
    plugin = SummarizerPlugin()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), plugins=[plugin])
    driver = mw_kit.Driver(mw, history(mw_kit), mode=mode)
    rec = driver.round()
    assert rec["exc"] is None
    ((model, settings),) = plugin.asked
    assert model is driver.model and settings is SETTINGS
    (job,) = plugin.summarizer.jobs
    cut = rec["update"]["_summarization_event"]["cutoff_index"]
    assert [m.id for m in job.messages] == [f"m{i}" for i in range(cut)]
    summary = rec["calls"][0]["messages"][0]
    assert f"NOTE-SUMMARY of {cut} messages" in summary.content


def test_a_summarizer_plugin_returning_none_defers_to_the_default(mw_kit, tmp_path):
    # firstresult: None passes on; the built-in answers with the LLM summarizer of the given model
    plugin = SummarizerPlugin(answer=False)
    pm = make_plugin_manager([plugin])
    model = mw_kit.ScriptedModel()
    summarizer = pm.hook.ctxlab_get_summarizer(model=model, settings=SETTINGS)
    assert plugin.asked == [(model, SETTINGS)]
    assert isinstance(summarizer, LLMSummarizer) and summarizer.model is model


# ------------------------------------------------------------------------------------------------
# listing, plugins folder, entry points
# ------------------------------------------------------------------------------------------------


def test_describe_plugins_lists_builtins_with_their_hooks():
    pm = CompressionMiddleware(plugins=[Tagger("X")]).plugin_manager
    infos = {p.name: p for p in describe_plugins(pm)}
    expected = {
        "ctxlab.builtin.char-class-estimator": ("ctxlab_estimate_message", "ctxlab_estimate_tools"),
        "ctxlab.builtin.tool-result-offload": ("ctxlab_forget", "ctxlab_l1_trim"),
        "ctxlab.builtin.arg-truncation": ("ctxlab_forget", "ctxlab_l1_trim"),
        "ctxlab.builtin.keep-recent-cutoff": ("ctxlab_select_cutoff",),
        "ctxlab.builtin.default-summarizer": ("ctxlab_get_summarizer",),
    }
    for name, hooks in expected.items():
        assert infos[name].source == "builtin"
        assert infos[name].hooks == hooks
    explicit = [p for p in infos.values() if p.source == "explicit"]
    assert [p.hooks for p in explicit] == [("ctxlab_l1_trim",)]
    order = list(infos)
    assert order.index("ctxlab.builtin.char-class-estimator") < order.index(explicit[0].name)


GOOD = """
from ctxlab.core.hookspecs import hookimpl
SEEN = []

@hookimpl
def ctxlab_on_event(event):
    SEEN.append(event["phase"])
"""


def write_plugins(folder, tag):
    folder.mkdir()
    (folder / f"good_{tag}.py").write_text(textwrap.dedent(GOOD))
    (folder / f"broken_syntax_{tag}.py").write_text("def oops(:\n")
    (folder / f"broken_import_{tag}.py").write_text("import no_such_module_for_ctxlab_tests\n")
    (folder / f"_private_{tag}.py").write_text("raise RuntimeError('must not be imported')\n")


def test_broken_plugin_in_folder_is_reported_and_skipped(tmp_path):
    folder = tmp_path / "plugins"
    write_plugins(folder, "a")
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        pm = make_plugin_manager(plugins_dir=folder)
    msgs = [str(w.message) for w in wl]
    assert any("broken_syntax_a.py" in m for m in msgs)
    assert any("broken_import_a.py" in m and "no_such_module_for_ctxlab_tests" in m for m in msgs)
    assert not any("_private_a" in m for m in msgs)
    infos = {p.name: p for p in describe_plugins(pm)}
    assert "dir:good_a.py" in infos and infos["dir:good_a.py"].hooks == ("ctxlab_on_event",)
    assert infos["dir:good_a.py"].source.startswith("plugins folder")
    assert not any("broken" in n or "_private" in n for n in infos)
    assert "ctxlab.builtin.keep-recent-cutoff" in infos  # the defaults are intact


def test_the_middleware_loads_a_plugins_folder_only_when_asked(mw_kit, tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    write_plugins(folder, "b")
    monkeypatch.setenv("CTXLAB_PLUGINS_DIR", str(folder))
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        plain = mw_with(mw_kit, tmp_path / "plain")
    assert wl == []  # the environment variable alone loads nothing into a middleware
    assert not any(p.source.startswith("plugins folder") for p in describe_plugins(plain.plugin_manager))
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        mw = mw_with(mw_kit, tmp_path / "files", plugins_dir=folder)
    assert any("broken_syntax_b.py" in str(w.message) for w in wl)
    rec = mw_kit.Driver(mw, history(mw_kit)).round()
    assert rec["exc"] is None
    assert sys.modules["ctxlab_dir_plugin_good_b"].SEEN == ["started", "completed"]


def make_distribution(root, tag):
    """A fake installed distribution ``fakeplug-<tag>`` with two ``ctxlab`` entry points: a good
    module and one that cannot be imported."""
    mod = f"fake_ctxlab_ep_{tag}"
    (root / f"{mod}.py").write_text(textwrap.dedent(GOOD))
    info = root / f"fakeplug_{tag}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakeplug-{tag}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[ctxlab]\nfake-{tag} = {mod}\nbroken-{tag} = no_such_module_{tag}\n"
    )
    return mod


def test_entry_point_plugins_load_and_a_broken_one_is_skipped(mw_kit, tmp_path, monkeypatch):
    # a simulated installed distribution (dist-info on sys.path): the real importlib.metadata path
    site = tmp_path / "site"
    site.mkdir()
    mod = make_distribution(site, "x1")
    monkeypatch.syspath_prepend(str(site))
    off = CompressionMiddleware(settings=SETTINGS)
    assert "fake-x1" not in {p.name for p in describe_plugins(off.plugin_manager)}
    with warnings.catch_warnings(record=True) as wl:
        warnings.simplefilter("always")
        mw = mw_with(mw_kit, tmp_path / "files", load_entrypoints=True)
    assert any("broken-x1" in str(w.message) for w in wl)
    infos = {p.name: p for p in describe_plugins(mw.plugin_manager)}
    assert infos["fake-x1"].hooks == ("ctxlab_on_event",)
    assert infos["fake-x1"].source == "entry point (fakeplug-x1 0.1)"
    assert "broken-x1" not in infos
    rec = mw_kit.Driver(mw, history(mw_kit)).round()
    assert rec["exc"] is None
    assert sys.modules[mod].SEEN == ["started", "completed"]
    monkeypatch.delitem(sys.modules, mod)


def test_hook_failure_in_a_plugin_surfaces(mw_kit, tmp_path):
    # a plugin whose trimmer removes a message breaks the contract: the round refuses it loudly
    class Dropper:
        name = "dropper"

        @hookimpl
        def ctxlab_l1_trim(self, view, ctx):
            view.pop()

    rec = mw_kit.Driver(mw_with(mw_kit, tmp_path, [Dropper()]), history(mw_kit)).round()
    assert isinstance(rec["exc"], RuntimeError) and "number of messages" in str(rec["exc"])
    assert [e["phase"] for e in mw_kit.ctx_events(rec)] == ["started", "failed"]


@pytest.mark.parametrize("bad", [0, -1, 99])
def test_cutoff_plugin_out_of_range_is_refused(mw_kit, tmp_path, bad):
    rec = mw_kit.Driver(mw_with(mw_kit, tmp_path, [FixedCutoff(bad)]), history(mw_kit)).round()
    assert isinstance(rec["exc"], ValueError) and "outside" in str(rec["exc"])


def test_a_raising_event_observer_does_not_break_the_model_call(mw_kit, tmp_path):
    class BadObserver:
        name = "bad-observer"

        @hookimpl
        def ctxlab_on_event(self, event):
            raise RuntimeError("observer bug")

    rec = mw_kit.Driver(mw_with(mw_kit, tmp_path, [BadObserver()]), history(mw_kit)).round()
    assert rec["exc"] is None  # fails today: RuntimeError('observer bug')
    assert len(rec["calls"]) == 1


# ------------------------------------------------------------------------------------------------
# refused plugins: misspelt hooks, wrong arguments (reported, skipped, never a crash)
# ------------------------------------------------------------------------------------------------


def plugin_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, PluginWarning)]


class MisspeltCutoff:
    """``ctxlab_select_cutof``: a typo pluggy alone would accept silently (no spec, no call)."""

    name = "misspelt-cutoff"

    @hookimpl
    def ctxlab_select_cutof(self, messages, ctx):
        return CutoffDecision(1, "never used")


class ExtraArgumentTrimmer:
    """``ctxlab_l1_trim`` with an argument the hookspec does not have."""

    name = "extra-argument-trimmer"

    @hookimpl
    def ctxlab_l1_trim(self, view, ctx, budget):
        return None


def test_misspelt_hook_is_reported_and_the_plugin_skipped(mw_kit, tmp_path):
    tagger = Tagger("KEPT")
    with pytest.warns(PluginWarning) as record:
        mw = mw_with(mw_kit, tmp_path, [MisspeltCutoff(), tagger])
    (message,) = plugin_warnings(record)
    assert "'misspelt-cutoff'" in message and "ctxlab_select_cutof" in message
    names = {p.name for p in describe_plugins(mw.plugin_manager)}
    assert "misspelt-cutoff" not in names and "tagger-KEPT" in names  # only the bad one is dropped
    rec = mw_kit.Driver(mw, history(mw_kit)).round()
    assert rec["exc"] is None
    assert rec["update"]["_summarization_event"]["cutoff_index"] == len(history(mw_kit)) - 2  # default


def test_hook_with_an_argument_its_spec_lacks_is_reported_and_skipped(mw_kit, tmp_path):
    with pytest.warns(PluginWarning) as record:
        mw = mw_with(mw_kit, tmp_path, [ExtraArgumentTrimmer()])
    (message,) = plugin_warnings(record)
    assert "'extra-argument-trimmer'" in message and "ctxlab_l1_trim" in message and "budget" in message
    assert "extra-argument-trimmer" not in {p.name for p in describe_plugins(mw.plugin_manager)}
    assert all(
        impl.plugin_name != "extra-argument-trimmer"
        for impl in mw.plugin_manager.hook.ctxlab_l1_trim.get_hookimpls()
    )
    assert mw_kit.Driver(mw, history(mw_kit)).round()["exc"] is None


class LabStrategies:
    """A strategy plugin: implements a replay-floor hook, unknown to a middleware's manager."""

    name = "lab-strategies"

    @hookimpl
    def ctxlab_register_strategies(self, register):
        register("lab-test", lambda settings: [])


class FutureHook:
    """A hook ctxlab may add later, marked optional: pluggy's way to say "fine if unknown"."""

    name = "future-hook"

    @hookimpl(optionalhook=True)
    def ctxlab_some_future_hook(self, event):
        return None


def test_hooks_of_the_upper_floors_and_optional_hooks_are_not_misspellings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        mw = CompressionMiddleware(plugins=[LabStrategies(), FutureHook()])
    infos = {p.name: p.hooks for p in describe_plugins(mw.plugin_manager)}
    assert infos["lab-strategies"] == ("ctxlab_register_strategies",)
    assert infos["future-hook"] == ("ctxlab_some_future_hook",)


def test_a_misspelt_upper_floor_hook_is_reported_in_the_middleware_and_the_lab():
    from ctxlab.replay import make_lab_manager, strategies

    class Typo:
        name = "typo-strategies"

        @hookimpl
        def ctxlab_register_strategy(self, register):  # the spec is ctxlab_register_strategies
            register("typo", lambda settings: [])

    for make in (
        lambda: CompressionMiddleware(plugins=[Typo()]).plugin_manager,
        lambda: make_lab_manager([Typo()]),
    ):
        with pytest.warns(PluginWarning, match="ctxlab_register_strategy") as record:
            pm = make()
        assert "'typo-strategies'" in plugin_warnings(record)[0]
        assert "typo-strategies" not in {p.name for p in describe_plugins(pm)}
    assert "typo" not in strategies(pm) and "ars" in strategies(pm)


def test_wrong_argument_in_a_lab_hook_is_refused_by_the_lab_manager():
    from ctxlab.replay import make_lab_manager, strategies

    class Wrong:
        name = "wrong-strategies"

        @hookimpl
        def ctxlab_register_strategies(self, register, settings):
            register("wrong", lambda s: [])

    with pytest.warns(PluginWarning, match="ctxlab_register_strategies") as record:
        pm = make_lab_manager([Wrong()])
    assert "'wrong-strategies'" in plugin_warnings(record)[0] and "settings" in plugin_warnings(record)[0]
    assert "wrong" not in strategies(pm)


INSTANCE = """
from ctxlab import hookimpl

class Recorder:
    def __init__(self):
        self.phases = []

    @hookimpl
    def ctxlab_on_event(self, event):
        self.phases.append(event["phase"])

plugin = Recorder()
_hidden = Recorder()  # private: not registered
"""

CLASS_ONLY = """
from ctxlab import hookimpl

class NeverInstantiated:
    @hookimpl
    def ctxlab_on_event(self, event):
        raise AssertionError("a class is not a plugin; an instance is")
"""

MISSPELT_FILE = """
from ctxlab import hookimpl

@hookimpl
def ctxlab_on_evnt(event):
    pass
"""


def test_class_instance_in_a_plugins_folder_registers_like_a_module(mw_kit, tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "recorder.py").write_text(textwrap.dedent(INSTANCE))
    (folder / "class_only.py").write_text(textwrap.dedent(CLASS_ONLY))
    (folder / "misspelt.py").write_text(textwrap.dedent(MISSPELT_FILE))
    monkeypatch.delenv("CTXLAB_PLUGINS_DIR", raising=False)
    with pytest.warns(PluginWarning) as record:
        mw = mw_with(mw_kit, tmp_path / "files", plugins_dir=folder)
    messages = plugin_warnings(record)
    assert any("class_only.py" in m and "no hook implementation" in m for m in messages)
    assert any("'dir:misspelt.py'" in m and "ctxlab_on_evnt" in m for m in messages)
    assert len(messages) == 2
    infos = {p.name: p for p in describe_plugins(mw.plugin_manager)}
    assert infos["dir:recorder.py:plugin"].hooks == ("ctxlab_on_event",)
    assert infos["dir:recorder.py:plugin"].source == f"plugins folder ({folder / 'recorder.py'})"
    # the module itself has no hook functions, the private instance is left alone
    assert not any(n in infos for n in ("dir:recorder.py", "dir:recorder.py:_hidden", "dir:misspelt.py"))
    rec = mw_kit.Driver(mw, history(mw_kit)).round()
    assert rec["exc"] is None
    module = sys.modules["ctxlab_dir_plugin_recorder"]
    assert module.plugin.phases == ["started", "completed"] and module._hidden.phases == []
