"""Sessions as their agents keep them (issue 29): Claude Code session folders (sub-agent side files,
the compaction call's file), microcompaction, ``<synthetic>`` turns, partial logs and folders
holding files that are not transcripts.

Real sessions: ``tests/data/claude-code-*`` (Claude Code 2.1 sessions of a public repository,
sources and derivations in ``tests/data/SOURCES.md``); the provider's counts are read from the raw
lines here, without the loaders.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay
from ctxlab.transcripts import SYNTHETIC_KEY, TranscriptError, TranscriptWarning, load_many, load_transcripts
from ctxlab.transcripts.base import is_model_call, recorded_microcompaction_of

DATA = Path(__file__).resolve().parent / "data"
SESSION = DATA / "claude-code-session" / "800d0f7b-eaa5-4c23-9a5c-3db4294bc504.jsonl"
SIDE = SESSION.with_suffix("") / "subagents" / "agent-a51f8d5.jsonl"
COMPACT_CALL = SESSION.with_suffix("") / "subagents" / "agent-acompact-5e1f0c2a9b7d4e36.jsonl"
MICRO = DATA / "claude-code-microcompact" / "b811ba2a-b3e3-44cf-8a97-c6b79d9eb8b5.jsonl"
SYNTHETIC = DATA / "claude-code-synthetic" / "22c9f3be-569b-42ee-86ed-20644f79c5ef.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        pytest.fail(f"fixture not found: {path}", pytrace=False)
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def _quiet(fn: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


# --- a session folder is one unit -------------------------------------------------------------------


def test_session_folder_loads_as_main_and_one_linked_sub_agent(tmp_path: Path) -> None:
    side = _lines(SIDE)
    main_lines = _lines(SESSION)
    runs, errors = _quiet(load_many, SESSION.parent)
    assert errors == [] and [r.run_id for r in runs] == [SESSION.name, "agent-a51f8d5"]
    main, sub = runs
    task = next(
        c for m in main.messages if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] == "Task"
    )
    assert sub.metadata["parent_run"] == SESSION.name and sub.metadata["parent_tool_call_id"] == task["id"]
    assert main.metadata["sub_agent_runs"] == ["agent-a51f8d5"] and main.metadata["compaction_calls"] == 1
    assert sub.metadata["file"] == str(SIDE) and sub.source == str(SESSION)
    # the side file's run: every call (one per message id) and its text, the final report included
    calls = {x["message"]["id"] for x in side if x["type"] == "assistant"}
    assert sum(1 for m in sub.messages if is_model_call(m)) == len(calls) == 2
    texts = [
        b["text"]
        for x in side
        if x["type"] == "assistant"
        for b in x["message"]["content"]
        if b["type"] == "text"
    ]
    got = [m.text for m in sub.messages if isinstance(m, AIMessage)]
    assert [t for t in texts if t not in "\n".join(got)] == [] and got[-1] == texts[-1]
    assert sub.model == "claude-haiku-4-5-20251001"
    # the main file's copy lacks that text and the last call: it is not loaded as a second run
    copy = [
        x["data"]["message"]
        for x in main_lines
        if x["type"] == "progress" and x["data"]["type"] == "agent_progress"
    ]
    assert not any(
        b["type"] == "text" for x in copy if x["type"] == "assistant" for b in x["message"]["content"]
    )
    assert len({x["message"]["id"] for x in copy if x["type"] == "assistant"}) == 1
    # the main file alone gives the same two runs
    assert [r.run_id for r in _quiet(load_transcripts, SESSION)] == [SESSION.name, "agent-a51f8d5"]


def test_compaction_call_file_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="a Claude Code compaction call") as err:
        load_transcripts(COMPACT_CALL)
    assert err.value.kind == "not_a_run"
    # the sub-agents' folder without its session: the side file is its own run, the compaction
    # call is skipped and listed, not a failure
    skipped: list[TranscriptError] = []
    with pytest.warns(
        TranscriptWarning, match=r"skipped 1 file\(s\) that are not transcripts: agent-acompact-"
    ):
        runs, errors = load_many(SIDE.parent, skipped=skipped)
    assert errors == [] and [r.run_id for r in runs] == [SIDE.name]
    assert [e.path for e in skipped] == [str(COMPACT_CALL)]


def test_side_file_without_the_in_file_copy_is_linked_by_the_task_result(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    shutil.copytree(SESSION.parent, folder)
    main = folder / SESSION.name
    lines = [x for x in _lines(main) if x["type"] != "progress"]  # an older main file: no copy
    main.write_text("".join(json.dumps(x) + "\n" for x in lines))
    [m, sub] = _quiet(load_transcripts, main)
    task = next(
        c["id"] for x in m.messages if isinstance(x, AIMessage) for c in x.tool_calls if c["name"] == "Task"
    )
    assert sub.metadata["parent_tool_call_id"] == task and len(sub.messages) == 11


# --- microcompaction ---------------------------------------------------------------------------------


def _recorded_inputs(path: Path) -> list[int]:
    usage: dict[str, dict[str, int]] = {}
    for x in _lines(path):
        if x["type"] == "assistant" and x["message"]["model"] != "<synthetic>":
            usage[x["message"]["id"]] = x["message"]["usage"]
    return [
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usage.values()
    ]


def test_microcompaction_is_marked_in_the_loaded_run() -> None:
    boundaries = [x for x in _lines(MICRO) if x.get("subtype") == "microcompact_boundary"]
    cleared = [i for b in boundaries for i in b["microcompactMetadata"]["compactedToolIds"]]
    [t] = _quiet(load_transcripts, MICRO)
    marked = {
        m.tool_call_id: recorded_microcompaction_of(m) for m in t.messages if recorded_microcompaction_of(m)
    }
    assert sorted(marked) == sorted(cleared) and len(cleared) == 9
    assert t.metadata["microcompactions"] == 2
    assert {mark["index"] for mark in marked.values()} == {0, 1}
    # the loaded content is the recorded one (other strategies replay as if nothing was cleared)
    raw = {
        b["tool_use_id"]: b["content"]
        for x in _lines(MICRO)
        if x["type"] == "user" and isinstance(x["message"]["content"], list)
        for b in x["message"]["content"]
        if b["type"] == "tool_result"
    }
    kept = {
        m.tool_call_id: m.content
        for m in t.messages
        if isinstance(m, ToolMessage) and m.tool_call_id in marked
    }
    assert kept == {i: raw[i] for i in cleared} and sum(len(str(c)) for c in kept.values()) == 248_988


def test_recorded_replay_drops_the_cleared_results_at_the_boundary() -> None:
    recorded = _recorded_inputs(MICRO)
    falls = [i for i in range(1, len(recorded)) if recorded[i] < recorded[i - 1]]
    assert falls == [5, 8] and recorded[7] - recorded[8] == 23_337
    # the histories alone (no unrecorded prefix: with it the request passes ARS's threshold)
    rec = replay(MICRO, "recorded", keep_views=True, measure="tiktoken", unrecorded_prefix="off")
    # ARS with T above every request (~107K tokens at call 8), so that it compresses nothing
    above = CompressionSettings(summary_threshold=200)
    ars = replay(MICRO, "ars", keep_views=True, measure="tiktoken", unrecorded_prefix="off", settings=above)
    sent = [r["view_tokens"] for r in rec.rows]
    assert [r["recorded_input_tokens"] for r in rec.rows] == recorded
    # the sent tokens follow the recorded input: growth within a segment and the fall at each
    # boundary, within the estimator's error (the bound of test_replay_recorded's growth test)
    for lo, hi in ((0, 4), (4, 5), (5, 7), (7, 8), (8, 9)):
        ratio = (sent[hi] - sent[lo]) / (recorded[hi] - recorded[lo])
        assert 0.7 < ratio < 1.3, (lo, hi, ratio)
    label = rec.rows[0]["transcript"]
    after = rec.views[(label, "recorded", 8)].messages
    before = rec.views[(label, "recorded", 7)].messages
    placeholder = "[Old tool result content cleared]"
    assert sum(1 for m in after if m.content == placeholder) == 9
    assert sum(1 for m in before if m.content == placeholder) == 5
    assert not any(m.content == placeholder for m in ars.views[(label, "ars", 8)].messages)
    assert ars.rows[8]["level"] == "none"
    assert ars.rows[8]["view_tokens"] > sent[8] + 30_000  # ARS (below its threshold) keeps them all


# --- <synthetic> turns -------------------------------------------------------------------------------


def test_synthetic_turn_is_marked_and_no_model_call() -> None:
    raw = _lines(SYNTHETIC)
    real = {
        x["message"]["id"] for x in raw if x["type"] == "assistant" and x["message"]["model"] != "<synthetic>"
    }
    [t] = _quiet(load_transcripts, SYNTHETIC)
    [fake] = [m for m in t.messages if isinstance(m, AIMessage) and m.additional_kwargs.get(SYNTHETIC_KEY)]
    assert fake.text == "Prompt is too long" and fake.usage_metadata is None
    assert t.metadata["synthetic_messages"] == 1
    rows = replay(t, "recorded").rows
    assert len(rows) == len(real) == 3  # one row per real model call
    assert all(r["recorded_input_tokens"] > 0 for r in rows)


# --- partial logs ------------------------------------------------------------------------------------


def test_log_cut_mid_line_loads_its_complete_lines(tmp_path: Path) -> None:
    data = MICRO.read_bytes()[:100_000]
    cut = tmp_path / "live.jsonl"
    cut.write_bytes(data)
    complete = data.count(b"\n")
    with pytest.warns(TranscriptWarning) as said:
        [t] = load_transcripts(cut)
    texts = [str(w.message) for w in said if issubclass(w.category, TranscriptWarning)]
    assert texts == [
        f"{cut}: line {complete + 1}: cut off mid-line (a partial log: a live or crashed agent's): "
        + texts[0].split("agent's): ", 1)[1]
    ]
    assert f"({complete} complete line(s) before it kept)" in texts[0]
    assert t.metadata["warnings"] == texts
    full = _quiet(load_transcripts, MICRO)[0]
    assert t.messages and [m.content for m in t.messages] == [
        m.content for m in full.messages[: len(t.messages)]
    ]
    with pytest.warns(TranscriptWarning, match="cut off mid-line"):
        runs, errors = load_many([cut])  # a batch keeps the file
    assert errors == [] and len(runs) == 1


def test_bad_middle_line_fails_the_file_unless_lenient(tmp_path: Path) -> None:
    lines = SYNTHETIC.read_text(encoding="utf-8").split("\n")
    lines[5] = lines[5][:40]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines))
    runs, errors = load_many([bad])
    assert runs == [] and [e.where.split(" column")[0] for e in errors] == ["line 6"]
    with pytest.warns(TranscriptWarning, match=r"bad\.jsonl: line 6: invalid JSON"):
        runs, errors = load_many([bad], lenient=True)
    assert errors == [] and len(runs) == 1


# --- a folder holding files that are not transcripts -------------------------------------------------


def test_folder_with_non_transcripts_skips_and_lists_them(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(SYNTHETIC, folder)
    (folder / "analyse.py").write_text("print('hi')\n")
    (folder / "notes.txt").write_text("Tried three settings; see results.json.\n")
    (folder / "results.json").write_text(json.dumps({"score": 0.8, "runs": [1, 2]}))
    (folder / "broken.json").write_text('{"messages": [')  # a broken transcript stays a failure
    skipped: list[TranscriptError] = []
    with pytest.warns(TranscriptWarning, match=r"skipped 3 file\(s\) that are not transcripts"):
        runs, errors = load_many(folder, skipped=skipped)
    assert len(runs) == 1 and [Path(e.path).name for e in errors] == ["broken.json"]
    assert sorted(Path(e.path).name for e in skipped) == ["analyse.py", "notes.txt", "results.json"]
    # named one by one, a file that is not a transcript is an error
    runs, errors = load_many([folder / "notes.txt"])
    assert runs == [] and errors[0].kind == "unknown_format"


# --- Aider architect mode ------------------------------------------------------------------------------

AIDER = DATA / "aider-architect" / ".aider.chat.history.md"


def test_aider_architect_and_editor_are_separate_linked_runs() -> None:
    arch, ed1, ed2 = _quiet(load_transcripts, AIDER)
    assert (arch.metadata["role"], ed1.metadata["role"], ed2.metadata["role"]) == (
        "architect",
        "editor",
        "editor",
    )
    assert arch.metadata["editor_runs"] == [ed1.run_id, ed2.run_id]
    plans = [m for m in arch.messages if isinstance(m, AIMessage) and is_model_call(m)]
    for ed, plan in zip((ed1, ed2), plans, strict=True):
        # the editor's own request: the architect's plan, re-sent; not a message the user typed
        assert ed.metadata["parent_run"] == arch.run_id and ed.metadata["parent_message"] == plan.id
        assert ed.messages[0].additional_kwargs["aider_plan_of"] == plan.id
        assert ed.messages[0].content == plan.content
    typed = [m for m in arch.messages if m.type == "human" and not m.additional_kwargs.get(SYNTHETIC_KEY)]
    assert [m.content for m in typed] == [
        "make SuitableRepoNotFound class",
        "catch SuitableRepoNotFound not `FileNotFoundError`",
    ]
    # Aider's own turns after each editor run: in the architect's history, no model call
    made_up = [m.content for m in arch.messages if m.additional_kwargs.get(SYNTHETIC_KEY)]
    assert made_up == ["I made those changes to the files.", "Ok."] * 2
    assert arch.model == "claude-3-5-sonnet-20241022" and ed1.model == "claude-3-5-sonnet-20241022"
    # console lines the model never saw are out; the lint output it was sent is an observation
    text = "\n".join(str(m.content) for t in (arch, ed1, ed2) for m in t.messages)
    assert not any(s in text for s in ("Applied edit", "Commit c17d57c", "Tokens:", "Edit the files?"))
    assert [ed2.messages[i].content.splitlines()[0] for i in ed2.observations] == [
        "# Fix any errors below, if possible."
    ]
    # the Tokens lines are each call's recorded usage (Aider rounds above 1,000: "5.1k")
    assert [m.usage_metadata["input_tokens"] for m in plans] == [5100, 9600]  # type: ignore[index]
    calls = [m for m in ed2.messages if is_model_call(m)]
    assert [m.usage_metadata["input_tokens"] for m in calls] == [7500, 7800]  # type: ignore[index]


def test_aider_editor_calls_replay_their_own_request() -> None:
    arch, ed1, _ = _quiet(load_transcripts, AIDER)
    # the messages each sent (no unrecorded prefix, which Aider's "Tokens: N sent" would add)
    a = replay(arch, "recorded", keep_views=True, measure="tiktoken", unrecorded_prefix="off")
    e = replay(ed1, "recorded", keep_views=True, measure="tiktoken", unrecorded_prefix="off")
    assert len(a.rows) == 2 and len(e.rows) == 1  # one row per model call ("Ok." is none)
    [view] = [v.messages for k, v in e.views.items()]
    assert [m.content for m in view] == [ed1.messages[0].content]  # the plan alone, no architect history
    # the architect's next request holds its whole history, the plan among it; the editor's not
    assert e.rows[0]["view_tokens"] < a.rows[1]["view_tokens"] - a.rows[0]["view_tokens"]
    assert e.rows[0]["recorded_input_tokens"] == 2900


def test_aider_history_is_found_in_a_folder_though_hidden(tmp_path: Path) -> None:
    shutil.copy(AIDER, tmp_path)
    (tmp_path / ".env").write_text("KEY=1\n")  # other hidden files stay skipped
    runs, errors = _quiet(load_many, tmp_path)
    assert errors == [] and [r.run_id for r in runs] == [
        ".aider.chat.history.md",
        *(f".aider.chat.history.md.editor{k}" for k in (1, 2)),
    ]


# --- LangGraph / LangSmith traces ----------------------------------------------------------------------

TRACE = DATA / "langgraph" / "tau-bench-task48-trial1.trace.jsonl"


def test_langgraph_trace_loads_as_one_run() -> None:
    runs = _lines(TRACE)
    [root] = [r for r in runs if r["parent_run_id"] is None]
    nodes = [r for r in runs if r["run_type"] == "chain" and r["parent_run_id"] == root["id"]]
    assert len(nodes) > 5  # every node's output is a message list of its own
    [t] = _quiet(load_transcripts, TRACE)
    assert t.run_id == TRACE.name and t.metadata["trace_id"] == root["trace_id"]
    assert [m.text for m in t.messages] == [m["kwargs"]["content"] for m in root["outputs"]["messages"]]
    assert t.model == "gpt-4o"


def test_langgraph_sub_agent_with_its_own_model_calls_is_its_own_run(tmp_path: Path) -> None:
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage as AI
    from langchain_core.messages import HumanMessage as Human

    runs = _lines(TRACE)
    root = runs[0]
    tools_node = next(r for r in runs if r["name"] == "tools")
    ask = [dumpd(Human("Which flights leave JFK tomorrow?", id="s1"))]
    answer = dumpd(AI("HAT069 and HAT083.", id="s2"))
    sub = [
        {"id": "sub", "trace_id": root["trace_id"], "parent_run_id": tools_node["id"], "name": "researcher",
         "run_type": "chain", "inputs": {"messages": ask}, "outputs": {"messages": [*ask, answer]}},
        {"id": "sub-llm", "trace_id": root["trace_id"], "parent_run_id": "sub", "name": "researcher",
         "run_type": "llm", "inputs": {"messages": [ask]}, "outputs": {"generations": [[{"message": answer}]]}},
    ]  # fmt: skip
    other = [{**r, "trace_id": "t2", "id": f"t2-{r['id']}"} for r in runs[:3]]  # a second trace
    other[0]["parent_run_id"] = None
    f = tmp_path / "export.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in [*runs, *sub, *other]))
    main, researcher, second = _quiet(load_transcripts, f)
    assert main.run_id == f"trace-{root['trace_id']}" and second.run_id == "trace-t2"
    assert researcher.metadata["parent_run"] == main.run_id and main.metadata["sub_agent_runs"] == [
        researcher.run_id
    ]
    assert [m.text for m in researcher.messages] == [
        "Which flights leave JFK tomorrow?",
        "HAT069 and HAT083.",
    ]


# --- what a loader cannot place is said ----------------------------------------------------------------


def test_claude_code_odd_session_folder_is_said(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    shutil.copytree(SESSION.parent, folder)
    main = folder / SESSION.name
    lines = _lines(main)
    boundary = {"type": "system", "subtype": "microcompact_boundary", "uuid": "m1", "sessionId": "s",
                "microcompactMetadata": {"trigger": "auto", "compactedToolIds": ["toolu_not_here", "toolu_gone"]}}  # fmt: skip
    main.write_text("".join(json.dumps(x) + "\n" for x in [*lines[:12], boundary, *lines[12:]]))
    side = folder / SESSION.stem / "subagents" / SIDE.name
    side.write_text("{broken\n" + side.read_text())
    with pytest.warns(TranscriptWarning) as said:
        runs = load_transcripts(main)
    text = [str(w.message) for w in said]
    assert any("microcompact_boundary clears 2 tool result(s), 2 of them not in the run" in x for x in text)
    assert any(
        f"sub-agent file {SIDE.name}:" in x and "the main file's copy of it is used" in x for x in text
    )
    # the main file's copy stands in (it lacks the sub-agent's text: the warning says why)
    assert [r.run_id for r in runs] == [SESSION.name, "agent-a51f8d5"] and len(runs[1].messages) == 10


def test_cli_replays_a_folder_with_a_cut_log_and_non_transcripts(tmp_path: Path, capsys: Any) -> None:
    from ctxlab.cli.main import main

    folder = tmp_path / "logs"
    folder.mkdir()
    data = SYNTHETIC.read_bytes()
    (folder / "live.jsonl").write_bytes(data[: data.index(b"\n", 20_000) + 200])  # cut mid-line
    (folder / "analyse.py").write_text("print(1)\n")
    (folder / "results.json").write_text('{"score": 1}')
    out = tmp_path / "out"
    code = main(["replay", str(folder), "--no-progress", "--no-figures", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "live.jsonl: line" in err and "cut off mid-line" in err
    assert "skipped 2 file(s) that are not transcripts: analyse.py, results.json" in err
    assert "failure" not in err
