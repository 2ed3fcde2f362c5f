"""Fit the constants of the core token estimate (``ctxlab/core/estimation/charclass.py``) against tiktoken cl100k_base.

    .venv/bin/python -m tools.calibrate [--transcripts DIR] [--chars N]

One set of constants exists: ``ctxlab.core.estimation.SHORT_WEIGHTS`` / ``LONG_WEIGHTS`` (in
1/``UNIT`` tokens), used exactly by the core default
(:func:`ctxlab.core.estimation.estimate_text_tokens`) and on a sample of the bytes of long texts
by this plugin (:func:`ctxlab_fast_estimator.fast_text_tokens`).

Samples (the fit never sees the held-out split):

* the six content classes of the public transcripts (:func:`ctxlab.cli.bench.collect_samples`:
  prose, code, JSON, logs, CJK, base64);
* the *calibration* split of the committed text sets (:func:`ctxlab.cli.bench.textset`).

Long tier: the weights of :func:`ctxlab.core.estimation.long_features` (byte classes, pairs of
character classes) are fitted by weighted least squares on a blend of two objectives, each class
weighted equally: the relative error of each sample (weight 1/tokens²) and the class aggregate
(weight 1/class tokens); the blend (:data:`ALPHAS`) with the smallest largest class error on the
calibration samples wins.  Some weights are fixed by how cl100k splits text, not fitted
(:data:`FIXED_LONG`): a group of up to three digits is one token and a digit weighs nothing else,
a full-width punctuation mark is one token, a continuation byte weighs nothing (its lead byte
carries the character).  A weight that comes out negative is set to 0 and the rest refitted;
weights are rounded to 1/``UNIT`` tokens.  Short tier: the byte-class weights of
:func:`ctxlab.core.estimation.short_features` are fitted the same way on pieces of at most
``SHORT_BYTES`` bytes of every sample.

Prints the error per class of both splits (the held-out one only measured), and the constants to
paste into ``ctxlab/core/estimation/charclass.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import numpy as np

from ctxlab.cli.bench import cl100k_encoding, collect_samples, default_transcripts_dir
from ctxlab.cli.bench.samples import Sample, textset
from ctxlab.core import estimation as core

FIXED_LONG = {"digit_token": 1.0, "u.digit": 0.0, "u.compat": 1.0, "u.cont": 0.0}
#: a pair weighs at most this many 1/UNIT tokens (so that adler32 never wraps on a sample)
PAIR_MAX = 255
#: the short tier weighs a non-ASCII character on its lead byte alone (its script's weight)
FIXED_SHORT = {"cont": 0}
#: the blends of per-sample and per-class objectives tried; the one with the smallest largest
#: class error on the calibration samples wins (the held-out split plays no part)
ALPHAS = (0.2, 0.35, 0.5, 0.65, 0.8)


def fit(A: np.ndarray, T: np.ndarray, fixed: np.ndarray, cls: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Non-negative weighted least squares (negative weights dropped and refitted)."""
    classes = sorted(set(cls))
    tot = {c: T[cls == c].sum() for c in classes}
    cnt = {c: max(1, (cls == c).sum()) for c in classes}
    w_rel = np.array([1.0 / cnt[c] for c in cls]) / T**2
    w_agg = np.array([1.0 / tot[c] for c in cls]) / T
    w = (1 - alpha) * w_rel / w_rel.sum() + alpha * w_agg / w_agg.sum()
    sw = np.sqrt(w)
    active = np.ones(A.shape[1], bool)
    coef = np.zeros(A.shape[1])
    for _ in range(A.shape[1]):
        sol, *_ = np.linalg.lstsq(A[:, active] * sw[:, None], (T - fixed) * sw, rcond=None)
        coef[:] = 0.0
        coef[active] = sol
        if (coef >= 0).all():
            break
        active &= coef > 0
    return np.clip(coef, 0.0, None)


def errors(pred: np.ndarray, T: np.ndarray, cls: np.ndarray) -> dict[str, tuple[float, float]]:
    out = {}
    for c in dict.fromkeys(cls):
        m = cls == c
        out[str(c)] = (pred[m].sum() / T[m].sum() - 1, float(np.mean(np.abs(pred[m] - T[m]) / T[m])))
    return out


def show(title: str, err: dict[str, tuple[float, float]]) -> None:
    print(f"{title} (aggregate / mean |per sample|):")
    for c, (agg, mae) in err.items():
        flag = "  <-- outside ±10 %" if abs(agg) > 0.10 else ""
        print(f"  {c:14s} {agg:+7.1%} / {mae:6.1%}{flag}")


def pieces(samples: Sequence[Sample], limit: int) -> list[Sample]:
    """Every sample cut into consecutive pieces of at most ``limit`` UTF-8 bytes (at least 40 characters)."""
    out = []
    for s in samples:
        i = 0
        while i < len(s.text):
            j = min(len(s.text), i + limit)
            while len(s.text[i:j].encode("utf-8", "surrogatepass")) > limit:
                j -= max(1, (j - i) // 8)
            if j - i >= 40 or i == 0:
                out.append(Sample(s.cls, s.text[i:j], s.source))
            i = j
    return out


def matrix(
    samples: Sequence[Sample], fn: Callable[[str], dict[str, float]], keys: Sequence[str]
) -> np.ndarray:
    rows = [fn(s.text) for s in samples]
    return np.array([[r[k] for k in keys] for r in rows], float)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transcripts", default=None, help="the shared transcripts folder")
    ap.add_argument("--chars", type=int, default=400_000, help="characters per transcript class")
    args = ap.parse_args()
    enc = cl100k_encoding()

    def tokens(texts: Sequence[str]) -> np.ndarray:
        return np.array([len(enc.encode_ordinary(t)) for t in texts], float)

    train = collect_samples(args.transcripts or default_transcripts_dir(), per_class_chars=args.chars)
    train += textset("calibration")
    held = textset("heldout")
    T, Th = tokens([s.text for s in train]), tokens([s.text for s in held])
    cls, clsh = np.array([s.cls for s in train]), np.array([s.cls for s in held])
    print(f"{len(train)} calibration samples, {len(held)} held-out samples")

    # --- long tier ---
    names = [k for k in core.LONG_WEIGHTS if k not in FIXED_LONG]
    keys = [f"long.{k}" for k in names]
    A = matrix(train, core.long_features, keys)
    fixed = matrix(train, core.long_features, [f"long.{k}" for k in FIXED_LONG]) @ np.array(
        list(FIXED_LONG.values())
    )
    unit = core.UNIT
    caps = [PAIR_MAX if k.startswith("p.") else 255 for k in names]
    best = None
    for alpha in ALPHAS:
        q = np.clip(np.round(fit(A, T, fixed, cls, alpha) * unit), 0, caps)
        worst = max(abs(e[0]) for e in errors(A @ q / unit + fixed, T, cls).values())
        if best is None or worst < best[0]:
            best = (worst, alpha, q)
    assert best is not None
    _, alpha, qcoef = best
    pred = A @ qcoef / unit + fixed
    long_w = {k: round(v * unit) for k, v in FIXED_LONG.items()} | {
        k: int(v) for k, v in zip(names, qcoef, strict=True)
    }
    print(f"\nlong tier (alpha {alpha})")
    show("calibration error per class (long tier on every sample, rounded weights)", errors(pred, T, cls))
    all_keys = [f"long.{k}" for k in core.LONG_WEIGHTS]
    ph = matrix(held, core.long_features, all_keys) @ np.array([long_w[k] for k in core.LONG_WEIGHTS]) / unit
    show("HELD-OUT error per class (long tier on every sample; never fitted)", errors(ph, Th, clsh))

    # --- short tier ---
    short_train = pieces(train, core.SHORT_BYTES)
    Ts = tokens([s.text for s in short_train])
    clss = np.array([s.cls for s in short_train])
    skeys = [f"short.{k}" for k in core.SHORT_WEIGHTS if k not in FIXED_SHORT]
    As = matrix(short_train, core.short_features, skeys)
    scoef = fit(As, Ts, np.zeros(len(Ts)), clss, alpha)
    q = np.clip(np.round(scoef * unit), 0, 255)
    short_w = dict(FIXED_SHORT) | {k.split(".", 1)[1]: int(v) for k, v in zip(skeys, q, strict=True)}
    print(f"\nshort tier ({len(short_train)} pieces of at most {core.SHORT_BYTES} bytes)")
    show("calibration error per class (short tier, rounded weights)", errors(As @ q / unit, Ts, clss))
    short_held = pieces(held, core.SHORT_BYTES)
    Tsh = tokens([s.text for s in short_held])
    Ash = matrix(short_held, core.short_features, skeys)
    show(
        "HELD-OUT error per class (short tier on pieces; never fitted)",
        errors(Ash @ q / unit, Tsh, np.array([s.cls for s in short_held])),
    )

    print("\n# --- paste into ctxlab/core/estimation/charclass.py (calibrated constants) ---")
    print("SHORT_WEIGHTS: dict[str, int] = {")
    for k in core.SHORT_WEIGHTS:
        print(f'    "{k}": {short_w[k]},')
    print("}")
    print("LONG_WEIGHTS: dict[str, int] = {")
    for k in core.LONG_WEIGHTS:
        print(f'    "{k}": {long_w[k]},')
    print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
