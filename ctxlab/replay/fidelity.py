"""Summary fidelity: what each L2 summary kept of the identifiers in the span it replaced.

**Definitions** (per L2 round; also in :data:`FIDELITY_DEFINITIONS`, printed in ``report.md``):

``span_recall``
    Of the identifiers in the *summarized span* — the messages the round replaced with its
    summary, an earlier summary among them — the share present in the summary.  ``None`` when
    the span holds no identifier.
``needed_recall``
    Of the identifiers that later assistant turns use and that, at the time of the use, stood only
    in the summarized span — present in the span, but not in the system message, the *kept
    window* (the rest of the view the round produced) or any later message before the use — the
    share present in the summary.  ``None`` when there is no such identifier.  This is the one
    that matters: what the agent went on to use and could only have had from the summary.

Identifiers and presence are those of the replay's ``retention``
(:mod:`ctxlab.replay.metrics`): identifiers are extracted from a message's text and tool-call
arguments by :func:`~ctxlab.replay.metrics.extract_identifiers` (paths, file names, dotted,
snake_case and CamelCase names, error names, numbers of 4+ digits; at least 4 characters); an
identifier is *present* in a text when it was extracted from it, or is a path suffix or a run of
dotted segments of one extracted from it (:func:`~ctxlab.replay.metrics.expand_identifier`).
Both recalls are shares in [0, 1] of distinct identifiers.

Per strategy (:func:`fidelity_totals`): pooled recall (the carried identifiers of all rounds over
their identifiers) and the mean of the rounds' recalls (rounds without a value skipped).

**What this does not capture.**  Paraphrase (a summary that says "the settings module" does not
carry ``core/settings.py``); facts that are not identifiers (decisions, what failed, prose);
names shorter than 4 characters; whether a later turn really needed the identifier or would have
found it again (a use counts as needed only when nothing before it in the view or the later
messages held it); correctness (an identifier carried in a wrong statement counts as carried).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.replay.columns import report_definitions
from ctxlab.replay.metrics import IdentifierIndex, expand_identifier, extract_identifiers

__all__ = [
    "FIDELITY_DEFINITIONS",
    "FidelityTotals",
    "RoundFidelity",
    "fidelity_totals",
    "summary_fidelity",
]


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


#: the four identifier counts of :class:`_Recalls` (fields of both records; summed by :func:`fidelity_totals`)
_COUNTS = ("span_identifiers", "span_carried", "needed_identifiers", "needed_carried")


class _Recalls:
    """The two recalls of four identifier counts: one round's, or pooled over rounds (the
    carried identifiers of all rounds over their identifiers)."""

    span_identifiers: int
    span_carried: int
    needed_identifiers: int
    needed_carried: int

    @property
    def span_recall(self) -> float | None:
        """``span_carried / span_identifiers``, ``None`` when the span has no identifier."""
        return _share(self.span_carried, self.span_identifiers)

    @property
    def needed_recall(self) -> float | None:
        """``needed_carried / needed_identifiers``, ``None`` when nothing was needed."""
        return _share(self.needed_carried, self.needed_identifiers)


@dataclass(frozen=True)
class RoundFidelity(_Recalls):
    """The fidelity of one L2 summary (see the module docstring).

    Attributes:
        span_identifiers: distinct identifiers extracted from the summarized span.
        span_carried: of those, present in the summary.
        needed_identifiers: distinct identifiers later assistant turns used that stood only in
            the span at the time of use.
        needed_carried: of those, present in the summary.
        dropped: the needed identifiers the summary does not carry, sorted.
    """

    span_identifiers: int
    span_carried: int
    needed_identifiers: int
    needed_carried: int
    dropped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The counts, both recalls and ``dropped`` (a list), for a JSON record."""
        return {
            "span_identifiers": self.span_identifiers,
            "span_carried": self.span_carried,
            "span_recall": self.span_recall,
            "needed_identifiers": self.needed_identifiers,
            "needed_carried": self.needed_carried,
            "needed_recall": self.needed_recall,
            "dropped": list(self.dropped),
        }


def _text_present(text: str) -> set[str]:
    out: set[str] = set()
    for ident in extract_identifiers(text):
        out |= expand_identifier(ident)
    return out


def summary_fidelity(
    span: Sequence[BaseMessage],
    summary: BaseMessage | str,
    *,
    kept: Sequence[BaseMessage] = (),
    later: Sequence[BaseMessage] = (),
    system: BaseMessage | None = None,
    index: IdentifierIndex | None = None,
) -> RoundFidelity:
    """Span recall and identifier recall of one L2 summary.

    Args:
        span: the summarized messages (what the round removed from the view, in order).
        summary: the summary message (or its text).
        kept: the other messages of the view the round produced (the kept window).
        later: the transcript messages after the round, in order, starting with the recorded
            answer of the call the round ran in; its :class:`AIMessage` s are the later turns.
        system: the system message the model received, if any.
        index: an identifier cache (one per run); a fresh one when ``None``.

    Returns:
        A :class:`RoundFidelity`.
    """
    index = index or IdentifierIndex()
    carried = (
        index.present(summary) if isinstance(summary, BaseMessage) else frozenset(_text_present(summary))
    )
    span_ids: set[str] = set()
    span_present: set[str] = set()
    for m in span:
        span_ids |= index.identifiers(m)
        span_present |= index.present(m)
    available: set[str] = set(index.present(system)) if system is not None else set()
    for m in kept:
        available |= index.present(m)
    needed: set[str] = set()
    for m in later:
        if isinstance(m, AIMessage):
            needed.update(i for i in index.identifiers(m) if i in span_present and i not in available)
        available |= index.present(m)
    needed_carried = sum(1 for i in needed if i in carried)
    return RoundFidelity(
        span_identifiers=len(span_ids),
        span_carried=sum(1 for i in span_ids if i in carried),
        needed_identifiers=len(needed),
        needed_carried=needed_carried,
        dropped=tuple(sorted(i for i in needed if i not in carried)),
    )


@dataclass(frozen=True)
class FidelityTotals(_Recalls):
    """Fidelity over several L2 rounds (a run or a strategy).

    ``rounds`` counts the rounds; the ``*_identifiers``/``*_carried`` fields are sums over them,
    so that ``span_recall`` and ``needed_recall`` are pooled (the carried identifiers of all rounds
    over their identifiers); ``mean_*_recall`` average the rounds' recalls, skipping rounds without
    a value (``None`` when no round has one).
    """

    rounds: int = 0
    span_identifiers: int = 0
    span_carried: int = 0
    needed_identifiers: int = 0
    needed_carried: int = 0
    mean_span_recall: float | None = None
    mean_needed_recall: float | None = None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def fidelity_totals(rounds: Iterable[RoundFidelity | Mapping[str, Any]]) -> FidelityTotals:
    """Sum rounds' fidelity: :class:`RoundFidelity` objects or their :meth:`~RoundFidelity.as_dict`
    records (e.g. the rows of ``summaries.jsonl``; records without the counts are skipped)."""
    n = 0
    sums = dict.fromkeys(_COUNTS, 0)
    span_recalls: list[float] = []
    needed_recalls: list[float] = []
    for r in rounds:
        if isinstance(r, Mapping) and r.get("span_identifiers") is None:
            continue
        counts = {k: int(r[k]) if isinstance(r, Mapping) else getattr(r, k) for k in _COUNTS}
        one = FidelityTotals(rounds=1, **counts)  # a round is the total of itself: its recalls
        n += 1
        for k in _COUNTS:
            sums[k] += counts[k]
        if one.span_recall is not None:
            span_recalls.append(one.span_recall)
        if one.needed_recall is not None:
            needed_recalls.append(one.needed_recall)
    return FidelityTotals(
        rounds=n, **sums, mean_span_recall=_mean(span_recalls), mean_needed_recall=_mean(needed_recalls)
    )


#: definitions printed in report.md (keys are column names; from the column registry)
FIDELITY_DEFINITIONS: dict[str, str] = report_definitions("fidelity")
