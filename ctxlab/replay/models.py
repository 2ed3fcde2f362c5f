"""Offline chat models for driving agents and middlewares without a provider.

* :class:`ReplayModel` — the placeholder main model of a replay: it refuses to be called;
* :class:`ScriptedChatModel` / :func:`scripted_tool_model` — a fake tool-calling model that plays a
  script of assistant turns (for agent prototypes, notebooks and the sample recorder); their home
  is :mod:`ctxlab.testing` (no lab packages needed), re-exported here;
* :class:`RecordedChatModel` — a provider stand-in for a *live* agent: it answers with recorded
  assistant messages in order and, given a :class:`~ctxlab.replay.provider.ContextWindow`,
  refuses a request above the window with ``ContextOverflowError`` as a provider would (the
  differential test runs ``create_agent`` with it against a replay).

``ReplayModel`` and ``ScriptedChatModel`` have a ``bind_tools`` that returns the model itself, as
``create_agent`` needs; ``RecordedChatModel.bind_tools`` returns a copy that remembers the tools
(a provider counts their schemas).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import ModelProfile
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from ctxlab.testing import AnsweringChatModel, ScriptedChatModel, scripted_tool_model

__all__ = [
    "RecordedChatModel",
    "ReplayModel",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "scripted_tool_model",
]


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
        """A fresh model with ``profile={"max_input_tokens": context_window}`` (``None``: no
        profile).  A copy of one validated model per window (a replay makes one per run, and
        LangChain's validation of a profile costs more than the rest of a short run's setup);
        each copy has its own profile dict."""
        window = int(context_window) if context_window else None
        template = _TEMPLATES.get((cls, window))
        if template is None:
            profile: ModelProfile | None = {"max_input_tokens": window} if window is not None else None
            template = _TEMPLATES[(cls, window)] = cls(profile=profile)
        profile_copy = dict(template.profile) if template.profile is not None else None
        return template.model_copy(update={"profile": profile_copy})


_TEMPLATES: dict[tuple[type[ReplayModel], int | None], ReplayModel] = {}


class ScriptExhaustedError(RuntimeError):
    """A :class:`RecordedChatModel` was called after its last recorded answer."""


class RecordedChatModel(AnsweringChatModel):
    """A live provider stand-in: each successful call answers with the next recorded ``AIMessage``.

    Args (fields):
        answers: the recorded assistant messages, in call order (returned as deep copies, ids kept).
        window: a :class:`~ctxlab.replay.provider.ContextWindow`; a request it counts above its
            ``max_input_tokens`` raises ``ContextOverflowError`` and consumes no answer (the agent's
            middleware retries with a smaller request, as against a provider).  ``None``: no limit.
        bound_tools: the tools of :meth:`bind_tools` (counted by ``window``).

    ``profile["max_input_tokens"]`` is the window when one is given, as a provider model's profile.
    Every request received (refused ones too) is kept in :attr:`requests` as the message list the
    model received (the system message first, when there is one); :attr:`requests` and the answer
    cursor are shared with the copies :meth:`bind_tools` makes.

    Raises (on invoke):
        ContextOverflowError: the request is above the window.
        ScriptExhaustedError: no recorded answer is left.
    """

    # repr=False: LangChain serializes a model's repr on every call (callbacks), which would
    # make each call as slow as the run is long
    answers: list[AIMessage] = Field(repr=False)
    window: Any = Field(default=None, repr=False)
    bound_tools: list[Any] = Field(default_factory=list, repr=False)
    requests: list[list[BaseMessage]] = Field(default_factory=list, repr=False)
    cursor: list[int] = Field(default_factory=lambda: [0], repr=False)

    def model_post_init(self, context: Any) -> None:
        if self.window is not None and self.profile is None:
            self.profile = {"max_input_tokens": int(self.window.max_input_tokens)}

    @property
    def _llm_type(self) -> str:
        return "ctxlab-recorded"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordedChatModel:
        return self.model_copy(update={"bound_tools": list(tools)})

    def _next_answer(self, messages: list[BaseMessage]) -> AIMessage:
        system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        rest = list(messages[1:]) if system is not None else list(messages)
        self.requests.append(list(messages))
        if self.window is not None:
            self.window.check(system, self.bound_tools, rest)
        if self.cursor[0] >= len(self.answers):
            raise ScriptExhaustedError(f"no recorded answer left after {len(self.answers)} calls")
        message = self.answers[self.cursor[0]]
        self.cursor[0] += 1
        return message
