"""CJK text in the inspector's pages on a machine with no CJK system font.

The PNG figures draw Chinese, Japanese and Korean labels with the Noto Sans CJK collection of the
``noto-cjk-sans-otc`` package (:func:`ctxlab.analysis.plotting.style.packaged_cjk_font`).  The
pages use the same font, offline: :func:`cjk_font_face` writes a **subset** of it holding only the
characters the pages show (a few hundred KB instead of the collection's 19 MB) into the pages'
folder as WOFF, and returns the ``@font-face`` rule that names it by a relative URL with the
``unicode-range`` of those characters, so a browser loads it only for them.  A page loaded from
disk may read a file below its own folder in Chromium and Firefox alike; no server, no network.

The collection holds one face per region (JP, KR, SC, TC, HK); :data:`FACE` is Simplified
Chinese, the language of the shared corpus's Chinese sessions and of ARS's default summary
prompt (the figures use the collection's first face, JP; the two share most glyphs).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CJK_FAMILY", "FACE", "FontFace", "cjk_characters", "cjk_font_face", "unicode_ranges"]

#: the CSS family name the pages give the subset (listed after the Latin fonts)
CJK_FAMILY = "ctxlab CJK"
#: the face of the Noto Sans CJK collection the pages use (2: Noto Sans CJK SC)
FACE = 2
#: the module of the pip package that ships the collection (``FONT_PATH``), as the figures use it
_FONT_MODULE = "noto_cjk_sans_otc"
#: code points a CJK font covers and the Latin page fonts do not: CJK radicals and symbols, kana,
#: Hangul, CJK ideographs (the BMP blocks and extension planes), compatibility and fullwidth forms
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003ffff]"
)


@dataclass(frozen=True)
class FontFace:
    """A font file written for the pages and the CSS that uses it.

    Attributes:
        path: the WOFF file.  characters: how many characters it holds.
        family: its CSS family (:data:`CJK_FAMILY`); ``unicode_range``: the CSS descriptor's value.
    """

    path: Path
    characters: int
    family: str
    unicode_range: str

    def css(self, url: str) -> str:
        """The ``@font-face`` rule with the file at ``url`` (relative to the page)."""
        return (
            f'@font-face {{ font-family: "{self.family}"; src: url("{url}") format("woff"); '
            f"font-display: swap; unicode-range: {self.unicode_range}; }}"
        )


def cjk_characters(text: str) -> set[str]:
    """The characters of ``text`` a CJK font is needed for (see ``_CJK``)."""
    return set(_CJK.findall(text))


def unicode_ranges(codepoints: Iterable[int]) -> str:
    """``U+4E2D, U+6587-6589, ...``: the CSS ``unicode-range`` of a set of code points."""
    points = sorted(set(codepoints))
    parts: list[str] = []
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        parts.append(f"U+{points[i]:X}" if i == j else f"U+{points[i]:X}-{points[j]:X}")
        i = j + 1
    return ", ".join(parts)


def _font_path() -> str | None:
    try:
        return str(importlib.import_module(_FONT_MODULE).FONT_PATH)
    except (ImportError, AttributeError):
        return None


def cjk_font_face(characters: Iterable[str], folder: Path) -> FontFace | None:
    """Write the subset of the figures' CJK font holding ``characters`` into ``folder`` (made when
    missing; named by a hash of the characters, so an unchanged page reuses its file) and return
    it; ``None`` when no character needs it.

    Characters the font has no glyph for (an emoji, say) are left out of the subset and of its
    ``unicode-range``, so the browser's own fallback draws them.

    Raises:
        FileNotFoundError: the ``noto-cjk-sans-otc`` package is not installed (``pip install
            'ctxlab[lab]'``) while some character needs it.
    """
    chars = sorted({c for c in characters if _CJK.fullmatch(c)})
    if not chars:
        return None
    path = _font_path()
    if path is None or not Path(path).is_file():
        raise FileNotFoundError(
            f"the pages hold {len(chars)} CJK characters but the font the figures use is missing: "
            "pip install noto-cjk-sans-otc (part of ctxlab[lab])"
        )
    from fontTools import subset
    from fontTools.ttLib import TTFont

    with TTFont(path, fontNumber=FACE, lazy=True) as font:
        cmap = font.getBestCmap()
        points = [ord(c) for c in chars if ord(c) in cmap]
        if not points:
            return None
        digest = hashlib.sha256("".join(map(chr, points)).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        target = folder / f"ctxlab-cjk-{digest}.woff"
        face = FontFace(target, len(points), CJK_FAMILY, unicode_ranges(points))
        if target.is_file():
            return face
        options = subset.Options()
        options.flavor = "woff"
        options.layout_features = ["*"]
        options.hinting = False
        options.name_IDs = ["*"]
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        buffer = io.BytesIO()
        font.flavor = "woff"
        font.save(buffer)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("ctxlab-cjk-*.woff"):
        old.unlink()
    target.write_bytes(buffer.getvalue())
    return face
