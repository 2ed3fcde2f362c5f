"""The overflow tail trim of a compression round (spec R12): trim the messages a request view
keeps further, at ever smaller tool-result limits, until the view fits a target size.

Rules (``docs/middleware.md``, "Overflow"):

* the trim never ends on a view larger than one it reached: each message keeps the smallest copy
  any limit gave (a limit that cannot trim a message does not undo what a larger limit did);
* a message without an id is trimmed too, in the view only (a view-only trim needs no id);
* what the state update replaces by id are the trimmed messages that have an id and whose
  original is saved in a file (the copy carries ctxlab's offload mark); every other trimmed
  message is trimmed in the view only and the state keeps its original: nothing is lost.

:func:`tail_trim` is a generator that yields :class:`ctxlab.core.l1.RunL1` effects and receives
``(view, reports)``, so the round's drivers run it like every other L1 (sync, or in a worker
thread when async).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.events import StatsCommon
from ctxlab.core.l1 import OffloadRecord, RunL1, TrimContext, TrimReport, TruncatedArg
from ctxlab.core.marks import offloaded_path_of

__all__ = ["L1Result", "RoundStats", "fit_tail", "record_trims", "tail_trim", "written_back"]

#: what a driver sends back for :class:`~ctxlab.core.l1.RunL1`: the trimmed view and the reports
L1Result = tuple[list[BaseMessage], list[TrimReport]]


class RoundStats(StatsCommon, total=False):
    """A compression round's own record, filled as the round goes.

    The keys of :class:`ctxlab.core.events.StatsCommon`, plus the L1 records in full: ``offloaded``
    (one :class:`~ctxlab.core.l1.OffloadRecord` per offloaded tool result) and ``truncated_args`` (one
    :class:`~ctxlab.core.l1.TruncatedArg` per truncated argument); events carry a reduced copy.
    """

    offloaded: list[OffloadRecord]
    truncated_args: list[TruncatedArg]


def record_trims(stats: RoundStats, reports: list[TrimReport]) -> None:
    """Add the trimmers' ``reports`` to a round's stats (``offloaded``, ``truncated_args``,
    ``trim_errors``)."""
    for r in reports:
        stats.setdefault("offloaded", []).extend(r.offloaded)
        stats.setdefault("truncated_args", []).extend(r.truncated_args)
        if r.errors:
            stats.setdefault("trim_errors", []).extend(r.errors)


def fit_tail(
    ctx: TrimContext,
    prefix: list[BaseMessage],
    originals: list[BaseMessage],
    current: list[BaseMessage],
    target: int | None,
    tokens: Callable[[list[BaseMessage]], int],
    stats: RoundStats,
) -> Generator[RunL1, L1Result, tuple[list[BaseMessage], int]]:
    """``current`` as it is when ``[*prefix, *current]`` fits ``target`` (or there is none),
    else trimmed toward it (:func:`ctxlab.core.tail_trim.tail_trim`); with its estimate."""
    size = tokens([*prefix, *current])
    if target is None or size <= target:
        return list(current), size
    return (yield from tail_trim(ctx, prefix, originals, current, target, tokens, stats))


def tail_trim(
    ctx: TrimContext,
    prefix: list[BaseMessage],
    originals: list[BaseMessage],
    current: list[BaseMessage],
    target: int,
    tokens: Callable[[list[BaseMessage]], int],
    stats: RoundStats,
) -> Generator[RunL1, L1Result, tuple[list[BaseMessage], int]]:
    """R12: trim ``current`` (the view copies of ``originals``, the kept messages) until
    ``[*prefix, *trimmed]`` fits ``target`` tokens, or no smaller limit trims more.

    Re-runs the L1 trimmers on ``originals`` with a halving per-message limit, starting from
    ``ctx.token_limit``, down to one token; no message is protected.  At each position the
    smallest copy reached is kept (its estimate, ``ctx.estimate``), so a step never undoes an
    earlier one.  ``stats`` receives the trimmers' reports (:func:`record_trims`).

    Returns ``(messages, tokens)``: the trimmed copies (same length and order as ``originals``;
    an untouched position holds its ``current`` object) and the estimate of
    ``[*prefix, *messages]``.  Generator: yields :class:`~ctxlab.core.l1.RunL1` effects.
    """
    best = list(current)
    sizes = [ctx.estimate(m) for m in best]
    size = tokens([*prefix, *best])
    limit = ctx.token_limit
    while size > target and limit > 1:
        limit //= 2
        step = dataclasses.replace(ctx, token_limit=limit, protect_ids=set())
        trimmed, reports = yield RunL1(list(originals), step)
        record_trims(stats, reports)
        changed = False
        for i, (t, o) in enumerate(zip(trimmed, originals, strict=True)):
            if t is o or t is best[i] or _same_payload(t, best[i]):
                continue
            n = ctx.estimate(t)
            if n < sizes[i]:
                best[i], sizes[i], changed = t, n, True
        if changed:
            size = tokens([*prefix, *best])
    return best, size


def written_back(
    messages: list[BaseMessage], l1_copies: list[BaseMessage], originals: list[BaseMessage]
) -> list[BaseMessage]:
    """The trimmed ``messages`` the state update replaces by id (R12): those that differ from
    the round's L1 copy, have an id, carry ctxlab's offload mark (the original is in a file) and
    whose state original carries none.  The three lists are parallel."""
    return [
        t
        for t, c, o in zip(messages, l1_copies, originals, strict=True)
        if t is not c
        and t.id is not None
        and offloaded_path_of(t) is not None
        and offloaded_path_of(o) is None
    ]


def _same_payload(a: BaseMessage, b: BaseMessage) -> bool:
    if a.content != b.content:
        return False
    if isinstance(a, AIMessage) and isinstance(b, AIMessage):
        return a.tool_calls == b.tool_calls
    return True
