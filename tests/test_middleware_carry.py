"""A carried request never thrashes (issue 30, item 5).

When the latest user request falls behind the cutoff, the summary carries it verbatim (R10).  A
request too long for that — more than a quarter of T2 — is carried as its head and the path of
the file that holds it whole, so that the summary alone never keeps the next views above T2:
before, a ~9,000-character write-up with T = 2K was carried (8,000 characters) into every summary,
kept every later view above T2, and the summarizer ran on every round.

Real parts: the middleware's round through ``ModelNodeHarness``, ``FilesystemBackend`` files.
The summarizer is the offline fake that repeats the facts it was shown.
"""

from __future__ import annotations

import itertools
import re
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator
from tests.hypothesis_profiles import middleware_props

EST = CharClassEstimator()
PROPS = middleware_props(40)
PATH_RE = re.compile(r"/outputs/conversation_history/[^\s\]]+\.md")


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


def writeup(kit, chars: int, cjk: bool = False) -> str:
    body = kit.cjk(chars) if cjk else kit.fill(chars, seed=11)
    return f"FACT-WRITEUP-HEAD {body} FACT-WRITEUP-TAIL"


def work(kit, r: int, chars: int) -> list:
    """One step of the agent working on the request: a tool call and its result."""
    return kit.tool_pair(
        f"c{r}", "grep", kit.fill(chars, f"FACT-G{r}", seed=r), ai_id=f"a{r}", tool_id=f"t{r}"
    )


def test_the_issues_write_up_is_summarized_once_not_every_round(mw_kit, tmp_path, mode):
    # spec: R8, R10 — the issue's case: one ~9,000-character request, T = 2K, the agent works on
    # it; the summary carries the request's head and the file that holds it whole, so the rounds
    # after a summary stay below T and the summarizer is not called again at once
    settings_ = CompressionSettings(
        summary_threshold=2, summary_keep_messages=2, summary_l2_trigger_ratio=0.4
    )
    summ = mw_kit.FakeSummarizer()
    mw = CompressionMiddleware(settings=settings_, backend=mw_kit.backend(tmp_path), summarizer=summ)
    request = writeup(mw_kit, 9000)
    d = mw_kit.Driver(mw, [HumanMessage(request, id="h0")], mode=mode)
    l2 = []
    for r in range(8):
        if r:
            d.append(*work(mw_kit, r, 1200))
        rec = d.round()
        assert rec["exc"] is None
        l2.append(bool(rec["update"]))
    assert not any(a and b for a, b in itertools.pairwise(l2)), l2
    assert 1 <= len(summ.calls) <= 3, l2
    summary = d.event["summary_message"]
    text = mw_kit.text(summary)
    assert "FACT-WRITEUP-HEAD" in text and "FACT-WRITEUP-TAIL" not in text
    assert EST.message_tokens(summary) < settings_.l2_threshold_tokens / 2
    (path,) = set(PATH_RE.findall(text.split("FACT-WRITEUP-HEAD", 1)[1]))
    assert summary.additional_kwargs["ctxlab_latest_request_path"] == path
    assert request in (tmp_path / path.lstrip("/")).read_text(encoding="utf-8")


def test_a_request_that_fits_is_still_carried_whole(mw_kit, tmp_path, mode):
    # spec: R10 — the counterpart: a request within a quarter of T2 is carried verbatim, whole
    settings_ = CompressionSettings(
        summary_threshold=4,
        summary_keep_messages=2,
        summary_tool_result_token_limit=5000,
        summary_l2_trigger_ratio=0.8,
    )
    mw = CompressionMiddleware(
        settings=settings_, backend=mw_kit.backend(tmp_path), summarizer=mw_kit.FakeSummarizer()
    )
    request = writeup(mw_kit, 1500)
    d = mw_kit.Driver(
        mw, [HumanMessage(request, id="h0"), *work(mw_kit, 1, 12000), *work(mw_kit, 2, 12000)], mode=mode
    )
    rec = d.round()
    event = rec["update"]["_summarization_event"]
    assert request in mw_kit.text(event["summary_message"])
    assert "ctxlab_latest_request_path" not in event["summary_message"].additional_kwargs


@PROPS
@given(
    chars=st.integers(min_value=2_000, max_value=40_000),
    cjk=st.booleans(),
    threshold=st.sampled_from([1, 2, 3]),
    ratio=st.sampled_from([0.4, 0.6, 1.0]),
    keep=st.integers(min_value=0, max_value=3),
    step=st.floats(min_value=0.02, max_value=0.12),
    rounds=st.integers(min_value=4, max_value=9),
    mode=st.sampled_from(["sync", "async"]),
)
def test_no_round_summarizes_twice_in_a_row_because_of_the_carried_request(
    mw_kit, chars, cjk, threshold, ratio, keep, step, rounds, mode
):
    # spec: R8, R10 — one long request; each round the agent adds a step far smaller than T2
    # (a tool call and a result of `step` × T2 tokens).  After a round whose summary carries the
    # request, the next round never summarizes again: the summary holds at most a quarter of T2
    # of the request, and names the file that holds it whole
    settings_ = CompressionSettings(
        summary_threshold=threshold, summary_keep_messages=keep, summary_l2_trigger_ratio=ratio
    )
    t2 = settings_.l2_threshold_tokens
    step_chars = max(40, int(step * t2 * 3.5))
    request = writeup(mw_kit, chars, cjk)
    with tempfile.TemporaryDirectory() as root:
        mw = CompressionMiddleware(
            settings=settings_, backend=mw_kit.backend(root), summarizer=mw_kit.FakeSummarizer()
        )
        d = mw_kit.Driver(mw, [HumanMessage(request, id="h0")], mode=mode)
        carried_last = False
        for r in range(rounds):
            if r:
                d.append(*work(mw_kit, r, step_chars))
            rec = d.round()
            assert rec["exc"] is None
            committed = (rec["update"] or {}).get("_summarization_event")
            assert not (carried_last and committed), (r, "summarized again right after carrying the request")
            carried_last = bool(
                committed and committed["summary_message"].additional_kwargs.get("ctxlab_latest_request")
            )
            if committed and carried_last:
                summary = committed["summary_message"]
                kwargs = summary.additional_kwargs
                carried = kwargs["ctxlab_latest_request"]
                if "ctxlab_latest_request_path" in kwargs:
                    head = carried.rsplit("\n", 1)[0]
                    assert EST.text_tokens(head) <= max(200, int(t2 / 4))
                    path = kwargs["ctxlab_latest_request_path"]
                    whole = mw_kit.files(root)[path.lstrip("/")]
                    assert request in whole
                else:
                    assert carried == request
