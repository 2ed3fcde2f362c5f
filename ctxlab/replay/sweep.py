"""A sweep over one setting: the same replay once per value (:func:`sweep`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import AgentMiddleware

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.engine import replay_many
from ctxlab.replay.table import TOTALS_COLUMNS, strategy_totals
from ctxlab.transcripts.base import Transcript

if TYPE_CHECKING:
    import pluggy
    import polars as pl

__all__ = ["sweep"]


def sweep(
    transcripts: Sequence[Transcript | str | Path],
    setting: str,
    values: Iterable[Any],
    *,
    strategy: str | AgentMiddleware = "ars",
    settings: CompressionSettings | None = None,
    pm: pluggy.PluginManager | None = None,
    out_dir: str | Path | None = None,
    **replay_options: Any,
) -> pl.DataFrame:
    """Replay ``transcripts`` with ``strategy`` once per value of one setting; one row per value.

    Args:
        transcripts: loaded transcripts or files, as for :func:`replay_many`.
        setting: a :class:`~ctxlab.CompressionSettings` field, e.g. ``"summary_l2_trigger_ratio"``.
        values: the values to try, in order.
        strategy: the strategy name (or middleware).
        settings: the other fields (default: the ARS defaults).
        pm: the plugin manager strategies are looked up in.
        out_dir: root of the files the replays write (a temporary folder when ``None``).
        **replay_options: more keyword arguments of :func:`replay_many` (``measure``,
            ``limit_calls``, ``summarizer_model``, ...).

    Returns:
        Columns: ``value``, ``T`` and ``T2`` (tokens), then the totals over all calls of all
        transcripts (:data:`ctxlab.analysis.report.TOTALS_COLUMNS`: ``calls``, ``raw_tokens_total``,
        ``sent_tokens_total``, ``saving_pct``, ``l1_rounds``, ``l2_rounds``, the summarizer's
        calls and tokens, the means), and ``errors`` (failed runs).

    Raises:
        SettingsError: a value is invalid for the setting.
    """

    import polars as pl

    base = settings or CompressionSettings()
    replay_options.setdefault("progress", False)
    rows = []
    for value in values:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # outside the recommended range: intended
            current = base.replace(**{setting: value})
        result = replay_many(
            list(transcripts), [strategy], settings=current, pm=pm, out_dir=out_dir, **replay_options
        )
        totals = strategy_totals(result.frame())
        row = totals.row(0, named=True) if totals.height else {}
        rows.append(
            {
                "value": float(value),
                "T": current.entry_threshold_tokens,
                "T2": float(current.l2_threshold_tokens),
                **{k: row.get(k) for k in TOTALS_COLUMNS},
                "errors": len(result.errors),
            }
        )
    return pl.DataFrame(rows).with_columns(pl.col("calls").cast(pl.Int64))
