"""The core estimate (spec R16) is monotone in the text (issue 20, target 3): appending text never
lowers it by more than one token — across the short/long tier boundary (``SHORT_BYTES``), the old
pair-sampling boundary (``RUN_SAMPLE`` = 1,024 bytes) and the block boundary (``BLOCK``).

Property tests (hypothesis) over texts built from the character kinds cl100k splits on (words,
digits, punctuation runs, blanks and newlines, CJK, Hangul, kana, Cyrillic, emoji), with prefixes
whose length is drawn around each boundary; plus the counterexample the issue names (one CJK
character appended to a text above 1,024 bytes lowered the estimate by 16 tokens).
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.core.estimation import BLOCK, RUN_SAMPLE, SHORT_BYTES, char_class_tokens, estimate_text_tokens

#: pieces of the kinds of text the estimator tells apart
PIECES = st.sampled_from(
    [
        "the",
        " parser",
        "Value",
        "HTTPError",
        "x",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        "0",
        "42",
        "1234567",
        ".",
        ",",
        '"',
        "('",
        "}}",
        "::",
        "->",
        "====",
        "上下文",
        "压缩",
        "。",
        "한국어",
        "입니다",
        "ひらがな",
        "カタカナ",
        "Привет",
        "مرحبا",
        "🙂",
        "👍🏽",
        "é",
        "ß",
        "Zm9vYmFy",
        "aGVsbG8=",
    ]
)
TEXTS = st.lists(PIECES, max_size=40).map("".join)


def grown(text: str, at_least: int) -> str:
    """``text`` repeated until it has at least ``at_least`` UTF-8 bytes (``text`` non-empty)."""
    n = len(text.encode("utf-8"))
    return text * (at_least // n + 1)


@settings(max_examples=300, deadline=None)
@given(a=TEXTS, b=TEXTS)
def test_appending_never_lowers_a_short_or_medium_text(a, b):
    # spec: R16 — the estimate that triggers and trims grows with the text (issue 20)
    assert estimate_text_tokens(a + b) >= estimate_text_tokens(a) - 1


@settings(max_examples=300, deadline=None)
@given(
    base=st.lists(PIECES, min_size=1, max_size=30).map("".join),
    size=st.sampled_from([SHORT_BYTES, RUN_SAMPLE, BLOCK, 2 * BLOCK]),
    offset=st.integers(-64, 64),
    tail=TEXTS,
)
def test_appending_never_lowers_it_across_each_boundary(base, size, offset, tail):
    # spec: R16 — the estimate that triggers and trims grows with the text (issue 20)
    # the prefix ends within 64 bytes of a boundary; the appended text crosses it or not
    text = grown(base, max(1, size + offset))
    cut = text.encode("utf-8")[: max(1, size + offset)].decode("utf-8", "ignore")
    before = estimate_text_tokens(cut)
    assert estimate_text_tokens(cut + tail) >= before - 1, (len(cut.encode()), tail)


@settings(max_examples=150, deadline=None)
@given(base=st.lists(PIECES, min_size=1, max_size=30).map("".join), extra=st.integers(1, 3000))
def test_the_estimate_grows_with_every_character_of_a_long_text(base, extra):
    text = grown(base, RUN_SAMPLE + extra)
    values = [char_class_tokens(text[:n]) for n in range(len(text) - 40, len(text) + 1)]
    assert all(b >= a - 1 for a, b in itertools.pairwise(values)), values


def test_one_cjk_character_above_1024_bytes_does_not_lower_it():
    # the counterexample: mixed Chinese/English above 1,024 bytes, one character more
    text = grown("The cache 压缩上下文 keeps 42 entries; ", RUN_SAMPLE + 300)
    for n in range(len(text) - 200, len(text)):
        assert estimate_text_tokens(text[: n + 1] + "文") >= estimate_text_tokens(text[: n + 1]) - 1
