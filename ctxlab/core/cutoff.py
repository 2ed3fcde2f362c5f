"""L2 cutoff selection: where the summarized part of the effective messages ends (spec R9, R11).

Positions: a *local* cutoff ``c`` is an index into the effective messages (``messages[:c]`` is
summarized, ``messages[c:]`` is kept); the *global* cutoff stored in ``_summarization_event`` is
a position in the full state messages (R11).  With a previous summary at ``messages[0]`` and a
previous global cutoff ``p``, local ``c`` maps to global ``p + c - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CutoffContext", "CutoffDecision", "to_global"]


@dataclass(frozen=True)
class CutoffContext:
    """Inputs of a cutoff rule.

    Attributes:
        keep_messages: messages to keep after the cutoff at least (``summary_keep_messages``;
            the summary message is not counted).
        has_previous_summary: ``messages[0]`` is the previous summary message.
        estimate: tokens of one message (cached estimator), for token-aware rules.
        target_tokens: the L2 threshold T2 in tokens (a rule may aim the kept part below it).
        min_new_tokens: the fewest tokens of not-yet-summarized messages a cutoff must summarize
            to be worth a summary (0 in an overflow-forced round).
        forced: the round was forced by a context overflow (R12): a rule should cut if it can.
    """

    keep_messages: int
    has_previous_summary: bool
    estimate: Any
    target_tokens: float
    min_new_tokens: float = 0.0
    forced: bool = False


@dataclass(frozen=True)
class CutoffDecision:
    """A cutoff choice: ``index`` local to the effective messages, or ``None`` (no valid cutoff,
    R13); ``reason`` says why, for events and reports."""

    index: int | None
    reason: str = ""


def to_global(local: int, previous_cutoff: int | None, has_previous_summary: bool) -> int:
    """Convert a local cutoff into a position in the state messages (R11, cumulative)."""
    if has_previous_summary and previous_cutoff is not None:
        return previous_cutoff + local - 1
    return local


def first_new_position(has_previous_summary: bool) -> int:
    """The smallest local cutoff that summarizes at least one message not yet summarized."""
    return 2 if has_previous_summary else 1
