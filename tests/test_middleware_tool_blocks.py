"""One notion of a tool call (issue 30, item 2): calls and results carried as content blocks pair
exactly as ``tool_calls`` and ToolMessages do — in the cutoff, the orphan scan of a view, the
offload of large results, the history file and the summarizer's input.

The formats: LangChain's own (``AIMessage.tool_calls`` + ``ToolMessage``), Anthropic's as
``convert_to_messages`` makes of provider dicts (an assistant ``tool_use`` block with no
``tool_calls``; the results in a user message of ``tool_result`` blocks) and OpenAI Responses
items (``function_call`` blocks; ``function_call_output`` blocks).  A property test runs the same
generated histories in the three formats through many rounds and checks, in every view, the
pairing properties the ``tool_calls`` histories pass (R9).  Real parts: the middleware's round
through ``ModelNodeHarness``, ``FilesystemBackend`` files.
"""

from __future__ import annotations

import json
import re
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.marks import is_user_request
from ctxlab.core.messages import sendable_view, valid_cut_positions
from tests.hypothesis_profiles import middleware_props

PROPS = middleware_props(40)
LTR_RE = re.compile(r"/outputs/large_tool_results/[A-Za-z0-9_-]+-[0-9a-f]{64}\.txt")
FORMATS = ["tool_calls", "anthropic", "responses"]


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


# ------------------------------------------------------------------------------------------------
# building one abstract history in three formats
# ------------------------------------------------------------------------------------------------


def call_message(fmt: str, mid: str, text: str, calls: list[tuple[str, str, dict]]) -> AIMessage:
    """An assistant message issuing ``calls`` [(id, name, args)] in format ``fmt``."""
    if fmt == "tool_calls":
        return AIMessage(
            text,
            id=mid,
            tool_calls=[{"name": n, "args": a, "id": c, "type": "tool_call"} for c, n, a in calls],
        )
    if fmt == "anthropic":
        blocks = [{"type": "tool_use", "id": c, "name": n, "input": a} for c, n, a in calls]
        (msg,) = convert_to_messages(
            [{"role": "assistant", "content": [{"type": "text", "text": text}, *blocks], "id": mid}]
        )
        return msg.model_copy(update={"id": mid})
    blocks = [
        {"type": "function_call", "call_id": c, "name": n, "arguments": json.dumps(a), "id": f"fc_{c}"}
        for c, n, a in calls
    ]
    (msg,) = convert_to_messages(
        [{"role": "assistant", "content": [{"type": "text", "text": text}, *blocks]}]
    )
    return msg.model_copy(update={"id": mid})


def result_messages(fmt: str, mid: str, results: list[tuple[str, str, str]]) -> list:
    """Messages carrying ``results`` [(call id, tool name, text)] in format ``fmt``: one
    ToolMessage each, or one user message of result blocks (as Anthropic groups them)."""
    if fmt == "tool_calls":
        return [
            ToolMessage(t, tool_call_id=c, name=n, id=f"{mid}-{k}") for k, (c, n, t) in enumerate(results)
        ]
    if fmt == "anthropic":
        blocks = [{"type": "tool_result", "tool_use_id": c, "content": t} for c, _n, t in results]
    else:
        blocks = [{"type": "function_call_output", "call_id": c, "output": t} for c, _n, t in results]
    (msg,) = convert_to_messages([{"role": "user", "content": blocks}])
    return [msg.model_copy(update={"id": mid})]


turn_st = st.tuples(
    st.integers(min_value=0, max_value=3),  # parallel calls
    st.lists(st.integers(min_value=20, max_value=2500), min_size=3, max_size=3),  # result sizes
    st.booleans(),  # results split across two result messages
    st.integers(min_value=30, max_value=900),  # text size
)


class Builder:
    def __init__(self, kit, fmt: str) -> None:
        self.kit, self.fmt, self.n = kit, fmt, 0

    def turn(self, spec) -> list:
        calls_n, sizes, split, size = spec
        kit, fmt = self.kit, self.fmt
        self.n += 1
        n = self.n
        out: list = [HumanMessage(kit.fill(size, f"FACT-U{n} please", seed=n), id=f"u{n}")]
        if calls_n:
            calls = [(f"call_{n}_{j}", "read_file", {"path": f"/f{j}.txt"}) for j in range(calls_n)]
            out.append(call_message(fmt, f"a{n}", kit.fill(size // 3 + 10, f"FACT-A{n}", seed=n), calls))
            results = [
                (c, name, kit.fill(sizes[j], f"FACT-R{n}x{j}", seed=n + j))
                for j, (c, name, _a) in enumerate(calls)
            ]
            results.reverse()  # out of order
            if split and len(results) > 1:
                out += result_messages(fmt, f"r{n}a", results[:1]) + result_messages(
                    fmt, f"r{n}b", results[1:]
                )
            else:
                out += result_messages(fmt, f"r{n}", results)
        out.append(AIMessage(kit.fill(size // 2 + 10, f"FACT-D{n} done", seed=n), id=f"d{n}"))
        return out


def issued_call_ids(m) -> list[str]:
    """The call ids a provider reads in an assistant message (the test's own reading)."""
    if not isinstance(m, AIMessage):
        return []
    ids = [tc["id"] for tc in m.tool_calls]
    for b in m.content if isinstance(m.content, list) else []:
        if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_call") and b["id"] not in ids:
            ids.append(b["id"])
        elif isinstance(b, dict) and b.get("type") == "function_call" and b["call_id"] not in ids:
            ids.append(b["call_id"])
    return ids


def answered_call_ids(m) -> list[str]:
    """The call ids a provider reads as answered in a message (the test's own reading)."""
    if isinstance(m, ToolMessage):
        return [m.tool_call_id]
    out = []
    for b in m.content if isinstance(m.content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            out.append(b["tool_use_id"])
        elif isinstance(b, dict) and b.get("type") == "function_call_output":
            out.append(b["call_id"])
    return out


def pairing_problems(view: list, state: list) -> list[str]:
    """R9, in any format: no result without an earlier call in the view; every call in the view
    has, in the view, every result the state holds for it."""
    problems: list[str] = []
    issued: set[str] = set()
    answered: dict[str, int] = {}
    for m in view:
        issued.update(issued_call_ids(m))
        for cid in answered_call_ids(m):
            if cid not in issued:
                problems.append(f"result {cid} without its call in the view")
            answered[cid] = answered.get(cid, 0) + 1
    in_state: dict[str, int] = {}
    for m in state:
        for cid in answered_call_ids(m):
            in_state[cid] = in_state.get(cid, 0) + 1
    for cid in issued:
        if answered.get(cid, 0) < in_state.get(cid, 0):
            problems.append(f"call {cid} in the view without all of its results")
    return problems


# ------------------------------------------------------------------------------------------------
# the pairing properties, in the three formats
# ------------------------------------------------------------------------------------------------


@PROPS
@given(
    fmt=st.sampled_from(FORMATS),
    initial=st.lists(turn_st, min_size=2, max_size=6),
    appends=st.lists(st.lists(turn_st, min_size=1, max_size=2), min_size=2, max_size=4),
    keep=st.integers(min_value=0, max_value=4),
    limit=st.sampled_from([60, 150, 400]),
    mode=st.sampled_from(["sync", "async"]),
)
def test_block_histories_pass_the_pairing_properties(mw_kit, fmt, initial, appends, keep, limit, mode):
    # spec: R6, R9, R10 — in every view of every round: no result without its call, no call
    # without its results; the state is never edited; offloads name files that exist
    b = Builder(mw_kit, fmt)
    settings_ = CompressionSettings(
        summary_threshold=0.5,
        summary_keep_messages=keep,
        summary_tool_result_token_limit=limit,
        summary_l2_trigger_ratio=0.4,
    )
    with tempfile.TemporaryDirectory() as root:
        mw = CompressionMiddleware(
            settings=settings_, backend=mw_kit.backend(root), summarizer=mw_kit.FakeSummarizer()
        )
        d = mw_kit.Driver(mw, [m for spec in initial for m in b.turn(spec)], mode=mode)
        for r in range(len(appends) + 1):
            if r:
                d.append(*[m for spec in appends[r - 1] for m in b.turn(spec)])
            rec = d.round()
            assert rec["exc"] is None, repr(rec["exc"])
            assert rec["state_dump_after"] == rec["state_dump_before"]
            files = mw_kit.files(root)
            for call in rec["calls"]:
                view = call["messages"]
                assert pairing_problems(view, rec["state_before"]) == [], fmt
                for path in LTR_RE.findall(json.dumps([m.content for m in view])):
                    assert path.lstrip("/") in files
            event = d.event
            if event and rec["update"]:
                # the kept part never opens with a result, and the summary's latest request is
                # a user request, never a message of tool results
                cut = event["cutoff_index"]
                state = rec["state_before"]
                assert cut >= len(state) or not answered_call_ids(state[cut])
                carried = event["summary_message"].additional_kwargs.get("ctxlab_latest_request")
                if carried:
                    assert carried.startswith("FACT-U"), carried[:40]


# ------------------------------------------------------------------------------------------------
# the case, and each place a call is read
# ------------------------------------------------------------------------------------------------


def anthropic_history(kit) -> list:
    """User request, then three tool_use / tool_result exchanges in Anthropic dicts."""
    dicts = [{"role": "user", "content": kit.fill(1200, "FACT-TASK audit the three services", seed=1)}]
    for i in range(3):
        dicts.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Checking service {i}."},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "status", "input": {"service": f"s{i}"}},
                ],
            }
        )
        dicts.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i}",
                        "content": kit.fill(1500, f"FACT-STATUS{i}", seed=i),
                    }
                ],
            }
        )
    dicts.append({"role": "assistant", "content": "All three are up."})
    msgs = convert_to_messages(dicts)
    return [m.model_copy(update={"id": f"m{k}"}) for k, m in enumerate(msgs)]


def anthropic_rejects(view: list) -> str | None:
    """What Anthropic's API checks: each tool_result answers a tool_use of the assistant message
    right before it, and each tool_use is answered in the message right after it."""
    for k, m in enumerate(view):
        results = set(answered_call_ids(m))
        if results:
            prev = set(issued_call_ids(view[k - 1])) if k else set()
            if not results <= prev:
                return f"tool_result {sorted(results - prev)} without tool_use in the previous message"
        calls = set(issued_call_ids(m))
        if calls:
            nxt = set(answered_call_ids(view[k + 1])) if k + 1 < len(view) else set()
            if k + 1 < len(view) and not calls <= nxt:
                return f"tool_use {sorted(calls - nxt)} without tool_result right after it"
    return None


def test_an_anthropic_block_history_is_never_cut_between_call_and_result(mw_kit, tmp_path, mode):
    # spec: R9 — the case: tool_use blocks and no tool_calls; before issue 30 the cutoff
    # fell between a tool_use and its tool_result and every later request was refused (400)
    msgs = anthropic_history(mw_kit)
    assert all(not m.tool_calls for m in msgs if isinstance(m, AIMessage))
    ok = valid_cut_positions(msgs)
    for k in range(len(msgs)):
        if issued_call_ids(msgs[k]):
            assert not ok[k + 1], k  # never between the call and its result
    settings_ = CompressionSettings(
        summary_threshold=1, summary_keep_messages=2, summary_l2_trigger_ratio=0.4
    )
    mw = CompressionMiddleware(
        settings=settings_, backend=mw_kit.backend(tmp_path), summarizer=mw_kit.FakeSummarizer()
    )
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(overflow=lambda n, view, system: ValueError(r) if (r := anthropic_rejects(view)) else False)
    assert rec["exc"] is None, rec["exc"]
    view = rec["calls"][-1]["messages"]
    assert rec["update"] and anthropic_rejects(view) is None
    kept = view[1:]
    assert not answered_call_ids(kept[0])  # the kept part opens with no orphan result


@pytest.mark.parametrize("fmt", ["anthropic", "responses"])
def test_a_late_result_block_becomes_an_observation(fmt):
    # spec: R9 — a result block whose call is not in the view is turned into text, as a
    # ToolMessage is; a message that also answers a call in the view keeps its place and type
    b = Builder(None, fmt)
    late = result_messages(fmt, "late", [("gone", "read_file", "FACT-LATE the old result")])[0]
    both = result_messages(
        fmt, "both", [("gone", "read_file", "FACT-LATE2"), ("here", "read_file", "FACT-HERE")]
    )[0]
    view = [
        HumanMessage("ask", id="h"),
        late,
        call_message(fmt, "a", "calling", [("here", "read_file", {})]),
        both,
    ]
    out = sendable_view(view)
    assert pairing_problems(out, view) == []
    obs = next(m for m in out if m.id == "late")
    assert isinstance(obs, HumanMessage) and obs.additional_kwargs.get("ctxlab_observation")
    assert "FACT-LATE the old result" in json.dumps(obs.content) and not answered_call_ids(obs)
    kept = next(m for m in out if m.id == "both")
    assert answered_call_ids(kept) == ["here"] and "FACT-LATE2" in json.dumps(kept.content)
    del b


@pytest.mark.parametrize("fmt", ["anthropic", "responses"])
def test_a_large_result_block_is_offloaded_and_still_pairs(mw_kit, tmp_path, mode, fmt):
    # spec: R6 — the output of a result block over the limit goes to a file; the block keeps its
    # type and call id, its output is the path and a preview; the state keeps the original
    b = Builder(mw_kit, fmt)
    msgs = b.turn((1, [9000, 10, 10], False, 300))
    settings_ = CompressionSettings(
        summary_threshold=0.5, summary_keep_messages=10, summary_tool_result_token_limit=200
    )
    mw = CompressionMiddleware(settings=settings_, backend=mw_kit.backend(tmp_path))
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["exc"] is None
    view = rec["calls"][-1]["messages"]
    result = next(m for m in view if m.id == "r1")
    (block,) = result.content
    key = "content" if fmt == "anthropic" else "output"
    assert answered_call_ids(result) == ["call_1_0"] and block["type"] in (
        "tool_result",
        "function_call_output",
    )
    (path,) = set(LTR_RE.findall(block[key]))
    original = next(m for m in msgs if m.id == "r1").content[0][key]
    assert (tmp_path / path.lstrip("/")).read_text(encoding="utf-8") == original
    assert len(block[key]) < 2000 and pairing_problems(view, msgs) == []
    assert rec["state_dump_after"] == rec["state_dump_before"]


@pytest.mark.parametrize("fmt", ["anthropic", "responses"])
def test_history_file_and_summarizer_input_name_block_calls_and_results(mw_kit, tmp_path, mode, fmt):
    # spec: R10 — the history file keeps each call and result whole and names their ids; the
    # summarizer reads the call and a result as such, not as a user's request
    b = Builder(mw_kit, fmt)
    msgs = [m for n in range(4) for m in b.turn((1, [600, 10, 10], False, 500))]
    summ = mw_kit.FakeSummarizer()
    settings_ = CompressionSettings(
        summary_threshold=0.5, summary_keep_messages=2, summary_l2_trigger_ratio=0.4
    )
    mw = CompressionMiddleware(settings=settings_, backend=mw_kit.backend(tmp_path), summarizer=summ)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    event = rec["update"]["_summarization_event"]
    history = (tmp_path / event["file_path"].lstrip("/")).read_text(encoding="utf-8")
    assert "tool call read_file · id=call_1_0" in history and "tool result · id=call_1_0" in history
    assert "FACT-R1x0" in history and "/f0.txt" in history  # the arguments, whole
    text = summ.calls[0]["input"]
    assert "-> call read_file(" in text and "[tool result (call call_1_0)]" in text
    assert "[user] FACT-R1x0" not in text
    # the latest request the summary carries is a user request
    assert not is_user_request(next(m for m in msgs if m.id == "r1"))
