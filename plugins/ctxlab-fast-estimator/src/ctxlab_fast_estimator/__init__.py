"""ctxlab-fast-estimator: a character-class token estimate calibrated against ``cl100k_base``.

:func:`fast_text_tokens` approximates ``len(cl100k_base.encode(text))`` with a handful of
C-speed passes over the UTF-8 bytes of the text, block by block (8,192 characters, so that a
base64 blob inside a long tool result is weighed as such):

* ``W`` whitespace (space, newline, tab, CR), ``D`` digits, ``U`` upper-case ASCII letters —
  each one ``bytes.translate(None, delete)``, chained so each pass runs over what the previous
  one left;
* ``Q`` double quotes and ``NL`` newlines — ``bytes.count``;
* non-ASCII characters by their UTF-8 length: ``N`` lead bytes (one ``translate``, only for
  non-ASCII text) and ``E`` extra bytes (``len(bytes) - len(str)``) give the 2-byte characters
  (Cyrillic, Greek, Arabic, Hebrew, accented Latin) ``n2 = 2N - E`` and the 3-byte ones (CJK,
  kana, Hangul, CJK punctuation, Thai, Devanagari) ``n3 = E - N``;
* ``R`` the rest of the ASCII characters (lower-case letters and punctuation).

Blocks of :data:`SAMPLE_FROM` (128) characters or more are counted on a sample of their bytes
and scaled: every 3rd byte of ASCII text, every 5th byte of other text (coprime with the 2-, 3-
and 4-byte UTF-8 sequences, so the sample does not alias with them); ``N`` and ``E`` stay exact.
The sample changed the calibrated per-class errors by less than 0.5 points and makes the
estimate about 3× cheaper; a single text's estimate moves by a few percent at most.

The estimate is linear in these counts, plus one non-linear term for unbroken runs: with
``dense = (ASCII non-space characters) / (W + 1)``, the mean length of the whitespace-separated
runs, a ramp ``r = clip((dense - RAMP_LO) / (RAMP_HI - RAMP_LO), 0, 1)`` adds ``r × (C_DENSE ×
non-space + C_DENSE_UPPER × U)``: base64, hashes and minified data cost ~0.7 token per
character, where prose costs ~0.23 (cl100k splits random alphanumerics into 1–2-character
tokens).  Data-URL images in the text count as images (:func:`ctxlab.estimation.estimate_image_tokens`).

Calibration (``plugins/ctxlab-fast-estimator/calibrate.py``, reproducible): samples of six
content classes from the public transcripts (:func:`ctxlab.bench.collect_samples`):

* **prose** — natural-language paragraphs: user requests, assistant reasoning, τ-bench dialogue;
* **code** — blocks where most lines look like source (file views, edits, fenced code);
* **JSON** — texts that parse as one JSON object/array: tool arguments, τ-bench tool results;
* **logs** — tool output where many lines look like logs (test runs, tracebacks, build output);
* **CJK** — blocks with ≥ 25 % CJK characters: the Chinese transcripts (DeerFlow, OpenCode) and
  ``samples/zh-prose.txt``;
* **base64** — the transcripts' base64 strings (Gemini thought signatures) plus base64 of random
  and compressed bytes;

each labeled from the text itself by :func:`ctxlab.bench.label_block` (rules in its docstring,
independent of this estimator's features).  Other non-Latin scripts do not occur in the
transcripts: ``C_N2`` (tokens per 2-byte character) is set from cl100k on the Cyrillic, Greek,
Arabic and Hebrew words of the ``arrow`` package's locale tables (0.62–0.96 token per character),
not fitted.  The weights minimise a blend of per-sample relative error and per-class aggregate
error, every class weighted equally; ``calibrate.py`` prints the in-sample and the
leave-sources-out error per class.

The entry point registers the ``ars-fast`` strategy only; installing the package does not change
any middleware's estimator.  Use :class:`FastEstimator` as a plugin to opt in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.estimation import MESSAGE_OVERHEAD, UNKNOWN_IMAGE_TOKENS, estimate_image_tokens
from ctxlab.hookspecs import hookimpl

__all__ = [
    "COEFFICIENTS",
    "FastEstimator",
    "entry_point",
    "fast_text_tokens",
    "features",
]

# --- calibrated constants (calibrate.py; tokens per unit) ---------------------------------------
C_REST = 0.238  # lower-case letters and ASCII punctuation
C_UPPER = 0.3273  # upper-case ASCII letters
C_DIGIT = 0.8771  # digits
C_SPACE = 0.117  # whitespace characters
C_QUOTE = 0.3978  # double quotes (JSON keys and strings)
C_NEWLINE = 0.3567  # newlines, on top of C_SPACE
C_N2 = 0.75  # 2-byte UTF-8 characters (Cyrillic, Greek, Arabic, Hebrew, accented Latin); not fitted
C_N3 = 1.211  # 3-byte UTF-8 characters (CJK, kana, Hangul, CJK punctuation, Indic, Thai)
C_DENSE = 0.1317  # per non-space ASCII character of unbroken text, times the ramp
C_DENSE_UPPER = 0.5231  # per upper-case letter of unbroken text, times the ramp
RAMP_LO = 20.0  # mean run length where unbroken text starts to cost more
RAMP_HI = 60.0  # mean run length where it costs the most

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

#: texts are estimated in blocks of this many characters (mixed content gets per-block ramps)
BLOCK = 8192
#: ASCII blocks this long or longer are counted on every STRIDE-th byte
SAMPLE_FROM = 128
STRIDE = 3
#: non-ASCII blocks are sampled with a stride coprime with the 2-, 3- and 4-byte UTF-8 sequences
WIDE_STRIDE = 5
_WS = b" \n\t\r"
_UPPER = bytes(range(0x41, 0x5B))
_DIGITS = b"0123456789"
_LEAD = bytes(range(0xC0, 0x100))
_DATA_URL = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/=\s]{64,}")


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


def _counts(text: str) -> tuple[float, float, float, float, float, int, int]:
    """(whitespace, digits, quotes, upper, newlines, lead bytes, extra bytes) of one block.

    Blocks of :data:`SAMPLE_FROM` characters or more are counted on a sample of their UTF-8
    bytes and scaled: every :data:`STRIDE`-th byte of ASCII text, every :data:`WIDE_STRIDE`-th
    byte of other text (a stride coprime with the 2-, 3- and 4-byte sequences, so that it does
    not alias with them).  The lead and extra bytes of non-ASCII text are counted exactly.  Deletions are chained, so each pass runs over
    what the previous one left.
    """
    n = len(text)
    if text.isascii():
        b = text.encode("ascii")
        lead = extra = 0
        if n >= SAMPLE_FROM:
            b = b[::STRIDE]
        scale = n / len(b)
    else:
        b = text.encode("utf-8", "surrogatepass")
        extra = len(b) - n
        lead = len(b) - len(b.translate(None, _LEAD))
        if n >= SAMPLE_FROM:
            b = b[::WIDE_STRIDE]
        scale = (n + extra) / len(b)
    b1 = b.translate(None, _WS)
    b2 = b1.translate(None, _DIGITS)
    b3 = b2.translate(None, _UPPER)
    return (
        (len(b) - len(b1)) * scale,
        (len(b1) - len(b2)) * scale,
        b2.count(b'"') * scale,
        (len(b2) - len(b3)) * scale,
        b.count(b"\n") * scale,
        lead,
        extra,
    )


def features(text: str, ramp_lo: float = RAMP_LO, ramp_hi: float = RAMP_HI) -> dict[str, float]:
    """The counts behind :func:`fast_text_tokens`, summed over its blocks (calibration, tests).

    ``fast_text_tokens(text) == max(1, round(sum(COEFFICIENTS[WEIGHTS[k]] * v for k, v in
    features(text).items())))`` for a non-empty text without data-URL images.
    """
    out = dict.fromkeys(WEIGHTS, 0.0)
    for i in range(0, max(1, len(text)), BLOCK):
        part = text[i : i + BLOCK]
        ws, digits, quotes, upper, newlines, lead, extra = _counts(part)
        nonspace = len(part) - lead - ws
        ramp = min(1.0, max(0.0, (nonspace / (ws + 1) - ramp_lo) / (ramp_hi - ramp_lo)))
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


def _block_tokens(
    text: str,
    _ws: bytes = _WS,
    _digits: bytes = _DIGITS,
    _upper: bytes = _UPPER,
    _lead: bytes = _LEAD,
    _sample_from: int = SAMPLE_FROM,
    _stride: int = STRIDE,
    _wide_stride: int = WIDE_STRIDE,
    _rest: float = C_REST,
    _c_upper: float = C_UPPER,
    _c_digit: float = C_DIGIT,
    _c_space: float = C_SPACE,
    _c_quote: float = C_QUOTE,
    _c_newline: float = C_NEWLINE,
    _ramp_lo: float = RAMP_LO,
    _ramp_span: float = RAMP_HI - RAMP_LO,
) -> float:
    """The estimate of one block: :func:`_counts` and the weights, inlined (this runs once per
    message, and its interpreter overhead costs as much as its passes over the bytes)."""
    n = len(text)
    if text.isascii():
        b = text.encode("ascii")
        if n >= _sample_from:
            b = b[::_stride]
        nb = len(b)
        scale = n / nb
        lead = 0
    else:
        b = text.encode("utf-8", "surrogatepass")
        extra = len(b) - n
        lead = len(b) - len(b.translate(None, _lead))
        if n >= _sample_from:
            b = b[::_wide_stride]
        nb = len(b)
        scale = (n + extra) / nb
    b1 = b.translate(None, _ws)
    nb1 = len(b1)
    b2 = b1.translate(None, _digits)
    nb2 = len(b2)
    upper = (nb2 - len(b2.translate(None, _upper))) * scale
    ws = (nb - nb1) * scale
    digits = (nb1 - nb2) * scale
    nonspace = n - lead - ws
    est = (
        _rest * (nonspace - upper - digits)
        + _c_upper * upper
        + _c_digit * digits
        + _c_space * ws
        + (_c_quote * b2.count(b'"') + _c_newline * b.count(b"\n")) * scale
    )
    if lead:
        est += C_N2 * max(0, 2 * lead - extra) + C_N3 * max(0, extra - lead)
    dense = nonspace / (ws + 1)
    if dense > _ramp_lo:
        ramp = (dense - _ramp_lo) / _ramp_span
        est += (ramp if ramp < 1.0 else 1.0) * (C_DENSE * nonspace + C_DENSE_UPPER * upper)
    return est


def fast_text_tokens(text: str) -> int:
    """Estimated ``cl100k_base`` tokens of ``text`` (at least 1 for a non-empty text)."""
    if not text:
        return 0
    n = len(text)
    if n <= BLOCK and "data:image/" not in text:
        est = _block_tokens(text)
        return round(est) if est >= 1.0 else 1
    images = 0
    if "data:image/" in text:
        for m in _DATA_URL.finditer(text):
            images += estimate_image_tokens(m.group(0))
        text = _DATA_URL.sub(" ", text)
        n = len(text)
    est = 0.0
    for i in range(0, n, BLOCK):
        est += _block_tokens(text[i : i + BLOCK])
    return max(1, round(est)) + images


class FastEstimator:
    """Estimator plugin (both estimation hooks, not ``trylast``) using :func:`fast_text_tokens`,
    framed like the built-in estimator: per-message overhead, tool calls as name + JSON
    arguments, the name of a ToolMessage, images by size."""

    name = "fast-estimator"

    def text_tokens(self, text: str) -> int:
        return fast_text_tokens(text)

    def _block_tokens(self, block: Any) -> int:
        if isinstance(block, str):
            return fast_text_tokens(block)
        if not isinstance(block, dict):
            return fast_text_tokens(str(block))
        kind = block.get("type")
        if kind == "text":
            return fast_text_tokens(str(block.get("text") or ""))
        if kind in ("reasoning", "thinking"):
            return fast_text_tokens(str(block.get(kind) or block.get("text") or ""))
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
        return fast_text_tokens(json.dumps(block, ensure_ascii=False, default=str))

    def content_tokens(self, content: Any) -> int:
        if isinstance(content, str):
            return fast_text_tokens(content)
        if isinstance(content, list):
            return sum(self._block_tokens(b) for b in content)
        return fast_text_tokens(str(content)) if content else 0

    def message_tokens(self, message: BaseMessage) -> int:
        n = MESSAGE_OVERHEAD + self.content_tokens(message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            for tc in message.tool_calls:
                n += 3 + fast_text_tokens(tc.get("name") or "")
                n += fast_text_tokens(json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str))
        elif isinstance(message, ToolMessage) and message.name:
            n += 1
        return n

    def tools_tokens(self, tools: Sequence[Any]) -> int:
        total = 0
        for tool in tools:
            if isinstance(tool, dict):
                schema: Any = tool
            else:
                try:
                    from langchain_core.utils.function_calling import convert_to_openai_tool

                    schema = convert_to_openai_tool(tool)
                except Exception:
                    schema = {
                        "name": getattr(tool, "name", ""),
                        "description": getattr(tool, "description", ""),
                    }
            total += fast_text_tokens(json.dumps(schema, ensure_ascii=False, default=str))
        return total

    @hookimpl
    def ctxlab_estimate_message(self, message: BaseMessage) -> int:
        return self.message_tokens(message)

    @hookimpl
    def ctxlab_estimate_tools(self, tools: Sequence[Any]) -> int:
        return self.tools_tokens(tools)


class _EntryPoint:
    """What the ``ctxlab`` entry point registers: the strategy only, never the estimator."""

    name = "ctxlab-fast-estimator"

    @hookimpl
    def ctxlab_register_strategies(self, register: Any) -> None:
        register(
            "ars-fast",
            lambda settings: [FastEstimator()],
            "ARS with the fast character-class estimator calibrated on cl100k_base",
        )


entry_point = _EntryPoint()
