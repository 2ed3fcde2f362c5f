"""The ``recorded`` strategy: replay what the agent itself sent, its own recorded compactions
included.

Claude Code and Codex compact their context themselves.  Their transcripts record where
(:data:`ctxlab.transcripts.base.RECORDED_COMPACTION_KEY` marks the summary, or the replacement
history, the agent continued from), and after that point the model saw only the system message,
those messages and what followed.  :class:`RecordedCompactionMiddleware` sends exactly that: at
each call, the request's messages from the start of the latest recorded compaction in them (all
messages when there is none).  It summarizes nothing and calls no model besides the recorded one,
so a replay row of ``recorded`` is the recording, to put beside ``ars`` or a baseline on the same
runs (``ctxlab compare --strategies recorded,ars``).  The call whose request a recorded compaction
first starts is the strategy's L2 round (``level`` ``L2``, the agent's summary in the run's
summaries; :mod:`ctxlab.replay.observer`); ``recorded_input_tokens`` beside ``view_tokens`` shows
the provider's count of what was sent.

**Recorded microcompactions** (Claude Code's ``microcompact_boundary``: old tool results cleared
without a summary, :data:`ctxlab.transcripts.base.RECORDED_MICROCOMPACTION_KEY`): from the first
request after the boundary on, each cleared result is sent as the agent sent it, its content
replaced by the agent's placeholder (``[Old tool result content cleared]``); the request before
the boundary still holds it.  :func:`recorded_view` applies both (and Cline's truncation, below);
a call sending a cleared result is the agent's own L1 round.

Other strategies never see a recorded compaction's messages: the replay leaves them out of the
state (:mod:`ctxlab.replay.runner`), as a run without the agent's own compaction would not have
had them; a middleware that sets :attr:`RecordedCompactionMiddleware.replays_recorded_compactions`
gets them.  On a transcript without a recorded compaction ``recorded`` sends everything (the raw
history).

Cline does not summarize: it **truncates**, leaving a range of its history out of every later
request (``conversationHistoryDeletedRange``).  The loader marks each message left out with the
call from which on it was (:data:`ctxlab.transcripts.base.RECORDED_TRUNCATION_KEY`); ``recorded``
leaves it out from that call on (the call index is the number of recorded answers in the
request), every other strategy keeps it.  The strategy's own trigger (the replay's "reached T",
``ctxlab_trigger_reached``) is the agent's: a call whose request the agent cut, by a compaction or
a truncation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, ToolMessage

from ctxlab.transcripts.base import (
    is_model_call,
    recorded_compaction_of,
    recorded_microcompaction_of,
    recorded_truncation_of,
)

__all__ = ["RECORDED_STRATEGY", "RecordedCompactionMiddleware", "recorded_view", "recorded_view_start"]

#: the strategy's registered name
RECORDED_STRATEGY = "recorded"


def recorded_view_start(messages: Sequence[BaseMessage]) -> int:
    """Where the agent's own view starts in ``messages`` (state messages, no system message):
    the first message of the latest recorded compaction among them, or 0 when there is none."""
    latest: int | None = None
    for i in range(len(messages) - 1, -1, -1):
        mark = recorded_compaction_of(messages[i])
        if mark is not None:
            latest = i
            index = mark.get("index")
            while latest > 0:  # back to the first message of that compaction
                before = recorded_compaction_of(messages[latest - 1])
                if before is None or before.get("index") != index:
                    break
                latest -= 1
            break
    return latest or 0


def recorded_view(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What the agent itself sent of ``messages`` (state messages, no system message): from the
    latest recorded compaction on (:func:`recorded_view_start`), without the messages it had
    truncated by this call (marked with a ``from_call`` at most the number of recorded answers in
    ``messages``), and each tool result a recorded microcompaction had cleared by then (its
    boundary's ``after`` message is in ``messages``) replaced by a copy holding the agent's
    placeholder (``additional_kwargs["ctxlab_cleared"] = True``)."""
    call = sum(1 for m in messages if is_model_call(m) and recorded_compaction_of(m) is None)
    view = [m for m in messages[recorded_view_start(messages) :] if not _truncated(m, call)]
    ids = {m.id for m in messages if m.id is not None}
    for i, m in enumerate(view):
        mark = recorded_microcompaction_of(m)
        if mark is not None and isinstance(m, ToolMessage) and mark.get("after") in ids:
            view[i] = m.model_copy(
                update={
                    "content": str(mark.get("placeholder") or "[Old tool result content cleared]"),
                    "additional_kwargs": {**m.additional_kwargs, "ctxlab_cleared": True},
                }
            )
    return view


def _truncated(message: BaseMessage, call: int) -> bool:
    mark = recorded_truncation_of(message)
    start = mark.get("from_call") if mark is not None else None
    return isinstance(start, int) and start <= call


class RecordedCompactionMiddleware(AgentMiddleware[Any, Any]):
    """Sends each request as the agent sent it (see the module docstring): from the latest
    recorded compaction on, without what the agent truncated.

    One instance serves every run of a batch; ``ctxlab_trigger_reached`` is the last call's
    "the agent cut this request" (read by the replay right after the call).
    """

    #: the replay feeds this middleware the messages of recorded compactions
    replays_recorded_compactions = True
    #: whether the agent's own compaction or truncation cut the last request
    ctxlab_trigger_reached: bool | None = None
    #: whether the last request left out messages the agent had truncated (an L1 round of the
    #: agent's own: a trimmed view, no new summary)
    ctxlab_truncated: bool = False

    @property
    def name(self) -> str:
        return RECORDED_STRATEGY

    def _view(self, request: ModelRequest) -> ModelRequest:
        messages: list[AnyMessage] = list(request.messages)
        view = recorded_view(messages)
        cleared = any(m.additional_kwargs.get("ctxlab_cleared") for m in view)
        self.ctxlab_trigger_reached = len(view) < len(messages) or cleared
        # the agent's own L1: messages it truncated or tool results it cleared, no new summary
        self.ctxlab_truncated = cleared or (
            any(recorded_truncation_of(m) is not None for m in messages)
            and len(view) < len(messages[recorded_view_start(messages) :])
        )
        if len(view) == len(messages) and all(a is b for a, b in zip(view, messages, strict=True)):
            return request
        return request.override(messages=view)  # type: ignore[arg-type]

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(self._view(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(self._view(request))
