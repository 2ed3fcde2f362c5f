"""The middleware every field baseline is: it edits the request view, never the state.

A field strategy (Inspect's compaction, Anthropic's context editing, OpenHands' condenser, ADK's
sliding window) decides what one request sends; :class:`ViewMiddleware` turns that decision into
a LangChain ``AgentMiddleware`` that a replay (or a real ``create_agent`` loop) drives:

* ``wrap_model_call`` / ``awrap_model_call`` ask :meth:`ViewMiddleware.edit` (or ``aedit``) for
  an :class:`Edit` and send ``request.override(messages=edit.messages)``; the state is left as it
  is, as Anthropic's server-side editing leaves the client's history (the strategy keeps what it
  needs between calls on itself: such a strategy is registered ``per_run``).
* A call in which the strategy acted writes ctxlab's ``context_compression`` events (R14 shape,
  :func:`ctxlab.core.events.make_event`) on the custom stream: ``started`` then ``completed`` with
  the level (``L1``: an edit without a summary, ``L2``: a summary), the tokens before and after
  (ctxlab's measure, R16), the strategy's own ``stats`` and, for a summary, the summarizer's
  calls and tokens.  A replay reads them as it reads ARS's (levels, columns, the report).
* An L2 call also commits ``_summarization_event`` ``{"cutoff_index", "summary_message",
  "file_path": None}`` through ``Command(update=...)``, the record a replay keeps of every
  summary (state messages are still never rewritten).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, TypeVar

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import BaseMessage
from langgraph.types import Command

from ctxlab.core.estimation import CharClassEstimator, EstimateCache
from ctxlab.core.events import make_event

__all__ = ["Edit", "FieldState", "ViewMiddleware", "measure", "run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code: ``asyncio.run`` here, or on a worker thread
    when this thread already runs an event loop (a notebook cell, an async caller's sync hook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def measure() -> EstimateCache:
    """ctxlab's measuring estimator (the character-class estimate, R16), cached."""
    est = CharClassEstimator()
    return EstimateCache(est.message_tokens, est.tools_tokens, name=est.name)


class FieldState(AgentState):
    """Agent state with the private ``_summarization_event`` an L2 call commits (module doc)."""

    _summarization_event: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]


@dataclass
class Edit:
    """What a field strategy does to one request.

    Attributes:
        messages: the messages to send (the system message apart, as in ``ModelRequest``).
        level: ``None`` when the strategy did not act in this call (the messages may still be an
            earlier call's edit: a stateful strategy resends its compacted history); ``"L1"`` an
            edit without a summary; ``"L2"`` a summary.
        stats: the strategy's own record of the call (the event's ``stats``).
        error: why the strategy failed in this call (the event's ``error``; the messages are
            then what is sent anyway).
        summary: the summary message of an L2 call.
        cutoff_index: how many state messages the summary replaces (L2).
        summarizer: the summarizer's ``{"calls", "input_tokens", "output_tokens",
            "usage_reported", "error"}`` (L2).
    """

    messages: list[BaseMessage]
    level: Literal["L1", "L2"] | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    summary: BaseMessage | None = None
    cutoff_index: int | None = None
    summarizer: dict[str, Any] | None = None


class ViewMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """Base of the field baselines (module doc); a subclass implements :meth:`edit` (and may
    implement :meth:`aedit` when its strategy is async)."""

    state_schema = FieldState

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self.measure = measure()

    @property
    def name(self) -> str:
        return self._name

    def edit(self, request: ModelRequest) -> Edit:
        """The edit of one request (subclasses)."""
        raise NotImplementedError

    async def aedit(self, request: ModelRequest) -> Edit:
        """The edit of one request on the async path (default: :meth:`edit`)."""
        return self.edit(request)

    def _tokens(self, request: ModelRequest, messages: list[BaseMessage]) -> int:
        return self.measure.request_tokens(request.system_message, list(request.tools or []), messages)

    def _started(self, request: ModelRequest, edit: Edit) -> int:
        before = self._tokens(request, list(request.messages))
        if edit.level is not None or edit.error is not None:
            request.runtime.stream_writer(make_event("started", tokens_before=before))
        return before

    def _finish(self, request: ModelRequest, edit: Edit, before: int, response: ModelResponse) -> Any:
        if edit.level is None and edit.error is None:
            return response
        stats: dict[str, Any] = {**edit.stats, "level": edit.level or "none"}
        if edit.summarizer is not None:
            stats["summarizer"] = edit.summarizer
        request.runtime.stream_writer(
            make_event(
                "completed",
                level=edit.level,
                tokens_before=before,
                tokens_after=self._tokens(request, edit.messages),
                cutoff_index=edit.cutoff_index if edit.level == "L2" else None,
                error=edit.error,
                stats=stats,  # type: ignore[typeddict-item]
            )
        )
        if edit.summary is None:
            return response
        record = {"cutoff_index": edit.cutoff_index, "summary_message": edit.summary, "file_path": None}
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"_summarization_event": record})
        )

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        edit = self.edit(request)
        before = self._started(request, edit)
        return self._finish(request, edit, before, handler(request.override(messages=edit.messages)))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        edit = await self.aedit(request)
        before = self._started(request, edit)
        return self._finish(request, edit, before, await handler(request.override(messages=edit.messages)))
