"""The README's Python snippets run as written, offline (no API key, no network), and
``ctxlab.testing.ScriptedChatModel`` does what the README says of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from ctxlab.testing import ScriptedChatModel, tool_call

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def run_snippet(code: str, where: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(where)
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(code, f"{README}:snippet", "exec"), namespace)  # our own README
    return namespace


MIDDLEWARE = next(s for s in SNIPPETS if "ScriptedChatModel" in s)
HARNESS = next(s for s in SNIPPETS if "ModelNodeHarness" in s)


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_every_snippet_runs(index, tmp_path, monkeypatch, capsys):
    run_snippet(SNIPPETS[index], tmp_path, monkeypatch)


def test_the_middleware_snippet_runs_offline(tmp_path, monkeypatch, capsys):
    # spec: R6, R10 — offloads and a summary, through a real create_agent loop with a checkpointer
    ns = run_snippet(MIDDLEWARE, tmp_path, monkeypatch)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Step 3 failed."
    assert out[1].startswith("[Context summary]")  # an English conversation: an English summary
    model = ns["model"]
    assert model.calls == 9 and model.summary_calls >= 1  # the summaries used no scripted turn
    offloads = sorted((tmp_path / "workspace/outputs/large_tool_results").iterdir())
    assert len(offloads) == 8
    assert offloads[0].read_text(encoding="utf-8").startswith("step ")
    assert any((tmp_path / "workspace/outputs/conversation_history").iterdir())


def test_the_harness_snippet_runs(tmp_path, monkeypatch):
    ns = run_snippet(HARNESS, tmp_path, monkeypatch)
    call = ns["call"]
    assert [m.content for m in call.views[0].messages] == ["hello"]
    assert call.response is not None and call.response.result[0].content == "hi"


def test_scripted_turns_texts_calls_and_messages():
    model = ScriptedChatModel.from_turns(
        [
            tool_call("a", x=1),
            [tool_call("b"), tool_call("c", id="mine")],
            AIMessage("as it is"),
            "the end",
        ]
    )
    bound = model.bind_tools([])
    assert bound is model
    first = model.invoke("go")
    assert first.tool_calls == [{"name": "a", "args": {"x": 1}, "id": "call_001", "type": "tool_call"}]
    second = model.invoke("go")
    assert [(c["name"], c["id"]) for c in second.tool_calls] == [("b", "call_002"), ("c", "mine")]
    assert model.invoke("go").content == "as it is"
    assert model.invoke("go").content == "the end"
    with pytest.raises(RuntimeError, match="no more assistant turns"):
        model.invoke("go")


def test_a_bad_turn_is_named_by_its_position():
    with pytest.raises(TypeError, match=r"turns\[1\]: expected a text"):
        ScriptedChatModel.from_turns(["ok", 42])


def test_importing_ctxlab_testing_pulls_no_lab_package():
    import subprocess
    import sys

    code = (
        "import sys, ctxlab.testing; print(sorted(m for m in ('polars', 'matplotlib') if m in sys.modules))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        == "[]\n"
    )
