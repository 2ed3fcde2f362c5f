"""Which rows of the per-call frame a plot draws: one run (a transcript under a strategy),
named or defaulted to the first in the frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from ctxlab.analysis.plotting.style import shorten

__all__ = ["OneRun", "check_names", "one_value", "pick_run", "select_calls"]


def check_names(calls: pl.DataFrame, column: str, asked: Sequence[str]) -> None:
    """Raise ``ValueError`` naming the values ``calls[column]`` has when one of ``asked`` is
    not among them (a misspelt transcript or strategy would otherwise draw an empty plot)."""
    known = calls[column].unique(maintain_order=True).to_list() if calls.height else []
    missing = [name for name in asked if name not in known]
    if missing:
        shown = ", ".join(repr(k) for k in known[:8]) + (
            f", ... ({len(known)} in all)" if len(known) > 8 else ""
        )
        raise ValueError(
            f"no {column} {', '.join(map(repr, missing))} in the calls frame; it has: {shown or 'no rows'}"
        )


def select_calls(calls: pl.DataFrame, transcript: str | None, strategy: str | None) -> pl.DataFrame:
    """The rows of ``calls`` of ``transcript`` under ``strategy`` (``None``: any), by call index.

    Raises:
        ValueError: ``transcript`` or ``strategy`` is named but not in ``calls`` (the message
            lists what is).
    """
    df = calls
    if transcript is not None:
        check_names(df, "transcript", [transcript])
        df = df.filter(pl.col("transcript") == transcript)
    if strategy is not None:
        check_names(df, "strategy", [strategy])
        df = df.filter(pl.col("strategy") == strategy)
    return df.sort("call_index")


@dataclass(frozen=True)
class OneRun:
    """One run a plot draws: a transcript under a strategy (``None`` for either only when the
    frame has no rows) and its rows of the per-call frame, by call index."""

    transcript: str | None
    strategy: str | None
    calls: pl.DataFrame

    def title(self, what: str = "") -> str:
        """The default title of a plot of this run: ``"<transcript>  [<strategy>]<what>"``, the
        transcript cut to its last 70 characters (:func:`~ctxlab.analysis.plotting.style.shorten`)."""
        return f"{shorten(str(self.transcript))}  [{self.strategy}]{what}"


def pick_run(calls: pl.DataFrame, transcript: str | None, strategy: str | None) -> OneRun:
    """The run of ``transcript`` under ``strategy`` in ``calls``; ``None`` for either: the first
    transcript of ``calls``, the first strategy of that transcript.

    Raises:
        ValueError: a named transcript or strategy is not in ``calls``.
    """
    if transcript is None and calls.height:
        transcript = calls["transcript"][0]
    if strategy is None and calls.height:
        strategy = select_calls(calls, transcript, None)["strategy"][0]
    return OneRun(transcript, strategy, select_calls(calls, transcript, strategy))


def one_value(values: pl.Series) -> float | None:
    """One non-null value of a column that holds one per run (a threshold, in tokens), or ``None``
    when it has none."""
    vals = [v for v in values.drop_nulls().unique().to_list() if v is not None]
    return float(vals[0]) if vals else None
