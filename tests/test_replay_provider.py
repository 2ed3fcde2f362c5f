"""The provider stand-in of a replay (:mod:`ctxlab.replay.provider`), the recorded live model, the
replay's thread id, and how plugins-folder plugins name the strategies they change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool

from ctxlab.replay import ContextWindow, RecordedChatModel, make_lab_manager, profile_window, thread_id_for
from ctxlab.replay.models import ScriptExhaustedError
from ctxlab.replay.strategies import BEHAVIOUR_HOOKS, OBSERVER_HOOKS, folder_plugins, strategy_label

SYSTEM = SystemMessage("You are a careful agent.")
LONG = [HumanMessage("word " * 400, id="h1")]


@pytest.mark.parametrize("bad", [0, -5, True, 1.5])
def test_a_window_is_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="max_input_tokens"):
        ContextWindow(bad)  # type: ignore[arg-type]


def test_an_unknown_counter_is_refused() -> None:
    with pytest.raises(ValueError, match="counter='bytes'"):
        ContextWindow(1000, counter="bytes")


def test_a_request_above_the_window_is_refused_like_a_provider() -> None:
    window = ContextWindow(1000)
    n = window.request_tokens(SYSTEM, [], LONG)
    assert 400 <= n <= 1000 and window.check(SYSTEM, [], LONG) == n  # at or below: passes
    small = ContextWindow(n - 1)
    with pytest.raises(ContextOverflowError, match=rf"prompt is too long: {n} tokens > {n - 1} maximum"):
        small.check(SYSTEM, [], LONG)
    assert small.describe() == f"{n - 1:,} tokens (tiktoken, --context-window)"


def test_the_counters_differ_and_tools_count() -> None:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return path

    tiktoken, charclass = ContextWindow(10_000), ContextWindow(10_000, counter="char-class")
    assert tiktoken.request_tokens(SYSTEM, [], LONG) != charclass.request_tokens(SYSTEM, [], LONG)
    assert tiktoken.request_tokens(SYSTEM, [read_file], LONG) > tiktoken.request_tokens(SYSTEM, [], LONG)


def test_a_window_from_the_installed_provider_profiles() -> None:
    assert profile_window("anthropic:claude-sonnet-4-5") >= 100_000
    with pytest.raises(ValueError, match="expected provider:model"):
        profile_window("claude-sonnet-4-5")
    with pytest.raises(ValueError, match="not in the langchain_anthropic profiles; known models include"):
        profile_window("anthropic:claude-nonesuch")
    with pytest.raises(ValueError, match="no model profiles for provider 'nosuch'"):
        profile_window("nosuch:model")


def test_the_recorded_model_refuses_above_its_window_without_using_an_answer() -> None:
    answers = [AIMessage("one", id="a1"), AIMessage("two", id="a2")]
    model = RecordedChatModel(answers=answers, window=ContextWindow(50))
    assert model.profile == {"max_input_tokens": 50}
    with pytest.raises(ContextOverflowError):
        model.invoke([SYSTEM, *LONG])
    bound = model.bind_tools([])
    assert bound.invoke([HumanMessage("hi")]).id == "a1"  # the refused call used no answer
    assert model.invoke([HumanMessage("hi")]).id == "a2"  # copies share the cursor and requests
    assert len(model.requests) == 3 and model.requests[0][0] is SYSTEM
    with pytest.raises(ScriptExhaustedError):
        model.invoke([HumanMessage("again")])


def test_the_thread_id_of_a_replay_is_its_label_made_safe() -> None:
    assert thread_id_for("katy.traj") == "katy.traj"
    tid = thread_id_for("数据/会话.json")
    assert tid.isascii() and tid != thread_id_for("数据/会话2.json")


OBSERVER = "from ctxlab.core.hookspecs import hookimpl\n@hookimpl\ndef ctxlab_on_event(event):\n    pass\n"
CUTOFF = (
    "from ctxlab.core.hookspecs import hookimpl\n"
    "class Rule:\n"
    "    @hookimpl(tryfirst=True)\n"
    "    def ctxlab_select_cutoff(self, messages, ctx):\n"
    "        return None\n"
    "rule = Rule()\n"
)


def test_only_plugins_that_change_compression_rename_the_strategies(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CTXLAB_PLUGINS_DIR", raising=False)
    assert "ctxlab_on_event" in OBSERVER_HOOKS and "ctxlab_on_event" not in BEHAVIOUR_HOOKS
    assert {"ctxlab_select_cutoff", "ctxlab_l1_trim", "ctxlab_estimate_message"} <= BEHAVIOUR_HOOKS
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "watch.py").write_text(OBSERVER)
    pm = make_lab_manager(plugins_dir=folder)
    assert [(n, h) for n, _, h in folder_plugins(pm)] == [("dir:watch.py", ())]
    assert strategy_label("ars", pm) == "ars"  # an observer changes nothing
    (folder / "rules.py").write_text(CUTOFF)
    pm = make_lab_manager(plugins_dir=folder)
    assert strategy_label("ars", pm) == "ars+rules.rule"
    assert make_lab_manager(read_env=False).list_name_plugin()  # the lab manager builds without env


def test_the_lab_reads_the_environment_folder_and_the_core_does_not(tmp_path, monkeypatch) -> None:
    from ctxlab.core.plugins import make_plugin_manager

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "rules.py").write_text(CUTOFF)
    monkeypatch.setenv("CTXLAB_PLUGINS_DIR", str(folder))
    assert strategy_label("ars", make_lab_manager()) == "ars+rules.rule"
    assert strategy_label("ars", make_lab_manager(read_env=False)) == "ars"
    assert not [n for n, _ in make_plugin_manager().list_name_plugin() if n.startswith("dir:")]
    assert [n for n, _ in make_plugin_manager(read_env=True).list_name_plugin() if n.startswith("dir:")]


def test_the_byte_bound_is_never_below_the_exact_count() -> None:
    from ctxlab.replay.metrics import TiktokenEstimator
    from ctxlab.replay.provider import ByteBound

    exact, bound = TiktokenEstimator(), ByteBound()
    texts = [
        "",
        "plain words",
        "日本語のテキスト",
        "emoji 🎉🎉 and Ünïcode",
        "x" * 5000,
        "\ud800 lone",
        "a\n\n\tb",
    ]
    for text in texts:
        m = AIMessage(
            text, tool_calls=[{"name": "run", "args": {"cmd": text}, "id": "c1", "type": "tool_call"}]
        )
        assert bound.message_tokens(m) >= exact.message_tokens(m)
    # a byte-level BPE never makes more tokens than bytes; ASCII prose makes far fewer
    assert bound.text_tokens("plain words here") == 16 > exact.text_tokens("plain words here")


def test_refuse_refuses_exactly_what_check_refuses() -> None:
    n = ContextWindow(1000).request_tokens(SYSTEM, [], LONG)
    for window in (n - 1, n, n + 1, 4 * n):
        w = ContextWindow(window)
        if window < n:
            with pytest.raises(ContextOverflowError, match=rf"{n} tokens > {window} maximum"):
                w.refuse(SYSTEM, [], LONG)
        else:
            assert w.refuse(SYSTEM, [], LONG) is None


def test_refuse_lets_a_request_through_uncounted_when_its_byte_bound_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the shortcut of refuse(): with the tiktoken counter, a request whose ByteBound (UTF-8 bytes,
    # framed alike) is within the window is never counted exactly
    from ctxlab.core.estimation import EstimateCache
    from ctxlab.replay.provider import ByteBound

    n = ContextWindow(1000).request_tokens(SYSTEM, [], LONG)
    byte_bound = ByteBound()
    bound = EstimateCache(byte_bound.message_tokens, byte_bound.tools_tokens).request_tokens(SYSTEM, [], LONG)
    assert bound > 2 * n, "ASCII prose: far fewer tokens than bytes, so the two cases below differ"

    def not_counted(*args: object) -> int:
        raise AssertionError("counted exactly although the byte bound fits the window")

    for window in (bound, bound + 1, 4 * bound):  # at or above the bound: the shortcut
        w = ContextWindow(window)
        monkeypatch.setattr(w, "request_tokens", not_counted)
        w.refuse(SYSTEM, [], LONG)  # let through: no error
    counted: list[int] = []
    for window in (n, (n + bound) // 2, bound - 1):  # between the exact count and the bound
        w = ContextWindow(window)
        monkeypatch.setattr(w, "request_tokens", _recording(w.request_tokens, counted))
        w.refuse(SYSTEM, [], LONG)  # counted exactly, then let through
    assert counted == [n, n, n], "each was counted exactly"
    with pytest.raises(ContextOverflowError, match=rf"{n} tokens > {n - 1} maximum"):
        ContextWindow(n - 1).refuse(SYSTEM, [], LONG)
    # the char-class counter has no bound: every request is counted
    w = ContextWindow(4 * bound, counter="char-class")
    monkeypatch.setattr(w, "request_tokens", not_counted)
    with pytest.raises(AssertionError, match="counted exactly"):
        w.refuse(SYSTEM, [], LONG)


def _recording(count: Callable[..., int], into: list[int]) -> Callable[..., int]:
    def recorded(*args: Any) -> int:
        into.append(count(*args))
        return into[-1]

    return recorded
