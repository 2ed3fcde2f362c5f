"""The character-class text estimate: an approximation of ``cl100k_base`` tokens (spec R16).

Estimates are local approximations used only to trigger and trim; provider-reported usage is the
billing truth (R16).  All values are tokens; the calibrated weights below are tokens per character
(or per counted unit).  Nothing here raises on odd content.

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

Data-URL images inside a text count as images (:mod:`ctxlab.core.estimation.images`).

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

from collections.abc import Callable

from ctxlab.core.estimation.images import split_data_url_images

__all__ = ["BLOCK", "COEFFICIENTS", "WEIGHTS", "char_class_tokens", "estimate_text_tokens", "features"]

# --- calibrated constants (plugins/ctxlab-fast-estimator/calibrate.py; tokens per unit) ----------
# (public: calibrate.py and the fast estimator read them; COEFFICIENTS holds them by name)
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
    (:func:`~ctxlab.core.estimation.images.estimate_image_tokens`).
    """
    if len(text) <= BLOCK and "data:image/" not in text:
        if not text:
            return 0
        est = _block_estimate(text, stride, sample_from)
        return round(est) if est >= 1.0 else 1
    text, images = split_data_url_images(text)
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
