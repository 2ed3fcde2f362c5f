"""What a provider's context-overflow error says about its window, and the size the one retry
after an overflow aims at (spec R12).

Providers state the window (and often the size they counted) in the error text.  Each entry of
:data:`OVERFLOW_MESSAGES` reads one provider's message; :func:`read_overflow` tries them in order
and answers ``None`` for a text that states no window (OpenAI Responses' "Your input exceeds the
context window of this model", Bedrock's "Input is too long for requested model").

**The window is input plus reply** (issue 30).  Most servers refuse a request whose input plus
the reply's reserve (``max_tokens`` / ``max_output_tokens`` of the request) exceeds the context
length; some errors say how much was reserved (vLLM's "you requested N output tokens", OpenAI's
"(X in the messages, Y in the completion)", Anthropic's "input length and `max_tokens` exceed
context limit: X + Y > M"), and the window read is then the input's share.  When an error states
a shared window but not the reserve, :func:`retry_target` subtracts the reserve the caller knows.

:func:`retry_target` combines what is known: a share of the estimate that overflowed (the
overflow itself proves the request was too big), the model's input capacity (its
``max_input_tokens`` profile less the reply's reserve), and the window the error states,
rescaled to ctxlab's estimate when the provider also says how many tokens it counted (our
estimate may count fewer tokens than the provider's tokenizer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

__all__ = [
    "OVERFLOW_MESSAGES",
    "OVERFLOW_RETRY_SHARE",
    "OverflowWindow",
    "RetryTarget",
    "read_overflow",
    "retry_target",
]

#: after an overflow, the retry aims at this share of the estimate that overflowed (R12: the
#: overflow itself says that the request was too big; the capacity may be unknown or wrong)
OVERFLOW_RETRY_SHARE = 0.75


class OverflowWindow(NamedTuple):
    """What an overflow error states.

    Attributes:
        provider: which entry of :data:`OVERFLOW_MESSAGES` read it.
        window_tokens: the tokens the provider accepts as input (its window, less the completion
            tokens the request reserved when the error says so).
        counted_tokens: the input tokens the provider counted for the refused request, ``None``
            when the error does not say.
        reserve_tokens: the completion tokens the error says the request reserved (already
            subtracted from ``window_tokens``); ``None`` when it does not say.
        shared: the stated window holds the reply too (a context length), so a reserve the
            error does not state still comes off it; ``False`` for an input-only limit (Gemini's).
    """

    provider: str
    window_tokens: int
    counted_tokens: int | None
    reserve_tokens: int | None = None
    shared: bool = True


def _num(text: str) -> int:
    return int(text.replace(",", "").replace("_", ""))


def _anthropic(m: re.Match[str]) -> OverflowWindow:
    return OverflowWindow("anthropic", _num(m["window"]), _num(m["counted"]))


def _reserved(provider: str) -> Callable[[re.Match[str]], OverflowWindow]:
    """A reader of an error that states the window, the reply's reserve and the input counted:
    the input may use the window less the reserve."""

    def read(m: re.Match[str]) -> OverflowWindow:
        reserve = _num(m["reserve"])
        return OverflowWindow(provider, _num(m["window"]) - reserve, _num(m["counted"]), reserve)

    return read


def _openai(m: re.Match[str]) -> OverflowWindow:
    # "... you requested N tokens (X in the messages, Y in the completion)": the input may use
    # the window less the completion the request reserved
    window = _num(m["window"])
    if m["prompt"] is not None and m["completion"] is not None:
        completion = _num(m["completion"])
        return OverflowWindow("openai", window - completion, _num(m["prompt"]), completion)
    counted = m["counted"]
    return OverflowWindow("openai", window, _num(counted) if counted is not None else None)


def _gemini(m: re.Match[str]) -> OverflowWindow:
    counted = m["counted"]
    # Gemini's limit is on the input alone (the reply has a limit of its own)
    return OverflowWindow(
        "gemini", _num(m["window"]), _num(counted) if counted is not None else None, shared=False
    )


def _xai(m: re.Match[str]) -> OverflowWindow:
    return OverflowWindow("xai", _num(m["window"]), _num(m["counted"]))


#: one entry per provider message shape: ``(pattern, reader)``; the first pattern that matches
#: the error text decides
OVERFLOW_MESSAGES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], OverflowWindow]]] = [
    # Anthropic: "prompt is too long: 212345 tokens > 200000 maximum"
    (
        re.compile(
            r"prompt is too long:\s*(?P<counted>\d[\d,_]*)\s*tokens?\s*>\s*(?P<window>\d[\d,_]*)\s*maximum",
            re.I,
        ),
        _anthropic,
    ),
    # Anthropic, when the reply's reserve does not fit beside the input: "input length and
    # `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or ..."
    (
        re.compile(
            r"input length and `?max_tokens`? exceed context limit:\s*(?P<counted>\d[\d,_]*)\s*\+\s*"
            r"(?P<reserve>\d[\d,_]*)\s*>\s*(?P<window>\d[\d,_]*)",
            re.I,
        ),
        _reserved("anthropic"),
    ),
    # vLLM and the servers built on it (OpenAI-compatible): "This model's maximum context length
    # is 6000 tokens. However, you requested 3000 output tokens and your prompt contains at least
    # 3001 input tokens, for a total of at least 6001 tokens."
    (
        re.compile(
            r"maximum context length is (?P<window>\d[\d,_]*) tokens.{0,40}?requested (?P<reserve>\d[\d,_]*) "
            r"output tokens and your prompt contains (?:at least )?(?P<counted>\d[\d,_]*) input tokens",
            re.I | re.S,
        ),
        _reserved("vllm"),
    ),
    # OpenAI chat completions, and the servers that copy its text (vLLM, DeepSeek, Together):
    # "This model's maximum context length is 8192 tokens. However, your messages resulted in
    # 9000 tokens." / "... However, you requested 4569 tokens (3545 in your prompt; 1024 for the
    # completion)." / "(4000 in the messages, 1000 in the completion)"
    (
        re.compile(
            r"maximum context length is (?P<window>\d[\d,_]*) tokens"
            r"(?:.*?(?:resulted in|requested) (?P<counted>\d[\d,_]*) tokens"
            r"(?:\s*\((?P<prompt>\d[\d,_]*) in (?:your prompt|the messages)[;,]\s*"
            r"(?P<completion>\d[\d,_]*) (?:for|in) the completion\))?)?",
            re.I | re.S,
        ),
        _openai,
    ),
    # Gemini: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
    (
        re.compile(
            r"(?:input token count \((?P<counted>\d[\d,_]*)\)\s*)?"
            r"exceeds the maximum number of tokens allowed \((?P<window>\d[\d,_]*)\)",
            re.I,
        ),
        _gemini,
    ),
    # xAI: "This model's maximum prompt length is 131072 but the request contains 136973 tokens."
    (
        re.compile(
            r"maximum prompt length is (?P<window>\d[\d,_]*)\D{0,40}?request contains (?P<counted>\d[\d,_]*) tokens",
            re.I,
        ),
        _xai,
    ),
]


def read_overflow(error: BaseException | str) -> OverflowWindow | None:
    """The window a context-overflow error states (R12), or ``None`` when its text states none.

    ``error`` is the provider's exception or the error text.  Of an exception, its ``str`` and
    the provider SDK's attributes that carry the message are read: ``message`` and ``body``
    (Anthropic, OpenAI), ``details`` (Google GenAI), and the exception it was raised from
    (``__cause__``: LangChain's provider packages re-raise the SDK's error).  A stated window
    that is not positive is ignored.
    """
    for text in _texts(error):
        for pattern, reader in OVERFLOW_MESSAGES:
            m = pattern.search(text)
            if m is not None:
                found = reader(m)
                if found.window_tokens > 0:
                    return found
    return None


def _texts(error: BaseException | str) -> list[str]:
    """The texts :func:`read_overflow` reads of ``error``."""
    if isinstance(error, str):
        return [error]
    out: list[str] = []
    for exc in (error, error.__cause__):
        if exc is None:
            continue
        out.append(str(exc))
        for attr in ("message", "body", "details"):
            value = getattr(exc, attr, None)
            if value:
                out.append(str(value))
    return out


class RetryTarget(NamedTuple):
    """The size the retry after an overflow aims at (tokens of ctxlab's estimate) and where it
    came from: ``"error"`` (the window the provider's error states), ``"capacity"`` (the model's
    ``max_input_tokens`` less the reply's reserve) or ``"estimate"``
    (:data:`OVERFLOW_RETRY_SHARE` of the estimate that overflowed)."""

    tokens: int
    source: Literal["error", "capacity", "estimate"]


def retry_target(
    overflowed: int, capacity: int | None, stated: OverflowWindow | None, reserve: int = 0
) -> RetryTarget:
    """The smallest of: the share of the ``overflowed`` estimate, the model's input ``capacity``
    (``max_input_tokens`` less the reply's reserve) and the window ``stated`` by the error (R12;
    tokens).

    ``reserve``: the reply's reserve of the request (``max_tokens``; 0 when unknown).  A stated
    window shared with the reply whose error does not state the reserve has ``reserve`` taken
    off (issue 30: the window is input plus reply).  A stated window is then rescaled to
    ctxlab's estimate by ``overflowed / counted_tokens`` when the provider counted more tokens
    than the estimate (so a window of 3,000 provider tokens is 2,000 estimated tokens when the
    provider counted 4,500 for an estimate of 3,000).  Ties go to the error, then the capacity.
    """
    candidates: list[RetryTarget] = []
    if stated is not None:
        window = stated.window_tokens
        if stated.shared and stated.reserve_tokens is None and 0 < reserve < window:
            window -= reserve
        if stated.counted_tokens is not None and stated.counted_tokens > overflowed > 0:
            window = int(window * overflowed / stated.counted_tokens)
        candidates.append(RetryTarget(max(1, window), "error"))
    if capacity is not None:
        candidates.append(RetryTarget(capacity, "capacity"))
    candidates.append(RetryTarget(int(overflowed * OVERFLOW_RETRY_SHARE), "estimate"))
    return min(candidates, key=lambda c: c.tokens)
