"""Offline prototyping: a scripted chat model that stands in for a provider, no API key needed.

:class:`ScriptedChatModel` is a LangChain ``BaseChatModel`` whose ``bind_tools`` returns itself
(so ``create_agent`` and ``create_deep_agent`` accept it, unlike LangChain's
``GenericFakeChatModel``, whose ``bind_tools`` raises ``NotImplementedError``) and whose every call
answers with the next turn of a script: a text, a tool call, several parallel tool calls, or an
``AIMessage`` as it is.  A call made by ctxlab's summarizer (run metadata
:data:`ctxlab.core.marks.SUMMARIZER_ROLE_METADATA`) is answered with :attr:`ScriptedChatModel.
summary` and does not use a turn, so the agent's own model can summarize (``summarizer=None``)::

    from ctxlab.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel.from_turns(
        [tool_call("read_file", path="README.md"), "The README says hello."]
    )

Only langchain-core is needed (no lab packages): ``import ctxlab.testing`` pulls neither polars
nor matplotlib.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ctxlab.core.marks import SUMMARIZER_ROLE_METADATA

__all__ = [
    "AnsweringChatModel",
    "ScriptedChatModel",
    "Turn",
    "scripted_tool_model",
    "tool_call",
]

#: one scripted turn: a text answer, one tool call, several (parallel) tool calls, or a message
Turn = str | ToolCall | Sequence[ToolCall] | AIMessage


class AnsweringChatModel(BaseChatModel):
    """A chat model whose every call answers with the next ``AIMessage`` of a script, returned as a
    deep copy (so that the caller's edits never reach the script); subclasses say where the next
    answer comes from (:meth:`_next_answer`, which may raise to refuse the call)."""

    @abstractmethod
    def _next_answer(self, messages: list[BaseMessage]) -> AIMessage:
        """The answer to the request ``messages`` (the system message first, when there is one)."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next_answer(messages)
        return ChatResult(generations=[ChatGeneration(message=message.model_copy(deep=True))])


def tool_call(name: str, id: str | None = None, **args: Any) -> ToolCall:
    """One tool call of a scripted turn: ``tool_call("read_file", path="a.py")``.

    ``id``: the tool-call id; ``None``: ``call_001``, ``call_002``, ... in script order
    (:meth:`ScriptedChatModel.from_turns` numbers them).
    """
    return ToolCall(name=name, args=dict(args), id=id, type="tool_call")


class ScriptedChatModel(AnsweringChatModel):
    """A chat model that replays a plan: a generator of AIMessages.

    Before each model call the generator is sent the contents of the ToolMessages that answered
    the previous AIMessage (in tool-call order), so that a plan can use real tool output (a line
    number found by grep, say) in its next arguments. ``bind_tools`` returns the model itself.
    :meth:`from_turns` builds one from a list of turns.

    Attributes:
        plan: the generator of assistant turns.
        summary: the reply to a summarizer call (one made with ctxlab's summarizer metadata); it
            uses no turn of the plan.
        calls: the agent calls answered so far (summarizer calls not counted).
        summary_calls: the summarizer calls answered so far.

    Raises (on invoke):
        RuntimeError: the plan has no more assistant turns.
    """

    plan: Any
    summary: str = (
        "Task: the user's request. Work done: the scripted turns so far. Current state: continuing."
    )
    started: bool = False
    calls: int = 0
    summary_calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    @classmethod
    def from_turns(cls, turns: Sequence[Turn], **fields: Any) -> ScriptedChatModel:
        """A model answering with ``turns`` in order, one per call.

        Args:
            turns: each a text (an answer without tool calls), a :func:`tool_call`, a list of them
                (parallel calls in one turn) or an ``AIMessage`` (sent as it is). Tool calls
                without an id get ``call_001``, ``call_002``, ...
            fields: other fields (``summary=``, ``profile=``).

        Raises:
            TypeError: a turn is none of these (its position is named).
        """
        messages: list[AIMessage] = []
        n = 0
        for i, turn in enumerate(turns):
            if isinstance(turn, AIMessage):
                messages.append(turn)
                continue
            if isinstance(turn, str):
                messages.append(AIMessage(content=turn))
                continue
            calls: list[Any] = (
                [turn] if isinstance(turn, dict) else list(turn) if isinstance(turn, Sequence) else []
            )
            if not calls or not all(isinstance(c, dict) and "name" in c for c in calls):
                raise TypeError(
                    f"turns[{i}]: expected a text, a tool_call(...), a list of them or an AIMessage, "
                    f"got {turn!r}"
                )
            numbered = []
            for c in calls:
                n += 1
                numbered.append(
                    ToolCall(
                        name=c["name"], args=dict(c.get("args") or {}), id=c.get("id") or f"call_{n:03d}"
                    )
                )
            messages.append(AIMessage(content="", tool_calls=numbered))

        def plan() -> Iterator[AIMessage]:
            for message in messages:  # noqa: UP028 - a list iterator has no ``send``
                yield message

        return cls(plan=plan(), **fields)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        metadata = getattr(run_manager, "metadata", None) or {}
        if all(metadata.get(k) == v for k, v in SUMMARIZER_ROLE_METADATA.items()):
            self.summary_calls += 1
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.summary))])
        return super()._generate(messages, stop, run_manager, **kwargs)

    def _next_answer(self, messages: list[BaseMessage]) -> AIMessage:
        results = _results_of_last_ai(messages)
        try:
            if self.started:
                message: AIMessage = self.plan.send(results)
            else:
                self.started = True
                message = next(self.plan)
        except StopIteration as exc:
            raise RuntimeError("the scripted plan has no more assistant turns") from exc
        self.calls += 1
        return message


def scripted_tool_model(
    turns: Sequence[Sequence[tuple[str, dict[str, Any]]]],
    *,
    final: str = "Done.",
    say: str = "",
) -> ScriptedChatModel:
    """A fake chat model for agent prototypes: each call returns the next scripted turn.

    Args:
        turns: one entry per model call; each a list of ``(tool name, args)`` calls made in that
            turn (several calls in one turn are parallel tool calls).
        final: the text of the last turn (no tool calls), which ends the agent loop.
        say: text the model says with each tool-calling turn (``{i}`` is the turn number).

    Returns:
        A :class:`ScriptedChatModel` (``bind_tools`` returns itself) whose plan ignores the tool
        results; tool-call ids are ``call_001``, ``call_002``, ...
    """

    def plan() -> Iterator[AIMessage]:
        n = 0
        for i, calls in enumerate(turns, 1):
            tool_calls = []
            for name, args in calls:
                n += 1
                tool_calls.append(ToolCall(name=name, args=dict(args), id=f"call_{n:03d}", type="tool_call"))
            yield AIMessage(content=say.format(i=i), tool_calls=tool_calls)
        yield AIMessage(content=final)

    return ScriptedChatModel(plan=plan())


def _results_of_last_ai(messages: list[BaseMessage]) -> list[str]:
    for i in range(len(messages) - 1, -1, -1):
        ai = messages[i]
        if isinstance(ai, AIMessage):
            by_id = {m.tool_call_id: m.text for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
            return [by_id.get(tc["id"] or "", "") for tc in ai.tool_calls]
    return []
