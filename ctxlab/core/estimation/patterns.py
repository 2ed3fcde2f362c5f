"""What cl100k does with repetition and with CJK characters, for the long tier of the estimate
(issue 30; spec R16): :mod:`ctxlab.core.estimation.charclass` weighs what these find.

* :func:`runs` — the eighth and later bytes of a run of one ASCII character (weighed by
  :data:`RUN_WEIGHTS`, what cl100k spends on a long run of that character) and the ASCII letters
  that repeat the pattern of the two or three before them (:data:`PERIOD_WEIGHT`): ``xxxx`` is
  1/8 token a character, ``hahaha`` about 1/2, where a per-class weight saw almost nothing.
* :func:`cjk_tokens` — the tokens cl100k spends on each CJK character alone (one, two or three,
  :data:`CJK_TABLE`): a name list of rare characters costs half as much again as prose of
  common ones, which a lead-byte weight cannot tell.

Both are fixed by the tokenizer (measured by ``tools/calibrate.py``), not fitted, and monotone:
each byte's or character's part depends on what precedes it only.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["CJK_EXACT", "CJK_TABLE", "PERIOD_WEIGHT", "RUN_WEIGHTS", "cjk_tokens", "runs"]

#: long tier, runs (issue 30): the eighth and every later byte of a run of one ASCII character
#: (a shorter run is ordinary text to cl100k) weighs what cl100k spends per character on a long
#: run of it (``c * 8192``, rounded up to 1/64; fixed by the tokenizer, not fitted, like
#: ``digit_token``): ``xxxx`` 1/8 token a
#: character, ``gggg`` 1/2, ``====`` 1/64.  A digit is weighed by its digit group alone (0).
RUN_WEIGHTS: dict[str, int] = {
    **dict.fromkeys("afoxAFX", 8),
    **dict.fromkeys("bcdeyBCELMY", 16),
    **dict.fromkeys("ghijklmnpqrstuvwzDGHIJKNOPQRSTUVWZ", 32),
    **dict.fromkeys("0123456789", 0),
    **dict.fromkeys("#%*-./=_", 1),
    **dict.fromkeys("+~", 2),
    **dict.fromkeys(";", 4),
    **dict.fromkeys("!,:<>", 8),
    **dict.fromkeys("$()?@\\^|", 16),
    **dict.fromkeys("\"&'[]`{}", 32),
    " ": 1,
    "\t": 4,
    "\n": 2,
    "\r": 64,
}
#: long tier, letter patterns (issue 30): an ASCII letter that repeats the pattern of the two or
#: three letters before it (``hahaha``, ``abcabc``; not a run of one letter) weighs this many
#: 1/UNIT tokens instead of its class weight: cl100k spends about one token per repetition of
#: such a pattern (1/4 to 2/3 of a token a letter; 1/2 errs on the safe side)
PERIOD_WEIGHT = 32
#: long tier, CJK (issue 30): a character of U+3000-U+DFFF (UTF-8 lead bytes E3-ED: kana, CJK
#: punctuation, Han, Hangul) is weighed by the tokens cl100k spends on it alone — one for the
#: ~800 characters that are one token, two for the ~17,000 whose two first or two last bytes
#: are, three for the rest (``long.cjk`` for kana and Han, ``long.hangul`` for Hangul: their sums,
#: times a fitted weight each, as merges in context save a tenth or more; the table, derived from
#: cl100k by ``tools/calibrate.py --cjk-table``, is :data:`CJK_TABLE`), not by its lead byte
#: alone: a name list of rare characters costs half as much again as prose of common ones
CJK_TABLE = Path(__file__).with_name("cl100k_cjk.json")
#: byte -> 0xFF when it is 0 (two equal bytes XOR to 0), else 0
_ZERO_FF = bytes([0xFF] + [0] * 255)
#: byte -> 0xFF for an ASCII letter, else 0
_LETTER_FF = bytes(0xFF if 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A else 0 for c in range(256))
#: the first code point of the Hangul part of the CJK table (UTF-8 lead bytes EA-ED)
_HANGUL_FROM = 0xA000
#: the characters of a block's head that are looked up one by one in the CJK table; the CJK
#: characters after them weigh the head's average (appending text never changes a block's head,
#: so the estimate stays monotone), about 30 ns a character looked up
CJK_EXACT = 512
#: CJK lead bytes of kana and Han (E3-E9) and of Hangul (EA-ED), for counting them in C
_NOT_HAN_LEAD = bytes(c for c in range(256) if not 0xE3 <= c <= 0xE9)
_NOT_HANGUL_LEAD = bytes(c for c in range(256) if not 0xEA <= c <= 0xED)
#: code point -> its class: "\x01"-"\x03" kana and Han of one to three tokens, "\x04"-"\x06"
#: Hangul; other code points are deleted (None); loaded from CJK_TABLE on first use
_cjk_classes: list[str | None] = []


def _cjk_table() -> list[str | None]:
    if not _cjk_classes:
        data = json.loads(CJK_TABLE.read_text(encoding="utf-8"))
        lo, hi = data["range"]
        table: list[str | None] = [None] * (hi + 1)
        for cp in range(lo, hi + 1):
            table[cp] = "\x03" if cp < _HANGUL_FROM else "\x06"
        for key, (han, hangul) in (("two", ("\x02", "\x05")), ("one", ("\x01", "\x04"))):
            for a, b in data[key]:
                for cp in range(a, b + 1):
                    table[cp] = han if cp < _HANGUL_FROM else hangul
        _cjk_classes[:] = table
    return _cjk_classes


def cjk_tokens(text: str) -> tuple[float, float]:
    """``(kana and Han, Hangul)``: the tokens cl100k spends on each CJK character of ``text``
    alone (:data:`CJK_TABLE`: one, two or three), summed apart for U+3000-U+9FFF and for
    U+A000-U+DFFF; past the first :data:`CJK_EXACT` characters, each CJK character counts the
    average of those before (a float then).  The table is loaded on first use."""
    head = text[:CJK_EXACT].translate(_cjk_table())
    c = [head.count(ch) for ch in "\x01\x02\x03\x04\x05\x06"]
    han, hangul = c[0] + 2 * c[1] + 3 * c[2], c[3] + 2 * c[4] + 3 * c[5]
    if len(text) > CJK_EXACT:
        u = text.encode("utf-8", "surrogatepass")
        more_han = len(u.translate(None, _NOT_HAN_LEAD)) - (c[0] + c[1] + c[2])
        more_hangul = len(u.translate(None, _NOT_HANGUL_LEAD)) - (c[3] + c[4] + c[5])
        n_han, n_hangul = c[0] + c[1] + c[2], c[3] + c[4] + c[5]
        return (
            han + more_han * (han / n_han if n_han else 2.0),
            hangul + more_hangul * (hangul / n_hangul if n_hangul else 2.0),
        )
    return float(han), float(hangul)


def _masks(n: int) -> tuple[int, int, int]:
    """``(0x7F, 0x80 and 0xFF repeated)`` over ``n`` bytes, for :func:`_zero`."""
    full = (1 << (8 * n)) - 1
    m7 = int.from_bytes(b"\x7f" * n, "big")
    return m7, full ^ m7, full


def _zero(x: int, shift: int, masks: tuple[int, int, int]) -> int:
    """0xFF at each byte of ``x`` equal to the byte ``shift`` bytes before it, else 0 (``masks``:
    :func:`_masks` of its length).  Branch-free on the whole integer: a byte ``y`` of the
    difference is 0 exactly when ``((y & 0x7F) + 0x7F) | y`` has no high bit; no carry crosses
    a byte."""
    m7, m80, _full = masks
    y = x ^ (x >> (8 * shift))
    return ((((((y & m7) + m7) | y) & m80) ^ m80) >> 7) * 0xFF


def runs(u: bytes) -> tuple[bytes, bytes]:
    """``(run bytes, pattern letters)`` of ``u``: a copy of ``u`` in which every byte that is not
    the eighth or later byte of a run of one character is 0xFF (weighs nothing), and a copy in
    which every byte that is not an ASCII letter repeating the pattern of the two or three
    letters before it (:data:`PERIOD_WEIGHT`) is 0xFF.  Each byte's part depends on the bytes
    before it only, so appending text changes no earlier part (monotone).  A handful of C-speed
    operations on big integers, no loop."""
    n = len(u)
    x = int.from_bytes(u, "big")
    masks = _masks(n)
    full = masks[2]
    same = _zero(x, 1, masks)
    run = same & (same >> 8)  # 0xFF where u[i] == u[i-1] == u[i-2]
    if run:
        run &= run >> 16  # ... == u[i-4]
        run &= run >> 24  # ... == u[i-7]: the eighth and later byte of a run
    letters = int.from_bytes(u.translate(_LETTER_FF), "big")
    period = 0
    if letters:  # no ASCII letter (CJK, digits): no pattern to look for
        if run:
            letters &= full ^ run
        two = _zero(x, 2, masks)
        three = _zero(x, 3, masks)
        # u[i] == u[i-2] and u[i-1] == u[i-3]; or the same with 3 over three bytes
        period = ((two & (two >> 8)) | (three & (three >> 8) & (three >> 16))) & letters
    runs = ((x & run) | (full ^ run)).to_bytes(n, "big") if run else b""
    pattern = ((x & period) | (full ^ period)).to_bytes(n, "big") if period else b""
    return runs, pattern
