"""Message marks and predicates (ctxlab.core.marks): what they recognise, and that they have one home."""

from __future__ import annotations

import ast
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core import marks
from ctxlab.core.marks import (
    OFFLOAD_MARKER,
    is_observation,
    is_summary_message,
    is_tool_result,
    is_user_request,
    langchain_summary_kwargs,
    latest_request_of,
    summary_body_of,
    summary_kwargs,
)

ROOT = Path(__file__).resolve().parents[1]

SUMMARY = HumanMessage("summary", additional_kwargs=summary_kwargs("the body", "fix the bug"))
FOREIGN_SUMMARY = HumanMessage("Here is a summary", additional_kwargs=langchain_summary_kwargs())
OBSERVATION = HumanMessage("$ ls\nfile.txt", additional_kwargs={"ctxlab_observation": True})
USER = HumanMessage("please fix the bug")
TOOL = ToolMessage("3 passed", tool_call_id="c1")


def test_predicates_tell_the_kinds_of_message_apart() -> None:
    kinds = [SUMMARY, FOREIGN_SUMMARY, OBSERVATION, USER, TOOL, AIMessage("ok"), SystemMessage("s")]
    assert [is_summary_message(m) for m in kinds] == [True, True, False, False, False, False, False]
    assert [is_observation(m) for m in kinds] == [False, False, True, False, False, False, False]
    assert [is_tool_result(m) for m in kinds] == [False, False, True, False, True, False, False]
    assert [is_user_request(m) for m in kinds] == [False, False, False, True, False, False, False]
    # what is not a message is none of them (the replay state may hold other values)
    for thing in (None, {"additional_kwargs": {"lc_source": "summarization"}}, "text"):
        assert not (is_summary_message(thing) or is_tool_result(thing) or is_user_request(thing))


def test_summary_marks_carry_the_body_and_the_latest_request() -> None:
    assert SUMMARY.additional_kwargs == {
        "lc_source": "summarization",
        "ctxlab_summary": True,
        "ctxlab_summary_body": "the body",
        "ctxlab_latest_request": "fix the bug",
    }
    assert summary_body_of(SUMMARY) == "the body" and latest_request_of(SUMMARY) == "fix the bug"
    assert "ctxlab_latest_request" not in summary_kwargs("body")  # no request: no key
    assert summary_body_of(FOREIGN_SUMMARY) is None and latest_request_of(USER) is None
    assert langchain_summary_kwargs() is not langchain_summary_kwargs()  # a fresh dict each time


def test_the_offload_marker_opens_offloaded_results() -> None:
    from ctxlab.core.builtin.trimmers import OFFLOAD_MARKER as trimmer_marker

    assert trimmer_marker is OFFLOAD_MARKER
    assert marks.truncation_marker(4096).endswith("original length 4096 characters]")


def _code_strings(path: Path) -> set[str]:
    """The string constants of a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


def test_every_mark_is_spelled_only_in_marks_py() -> None:
    spelled = {
        marks.LC_SOURCE_KEY,
        marks.SUMMARY_FLAG_KEY,
        marks.SUMMARY_BODY_KEY,
        marks.LATEST_REQUEST_KEY,
        marks.OBSERVATION_KEY,
        marks.OFFLOAD_MARKER,
        *marks.SUMMARIZER_ROLE_METADATA,
    }
    files = [*ROOT.glob("ctxlab/**/*.py"), *ROOT.glob("plugins/*/src/**/*.py")]
    assert len(files) > 50
    found = {
        str(path.relative_to(ROOT)): sorted(_code_strings(path) & spelled)
        for path in files
        if path.name != "marks.py" or path.parent.name != "core"
    }
    assert {f: keys for f, keys in found.items() if keys} == {}
