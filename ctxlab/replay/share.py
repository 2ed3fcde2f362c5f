"""What the strategies of one transcript share: the per-call work that depends on the transcript only.

A batch replays each transcript through every strategy, one run after the other.  Much of a
call's measuring does not depend on the strategy: the uncompressed request (its tokens, and
whether it is above the provider's window), whether the recorded answer mentions an identifier
of the transcript so far (the ``retention`` of a view that is still the whole history), what a
transcript message contributes to a view (tokens, view part, canonical key) and the cost of the
uncompressed requests.  A :class:`TranscriptShare` computes each of those once per transcript
call, for the first run that reaches the call, and gives the same value to every later run
(issue 31: five strategies should cost far less than five times one).  Work that depends on the
requests only is shared between runs whose requests agree: the view measures, retention and
broken tool pairs of a call whose request and previous request are the very same objects as
another run's (:class:`ctxlab.replay.tracking.SharedView`, kept under :meth:`TranscriptShare.state`
``"views"``), and the costs of a run whose calls equal another run's (:meth:`TranscriptShare.run_value`).

Every run of a transcript sees the same arrivals at the same call index (the observer feeds the
same recorded messages in the same order), except the ``recorded`` strategy, which also feeds
the agent's own compactions: :meth:`ctxlab.replay.engine._Batch.share` keeps one share per
``(transcript, feeds recorded compactions)``.  A run asks for call *k* only after asking for
every call before it, so a value computed from state kept in the share (a running sum, a
running tally) is computed in call order exactly once, whichever run reaches the call first.

Bounded: a batch keeps the share of the transcript it is replaying only; a share holds one value
per call and name, one :class:`MessageInfo` per message object measured in a view, at most
:data:`~ctxlab.replay.tracking.SHARED_VIEWS` measured views per call (each its two requests'
message lists and its measures: a few times the transcript's calls × their view lengths), and
the costs of each distinct run (the uncompressed one's once per distinct run length).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

__all__ = ["MessageInfo", "TranscriptShare", "TranscriptShares"]

T = TypeVar("T")


@dataclass(frozen=True)
class MessageInfo:
    """What a view message contributes to a request (:class:`ctxlab.replay.tracking.ViewTracker`):
    its tokens (the measuring estimator), view part, canonical key, and whether its identifiers
    count for retention (system messages inside the view do not).  Depends on the message only."""

    tokens: int
    part: str
    key: tuple[Any, ...]
    counted: bool


@dataclass
class TranscriptShare:
    """The per-call values the runs of one transcript share (module docstring).

    Attributes:
        computed: how many times each named value was computed (a test reads it: once per call
            for the batch, not once per strategy).
        reused: how many times a run took a value another run computed.
    """

    computed: Counter[str] = field(default_factory=Counter)
    reused: Counter[str] = field(default_factory=Counter)
    _calls: dict[str, dict[int, Any]] = field(default_factory=dict)
    _state: dict[str, Any] = field(default_factory=dict)
    _messages: dict[int, tuple[BaseMessage, MessageInfo]] = field(default_factory=dict)
    _runs: dict[Hashable, Any] = field(default_factory=dict)

    def call_value(self, name: str, call_index: int, compute: Callable[[], T]) -> T:
        """The value ``name`` of call ``call_index``: ``compute()`` for the first run that asks,
        the same value for every later run of the transcript.  ``compute`` must give the same
        value for every run (it depends on the transcript's calls up to ``call_index`` only)."""
        values = self._calls.setdefault(name, {})
        if call_index in values:
            self.reused[name] += 1
            return values[call_index]  # type: ignore[no-any-return]
        self.computed[name] += 1
        value = values[call_index] = compute()
        return value

    def state(self, name: str, make: Callable[[], T]) -> T:
        """A running state of the share (made by ``make`` once): what a value computed in call
        order (:meth:`call_value`) grows call by call, such as a running tally."""
        if name not in self._state:
            self._state[name] = make()
        return self._state[name]  # type: ignore[no-any-return]

    def message(self, message: BaseMessage, make: Callable[[BaseMessage], MessageInfo]) -> MessageInfo:
        """:class:`MessageInfo` of a message object, made once for every run of the transcript
        (by identity; the object is kept alive with its entry, so a recycled ``id()`` never
        finds another message's entry)."""
        entry = self._messages.get(id(message))
        if entry is not None and entry[0] is message:
            self.reused["message"] += 1
            return entry[1]
        self.computed["message"] += 1
        info = make(message)
        self._messages[id(message)] = (message, info)
        return info

    def run_value(self, key: Hashable, compute: Callable[[], T]) -> T:
        """A value of a whole run that depends on ``key`` only (the uncompressed run's costs,
        keyed by its calls' token counts): computed once per distinct key."""
        if key in self._runs:
            self.reused["run"] += 1
            return self._runs[key]  # type: ignore[no-any-return]
        self.computed["run"] += 1
        value = self._runs[key] = compute()
        return value


@dataclass
class TranscriptShares:
    """The shares of the transcript a batch is replaying (:class:`ctxlab.replay.engine._Batch`):
    one per transcript label and kind of feed (the ``recorded`` strategy, which replays the
    agent's own compactions, is fed other messages); only the current transcript's are kept."""

    current: dict[tuple[str, bool], TranscriptShare] = field(default_factory=dict)

    def of(self, label: str, middleware: Any) -> TranscriptShare:
        """The share of a run of transcript ``label`` through ``middleware``."""
        feeds = bool(getattr(middleware, "replays_recorded_compactions", False))
        if any(key[0] != label for key in self.current):
            self.current.clear()
        return self.current.setdefault((label, feeds), TranscriptShare())
