"""The bounded caches of ctxlab.core.identity: identity keys that stay alive, LRU bounds, tuple
keys, qualifiers, threads, a read that does not reorder (peek), the per-owner content memo and the
prefix bisection."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
from langchain_core.messages import HumanMessage

from ctxlab.core.identity import BoundedCache, ContentMemo, IdentityCache, bisect_prefix


class Thing:
    """A plain object (weak-referenceable, compared by identity)."""


def test_hits_only_the_very_same_object() -> None:
    cache: IdentityCache[HumanMessage, int] = IdentityCache(8)
    a = HumanMessage("same text", id="x")
    b = HumanMessage("same text", id="x")
    assert a == b and a is not b
    cache.put(a, 1)
    assert cache.get(a) == 1
    assert cache.get(b) is None  # equal content is not the same entry


def test_keeps_the_key_alive_so_a_recycled_id_cannot_hit() -> None:
    cache: IdentityCache[Thing, str] = IdentityCache(8)
    obj = Thing()
    ref = weakref.ref(obj)
    cache.put(obj, "value of obj")
    del obj
    gc.collect()
    assert ref() is not None  # alive while cached: its id() cannot be given to a new object
    for _ in range(1000):  # new objects never see the old value, whatever their id()
        assert cache.get(Thing()) is None
    cache.clear()
    gc.collect()
    assert ref() is None  # dropped entries release their keys


def test_least_recently_used_entry_goes_first() -> None:
    cache: IdentityCache[Thing, int] = IdentityCache(2)
    a, b, c = Thing(), Thing(), Thing()
    cache.put(a, 1)
    cache.put(b, 2)
    assert cache.get(a) == 1  # a is now the most recently used
    cache.put(c, 3)
    assert len(cache) == 2
    assert cache.get(b) is None and cache.get(a) == 1 and cache.get(c) == 3


def test_tuple_keys_compare_items_by_identity_and_qualifiers_by_equality() -> None:
    cache: IdentityCache[tuple[Thing, ...], int] = IdentityCache(8)
    t1, t2 = Thing(), Thing()
    cache.put((t1, t2), 7)
    assert cache.get((t1, t2)) == 7  # a new tuple of the same objects hits
    assert cache.get((t2, t1)) is None and cache.get((t1,)) is None
    single: IdentityCache[Thing, str] = IdentityCache(8)
    single.put(t1, "limit 300", qualifier=300)
    single.put(t1, "limit 150", qualifier=150)
    assert single.get(t1, int("300")) == "limit 300"  # an equal (not identical) qualifier hits
    assert single.get(t1, 150) == "limit 150" and single.get(t1) is None


def test_get_or_put_computes_once_and_caches_none() -> None:
    cache: IdentityCache[Thing, int | None] = IdentityCache(8)
    key = Thing()
    calls: list[Thing] = []

    def make(obj: Thing) -> None:
        calls.append(obj)

    assert cache.get_or_put(key, make) is None
    assert cache.get_or_put(key, make) is None
    assert calls == [key]


def test_bounded_cache_is_an_lru_by_value() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and len(cache) == 2
    with pytest.raises(ValueError, match="max_entries=0"):
        BoundedCache(0)
    with pytest.raises(ValueError, match="max_entries"):
        IdentityCache(-1)


def test_threads_share_one_cache_without_losing_its_bound() -> None:
    cache: IdentityCache[Thing, int] = IdentityCache(64)
    keys = [Thing() for _ in range(200)]
    errors: list[BaseException] = []

    def index_of(key: Thing) -> int:
        return keys.index(key)

    def work(offset: int) -> None:
        try:
            for i in range(2000):
                k = keys[(i + offset) % len(keys)]
                assert cache.get_or_put(k, index_of) == index_of(k)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n * 17,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(cache) <= 64


def test_content_prefix_compares_by_content_and_answers_a_second_cache_without_going_stale() -> None:
    from langchain_core.messages import HumanMessage

    from ctxlab.core.identity import content_prefix

    old = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(6)]
    reloaded = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(6)]  # new objects, same content
    memo = ContentMemo()
    assert content_prefix(reloaded, old, memo) == 6
    assert content_prefix(reloaded, list(old), memo) == 6  # another cache's list of the same objects
    edited = [*old[:3], HumanMessage("changed", id="m3"), *old[4:]]
    assert content_prefix(reloaded, edited, memo) == 3  # other objects: compared again, not the memo
    assert content_prefix(reloaded, edited) == 3  # no memo: always compared
    assert content_prefix(reloaded, old[:4], memo) == 4
    assert content_prefix([HumanMessage("x", id=None)], old, memo) == 0
    assert content_prefix(reloaded, [], memo) == 0


def test_the_content_memo_belongs_to_its_owner_and_answers_only_the_same_question() -> None:
    from langchain_core.messages import HumanMessage

    from ctxlab.core.identity import content_prefix

    old = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(4)]
    reloaded = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(4)]
    mine, theirs = ContentMemo(), ContentMemo()
    assert content_prefix(reloaded, old, mine) == 4
    assert mine.lookup(reloaded, list(old)) == 4  # the second cache's question: no comparison
    assert theirs.lookup(reloaded, old) is None  # another middleware's memo knows nothing of it
    assert mine.lookup(list(reloaded), old) is None  # another request list: compared again
    probe = weakref.ref(reloaded[0])
    del mine
    reloaded.clear()
    gc.collect()
    assert probe() is None, "the memo kept the messages after its owner went"


def test_peek_reads_without_reordering_the_lru() -> None:
    cache: IdentityCache[Thing, int] = IdentityCache(2)
    a, b, c = Thing(), Thing(), Thing()
    cache.put(a, 1)
    cache.put(b, 2)
    order = list(cache._data)
    assert cache.peek(a) == 1 and cache.peek(c) is None
    assert list(cache._data) == order
    cache.put(c, 3)  # evicts the least recently used: still a, since peek did not touch it
    assert cache.peek(a) is None and cache.peek(b) == 2 and cache.peek(c) == 3
    cache.get(b)  # get does reorder: c goes next
    cache.put(a, 4)
    assert cache.peek(c) is None and cache.peek(b) == 2


@pytest.mark.parametrize(
    ("a", "b", "lo", "expected"),
    [
        ([1, 2, 3], [1, 2, 3, 4], 1, 3),  # a strict prefix of b: the whole of a
        ([1, 2, 3, 4], [1, 2, 3], 1, 3),  # b a strict prefix of a
        ([1, 2, 9, 4], [1, 2, 3, 4], 1, 2),
        ([1, 2, 3], [1, 2, 3], 0, 3),  # equal: hi itself is a candidate
        ([7], [1], 0, 0),
    ],
)
def test_bisect_prefix_finds_the_longest_common_prefix_up_to_hi_inclusive(
    a: list[int], b: list[int], lo: int, expected: int
) -> None:
    assert bisect_prefix(a, b, lo, min(len(a), len(b))) == expected


def test_pop_many_and_discard_many_drop_exactly_what_one_by_one_discards_drop() -> None:
    # issue 31: an L2 round forgets a span under one hold of each lock; the entries left, the
    # values returned and the LRU order of the rest are those of discarding one by one
    keep, gone, twice, other = (HumanMessage(content=t) for t in ("keep", "gone", "twice", "other"))
    batch: IdentityCache[HumanMessage, int] = IdentityCache(8)
    single: IdentityCache[HumanMessage, int] = IdentityCache(8)
    for cache in (batch, single):
        for i, m in enumerate((keep, gone, twice)):
            cache.put(m, i)
        cache.put(other, 9, qualifier="q")
    values = batch.pop_many([gone, twice, twice, other, keep], qualifier="q")
    assert values == [None, None, None, 9, None]  # only `other` has an entry under "q"
    assert batch.pop_many([gone, twice, twice]) == [1, 2, None]  # a key given twice: its value once
    for m in (gone, twice):
        single.discard(m)
    single.discard(other, "q")
    assert (
        [batch.get(m) for m in (keep, gone, twice)]
        == [single.get(m) for m in (keep, gone, twice)]
        == [
            0,
            None,
            None,
        ]
    )
    assert batch.values() == single.values() == [0] and batch.get(other, "q") is None

    lru: BoundedCache[str, int] = BoundedCache(4)
    for i, key in enumerate("abcd"):
        lru.put(key, i)
    lru.discard_many(["b", "x", "d", "b"])
    assert lru.keys() == ["a", "c"] and lru.values() == [0, 2]
