"""Everything a compression plugin needs, in one public module: ``ctxlab.sdk`` (``docs/plugins.md``).

As :mod:`ctxlab.transcripts.sdk` is for transcript formats, this is the face of the compression
hooks (:mod:`ctxlab.core.hookspecs`): a plugin imports from here, never from the modules that
happen to define a type today.  It imports the core floor only, so a plugin built on it loads
into a :class:`~ctxlab.CompressionMiddleware` without the lab (polars, matplotlib).

**A plugin is an object or a module.**  Any object whose methods are marked :data:`hookimpl`, or
a module whose top-level functions are (as with pytest and llm plugins): an entry point of the
``ctxlab`` group may name the module itself (``masking = "ctxlab_masking"``), a plugins-folder
file is one, and ``CompressionMiddleware(plugins=[module])`` takes one.  Hooks are called with
keyword arguments; an implementation takes any subset of them.

What the hooks receive and return, by hook:

* ``ctxlab_estimate_message`` / ``ctxlab_estimate_tools`` -- tokens (``int``) or ``None``;
  :class:`CharClassEstimator` (the default framing, ``text_tokens`` replaceable) and
  :class:`TokenizerEstimator` (exact counts with a tokenizer) are bases to build on (R16), and
  :class:`EstimatorHooks` makes such an estimator a plugin answering both hooks;
* ``ctxlab_l1_trim(view, ctx)`` -- ``ctx`` a :class:`TrimContext`; returns a :class:`TrimReport`
  (R5, R6); :func:`protect_key` is how ``ctx.protect_ids`` names a message;
* ``ctxlab_forget(messages, settings)`` -- ``settings`` a :class:`CompressionSettings`;
* ``ctxlab_should_summarize(view, ctx)`` -- ``ctx`` a :class:`SummarizeContext`; returns a
  :class:`SummarizeDecision` (R7, R8);
* ``ctxlab_select_cutoff(messages, ctx)`` -- ``ctx`` a :class:`CutoffContext`; returns a
  :class:`CutoffDecision` (R9); :func:`valid_cut_positions` says where a cut keeps tool calls
  with their results;
* ``ctxlab_get_summarizer(model, settings)`` -- returns a :class:`Summarizer` (``summarize(job:
  SummaryJob) -> SummaryResult``, R10); :class:`StructuredSummarizer` is the offline one,
  :class:`ExtractiveSummarizer` the offline one that keeps by salience what later turns use, and
  :class:`CachedPrefixSummarizer` an LLM one whose request reuses the agent's cached prefix;
* ``ctxlab_on_event(event)`` -- a :class:`CompressionEvent` (R14);
* ``ctxlab_register_strategies(register)`` (the lab's) -- ``register`` a :class:`RegisterStrategy`:
  ``register(name, factory, description="", *, levels=None, per_run=False)``, each call checked
  as a :class:`Strategy` (wrong types raise ``TypeError``, bad values ``ValueError``, naming the
  argument); ``factory`` a :data:`StrategyFactory`.

Helpers: :func:`message_text` (a message's text), :func:`is_tool_result` (a ToolMessage or an
observation recorded as user text), :class:`IdentityCache` (a bounded memo keyed by message
identity, for plugins that reuse the copies they make).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from ctxlab.core.builtin.extractive import ExtractiveSummarizer
from ctxlab.core.builtin.summarizers import StructuredSummarizer
from ctxlab.core.cache import CachedPrefixSummarizer
from ctxlab.core.cutoff import CutoffContext, CutoffDecision, SummarizeContext, SummarizeDecision
from ctxlab.core.estimation import CharClassEstimator, TokenizerEstimator
from ctxlab.core.events import CompressionEvent
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import TrimContext, TrimReport, protect_key
from ctxlab.core.marks import is_tool_result
from ctxlab.core.messages import message_text, valid_cut_positions
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.strategy import LEVELS, RegisterStrategy, Strategy, StrategyFactory
from ctxlab.core.summarize import Summarizer, SummaryJob, SummaryResult

__all__ = [
    "LEVELS",
    "CachedPrefixSummarizer",
    "CharClassEstimator",
    "CompressionEvent",
    "CompressionSettings",
    "CutoffContext",
    "CutoffDecision",
    "EstimatorHooks",
    "ExtractiveSummarizer",
    "IdentityCache",
    "RegisterStrategy",
    "Strategy",
    "StrategyFactory",
    "StructuredSummarizer",
    "SummarizeContext",
    "SummarizeDecision",
    "Summarizer",
    "SummaryJob",
    "SummaryResult",
    "TokenizerEstimator",
    "TrimContext",
    "TrimReport",
    "hookimpl",
    "is_tool_result",
    "message_text",
    "protect_key",
    "valid_cut_positions",
]


class _Estimates(Protocol):
    def message_tokens(self, message: BaseMessage) -> int: ...

    def tools_tokens(self, tools: Sequence[Any]) -> int: ...


class EstimatorHooks:
    """Mixin: an estimator that answers both estimation hooks itself (spec R16).

    ``class MyEstimator(EstimatorHooks, CharClassEstimator)`` (or ``TokenizerEstimator``) is a
    plugin whose ``ctxlab_estimate_message`` returns ``self.message_tokens(message)`` and whose
    ``ctxlab_estimate_tools`` returns ``self.tools_tokens(tools)``, in tokens.  Not ``trylast``:
    registered in a middleware, it overrides the built-in estimator.
    """

    @hookimpl
    def ctxlab_estimate_message(self: _Estimates, message: BaseMessage) -> int:
        return self.message_tokens(message)

    @hookimpl
    def ctxlab_estimate_tools(self: _Estimates, tools: Sequence[Any]) -> int:
        return self.tools_tokens(tools)
