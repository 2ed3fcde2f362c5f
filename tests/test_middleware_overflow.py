"""Overflow recovery (spec R12, R13; issue 24 items 1-5): whenever a view the middleware can build
fits the model's window, the one retry after an overflow fits it — sync and async.

The fake provider counts a request as the sum of the messages' estimates (``CharClassEstimator``,
the middleware's default), optionally times a factor (a provider tokenizer that counts more than
ctxlab's estimate), and raises ``ContextOverflowError`` with a provider's own message shape when
the count is over its window.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.marks import OFFLOAD_MARKER, offloaded_path_of
from ctxlab.core.overflow import OVERFLOW_RETRY_SHARE, read_overflow, retry_target

EST = CharClassEstimator()
LTR_RE = re.compile(r"/outputs/large_tool_results/[A-Za-z0-9_-]+-[0-9a-f]{64}\.txt")


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


def count(view, factor=1.0):
    """The fake provider's count of a request (tokens)."""
    return int(sum(EST.message_tokens(m) for m in view) * factor)


#: provider message shapes (as the providers word them), by name: (window, counted) -> text
MESSAGES = {
    "anthropic": lambda w, n: f"prompt is too long: {n} tokens > {w} maximum",
    "openai": lambda w, n: (
        f"This model's maximum context length is {w} tokens. However, your messages resulted in "
        f"{n} tokens. Please reduce the length of the messages."
    ),
    "gemini": lambda w, n: f"The input token count ({n}) exceeds the maximum number of tokens allowed ({w}).",
    "xai": lambda w, n: f"This model's maximum prompt length is {w} but the request contains {n} tokens.",
}


def provider(window, factor=1.0, shape="anthropic"):
    """An overflow rule for ``Driver.round``: the provider's own error when the count is over."""

    def overflow(n, view, system):
        c = count(view, factor)
        return ContextOverflowError(MESSAGES[shape](window, c)) if c > window else False

    return overflow


def parallel_unit(kit, n=16, chars=700, ids=True):
    """Case 53's shape: a task, one AIMessage with ``n`` parallel calls, their ``n`` results."""
    msgs = [
        HumanMessage(
            "FACT-TASK: fetch all the documentation pages and say which mention the flag.",
            id="h0" if ids else None,
        ),
        AIMessage(
            "Fetching all pages at once.",
            id="a0" if ids else None,
            tool_calls=[{"name": "fetch_page", "args": {"n": i}, "id": f"p{i}"} for i in range(n)],
        ),
    ]
    msgs += [
        ToolMessage(
            kit.fill(chars, f"page {i}:", 5300 + i),
            tool_call_id=f"p{i}",
            name="fetch_page",
            id=f"t{i}" if ids else None,
        )
        for i in range(n)
    ]
    return msgs


def make_mw(kit, root, summarizer=None, **fields):
    base = dict(
        summary_threshold=1,
        summary_keep_messages=4,
        summary_tool_result_token_limit=300,
        summary_l2_trigger_ratio=0.4,
    )
    return CompressionMiddleware(
        settings=CompressionSettings(**{**base, **fields}),
        backend=kit.backend(root),
        summarizer=summarizer or kit.FakeSummarizer(),
    )


def check_recovered(kit, rec, window, root, factor=1.0):
    """One overflow, one retry that fits; the retry names only files that hold their originals."""
    assert rec["exc"] is None, rec["exc"]
    assert rec["calls"][0]["raised"] is not None and rec["calls"][1]["raised"] is None
    assert len(rec["calls"]) == 2
    first, retry = (c["messages"] for c in rec["calls"])
    assert count(retry, factor) <= window < count(first, factor)
    files = kit.files(root)
    originals = {kit.text(m) for m in rec["state_before"]}
    for m in retry:
        for p in LTR_RE.findall(kit.text(m)):
            assert files[p.lstrip("/")] in originals
    assert kit.pairing_problems(retry, rec["state_before"]) == []
    evs = kit.ctx_events(rec)
    assert evs[-1]["phase"] == "completed" and evs[-1]["forced_by_overflow"]
    return retry


# --- item 1: a declined L2 falls through to the tail trim and the one retry ---------------------


@pytest.mark.parametrize("start", ["above_T", "below_T"])
def test_declined_summary_in_an_overflow_round_trims_and_retries(mw_kit, tmp_path, mode, start):
    # spec: R12, R13 — case 53's kind: the only cut is right after the task, whose span is smaller
    # than an empty summary message, so L2 is declined; the overflow must still get one retry,
    # trimmed to the window (the 16 results offloaded), not end the run
    msgs = parallel_unit(mw_kit)
    window = 1500
    mw = make_mw(mw_kit, tmp_path, summary_threshold=1 if start == "above_T" else 4)
    d = mw_kit.Driver(mw, msgs, mode=mode, max_input_tokens=window)
    rec = d.round(overflow=provider(window))
    retry = check_recovered(mw_kit, rec, window, tmp_path)
    assert "summary_rejected" in mw_kit.ctx_events(rec)[-1]["stats"]
    assert mw_kit.text(retry[0]).startswith("FACT-TASK")  # the task is sent verbatim
    assert d.event is None  # nothing summarized
    # the trimmed results are written back by id, their originals in files (R12)
    replaced = rec["update"]["messages"]
    assert {m.id for m in replaced} == {f"t{i}" for i in range(16)}
    by_id = {m.id: m for m in retry}
    for m in replaced:
        assert m.content == by_id[m.id].content and offloaded_path_of(m) is not None


def test_summary_bigger_than_its_span_in_an_overflow_round_trims_and_retries(mw_kit, tmp_path, mode):
    # spec: R12, R10 — the other decline: the summary is bigger than the span it would replace, so
    # it is not committed; the overflow still gets one retry, the L1 view trimmed to fit
    msgs = [
        HumanMessage("FACT-TASK: read the logs.", id="h0"),
        AIMessage(mw_kit.fill(800, "FACT-EARLY", 3), id="a0"),
        *parallel_unit(mw_kit, n=8, chars=1600)[1:],
    ]
    window = 900
    summarizer = mw_kit.FakeSummarizer(mode="verbose", output_chars=3000)
    mw = make_mw(mw_kit, tmp_path, summarizer, summary_keep_messages=9)
    d = mw_kit.Driver(mw, msgs, mode=mode)  # no profile: the first call overflows
    rec = d.round(overflow=provider(window))
    check_recovered(mw_kit, rec, window, tmp_path)
    assert summarizer.calls  # L2 ran ...
    assert "bigger than the span" in mw_kit.ctx_events(rec)[-1]["stats"]["summary_rejected"]
    assert d.event is None  # ... and committed nothing


def test_no_cutoff_and_nothing_to_trim_still_propagates(mw_kit, tmp_path, mode):
    # spec: R13 (the older rule, kept) — the L1 view overflowed, there is no cutoff and nothing a
    # trim could shrink: the request that overflowed is not sent again; the error propagates
    msgs = [
        (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(1500, f"FACT-{i}", i), id=f"m{i}")
        for i in range(5)
    ]
    mw = make_mw(mw_kit, tmp_path, summary_keep_messages=10)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round(overflow=provider(500))
    assert isinstance(rec["exc"], ContextOverflowError)
    assert len(rec["calls"]) == 1
    assert [e["phase"] for e in mw_kit.ctx_events(rec)] == ["started", "failed"]


# --- item 2: messages without ids are trimmed in the view -----------------------------------------


def test_messages_without_ids_are_trimmed_in_the_view_only(mw_kit, tmp_path, mode):
    # spec: R12 — a view-only trim needs no id: the id-less results are trimmed in the retry and
    # the state keeps their originals (nothing in the update names them)
    msgs = [
        HumanMessage(mw_kit.fill(2000, "FACT-TASK", 1), id="h0"),
        AIMessage(mw_kit.fill(2000, "FACT-EARLY", 2), id="a0"),
        *parallel_unit(mw_kit, n=8, chars=1100, ids=False),
    ]
    window = 1200
    mw = make_mw(mw_kit, tmp_path, summary_keep_messages=9)
    d = mw_kit.Driver(mw, msgs, mode=mode, reducer="concat")  # no profile: the first call overflows
    rec = d.round(overflow=provider(window))
    retry = check_recovered(mw_kit, rec, window, tmp_path)
    assert sum(1 for m in retry if isinstance(m, ToolMessage) and LTR_RE.search(m.content)) == 8
    assert all(m.id is not None for m in (rec["update"].get("messages") or []))
    assert [mw_kit.text(m) for m in d.state["messages"][: len(msgs)]] == [mw_kit.text(m) for m in msgs]


# --- item 3: the tail trim never undoes itself -------------------------------------------------


def test_tail_trim_keeps_the_smallest_view_it_reached(mw_kit, tmp_path, mode):
    # spec: R12 — the window needs limits below the path floor: each result keeps the smallest
    # copy any limit gave, so the retry is never the untrimmed view that just overflowed
    msgs = [
        HumanMessage(mw_kit.fill(3000, "FACT-TASK", 1), id="h0"),
        AIMessage(mw_kit.fill(3000, "FACT-EARLY", 2), id="a0"),
        *parallel_unit(mw_kit, n=6, chars=1200),
    ]
    window = 700
    mw = make_mw(mw_kit, tmp_path, summary_keep_messages=7, summary_tool_result_token_limit=400)
    d = mw_kit.Driver(mw, msgs, mode=mode)  # no profile: the first call overflows
    rec = d.round(overflow=provider(window))
    retry = check_recovered(mw_kit, rec, window, tmp_path)
    results = [m for m in retry if isinstance(m, ToolMessage)]
    assert len(results) == 6 and all(offloaded_path_of(m) for m in results)
    assert d.event is not None and d.event["cutoff_index"] == 3


# --- item 4: the window the provider's error states --------------------------------------------


@pytest.mark.parametrize("shape", sorted(MESSAGES))
def test_unknown_capacity_reads_the_window_from_the_error(mw_kit, tmp_path, mode, shape):
    # spec: R12 — no max_input_tokens profile and a provider that counts 1.5x ctxlab's estimate:
    # 75 % of the estimate that overflowed is still above the window; the error states the window
    # (and the count), so the retry aims at it and fits
    msgs = parallel_unit(mw_kit, n=16, chars=2400)
    window, factor = 3000, 1.5
    mw = make_mw(mw_kit, tmp_path, summary_tool_result_token_limit=1000)
    d = mw_kit.Driver(mw, msgs, mode=mode)  # no profile
    rec = d.round(overflow=provider(window, factor, shape))
    check_recovered(mw_kit, rec, window, tmp_path, factor)
    stats = mw_kit.ctx_events(rec)[-1]["stats"]
    assert stats["retry_target_from"] == "error"
    assert stats["overflow_window"]["provider"] == shape
    assert stats["overflow_window"]["window_tokens"] == window


def sdk_error(shape, window, counted):
    """The exception LangChain's provider package raises, built as the package builds it."""
    if shape == "anthropic":
        import httpx
        from langchain_anthropic.chat_models import AnthropicContextOverflowError

        text = MESSAGES["anthropic"](window, counted)
        request = httpx.Request("POST", "https://api.anthropic.com/v1/messages")
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": text}}
        return AnthropicContextOverflowError(
            message=text, response=httpx.Response(400, request=request), body=body
        )
    from langchain_google_genai.chat_models import GoogleContextOverflowError

    error = {"code": 400, "message": MESSAGES["gemini"](window, counted), "status": "INVALID_ARGUMENT"}
    return GoogleContextOverflowError(code=400, response_json={"error": error})


@pytest.mark.parametrize("shape", ["anthropic", "gemini"])
def test_the_window_is_read_from_the_provider_packages_exceptions(mw_kit, tmp_path, mode, shape):
    # spec: R12 — langchain-anthropic's and langchain-google-genai's own overflow exceptions (the
    # message in the SDK's attributes): the retry aims at the window they state and fits; the
    # exception that would propagate is the provider's own
    msgs = parallel_unit(mw_kit, n=16, chars=2400)
    window, factor = 3000, 1.5

    def overflow(n, view, system):
        c = count(view, factor)
        return sdk_error(shape, window, c) if c > window else False

    mw = make_mw(mw_kit, tmp_path, summary_tool_result_token_limit=1000)
    rec = mw_kit.Driver(mw, msgs, mode=mode).round(overflow=overflow)
    assert rec["exc"] is None, rec["exc"]
    assert count(rec["calls"][-1]["messages"], factor) <= window
    stats = mw_kit.ctx_events(rec)[-1]["stats"]
    assert (stats["retry_target_from"], stats["overflow_window"]["window_tokens"]) == ("error", window)


@pytest.mark.parametrize(
    ("text", "window", "counted"),
    [
        ("prompt is too long: 212345 tokens > 200000 maximum", 200000, 212345),
        (
            "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', "
            "'message': 'prompt is too long: 208,117 tokens > 200,000 maximum'}}",
            200000,
            208117,
        ),
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted "
            "in 9000 tokens. Please reduce the length of the messages.",
            8192,
            9000,
        ),
        # the completion the request reserved is not room for input
        (
            "This model's maximum context length is 4097 tokens, however you requested 4569 tokens "
            "(3545 in your prompt; 1024 for the completion). Please reduce your prompt; or completion length.",
            4097 - 1024,
            3545,
        ),
        (
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(4000 in the messages, 1000 in the completion).",
            3096,
            4000,
        ),
        ("This model's maximum context length is 128000 tokens.", 128000, None),
        (
            '{"error": {"code": 400, "message": "The input token count (1200293) exceeds the '
            'maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}',
            1048576,
            1200293,
        ),
        (
            "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
            131072,
            136973,
        ),
    ],
)
def test_read_overflow_per_provider_message(text, window, counted):
    # spec: R12 — each provider's message shape (Anthropic, OpenAI and the servers that copy its
    # text, Gemini, xAI) gives the window and, when stated, the provider's count
    found = read_overflow(text)
    assert found is not None
    assert (found.window_tokens, found.counted_tokens) == (window, counted)


@pytest.mark.parametrize(
    "text",
    [
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "Input is too long for requested model.",
        "prompt is too long",
        "",
    ],
)
def test_read_overflow_without_a_window(text):
    # spec: R12 — a text that states no window gives none (the share of the estimate decides)
    assert read_overflow(text) is None
    assert read_overflow(ContextOverflowError(text)) is None


def test_read_overflow_reads_the_error_it_was_raised_from():
    # spec: R12 — a wrapper whose own text is generic, raised from the SDK's error that states it
    try:
        try:
            raise ValueError(MESSAGES["xai"](131072, 136973))
        except ValueError as sdk:
            raise ContextOverflowError("the context window was exceeded") from sdk
    except ContextOverflowError as exc:
        found = read_overflow(exc)
    assert found is not None and (found.provider, found.window_tokens) == ("xai", 131072)


def test_retry_target_takes_the_smallest_known_size():
    # spec: R12 — the error's window (rescaled to ctxlab's estimate by the provider's count), the
    # capacity and the share of the estimate: the smallest wins and is recorded
    stated = read_overflow("prompt is too long: 4500 tokens > 3000 maximum")
    assert retry_target(3000, None, stated) == (2000, "error")
    assert retry_target(3000, 1500, stated) == (1500, "capacity")
    assert retry_target(3000, None, None) == (int(3000 * OVERFLOW_RETRY_SHARE), "estimate")
    # a provider that counts fewer tokens than the estimate: the window is taken as stated
    assert retry_target(10000, None, read_overflow("prompt is too long: 8000 tokens > 7000 maximum")) == (
        7000,
        "error",
    )


# --- item 5: the path floor ----------------------------------------------------------------------


def test_limit_below_the_path_floor_still_offloads_with_one_warning(mw_kit, tmp_path, mode, caplog):
    # spec: R6 — a limit of 64 tokens cannot hold the offload header with its 64-hex path: a
    # 25k-token result is replaced by the path alone (over the limit, far under the original),
    # and the limit is warned about once
    big = mw_kit.fill(100_000, "FACT-BIG", 7)
    msgs = [
        HumanMessage("FACT-TASK read the log", id="h0"),
        *mw_kit.tool_pair("c0", "read_log", big, ai_id="a0", tool_id="t0"),
        HumanMessage("and now?", id="h1"),
    ]
    mw = make_mw(mw_kit, tmp_path, summary_threshold=0.01, summary_tool_result_token_limit=64)
    d = mw_kit.Driver(mw, msgs, mode=mode)
    with caplog.at_level(logging.WARNING, logger="ctxlab.core.l1"):
        for _ in range(2):
            rec = d.round()
            assert rec["exc"] is None
            (sent,) = [m for m in rec["calls"][-1]["messages"] if isinstance(m, ToolMessage)]
            (p,) = LTR_RE.findall(sent.content)
            assert sent.content == f"{OFFLOAD_MARKER} Full output saved at {p}"
            assert EST.message_tokens(sent) < EST.message_tokens(msgs[2]) // 100
            assert mw_kit.files(tmp_path)[p.lstrip("/")] == big
            d.append(HumanMessage("more", id=f"h{len(d.state['messages'])}"))
    floor = [r for r in caplog.records if "cannot hold an offload path" in r.getMessage()]
    assert len(floor) == 1 and "summary_tool_result_token_limit=64" in floor[0].getMessage()


def test_below_the_floor_a_result_the_path_would_not_shrink_stays(mw_kit, tmp_path):
    # spec: R6 — the replacement must be smaller than the original: a result only a little over a
    # tiny limit stays whole (its path alone would be bigger)
    msgs = [
        HumanMessage("FACT-TASK", id="h0"),
        *mw_kit.tool_pair("c0", "read_log", mw_kit.fill(120, "R", 3), ai_id="a0", tool_id="t0"),
    ]
    mw = make_mw(mw_kit, tmp_path, summary_threshold=0.01, summary_tool_result_token_limit=10)
    rec = mw_kit.Driver(mw, msgs).round()
    assert rec["calls"][-1]["messages"][2].content == msgs[2].content


# --- the property --------------------------------------------------------------------------------

#: raise for a deeper search: ``MW_HYPOTHESIS_EXAMPLES=1000 pytest tests/test_middleware_overflow.py``
PROPS = settings(
    max_examples=int(os.environ.get("MW_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

unit = st.tuples(
    st.integers(min_value=1, max_value=8),  # parallel results
    st.lists(st.integers(min_value=400, max_value=12000), min_size=8, max_size=8),  # their sizes
    st.integers(min_value=10, max_value=1500),  # text before the unit
    st.booleans(),  # ids
)


def history(kit, units):
    msgs = [HumanMessage("FACT-TASK: go through the material.", id="h-task")]
    for k, (n, sizes, chars, ids) in enumerate(units, start=1):
        msgs.append(HumanMessage(kit.fill(chars, f"FACT-U{k}", k), id=f"h{k}" if ids else None))
        if n:
            msgs.append(
                AIMessage(
                    f"calls {k}",
                    id=f"a{k}" if ids else None,
                    tool_calls=[{"name": "read", "args": {"n": j}, "id": f"c{k}-{j}"} for j in range(n)],
                )
            )
            msgs += [
                ToolMessage(
                    kit.fill(sizes[j], f"FACT-R{k}-{j}", 100 * k + j),
                    tool_call_id=f"c{k}-{j}",
                    name="read",
                    id=f"t{k}-{j}" if ids else None,
                )
                for j in range(n)
            ]
        msgs.append(AIMessage(f"noted {k}", id=f"r{k}" if ids else None))
    return msgs


def smallest_l1_view(effective):
    """The smallest view L1 can build over the effective messages, built here without the
    trimmers under test: every tool result replaced by the offload header with its path alone
    when that is smaller (R6: the shortest replacement that shrinks it; the generated histories
    have no long write_file/edit_file arguments)."""
    path = f"/outputs/large_tool_results/read-{'0' * 64}.txt"
    out = []
    for m in effective:
        if isinstance(m, ToolMessage) and offloaded_path_of(m) is None:
            short = m.model_copy(update={"content": f"{OFFLOAD_MARKER} Full output saved at {path}"})
            m = short if EST.message_tokens(short) < EST.message_tokens(m) else m
        out.append(m)
    return out


@PROPS
@given(
    units=st.lists(unit, min_size=1, max_size=5),
    slack=st.integers(min_value=-400, max_value=800),
    limit=st.sampled_from([40, 64, 150, 400, 1000]),
    keep=st.integers(min_value=0, max_value=6),
    threshold=st.sampled_from([0.25, 1.0, 8.0, 64.0]),
    profile=st.sampled_from([False, False, True]),
    factor=st.sampled_from([1.0, 1.3]),
    rounds=st.integers(min_value=1, max_value=3),
    mode=st.sampled_from(["sync", "async"]),
)
def test_whenever_a_buildable_view_fits_the_retry_fits(
    mw_kit, units, slack, limit, keep, threshold, profile, factor, rounds, mode
):
    # spec: R12 — over generated histories, windows and settings: when the smallest L1 view the
    # middleware can build fits the provider's window, the round succeeds with at most one retry
    # and the view it sent last fits; otherwise the overflow propagates with a failed event, and
    # then the smallest L2 view of the round's own summary did not fit either.  The window is
    # the first round's smallest view plus ``slack`` tokens (negative: nothing L1 builds fits; the
    # full history is usually far over it, so most rounds overflow)
    msgs = history(mw_kit, units)
    with tempfile.TemporaryDirectory() as root:
        mw = make_mw(
            mw_kit,
            root,
            summary_threshold=threshold,
            summary_keep_messages=keep,
            summary_tool_result_token_limit=limit,
        )
        window = max(50, count(smallest_l1_view(msgs), factor) + 8 + slack)
        d = mw_kit.Driver(mw, msgs, mode=mode, max_input_tokens=window if profile else None, reducer="concat")
        for r in range(rounds):
            if r:
                d.append(HumanMessage(mw_kit.fill(300, f"FACT-N{r}", r)))
            state, event = list(d.state["messages"]), d.event
            eff = [event["summary_message"], *state[event["cutoff_index"] :]] if event else state
            fits = count(smallest_l1_view(eff), factor) + 8 <= window
            rec = d.round(overflow=provider(window, factor))
            assert len(rec["calls"]) <= 2
            if fits:
                assert rec["exc"] is None, (rec["exc"], count(rec["calls"][-1]["messages"], factor), window)
                assert count(rec["calls"][-1]["messages"], factor) <= window
            if rec["exc"] is not None:
                assert isinstance(rec["exc"], ContextOverflowError)
                assert mw_kit.ctx_events(rec)[-1]["phase"] == "failed"
                # the L2 view the round built (its summary and the kept tail) did not fit either,
                # at its smallest
                last = rec["calls"][-1]["messages"]
                if last and last[0].additional_kwargs.get("lc_source") == "summarization":
                    l2 = [last[0], *smallest_l1_view(eff[len(eff) - len(last) + 1 :])]
                    assert count(l2, factor) + 8 > window, (count(l2, factor), window)
                break
            for call in rec["calls"]:
                assert mw_kit.pairing_problems(call["messages"], rec["state_before"]) == []
