"""A typed façade over the compression hooks of one plugin manager.

``pm.hook.ctxlab_select_cutoff(messages=..., ctx=...)`` is untyped: a misspelt hook or argument
name fails only at run time, and every result is ``Any``.  :class:`CompressionHooks` wraps a
``pluggy.PluginManager`` the way tox 4 wraps its own: one typed method per hook of
:mod:`ctxlab.core.hookspecs`, each calling the hook with keyword arguments and returning what
pluggy returns (the first non-``None`` result for a *firstresult* hook, ``None`` when no
implementation answered; the list of results otherwise).  The round and the middleware call
hooks only through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import pluggy
from langchain_core.messages import BaseMessage

if TYPE_CHECKING:
    from ctxlab.core.cutoff import CutoffContext, CutoffDecision, SummarizeContext, SummarizeDecision
    from ctxlab.core.events import CompressionEvent
    from ctxlab.core.l1 import TrimContext, TrimReport
    from ctxlab.core.settings import CompressionSettings
    from ctxlab.core.summarize import Summarizer

__all__ = ["CompressionHooks"]


class CompressionHooks:
    """Typed calls of the ``ctxlab`` compression hooks registered in ``plugin_manager``.

    Args:
        plugin_manager: a manager made by :func:`ctxlab.core.plugins.make_plugin_manager` (it
            holds the hook specifications of :mod:`ctxlab.core.hookspecs`).
    """

    def __init__(self, plugin_manager: pluggy.PluginManager) -> None:
        self.plugin_manager = plugin_manager
        self._hook = plugin_manager.hook

    def estimate_message(self, message: BaseMessage) -> int | None:
        """``ctxlab_estimate_message`` (firstresult): tokens of one message; ``None`` when no
        estimator answered (spec R16)."""
        return cast("int | None", self._hook.ctxlab_estimate_message(message=message))

    def estimate_tools(self, tools: Sequence[Any]) -> int | None:
        """``ctxlab_estimate_tools`` (firstresult): tokens of the tool schemas; ``None`` when no
        estimator answered (R16)."""
        return cast("int | None", self._hook.ctxlab_estimate_tools(tools=tools))

    def l1_trim(self, view: list[BaseMessage], ctx: TrimContext) -> list[TrimReport]:
        """``ctxlab_l1_trim`` (every implementation runs): trim ``view`` in place (R5, R6);
        returns the trimmers' reports (implementations that returned ``None`` left out)."""
        reports = cast("list[TrimReport | None]", self._hook.ctxlab_l1_trim(view=view, ctx=ctx))
        return [r for r in reports if r is not None]

    def forget(self, messages: list[BaseMessage], settings: CompressionSettings) -> None:
        """``ctxlab_forget`` (every implementation runs): ``messages`` went behind the cutoff for
        good (R9/R11); plugins drop what they remember for them."""
        self._hook.ctxlab_forget(messages=messages, settings=settings)

    def should_summarize(self, view: list[BaseMessage], ctx: SummarizeContext) -> SummarizeDecision | None:
        """``ctxlab_should_summarize`` (firstresult): L2 or the L1 view (R7, R8); ``None`` when no
        decision plugin answered."""
        return cast("SummarizeDecision | None", self._hook.ctxlab_should_summarize(view=view, ctx=ctx))

    def select_cutoff(self, messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision | None:
        """``ctxlab_select_cutoff`` (firstresult): where L2 cuts the effective messages (R9);
        ``None`` when no cutoff rule answered."""
        return cast("CutoffDecision | None", self._hook.ctxlab_select_cutoff(messages=messages, ctx=ctx))

    def get_summarizer(self, model: Any, settings: CompressionSettings) -> Summarizer | None:
        """``ctxlab_get_summarizer`` (firstresult): the L2 summarizer for ``model`` (``None``:
        offline, no model) and ``settings`` (R10); ``None`` when no plugin answered."""
        return cast("Summarizer | None", self._hook.ctxlab_get_summarizer(model=model, settings=settings))

    def on_event(self, event: CompressionEvent) -> None:
        """``ctxlab_on_event`` (every implementation runs): observers of a ``context_compression``
        event (R14).  An observer's exception propagates to the caller."""
        self._hook.ctxlab_on_event(event=event)
