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
