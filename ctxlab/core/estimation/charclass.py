"""The character-class text estimate: an approximation of ``cl100k_base`` tokens (spec R16).

Estimates are local approximations used only to trigger and trim; provider-reported usage is the
billing truth (R16).  All values are tokens; the calibrated weights below are tokens per counted
unit (a character, a byte, a run).  Nothing here raises on odd content.

A text is weighed in one of two tiers, each a weighted sum of counts taken with C-speed passes
over its UTF-8 bytes (``bytes.translate``, ``bytes.count``, ``bytes.replace``):

* **short** — texts of at most :data:`SHORT_BYTES` UTF-8 bytes: one weight per byte class
  (:data:`SHORT_WEIGHTS`, in 1/:data:`SHORT_UNIT` tokens, so that a table maps every byte to its
  weight); the sum is taken by ``zlib.adler32`` over the translated bytes, whose low half is
  ``1 + Σ bytes mod 65521`` and never wraps here (at most 255 × 256 < 65521).  Two C calls: a
  short text's estimate costs little more than the Python call itself, about 20× less than
  tiktoken on 100-character texts (``ctxlab bench``).
* **long** — longer texts, block by block (:data:`BLOCK` characters, so that a base64 blob inside
  a long tool result is weighed as such), with :data:`LONG_WEIGHTS` on the features of
  :func:`features`.  Besides the byte classes they count what cl100k's pre-tokenizer splits on:
  letter runs and punctuation runs, digit runs as groups of at most three digits
  (``Σ ceil(len/3)``, exact for cl100k), a digit run after whitespace or punctuation (that
  character is then a token of its own), runs of non-ASCII characters, and a ramp for unbroken
  text (base64, hashes: with ``d`` the mean length of whitespace-separated runs, ``r = clip((d -
  RAMP_LO) / (RAMP_HI - RAMP_LO), 0, 1)`` adds ``r × (dense·letters + dense_upper·upper)``).

Non-ASCII characters are weighed by the script their UTF-8 lead byte names (:data:`GROUPS`): one
weight for Cyrillic, one for Hebrew/Arabic, one for the Indic scripts and Thai, one each for CJK
punctuation and kana, Han, Hangul, full-width forms, 4-byte characters (emoji) — where one
constant for all 2-byte scripts once put Russian at +44 % and Arabic at −12 %.

The weights were fitted against tiktoken ``cl100k_base`` by
``plugins/ctxlab-fast-estimator/calibrate.py`` on the shared public transcripts (six classes:
prose, code, JSON, logs, CJK, base64; :func:`ctxlab.cli.bench.collect_samples`) plus the
*calibration* split of the committed text sets (:func:`ctxlab.cli.bench.textset`: six scripts,
emoji chat, URLs, minified JavaScript, CSV, hex, diffs, stack traces, digit-heavy logs, English
docs, Python source, other scripts), every class weighted equally.  The *held-out* split, from
disjoint sources, is never fitted on: ``ctxlab bench`` reports it and
``tests/test_estimation_heldout.py`` checks every class within ±10 %.  ``features`` and the
weights are public: ``char_class_tokens(text) == max(1, round(Σ COEFFICIENTS[WEIGHTS[k]] × v))``
over ``features(text).items()`` (texts without data-URL images).  Data-URL images inside a long
text count as images (:mod:`ctxlab.core.estimation.images`); a short text is never split for them.
"""

from __future__ import annotations

from zlib import adler32

from ctxlab.core.estimation.images import split_data_url_images

__all__ = [
    "BLOCK",
    "COEFFICIENTS",
    "GROUPS",
    "LONG_WEIGHTS",
    "RAMP_HI",
    "RAMP_LO",
    "SHORT_BYTES",
    "SHORT_UNIT",
    "SHORT_WEIGHTS",
    "WEIGHTS",
    "char_class_tokens",
    "estimate_text_tokens",
    "features",
    "long_features",
    "short_features",
]

#: non-ASCII characters by the UTF-8 lead byte range ``(first, last)`` of their script group
GROUPS: dict[str, tuple[int, int]] = {
    "latin2": (0xC2, 0xCB),  # U+0080-02FF: Latin-1 supplement, Latin extended, IPA
    "greek": (0xCC, 0xCF),  # U+0300-03FF: combining diacritics, Greek
    "cyrillic": (0xD0, 0xD3),  # U+0400-04FF
    "arabic": (0xD8, 0xDB),  # U+0600-06FF
    "other2": (0xD4, 0xD7),  # U+0500-05FF: Cyrillic supplement, Armenian, Hebrew
    "indic": (0xE0, 0xE0),  # U+0800-0FFF: Devanagari ... Malayalam, Sinhala, Thai, Lao, Tibetan
    "misc": (0xE1, 0xE1),  # U+1000-1FFF: Myanmar, Georgian, Ethiopic, Khmer, Latin/Greek extended
    "symbol": (0xE2, 0xE2),  # U+2000-2FFF: punctuation, arrows, math, box drawing, dingbats
    "kana": (0xE3, 0xE3),  # U+3000-3FFF: CJK punctuation, hiragana, katakana
    "han": (0xE4, 0xE9),  # U+4000-9FFF: CJK unified ideographs
    "hangul": (0xEA, 0xED),  # U+A000-DFFF: Hangul syllables, Yi
    "compat": (0xEE, 0xEF),  # U+E000-FFFF: private use, CJK compatibility, full-width forms, FE0F
    "astral": (0xF0, 0xF4),  # 4-byte characters: emoji, CJK extensions, math alphanumerics
    "other2b": (0xDC, 0xDF),  # U+0700-07FF: Syriac, Arabic supplement, Thaana, N'Ko
}
#: the groups whose runs count as CJK runs (``long.cjk_run``) rather than ``long.nonascii_run``
CJK_GROUPS = ("kana", "han", "hangul", "compat")

# --- calibrated constants (plugins/ctxlab-fast-estimator/calibrate.py) -----------------------------
#: long tier: tokens per unit of each feature of :func:`features`
LONG_WEIGHTS: dict[str, float] = {
    "lower": 0.03995,
    "upper": 0.04836,
    "space": 0.02621,
    "newline": 0.488,
    "quote": 0.2656,
    "punct": 0.09243,
    "digit_token": 1,
    "space_digit": 0.7761,
    "punct_digit": 0,
    "letter_run": 0.8405,
    "punct_letter": 0.08149,
    "punct_run": 1.077,
    "letter_punct": 1.162,
    "dense": 0.07731,
    "dense_upper": 0.8309,
    "nonascii_run": 0.2366,
    "cjk_run": 1.591,
    "latin2": 3.125,
    "greek": 1.083,
    "cyrillic": 0.5138,
    "arabic": 0.7927,
    "other2": 1.447,
    "indic": 1.162,
    "misc": 2.228,
    "symbol": 0.2964,
    "kana": 1.023,
    "han": 1.04,
    "hangul": 0.7533,
    "compat": 1,
    "astral": 3.146,
    "other2b": 0,
}
RAMP_LO = 15.0  # mean run length where unbroken text starts to cost more
RAMP_HI = 75.0  # mean run length where it costs the most
#: short tier: 1/SHORT_UNIT tokens per byte of each class (``cont``: a UTF-8 continuation byte)
SHORT_WEIGHTS: dict[str, int] = {
    "lower": 17,
    "upper": 39,
    "digit": 54,
    "space": 7,
    "newline": 0,
    "quote": 43,
    "punct": 16,
    "cont": 0,
    "latin2": 198,
    "greek": 77,
    "cyrillic": 37,
    "arabic": 56,
    "other2": 101,
    "indic": 80,
    "misc": 153,
    "symbol": 66,
    "kana": 73,
    "han": 84,
    "hangul": 87,
    "compat": 0,
    "astral": 246,
    "other2b": 0,
}
#: texts of at most this many UTF-8 bytes are weighed by the short tier
SHORT_BYTES = 256
SHORT_UNIT = 64

#: every calibrated constant by name: ``long.<feature>`` (tokens) and ``short.<class>`` (tokens)
COEFFICIENTS: dict[str, float] = {
    **{f"long.{k}": v for k, v in LONG_WEIGHTS.items()},
    **{f"short.{k}": v / SHORT_UNIT for k, v in SHORT_WEIGHTS.items()},
}
#: the coefficient name of each feature key of :func:`features` (the same names)
WEIGHTS: dict[str, str] = {k: k for k in COEFFICIENTS}

#: texts are estimated in blocks of this many characters (mixed content gets per-block ramps)
BLOCK = 8192

_LOWER = bytes(range(0x61, 0x7B))
_UPPER = bytes(range(0x41, 0x5B))
_DIGITS = b"0123456789"
_WS = b" \n\t\r"
_HIGH = bytes(range(0x80, 0x100))
_CONT = bytes(range(0x80, 0xC0))


def _table(default: int, **classes: tuple[bytes, int]) -> bytes:
    out = bytearray([default]) * 256
    for chars, value in classes.values():
        for c in chars:
            out[c] = value
    return bytes(out)


#: ASCII byte -> class letter: a letters, 0 digits, space whitespace, . the rest
_CLASS_MAP = _table(
    ord("."), letters=(_LOWER + _UPPER, ord("a")), digits=(_DIGITS, ord("0")), ws=(_WS, ord(" "))
)
#: digit -> 0, anything else -> x
_DIGIT_MAP = _table(ord("x"), digits=(_DIGITS, ord("0")))
#: lead byte -> its group letter (ASCII -> a); continuation bytes are deleted with _CONT
_GROUP_LETTERS = {name: chr(ord("A") + i).encode() for i, name in enumerate(GROUPS)}
_GROUP_MAP = _table(
    ord("a"),
    **{name: (bytes(range(lo, hi + 1)), _GROUP_LETTERS[name][0]) for name, (lo, hi) in GROUPS.items()},
)
_CJK_PAIRS = tuple(b"a" + _GROUP_LETTERS[n] for n in CJK_GROUPS)
_CJK_FIRST = tuple(_GROUP_LETTERS[n] for n in CJK_GROUPS)
_NONASCII_MAP = _table(ord("n"), ascii=(bytes(range(0x80)), ord("a")))


def _short_table() -> bytes:
    w = SHORT_WEIGHTS
    classes = {
        "lower": (_LOWER, w["lower"]),
        "upper": (_UPPER, w["upper"]),
        "digit": (_DIGITS, w["digit"]),
        "space": (b" \t\r", w["space"]),
        "newline": (b"\n", w["newline"]),
        "quote": (b'"', w["quote"]),
        "cont": (_CONT, w["cont"]),
    }
    for name, (lo, hi) in GROUPS.items():
        classes[name] = (bytes(range(lo, hi + 1)), w[name])
    table = bytearray(_table(w["punct"], **classes))
    for c in (0xC0, 0xC1, *range(0xF5, 0x100)):  # never in UTF-8 (surrogatepass gives ED lead bytes)
        table[c] = 0
    return bytes(table)


_SHORT_TABLE = _short_table()
assert max(_SHORT_TABLE) * SHORT_BYTES < 65521, "short weights would wrap adler32's sum"


def short_features(text: str) -> dict[str, float]:
    """The byte-class counts of ``text``'s UTF-8 bytes (keys ``short.<class>``): what the short
    tier weighs (the calibration computes them for texts of any length)."""
    u = text.encode("utf-8", "surrogatepass")
    n_ws = sum(u.count(c) for c in (b" ", b"\t", b"\r"))
    out = {
        "short.lower": float(len(u) - len(u.translate(None, _LOWER))),
        "short.upper": float(len(u) - len(u.translate(None, _UPPER))),
        "short.digit": float(len(u) - len(u.translate(None, _DIGITS))),
        "short.space": float(n_ws),
        "short.newline": float(u.count(b"\n")),
        "short.quote": float(u.count(b'"')),
        "short.cont": float(len(u) - len(u.translate(None, _CONT))),
    }
    for name, (lo, hi) in GROUPS.items():
        out[f"short.{name}"] = float(len(u) - len(u.translate(None, bytes(range(lo, hi + 1)))))
    ascii_count = len(u.translate(None, _HIGH))
    out["short.punct"] = float(ascii_count - sum(out[k] for k in ("short.lower", "short.upper", "short.digit"))) - (
        out["short.space"] + out["short.newline"] + out["short.quote"]
    )
    return out


def long_features(
    text: str, ramp_lo: float = RAMP_LO, ramp_hi: float = RAMP_HI, stride: int = 1, sample_from: int = 0
) -> dict[str, float]:
    """The long-tier features of one block of at most :data:`BLOCK` characters (keys
    ``long.<feature>``); the calibration computes them for texts of any length."""
    out = dict.fromkeys((f"long.{k}" for k in LONG_WEIGHTS), 0.0)
    if text.isascii():
        b = text.encode("ascii")
    else:
        u = text.encode("utf-8", "surrogatepass")
        g = u.translate(_GROUP_MAP, _CONT)
        for name, letter in _GROUP_LETTERS.items():
            out[f"long.{name}"] = float(g.count(letter))
        nonascii = u.translate(_NONASCII_MAP, _CONT)
        runs = nonascii.count(b"an") + (nonascii[:1] == b"n")
        cjk = sum(g.count(_CJK_PAIRS[i]) for i in range(len(CJK_GROUPS))) + (g[:1] in _CJK_FIRST)
        out["long.cjk_run"] = float(cjk)
        out["long.nonascii_run"] = float(runs - cjk)
        b = u.translate(None, _HIGH)
    na = len(b)
    scale = 1.0
    if stride > 1 and na >= sample_from:
        # contiguous windows (so that runs stay whole), one in every `stride`
        win = 256
        b = b"".join(b[i : i + win] for i in range(0, na, win * stride))
        scale = na / len(b) if b else 1.0
    m = b.translate(_CLASS_MAP)
    ws = m.count(b" ")
    digits = m.count(b"0")
    letters = m.count(b"a")
    upper = len(b) - len(b.translate(None, _UPPER))
    nonspace = len(b) - ws
    first = m[:1]
    out["long.lower"] = float(letters - upper) * scale
    out["long.upper"] = float(upper) * scale
    out["long.space"] = float(ws) * scale
    out["long.newline"] = float(b.count(b"\n")) * scale
    out["long.quote"] = float(b.count(b'"')) * scale
    out["long.punct"] = float(nonspace - letters - digits) * scale
    # runs by what precedes them (cl100k merges one punctuation mark or space into a word)
    out["long.letter_run"] = float(m.count(b" a") + m.count(b"0a") + (first == b"a")) * scale
    out["long.punct_letter"] = float(m.count(b".a")) * scale
    out["long.punct_run"] = float(m.count(b" .") + m.count(b"0.") + (first == b".")) * scale
    out["long.letter_punct"] = float(m.count(b"a.")) * scale
    if digits:
        d = (b"x" + b.translate(_DIGIT_MAP)).replace(b"x0", b"x000")
        out["long.digit_token"] = float(d.count(b"000")) * scale
        out["long.space_digit"] = float(m.count(b" 0")) * scale
        out["long.punct_digit"] = float(m.count(b".0")) * scale
    dense = nonspace / (ws + 1)
    if dense > ramp_lo:
        ramp = min(1.0, (dense - ramp_lo) / (ramp_hi - ramp_lo))
        out["long.dense"] = ramp * letters * scale
        out["long.dense_upper"] = ramp * upper * scale
    return out


def features(
    text: str,
    ramp_lo: float = RAMP_LO,
    ramp_hi: float = RAMP_HI,
    *,
    stride: int = 1,
    sample_from: int = 0,
) -> dict[str, float]:
    """The features behind the estimate: keys of :data:`WEIGHTS`, values in counted units.

    A text of at most :data:`SHORT_BYTES` UTF-8 bytes gives its ``short.<class>`` byte counts;
    a longer one the ``long.<feature>`` counts summed over its blocks.  ``ramp_lo``/``ramp_hi``
    let the calibration try other ramps; ``stride``/``sample_from`` as for
    :func:`char_class_tokens`.  An empty text gives ``{}``.
    """
    if not text:
        return {}
    if len(text.encode("utf-8", "surrogatepass")) <= SHORT_BYTES:
        return short_features(text)
    out: dict[str, float] = {}
    for i in range(0, len(text), BLOCK):
        for k, v in long_features(text[i : i + BLOCK], ramp_lo, ramp_hi, stride, sample_from).items():
            out[k] = out.get(k, 0.0) + v
    return out


_LONG_ITEMS = tuple((f"long.{k}", v) for k, v in LONG_WEIGHTS.items() if v)


def _long_estimate(text: str, stride: int, sample_from: int) -> float:
    est = 0.0
    for i in range(0, len(text), BLOCK):
        f = long_features(text[i : i + BLOCK], RAMP_LO, RAMP_HI, stride, sample_from)
        for k, w in _LONG_ITEMS:
            est += w * f[k]
    return est


def char_class_tokens(
    text: str,
    stride: int = 1,
    sample_from: int = 0,
    _table: bytes = _SHORT_TABLE,
    _adler32: object = adler32,
) -> int:
    """Estimated ``cl100k_base`` tokens of ``text`` (at least 1 for a non-empty text; 0 for "").

    Exact counts by default (:func:`estimate_text_tokens`); ``stride`` > 1 counts the ASCII part
    of a long block of ``sample_from`` ASCII characters or more on one window in every ``stride``
    (the ``ctxlab-fast-estimator`` plugin).  Data-URL images in a long text count as images
    (:func:`~ctxlab.core.estimation.images.estimate_image_tokens`).
    """
    u = text.encode("utf-8", "surrogatepass")
    if len(u) <= SHORT_BYTES:
        if not u:
            return 0
        s = (_adler32(u.translate(_table)) & 0xFFFF) - 1  # type: ignore[operator]
        return round(s / SHORT_UNIT) if s >= SHORT_UNIT else 1
    if "data:image/" in text:
        text, images = split_data_url_images(text)
        return (max(1, round(_long_estimate(text, stride, sample_from))) if text else 0) + images
    return max(1, round(_long_estimate(text, stride, sample_from)))


def estimate_text_tokens(
    text: str, _table: bytes = _SHORT_TABLE, _adler32: object = adler32, _count: object = char_class_tokens
) -> int:
    """Estimated ``cl100k_base`` tokens of a string: the calibrated classes, short or long tier
    (see the module docstring); at least 1 for a non-empty text, 0 for an empty one.  Equal to
    ``char_class_tokens(text)``; the short tier is inlined (one Python call per short text).

    Data-URL images embedded in a long text are counted as images, not as base64 text.
    """
    u = text.encode("utf-8", "surrogatepass")
    if len(u) > SHORT_BYTES:
        return _count(text)  # type: ignore[operator,no-any-return]
    if not u:
        return 0
    s = (_adler32(u.translate(_table)) & 0xFFFF) - 1  # type: ignore[operator]
    return round(s / SHORT_UNIT) if s >= SHORT_UNIT else 1
