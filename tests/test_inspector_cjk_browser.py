"""CJK text in ``ctxlab show``'s run page is drawn with its glyphs wherever it appears, in headless
Chromium on a machine without a CJK system font.

The pages carry a subset CJK font that the browser loads lazily (``unicode-range``).  Chromium
kept text it had first drawn with a fallback font as boxes ("tofu") after the font arrived: the
raw view's first message of a Chinese DeerFlow run showed 8 boxes while the identical message in
the sent view beside it was readable (found in a new user's trial).  The page draws again once a
font has loaded; this test compares the two columns' renderings of the same message pixel for
pixel.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

from test_browser import ARTIFACTS, _screenshot, _wait, browser  # noqa: F401  (the fixture is used by name)

from ctxlab.transcripts.locate import shared_dir

CTXLAB = [sys.executable, "-m", "ctxlab"]
CHINESE = (
    shared_dir()
    / "transcripts"
    / "raw"
    / "deer-flow"
    / "web"
    / "public"
    / "replay"
    / "china-food-delivery.txt"
)


def test_the_same_chinese_message_renders_alike_in_both_views(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    from PIL import Image, ImageChops

    assert CHINESE.is_file(), f"shared transcript missing: {CHINESE}"
    out = tmp_path / "run"
    done = subprocess.run(
        [*CTXLAB, "compare", str(CHINESE), "--strategies", "ars", "--summary-threshold", "16", "--no-figures",
         "--no-progress", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    shown = subprocess.run([*CTXLAB, "show", str(out)], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    browser.get((out / "inspect" / "run.html").as_uri() + "#run=china-food-delivery.txt%2Fars&call=13")
    _wait("the run page", lambda: browser.execute_script("return document.body.dataset.ready") == "true", 60)
    _wait("the CJK font", lambda: browser.execute_script("return document.fonts.status") == "loaded", 30)
    measured: dict[str, Any] = {}

    def alike() -> bool:
        """Both columns' first message: its text, and its rendering (ink pixels, mean difference)."""
        shots, texts = {}, {}
        for side in ("raw-view", "sent-view"):
            pre = browser.find_element("css selector", f"#{side} .msg[data-index='0'] pre")
            texts[side] = pre.text
            shots[side] = Image.open(io.BytesIO(pre.screenshot_as_png)).convert("L")
            shots[side].save(ARTIFACTS / f"cjk-{side}-message.png")
        raw, sent = shots["raw-view"], shots["sent-view"]
        width, height = min(raw.width, sent.width), min(raw.height, sent.height)
        raw, sent = raw.crop((0, 0, width, height)), sent.crop((0, 0, width, height))
        measured.update(
            texts=texts,
            ink_raw=sum(1 for p in raw.tobytes() if p < 128),
            ink_sent=sum(1 for p in sent.tobytes() if p < 128),
            mean_diff=sum(ImageChops.difference(raw, sent).tobytes()) / (width * height),
        )
        return abs(measured["ink_raw"] - measured["ink_sent"]) <= 0.15 * measured["ink_sent"] and (
            measured["mean_diff"] < 5
        )

    # the two columns sit at different sub-pixel offsets, so anti-aliasing differs a little; boxes
    # drawn instead of the glyphs differ a lot (measured: ink 186 vs 282 pixels and a mean
    # difference of 9.0 grey levels with boxes, 289 vs 282 and 1.9 with glyphs in both)
    try:
        _wait("both views to draw the Chinese message alike", alike, 20)
    except AssertionError as exc:  # boxes in one column: say what was measured
        raise AssertionError(f"{exc}; measured {measured}") from None
    finally:
        _screenshot(browser, "cjk-run-page.png")
    assert measured["texts"] == {"raw-view": "如何看待外卖大战", "sent-view": "如何看待外卖大战"}
    ink_raw, ink_sent, mean_diff = measured["ink_raw"], measured["ink_sent"], measured["mean_diff"]
    assert ink_sent > 100, "the sent view drew no text"
    assert abs(ink_raw - ink_sent) <= 0.15 * ink_sent and mean_diff < 5, (
        f"the raw view draws the message differently from the sent view (boxes?): ink {ink_raw} vs "
        f"{ink_sent} pixels, mean difference {mean_diff:.1f}"
    )


#: JavaScript: the width of the first Chinese run of characters in ``arguments[0]``'s text, in em
_CJK_WIDTH_EM = """
const el = arguments[0];
const node = [...el.childNodes].find(n => n.nodeType === Node.TEXT_NODE) || el.firstChild;
const m = /[\\u4e00-\\u9fff]+/.exec(node.textContent);
if (!m) return null;
const range = document.createRange();
range.setStart(node, m.index);
range.setEnd(node, m.index + m[0].length);
const size = parseFloat(getComputedStyle(el).fontSize);
return [m[0], range.getBoundingClientRect().width / size / m[0].length];
"""


def test_a_chinese_transcript_name_is_drawn_in_the_index_and_the_run_title(
    tmp_path: Path,
    browser: Any,  # noqa: F811
) -> None:
    """A transcript named in Chinese (the trial's ``外卖大战.txt``) showed as ``□□□□.txt`` in the
    index and the run page's title while the messages below were readable: the sans-serif stack
    named ``system-ui`` before the pages' CJK font, and Chromium's fallback for it drew boxes
    before reaching the font.  A CJK glyph is 1 em wide; the boxes were about 0.55 em."""
    assert CHINESE.is_file(), f"shared transcript missing: {CHINESE}"
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "外卖大战.txt").write_bytes(CHINESE.read_bytes())
    out = tmp_path / "run"
    done = subprocess.run(
        [*CTXLAB, "compare", str(folder), "--strategies", "ars", "--summary-threshold", "16", "--no-figures",
         "--no-progress", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    shown = subprocess.run([*CTXLAB, "show", str(out)], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    browser.get((out / "inspect.html").as_uri())
    _wait("the index", lambda: browser.find_elements("css selector", "tbody a"), 60)
    _wait("the CJK font", lambda: browser.execute_script("return document.fonts.status") == "loaded", 30)
    link = browser.find_element("css selector", "tbody a")
    measured = _wait(
        "the index's Chinese name drawn with glyphs",
        lambda: (w := browser.execute_script(_CJK_WIDTH_EM, link)) and w[1] > 0.9 and w,
        20,
    )
    _screenshot(browser, "cjk-index.png")
    assert measured[0] == "外卖大战"
    link.click()
    _wait("the run page", lambda: browser.execute_script("return document.body.dataset.ready") == "true", 60)
    title = browser.find_element("css selector", "#title")
    measured = _wait(
        "the run title's Chinese name drawn with glyphs",
        lambda: (w := browser.execute_script(_CJK_WIDTH_EM, title)) and w[1] > 0.9 and w,
        20,
    )
    _screenshot(browser, "cjk-run-title.png")
    assert measured[0] == "外卖大战"
