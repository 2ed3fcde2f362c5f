"""ctxlab-fast-estimator: the core token estimate on a sample of the bytes; strategy ``ars-fast``.

The core default estimate (:func:`ctxlab.core.estimation.estimate_text_tokens`) weighs byte
classes, pairs of character classes and digit groups with constants calibrated against
``cl100k_base`` (:mod:`ctxlab.core.estimation.charclass`).  This plugin keeps what is specific to it:

* :func:`fast_text_tokens` — the same features and the same constants
  (:data:`ctxlab.core.estimation.COEFFICIENTS`; one set exists), with a long block of
  :data:`SAMPLE_FROM` bytes or more counted on one 256-byte window in every :data:`STRIDE` and
  scaled (:func:`ctxlab.core.estimation.char_class_tokens`); shorter texts are counted exactly
  (there the per-call cost decides, not the passes over the bytes).  One text's estimate moves
  by a few per cent, the per-class aggregates by less than a point (``ctxlab bench`` reports both
  estimators side by side).
* the repository's ``tools/calibrate.py`` (not installed) — re-fits the constants against tiktoken on the shared transcripts and prints
  them to paste into ``ctxlab/core/estimation/charclass.py``.
* :class:`FastEstimator` — an estimator plugin framed like the built-in one
  (:class:`ctxlab.core.estimation.CharClassEstimator`: per-message overhead, tool calls as name + JSON
  arguments, the name of a ToolMessage, images by size) with :func:`fast_text_tokens` for text.

The entry point names the package itself (``fast-estimator = "ctxlab_fast_estimator"``): its one
module-level hook registers the ``ars-fast`` strategy only — ARS with the sampled estimator;
installing the package does not change any middleware's estimator.  Use :class:`FastEstimator`
as a plugin to opt in.
"""

from __future__ import annotations

from typing import Any

from ctxlab.core.estimation import COEFFICIENTS, WEIGHTS, char_class_tokens, features
from ctxlab.sdk import CharClassEstimator, CompressionSettings, EstimatorHooks, RegisterStrategy, hookimpl

__all__ = [
    "COEFFICIENTS",
    "SAMPLE_FROM",
    "STRIDE",
    "WEIGHTS",
    "FastEstimator",
    "ctxlab_register_strategies",
    "fast_features",
    "fast_text_tokens",
]

#: long blocks of this many UTF-8 bytes or more are counted on one 256-byte window in every STRIDE
SAMPLE_FROM = 1024
STRIDE = 3


def fast_text_tokens(text: str, _count: Any = char_class_tokens) -> int:
    """Estimated ``cl100k_base`` tokens of ``text``, counted on a sample (at least 1 if non-empty)."""
    return _count(text, STRIDE, SAMPLE_FROM)


def fast_features(text: str) -> dict[str, float]:
    """The sampled features behind :func:`fast_text_tokens` (:func:`ctxlab.core.estimation.features`)."""
    return features(text, stride=STRIDE, sample_from=SAMPLE_FROM)


class FastEstimator(EstimatorHooks, CharClassEstimator):
    """Estimator plugin (both estimation hooks, not ``trylast``, from
    :class:`ctxlab.sdk.EstimatorHooks`): the built-in framing with :func:`fast_text_tokens` for
    text."""

    name = "fast-estimator"
    text_tokens = staticmethod(fast_text_tokens)


def _strategy(settings: CompressionSettings) -> list[object]:
    return [FastEstimator()]


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """The entry point's one hook: the ``ars-fast`` strategy, never the estimator itself."""
    register(
        "ars-fast",
        _strategy,
        "ARS with the sampled estimator (the core's calibrated character classes on every 3rd byte)",
    )
