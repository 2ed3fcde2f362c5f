"""The formats added for issue 14 (Codex CLI, Aider, Gemini CLI, Anthropic message lists, OpenAI
Responses items), the generic fallback, detection reporting and the loader SDK.

Expected numbers come from ``tests/transcript_counts.json`` (``tests/count_raw.py``, independent of
the loaders): the ``wild`` set (``../shared/transcripts/wild``) and the fixtures in ``tests/data``
(sources and licences in ``tests/data/SOURCES.md``).  The shared set must be present: the tests
fail, never skip, without it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.hookspecs import hookimpl
from ctxlab.transcripts import (
    OBSERVATION_KEY,
    SYNTHETIC_KEY,
    Transcript,
    TranscriptError,
    TranscriptWarning,
    detect_format,
    load_many,
    load_transcripts,
    make_formats_manager,
)

TESTS = Path(__file__).resolve().parent
SHARED = (TESTS.parent / ".." / "shared" / "transcripts").resolve()
ROOTS = {
    "wild": SHARED / "wild",
    "incoming": SHARED / "incoming",
    "data": TESTS / "data",
    "raw": SHARED / "raw",
}
ALL_COUNTS: dict[str, Any] = json.loads((TESTS / "transcript_counts.json").read_text())
NEW_SETS = ("wild", "incoming", "data")
#: every newer file; one whose independent count has no run records no conversation (refused)
NEW_FILES = [(s, rel) for s in NEW_SETS for rel in sorted(ALL_COUNTS[s]) if ALL_COUNTS[s][rel]["runs"]]
EMPTY_FILES = [(s, rel) for s in NEW_SETS for rel in sorted(ALL_COUNTS[s]) if not ALL_COUNTS[s][rel]["runs"]]
CODEX = "codex-cli/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
AIDER = "aider/chat-history-excerpt.md"
GEMINI = "gemini-cli/session-2026-01-16T11-01-file-ops-37b7abef.json"
LITELLM_TEXT = "litellm-text-mode/litellm_proxy__deepseek__deepseek-chat-1757015076.651.json"
ANTHROPIC = "anthropic-messages/coverage-test-fix.messages.json"
RESPONSES = "openai-responses/rollout-019b7f94.items.json"


def _path(set_name: str, rel: str) -> Path:
    root = ROOTS[set_name]
    if not root.is_dir():
        pytest.fail(f"transcript set not found at {root}; these tests need it", pytrace=False)
    return root / rel


#: the doubts some files must raise: what their format does not record (issue 29)
EXPECTED_DOUBTS = {
    "claude-stream-json/wpd-analysis.stream.jsonl": ["the prompt is not in it"],
    "codex-exec-json/exec-019b7f94.jsonl": ["the stream holds no prompt"],
    "gemini-json-output/headless-final-report.json": ["holds only the final reply"],
}


@pytest.fixture(scope="module")
def loaded() -> dict[tuple[str, str], list[Transcript]]:
    out = {}
    for s, rel in NEW_FILES:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")  # no other file may need a fallback or raise a doubt
            out[(s, rel)] = load_transcripts(_path(s, rel))
        doubts = [str(w.message) for w in said]
        expected = EXPECTED_DOUBTS.get(rel, [])
        assert len(doubts) == len(expected) and all(e in d for e, d in zip(expected, doubts, strict=True)), (
            rel,
            doubts,
        )
    return out


def _stats(t: Transcript) -> dict[str, int]:
    calls: list[str | None] = []
    pending: list[str | None] = []
    pairs = orphans = 0
    for m in t.messages:
        if isinstance(m, AIMessage):
            calls += [c["id"] for c in m.tool_calls]
            pending += [c["id"] for c in m.tool_calls]
        elif isinstance(m, ToolMessage):
            if m.tool_call_id in calls:
                pairs += 1
                if m.tool_call_id in pending:
                    pending.remove(m.tool_call_id)
            else:
                orphans += 1
    return {
        "messages": len(t.messages),
        "tool_calls": len(calls),
        "pairs": pairs,
        "orphan_results": orphans,
        "unanswered_calls": len(pending),
        "observations": len(t.observations),
    }


# --- every new file against the independent count -------------------------------------------------


def test_sets_are_fully_counted() -> None:
    for s in NEW_SETS:
        found = sorted(
            p.relative_to(ROOTS[s]).as_posix()
            for p in ROOTS[s].rglob("*")
            if p.is_file()
            and p.name != "SOURCES.md"
            and "__pycache__" not in p.parts
            and not (s == "data" and p.parts[-3] in ("message", "part") and "opencode-storage" in p.parts)
            and not (s == "data" and "cline-task" in p.parts and p.name != "api_conversation_history.json")
            and not (s == "data" and p.parent.name in ("subagents", "events"))  # read with their session file
        )
        assert found == sorted(ALL_COUNTS[s]), f"{s}: rerun tests/count_raw.py"
    assert [len(ALL_COUNTS[s]) for s in NEW_SETS] == [2, 5, 25]
    assert EMPTY_FILES == [("incoming", "gemini-cli-empty/entire-cli_ec-38b74f08e3_2_full.jsonl")]


@pytest.mark.parametrize(("set_name", "rel"), NEW_FILES)
def test_new_file_format_and_counts(set_name: str, rel: str, loaded: Any) -> None:
    expected = ALL_COUNTS[set_name][rel]
    transcripts = loaded[(set_name, rel)]
    assert {t.format for t in transcripts} == {expected["format"]}
    assert detect_format(_path(set_name, rel)) == expected["format"]
    assert {t.run_id: _stats(t) for t in transcripts} == expected["runs"]
    for t in transcripts:
        assert [m.id for m in t.messages] == [f"{t.run_id}-{i}" for i in range(len(t.messages))]
        for i, m in enumerate(t.messages):
            assert bool(m.additional_kwargs.get(OBSERVATION_KEY)) == (i in t.observations)
            if isinstance(m, ToolMessage):
                assert m.name, f"{t.name}: result {i} without a tool name"
            if isinstance(m, AIMessage):
                assert all(c["name"] and isinstance(c["args"], dict) for c in m.tool_calls)


@pytest.mark.parametrize(("set_name", "rel"), EMPTY_FILES)
def test_file_without_conversation_is_refused(set_name: str, rel: str) -> None:
    path = _path(set_name, rel)
    with pytest.raises(TranscriptError, match="no conversation") as err:
        load_transcripts(path)
    assert err.value.path == str(path)
    assert err.value.kind == "no_conversation"
    # in a folder: skipped and listed like a file that is not a transcript, the rest loads
    skipped: list[TranscriptError] = []
    with pytest.warns(
        TranscriptWarning, match=r"skipped 1 file\(s\) that are not transcripts: entire-cli_ec"
    ):
        runs, errors = load_many([path.parent, ROOTS["wild"]], skipped=skipped)
    assert errors == [] and len(runs) == 3
    assert [(e.path, e.kind) for e in skipped] == [(str(path), "no_conversation")]
    assert "no conversation: the gemini_cli file records no user or model message" in str(skipped[0])
    # named on its own it is still an error
    runs, errors = load_many([path])
    assert runs == [] and [(e.path, e.kind) for e in errors] == [(str(path), "no_conversation")]


def test_derived_fixtures_are_reproducible() -> None:
    _path("raw", "")
    done = subprocess.run(
        [sys.executable, str(TESTS.parent / "tools" / "derive_fixtures.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


# --- the formats ----------------------------------------------------------------------------------


def test_codex_rollout(loaded: Any) -> None:
    [t] = loaded[("wild", CODEX)]
    assert t.model == "gpt-5-1-codex-2025-11-13"
    assert [type(m).__name__ for m in t.messages] == ["HumanMessage"] * 3 + ["AIMessage", "ToolMessage"] * 3
    assert t.messages[0].content.startswith("# AGENTS.md instructions for ")
    assert t.messages[2].content == "what is current repository about? summarize purpuse and explain goals"
    first = t.messages[3].tool_calls[0]
    assert first["name"] == "shell" and first["args"]["command"] == ["bash", "-lc", "ls"]
    assert t.messages[4].tool_call_id == first["id"] == "call_1sXxutbQI29Z41aSr0GPiMSO"
    assert t.messages[7].content[0] == {
        "type": "reasoning",
        "reasoning": t.messages[7].content[0]["reasoning"],
    }
    assert t.messages[7].content[0]["reasoning"].startswith("**Clarifying documentation instructions**")
    assert t.metadata["encrypted_reasoning_items"] == 3
    assert t.metadata["skipped_items"] == {"ghost_snapshot": 1}
    assert t.metadata["instructions_chars"] == 2849


def test_responses_items_match_the_rollout(loaded: Any) -> None:
    [items] = loaded[("data", RESPONSES)]
    [codex] = loaded[("wild", CODEX)]
    assert [(type(m), m.content) for m in items.messages] == [(type(m), m.content) for m in codex.messages]
    assert [m.tool_calls for m in items.messages if isinstance(m, AIMessage)] == [
        m.tool_calls for m in codex.messages if isinstance(m, AIMessage)
    ]


def test_responses_request_body(tmp_path: Path) -> None:
    body = {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "tools": [{"type": "function", "name": "add", "parameters": {"type": "object"}}],
        "input": [
            {"role": "user", "content": "2+2?"},
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 2, "b": 2}'},
            {"type": "function_call_output", "call_id": "c1", "output": "4"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]},
        ],
    }
    f = tmp_path / "request.json"
    f.write_text(json.dumps(body))
    [t] = load_transcripts(f)
    assert t.format == "openai_responses" and t.model == "gpt-5" and len(t.tools) == 1
    assert [type(m) for m in t.messages] == [SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert t.messages[2].tool_calls[0]["args"] == {"a": 2, "b": 2} and t.messages[3].name == "add"


def test_aider_history(loaded: Any) -> None:
    first, second = loaded[("wild", AIDER)]
    assert (first.run_id, second.run_id) == ("session1", "session1.2")  # /clear empties the context
    assert first.model == "claude-3-5-sonnet-20240620" and second.metadata["after_clear"]
    assert first.messages[0].content == "make SuitableRepoNotFound class"
    assert "<<<<<<< SEARCH" in first.messages[1].content and ">>>>>>> REPLACE" in first.messages[1].content
    obs = [first.messages[i].content for i in first.observations]
    # only what Aider sent the model: the lint output and the failed edits it reflected, without
    # its own lines (usage, commits, "Applied edit", questions); the error shown after "Only 3
    # reflections allowed, stopping." was never sent
    assert obs[0].startswith("# Fix any errors below, if possible.") and "Attempt to fix" not in obs[0]
    assert all(o.startswith("# 1 SEARCH/REPLACE block failed to match!") for o in obs[1:]) and len(obs) == 3
    assert not any(re.search(r"^(Tokens:|Commit |Applied edit|You can use /undo)", o, re.M) for o in obs)
    assert isinstance(first.messages[-1], AIMessage)
    # the usage lines are each call's recorded usage
    usage = [m.usage_metadata for m in first.messages if isinstance(m, AIMessage)]
    assert [(u or {}).get("input_tokens") for u in usage] == [5094, 9588, 10853, 11090, 11076]
    assert [(u or {}).get("output_tokens") for u in usage] == [222, 292, 118, 151, 130]
    # commands are not sent to the model
    assert not any(str(m.content).startswith("/") for t in (first, second) for m in t.messages)
    assert first.metadata["commands"] == {"add": 1, "clear": 1}
    assert second.metadata["commands"] == {"drop": 2, "add": 1, "run": 1}
    assert first.metadata["edit_blocks"] == 5 and second.metadata["edit_blocks"] == 1


def test_aider_run_output_added_to_chat(tmp_path: Path) -> None:
    f = tmp_path / ".aider.chat.history.md"
    f.write_text(
        "# aider chat started at 2025-01-01 10:00:00\n\n> Main model: gpt-4o with diff edit format  \n\n"
        "#### /run pytest -q  \n> 1 failed  \n> Add command output to the chat? (Y)es/(N)o [Yes]: y  \n"
        "> Added 1 line of output to the chat.  \n\n#### fix it  \n\nDone.\n\n"
        "#### /ask why?\n\nBecause.\n"
    )
    [t] = load_transcripts(f)
    assert t.model == "gpt-4o"
    assert [type(m) for m in t.messages] == [HumanMessage, HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert t.observations == [0] and t.messages[0].content.startswith("1 failed")
    assert t.messages[3].content == "why?"


def test_gemini_cli_session(loaded: Any) -> None:
    [t] = loaded[("data", GEMINI)]
    assert t.model == "gemini-3-pro"
    # the record holding 9 calls was 3 model responses (calls recorded together share a timestamp)
    ai = [m for m in t.messages if isinstance(m, AIMessage)]
    assert [len(m.tool_calls) for m in ai[1:4]] == [2, 4, 3]
    assert ai[1].response_metadata["usage"]["input"] == 5054 and "usage" not in ai[2].response_metadata
    read = next(m for m in t.messages if isinstance(m, ToolMessage) and m.name == "read_file")
    assert read.content.startswith("# Security Policy")
    assert t.metadata["calls_without_result"] == 0 and t.metadata["skipped_messages"] == {}


def test_anthropic_list_loads_with_its_tool_calls(loaded: Any) -> None:
    [t] = loaded[("data", ANTHROPIC)]
    [cc] = load_transcripts(
        _path("raw", "claude-code/snapshot-tests/tests/coverage-test-fix/transcript.jsonl")
    )
    calls = [c for m in t.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(calls) == 13
    assert calls == [c for m in cc.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [type(m) for m in t.messages] == [type(m) for m in cc.messages]
    assert [m.content for m in t.messages] == [m.content for m in cc.messages]
    # before this loader the file loaded silently wrong, as OpenAI chat without calls
    [wrong] = load_transcripts(_path("data", ANTHROPIC), format="openai_chat")
    assert sum(len(m.tool_calls) for m in wrong.messages if isinstance(m, AIMessage)) == 0


def test_anthropic_first_message_beyond_head(tmp_path: Path) -> None:
    """A Cline file whose first message (an attached file) fills the head is still Anthropic."""
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "<task>x</task>" + "y" * 70_000}], "ts": 1},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    f = tmp_path / "api_conversation_history.json"
    f.write_text(json.dumps(msgs))
    [t] = load_transcripts(f)
    assert t.format == "anthropic_messages" and t.messages[2].tool_call_id == "t1"
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"model": "claude", "system": "S", "messages": msgs[1:2], "tools": []}))
    [r] = load_transcripts(body)
    assert (
        r.format == "anthropic_messages" and isinstance(r.messages[0], SystemMessage) and r.model == "claude"
    )


def test_litellm_text_mode_is_not_mixed(loaded: Any) -> None:
    [t] = loaded[("data", LITELLM_TEXT)]
    assert t.metadata["function_calling"] == "prompt"
    assert t.tools == [] and t.metadata["prompt_tools"] == ["terminal", "str_replace_editor", "finish"]
    assert "---- BEGIN FUNCTION #1: terminal ----" in t.messages[0].content  # the schemas' one copy
    assert not any(m.tool_calls for m in t.messages if isinstance(m, AIMessage))
    assert t.messages[-1].content.startswith("<function=finish>")  # the text the model wrote
    assert all(t.messages[i].content.startswith("EXECUTION RESULT of [") for i in t.observations)
    [native] = load_transcripts(
        _path(
            "raw",
            "openhands-sdk/tests/fixtures/llm_data/llm-logs/"
            "litellm_proxy__anthropic__claude-sonnet-4-20250514-1757015046.707.json",
        )
    )
    assert native.metadata["function_calling"] == "native" and len(native.tools) == 3
    assert native.messages[-1].tool_calls[0]["name"] == "finish"


# --- the defects ----------------------------------------------------------------------------------


def test_agent_tars_end_message_is_not_a_turn() -> None:
    [t] = load_transcripts(
        _path("raw", "agent-tars/multimodal/tarko/agent/snapshot/planner/basic/event-stream.jsonl")
    )
    assert "is finished" not in [m.content for m in t.messages]
    assert isinstance(t.messages[-1], ToolMessage) and t.messages[-1].name == "final_answer"
    assert t.metadata["termination_message"] == "Aggent TARS is finished"
    assert t.metadata["skipped_events"]["termination_message"] == 1


def test_opencode_calls_without_output_are_closed() -> None:
    [t] = load_transcripts(_path("raw", "opencode/session-ses_4313.md"))
    closed = [m for m in t.messages if m.additional_kwargs.get(SYNTHETIC_KEY)]
    assert t.metadata["calls_without_output"] == len(closed) == 2
    assert [(m.name, m.content) for m in closed] == [("bash", ""), ("bash", "")]
    assert _stats(t)["unanswered_calls"] == 0
    for m in closed:  # right after the call it answers
        i = t.messages.index(m)
        j = max(k for k in range(i) if isinstance(t.messages[k], AIMessage))
        assert m.tool_call_id in [c["id"] for c in t.messages[j].tool_calls]


def test_swe_agent_missing_final_call_is_said(tmp_path: Path) -> None:
    src = next(_path("raw", "swe-agent").rglob("6e44b9__sweagenttestrepo-1c2844.traj"))
    with pytest.warns(
        TranscriptWarning,
        match=r"6e44b9__sweagenttestrepo-1c2844\.traj: history lacks the "
        r"trajectory's last 1 step\(s\) \(final action 'submit'\)",
    ):
        [t] = load_transcripts(src)
    assert t.metadata["history_missing_final_step"] == {"missing_steps": 1, "final_action": "submit"}
    assert len(t.metadata["warnings"]) == 1
    assert len(t.messages) == 10 and isinstance(t.messages[-1], ToolMessage)  # nothing guessed
    other = next(_path("raw", "swe-agent").rglob("networking_1.traj"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [ok] = load_transcripts(other)
    assert ok.metadata["history_missing_final_step"] is None


# --- generic fallback -----------------------------------------------------------------------------

CHAT = [
    {"role": "system", "content": "You answer."},
    {"role": "user", "content": "weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    {"role": "assistant", "content": "Rain."},
]


def test_generic_fallback_names_the_json_path(tmp_path: Path) -> None:
    f = tmp_path / "bench.json"
    f.write_text(json.dumps({"id": 7, "answer_generation": {"train_messages": CHAT, "score": 1}}))
    with pytest.warns(
        TranscriptWarning, match=r"format: generic_messages at \$\.answer_generation\.train_messages"
    ):
        [t] = load_transcripts(f)
    assert t.format == "generic_messages" and t.run_id == "bench.json"
    assert t.metadata["json_path"] == "$.answer_generation.train_messages"
    assert t.messages[2].tool_calls[0]["name"] == "weather" and t.messages[3].name == "weather"
    assert detect_format(f) == "generic_messages"


def test_generic_fallback_several_runs_and_styles(tmp_path: Path) -> None:
    anthropic = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a b"}]},
    ]
    f = tmp_path / "dump.json"
    f.write_text(json.dumps({"runs": [{"chat": CHAT}, {"request": {"system": "S", "messages": anthropic}}]}))
    with pytest.warns(TranscriptWarning, match=r"\$\.runs\[0\]\.chat, \$\.runs\[1\]\.request\.messages"):
        a, b = load_transcripts(f)
    assert (a.run_id, b.run_id) == ("$.runs[0].chat", "$.runs[1].request.messages")
    assert b.metadata["style"] == "anthropic" and isinstance(b.messages[0], SystemMessage)
    assert b.messages[2].tool_calls[0]["id"] == "t" and b.messages[3].tool_call_id == "t"
    g = tmp_path / "lines.jsonl"
    g.write_text("\n".join(json.dumps({"sample": i, "conversation": {"turns": CHAT}}) for i in range(2)))
    with pytest.warns(TranscriptWarning, match=r"line 1: \$\.conversation\.turns, line 2: "):
        runs = load_transcripts(g)
    assert [r.run_id for r in runs] == ["line 1: $.conversation.turns", "line 2: $.conversation.turns"]


def test_generic_fallback_off_when_format_named_and_refusal(tmp_path: Path) -> None:
    f = tmp_path / "bench.json"
    f.write_text(json.dumps({"answer_generation": {"train_messages": CHAT}}))
    with pytest.raises(TranscriptError, match=r"bench\.json: key messages: expected a list"):
        load_transcripts(f, format="openai_chat")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # named: no fallback warning
        [t] = load_transcripts(f, format="generic_messages")
    assert t.metadata["json_path"] == "$.answer_generation.train_messages"
    g = tmp_path / "scores.json"
    g.write_text(json.dumps({"runs": [{"role": "judge", "score": 3}], "note": "no messages"}))
    with pytest.raises(TranscriptError) as err:
        load_transcripts(g)
    assert str(err.value).startswith(f"{g}: top level (byte 0): unknown JSON shape")
    assert "no OpenAI- or Anthropic-style message list" in str(err.value)


# --- detection reporting --------------------------------------------------------------------------


class _Broken:
    name = "broken"
    description = "a plugin whose detection has a bug"

    def sniff(self, path: Path, head: str) -> bool:
        return {}["missing"]  # type: ignore[no-any-return]

    def match_json(self, data: Any) -> bool:
        raise ValueError("bad match")

    def load(self, path: Path) -> list[Transcript]:
        raise AssertionError("never chosen")


class _BrokenPlugin:
    @hookimpl
    def ctxlab_register_transcript_formats(self, register: Any) -> None:
        register(_Broken())


def test_bug_in_a_plugins_detection_is_reported(tmp_path: Path) -> None:
    pm = make_formats_manager([_BrokenPlugin()])
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(CHAT))
    with pytest.warns(
        TranscriptWarning, match=r"chat\.json: format 'broken': sniff raised KeyError: 'missing'"
    ):
        [t] = load_transcripts(f, pm=pm)
    assert t.format == "openai_chat"
    assert t.metadata["detection_errors"] == ["format 'broken': sniff raised KeyError: 'missing'"]
    g = tmp_path / "odd.json"
    g.write_text(json.dumps({"x": 1}))
    with pytest.warns(TranscriptWarning) as said, pytest.raises(TranscriptError) as err:
        load_transcripts(g, pm=pm)
    assert [str(w.message).split(": ", 1)[1] for w in said] == [
        "format 'broken': sniff raised KeyError: 'missing' (ignored; detection went on)",
        "format 'broken': match_json raised ValueError: bad match (ignored; detection went on)",
    ]
    assert "detection errors: format 'broken': sniff raised KeyError" in str(err.value)
    assert "format 'broken': match_json raised ValueError: bad match" in str(err.value)


def test_builtin_sniffers_survive_absurd_input(tmp_path: Path) -> None:
    """No built-in sniffer raises on deeply nested JSON (a raise would now be reported)."""
    f = tmp_path / "deep.json"
    f.write_text("[" * 20_000 + "]" * 20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TranscriptError, match=r"deep\.json: top level: JSON nested too deeply"):
            load_transcripts(f)


def test_jsonl_first_line_longer_than_head(tmp_path: Path) -> None:
    meta = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s", "instructions": "x" * 100_000}}
    item = {
        "timestamp": "t",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    }
    f = tmp_path / "rollout.jsonl"
    f.write_text(json.dumps(meta) + "\n" + json.dumps(item) + "\n")
    assert detect_format(f) == "codex_rollout"  # the sniffer decides from the first keys of the cut line

    class Lines:  # a plugin that only knows its lines by shape
        name = "only_lines"
        description = "lines {kind, text}"

        def sniff(self, path: Path, head: str) -> bool:
            return False

        def match_line(self, obj: Any) -> bool:
            return isinstance(obj, dict) and obj.get("kind") == "note"

        def load(self, path: Path) -> list[Transcript]:
            rows = [json.loads(x) for x in path.read_text().splitlines()]
            msgs = [HumanMessage(r["text"], id=f"{path.name}-{i}") for i, r in enumerate(rows)]
            return [Transcript(messages=msgs, source=str(path), run_id=path.name, format=self.name)]

    class Plugin:
        @hookimpl
        def ctxlab_register_transcript_formats(self, register: Any) -> None:
            register(Lines())

    g = tmp_path / "notes.jsonl"
    g.write_text(
        json.dumps({"kind": "note", "text": "y" * 90_000}) + "\n" + json.dumps({"kind": "note", "text": "z"})
    )
    [t] = load_transcripts(g, pm=make_formats_manager([Plugin()]))
    assert t.format == "only_lines" and len(t.messages) == 2


# --- the SDK and the worked plugin of docs/transcripts.md -----------------------------------------


def test_sdk_exports_and_pairing() -> None:
    from ctxlab.transcripts import sdk

    assert all(hasattr(sdk, name) for name in sdk.__all__)
    b = sdk.MessageBuilder("r")
    b.ai("", [sdk.tool_call("ls", "{}", "c1")])
    b.tool("first", "c1")
    b.ai("", [sdk.tool_call("cat", {"p": 1}, "c1"), sdk.tool_call("pwd", None, "c2")])  # id reused
    b.tool("second", "c1")
    assert [m.name for m in b.messages if isinstance(m, ToolMessage)] == ["ls", "cat"]
    assert b.pending == [("c2", "pwd")]
    assert b.close_unanswered() == 1
    assert b.messages[-1].additional_kwargs == {SYNTHETIC_KEY: True} and b.messages[-1].name == "pwd"
    b.human("out", observation=True)
    assert b.observations == [len(b.messages) - 1]


def _worked_plugin_source() -> str:
    text = (TESTS.parent / "docs" / "transcripts.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    [source] = [b for b in blocks if b.startswith("# gemini_contents.py")]
    assert 60 <= len(source.splitlines()) <= 100
    return source


def test_docs_worked_plugin(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "gemini_contents"}
    exec(compile(_worked_plugin_source(), "docs/transcripts.md", "exec"), namespace)
    pm = make_formats_manager([namespace["GeminiContentsPlugin"]()])
    checkpoint = [  # shape from the Gemini API docs (Content, FunctionCall, FunctionResponse)
        {"role": "user", "parts": [{"text": "What is the weather in Boston?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Boston"}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"output": "12 C"}}}],
        },
        {"role": "model", "parts": [{"text": "It is 12 C in Boston."}]},
    ]
    f = tmp_path / "checkpoint-weather.json"
    f.write_text(json.dumps(checkpoint))
    [t] = load_transcripts(f, pm=pm)
    assert t.format == "gemini_contents"
    assert [type(m) for m in t.messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert t.messages[2].tool_call_id == t.messages[1].tool_calls[0]["id"] and t.messages[2].content == "12 C"
    assert _stats(t) == {
        "messages": 4,
        "tool_calls": 1,
        "pairs": 1,
        "orphan_results": 0,
        "unanswered_calls": 0,
        "observations": 0,
    }
    body = tmp_path / "request.json"
    body.write_text(
        json.dumps({"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": checkpoint})
    )
    runs, errors = load_many([f, body], pm=pm)
    assert errors == [] and [r.format for r in runs] == ["gemini_contents"] * 2
    assert isinstance(runs[1].messages[0], SystemMessage)
