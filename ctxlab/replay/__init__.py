"""Floor 3, replay: drive a middleware through recorded transcripts as a live agent would have.

* :mod:`~ctxlab.replay.harness` — one LangGraph model-node harness (request, runtime, config,
  ``Command`` updates), public so that a middleware can be driven by hand;
* :mod:`~ctxlab.replay.models` — offline chat models (the replay placeholder, a scripted model, a
  recorded provider stand-in for live agents);
* :mod:`~ctxlab.replay.provider` — a provider's context window and its overflow check;
* :mod:`~ctxlab.replay.strategies` — named strategies and the lab's plugin manager;
* :mod:`~ctxlab.replay.engine` — replay of transcripts × strategies (sweeps in
  :mod:`~ctxlab.replay.sweep`, the views a run writes in :mod:`~ctxlab.replay.views`, the summary
  cache in :mod:`~ctxlab.replay.summary_cache`; the per-call loop in
  :mod:`~ctxlab.replay.runner`, a run's parts in :mod:`~ctxlab.replay.building`, results in
  :mod:`~ctxlab.replay.result`, what produced them in :mod:`~ctxlab.replay.provenance`, file names
  and thread ids in :mod:`~ctxlab.replay.names`, a foreign summarizer's usage in
  :mod:`~ctxlab.replay.usage`);
* :mod:`~ctxlab.replay.metrics` — per-call measures (cache-reusable prefix, retention, pairing);
* :mod:`~ctxlab.replay.table` — the per-call table's columns, schema and aggregations.
"""

from __future__ import annotations

from ctxlab.replay.engine import (
    build_middleware,
    replay,
    replay_many,
    safe_name,
    transcript_labels,
)
from ctxlab.replay.harness import ModelCall, ModelNodeHarness
from ctxlab.replay.models import RecordedChatModel, ReplayModel, ScriptedChatModel, scripted_tool_model
from ctxlab.replay.names import thread_id_for
from ctxlab.replay.provider import ContextWindow, profile_window
from ctxlab.replay.result import ReplayIssue, ReplayResult
from ctxlab.replay.strategies import Strategy, make_lab_manager, strategies
from ctxlab.replay.sweep import sweep
from ctxlab.replay.table import CALL_COLUMNS

__all__ = [
    "CALL_COLUMNS",
    "ContextWindow",
    "ModelCall",
    "ModelNodeHarness",
    "RecordedChatModel",
    "ReplayIssue",
    "ReplayModel",
    "ReplayResult",
    "ScriptedChatModel",
    "Strategy",
    "build_middleware",
    "make_lab_manager",
    "profile_window",
    "replay",
    "replay_many",
    "safe_name",
    "scripted_tool_model",
    "strategies",
    "sweep",
    "thread_id_for",
    "transcript_labels",
]
