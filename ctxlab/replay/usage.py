"""How many calls and tokens a foreign middleware's summarizer spent during one replayed call.

ctxlab's own middleware reports its summarizer usage in its ``context_compression`` events; a
baseline from another framework reports nothing, so the replay counts the chat-model calls made
while it handles a call with a LangChain callback handler that LangChain adds to every model
invoked in the context of :func:`count_summarizer_usage` (``register_configure_hook``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

if TYPE_CHECKING:
    from ctxlab.core.estimation import EstimateCache

__all__ = ["SummarizerUsage", "count_summarizer_usage"]


class SummarizerUsage(BaseCallbackHandler):
    """Counts the chat-model calls made while a foreign middleware handles one model call (its
    summarizer: the main model of a replay is never called) and their tokens.

    Attributes:
        calls: chat-model calls that ended (errors included).
        input_tokens, output_tokens: their tokens (tokens, not characters).
        estimated: ``True`` when any of those tokens was estimated rather than reported.

    Tokens are the provider's ``usage_metadata`` when the response reports it; otherwise they
    are estimated with the replay's measuring estimator: the prompt messages as input, the
    response message as output (``estimated`` is then ``True``).
    """

    raise_error = False

    def __init__(self, measure: EstimateCache) -> None:
        self.measure = measure
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.estimated = False
        self._prompts: dict[Any, list[BaseMessage]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], *, run_id: Any, **kwargs: Any
    ) -> None:
        self._prompts[run_id] = [m for batch in messages for m in batch]

    def on_llm_start(self, serialized: Any, prompts: list[str], *, run_id: Any, **kwargs: Any) -> None:
        self._prompts[run_id] = [HumanMessage(content=p) for p in prompts]

    def on_llm_end(self, response: LLMResult, *, run_id: Any, **kwargs: Any) -> None:
        prompt = self._prompts.pop(run_id, [])
        self.calls += 1
        for batch in response.generations:
            for gen in batch:
                message = getattr(gen, "message", None)
                usage = getattr(message, "usage_metadata", None)
                if usage:
                    self.input_tokens += int(usage.get("input_tokens") or 0)
                    self.output_tokens += int(usage.get("output_tokens") or 0)
                    prompt = []  # the prompt is counted in the provider's input tokens
                    continue
                self.estimated = True
                out = message if isinstance(message, BaseMessage) else AIMessage(content=gen.text)
                self.output_tokens += self.measure.message_tokens(out)
        if prompt:
            self.estimated = True
            self.input_tokens += sum(self.measure.message_tokens(m) for m in prompt)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._prompts.pop(run_id, None)
        self.calls += 1


#: the usage counter of the call being replayed; LangChain adds it to the callbacks of every
#: model invoked in this context (``register_configure_hook``), whatever config the caller passes
_USAGE: ContextVar[SummarizerUsage | None] = ContextVar("ctxlab_replay_summarizer_usage", default=None)
register_configure_hook(_USAGE, inheritable=True)


@contextmanager
def count_summarizer_usage(measure: EstimateCache) -> Iterator[SummarizerUsage]:
    """A fresh :class:`SummarizerUsage` counting every chat model invoked inside the ``with``
    block (in this context and the tasks and threads it starts); ``measure`` estimates what the
    provider does not report."""
    usage = SummarizerUsage(measure)
    token = _USAGE.set(usage)
    try:
        yield usage
    finally:
        _USAGE.reset(token)
