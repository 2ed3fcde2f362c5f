"""Token estimates: a character-class approximation of ``cl100k_base`` with a per-message cache (spec R16).

Estimates are local approximations used only to trigger and trim; provider-reported usage is the
billing truth (R16).  All values are tokens (``int``); the calibrated weights below are tokens per
character (or per counted unit).  Nothing here raises on odd content: unknown block types count
their JSON length with the same weights.

Text (:func:`estimate_text_tokens`) is weighed by character class instead of a flat 4 characters
per token, which misses about 3× of the tokens of Chinese prose and of base64, and a quarter of
JSON.  The classes are counted exactly, block by block (:data:`BLOCK` characters, so that a
base64 blob inside a long tool result is weighed as such), with C-speed passes over the bytes of
the block (``str.encode``, ``bytes.translate(None, delete)`` chained so each pass runs over what
the previous one left, ``bytes.count``; non-ASCII text is encoded to UTF-8 once and its
non-ASCII bytes deleted first, so the ASCII passes run on what is left) — about 20× cheaper
than tiktoken over the transcripts' message texts (``ctxlab bench``):

* ``W`` whitespace (space, newline, tab, CR) — :data:`C_SPACE`, and :data:`C_NEWLINE` more per
  newline;
* ``D`` ASCII digits — :data:`C_DIGIT` (numbers split into short groups);
* ``U`` upper-case ASCII letters — :data:`C_UPPER`;
* ``Q`` double quotes (JSON keys and strings) — :data:`C_QUOTE`, on top of their class;
* the rest of the ASCII characters (lower-case letters, punctuation) — :data:`C_REST`;
* non-ASCII characters by their UTF-8 length, from ``N`` (the non-ASCII characters: deleted
  bytes minus ``E``) and ``E`` the extra bytes (``len(utf8) - len(text)``): ``n2 = 2N - E``
  2-byte characters (Cyrillic, Greek, Arabic,
  Hebrew, accented Latin) — :data:`C_N2`; ``n3 = E - N`` 3-byte ones (CJK, kana, Hangul, CJK
  punctuation, Thai, Devanagari) — :data:`C_N3`;
* unbroken text: with ``dense`` the mean length of the whitespace-separated runs of a block
  (ASCII non-space characters / (W + 1)), a ramp ``r = clip((dense - RAMP_LO) / (RAMP_HI -
  RAMP_LO), 0, 1)`` adds ``r × (C_DENSE × non-space + C_DENSE_UPPER × U)``: base64, hashes and
  minified data cost ~0.7 token per character where prose costs ~0.23 (cl100k splits random
  alphanumerics into 1–2-character tokens).

:func:`features` returns these counts and :data:`COEFFICIENTS` / :data:`WEIGHTS` their weights;
the estimate is their weighted sum, rounded, at least 1 for a non-empty text.

Images are not counted by their base64 length: a PNG/JPEG/GIF/WebP header gives the size and the
tile rule of OpenAI's vision pricing (85 + 170 per 512-px tile) gives the tokens; unknown images
count a flat 1,000 tokens.  Data-URL images inside a text count as images too.

The weights were fitted against tiktoken ``cl100k_base`` on the shared public transcripts
(``../shared/transcripts``) plus the Chinese prose sample (``samples/zh-prose.txt``), per content
class — prose, code, JSON, logs, CJK, base64 (:func:`ctxlab.cli.bench.collect_samples`, labeled by
:func:`ctxlab.cli.bench.label_block`), every class weighted equally; every class's aggregate error is
within ±5 % (``ctxlab bench`` reports it, ``tests/test_estimation_calibration.py`` checks ±10 %).
``C_N2`` is not fitted (no 2-byte scripts in the transcripts): it is set from cl100k on Cyrillic,
Greek, Arabic and Hebrew words (0.62–0.96 token per character).  The fit is reproducible:
``.venv/bin/python plugins/ctxlab-fast-estimator/calibrate.py`` prints the per-class errors and
the constants to paste here.  The ``ctxlab-fast-estimator`` plugin uses the same features and
weights, counting long texts on a sample of their bytes (:func:`char_class_tokens` with a
stride): cheaper on long texts, noisier per text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = [
    "BLOCK",
    "COEFFICIENTS",
    "WEIGHTS",
    "CharClassEstimator",
    "EstimateCache",
    "char_class_tokens",
    "estimate_image_tokens",
    "estimate_text_tokens",
    "features",
]

# --- calibrated constants (plugins/ctxlab-fast-estimator/calibrate.py; tokens per unit) ----------
C_REST = 0.2402  # lower-case letters and ASCII punctuation
C_UPPER = 0.3275  # upper-case ASCII letters
C_DIGIT = 0.8762  # digits
C_SPACE = 0.1052  # whitespace characters
C_QUOTE = 0.404  # double quotes (JSON keys and strings)
C_NEWLINE = 0.4479  # newlines, on top of C_SPACE
C_N2 = 0.75  # 2-byte UTF-8 characters (Cyrillic, Greek, Arabic, Hebrew, accented Latin); not fitted
C_N3 = 1.204  # 3-byte UTF-8 characters (CJK, kana, Hangul, CJK punctuation, Indic, Thai)
C_DENSE = 0.2513  # per non-space ASCII character of unbroken text, times the ramp
C_DENSE_UPPER = 0.2273  # per upper-case letter of unbroken text, times the ramp
RAMP_LO = 20.0  # mean run length where unbroken text starts to cost more
RAMP_HI = 60.0  # mean run length where it costs the most

#: the calibrated constants by name
COEFFICIENTS: dict[str, float] = {
    "C_REST": C_REST,
    "C_UPPER": C_UPPER,
    "C_DIGIT": C_DIGIT,
    "C_SPACE": C_SPACE,
    "C_QUOTE": C_QUOTE,
    "C_NEWLINE": C_NEWLINE,
    "C_N2": C_N2,
    "C_N3": C_N3,
    "C_DENSE": C_DENSE,
    "C_DENSE_UPPER": C_DENSE_UPPER,
    "RAMP_LO": RAMP_LO,
    "RAMP_HI": RAMP_HI,
}

#: the coefficient of each feature of :func:`features`
WEIGHTS: dict[str, str] = {
    "rest": "C_REST",
    "upper": "C_UPPER",
    "digit": "C_DIGIT",
    "space": "C_SPACE",
    "quote": "C_QUOTE",
    "newline": "C_NEWLINE",
    "n2": "C_N2",
    "n3": "C_N3",
    "dense": "C_DENSE",
    "dense_upper": "C_DENSE_UPPER",
}

#: texts are estimated in blocks of this many characters (mixed content gets per-block ramps)
BLOCK = 8192
_WS = b" \n\t\r"
_UPPER = bytes(range(0x41, 0x5B))
_DIGITS = b"0123456789"
_HIGH = bytes(range(0x80, 0x100))
# a data-URL image, possibly wrapped in lines (MIME/PEM style)
_DATA_URL = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/=]{64,}(?:\r?\n[A-Za-z0-9+/=]{16,})*")

#: tokens per message for role and framing (OpenAI's chat format costs ~3-4)
MESSAGE_OVERHEAD = 4
#: tokens for an image whose size cannot be read
UNKNOWN_IMAGE_TOKENS = 1000


def _counts(
    text: str,
    stride: int = 1,
    sample_from: int = 0,
    _ws: bytes = _WS,
    _digits: bytes = _DIGITS,
    _upper: bytes = _UPPER,
    _high: bytes = _HIGH,
) -> tuple[int, float, float, float, float, float, int, int]:
    """``(ascii, whitespace, digits, upper, quotes, newlines, lead, extra)`` of one block.

    ``ascii`` is the number of ASCII characters; ``lead`` the number of non-ASCII characters (one
    UTF-8 lead byte each) and ``extra`` their continuation bytes.  Non-ASCII text is encoded once
    and its non-ASCII bytes deleted (``lead = deleted - extra``); the ASCII passes then run on
    what is left.  Each ``bytes.translate(None, delete)`` runs over what the previous one left.

    Exact when ``stride`` is 1.  With ``stride`` > 1, ASCII parts of ``sample_from`` characters or
    more are counted on every ``stride``-th character and the ASCII counts are scaled
    (``ascii``, ``lead`` and ``extra`` stay exact): the ``ctxlab-fast-estimator`` plugin's trade.
    """
    if text.isascii():
        b = text.encode("ascii")
        lead = extra = 0
    else:
        u = text.encode("utf-8", "surrogatepass")
        extra = len(u) - len(text)
        b = u.translate(None, _high)
        lead = len(u) - len(b) - extra
    na = len(b)
    if stride > 1 and na >= sample_from:
        b = b[::stride]
        scale = na / len(b)
    else:
        scale = 1.0
    b1 = b.translate(None, _ws)
    b2 = b1.translate(None, _digits)
    b3 = b2.translate(None, _upper)
    return (
        na,
        (len(b) - len(b1)) * scale,
        (len(b1) - len(b2)) * scale,
        (len(b2) - len(b3)) * scale,
        b3.count(b'"') * scale,
        b.count(b"\n") * scale,
        lead,
        extra,
    )


def features(
    text: str,
    ramp_lo: float = RAMP_LO,
    ramp_hi: float = RAMP_HI,
    *,
    stride: int = 1,
    sample_from: int = 0,
) -> dict[str, float]:
    """The features behind the estimate (keys of :data:`WEIGHTS`), summed over the blocks of ``text``.

    ``char_class_tokens(text, stride, sample_from) == max(1, round(sum(COEFFICIENTS[WEIGHTS[k]] *
    v for k, v in features(text, stride=stride, sample_from=sample_from).items())))`` for a
    non-empty text without data-URL images.  ``ramp_lo``/``ramp_hi`` let the calibration try
    other ramps.
    """
    out = dict.fromkeys(WEIGHTS, 0.0)
    span = ramp_hi - ramp_lo
    for i in range(0, max(1, len(text)), BLOCK):
        na, ws, digits, upper, quotes, newlines, lead, extra = _counts(
            text[i : i + BLOCK], stride, sample_from
        )
        nonspace = na - ws
        ramp = min(1.0, max(0.0, (nonspace / (ws + 1) - ramp_lo) / span))
        for k, v in (
            ("rest", nonspace - upper - digits),
            ("upper", upper),
            ("digit", digits),
            ("space", ws),
            ("quote", quotes),
            ("newline", newlines),
            ("n2", max(0, 2 * lead - extra)),
            ("n3", max(0, extra - lead)),
            ("dense", ramp * nonspace),
            ("dense_upper", ramp * upper),
        ):
            out[k] += v
    return out


def _block_estimate(
    text: str,
    stride: int = 1,
    sample_from: int = 0,
    _counts: Callable[..., tuple[int, float, float, float, float, float, int, int]] = _counts,
    _c_rest: float = C_REST,
    _c_upper: float = C_UPPER,
    _c_digit: float = C_DIGIT,
    _c_space: float = C_SPACE,
    _c_quote: float = C_QUOTE,
    _c_newline: float = C_NEWLINE,
    _ramp_lo: float = RAMP_LO,
    _ramp_span: float = RAMP_HI - RAMP_LO,
) -> float:
    """The weighted sum of the :func:`features` of one block, inlined (this runs once per text,
    and its interpreter overhead costs as much as the passes over a short text's bytes)."""
    na, ws, digits, upper, quotes, newlines, lead, extra = _counts(text, stride, sample_from)
    nonspace = na - ws
    est = (
        _c_rest * (nonspace - upper - digits)
        + _c_upper * upper
        + _c_digit * digits
        + _c_space * ws
        + _c_quote * quotes
        + _c_newline * newlines
    )
    if lead:
        est += C_N2 * max(0, 2 * lead - extra) + C_N3 * max(0, extra - lead)
    dense = nonspace / (ws + 1)
    if dense > _ramp_lo:
        ramp = (dense - _ramp_lo) / _ramp_span
        est += (ramp if ramp < 1.0 else 1.0) * (C_DENSE * nonspace + C_DENSE_UPPER * upper)
    return est


def char_class_tokens(text: str, stride: int = 1, sample_from: int = 0) -> int:
    """Estimated ``cl100k_base`` tokens of ``text`` (at least 1 for a non-empty text), block by block.

    Exact counts by default (:func:`estimate_text_tokens`); ``stride`` > 1 counts the ASCII part
    of a block of ``sample_from`` ASCII characters or more on every ``stride``-th character (the
    ``ctxlab-fast-estimator`` plugin).  Data-URL images count as images
    (:func:`estimate_image_tokens`).
    """
    if len(text) <= BLOCK and "data:image/" not in text:
        if not text:
            return 0
        est = _block_estimate(text, stride, sample_from)
        return round(est) if est >= 1.0 else 1
    images = 0
    if "data:image/" in text:
        for m in _DATA_URL.finditer(text):
            images += estimate_image_tokens(m.group(0))
        text = _DATA_URL.sub(" ", text)
    est = 0.0
    for i in range(0, len(text), BLOCK):
        est += _block_estimate(text[i : i + BLOCK], stride, sample_from)
    return max(1, round(est)) + images


def estimate_text_tokens(text: str) -> int:
    """Estimated ``cl100k_base`` tokens of a string: the calibrated character classes, counted
    exactly block by block (see the module docstring); at least 1 for a non-empty text.

    Data-URL images embedded in text are counted as images, not as base64 text.
    """
    return char_class_tokens(text)


def _image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the first bytes of a PNG, GIF, JPEG or WebP, else ``None``."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return w, h
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return w, h
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        if data[12:16] == b"VP8X":
            w = 1 + int.from_bytes(data[24:27], "little")
            h = 1 + int.from_bytes(data[27:30], "little")
            return w, h
        return None
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xC0, 0xC1, 0xC2):
                h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                return w, h
            seg = struct.unpack(">H", data[i + 2 : i + 4])[0]
            i += 2 + seg
    return None


def estimate_image_tokens(url_or_b64: str) -> int:
    """Tokens of one image from a data URL or raw base64 (OpenAI tile rule), else a flat 1,000.

    The image is scaled to fit 2048x2048, then its short side to 768 px; it costs
    85 + 170 tokens per 512-px tile.  Only the first ~64 KiB of base64 are decoded.
    """
    b64 = url_or_b64.split(",", 1)[1] if url_or_b64.startswith("data:") else url_or_b64
    head = re.sub(r"\s", "", b64[:88000])
    head = head[: len(head) - len(head) % 4]
    try:
        data = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return UNKNOWN_IMAGE_TOKENS
    size = _image_size(data)
    if size is None or min(size) <= 0:
        return UNKNOWN_IMAGE_TOKENS
    w, h = size
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = -(-int(w) // 512) * -(-int(h) // 512)
    return 85 + 170 * tiles


def _block_tokens(block: Any, text_tokens: Callable[[str], int] = estimate_text_tokens) -> int:
    if isinstance(block, str):
        return text_tokens(block)
    if not isinstance(block, dict):
        return text_tokens(str(block))
    kind = block.get("type")
    if kind in ("text", "reasoning", "thinking"):
        return text_tokens(str(block.get(kind) or block.get("text") or ""))
    if kind in ("image_url", "image", "input_image"):
        src = block.get("image_url")
        if isinstance(src, dict):
            src = src.get("url")
        if src is None:
            src = block.get("url") or block.get("data") or block.get("base64")
            source = block.get("source")
            if src is None and isinstance(source, dict):
                src = source.get("data") or source.get("url")
        if isinstance(src, str) and (src.startswith("data:") or len(src) > 200):
            return estimate_image_tokens(src)
        return UNKNOWN_IMAGE_TOKENS if src else 0
    if kind == "redacted_thinking":
        return 100
    return text_tokens(json.dumps(block, ensure_ascii=False, default=str))


def content_tokens(content: Any, text_tokens: Callable[[str], int] = estimate_text_tokens) -> int:
    """Tokens of a message ``content`` (str or list of blocks); text weighed by ``text_tokens``."""
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        return sum(_block_tokens(b, text_tokens) for b in content)
    return text_tokens(str(content)) if content else 0


class CharClassEstimator:
    """The ARS default estimator (R16): calibrated character classes, images by size.

    ``message_tokens(msg)`` counts content, tool calls (name + JSON args), the tool name of a
    ToolMessage and a fixed per-message overhead.  Pure: the same message gives the same count.
    Text goes through :attr:`text_tokens` (:func:`estimate_text_tokens`); a subclass may swap it
    (the ``ctxlab-fast-estimator`` plugin uses a sampled variant) and keep this framing.
    """

    name = "char-class"
    text_tokens: Callable[[str], int] = staticmethod(estimate_text_tokens)

    def message_tokens(self, message: BaseMessage) -> int:
        text_tokens = self.text_tokens
        content = message.content
        if isinstance(message, AIMessage) and message.tool_calls and isinstance(content, list):
            # a provider-format tool_use block repeats a tool call: count the call once
            ids = {tc.get("id") for tc in message.tool_calls}
            content = [
                b
                for b in content
                if not (isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") in ids)
            ]
        n = MESSAGE_OVERHEAD + content_tokens(content, text_tokens)
        if isinstance(message, AIMessage) and message.tool_calls:
            for tc in message.tool_calls:
                n += 3 + text_tokens(tc.get("name") or "")
                n += text_tokens(json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str))
        elif isinstance(message, ToolMessage) and message.name:
            n += 1
        return n

    def tools_tokens(self, tools: Sequence[Any]) -> int:
        text_tokens = self.text_tokens
        total = 0
        for tool in tools:
            if isinstance(tool, dict):
                total += text_tokens(json.dumps(tool, ensure_ascii=False, default=str))
                continue
            schema: Any = None
            try:
                from langchain_core.utils.function_calling import convert_to_openai_tool

                schema = convert_to_openai_tool(tool)
            except Exception:
                schema = {"name": getattr(tool, "name", ""), "description": getattr(tool, "description", "")}
            total += text_tokens(json.dumps(schema, ensure_ascii=False, default=str))
        return total


def _fingerprint(message: BaseMessage) -> tuple[Any, ...] | None:
    """A cheap identity of a message's countable parts; ``None`` when it cannot be made cheaply.

    ``hash(str)`` is cached by CPython on the string object, so a long-lived message costs
    O(1) here after its first estimate.
    """
    content = message.content
    if isinstance(content, str):
        ckey: Any = hash(content)
    else:
        try:
            ckey = hash(json.dumps(content, sort_keys=True, default=str))
        except (TypeError, ValueError):
            return None
    calls: tuple[Any, ...] = ()
    if isinstance(message, AIMessage) and message.tool_calls:
        parts = []
        for tc in message.tool_calls:
            args = tc.get("args") or {}
            try:
                akey = tuple(sorted((k, hash(v) if isinstance(v, str) else repr(v)) for k, v in args.items()))
            except TypeError:
                akey = (repr(args),)
            parts.append((tc.get("id"), tc.get("name"), akey))
        calls = tuple(parts)
    return (message.type, message.id, ckey, calls, getattr(message, "name", None))


def _common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common prefix of two message lists.

    List equality skips ``__eq__`` for identical objects, so the common case (the history grew
    since the previous call) is one C-speed scan (~4 ns a message); equal but distinct messages
    have equal estimates, so equality is the right test.  Otherwise bisect.
    """
    n = min(len(a), len(b))
    if n == 0 or (a[0] is not b[0] and a[0] != b[0]):
        return 0
    if a[:n] == b[:n]:
        return n
    lo, hi = 1, n - 1  # a[:lo] matches, a[:hi + 1] does not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class EstimateCache:
    """Per-message estimate cache in front of an estimate function (bounded LRU).

    ``request_tokens(system, tools, messages)`` is the estimate of a whole request (R16: system
    message + tool schemas + messages), in tokens.  A long run therefore does not re-estimate the
    whole history on every model call: each message is estimated once, then looked up by a cheap
    fingerprint (type, id, content hash, tool-call ids/arg hashes).
    """

    def __init__(
        self,
        message_fn: Callable[[BaseMessage], int],
        tools_fn: Callable[[Sequence[Any]], int],
        max_entries: int = 200_000,
    ) -> None:
        self._message_fn = message_fn
        self._tools_fn = tools_fn
        self._cache: OrderedDict[tuple[Any, ...], int] = OrderedDict()
        self._tools_cache: dict[tuple[int, ...], tuple[tuple[Any, ...], int]] = {}
        self._max = max_entries
        self._prefixes: list[tuple[list[BaseMessage], list[int]]] = []
        # the same message object: no fingerprint needed (the object is kept alive with its entry)
        self._by_object: dict[int, tuple[BaseMessage, int]] = {}
        self._prefix_slots = 4
        self.hits = 0
        self.misses = 0

    def message_tokens(self, message: BaseMessage) -> int:
        seen = self._by_object.get(id(message))
        if seen is not None and seen[0] is message:
            self.hits += 1
            return seen[1]
        value = self._message_tokens_by_key(message)
        if len(self._by_object) >= self._max:
            self._by_object.clear()
        self._by_object[id(message)] = (message, value)
        return value

    def _message_tokens_by_key(self, message: BaseMessage) -> int:
        key = _fingerprint(message)
        if key is not None:
            hit = self._cache.get(key)
            if hit is not None:
                self.hits += 1
                return hit
        self.misses += 1
        value = int(self._message_fn(message))
        if key is not None:
            self._cache[key] = value
            if len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return value

    def messages_tokens(self, messages: Sequence[BaseMessage]) -> int:
        """Total tokens of ``messages``.

        Besides the per-message cache, the last few lists are remembered with their running sums:
        a list that starts with the same message *objects* as a remembered one (the common case:
        the history grew by a few messages since the previous model call) costs one C-speed
        identity scan plus the new messages only.  Messages are assumed not to be edited in
        place (LangGraph replaces messages, it does not mutate them).
        """
        best_slot, best_k = None, -1
        for slot in self._prefixes:
            k = _common_prefix(messages, slot[0])
            if k > best_k:
                best_slot, best_k = slot, k
        if best_slot is not None and best_k > 0:
            sums = best_slot[1][: best_k + 1]
            self._prefixes.remove(best_slot)
        else:
            sums, best_k = [0], 0
        fn = self.message_tokens
        running = sums[-1]
        for m in messages[best_k:]:
            running += fn(m)
            sums.append(running)
        self._prefixes.insert(0, (list(messages), sums))
        del self._prefixes[self._prefix_slots :]
        return running

    def tools_tokens(self, tools: Sequence[Any]) -> int:
        """Tokens of the tool schemas, cached by the tool objects themselves (kept alive with
        the entry, so a recycled ``id()`` can never hit a stale estimate)."""
        if not tools:
            return 0
        key = tuple(id(t) for t in tools)
        hit = self._tools_cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            return hit[1]
        value = int(self._tools_fn(tools))
        if len(self._tools_cache) > 64:
            self._tools_cache.clear()
        self._tools_cache[key] = (tuple(tools), value)
        return value

    def request_tokens(
        self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]
    ) -> int:
        total = self.messages_tokens(messages) + self.tools_tokens(tools)
        if system is not None:
            total += self.message_tokens(system)
        return total
