"""``ctxlab show`` on the whole shared corpus with every strategy, in headless Chromium.

The corpus (every transcript under ``../shared/transcripts``, every registered strategy, T = 16 K)
is replayed once, then ``ctxlab show`` writes its pages; the test checks the size bound of every
file, opens the index from disk (no server), filters it to the runs with failed or fallback
summaries, then to those with fallback summaries, opens the Chinese session among them (a
langchain-style fallback), uses "changed only", the next-summarized jump
and the text search, and checks that its CJK text is drawn with the font the pages carry (this
machine has no CJK system font).  Screenshots go to ``out/test-artifacts/browser/`` (paths
printed); the index's open time is printed and recorded (``record_property``), with a generous
ceiling only: the target (under 2 s) is measured in the issue's notes, not asserted here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_browser import _screenshot, _wait, browser  # noqa: F401  (the fixture is used by name)

from ctxlab.analysis.inspector_site import DATA_BYTES
from ctxlab.transcripts.locate import shared_dir

CTXLAB = [sys.executable, "-m", "ctxlab"]
#: no file ``ctxlab show`` writes may be bigger (the issue's bound)
PAGE_BYTES = 10_000_000
#: the Chinese session whose LangChain summaries fall back at T = 16 K
CHINESE = "session-ses_4313.md"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "all"
    done = subprocess.run(
        [
            *CTXLAB, "compare", str(shared_dir() / "transcripts"), "--strategies", "all",
            "--summary-threshold", "16", "--keep-going", "--no-figures", "--no-progress", "--out", str(out),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: the corpus holds files no loader takes
    shown = subprocess.run([*CTXLAB, "show", str(out)], capture_output=True, text=True, timeout=900)
    assert shown.returncode == 0, shown.stderr
    print(shown.stdout)
    return out


def test_no_page_is_over_the_bound(corpus: Path) -> None:
    files = [corpus / "inspect.html", *(p for p in (corpus / "inspect").rglob("*") if p.is_file())]
    sizes = {p: p.stat().st_size for p in files}
    runs = pl.read_parquet(corpus / "calls.parquet").select("transcript", "strategy").unique().height
    data = [p for p in files if p.suffix == ".js"]
    assert len(data) == runs > 2000
    assert max(sizes.values()) <= PAGE_BYTES, max(sizes.items(), key=lambda kv: kv[1])
    assert max(sizes[p] for p in data) <= DATA_BYTES
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    print("largest files:", [(str(p.relative_to(corpus)), s) for p, s in largest])


def _open(driver: Any, url: str) -> float:
    """Load ``url`` and wait for its page to say it is drawn; the ms from navigation start."""
    driver.get(url)
    _wait("the page", lambda: driver.execute_script("return document.body.dataset.ready"), timeout=60)
    assert driver.execute_script("return document.body.dataset.ready") == "true"
    return float(driver.execute_script("return Number(document.body.dataset.readyMs)"))


def _glyph_pixels(driver: Any, char: str, family: str) -> str:
    return str(
        driver.execute_script(
            """const [ch, family] = arguments;
            const c = document.createElement('canvas'); c.width = 64; c.height = 64;
            const g = c.getContext('2d'); g.font = '48px ' + family; g.fillText(ch, 4, 52);
            return Array.from(g.getImageData(0, 0, 64, 64).data).join(',');""",
            char,
            family,
        )
    )


def test_find_a_failed_summary_and_look_inside(
    corpus: Path,
    browser: Any,  # noqa: F811  (test_browser's fixture)
    record_property: pytest.RecordProperty,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    fc = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True)
    print("CJK system fonts:", fc.stdout.strip() or "none")
    summary = pl.read_csv(corpus / "summary.csv")
    failed_runs = summary.filter(pl.col("summary_errors") > 0)
    calls = pl.read_parquet(corpus / "calls.parquet")
    try:
        ms = _open(browser, (corpus / "inspect.html").as_uri())
        record_property("index_ready_ms", ms)
        print(f"index drawn {ms:.0f} ms after navigation start")
        assert ms < 10_000  # generous: the target (2 s) is measured, not asserted
        _screenshot(browser, "10-corpus-index.png")

        # filter to the runs with failed or fallback summaries
        Select(browser.find_element(By.ID, "f-failures")).select_by_value("failed")
        count = browser.find_element(By.ID, "count").text
        assert count.startswith(f"{failed_runs.height} of "), count
        rows = browser.find_elements(By.CSS_SELECTOR, "#runs-body tr")
        assert len(rows) == failed_runs.height
        _screenshot(browser, "11-corpus-failed-summaries.png")
        # the Chinese session fails under several strategies (issue 33's field baselines fail to
        # compact it too): the fallback filter leaves the runs whose summaries fell back
        Select(browser.find_element(By.ID, "f-failures")).select_by_value("fallback")
        fallback_runs = summary.filter(pl.col("fallback_summaries") > 0)
        count = browser.find_element(By.ID, "count").text
        assert count.startswith(f"{fallback_runs.height} of "), count
        link = next(
            a for a in browser.find_elements(By.CSS_SELECTOR, "#runs-body a.open") if a.text == CHINESE
        )
        link.click()  # the run page, from the same folder
        _wait(
            "the run page",
            lambda: (
                "run.html" in browser.current_url
                and browser.execute_script("return document.body.dataset.ready")
            ),
            timeout=60,
        )
        title = browser.find_element(By.ID, "title").text
        assert title.startswith(CHINESE + " ["), title
        strategy = title[len(CHINESE) + 2 : -1]
        run = calls.filter((pl.col("transcript") == CHINESE) & (pl.col("strategy") == strategy))
        fallbacks = run.filter(pl.col("summary_fallback").is_not_null())["call_index"].to_list()
        badges = browser.find_element(By.ID, "badges").text
        assert f"{len(fallbacks)} fallback summaries" in badges, badges
        problems = browser.find_elements(By.CSS_SELECTOR, "#problems-box .problem")
        assert [int(p.get_attribute("data-call")) for p in problems] == fallbacks

        # the first failed call, by the "failed" jump from call 0
        browser.find_element(By.CSS_SELECTOR, ".jump-next[data-kind='failed']").click()
        _wait(
            "the failed call",
            lambda: f"call {fallbacks[0]} of" in browser.find_element(By.ID, "call-info").text,
            10,
        )
        box = browser.find_element(By.ID, "call-failures").text
        assert "fallback at this call: Previous conversation was too long to summarize." in box
        badge = browser.find_element(By.CSS_SELECTOR, "#sent-view .msg[data-mark='summary'] .badge.failed")
        assert badge.text.startswith("fallback: Previous conversation")
        _screenshot(browser, "12-corpus-fallback-call.png")

        # changed only: the messages sent as they are fold into "... sent as they are" lines
        every = len(browser.find_elements(By.CSS_SELECTOR, "#sent-view .msg"))
        browser.find_element(By.ID, "changed-only").click()
        marks = [
            m.get_attribute("data-mark") for m in browser.find_elements(By.CSS_SELECTOR, "#sent-view .msg")
        ]
        assert marks and "kept" not in marks and len(marks) < every
        assert browser.find_elements(By.CSS_SELECTOR, "#sent-view .gap")

        # the next summarized (L2) call after this one
        l2 = run.filter(pl.col("level") == "L2")["call_index"].to_list()
        after = next(c for c in l2 if c > fallbacks[0])
        browser.find_element(By.CSS_SELECTOR, ".jump-next[data-kind='summarized']").click()
        _wait(
            "the next L2 call",
            lambda: f"call {after} of" in browser.find_element(By.ID, "call-info").text,
            10,
        )
        assert browser.find_element(By.CSS_SELECTOR, "#call-strip a.current").get_attribute(
            "data-call"
        ) == str(after)
        _screenshot(browser, "13-corpus-next-summarized-changed-only.png")

        # the text search finds a word of a later message and shows its call
        data = (corpus / "inspect" / "data").glob(f"*{CHINESE}*/{strategy}.js")
        text = next(iter(data)).read_text(encoding="utf-8")
        run_data = json.loads(text[len("ctxlabRun(") : text.rstrip().rindex(")")])
        word = _a_rare_word(run_data)
        search = browser.find_element(By.ID, "search")
        search.send_keys(word)
        _wait("the matches", lambda: "match" in browser.find_element(By.ID, "hit-info").text, 10)
        search.send_keys("\n")
        _wait(
            "the first match shown",
            lambda: browser.find_elements(By.CSS_SELECTOR, ".msg.flash mark, .summary mark"),
            10,
        )
        marked = browser.find_elements(By.CSS_SELECTOR, "#sent-view mark, #raw-view mark, #summaries mark")
        assert marked and all(m.text.lower() == word.lower() for m in marked)
        _screenshot(browser, "14-corpus-search.png")

        # CJK: the page's font subset is loaded and draws glyphs, not boxes
        browser.find_element(By.ID, "changed-only").click()
        browser.execute_script("window.scrollTo(0, document.getElementById('views').offsetTop)")
        loaded = browser.execute_async_script(
            "const done = arguments[0]; document.fonts.ready.then(() => done("
            "[...document.fonts].filter(f => f.family.includes('ctxlab CJK')).map(f => f.status)))"
        )
        assert loaded == ["loaded"], loaded
        han = _glyph_pixels(browser, "中", '"ctxlab CJK"')
        assert han != _glyph_pixels(browser, "\ue000", '"ctxlab CJK"')  # a private-use box
        assert han != _glyph_pixels(browser, "\ue000", "monospace")
        shot = _screenshot(browser, "15-corpus-chinese-session.png")
        assert shot.stat().st_size > 20_000
    except BaseException:
        _screenshot(browser, "corpus-failure.png")
        raise


def _a_rare_word(run: dict[str, Any]) -> str:
    """An ASCII word of 7+ letters found in exactly one message of the run (not in the first)."""
    seen: dict[str, set[int]] = {}
    for i, m in enumerate(run["messages"]):
        for w in set(re.findall(r"\b[A-Za-z]{7,}\b", m["text"] or "")):
            seen.setdefault(w.lower(), set()).add(i)
    rare = sorted(w for w, where in seen.items() if len(where) == 1 and 0 not in where)
    assert rare, "no word to search for"
    return rare[0]


def _run_data(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return dict(json.loads(text[len("ctxlabRun(") : text.rstrip().rindex(")")]))


def test_declined_is_not_failed_and_control_characters_are_drawn(
    corpus: Path,
    browser: Any,  # noqa: F811  (test_browser's fixture)
) -> None:
    """The s40 trial: a run whose only problems were declined summaries had a "failed (5)" jump;
    a tool's ANSI colour codes were drawn as tofu boxes; a LangChain summary (no cumulative
    cutoff) read "cutoff null".  Now: separate "failed" and "declined" jumps counting their own
    kinds; control characters drawn as their Unicode pictures (ESC as ␛); no cutoff, no "cutoff"."""
    from selenium.webdriver.common.by import By

    files = sorted((corpus / "inspect" / "data").glob("*/*.js"))
    runs = [(p, _run_data(p)) for p in files]
    declined = next(
        d for _, d in runs if d["failures"] and all(f["kind"] == "declined" for f in d["failures"])
    )
    ansi = next(d for p, d in runs if "\\u001b" in p.read_text(encoding="utf-8"))
    langchain = next(d for _, d in runs if d["strategy"] == "langchain-summarization" and d["summaries"])
    site = (corpus / "inspect" / "run.html").as_uri()
    try:
        browser.get("about:blank")
        _open(browser, f"{site}#run={declined['id']}")
        jumps = {
            j.get_attribute("data-kind"): j.text
            for j in browser.find_elements(By.CSS_SELECTOR, "#jumps .jump")
        }
        calls = {f["call_index"] for f in declined["failures"]}
        assert f"declined ({len(calls)})" in jumps["declined"], jumps
        assert "failed (0)" in jumps["failed"], jumps

        at = next(i for i, m in enumerate(ansi["messages"]) if "\x1b" in (m["text"] or ""))
        where = ansi["raw"].index(at)  # its place in the raw view
        call = next(c["call_index"] for c in ansi["calls"] if c["raw_count"] > where)
        browser.get("about:blank")  # a new page, not a hash change
        _open(browser, f"{site}#run={ansi['id']}&call={call}")
        texts = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#sent-view .msg, #raw-view .msg")]
        assert any("␛[" in t for t in texts) and not any("\x1b" in t for t in texts)
        _screenshot(browser, "16-control-characters.png")

        browser.get("about:blank")
        _open(browser, f"{site}#run={langchain['id']}")
        heads = browser.find_element(By.ID, "summaries").text
        assert "tokens" in heads and "cutoff null" not in heads and "cutoff undefined" not in heads
    except BaseException:
        _screenshot(browser, "declined-failure.png")
        raise
