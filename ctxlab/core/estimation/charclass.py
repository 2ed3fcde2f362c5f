"""The character-class text estimate: an approximation of ``cl100k_base`` tokens (spec R16).

Estimates are local approximations used only to trigger and trim; provider-reported usage is the
billing truth (R16).  All values are tokens; the calibrated weights below are in
1/:data:`UNIT` tokens per counted byte or pair.  Nothing here raises on odd content.

Each UTF-8 byte has a class (:data:`BYTE_CLASSES`: ASCII lower case, upper case, digit,
whitespace, newline, double quote, other punctuation; a continuation byte; the lead byte of a
non-ASCII character by the script its range names, :data:`GROUPS` — Cyrillic, Arabic, the Indic
scripts, kana, Han, Hangul, 4-byte characters such as emoji, ...).  A text is weighed in one of
two tiers:

* **short** — at most :data:`SHORT_BYTES` UTF-8 bytes: one weight per byte class
  (:data:`SHORT_WEIGHTS`).
* **long** — longer texts, block by block (:data:`BLOCK` characters): one weight per byte class
  (:data:`LONG_WEIGHTS`, ``u.<class>``), plus one weight per *pair* of neighbouring character
  classes (``p.<previous>_<this>``: what cl100k's pre-tokenizer splits on — a word after
  whitespace or a digit, a punctuation mark after a word, a digit after whitespace, a lower- to
  upper-case change as in base64, a non-ASCII run after ASCII text), plus ``digit_token``: digit
  runs counted as groups of at most three digits (``Σ ceil(len/3)``, exact for cl100k).  Every
  pair and digit group of a block is counted (the ``ctxlab-fast-estimator`` plugin, ``stride`` >
  1, counts them on at most :data:`RUN_SAMPLE` bytes of a block, evenly spaced windows, scaled to
  the block).  A long text is never estimated below the short tier's estimate of its first
  :data:`SHORT_BYTES` bytes.

**Monotone** (issue 20): every weight is non-negative, a block's class codes and pairs do not
change when text is appended, and the short-tier floor keeps the step from the short to the long
tier from going down; so appending text never lowers the estimate (the exact default;
``tests/test_estimation_monotone.py``).  A data URL inside a text is text, as providers tokenize
it (issue 30): only an image *block* counts as an image (:mod:`ctxlab.core.estimation.images`).

The sums are taken in C: a table maps every byte (or pair code) to its weight
(``bytes.translate``) and ``zlib.adler32`` adds them up — its low half is ``1 + Σ bytes mod
65521``, and chunks are kept short enough that it never wraps.  Pairs become single bytes through
one big integer: with each character's class code ``k`` as one byte of ``X``, the bytes of ``(X
>> 8) * 8 + X`` are ``8 k(previous) + k(this)``.  A short text costs two C calls (about 20× less
than tiktoken on 100-character texts), a long block about ten (``ctxlab bench``).

The weights were fitted against tiktoken ``cl100k_base`` by
``tools/calibrate.py`` on the shared public transcripts (prose, code,
JSON, logs, CJK, base64; :func:`ctxlab.cli.bench.collect_samples`) plus the *calibration* split of
the committed text sets (:func:`ctxlab.cli.bench.textset`: six scripts, emoji chat, URLs, minified
JavaScript, CSV, hex, diffs, stack traces, digit-heavy logs, English docs, Python source, other
scripts, Chinese documentation mixed with English), every class weighted equally; re-fitted for
issue 20, when every pair of a block came to be counted.  The *held-out* split, from disjoint sources, is never
fitted on: ``ctxlab bench`` reports it, ``tests/test_estimation_heldout.py`` checks every class
within ±10 %.  ``char_class_tokens(text) == max(1, round(Σ COEFFICIENTS[WEIGHTS[k]] × v))`` over
``features(text).items()`` for a non-empty text, or the short-tier floor above when that is
larger.

The public names (those without a leading underscore, :data:`CJK_GROUPS` aside) are listed once, in
the ``__all__`` of :mod:`ctxlab.core.estimation`, which re-exports them.
"""

from __future__ import annotations

from zlib import adler32

from ctxlab.core.estimation.patterns import PERIOD_WEIGHT, RUN_WEIGHTS, cjk_tokens, runs

#: non-ASCII characters by the UTF-8 lead byte range ``(first, last)`` of their script group
GROUPS: dict[str, tuple[int, int]] = {
    "latin2": (0xC2, 0xCB),  # U+0080-02FF: Latin-1 supplement, Latin extended, IPA
    "greek": (0xCC, 0xCF),  # U+0300-03FF: combining diacritics, Greek
    "cyrillic": (0xD0, 0xD3),  # U+0400-04FF
    "other2": (0xD4, 0xD7),  # U+0500-05FF: Cyrillic supplement, Armenian, Hebrew
    "arabic": (0xD8, 0xDB),  # U+0600-06FF
    "other2b": (0xDC, 0xDF),  # U+0700-07FF: Syriac, Arabic supplement, Thaana, N'Ko
    "indic": (0xE0, 0xE0),  # U+0800-0FFF: Devanagari ... Malayalam, Sinhala, Thai, Lao, Tibetan
    "misc": (0xE1, 0xE1),  # U+1000-1FFF: Myanmar, Georgian, Ethiopic, Khmer, Latin/Greek extended
    "symbol": (0xE2, 0xE2),  # U+2000-2FFF: punctuation, arrows, math, box drawing, dingbats
    "kana": (0xE3, 0xE3),  # U+3000-3FFF: CJK punctuation, hiragana, katakana
    "han": (0xE4, 0xE9),  # U+4000-9FFF: CJK unified ideographs
    "hangul": (0xEA, 0xED),  # U+A000-DFFF: Hangul syllables, Yi
    "compat": (0xEE, 0xEF),  # U+E000-FFFF: private use, CJK compatibility, full-width forms, FE0F
    "astral": (0xF0, 0xF4),  # 4-byte characters: emoji, CJK extensions, math alphanumerics
}
#: the scripts whose runs count as CJK runs in the pair classes
CJK_GROUPS = ("kana", "han", "hangul", "compat")

_LOWER = bytes(range(0x61, 0x7B))
_UPPER = bytes(range(0x41, 0x5B))
_DIGITS = b"0123456789"
_CONT = bytes(range(0x80, 0xC0))
_ASCII = bytes(range(0x80))

#: byte class -> the bytes in it (ASCII punctuation: every ASCII byte not named here)
BYTE_CLASSES: dict[str, bytes] = {
    "lower": _LOWER,
    "upper": _UPPER,
    "digit": _DIGITS,
    "space": b" \t\r",
    "newline": b"\n",
    "quote": b'"',
    "punct": bytes(c for c in _ASCII if c not in _LOWER + _UPPER + _DIGITS + b' \t\r\n"'),
    "cont": _CONT,
    **{name: bytes(range(lo, hi + 1)) for name, (lo, hi) in GROUPS.items()},
}
#: character classes of the pairs: code -> name (continuation bytes are left out)
PAIR_CLASSES = ("lo", "up", "sp", "pu", "di", "cjk", "nona", "pp")

# --- calibrated constants (tools/calibrate.py), in 1/UNIT tokens --------
UNIT = 64
#: short tier: per byte of each class
SHORT_WEIGHTS: dict[str, int] = {
    "lower": 16,
    "upper": 36,
    "digit": 54,
    "space": 6,
    "newline": 0,
    "quote": 42,
    "punct": 17,
    "cont": 0,
    "latin2": 202,
    "greek": 77,
    "cyrillic": 38,
    "other2": 102,
    "arabic": 56,
    "other2b": 0,
    "indic": 80,
    "misc": 153,
    "symbol": 50,
    "kana": 68,
    "han": 80,
    "hangul": 86,
    "compat": 0,
    "astral": 248,
}
#: long tier: ``u.<byte class>`` per byte, ``p.<previous>_<this>`` per pair, ``digit_token`` per group
LONG_WEIGHTS: dict[str, int] = {
    "u.lower": 5,
    "u.upper": 3,
    "u.digit": 0,
    "u.space": 7,
    "u.newline": 32,
    "u.quote": 23,
    "u.punct": 24,
    "u.cont": 0,
    "u.latin2": 220,
    "u.greek": 49,
    "u.cyrillic": 15,
    "u.other2": 73,
    "u.arabic": 31,
    "u.other2b": 0,
    "u.indic": 54,
    "u.misc": 124,
    "u.symbol": 28,
    "u.kana": 0,
    "u.han": 0,
    "u.hangul": 0,
    "u.compat": 64,
    "u.astral": 193,
    "p.sp_lo": 38,
    "p.sp_up": 75,
    "p.di_lo": 74,
    "p.di_up": 128,
    "p.pu_lo": 38,
    "p.pu_up": 0,
    "p.sp_pu": 6,
    "p.di_pu": 8,
    "p.lo_pu": 32,
    "p.up_pu": 42,
    "p.pu_pu": 0,
    "p.sp_di": 69,
    "p.pu_di": 57,
    "p.lo_di": 0,
    "p.up_di": 128,
    "p.lo_up": 62,
    "p.up_lo": 0,
    "p.up_up": 2,
    "p.sp_cjk": 59,
    "p.lo_cjk": 0,
    "p.pu_cjk": 111,
    "p.sp_nona": 109,
    "p.lo_nona": 0,
    "p.pu_nona": 31,
    "p.pp_lo": 0,
    "p.pp_up": 0,
    "p.pu_pp": 0,
    "p.pp_sp": 20,
    "p.pp_di": 18,
    "p.nona_pu": 128,
    "digit_token": 64,
    "cjk": 62,
    "hangul": 50,
}
#: texts of at most this many UTF-8 bytes are weighed by the short tier
SHORT_BYTES = 256
#: pairs and digit groups are counted on at most this many bytes of a block
RUN_SAMPLE = 1024
_WINDOWS = 16
_WINDOW = RUN_SAMPLE // _WINDOWS

#: every calibrated constant by name, in tokens: ``short.<class>`` and ``long.<feature>``, and
#: ``long.run``, whose feature is already in 1/UNIT tokens (:data:`RUN_WEIGHTS` of the run bytes)
COEFFICIENTS: dict[str, float] = {
    **{f"short.{k}": v / UNIT for k, v in SHORT_WEIGHTS.items()},
    **{f"long.{k}": v / UNIT for k, v in LONG_WEIGHTS.items()},
    "long.run": 1 / UNIT,
    "long.period": PERIOD_WEIGHT / UNIT,
}
#: the coefficient name of each feature key of :func:`features` (the same names)
WEIGHTS: dict[str, str] = {k: k for k in COEFFICIENTS}

#: texts are estimated in blocks of this many characters (mixed content gets its own pairs per block)
BLOCK = 8192


def _byte_table(weights: dict[str, int]) -> bytes:
    table = bytearray(256)  # bytes of no class (C0, C1, F5-FF: never in UTF-8) weigh 0
    for name, chars in BYTE_CLASSES.items():
        for c in chars:
            table[c] = weights[name]
    return bytes(table)


_CODE = {name: i for i, name in enumerate(PAIR_CLASSES)}
#: byte -> pair class code (continuation bytes are deleted before)
_CODE_MAP = bytes(
    _CODE["lo"]
    if c in _LOWER
    else _CODE["up"]
    if c in _UPPER
    else _CODE["di"]
    if c in _DIGITS
    else _CODE["sp"]
    if c in b" \t\r\n"
    else _CODE["pu"]
    if c < 0x80
    else _CODE["cjk"]
    if any(GROUPS[g][0] <= c <= GROUPS[g][1] for g in CJK_GROUPS)
    else _CODE["nona"]
    for c in range(256)
)
_DI = _CODE["di"]
#: a punctuation mark right after another becomes class pp: cl100k merges a lone mark into the
#: word after it, but not the last mark of a longer run (``.attr`` is one token, ``","x`` two)
_PU_PU = bytes([_CODE["pu"], _CODE["pu"]])
_PU_PP = bytes([_CODE["pu"], _CODE["pp"]])
_IS_DIGIT_CODE = bytes(1 if c == _CODE["di"] else 0 for c in range(256))
_PAIR_KEYS = [k for k in LONG_WEIGHTS if k.startswith("p.")]
#: feature key -> its pair code (8 × previous + this)
_PAIR_CODES = {k: 8 * _CODE[k[2:].split("_")[0]] + _CODE[k[2:].split("_")[1]] for k in _PAIR_KEYS}


def _pair_table(weights: dict[str, int]) -> bytes:
    table = bytearray(256)
    for k, code in _PAIR_CODES.items():
        table[code] = weights[k]
    return bytes(table)


_SHORT_TABLE = _byte_table(SHORT_WEIGHTS)
_LONG_TABLE = _byte_table({k[2:]: v for k, v in LONG_WEIGHTS.items() if k.startswith("u.")})


def _run_table() -> bytes:
    """byte -> its run weight (:data:`RUN_WEIGHTS`); a byte that is no ASCII character in the
    table keeps its long-tier weight (a run of it changes nothing); 0xFF (never in UTF-8,
    the filler of :func:`_run_bytes`) weighs 0."""
    table = bytearray(_LONG_TABLE)
    for ch, w in RUN_WEIGHTS.items():
        table[ord(ch)] = w
    table[0xFF] = 0
    return bytes(table)


_RUN_TABLE = _run_table()
_CJK = LONG_WEIGHTS["cjk"]
_HANGUL = LONG_WEIGHTS["hangul"]

_LONG_PAIRS = _pair_table(LONG_WEIGHTS)
_DIGIT_TOKEN = LONG_WEIGHTS["digit_token"]
#: bytes per adler32 call so that its sum never wraps (at most 255 per byte; less for ASCII text)
_CHUNK = 65520 // 255
_CHUNK_ALL = 65520 // max(1, max(_LONG_TABLE))
_CHUNK_ASCII = 65520 // max(1, max(_LONG_TABLE[:128]))
_CHUNK_PAIRS = 65520 // max(1, max(_LONG_PAIRS))
_CHUNK_RUN = 65520 // max(1, max(_RUN_TABLE))
assert SHORT_BYTES <= _CHUNK


def _class_counts(u: bytes, prefix: str) -> dict[str, float]:
    return {
        f"{prefix}{name}": float(len(u) - len(u.translate(None, chars)))
        for name, chars in BYTE_CLASSES.items()
    }


def short_features(text: str) -> dict[str, float]:
    """The byte-class counts of ``text``'s UTF-8 bytes (keys ``short.<class>``), what the short
    tier weighs; the calibration computes them for texts of any length."""
    return _class_counts(text.encode("utf-8", "surrogatepass"), "short.")


def _sample(u: bytes, stride: int, sample_from: int) -> tuple[bytes, float, bytes, float]:
    """``(bytes for the byte classes, their scale, pair codes with a leading space, their scale)``."""
    n = len(u)
    scale = 1.0
    if stride > 1 and n >= sample_from:  # the fast estimator: one window in every `stride`
        u = b"".join([u[i : i + 256] for i in range(0, n, 256 * stride)])
        scale = n / len(u)
    nu = len(u)
    if nu <= RUN_SAMPLE or stride <= 1:  # exact: every pair (monotone, issue 20)
        return u, scale, (b" " + u).translate(_CODE_MAP, _CONT).replace(_PU_PU, _PU_PP), scale
    step = nu // _WINDOWS
    s = b"".join([u[i : i + _WINDOW] for i in range(0, step * _WINDOWS, step)])
    return u, scale, (b" " + s).translate(_CODE_MAP, _CONT).replace(_PU_PU, _PU_PP), scale * nu / len(s)


def _pairs(codes: bytes) -> bytes:
    x = int.from_bytes(codes, "big")
    return (((x >> 8) << 3) + x).to_bytes(len(codes), "big")


def _digit_tokens(codes: bytes) -> int:
    """Σ ceil(len/3) over the digit runs: a run's first digit, then every third one after it."""
    dg = int.from_bytes(codes.translate(_IS_DIGIT_CODE), "big")
    p_dg = dg >> 8
    group = dg & ~p_dg
    three = dg & p_dg & (p_dg >> 8)
    tokens = 0
    while group:
        tokens += group.bit_count()
        group = (group >> 24) & three
    return tokens


def long_features(text: str, stride: int = 1, sample_from: int = 0) -> dict[str, float]:
    """The long-tier features of one block of at most :data:`BLOCK` characters (keys
    ``long.<feature>``: byte-class counts, pair counts and digit groups; with ``stride`` > 1 the
    last two on at most :data:`RUN_SAMPLE` bytes, scaled); the calibration computes them for any
    text."""
    whole = text.encode("utf-8", "surrogatepass")
    u, scale, codes, rs = _sample(whole, stride, sample_from)
    out = {k: v * scale for k, v in _class_counts(u, "long.u.").items()}
    run_bytes, pattern = runs(u)
    if run_bytes:  # run bytes weigh their run weight instead of their class weight
        for k, v in _class_counts(run_bytes, "long.u.").items():
            out[k] -= v * scale
        out["long.run"] = _sum(run_bytes.translate(_RUN_TABLE), _CHUNK_RUN) * scale
    else:
        out["long.run"] = 0.0
    out["long.period"] = 0.0
    if pattern:  # so do pattern letters (their count weighs PERIOD_WEIGHT)
        for k, v in _class_counts(pattern, "long.u.").items():
            out[k] -= v * scale
        out["long.period"] = (len(pattern) - pattern.count(0xFF)) * scale
    han, hangul = (0.0, 0.0) if whole.isascii() else cjk_tokens(text)
    out["long.cjk"], out["long.hangul"] = han, hangul
    pairs = _pairs(codes)
    for k, code in _PAIR_CODES.items():
        out[f"long.{k}"] = pairs.count(code) * rs
    out["long.digit_token"] = (_digit_tokens(codes) if _DI in codes else 0) * rs
    return out


def features(text: str, *, stride: int = 1, sample_from: int = 0) -> dict[str, float]:
    """The features behind the estimate: keys of :data:`WEIGHTS`, values in counted units.

    A text of at most :data:`SHORT_BYTES` UTF-8 bytes gives its ``short.<class>`` byte counts; a
    longer one the ``long.<feature>`` counts summed over its blocks (:func:`long_features`).
    ``stride``/``sample_from`` as for :func:`char_class_tokens`.  An empty text gives ``{}``.
    """
    if not text:
        return {}
    if len(text.encode("utf-8", "surrogatepass")) <= SHORT_BYTES:
        return short_features(text)
    out: dict[str, float] = {}
    for i in range(0, len(text), BLOCK):
        for k, v in long_features(text[i : i + BLOCK], stride, sample_from).items():
            out[k] = out.get(k, 0.0) + v
    return out


def _sum(w: bytes, chunk: int, _adler32: object = adler32) -> int:
    """Σ w over the bytes of ``w`` with adler32, ``chunk`` bytes a call (so that it never wraps)."""
    if len(w) <= chunk:
        return (_adler32(w) & 0xFFFF) - 1  # type: ignore[operator,no-any-return]
    return sum([(_adler32(w[i : i + chunk]) & 0xFFFF) - 1 for i in range(0, len(w), chunk)])  # type: ignore[operator]


def _run_units(u: bytes) -> int:
    """What runs and letter patterns change in the long-tier sum of ``u`` (1/UNIT tokens: their
    run or pattern weight less their class weight): :func:`~ctxlab.core.estimation.patterns.runs`."""
    run_bytes, pattern = runs(u)
    delta = 0
    if run_bytes:
        delta += _sum(run_bytes.translate(_RUN_TABLE), _CHUNK_RUN) - _sum(
            run_bytes.translate(_LONG_TABLE), _CHUNK_ALL
        )
    if pattern:
        delta += PERIOD_WEIGHT * (len(pattern) - pattern.count(0xFF)) - _sum(
            pattern.translate(_LONG_TABLE), _CHUNK_ALL
        )
    return delta


def _cjk_units(text: str, u: bytes) -> float:
    """The CJK characters of ``text`` (``u``: its UTF-8 bytes) by :func:`cjk_tokens`, in 1/UNIT
    tokens; 0 without a CJK lead byte."""
    if u.isascii():
        return 0
    han, hangul = cjk_tokens(text)
    return _CJK * han + _HANGUL * hangul


def _long_units(text: str, u: bytes, stride: int, sample_from: int) -> float:
    """The long-tier estimate of ``text`` (``u``: its UTF-8 bytes, read only when the text is one
    block), in 1/UNIT tokens."""
    total = 0.0
    for i in range(0, len(text), BLOCK):
        if len(text) > BLOCK:
            u = text[i : i + BLOCK].encode("utf-8", "surrogatepass")
        block = text[i : i + BLOCK] if len(text) > BLOCK else text
        cjk = _cjk_units(block, u)
        u, scale, codes, rs = _sample(u, stride, sample_from)
        units = (
            _sum(u.translate(_LONG_TABLE), _CHUNK_ASCII if u.isascii() else _CHUNK_ALL) + _run_units(u)
        ) * scale
        units += cjk
        x = int.from_bytes(codes, "big")
        units += (
            _sum((((x >> 8) << 3) + x).to_bytes(len(codes), "big").translate(_LONG_PAIRS), _CHUNK_PAIRS) * rs
        )
        if _DI in codes:
            units += _DIGIT_TOKEN * _digit_tokens(codes) * rs
        total += units
    return total


def char_class_tokens(text: str, stride: int = 1, sample_from: int = 0) -> int:
    """Estimated ``cl100k_base`` tokens of ``text`` (at least 1 for a non-empty text; 0 for "").

    Exact counts by default (:func:`estimate_text_tokens`); ``stride`` > 1 counts the bytes of a
    long block of ``sample_from`` bytes or more on one 256-byte window in every ``stride`` (the
    ``ctxlab-fast-estimator`` plugin).  A data URL in the text is text, as providers count it
    (issue 30).
    """
    u = text.encode("utf-8", "surrogatepass")
    if len(u) <= SHORT_BYTES:
        if not u:
            return 0
        s = (adler32(u.translate(_SHORT_TABLE)) & 0xFFFF) - 1
        return round(s / UNIT) if s >= UNIT else 1
    # never below the short tier's estimate of the first SHORT_BYTES bytes: appending text never
    # lowers the estimate across the tier boundary (issue 20)
    floor = _short_units(u[:SHORT_BYTES])
    if len(u) > RUN_SAMPLE or (stride > 1 and len(u) >= sample_from):
        # a text of several blocks is encoded block by block: its whole encoding is not kept
        # alongside (issue 31: a summarizer prompt is hundreds of KB)
        whole = u if len(text) <= BLOCK else b""
        del u
        return max(1, round(_long_units(text, whole, stride, sample_from) / UNIT), round(floor / UNIT))
    # one block, no sample: _long_units inlined (the common size of a message)
    w = u.translate(_LONG_TABLE)
    units: float = (
        (adler32(w) & 0xFFFF) - 1 if len(w) <= _CHUNK_ASCII and u.isascii() else _sum(w, _CHUNK_ALL)
    )
    units += _run_units(u) + _cjk_units(text, u)
    codes = (b" " + u).translate(_CODE_MAP, _CONT).replace(_PU_PU, _PU_PP)
    x = int.from_bytes(codes, "big")
    pw = (((x >> 8) << 3) + x).to_bytes(len(codes), "big").translate(_LONG_PAIRS)
    units += (adler32(pw) & 0xFFFF) - 1 if len(pw) <= _CHUNK_PAIRS else _sum(pw, _CHUNK_PAIRS)
    if _DI in codes:
        units += _DIGIT_TOKEN * _digit_tokens(codes)
    return max(1, round(units / UNIT), round(floor / UNIT))


def _short_units(u: bytes) -> int:
    """The short-tier sum of ``u`` (at most :data:`SHORT_BYTES` bytes), in 1/UNIT tokens."""
    return (adler32(u.translate(_SHORT_TABLE)) & 0xFFFF) - 1


def estimate_text_tokens(
    text: str, _table: bytes = _SHORT_TABLE, _adler32: object = adler32, _count: object = char_class_tokens
) -> int:
    """Estimated ``cl100k_base`` tokens of a string: the calibrated classes, short or long tier
    (see the module docstring); at least 1 for a non-empty text, 0 for an empty one.  Equal to
    ``char_class_tokens(text)``; the short tier is inlined (one Python call per short text).

    A data URL embedded in a text is counted as the text it is (issue 30: providers tokenize it).
    """
    u = text.encode("utf-8", "surrogatepass")
    if len(u) > SHORT_BYTES:
        del u  # the long tier encodes it again: not two copies at once
        return _count(text)  # type: ignore[operator,no-any-return]
    if not u:
        return 0
    s = (_adler32(u.translate(_table)) & 0xFFFF) - 1  # type: ignore[operator]
    return round(s / UNIT) if s >= UNIT else 1
