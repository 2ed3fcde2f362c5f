"""ctxlab inside Inspect AI (needs ``inspect-ai``: ``pip install 'ctxlab[inspect]'``).

Importing the package registers the ``ctxlab`` model provider with Inspect
(:mod:`~ctxlab.integrations.inspect.models`: ``ctxlab/offline``, ``ctxlab/reader``).
"""

from __future__ import annotations

from ctxlab.integrations.inspect import models as models  # registers the ctxlab/* models
