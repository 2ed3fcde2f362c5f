"""The window is input plus reply (issue 30, item 3).

A server refuses a request whose input *plus the reply's reserve* (``max_tokens`` /
``max_output_tokens`` of the request or the model) exceeds its context length.  The model's input
capacity is therefore its ``max_input_tokens`` less the reserve: the overflow tail trim (R12:
"the kept window exceeds the model's context capacity"), the retry target and the reading of a
provider's overflow error all take the reserve into account, and the wordings that name it
(vLLM / OpenAI-compatible "requested N output tokens", Anthropic "input length and `max_tokens`
exceed context limit") are parsed.

The fake provider counts a request with the middleware's own estimator (``CharClassEstimator``)
and refuses it, in the named provider's words, when count + reserve exceeds its window.  Real
parts: the middleware's round through ``ModelNodeHarness``, and a real ``create_agent`` loop with
a checkpointer and a middleware that sets ``model_settings``.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ConfigDict, Field

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.overflow import OVERFLOW_RETRY_SHARE, read_overflow, retry_target

EST = CharClassEstimator()
WINDOW, RESERVE = 6000, 3000


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


def count(view) -> int:
    return sum(EST.message_tokens(m) for m in view)


#: how each server words the refusal of ``input`` tokens with ``reserve`` reserved in ``window``
WORDINGS = {
    "vllm": lambda window, reserve, n: (
        f"This model's maximum context length is {window} tokens. However, you requested {reserve} "
        f"output tokens and your prompt contains at least {n} input tokens, for a total of at least "
        f"{n + reserve} tokens. Please reduce the length of the input prompt or the number of "
        f"requested output tokens. (parameter=input_tokens, value={n})"
    ),
    "anthropic": lambda window, reserve, n: (
        f"input length and `max_tokens` exceed context limit: {n} + {reserve} > {window}, decrease "
        "input length or `max_tokens` and try again"
    ),
    # a wording that states no window: only the model's capacity (less the reserve) can size the retry
    "unstated": lambda window, reserve, n: "Error code: 400 - {'code': 'context_length_exceeded'}",
}


# ------------------------------------------------------------------------------------------------
# the error parser
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "window", "counted", "reserve"),
    [
        (WORDINGS["vllm"](6000, 3000, 3001), 3000, 3001, 3000),
        (WORDINGS["vllm"](262144, 0, 262145), 262144, 262145, 0),
        (WORDINGS["anthropic"](200000, 64000, 178959), 136000, 178959, 64000),
        (
            "This model's maximum context length is 4096 tokens. However, you requested 4297 tokens "
            "(3297 in the messages, 1000 in the completion). Please reduce the length.",
            3096,
            3297,
            1000,
        ),
    ],
)
def test_errors_that_name_the_reply_reserve_give_the_inputs_share(text, window, counted, reserve):
    # spec: R12 — the window an error states is the input's share: the reply's reserve comes off
    found = read_overflow(ContextOverflowError(text))
    assert found is not None
    assert (found.window_tokens, found.counted_tokens, found.reserve_tokens) == (window, counted, reserve)


def test_a_shared_window_without_the_reserve_has_the_known_reserve_taken_off():
    # "prompt is too long: N > M" states the context length only: the reserve the request made
    # still has to fit in it; Gemini's limit is the input's alone
    anthropic = read_overflow("prompt is too long: 9000 tokens > 6000 maximum")
    assert retry_target(8000, None, anthropic, RESERVE).tokens == int(3000 * 8000 / 9000)
    gemini = read_overflow(
        "The input token count (9000) exceeds the maximum number of tokens allowed (6000)."
    )
    assert retry_target(8000, None, gemini, RESERVE).tokens == int(6000 * 8000 / 9000)
    # a reserve the error states is not taken off twice
    vllm = read_overflow(WORDINGS["vllm"](6000, 3000, 7000))
    assert retry_target(8000, None, vllm, RESERVE).tokens == 3000


# ------------------------------------------------------------------------------------------------
# the round: capacity and retry target less the reserve
# ------------------------------------------------------------------------------------------------


class ReservingModel(BaseChatModel):
    """A chat model that reserves ``max_tokens`` for its reply (as ``ChatAnthropic`` and
    ``ChatOpenAI`` do), with a profile; it records what it receives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    max_tokens: int | None = None
    received: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "reserving"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.received.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage("done"))])


def provider(wording: str, reserve: int = RESERVE):
    """``Driver.round``'s overflow rule: refuse when the input plus the reserve exceeds the window."""

    def overflow(n, view, system):
        c = count(view)
        return ContextOverflowError(WORDINGS[wording](WINDOW, reserve, c)) if c + reserve > WINDOW else False

    return overflow


def results_history(kit) -> list:
    """A request and five tool results of ~900 tokens: ~4,800 tokens, below T, above the input's
    share of a 6,000-token window with 3,000 reserved."""
    msgs = [HumanMessage(kit.fill(600, "FACT-TASK read the five logs", seed=1), id="h0")]
    for i in range(5):
        msgs += kit.tool_pair(
            f"c{i}", "read_log", kit.fill(3800, f"FACT-LOG{i}", seed=10 + i), ai_id=f"a{i}", tool_id=f"t{i}"
        )
    return msgs


#: L1 leaves ~900-token results whole (limit 2,000); nothing can be cut (keep 20): the retry is the
#: L1 view trimmed toward the retry target
SETTINGS = CompressionSettings(
    summary_threshold=100, summary_keep_messages=20, summary_tool_result_token_limit=2000
)


@pytest.mark.parametrize("wording", ["vllm", "anthropic", "unstated"])
def test_the_retry_fits_the_input_share_of_the_window(mw_kit, tmp_path, mode, wording):
    # spec: R12 — the overflow below T forces L1 and one retry; trimmed toward the window less the
    # reply's reserve, the retry is accepted (before issue 30 it aimed at the whole window,
    # overflowed again and the error reached the agent)
    msgs = results_history(mw_kit)
    assert WINDOW - RESERVE < count(msgs) < SETTINGS.entry_threshold_tokens
    model = ReservingModel(max_tokens=RESERVE, profile={"max_input_tokens": WINDOW})
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path))
    rec = mw_kit.Driver(mw, msgs, mode=mode, model=model).round(overflow=provider(wording))
    assert rec["exc"] is None, rec["exc"]
    assert [c["raised"] for c in rec["calls"]] == ["ContextOverflowError", None]
    assert count(rec["calls"][1]["messages"]) + RESERVE <= WINDOW
    stats = mw_kit.ctx_events(rec)[-1]["stats"]
    assert stats["retry_target_tokens"] <= WINDOW - RESERVE
    assert stats["capacity_tokens"] == WINDOW - RESERVE and stats["reply_reserve_tokens"] == RESERVE


def test_without_a_reserve_the_capacity_is_the_whole_window(mw_kit, tmp_path, mode):
    # the counterpart: a model that reserves nothing may use the whole window
    msgs = results_history(mw_kit)
    model = ReservingModel(profile={"max_input_tokens": WINDOW})
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path))
    rec = mw_kit.Driver(mw, msgs, mode=mode, model=model).round(overflow=provider("unstated", reserve=0))
    assert rec["exc"] is None and len(rec["calls"]) == 1
    assert "capacity_tokens" not in (mw_kit.ctx_events(rec) or [{"stats": {}}])[-1].get("stats", {})


# ------------------------------------------------------------------------------------------------
# a real agent loop: the reserve set in model_settings by another middleware
# ------------------------------------------------------------------------------------------------


class ReserveSetter(AgentMiddleware):
    """Sets ``model_settings={"max_tokens": ...}`` on every model request (outer middleware)."""

    def __init__(self, reserve: int) -> None:
        super().__init__()
        self.reserve = reserve

    def wrap_model_call(self, request, handler):
        return handler(
            request.override(model_settings={**request.model_settings, "max_tokens": self.reserve})
        )

    async def awrap_model_call(self, request, handler):
        return await handler(
            request.override(model_settings={**request.model_settings, "max_tokens": self.reserve})
        )


class VllmLikeModel(BaseChatModel):
    """Calls ``read_log`` three times, then answers; refuses, as vLLM does, a request whose input
    plus the ``max_tokens`` it was bound with exceeds its 6,000-token context length."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    bound_max_tokens: int = 0
    received: list = Field(default_factory=list)
    refused: int = 0

    @property
    def _llm_type(self) -> str:
        return "vllm-like"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self.model_copy(update={"bound_max_tokens": kwargs.get("max_tokens", 0)}) if kwargs else self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        reserve = kwargs.get("max_tokens", self.bound_max_tokens)
        n = count(messages)
        self.received.append(n)
        if n + reserve > WINDOW:
            raise ContextOverflowError(WORDINGS["vllm"](WINDOW, reserve, n))
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done >= 3:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("All three logs read."))])
        call = {"name": "read_log", "args": {"n": done}, "id": f"call-{done}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_reserve_set_in_model_settings_sizes_the_retry_in_a_real_agent(mw_kit, tmp_path, mode):
    # spec: R12 — create_agent binds the model with request.model_settings; the reserve set there
    # by another middleware is the reply's share of the window, and the agent finishes
    sizes = {0: 800, 1: 12500, 2: 10000}  # the third result lands the request well above the share

    @tool
    def read_log(n: int) -> str:
        """Read log number n."""
        return mw_kit.fill(sizes[n], f"FACT-LOG{n}", seed=20 + n)

    model = VllmLikeModel(profile={"max_input_tokens": WINDOW})
    mw = CompressionMiddleware(settings=SETTINGS, backend=mw_kit.backend(tmp_path))
    agent = create_agent(
        model=model, tools=[read_log], middleware=[ReserveSetter(RESERVE), mw], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "reserve"}}
    inputs = {"messages": [HumanMessage("Read the three logs, one call each.")]}
    out = agent.invoke(inputs, config) if mode == "sync" else asyncio.run(agent.ainvoke(inputs, config))
    assert out["messages"][-1].content == "All three logs read."
    # it overflowed once, with a request whose 75 % is still above the input's share
    assert OVERFLOW_RETRY_SHARE * max(model.received) > WINDOW - RESERVE
    assert sorted(model.received)[-2] <= WINDOW - RESERVE
