"""Floor 5, integrations: ctxlab inside other harnesses.

* :mod:`ctxlab.integrations.inspect` — Inspect AI: any ctxlab strategy as an Inspect
  ``CompactionStrategy``, offline Inspect models (``ctxlab/offline``, ``ctxlab/reader``), ctxlab's
  per-call measures in Inspect logs, the offline task and ``ctxlab eval``'s engine.

Integrations sit above the lab floors (core, transcripts, replay, analysis) and below the CLI
(``pyproject.toml``'s import contracts); importing this package imports no integration.
"""
