"""ctxlab-field: the field's own context strategies as ctxlab baselines.

Each strategy is an ``AgentMiddleware`` (:class:`ctxlab_field.view.ViewMiddleware`) that edits
the request view, never the state, and reports the calls in which it acted as ctxlab's
``context_compression`` events, so that a replay measures it as it measures ARS:

* ``inspect-edit``, ``inspect-trim``, ``inspect-summary`` — Inspect AI's ``CompactionEdit``,
  ``CompactionTrim`` and ``CompactionSummary`` driven through Inspect's own classes and its own
  compaction handler (:mod:`ctxlab_field.inspect_baselines`);
* ``anthropic-clear-tool-uses`` — Anthropic's ``clear_tool_uses_20250919`` context edit,
  implemented from its documentation (:mod:`ctxlab_field.anthropic`);
* ``openhands-summarizing`` — OpenHands' ``LLMSummarizingCondenser``, implemented from its
  documented rule (the SDK needs Python ≥ 3.12; :mod:`ctxlab_field.openhands`);
* ``adk-sliding-window`` — Google ADK's sliding-window compaction with overlap, implemented from
  its documentation (:mod:`ctxlab_field.adk`).

Thresholds follow ctxlab's settings: each strategy triggers at T (``summary_threshold × 1024``
tokens of ctxlab's measure) where its rule has a token trigger.  Model-backed strategies summarize
offline (ctxlab's structured summary) unless their factory is given a model.  The entry point
names this module (``field = "ctxlab_field"``): its one module-level hook registers the
strategies only.
"""

from __future__ import annotations

from ctxlab.sdk import RegisterStrategy, hookimpl

__all__ = ["ctxlab_register_strategies"]


def _inspect_edit(settings: object) -> object:
    from ctxlab_field.inspect_baselines import inspect_edit

    return inspect_edit(settings)  # type: ignore[arg-type]


def _inspect_trim(settings: object) -> object:
    from ctxlab_field.inspect_baselines import inspect_trim

    return inspect_trim(settings)  # type: ignore[arg-type]


def _inspect_summary(settings: object) -> object:
    from ctxlab_field.inspect_baselines import inspect_summary

    return inspect_summary(settings)  # type: ignore[arg-type]


def _anthropic(settings: object) -> object:
    from ctxlab_field.anthropic import anthropic_clear_tool_uses

    return anthropic_clear_tool_uses(settings)  # type: ignore[arg-type]


def _openhands(settings: object) -> object:
    from ctxlab_field.openhands import openhands_summarizing

    return openhands_summarizing(settings)  # type: ignore[arg-type]


def _adk(settings: object) -> object:
    from ctxlab_field.adk import adk_sliding_window

    return adk_sliding_window(settings)  # type: ignore[arg-type]


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """The entry point's one hook: the field's strategies (module doc)."""
    register(
        "inspect-edit",
        _inspect_edit,
        "Inspect AI CompactionEdit (its own class and handler): clears all but the last 3 tool results at T",
        levels={"L1": "edit"},
        per_run=True,
    )
    register(
        "inspect-trim",
        _inspect_trim,
        "Inspect AI CompactionTrim (its own class and handler): keeps the input and the last 80 % of messages at T",
        levels={"L1": "trim"},
        per_run=True,
    )
    register(
        "inspect-summary",
        _inspect_summary,
        "Inspect AI CompactionSummary (its own class and handler) at T, offline structured summarizer",
        per_run=True,
    )
    register(
        "anthropic-clear-tool-uses",
        _anthropic,
        "Anthropic context editing clear_tool_uses_20250919 from its documentation: trigger T input tokens, keep 3",
        levels={"L1": "clear"},
    )
    register(
        "openhands-summarizing",
        _openhands,
        "OpenHands LLMSummarizingCondenser from its documented rule: max_tokens T, keep_first 2, offline summaries",
        per_run=True,
    )
    register(
        "adk-sliding-window",
        _adk,
        "Google ADK sliding-window compaction from its documentation: every 3 invocations, overlap 1, offline summaries",
        per_run=True,
    )
