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


class _Direct:
    """The one implementation of a *firstresult* hook, called without pluggy's dispatch (issue 31:
    the per-message estimate is the hottest hook call; pluggy's loop costs more than a short text's
    estimate).  Taken only while the hook has exactly one implementation, which is no wrapper, and
    the manager's call path is pluggy's own (no ``add_hookcall_monitoring`` or tracing); checked on
    every call (a plugin registered later is seen at once), else the hook is called as usual."""

    __slots__ = ("_caller", "_default", "_fn", "_impl", "_manager")

    def __init__(self, manager: pluggy.PluginManager, name: str) -> None:
        self._manager = manager
        self._caller = getattr(manager.hook, name)
        self._default = getattr(manager, "_inner_hookexec", None)
        self._impl: Any = None
        self._fn: Any = None

    def function(self, arg: str) -> Any:
        """The implementation to call with the one argument ``arg``, or ``None``: use the hook."""
        # pluggy keeps a hook's implementations in one list it edits in place (private; the public
        # get_hookimpls() copies it on every call, which costs as much as what it would save)
        impls = getattr(self._caller, "_hookimpls", None)
        if impls is None:
            impls = self._caller.get_hookimpls()
        if len(impls) != 1:
            return None
        impl = impls[0]
        if impl is not self._impl:
            self._impl = impl
            usable = (
                not getattr(impl, "hookwrapper", False)
                and not getattr(impl, "wrapper", False)
                and tuple(getattr(impl, "argnames", ())) == (arg,)
            )
            self._fn = impl.function if usable else None
        if self._fn is None or getattr(self._manager, "_inner_hookexec", None) is not self._default:
            return None
        return self._fn


class CompressionHooks:
    """Typed calls of the ``ctxlab`` compression hooks registered in ``plugin_manager``.

    Args:
        plugin_manager: a manager made by :func:`ctxlab.core.plugins.make_plugin_manager` (it
            holds the hook specifications of :mod:`ctxlab.core.hookspecs`).
    """

    def __init__(self, plugin_manager: pluggy.PluginManager) -> None:
        self.plugin_manager = plugin_manager
        self._hook = plugin_manager.hook
        self._estimate = _Direct(plugin_manager, "ctxlab_estimate_message")

    def estimate_message(self, message: BaseMessage) -> int | None:
        """``ctxlab_estimate_message`` (firstresult): tokens of one message; ``None`` when no
        estimator answered (spec R16).  One estimator plugin is called directly (:class:`_Direct`)."""
        fn = self._estimate.function("message")
        if fn is not None:
            return cast("int | None", fn(message))
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
        caller = self._hook.ctxlab_on_event
        if getattr(caller, "_hookimpls", None) == []:
            return  # no observer (pluggy's own list; skipping the call is the same)
        caller(event=event)
