"""The per-message estimate cache in front of an estimator (spec R16).

A long run sends the same history again on every model call; :class:`EstimateCache` estimates
each message once.  It remembers a message by the object itself (:class:`~ctxlab.core.identity.
IdentityCache`) and, for an equal message in a new object, by a cheap content fingerprint; it
remembers the running sums of the last few message lists so that a history that grew by a few
messages costs only the new ones.  All values are tokens.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.estimation.framing import sent_back_kwargs
from ctxlab.core.identity import (
    BoundedCache,
    ContentMemo,
    IdentityCache,
    bisect_prefix,
    content_prefix,
    is_prefix,
)

__all__ = ["EstimateCache"]

#: tool lists remembered by :meth:`EstimateCache.tools_tokens` (a run has one or a few)
TOOL_LISTS_CACHED = 64
#: message lists whose running sums :meth:`EstimateCache.messages_tokens` remembers
PREFIX_SLOTS = 4


def _fingerprint(message: BaseMessage) -> tuple[Any, ...] | None:
    """A cheap identity of a message's countable parts; ``None`` when it cannot be made cheaply.

    ``hash(str)`` is cached by CPython on the string object, so a long-lived message costs
    O(1) here after its first estimate.
    """
    content = message.content
    if isinstance(content, str):
        ckey: Any = hash(content)
    else:
        try:
            ckey = hash(json.dumps(content, sort_keys=True, default=str))
        except (TypeError, ValueError):
            return None
    calls: tuple[Any, ...] = ()
    if isinstance(message, AIMessage) and message.tool_calls:
        parts = []
        for tc in message.tool_calls:
            args = tc.get("args") or {}
            akey: tuple[Any, ...]
            try:
                akey = tuple(sorted((k, hash(v) if isinstance(v, str) else repr(v)) for k, v in args.items()))
            except TypeError:
                akey = (repr(args),)
            parts.append((tc.get("id"), tc.get("name"), akey))
        calls = tuple(parts)
    extra: Any = None
    if isinstance(message, AIMessage) and (message.invalid_tool_calls or sent_back_kwargs(message)):
        try:  # what else the estimate counts (framing.py): invalid calls, reasoning sent back
            extra = hash(json.dumps([message.invalid_tool_calls, sent_back_kwargs(message)], default=str))
        except (TypeError, ValueError):
            return None
    return (message.type, message.id, ckey, calls, getattr(message, "name", None), extra)


def _common_prefix(a: Sequence[Any], b: list[Any]) -> int:
    """Length of the longest common prefix of a message list ``a`` and a remembered list ``b``.

    The common case, ``a`` extends ``b`` (the history grew since the previous call), is one
    C-speed comparison without a Python loop (:func:`~ctxlab.core.identity.is_prefix`).  Otherwise
    (a rewritten history) bisect with list equality, which skips ``__eq__`` for identical
    objects; equal but distinct messages have equal estimates, so equality is the right test.
    A list whose first message is another object (a reloaded checkpoint) shares nothing here:
    its messages are found by their content key instead.
    """
    if is_prefix(b, a):
        return len(b)
    n = min(len(a), len(b))
    if n == 0 or a[0] is not b[0]:
        return 0
    # n itself may match: ``a`` a strict prefix of ``b``, or an equal copy as the last message
    return bisect_prefix(a, b, 1, n)


class EstimateCache:
    """Per-message estimate cache in front of an estimate function (bounded LRU).

    ``request_tokens(system, tools, messages)`` is the estimate of a whole request (R16: system
    message + tool schemas + messages), in tokens.  A long run therefore does not re-estimate the
    whole history on every model call: each message is estimated once, then looked up by the
    object itself or by a cheap fingerprint (type, id, content hash, tool-call ids/arg hashes).
    Safe to share between threads.

    Args:
        message_fn: tokens of one message (the ``ctxlab_estimate_message`` hook, or an
            estimator's ``message_tokens``); ``None`` means that no estimator answered.
        tools_fn: tokens of a list of tool schemas (``ctxlab_estimate_tools``).
        max_entries: messages remembered, by object and by fingerprint each.
        name: what estimates behind the cache (reports name the lab's measuring estimator).
        content_memo: the owner's :class:`~ctxlab.core.identity.ContentMemo`, shared with its
            other caches that compare a reloaded checkpoint by content (the middleware's orphan
            scans); ``None``: a memo of this cache's own.

    Attributes:
        hits, misses: messages answered from the cache / estimated (a rough count under threads).
    """

    def __init__(
        self,
        message_fn: Callable[[BaseMessage], int | None],
        tools_fn: Callable[[Sequence[Any]], int | None],
        max_entries: int = 200_000,
        *,
        name: str = "hooks",
        content_memo: ContentMemo | None = None,
    ) -> None:
        self.name = name
        self.content_memo = ContentMemo() if content_memo is None else content_memo
        self._message_fn = message_fn
        self._tools_fn = tools_fn
        self._by_content: BoundedCache[tuple[Any, ...], int] = BoundedCache(max_entries)
        # the same message object: no fingerprint needed (the object is kept alive with its entry);
        # the value keeps the fingerprint too, so that forgetting the message does not make it again
        self._by_object: IdentityCache[BaseMessage, tuple[int, tuple[Any, ...] | None]] = IdentityCache(
            max_entries
        )
        self._tools: IdentityCache[tuple[Any, ...], int] = IdentityCache(TOOL_LISTS_CACHED)
        self._prefixes: list[tuple[list[BaseMessage], list[int]]] = []
        self._prefix_lock = threading.Lock()
        # caches in front of the same estimator read by object first: (cache, counts as its use)
        self._shared: list[tuple[EstimateCache, bool]] = []
        # caches (of any estimator) whose fingerprint of a message object this one takes
        self._fingerprints: list[EstimateCache] = []
        self.hits = 0
        self.misses = 0

    def share_with(self, other: EstimateCache) -> None:
        """Estimate what this cache misses through ``other``, a cache in front of the very same
        estimator (the same counts): the strategies of a replay batch that share one estimator
        estimate each message once between them (issue 31).  The caller vouches for the sameness.

        A message object ``other`` already estimated is then taken with the fingerprint ``other``
        made of it (no second fingerprint: a ``json.dumps`` of list content); hits, misses and
        both caches' entries end up as if ``other.message_tokens`` had been called."""
        self._message_fn = other.message_tokens
        self.read_first(other, as_use=True)

    def read_first(self, other: EstimateCache, *, as_use: bool = False) -> None:
        """Before estimating a message, take ``other``'s estimate of the very same object (and the
        fingerprint ``other`` made of it) if it holds one; caches are read in the order given.
        ``other`` is in front of the very same estimator (the replay's per-run measure reading
        the middleware's cache, ``ctxlab.replay.metrics.run_measure``); the caller vouches for
        the sameness.  ``as_use``: ``other`` counts a hit and a use as its ``message_tokens``
        would; else it is read as :meth:`peek` reads (its counts and eviction order unchanged)."""
        self._shared.append((other, as_use))

    def fingerprints_from(self, other: EstimateCache) -> None:
        """Take the fingerprint ``other`` made of a message object it holds instead of making it
        again (a fingerprint does not depend on the estimator: a cache of another estimator over
        the same messages, the replay's provider stand-in beside its measure).  Estimates are
        still this cache's own."""
        self._fingerprints.append(other)

    def _fingerprint_of(self, message: BaseMessage) -> tuple[Any, ...] | None:
        for other in self._fingerprints:
            known = other._by_object.peek(message)
            if known is not None and known[1] is not None:
                return known[1]
        return _fingerprint(message)

    def message_tokens(self, message: BaseMessage) -> int:
        """Tokens of one message (cached).

        Raises:
            TypeError: no estimator answered (``message_fn`` returned ``None``).
        """
        seen = self._by_object.get(message)
        if seen is not None:
            self.hits += 1
            return seen[0]
        for shared, counts in self._shared:
            known = shared._by_object.peek(message)
            if known is not None and known[1] is not None:
                value = self._from_shared(message, known[0], known[1], shared if counts else None)
                return self._by_object.put(message, value)[0]
        return self._by_object.put(message, self._message_tokens_by_key(message))[0]

    def _from_shared(
        self, message: BaseMessage, value: int, key: tuple[Any, ...], asked: EstimateCache | None
    ) -> tuple[int, tuple[Any, ...]]:
        """:meth:`_message_tokens_by_key` for a message whose estimate ``value`` and fingerprint
        ``key`` a cache read first holds by object: the same lookups and counts, without making
        the fingerprint again (a ``json.dumps`` of list content).  ``asked``: the cache of
        :meth:`share_with`, which counts a hit (and a use) as its ``message_tokens`` would."""
        hit = self._by_content.get(key)
        if hit is not None:
            self.hits += 1
            return hit, key
        if asked is not None:
            asked._by_object.get(message)  # its use, as asked.message_tokens makes it
            asked.hits += 1
        self.misses += 1
        self._by_content.put(key, value)
        return value, key

    def peek(self, message: BaseMessage) -> int | None:
        """The estimate (tokens) already made of this very message object, else ``None``; never
        estimates, and changes neither the hit/miss counts nor what the cache evicts next (a
        reader beside the owner: the replay's measure, ``ctxlab.replay.metrics.run_measure``)."""
        seen = self._by_object.peek(message)
        return None if seen is None else seen[0]

    def _message_tokens_by_key(self, message: BaseMessage) -> tuple[int, tuple[Any, ...] | None]:
        key = self._fingerprint_of(message)
        if key is not None:
            hit = self._by_content.get(key)
            if hit is not None:
                self.hits += 1
                return hit, key
        self.misses += 1
        value = _tokens(self._message_fn(message), "ctxlab_estimate_message")
        if key is not None:
            self._by_content.put(key, value)
        return value, key

    def messages_tokens(self, messages: Sequence[BaseMessage]) -> int:
        """Total tokens of ``messages``.

        Besides the per-message cache, the last few lists are remembered with their running sums:
        a list that starts with the same message *objects* as a remembered one (the common case:
        the history grew by a few messages since the previous model call) costs one C-speed
        identity scan plus the new messages only; a rewritten list reuses the sums of its longest
        common prefix with a remembered one (bisection).  A list of other objects (a checkpoint
        reloaded in this process) is compared by content with the latest remembered list (every
        field of each message, :func:`~ctxlab.core.identity.content_prefix`, with
        :attr:`content_memo`: no estimate is made again, but every message is read once); in a
        new process nothing is remembered and every message is estimated once.
        Messages are assumed not to be edited in place (LangGraph replaces messages, it does not
        mutate them).
        """
        with self._prefix_lock:
            best_slot, best_k = None, -1
            # a remembered list that ``messages`` extends (most recent first) is taken at once:
            # one C-speed comparison; a longer one only replaces it (issue 31: no bisection of
            # the other remembered lists on every call)
            for slot in self._prefixes:
                if len(slot[0]) > best_k and is_prefix(slot[0], messages):
                    best_slot, best_k = slot, len(slot[0])
            for slot in self._prefixes:  # a longer list may share more (bisection)
                if len(slot[0]) <= best_k or slot is best_slot:
                    continue
                if best_slot is None:
                    k = _common_prefix(messages, slot[0])
                elif is_prefix(best_slot[0], slot[0]):  # it extends the match: only the rest is compared
                    rest, theirs = messages[best_k:], slot[0][best_k:]
                    k = best_k + bisect_prefix(rest, theirs, 0, min(len(rest), len(theirs)))
                else:
                    continue
                if k > best_k:
                    best_slot, best_k = slot, k
                    if k == len(messages):
                        break
            if best_slot is not None and best_k == len(best_slot[0]):
                # a list that extends a remembered one replaces it: its sums are extended, not copied
                self._prefixes.remove(best_slot)
                sums = best_slot[1]
            elif best_slot is not None and best_k > 0:
                # a partial match (another view of the same history: the L1 view beside the
                # effective messages) leaves the remembered list in place for its own successor
                sums = best_slot[1][: best_k + 1]
            else:
                # no list shares these objects: a reloaded checkpoint shares their content
                sums, best_k = [0], 0
                if self._prefixes:
                    slot = self._prefixes[0]
                    best_k = content_prefix(messages, slot[0], self.content_memo)
                    sums = slot[1][: best_k + 1]
        fn = self.message_tokens
        running = sums[-1]
        for m in messages[best_k:]:
            running += fn(m)
            sums.append(running)
        with self._prefix_lock:
            self._prefixes.insert(0, (list(messages), sums))
            del self._prefixes[PREFIX_SLOTS:]
        return running

    def head_tokens(self, messages: Sequence[BaseMessage], k: int) -> int:
        """Total tokens of ``messages[:k]``: the running sum of a remembered list (the last few
        totalled, :meth:`messages_tokens`) that starts with the same ``k`` objects, else the sum
        of :meth:`message_tokens` (issue 31: an L2 round's span is the head of the L1 view it
        has just totalled)."""
        head = messages[:k] if isinstance(messages, list) else list(messages[:k])
        with self._prefix_lock:
            for lst, sums in self._prefixes:
                if len(sums) > k and is_prefix(head, lst):
                    return sums[k]
        fn = self.message_tokens
        return sum(fn(m) for m in head)

    def forget(self, messages: Sequence[BaseMessage]) -> None:
        """Drop what is remembered for ``messages`` (by object and by content) and every
        remembered list that starts with one of them: messages behind the cumulative cutoff
        never reach a view again (spec R9/R11), so their entries only hold memory.  Forgetting a
        message that comes back (an older checkpoint resumed) costs one estimate, never a wrong
        one."""
        gone = set(map(id, messages))
        # one hold of each lock for the whole span (issue 31), the same entries dropped
        seen = self._by_object.pop_many(messages)
        keys = [s[1] if s is not None else _fingerprint(m) for m, s in zip(messages, seen, strict=True)]
        self._by_content.discard_many([k for k in keys if k is not None])
        with self._prefix_lock:
            self._prefixes = [p for p in self._prefixes if not p[0] or id(p[0][0]) not in gone]

    def tools_tokens(self, tools: Sequence[Any]) -> int:
        """Tokens of the tool schemas, cached by the tool objects themselves (kept alive with
        the entry, so a recycled ``id()`` can never hit a stale estimate).

        Raises:
            TypeError: no estimator answered (``tools_fn`` returned ``None``).
        """
        if not tools:
            return 0
        return self._tools.get_or_put(
            tuple(tools), lambda _key: _tokens(self._tools_fn(tools), "ctxlab_estimate_tools")
        )

    def request_tokens(
        self, system: BaseMessage | None, tools: Sequence[Any], messages: Sequence[BaseMessage]
    ) -> int:
        """Tokens of a whole request: ``messages`` + tool schemas + the system message (R16)."""
        return self.messages_tokens(messages) + self.fixed_tokens(system, tools)

    def fixed_tokens(self, system: BaseMessage | None, tools: Sequence[Any]) -> int:
        """Tokens of a request's fixed part, never summarized: the tool schemas and the system
        message (R9, R16).  Unlike ``request_tokens(system, tools, [])`` it leaves the remembered
        lists of :meth:`messages_tokens` alone (an empty list would take one of their slots)."""
        total = self.tools_tokens(tools)
        if system is not None:
            total += self.message_tokens(system)
        return total


def _tokens(value: int | None, hook: str) -> int:
    if value is None:
        raise TypeError(f"no estimator answered {hook} (is the built-in estimator registered?)")
    return int(value)
