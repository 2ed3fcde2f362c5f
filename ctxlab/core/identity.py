"""The bounded, thread-safe cache types behind everything ctxlab remembers per object.

Long agent runs see the same message objects on every model call, so several steps remember a
result per object: the estimate of a message, the offloaded copy of a tool result, the masked
copy of an observation, the summarizer made for a model, the canonical key of a view message.
Each owner (a middleware, its estimate cache, a trimmer) has its own instances of
:class:`IdentityCache`:

* the key is an object compared by **identity** (``is``), never by ``==`` or ``hash`` (messages
  are not hashable, and two equal messages may be different entries of a history);
* the cache **keeps the key object alive** while its entry is cached, so a recycled ``id()``
  of a collected object can never return a stale value;
* a ``tuple`` key is compared item by item by identity (``tuple(tools)`` keys a list of tool
  objects); an optional hashable ``qualifier`` is compared by ``==`` (a token limit, a path);
* it is **bounded** (least recently used entries go first) and guarded by a lock, so the async
  middleware may use it from worker threads (L1 runs in ``asyncio.to_thread``).

:class:`BoundedCache` is the same LRU keyed by an ordinary hashable value (a content
fingerprint), for the places where equal content, not the same object, is the key.

:func:`is_prefix` tells, at C speed, whether a list starts with the objects of a remembered one
(the history grew): the prefix caches of the estimate and of the sendable view use it.
:func:`content_prefix` compares a reloaded checkpoint (new objects) with a remembered list field
by field; a :class:`ContentMemo` (one per middleware) makes that once per call for both of the
middleware's caches that ask.  Nothing here is process-global: every cache belongs to its owner
and goes with it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar, cast

__all__ = ["BoundedCache", "ContentMemo", "IdentityCache", "bisect_prefix", "content_prefix", "is_prefix"]

K = TypeVar("K")
V = TypeVar("V")
H = TypeVar("H", bound=Hashable)


def is_prefix(head: list[Any], seq: Sequence[Any]) -> bool:
    """Whether the list ``seq`` starts with the items of ``head``: the same objects, or equal
    ones (C-speed list equality, which skips ``__eq__`` for identical objects).  Both ends are
    checked by identity first, so that a list of equal but distinct messages (a reloaded
    checkpoint) is refused cheaply instead of compared field by field.  O(len(head)) at C
    speed, no Python loop; a ``seq`` that is not a list (a tuple) is never a match."""
    n = len(head)
    if n > len(seq):
        return False
    if n == 0:
        return True
    if head[0] is not seq[0] or head[n - 1] is not seq[n - 1]:
        return False
    return head == seq if n == len(seq) else head == seq[:n]


def bisect_prefix(a: Sequence[Any], b: Sequence[Any], lo: int, hi: int) -> int:
    """The largest ``k`` in ``lo..hi`` with ``a[:k] == b[:k]`` (list equality), knowing that
    ``a[:lo]`` matches; prefix equality is monotone, so this is the longest common prefix of
    ``a`` and ``b`` when ``hi = min(len(a), len(b))``.  ``hi`` itself is a candidate: nothing is
    assumed about ``a[:hi]`` (a caller that already knows it does not match may pass one less).
    O(n log n) at C speed."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class ContentMemo:
    """The last answer of :func:`content_prefix` (one entry, thread-safe), owned by whoever asks
    (one per ``CompressionMiddleware``: its estimate cache and its orphan scans ask about the same
    request list within one call, and the second question is answered without comparing the
    history again).  It holds the two lists of that answer until the next one replaces them, and
    goes with its owner."""

    def __init__(self) -> None:
        # (seq, its length and end objects, a copy of head, the answer)
        self._last: tuple[Sequence[Any], int, Any, Any, list[Any], int] | None = None
        self._lock = threading.Lock()

    def lookup(self, seq: Sequence[Any], head: list[Any]) -> int | None:
        """The remembered answer when ``seq`` is the very list asked about (same object, length
        and end objects) and ``head`` holds the very same objects; else ``None``.  O(len(head))
        identity checks."""
        with self._lock:
            last = self._last
        if (
            last is not None
            and last[0] is seq
            and last[1] == len(seq)
            and last[2] is seq[0]
            and last[3] is seq[-1]
            and len(last[4]) == len(head)
            and last[4][0] is head[0]
            and last[4][-1] is head[-1]
            and last[4] == head
        ):
            return last[5]
        return None

    def remember(self, seq: Sequence[Any], head: list[Any], answer: int) -> None:
        """Replace the remembered answer by ``answer`` for (``seq``, ``head``); both non-empty."""
        with self._lock:
            self._last = (seq, len(seq), seq[0], seq[-1], list(head), answer)

    def clear(self) -> None:
        """Forget the answer (and the references to its lists)."""
        with self._lock:
            self._last = None


def content_prefix(seq: Sequence[Any], head: list[Any], memo: ContentMemo | None = None) -> int:
    """Length of the longest common prefix of the messages ``seq`` and a remembered list ``head``
    compared by every field (each message's ``__dict__``, at C speed): a checkpoint reloaded in
    this process brings new objects with the same content.  0 unless the first messages share an
    id (``None`` never matches).

    ``memo``: the asker's :class:`ContentMemo`; the same question asked twice in a row (the same
    ``seq`` object and a ``head`` of the very same objects) is then answered without comparing
    the history again.  ``None``: always compared.  O(n) at C speed on a miss, O(n) identity
    checks on a hit.
    """
    n = min(len(seq), len(head))
    if n == 0 or seq[0].id is None or seq[0].id != head[0].id:
        return 0
    if memo is not None:
        known = memo.lookup(seq, head)
        if known is not None:
            return known
    sa, sb = list(map(vars, seq[:n])), list(map(vars, head[:n]))
    k = n if sa == sb else bisect_prefix(sa, sb, 0, n - 1)
    if memo is not None:
        memo.remember(seq, head, k)
    return k


def _check_size(max_entries: int) -> int:
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries <= 0:
        raise ValueError(f"max_entries={max_entries!r} is invalid: allowed an integer > 0")
    return max_entries


class BoundedCache(Generic[H, V]):
    """A thread-safe LRU map from a hashable key to a value, at most ``max_entries`` long.

    Args:
        max_entries: the most entries kept (> 0); inserting one more drops the least recently
            used entry.

    Raises:
        ValueError: ``max_entries`` is not a positive integer.
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = _check_size(max_entries)
        self._data: OrderedDict[H, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: H, default: V | None = None) -> V | None:
        """The value cached for ``key`` (now the most recently used), else ``default``."""
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: H, value: V) -> V:
        """Cache ``value`` for ``key`` (replacing an older one) and return it."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return value

    def keys(self) -> list[H]:
        """The keys, least recently used first (a copy)."""
        with self._lock:
            return list(self._data)

    def values(self) -> list[V]:
        """The values, least recently used first (a copy)."""
        with self._lock:
            return list(self._data.values())

    def discard(self, key: H) -> None:
        """Drop the entry of ``key``, if any (a value that will not be asked for again)."""
        with self._lock:
            self._data.pop(key, None)

    def discard_many(self, keys: Iterable[H]) -> None:
        """:meth:`discard` each of ``keys`` under one hold of the lock (an L2 round forgets a
        few hundred messages at once: issue 31)."""
        with self._lock:
            pop = self._data.pop
            for key in keys:
                pop(key, None)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()


class IdentityCache(Generic[K, V]):
    """A thread-safe LRU map from an object, by identity, to a value; it keeps the object alive.

    ``cache.get(obj)`` hits only for the very object given to ``cache.put(obj, value)`` (or, for
    a ``tuple`` key, a tuple holding the very same objects in order), with an equal
    ``qualifier``.  Entries are found by ``id()``: since an entry holds its key object, no other
    object can have that ``id()`` while the entry exists.  ``None`` is a valid cached value for
    :meth:`get_or_put`.

    Args:
        max_entries: the most entries kept (> 0), least recently used dropped first.

    Raises:
        ValueError: ``max_entries`` is not a positive integer.
    """

    def __init__(self, max_entries: int) -> None:
        self.max_entries = _check_size(max_entries)
        # slot -> (the key object, kept alive; the value)
        self._data: OrderedDict[tuple[object, Hashable], tuple[K, V]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    @staticmethod
    def _slot(key: K, qualifier: Hashable) -> tuple[object, Hashable]:
        if type(key) is tuple:
            return (tuple(map(id, cast(tuple[object, ...], key))), qualifier)
        return (id(key), qualifier)

    def get(self, key: K, qualifier: Hashable = None) -> V | None:
        """The value cached for this very object (and ``qualifier``), else ``None``."""
        slot = self._slot(key, qualifier)
        with self._lock:
            entry = self._data.get(slot)
            if entry is None:
                return None
            self._data.move_to_end(slot)
        return entry[1]

    def peek(self, key: K, qualifier: Hashable = None) -> V | None:
        """The value cached for this very object (and ``qualifier``), else ``None``, without
        making it the most recently used: a reader that must not change what the owner evicts
        (the replay's measure reading the middleware's estimates)."""
        slot = self._slot(key, qualifier)
        with self._lock:
            entry = self._data.get(slot)
        return None if entry is None else entry[1]

    def put(self, key: K, value: V, qualifier: Hashable = None) -> V:
        """Cache ``value`` for this object (and ``qualifier``), keeping ``key`` alive; return it."""
        slot = self._slot(key, qualifier)
        with self._lock:
            self._data[slot] = (key, value)
            self._data.move_to_end(slot)
            if len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return value

    def values(self) -> list[V]:
        """The values, least recently used first (a copy)."""
        with self._lock:
            return [entry[1] for entry in self._data.values()]

    def get_or_put(self, key: K, make: Callable[[K], V], qualifier: Hashable = None) -> V:
        """The cached value, or ``make(key)`` cached and returned.

        ``make`` runs outside the lock (it may be slow, or use the cache itself); when two
        threads miss at once both compute, and the later value stays.
        """
        slot = self._slot(key, qualifier)
        with self._lock:
            entry = self._data.get(slot)
            if entry is not None:
                self._data.move_to_end(slot)
                return entry[1]
        return self.put(key, make(key), qualifier)

    def discard(self, key: K, qualifier: Hashable = None) -> None:
        """Drop the entry of this very object (and ``qualifier``), if any, and the reference to
        it: the object will not be asked for again (a message behind the cutoff, R9/R11)."""
        slot = self._slot(key, qualifier)
        with self._lock:
            self._data.pop(slot, None)

    def pop_many(self, keys: Iterable[object], qualifier: Hashable = None) -> list[V | None]:
        """Drop the entries of these very objects (and ``qualifier``), as :meth:`discard` each,
        under one hold of the lock; returns the value each held, ``None`` for an object without
        one (in the order of ``keys``; a key given twice gives its value first, then ``None``).
        Any object may be given: one that is not a key finds nothing."""
        slot = self._slot
        with self._lock:
            pop = self._data.pop
            entries = [
                pop((id(key), qualifier) if type(key) is not tuple else slot(cast(K, key), qualifier), None)
                for key in keys
            ]
        return [None if entry is None else entry[1] for entry in entries]

    def clear(self) -> None:
        """Drop every entry (and the references to their key objects)."""
        with self._lock:
            self._data.clear()
