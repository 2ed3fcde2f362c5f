"""ctxlab's hook specifications (pluggy, project name ``ctxlab``).

Every step of a compression round is a hook, and the ARS behaviour is itself a set of plugins
(:mod:`ctxlab.core.builtin`) registered ``trylast`` so that any other plugin overrides it the same way.
Each :class:`~ctxlab.core.middleware.CompressionMiddleware` (and each replay) owns its own plugin
manager (:func:`ctxlab.core.plugins.make_plugin_manager`), so instances with different plugins can
run side by side in one process.

Hooks marked *firstresult* stop at the first implementation that returns a value other than
``None``; the others run every implementation and return the list of their non-``None`` results.
Hooks are called with keyword arguments; an implementation may take any subset of them.  Units:
every ``*_tokens`` value is an estimate in tokens (spec R16).  ``docs/plugins.md`` documents each
hook with a worked example; the floors above add their own hooks
(:mod:`ctxlab.transcripts.hookspecs`, :mod:`ctxlab.replay.hookspecs`).  ctxlab itself calls these
hooks through the typed façade :class:`ctxlab.core.hooks.CompressionHooks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ctxlab.core.cutoff import CutoffContext, CutoffDecision, SummarizeContext, SummarizeDecision
    from ctxlab.core.events import CompressionEvent
    from ctxlab.core.l1 import TrimContext, TrimReport
    from ctxlab.core.settings import CompressionSettings
    from ctxlab.core.summarize import Summarizer

PROJECT = "ctxlab"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --- estimation ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def ctxlab_estimate_message(message: BaseMessage) -> int | None:
    """Estimate the tokens one message costs in a request (content, tool calls, overhead).

    Called once per distinct message: results are cached by the caller
    (:class:`ctxlab.core.estimation.EstimateCache`), so an implementation must be a pure function of
    the message.  Return ``None`` to defer to the next implementation.  firstresult.
    Default: :class:`ctxlab.core.estimation.CharClassEstimator` (spec R16).
    """


@hookspec(firstresult=True)
def ctxlab_estimate_tools(tools: Sequence[Any]) -> int | None:
    """Estimate the tokens the tool schemas of a request cost (R16: they count).

    ``tools`` holds LangChain ``BaseTool`` objects or provider dicts; never empty (no tools cost 0
    without asking).  Called once per distinct tool list (cached by the caller).  Return the
    tokens, or ``None`` to defer.  firstresult; default: the character-class estimate of the JSON
    schemas.
    """


# --- L1 trimming --------------------------------------------------------------------------------


@hookspec
def ctxlab_l1_trim(view: list[BaseMessage], ctx: TrimContext) -> TrimReport | None:
    """Trim the request view in place (spec R5, R6).  Every implementation runs.

    ``view`` is the round's own list: replace entries (``view[i] = edited_copy``), never edit a
    message object in place (state messages share those objects).  Files go through
    ``ctx.save_tool_result`` (R17).  Return a :class:`ctxlab.core.l1.TrimReport` of what was done, or
    ``None``.  Built-ins: argument truncation (R5), tool-result offload (R6), in that order.
    """


@hookspec
def ctxlab_forget(messages: list[BaseMessage], settings: CompressionSettings) -> None:
    """Drop what a plugin remembers for ``messages`` (the state messages and their L1 copies that a
    committed L2 round put behind the cumulative cutoff: they never reach a view again, spec
    R9/R11).  Every implementation runs; returns nothing.  A forgotten message that comes back
    (an older checkpoint resumed) must still be handled right, only less cheaply.  Built-ins:
    the argument truncation and tool-result offload memos.
    """


# --- L2 cutoff and summary ----------------------------------------------------------------------


@hookspec(firstresult=True)
def ctxlab_should_summarize(view: list[BaseMessage], ctx: SummarizeContext) -> SummarizeDecision | None:
    """Decide whether this round summarizes (L2) or sends the L1 view (spec R7, R8).

    Asked once L1 ran, and again in forced mode after the L1 view overflowed (R12).  ``view`` is
    the L1 view (``view[0]`` is the previous summary message when
    ``ctx.has_previous_summary``); ``ctx`` is a :class:`ctxlab.core.cutoff.SummarizeContext`
    (``tokens``: the L1 request estimate; T, T2, ``keep_messages``, ``estimate``, ``forced``).
    Return a :class:`ctxlab.core.cutoff.SummarizeDecision`, or ``None`` to defer.  firstresult.
    Built-ins (``trylast``): the ARS rule (forced, or the L1 estimate strictly above T2, R8) and,
    before it, the re-summarize guard (a documented deviation, ``docs/middleware.md``).
    """


@hookspec(firstresult=True)
def ctxlab_select_cutoff(messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision | None:
    """Choose where L2 cuts the effective messages (spec R9).

    ``messages`` are the effective messages (``messages[0]`` is the previous summary message when
    ``ctx.has_previous_summary``).  Return a :class:`ctxlab.core.cutoff.CutoffDecision` whose
    ``index`` is local to ``messages`` (everything before it is summarized), or a decision with
    ``index=None`` to say that no valid cutoff exists (R13).  firstresult.
    """


@hookspec(firstresult=True)
def ctxlab_get_summarizer(model: Any, settings: CompressionSettings) -> Summarizer | None:
    """Return the summarizer for L2 (spec R10).

    ``model`` is the chat model that should summarize (the middleware's ``summarizer=`` model or
    the agent's own model, R10), or ``None`` when no model is available (offline replay);
    ``settings`` is the middleware's :class:`ctxlab.core.settings.CompressionSettings`.  Return a
    :class:`ctxlab.core.summarize.Summarizer` (``summarize``/``asummarize`` must not raise for
    model errors: they return ``SummaryResult(error=...)``), or ``None`` to defer.  Called once
    per model object.  firstresult; default: the LLM summarizer when a model is given, the
    offline structured summarizer otherwise.
    """


# --- events -------------------------------------------------------------------------------------


@hookspec
def ctxlab_on_event(event: CompressionEvent) -> None:
    """Observe a ``context_compression`` event (spec R14) after it is written to the stream.

    ``event`` is the :class:`ctxlab.core.events.CompressionEvent` dict of
    :func:`ctxlab.core.events.make_event`.  Returns nothing.  Every implementation runs; one that
    raises is logged and ignored (it never aborts the model call).
    """
