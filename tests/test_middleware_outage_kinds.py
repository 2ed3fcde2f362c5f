"""Issue 24, items 6-12: a summarizer outage loses nothing, and six more kinds from public
reports, each through both drivers (``wrap_model_call`` and ``awrap_model_call``) with a real
``ModelRequest`` and a real DeepAgents ``FilesystemBackend`` (``mw_kit.Driver``):

6. a failed summary keeps everything the previous summary carried (its verbatim latest request,
   its history path): a hypothesis property over generated fault runs;
7. a ``_summarization_event`` made for another state is anchored to messages;
8. a summary cut at its output-token cap is not committed as one;
9. non-text blocks of a tool result are whole in the full-output file;
10. speaker names reach the summarizer;
11. ``invalid_tool_calls`` are calls for pairing (R3, R9);
12. reasoning sent back is counted by the estimator.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path

import pytest
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import WriteResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core import summarize
from ctxlab.core.estimation import CharClassEstimator, EstimateCache
from ctxlab.core.marks import summary_kwargs
from ctxlab.core.messages import resolve_cutoff, sendable_view, tool_pair_spans, valid_cut_positions

MODES = ["sync", "async"]
EST = CharClassEstimator()
#: T = 256 tokens, T2 = 102.4 tokens, keep 4: every round with a few new messages summarizes
SETTINGS = CompressionSettings(
    summary_threshold=0.25,
    summary_keep_messages=4,
    summary_tool_result_token_limit=300,
    summary_l2_trigger_ratio=0.4,
)
FAULTS = ["empty", "whitespace", "tool_call_only", "raises", "overflow"]
PATH_RE = re.compile(r"/?outputs/conversation_history/[^\s\"'<>()\[\]{}`,;|\\]+")


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


class HistoryOutageBackend(FilesystemBackend):
    """A real ``FilesystemBackend`` whose history-file writes fail while ``failing`` is set
    (the same outage that takes the summarizer down)."""

    def __init__(self, root: str) -> None:
        super().__init__(root_dir=root, virtual_mode=True)
        self.failing = False

    def write(self, file_path, content):
        if self.failing and "conversation_history" in str(file_path):
            return WriteResult(error="permission_denied (injected outage)")
        return super().write(file_path, content)

    async def awrite(self, file_path, content):
        return self.write(file_path, content)


def marker(i: int) -> str:
    """The fact marker of request ``i`` (an echoing summarizer repeats it)."""
    return f"FACT-REQ{i:02d}"


def request_text(kit, i: int) -> str:
    return f"{marker(i)} REQUEST-{i}: " + kit.fill(
        260, f"please handle ticket number {i} and report back", seed=40 + i
    )


def turn(kit, i: int) -> list[BaseMessage]:
    """One turn: the assistant's answer to the previous request, then request ``i``."""
    return [
        AIMessage(kit.fill(300, f"Done with step {i - 1}.", seed=i), id=f"a{i}"),
        HumanMessage(request_text(kit, i), id=f"h{i}"),
    ]


def reachable(view: list[BaseMessage], root: Path) -> str:
    """The text of ``view`` plus every history file it names, and every history file those name
    (what a model could read back), as one string."""
    seen: set[str] = set()
    texts = ["\n".join(str(m.content) for m in view)]
    queue = list(PATH_RE.findall(texts[0]))
    while queue:
        path = queue.pop().lstrip("/").rstrip(".:")
        if path in seen:
            continue
        seen.add(path)
        file = root / path
        if file.is_file():
            body = file.read_text(encoding="utf-8")
            texts.append(body)
            queue += PATH_RE.findall(body)
    return "\n".join(texts)


# ------------------------------------------------------------------------------------------------
# 6. a summarizer outage loses nothing
# ------------------------------------------------------------------------------------------------


def run_outage(kit, root: str, mode: str, plan: list[tuple[str, bool]]) -> list[tuple[dict, str, set[int]]]:
    """Rounds under ``plan`` (summarizer mode, history write failing); per round the record,
    what is reachable from its last view, and the requests in the state so far."""
    backend = HistoryOutageBackend(root)
    summ = kit.FakeSummarizer(mode=plan[0][0])
    mw = CompressionMiddleware(settings=SETTINGS, backend=backend, summarizer=summ)
    msgs: list[BaseMessage] = [HumanMessage(request_text(kit, 0), id="h0")]
    for i in range(1, 5):
        msgs += turn(kit, i)
    # the agent works on request 4 for a while: the first cutoff summarizes that request
    msgs += [
        AIMessage(kit.fill(300, f"Working on ticket 4, part {j}.", seed=60 + j), id=f"w{j}") for j in range(6)
    ]
    d = kit.Driver(mw, msgs, mode=mode)
    asked = set(range(5))
    out = []
    for r, (summ_mode, write_fails) in enumerate(plan):
        if r:
            for i in range(5 + 3 * (r - 1), 5 + 3 * r):
                d.append(*turn(kit, i))
                asked.add(i)
        summ.mode, backend.failing = summ_mode, write_fails
        if write_fails:  # the round goes on without its history file and says so
            with pytest.warns(RuntimeWarning, match="conversation history not saved"):
                rec = d.round()
        else:
            rec = d.round()
        assert rec["exc"] is None, rec["exc"]
        out.append((rec, reachable(rec["calls"][-1]["messages"], Path(root)), set(asked)))
    return out


def test_two_failed_rounds_keep_the_summarized_request(mw_kit, tmp_path, mode):
    # issue 24 item 6, R10: a working (lossy) summary carries the latest request verbatim and
    # names its history file; two failed rounds follow, the first also unable to write its
    # history file.  Every request must stay in the view, the summary or a file it names.
    rounds = run_outage(mw_kit, str(tmp_path), mode, [("fixed", False), ("raises", True), ("empty", False)])
    first = rounds[0][0]["update"]["_summarization_event"]
    assert first["summary_error"] is None and request_text(mw_kit, 4) in first["summary_message"].content
    for _rec, text, asked in rounds[1:]:
        lost = [i for i in sorted(asked) if request_text(mw_kit, i) not in text]
        assert lost == [], f"requests {lost} are in no view, summary or history file"
    # round 2: no summary and no history file would hold what it summarizes: not committed
    second = rounds[1][0]
    assert second["update"] is None
    assert "history file could not be written" in mw_kit.ctx_events(second)[-1]["stats"]["summary_rejected"]
    # round 3 commits its failed summary; the earlier request is in the view or the history file
    event = rounds[2][0]["update"]["_summarization_event"]
    assert event["summary_error"] is not None and event["file_path"] in event["summary_message"].content


def test_a_forced_round_without_history_file_carries_the_previous_summary_inline(mw_kit, tmp_path, mode):
    # issue 24 item 6, R10/R12: an overflow forces L2 while the summarizer and the history
    # writes are down: the failed summary is committed and carries the previous summary's
    # verbatim latest request and its history path itself
    backend = HistoryOutageBackend(str(tmp_path))
    summ = mw_kit.FakeSummarizer(mode="fixed")
    mw = CompressionMiddleware(settings=SETTINGS, backend=backend, summarizer=summ)
    msgs: list[BaseMessage] = [HumanMessage(request_text(mw_kit, 0), id="h0")]
    msgs += [AIMessage(mw_kit.fill(300, f"Working, part {j}.", seed=60 + j), id=f"w{j}") for j in range(8)]
    d = mw_kit.Driver(mw, msgs, mode=mode)
    first = d.round()["update"]["_summarization_event"]
    assert request_text(mw_kit, 0) in first["summary_message"].content
    for i in range(1, 4):
        d.append(*turn(mw_kit, i))
    d.append(AIMessage(mw_kit.fill(300, "Still working.", seed=9), id="w9"))
    summ.mode, backend.failing = "raises", True
    with pytest.warns(RuntimeWarning, match="conversation history not saved"):
        rec = d.round(overflow=lambda n, view, system: n == 1)
    assert rec["exc"] is None, rec["exc"]
    event = rec["update"]["_summarization_event"]
    assert event["summary_error"] is not None and event["file_path"] is None
    text = event["summary_message"].content
    assert request_text(mw_kit, 0) in text and first["file_path"] in text


#: raise for a deeper search: ``MW_HYPOTHESIS_EXAMPLES=300 pytest tests/test_middleware_outage_kinds.py``
OUTAGE_PROPS = settings(
    max_examples=min(int(os.environ.get("MW_HYPOTHESIS_EXAMPLES", "20")), 300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@OUTAGE_PROPS
@given(
    plan=st.lists(st.tuples(st.sampled_from(["fixed", *FAULTS]), st.booleans()), min_size=2, max_size=4),
    mode=st.sampled_from(MODES),
)
def test_a_failed_round_never_loses_what_the_previous_summary_carried(mw_kit, plan, mode):
    # issue 24 item 6 (property), R10: over generated fault runs (empty, whitespace,
    # tool-call-only, raising and overflowing summarizers, history writes failing in the same
    # outage), a round whose summary failed keeps every request that was reachable before it
    # (in the view, the summary, or a history file they name); only a working summarizer may
    # condense
    with tempfile.TemporaryDirectory() as root:
        rounds = run_outage(mw_kit, root, mode, [("fixed", False), *plan])
        before = {i for i in rounds[0][2] if request_text(mw_kit, i) in rounds[0][1]}
        for r, (rec, text, asked) in enumerate(rounds[1:], start=1):
            now = {i for i in asked if request_text(mw_kit, i) in text}
            event = (rec.get("update") or {}).get("_summarization_event")
            if event is None or event["summary_error"] is not None:
                new = asked - rounds[r - 1][2]
                assert (before | new) - now == set(), (r, plan, sorted((before | new) - now))
            before = now


@OUTAGE_PROPS
@given(
    plan=st.lists(st.tuples(st.sampled_from(["echo", *FAULTS]), st.booleans()), min_size=2, max_size=5),
    mode=st.sampled_from(MODES),
)
def test_with_a_faithful_summarizer_no_request_is_ever_lost(mw_kit, plan, mode):
    # issue 24 item 6 (property), R10: a summarizer that keeps every fact it is shown, with
    # outages (empty, whitespace, tool-call-only, raising, overflowing; history writes failing)
    # in any rounds: after every round, every request ever asked is in the view, the summary or
    # a history file they name
    with tempfile.TemporaryDirectory() as root:
        for r, (_rec, text, asked) in enumerate(run_outage(mw_kit, root, mode, plan)):
            lost = sorted(i for i in asked if marker(i) not in text)
            assert lost == [], (r, plan, lost)


# ------------------------------------------------------------------------------------------------
# 7. a foreign summarization event
# ------------------------------------------------------------------------------------------------


def parent_event(cutoff: int, last: str, first: str) -> dict:
    summary = HumanMessage(
        "PARENT-SUMMARY the parent thread's earlier work",
        id="ctxlab-summary-parent",
        additional_kwargs=summary_kwargs("PARENT-SUMMARY the parent thread's earlier work"),
    )
    return {
        "cutoff_index": cutoff,
        "summary_message": summary,
        "file_path": None,
        "summary_error": None,
        "last_summarized_id": last,
        "first_kept_id": first,
    }


def test_a_foreign_event_is_ignored_with_a_warning(mw_kit, tmp_path, mode, caplog):
    # issue 24 item 7, R11: a sub-agent state that copied its parent's _summarization_event
    # (cutoff 40 over a 1-message state): the sub-agent's own task is sent, the parent's summary
    # reaches neither the model nor the summarizer
    task = HumanMessage(mw_kit.fill(400, "FACT-SUBTASK check the three configs", seed=3), id="sub-h0")
    summ = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, [task], mode=mode)
    d.state["_summarization_event"] = parent_event(40, "p39", "p40")
    with caplog.at_level(logging.WARNING, logger="ctxlab.core.messages"):
        rec = d.round()
    assert rec["exc"] is None, rec["exc"]
    view = rec["calls"][-1]["messages"]
    assert [m.id for m in view] == ["sub-h0"]
    assert not any("PARENT-SUMMARY" in c["input"] for c in summ.calls)
    assert any("made for another state" in r.getMessage() for r in caplog.records)
    # the sub-agent grows: its own L2 replaces the foreign event
    for i in range(1, 8):
        d.append(*turn(mw_kit, i))
    rec = d.round()
    event = rec["update"]["_summarization_event"]
    assert event["last_summarized_id"] != "p39" and "PARENT-SUMMARY" not in event["summary_message"].content
    assert not any("PARENT-SUMMARY" in c["input"] for c in summ.calls)


def test_the_event_reanchors_at_its_first_kept_message(mw_kit, tmp_path, mode):
    # issue 24 item 7, R11: the last summarized message was removed (and older ones with it),
    # but the first kept one is there: the kept part starts at it
    msgs = [HumanMessage(request_text(mw_kit, 0), id="h0")]
    for i in range(1, 11):
        msgs += turn(mw_kit, i)
    # the event summarized msgs[:10] (last "a5", first kept "h5"); a trimming node removed the
    # first six messages and "a5" itself, so position 10 now points into the kept part
    state = [m for m in msgs[6:] if m.id != "a5"]
    assert state[3].id == "h5" and len(state) > 10
    event = parent_event(10, "a5", "h5")
    assert resolve_cutoff(state, event) == 3
    mw = CompressionMiddleware(
        settings=SETTINGS.replace(summary_threshold=4), backend=mw_kit.backend(tmp_path), summarizer=None
    )
    d = mw_kit.Driver(mw, state, mode=mode)
    d.state["_summarization_event"] = event
    rec = d.round()
    view = rec["calls"][-1]["messages"]
    assert [m.id for m in view] == ["ctxlab-summary-parent", *[m.id for m in state[3:]]]


# ------------------------------------------------------------------------------------------------
# 8. a summary cut at its output-token cap
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"finish_reason": "length"}, "finish_reason=length"),  # OpenAI and compatible APIs
        ({"stop_reason": "max_tokens"}, "stop_reason=max_tokens"),  # Anthropic
        ({"finish_reason": "MAX_TOKENS"}, "finish_reason=MAX_TOKENS"),  # Gemini
        ({"done_reason": "length"}, "done_reason=length"),  # Ollama
        ({"stopReason": "max_tokens"}, "stopReason=max_tokens"),  # Bedrock Converse
        (
            {"incomplete_details": {"reason": "max_output_tokens"}},
            "incomplete_details.reason=max_output_tokens",
        ),
        ({"finish_reason": "stop"}, None),
        ({"stop_reason": "end_turn"}, None),
        ({}, None),
    ],
)
def test_output_cap_reason_reads_every_provider(meta, expected):
    # issue 24 item 8, R10: the stop reason of a reply cut at its output-token cap, per provider
    assert summarize.output_cap_reason(AIMessage("partial", response_metadata=meta)) == expected


def test_a_summary_cut_at_its_output_cap_is_a_failed_summary(mw_kit, tmp_path, mode):
    # issue 24 item 8, R10: round 2's summarizer reply stops at its output-token cap: the partial
    # text is not committed as the summary, the error is recorded, FACT-EARLY survives
    msgs = [HumanMessage(mw_kit.fill(300, "FACT-EARLY the launch date is May 3", seed=1), id="h0")]
    for i in range(1, 6):
        msgs += turn(mw_kit, i)
    summ = mw_kit.FakeSummarizer(sequence=["echo", "truncated"])
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    first = d.round()["update"]["_summarization_event"]
    assert first["summary_error"] is None and "FACT-EARLY" in first["summary_message"].content
    for i in range(6, 10):
        d.append(*turn(mw_kit, i))
    rec = d.round()
    event = rec["update"]["_summarization_event"]
    assert "output-token cap" in event["summary_error"] and "finish_reason=length" in event["summary_error"]
    text = event["summary_message"].content
    assert "first two of the" not in text  # the partial reply is not the summary
    assert "FACT-EARLY" in text
    completed = [e for e in mw_kit.ctx_events(rec) if e["phase"] == "completed"][-1]
    assert completed["error"] == event["summary_error"]


# ------------------------------------------------------------------------------------------------
# 9. non-text blocks of a tool result
# ------------------------------------------------------------------------------------------------

PNG = "data:image/png;base64," + "iVBORw0KGgo" * 40


def mixed_result(kit, text_chars: int) -> ToolMessage:
    resource = kit.fill(5000, "FACT-RESOURCE-HEAD", seed=7) + " FACT-RESOURCE-TAIL"
    return ToolMessage(
        [
            {"type": "text", "text": kit.fill(text_chars, "FACT-TEXT fetched the page", seed=5)},
            {"type": "resource", "resource": {"uri": "file:///srv/report.md", "text": resource}},
            {
                "type": "json",
                "json": {"rows": [{"n": i, "v": f"value-{i}"} for i in range(200)], "end": "FACT-JSON-END"},
            },
            {"type": "image_url", "image_url": {"url": PNG}},
        ],
        tool_call_id="c1",
        name="fetch",
        id="t1",
    )


@pytest.mark.parametrize("text_chars", [40, 3000])
def test_the_full_output_file_holds_every_block_whole(mw_kit, tmp_path, mode, text_chars):
    # issue 24 item 9, R6: an MCP embedded resource and a JSON block are written whole (past
    # 2,000 characters) to the full-output file; the view keeps the preview and the image —
    # also when the text block alone is small (the large part is not text)
    msgs = [
        HumanMessage("FACT-TASK fetch the report", id="h0"),
        AIMessage("", id="a0", tool_calls=[{"name": "fetch", "args": {"url": "x"}, "id": "c1"}]),
        mixed_result(mw_kit, text_chars),
    ]
    mw = CompressionMiddleware(
        settings=SETTINGS.replace(summary_l2_trigger_ratio=1.0),
        backend=mw_kit.backend(tmp_path),
        summarizer=mw_kit.FakeSummarizer(),
    )
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round()
    assert rec["exc"] is None, rec["exc"]
    view = rec["calls"][-1]["messages"]
    sent = view[2]
    assert isinstance(sent, ToolMessage) and isinstance(sent.content, list)
    assert [b["type"] for b in sent.content] == ["text", "image_url"]
    assert sent.content[1]["image_url"]["url"] == PNG
    files = {p: t for p, t in mw_kit.files(tmp_path).items() if "large_tool_results" in p}
    assert len(files) == 1
    (body,) = files.values()
    assert "FACT-RESOURCE-TAIL" in body and "file:///srv/report.md" in body
    assert "FACT-JSON-END" in body and '"value-199"' in body
    assert next(iter(files)) in sent.content[0]["text"]


# ------------------------------------------------------------------------------------------------
# 10. speaker names
# ------------------------------------------------------------------------------------------------


def test_speaker_names_reach_the_summarizer(mw_kit, tmp_path, mode):
    # issue 24 item 10, R10: a multi-user, multi-agent thread: who asked and who approved is in
    # the summarizer's input
    msgs = [
        HumanMessage(mw_kit.fill(300, "FACT-ASK deploy the release", seed=1), id="h0", name="alice"),
        AIMessage(
            mw_kit.fill(300, "FACT-PLAN I will deploy after approval", seed=2), id="a0", name="planner"
        ),
        HumanMessage(mw_kit.fill(300, "FACT-OK approved", seed=3), id="h1", name="bob"),
    ]
    for i in range(2, 6):
        msgs += turn(mw_kit, i)
    summ = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    assert rec["update"]["_summarization_event"]["cutoff_index"] >= 3
    text = summ.calls[0]["input"]
    assert "[user name=alice] FACT-ASK" in text
    assert "[assistant name=planner] FACT-PLAN" in text
    assert "[user name=bob] FACT-OK" in text
    assert summarize.render_message(HumanMessage("hi")) == "[user] hi"  # no name: the plain label


# ------------------------------------------------------------------------------------------------
# 11. invalid_tool_calls are calls
# ------------------------------------------------------------------------------------------------


def invalid_call_history(kit) -> list[BaseMessage]:
    return [
        HumanMessage("FACT-TASK write the weekly report to /report.md", id="h0"),
        AIMessage(
            "",
            id="a0",
            invalid_tool_calls=[
                {
                    "name": "write_file",
                    "args": '{"file_path": "/report.md", "content": "# Weekly report FACT-DRAFT',
                    "id": "write_file:36",
                    "error": "Unterminated string",
                    "type": "invalid_tool_call",
                }
            ],
        ),
        ToolMessage(
            "Error: the arguments of write_file were not valid JSON. Re-issue the call.",
            tool_call_id="write_file:36",
            name="write_file",
            id="t0",
            status="error",
        ),
        AIMessage("The report is written.", id="a1"),
        HumanMessage("Thanks.", id="h1"),
    ]


def test_invalid_tool_calls_pair_with_their_results():
    # issue 24 item 11, R9: pairing, cut positions and the sendable view read invalid_tool_calls
    msgs = invalid_call_history(None)
    assert tool_pair_spans(msgs) == [(1, 2)]
    ok = valid_cut_positions(msgs)
    assert not ok[2]
    assert sendable_view(msgs) is msgs
    assert EST.message_tokens(msgs[1]) > EST.message_tokens(AIMessage("", id="a0")) + 10


def test_an_invalid_call_result_is_sent_as_it_is_below_t(mw_kit, tmp_path, mode):
    # issue 24 item 11, R3: below T the state goes as it is — the error result stays the
    # ToolMessage that answers the malformed call (not an observation)
    msgs = invalid_call_history(mw_kit)
    mw = CompressionMiddleware(
        settings=SETTINGS.replace(summary_threshold=4), backend=mw_kit.backend(tmp_path)
    )
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    view = rec["calls"][-1]["messages"]
    assert [mw_kit.dump(m) for m in view] == [mw_kit.dump(m) for m in msgs]
    assert mw_kit.ctx_events(rec) == []


# ------------------------------------------------------------------------------------------------
# 12. reasoning sent back is tokens
# ------------------------------------------------------------------------------------------------

REASONING = ("Let me think about the deploy order step by step before answering. " * 150).strip()


@pytest.mark.parametrize(
    "message",
    [
        AIMessage("ok", id="r", additional_kwargs={"reasoning_content": REASONING}),  # DeepSeek, Kimi, Qwen
        AIMessage(
            [
                {"type": "thinking", "thinking": REASONING, "signature": "EqQBCkYIBxgCKkA" * 40},
                {"type": "text", "text": "ok"},
            ],
            id="r",
        ),  # Anthropic thinking (its signature is not billed as text: issue 30)
        AIMessage(
            [
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": REASONING}],
                },
                {"type": "text", "text": "ok"},
            ],
            id="r",
        ),  # OpenAI Responses reasoning item
        AIMessage(
            "ok",
            id="r",
            additional_kwargs={
                "reasoning": {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA" * 1200}
            },
        ),  # OpenAI Responses, langchain-openai's v0 output
    ],
)
def test_reasoning_sent_back_is_estimated(message):
    # issue 24 item 12, R16: what the provider receives back is counted (~6,000 characters each)
    assert EST.message_tokens(message) > EST.message_tokens(AIMessage("ok", id="r")) + 800


def test_the_estimate_cache_tells_reasoning_apart():
    # issue 24 item 12: two messages alike but for the reasoning they send back are two estimates
    cache = EstimateCache(EST.message_tokens, EST.tools_tokens)
    plain = AIMessage("ok", id="r")
    thinking = AIMessage("ok", id="r", additional_kwargs={"reasoning_content": REASONING})
    assert cache.message_tokens(plain) < cache.message_tokens(thinking) == EST.message_tokens(thinking)


def test_reasoning_sent_back_starts_compression(mw_kit, tmp_path, mode):
    # issue 24 item 12, R3/R4: a history whose bulk is reasoning_content crosses T
    msgs: list[BaseMessage] = [HumanMessage("FACT-TASK plan the deploy", id="h0")]
    for i in range(3):
        msgs += [
            AIMessage(f"step {i}", id=f"a{i}", additional_kwargs={"reasoning_content": REASONING}),
            HumanMessage(f"go on {i}", id=f"h{i + 1}"),
        ]
    mw = CompressionMiddleware(
        settings=SETTINGS.replace(summary_threshold=2, summary_l2_trigger_ratio=1.0),
        backend=mw_kit.backend(tmp_path),
        summarizer=mw_kit.FakeSummarizer(),
    )
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    phases = [e["phase"] for e in mw_kit.ctx_events(rec)]
    assert phases[0] == "started" and rec["events"][0]["tokens_before"] > 2 * 1024


def test_an_invalid_call_reaches_the_history_file_and_the_summarizer(mw_kit, tmp_path, mode):
    # issue 24 item 11, R10: a summarized malformed call is in the history file with its raw
    # arguments, and the summarizer sees it
    msgs = invalid_call_history(mw_kit)[:-1]
    msgs += [AIMessage(mw_kit.fill(300, f"Working, part {j}.", seed=60 + j), id=f"w{j}") for j in range(8)]
    summ = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path), summarizer=summ)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round()
    event = rec["update"]["_summarization_event"]
    assert event["cutoff_index"] >= 3
    history = mw_kit.files(tmp_path)[event["file_path"].lstrip("/")]
    assert "invalid tool call write_file · id=write_file:36" in history
    assert '"content": "# Weekly report FACT-DRAFT' in history
    assert "-> invalid call write_file(" in summ.calls[0]["input"]
