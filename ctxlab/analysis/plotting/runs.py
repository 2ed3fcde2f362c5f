"""Which rows of the per-call frame a plot draws: one run (a transcript under a strategy),
named or defaulted to the first in the frame."""

from __future__ import annotations

import polars as pl

__all__ = ["one_value", "pick_run", "select_calls"]


def select_calls(calls: pl.DataFrame, transcript: str | None, strategy: str | None) -> pl.DataFrame:
    """The rows of ``calls`` of ``transcript`` under ``strategy`` (``None``: any), by call index."""
    df = calls
    if transcript is not None:
        df = df.filter(pl.col("transcript") == transcript)
    if strategy is not None:
        df = df.filter(pl.col("strategy") == strategy)
    return df.sort("call_index")


def pick_run(
    calls: pl.DataFrame, transcript: str | None, strategy: str | None
) -> tuple[str | None, str | None, pl.DataFrame]:
    """``(transcript, strategy, its calls)``: a run named in full, or defaulting to the first
    transcript of ``calls`` and its first strategy."""
    if transcript is None and calls.height:
        transcript = calls["transcript"][0]
    if strategy is None and calls.height:
        strategy = select_calls(calls, transcript, None)["strategy"][0]
    return transcript, strategy, select_calls(calls, transcript, strategy)


def one_value(values: pl.Series) -> float | None:
    """One non-null value of a column that holds one per run (a threshold, in tokens), or ``None``
    when it has none."""
    vals = [v for v in values.drop_nulls().unique().to_list() if v is not None]
    return float(vals[0]) if vals else None
