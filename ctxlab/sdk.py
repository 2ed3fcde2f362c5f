"""The public face of compression plugins: ``from ctxlab.sdk import hookimpl, CutoffDecision, ...``.

Defined in :mod:`ctxlab.core.sdk` (the core floor: no lab packages), whose ``__all__`` is the one
list of names; see its docstring for what each hook receives, and ``docs/plugins.md`` for every
hook with an example.
"""

from __future__ import annotations

from ctxlab.core.sdk import *  # noqa: F403  (re-exported: ctxlab.core.sdk.__all__)
from ctxlab.core.sdk import __all__ as __all__
