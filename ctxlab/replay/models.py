"""Offline chat models for driving agents and middlewares without a provider.

* :class:`ReplayModel` — the placeholder main model of a replay: it refuses to be called;
* :class:`ScriptedChatModel` / :func:`scripted_tool_model` — a fake tool-calling model that plays a
  script of assistant turns (for agent prototypes, notebooks and the sample recorder).

Both have a ``bind_tools`` that returns the model itself, as ``create_agent`` needs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models import ModelProfile
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["ReplayModel", "ScriptedChatModel", "scripted_tool_model"]


class ReplayModel(BaseChatModel):
    """The placeholder main model of a replay: it refuses to be called (no accidental network).

    ``profile={"max_input_tokens": N}`` when built with ``context_window=N``, so the middleware
    sees the capacity it would see live.  ``bind_tools`` returns the model itself.
    """

    @property
    def _llm_type(self) -> str:
        return "ctxlab-replay"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        raise RuntimeError(
            "ctxlab replay: the placeholder model was invoked; the recorded response is returned by "
            "the replay handler and no model may be called during a replay"
        )

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReplayModel:
        return self

    @classmethod
    def create(cls, context_window: int | None = None) -> ReplayModel:
        profile: ModelProfile | None = {"max_input_tokens": int(context_window)} if context_window else None
        return cls(profile=profile)


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a plan: a generator of AIMessages.

    Before each model call the generator is sent the contents of the ToolMessages that answered
    the previous AIMessage (in tool-call order), so that a plan can use real tool output (a line
    number found by grep, say) in its next arguments. ``bind_tools`` returns the model itself.
    """

    plan: Any
    started: bool = False
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        results = _results_of_last_ai(messages)
        try:
            if self.started:
                message = self.plan.send(results)
            else:
                self.started = True
                message = next(self.plan)
        except StopIteration as exc:
            raise RuntimeError("the scripted plan has no more assistant turns") from exc
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=message.model_copy(deep=True))])


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
                tool_calls.append(
                    {"name": name, "args": dict(args), "id": f"call_{n:03d}", "type": "tool_call"}
                )
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
