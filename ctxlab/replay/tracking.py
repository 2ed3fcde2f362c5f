"""The replay's per-call measurements, kept up to date call by call instead of rescanning each view.

Consecutive requests of a run mostly share their messages: the view of call *n + 1* is the view
of call *n* plus the messages that arrived since, except where a compression round replaced some.
:class:`ViewTracker` therefore works on what changed:

* each message object is measured once (its tokens by the measuring estimator, its view part,
  its canonical key, its identifiers), remembered by identity;
* the part sums and the identifiers present in the view (a count per identifier) follow the
  messages that entered or left the view (by identity); the identifier counts only from the
  first call whose view is not the run's history as it is (the very same objects, in order):
  until then the view holds exactly the earlier messages, so ``retention`` is 1 when the
  assistant mentions an earlier identifier and ``None`` otherwise, and only the earlier texts
  holding one of the assistant's identifiers are scanned
  (:class:`~ctxlab.replay.identifiers.EarlierIdentifiers`);
* the tokens and canonical keys of the view messages are reused up to the first message that
  is not the very same object as in the previous view.

The results are those of the plain functions of :mod:`ctxlab.replay.metrics` (:func:`view_parts`,
:func:`request_keys`, :func:`cache_reusable_tokens`, :func:`retention`) on the same views;
``tests/test_replay_tracking.py`` checks this call by call.  All token values are tokens of the
measuring estimator (``int``).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab.core.estimation import EstimateCache
from ctxlab.replay.identifiers import EarlierIdentifiers
from ctxlab.replay.metrics import (
    MESSAGES_CACHED,
    VIEW_PARTS,
    IdentifierIndex,
    RequestView,
    canonical_key,
    common_prefix,
    message_part,
    tools_key,
)
from ctxlab.replay.share import MessageInfo, TranscriptShare

__all__ = ["PairsTracker", "SharedView", "ViewMeasures", "ViewTracker"]

#: the measured views kept per transcript call for the other runs (distinct views of one call)
SHARED_VIEWS = 3


@dataclass
class ViewMeasures:
    """The measurements of one request (see :class:`ViewTracker`).

    Attributes:
        parts: tokens per :data:`~ctxlab.replay.metrics.VIEW_PARTS` (``system`` includes the tool
            schemas), as :func:`~ctxlab.replay.metrics.view_parts`.
        tokens: their sum: the request's tokens.
        keys: :func:`~ctxlab.replay.metrics.request_keys` of the request (system, tools, messages).
        segment_tokens: tokens of the same segments, in the same order (system message, tool
            schemas, then each view message).
        reusable: :func:`~ctxlab.replay.metrics.cache_reusable_tokens` against the previous request
            of the run (0 for the first).
    """

    parts: dict[str, int]
    tokens: int
    keys: list[Any]
    segment_tokens: list[int]
    reusable: int
    _segments: tuple[tuple[Any, int], ...] | None = field(default=None, repr=False, compare=False)

    def segments(self) -> tuple[tuple[Any, int], ...]:
        """``(key, tokens)`` per segment: what :func:`ctxlab.replay.cost.view_segments` returns
        (made once)."""
        if self._segments is None:
            self._segments = tuple(zip(self.keys, self.segment_tokens, strict=True))
        return self._segments


def _same_request(a: RequestView | None, b: RequestView | None) -> bool:
    """The same system message, tool and message objects, in order (by identity)."""
    if a is None or b is None:
        return a is b
    return (
        a.system is b.system
        and len(a.tools) == len(b.tools)
        and len(a.messages) == len(b.messages)
        and all(map(operator.is_, a.tools, b.tools))
        and all(map(operator.is_, a.messages, b.messages))
    )


@dataclass
class SharedView:
    """One run's measurements of a transcript call, kept in the share for the other runs: a run
    whose request and previous request are the very same objects (a view nothing compressed,
    or compressed alike) has the same :class:`ViewMeasures` (they depend on those two requests
    only), the same ``retention`` (the view, the answer and the earlier messages, which are the
    transcript's) and the same broken tool pairs (the view and the answered calls)."""

    call_index: int
    previous: RequestView | None
    view: RequestView
    measures: ViewMeasures
    retention: tuple[float | None] | None = None  # (value,) once measured
    pairs: int | None = None

    def matches(self, view: RequestView, previous: RequestView | None) -> bool:
        """Whether a run's call has the very same request and previous request."""
        return _same_request(self.view, view) and _same_request(self.previous, previous)


class ViewTracker:
    """Measures the successive requests of one replay run incrementally (module docstring).

    Args:
        measure: the measuring estimator.
        index: the identifier cache (shared with the run's other measures).
        max_messages: message objects remembered (then the memory starts over, which costs time,
            never correctness).
        share: what the runs of the transcript share (:class:`~ctxlab.replay.share.TranscriptShare`:
            each message's :class:`~ctxlab.replay.share.MessageInfo` made once for all of them);
            ``None``: a share of this tracker's own.
    """

    def __init__(
        self,
        measure: EstimateCache,
        index: IdentifierIndex,
        max_messages: int = MESSAGES_CACHED,
        share: TranscriptShare | None = None,
    ):
        self.measure = measure
        self.index = index
        self.max_messages = max_messages
        self.share = share if share is not None else TranscriptShare()
        self._known: dict[int, tuple[BaseMessage, MessageInfo]] = {}
        # the previous request
        self._system: BaseMessage | None = None
        self._system_key: Any = None
        self._system_tokens = 0
        self._tools: list[Any] = []
        self._tools_key: Any = None
        self._tools_tokens = 0
        self._objects: list[int] = []  # id() of each view message (the objects are in _known)
        self._message_keys: list[Any] = []
        self._message_tokens: list[int] = []
        self._in_view: dict[int, int] = {}  # id() -> how many times the object is in the view
        self._parts = dict.fromkeys(VIEW_PARTS, 0)
        # identifiers present in the view, counted once a view differs from the history
        self._present: Counter[str] | None = None
        self._started = False
        # the call measured last by update_call(): its record, whether another run's, and the
        # requests the tracker has not followed yet (after another run's record)
        self.record: SharedView | None = None
        self.reused = False
        self._behind: tuple[RequestView | None, RequestView] | None = None

    # --- per message ----------------------------------------------------------------------------

    def _message(self, m: BaseMessage) -> MessageInfo:
        entry = self._known.get(id(m))
        if entry is not None:
            return entry[1]
        info = self.share.message(m, self._info)
        self._known[id(m)] = (m, info)
        return info

    def _info(self, m: BaseMessage) -> MessageInfo:
        return MessageInfo(
            self.measure.message_tokens(m),
            message_part(m),
            canonical_key(m),
            not isinstance(m, SystemMessage),
        )

    def _enter(self, i: int) -> None:
        m, info = self._known[i]
        self._parts[info.part] += info.tokens
        if info.counted and self._present is not None:
            self._present.update(self.index.present(m))

    def _leave(self, i: int) -> None:
        m, info = self._known[i]
        self._parts[info.part] -= info.tokens
        if info.counted and self._present is not None:
            self._present.subtract(self.index.present(m))

    def _follow(self, objects: list[int], k: int) -> None:
        """Update the part sums and identifier counts from the previous view to this one, whose
        first ``k`` objects are the previous view's: only the objects after them are counted
        (a view that grew by a few messages costs those few, not the whole view)."""
        left, entered = Counter(self._objects[k:]), Counter(objects[k:])
        counts = self._in_view
        for i, n in left.items():
            for _ in range(n - entered.get(i, 0)):
                self._leave(i)
        for i, n in entered.items():
            for _ in range(n - left.get(i, 0)):
                self._enter(i)
        for i, n in left.items():
            if counts[i] == n:
                del counts[i]
            else:
                counts[i] -= n
        for i, n in entered.items():
            counts[i] = counts.get(i, 0) + n

    # --- per request ----------------------------------------------------------------------------

    def update(self, request: RequestView) -> ViewMeasures:
        """Measure the next request of the run (and remember it as the previous one)."""
        messages = request.messages
        if len(self._known) + len(messages) > self.max_messages:  # keep the previous view's objects
            self._known = {i: self._known[i] for i in self._in_view}
        objects = [id(m) for m in messages]
        # from the start: the longest run of the very same objects (kept alive in _known)
        k = common_prefix(objects, self._objects)
        for m in messages[k:]:  # every other object measured (and kept alive) before the bookkeeping
            self._message(m)
        self._follow(objects, k)

        # the system message and the tool schemas
        system, tools = request.system, list(request.tools)
        if self._started and system is self._system:
            system_key, system_tokens = self._system_key, self._system_tokens
        elif system is not None:  # the run's system message: the same object for every run
            info = self.share.message(system, self._info)
            system_key, system_tokens = info.key, info.tokens
        else:
            system_key, system_tokens = None, 0
        if self._started and _same_objects(tools, self._tools):
            key_of_tools, tools_tokens = self._tools_key, self._tools_tokens
        else:
            key_of_tools, tools_tokens = tools_key(tools), self.measure.tools_tokens(tools)
        head_equal = self._started and system_key == self._system_key and key_of_tools == self._tools_key

        # the keys and tokens of the same objects, then of the others; equal keys go on the prefix
        known = self._known
        keys = self._message_keys[:k]
        tokens = self._message_tokens[:k]
        for i in objects[k:]:
            info = known[i][1]
            keys.append(info.key)
            tokens.append(info.tokens)
        previous_keys = self._message_keys
        j, limit = k, min(len(keys), len(previous_keys))
        while j < limit and keys[j] == previous_keys[j]:
            j += 1
        reusable = system_tokens + tools_tokens + sum(tokens[:j]) if head_equal else 0

        self._system, self._system_key, self._system_tokens = system, system_key, system_tokens
        self._tools, self._tools_key, self._tools_tokens = tools, key_of_tools, tools_tokens
        self._objects, self._message_keys, self._message_tokens = objects, keys, tokens
        self._started = True

        parts = dict(self._parts)
        parts["system"] += system_tokens + tools_tokens
        return ViewMeasures(
            parts=parts,
            tokens=sum(parts.values()),
            keys=[system_key, key_of_tools, *keys],
            segment_tokens=[system_tokens, tools_tokens, *tokens],
            reusable=reusable,
        )

    def update_call(
        self, call_index: int, request: RequestView, previous: RequestView | None
    ) -> ViewMeasures:
        """:meth:`update` for call ``call_index`` of the run (``previous``: the run's previous
        request), taking the measures of another run of the transcript whose call had the very
        same two requests (:class:`SharedView`, kept in the :attr:`share`); the tracker then
        follows the requests it skipped at the next call it measures itself."""
        views: dict[int, list[SharedView]] = self.share.state("views", dict)
        records = views.setdefault(call_index, [])
        for r in records:
            if r.matches(request, previous):
                self.record, self.reused, self._behind = r, True, (previous, request)
                return r.measures
        self._catch_up(previous)
        m = self.update(request)
        self.record, self.reused = SharedView(call_index, previous, request, m), False
        if len(records) < SHARED_VIEWS:
            records.append(self.record)
        return m

    def _catch_up(self, previous: RequestView | None) -> None:
        """Follow the run's previous request when the tracker skipped it (another run's record)."""
        if self._behind is not None:
            self._behind = None
            if previous is not None:
                self.update(previous)

    def call_retention(
        self, assistant: BaseMessage, earlier: EarlierIdentifiers | set[str] | frozenset[str], call_index: int
    ) -> float | None:
        """:meth:`retention` of the call :meth:`update_call` measured last: another run's value
        when it took that run's record, else measured (and kept in the record)."""
        record = self.record if self.record is not None and self.record.call_index == call_index else None
        if self.reused and record is not None and record.retention is not None:
            return record.retention[0]
        if self._behind is not None:  # the record has none: follow the run's requests up to this one
            previous, request = self._behind
            self._catch_up(previous)
            self.update(request)
        value = self.retention(assistant, earlier, call_index)
        if record is not None and record.retention is None:
            record.retention = (value,)
        return value

    def retention(
        self,
        assistant: BaseMessage,
        earlier: EarlierIdentifiers | set[str] | frozenset[str],
        call_index: int | None = None,
    ) -> float | None:
        """:func:`~ctxlab.replay.metrics.retention` of the last request given to :meth:`update`:
        of the assistant's identifiers that are in ``earlier`` (the identifiers present in the
        transcript before this call), the share present in the view; ``None`` when none are.

        With :class:`~ctxlab.replay.identifiers.EarlierIdentifiers` whose messages are the
        view's very objects in order (nothing compressed yet), the share is 1 without counting
        the view's identifiers; the first view that differs starts the counts (and they are kept
        from then on).  Whether the assistant mentions an earlier identifier depends on the
        transcript only: with ``call_index`` (the call's index in the run) it is found once per
        call for every run of the :attr:`share`."""
        if (
            self._present is None
            and isinstance(earlier, EarlierIdentifiers)
            and self._objects == earlier.objects
        ):
            if call_index is None:
                mentions = self.index.mentions(assistant, earlier)
            else:
                pool = earlier
                mentions = self.share.call_value(
                    "mentions", call_index, lambda: self.index.mentions(assistant, pool)
                )
            return 1.0 if mentions else None
        present = self._counted()
        seen = earlier.all() if isinstance(earlier, EarlierIdentifiers) else earlier
        wanted = [i for i in self.index.identifiers(assistant) if i in seen]
        if not wanted:
            return None
        return sum(1 for w in wanted if present[w] > 0) / len(wanted)

    def _counted(self) -> Counter[str]:
        """The identifier counts of the view (started from the current view when not yet kept)."""
        if self._present is None:
            present: Counter[str] = Counter()
            for i, n in self._in_view.items():
                m, info = self._known[i]
                if info.counted:
                    for _ in range(n):
                        present.update(self.index.present(m))
            self._present = present
        return self._present


def _same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


class PairsTracker:
    """:func:`~ctxlab.replay.metrics.unmatched_tool_pairs` of the successive views of one run,
    kept up to date: a view that extends the previous one (the very same objects first) is
    scanned from where the previous scan stopped, any other view from its start.  The calls
    still open (no result in the view) are kept, so that the answered-but-missing count looks
    at those only.  Same count as the function (``tests/test_replay_tracking.py``)."""

    def __init__(self) -> None:
        self._view: list[BaseMessage] = []  # the previous view (its objects kept alive)
        self._ids: list[int] = []
        self._issuer: dict[str, int] = {}
        self._open: Counter[tuple[int, str]] = Counter()  # calls without a result in the view
        self._orphans = 0

    def count(self, view: Sequence[BaseMessage], answered: AbstractSet[Any]) -> int:
        """Broken tool pairs in ``view``, with ``answered`` the ``(AIMessage id, call id)`` pairs
        answered in the transcript before this call (as :func:`unmatched_tool_pairs` takes them)."""
        ids = [id(m) for m in view]
        n = len(self._ids)
        if n > len(ids) or ids[:n] != self._ids:  # not an extension: scan the view from its start
            self._issuer, self._open, self._orphans, n = {}, Counter(), 0, 0
        for i in range(n, len(view)):
            m = view[i]
            if isinstance(m, AIMessage):
                for tc in m.tool_calls:
                    if (cid := tc.get("id")) is not None:
                        self._issuer[cid] = i
                        self._open[(i, cid)] += 1
            elif isinstance(m, ToolMessage):
                owner = self._issuer.get(m.tool_call_id)
                if owner is None:
                    self._orphans += 1
                else:
                    self._open.pop((owner, m.tool_call_id), None)
        self._view, self._ids = list(view), ids
        missing = 0
        for (i, cid), k in self._open.items():
            if (view[i].id, cid) in answered or cid in answered:
                missing += k
        return self._orphans + missing
