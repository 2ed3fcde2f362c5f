"""Fit the constants of the core token estimate (``ctxlab/core/estimation/charclass.py``) against tiktoken cl100k_base.

    .venv/bin/python plugins/ctxlab-fast-estimator/calibrate.py [--transcripts DIR] [--chars N]

One set of constants exists: ``ctxlab.core.estimation.COEFFICIENTS``, used exactly by the core default
(:func:`ctxlab.core.estimation.estimate_text_tokens`) and on a sample of the bytes by this plugin
(:func:`ctxlab_fast_estimator.fast_text_tokens`).  The fit uses the exact features
(:func:`ctxlab.core.estimation.features`).

Samples: :func:`ctxlab.cli.bench.collect_samples` (six content classes from the public transcripts,
the Chinese prose sample and synthetic base64).  For each ramp (RAMP_LO, RAMP_HI) on a grid,
the linear weights are fitted by weighted least squares on a blend of two objectives, each class
weighted equally: the relative error of each sample (weight 1/tokens²) and the class aggregate
(weight 1/class tokens).  ``C_N2`` is fixed (no 2-byte scripts in the transcripts, see the
``ctxlab.core.estimation`` docstring).  The ramp with the lowest mean per-sample error wins.  Prints
the in-sample error per class (aggregate and mean absolute per sample), a leave-sources-out
check (5 folds of source files: fit on four, measure on the fifth), the error of the sampled
variant with the fitted constants, and the constants to paste into ``ctxlab/core/estimation/charclass.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np
from ctxlab_fast_estimator import SAMPLE_FROM, STRIDE

from ctxlab.cli.bench import CLASSES, cl100k_encoding, collect_samples, default_transcripts_dir
from ctxlab.core import estimation as core

FITTED = [k for k in core.WEIGHTS if k != "n2"]
GRID_LO = (6.0, 10.0, 15.0, 20.0)
GRID_SPAN = (10.0, 20.0, 40.0, 60.0)
ALPHA = 0.5


def fit(A: np.ndarray, T: np.ndarray, fixed: np.ndarray, cls: np.ndarray) -> np.ndarray:
    tot = {c: T[cls == c].sum() for c in CLASSES}
    cnt = {c: max(1, (cls == c).sum()) for c in CLASSES}
    w_rel = np.array([1.0 / cnt[c] for c in cls]) / T**2
    w_agg = np.array([1.0 / tot[c] for c in cls]) / T
    w = (1 - ALPHA) * w_rel / w_rel.sum() + ALPHA * w_agg / w_agg.sum()
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(A * sw[:, None], (T - fixed) * sw, rcond=None)
    return coef


def errors(pred: np.ndarray, T: np.ndarray, cls: np.ndarray) -> dict[str, tuple[float, float]]:
    out = {}
    for c in CLASSES:
        m = cls == c
        if m.any():
            out[c] = (pred[m].sum() / T[m].sum() - 1, float(np.mean(np.abs(pred[m] - T[m]) / T[m])))
    return out


def show(title: str, err: dict[str, tuple[float, float]]) -> None:
    print(f"{title} (aggregate / mean |per sample|):")
    for c, (agg, mae) in err.items():
        print(f"  {c:7s} {agg:+7.1%} / {mae:6.1%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transcripts", default=None, help="the shared transcripts folder")
    ap.add_argument("--chars", type=int, default=400_000, help="characters per class")
    args = ap.parse_args()
    enc = cl100k_encoding()
    samples = collect_samples(args.transcripts or default_transcripts_dir(), per_class_chars=args.chars)
    T = np.array([len(enc.encode_ordinary(s.text)) for s in samples], float)
    cls = np.array([s.cls for s in samples])
    sources = [s.source.split("#")[0] for s in samples]
    print(f"{len(samples)} samples: " + ", ".join(f"{c} {int((cls == c).sum())}" for c in CLASSES))

    best = None
    for lo in GRID_LO:
        for span in GRID_SPAN:
            F = [core.features(s.text, lo, lo + span) for s in samples]
            A = np.array([[f[k] for k in FITTED] for f in F], float)
            fixed = np.array([core.C_N2 * f["n2"] for f in F])
            coef = fit(A, T, fixed, cls)
            pred = A @ coef + fixed
            err = errors(pred, T, cls)
            score = float(np.mean([e[1] for e in err.values()]))
            if best is None or score < best[0]:
                best = (score, lo, lo + span, coef, A, fixed, pred)
    assert best is not None
    _, lo, hi, coef, A, fixed, pred = best
    print(f"\nramp {lo:g}..{hi:g}")
    show("in-sample error per class", errors(pred, T, cls))

    # leave-sources-out: 5 folds of source files
    groups = sorted(set(sources))
    fold_of = {g: i % 5 for i, g in enumerate(groups)}
    folds = np.array([fold_of[s] for s in sources])
    cv = np.zeros_like(T)
    for k in range(5):
        test = folds == k
        c_k = fit(A[~test], T[~test], fixed[~test], cls[~test])
        cv[test] = A[test] @ c_k + fixed[test]
    show("leave-sources-out error per class", errors(cv, T, cls))

    # the plugin's sampled variant with the same constants
    Fs = [core.features(s.text, lo, hi, stride=STRIDE, sample_from=SAMPLE_FROM) for s in samples]
    As = np.array([[f[k] for k in FITTED] for f in Fs], float)
    fixed_s = np.array([core.C_N2 * f["n2"] for f in Fs])
    show(
        f"sampled variant (stride {STRIDE} on ASCII parts of {SAMPLE_FROM}+ characters) per class",
        errors(As @ coef + fixed_s, T, cls),
    )

    names = dict(zip(FITTED, coef, strict=True))
    print("\n# --- paste into ctxlab/core/estimation/charclass.py (calibrated constants) ---")
    for k, const in core.WEIGHTS.items():
        value = core.C_N2 if k == "n2" else names[k]
        print(f"{const} = {value:.4g}")
    print(f"RAMP_LO = {lo:.1f}\nRAMP_HI = {hi:.1f}")
    by_source: dict[str, list[float]] = defaultdict(list)
    for s, p, t in zip(sources, pred, T, strict=True):
        by_source[s].append(p / t - 1)
    worst = sorted(by_source.items(), key=lambda kv: -abs(float(np.mean(kv[1]))))[:5]
    print("\nsources with the largest mean error: " + "; ".join(f"{s} {np.mean(v):+.1%}" for s, v in worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
