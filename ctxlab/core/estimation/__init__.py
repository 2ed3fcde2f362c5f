"""Token estimates (spec R16): local approximations used only to trigger and trim.

Provider-reported usage is the billing truth (R16); these estimates decide when a round starts and
how much L1 and L2 must cut.  All values are tokens (``int``).  Nothing here raises on odd
content: unknown block types count their JSON length.  The parts, one job each:

* :mod:`~ctxlab.core.estimation.charclass` — text by calibrated byte classes and pairs of
  character classes, an approximation of ``cl100k_base`` many times cheaper than tiktoken
  (:func:`estimate_text_tokens`, :func:`char_class_tokens`, :func:`features`, the constants
  :data:`SHORT_WEIGHTS` / :data:`LONG_WEIGHTS` / :data:`COEFFICIENTS`, fitted by
  ``tools/calibrate.py``);
* :mod:`~ctxlab.core.estimation.patterns` — what cl100k does with runs of one character, letter
  patterns and CJK characters, for the long tier (issue 30: :func:`cjk_tokens`, the constants
  :data:`RUN_WEIGHTS`, :data:`PERIOD_WEIGHT`, :data:`CJK_TABLE`);
* :mod:`~ctxlab.core.estimation.images` — image blocks by size with OpenAI's tile rule
  (:func:`estimate_image_tokens`; a data URL inside a text is text);
* :mod:`~ctxlab.core.estimation.framing` — what a message and the tool schemas cost around
  their text: :class:`CharClassEstimator` (the ARS default) and :class:`TokenizerEstimator`
  (exact text counts with a tokenizer such as a ``tiktoken.Encoding``, same framing);
* :mod:`~ctxlab.core.estimation.cache` — :class:`EstimateCache`, the per-message cache in front
  of the estimation hooks.

Every name is importable from ``ctxlab.core.estimation`` itself.
"""

from __future__ import annotations

from ctxlab.core.estimation.cache import EstimateCache
from ctxlab.core.estimation.charclass import (
    BLOCK,
    BYTE_CLASSES,
    COEFFICIENTS,
    GROUPS,
    LONG_WEIGHTS,
    PAIR_CLASSES,
    RUN_SAMPLE,
    SHORT_BYTES,
    SHORT_WEIGHTS,
    UNIT,
    WEIGHTS,
    char_class_tokens,
    estimate_text_tokens,
    features,
    long_features,
    short_features,
)
from ctxlab.core.estimation.framing import (
    MESSAGE_OVERHEAD,
    CharClassEstimator,
    Tokenizer,
    TokenizerEstimator,
    content_tokens,
    reasoning_tokens,
)
from ctxlab.core.estimation.images import UNKNOWN_IMAGE_TOKENS, estimate_image_tokens
from ctxlab.core.estimation.patterns import CJK_TABLE, PERIOD_WEIGHT, RUN_WEIGHTS, cjk_tokens

__all__ = [
    "BLOCK",
    "BYTE_CLASSES",
    "CJK_TABLE",
    "COEFFICIENTS",
    "GROUPS",
    "LONG_WEIGHTS",
    "MESSAGE_OVERHEAD",
    "PAIR_CLASSES",
    "PERIOD_WEIGHT",
    "RUN_SAMPLE",
    "RUN_WEIGHTS",
    "SHORT_BYTES",
    "SHORT_WEIGHTS",
    "UNIT",
    "UNKNOWN_IMAGE_TOKENS",
    "WEIGHTS",
    "CharClassEstimator",
    "EstimateCache",
    "Tokenizer",
    "TokenizerEstimator",
    "char_class_tokens",
    "cjk_tokens",
    "content_tokens",
    "estimate_image_tokens",
    "estimate_text_tokens",
    "features",
    "long_features",
    "reasoning_tokens",
    "short_features",
]
