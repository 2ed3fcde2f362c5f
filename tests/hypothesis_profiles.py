"""The hypothesis settings of the middleware's property tests, in one place.

``MW_HYPOTHESIS_EXAMPLES`` raises (or lowers) every middleware property test's number of
examples for a deeper search: ``MW_HYPOTHESIS_EXAMPLES=300 pytest tests/test_middleware_carry.py``.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings

__all__ = ["middleware_props"]


def middleware_props(default_examples: int, **extra: Any) -> settings:
    """Settings for a middleware property test: ``default_examples`` examples unless
    ``MW_HYPOTHESIS_EXAMPLES`` says otherwise, no deadline (an agent loop per example), and the
    health checks a real agent loop trips (slow, large data, function-scoped fixtures) off;
    ``extra`` goes to :class:`hypothesis.settings` (e.g. ``derandomize=True``)."""
    return settings(
        max_examples=int(os.environ.get("MW_HYPOTHESIS_EXAMPLES", str(default_examples))),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        **extra,
    )
