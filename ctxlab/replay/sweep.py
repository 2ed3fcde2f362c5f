"""A sweep over one setting: the same replay once per value (:func:`sweep`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import AgentMiddleware

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.engine import replay_many
from ctxlab.replay.result import ReplayIssue
from ctxlab.replay.resume import RunStore, open_store, replay_resumable
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
    checkpoint: str | Path | None = None,
    resume: bool = False,
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
        out_dir: root of the files the replays write (a temporary folder when ``None``; the
            ``checkpoint`` folder when one is given).
        checkpoint: a folder keeping every finished run of every value as it finishes
            (:mod:`ctxlab.replay.resume`; ``strategy`` must then be a name).  resume: reuse the
            runs ``checkpoint`` holds from an interrupted sweep with the same values, settings and
            versions (refused otherwise) and replay only the others.
        **replay_options: more keyword arguments of :func:`replay_many` (``measure``,
            ``limit_calls``, ``summarizer_model``, ...).

    Returns:
        Columns: ``value``, ``T`` and ``T2`` (tokens), then the totals over all calls of all
        transcripts (:data:`ctxlab.analysis.report.TOTALS_COLUMNS`: ``calls``, ``raw_tokens_total``,
        ``sent_tokens_total``, ``saving_pct``, ``l1_rounds``, ``l2_rounds``, the summarizer's
        calls and tokens, the means), and ``errors`` (failed runs).

    Raises:
        SettingsError: a value is invalid for the setting.
        ValueError: a ``checkpoint`` with a strategy that is not a name.
        ResumeError: ``resume=True`` and ``checkpoint`` holds another sweep.
    """

    import polars as pl

    base = settings or CompressionSettings()
    replay_options.setdefault("progress", False)
    values = list(values)
    points = []
    for value in values:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # outside the recommended range: intended
            points.append(base.replace(**{setting: value}))
    resumable = _resumable(transcripts, strategy, points, pm, checkpoint, resume, replay_options)
    rows = []
    for i, (value, current) in enumerate(zip(values, points, strict=True)):
        if resumable is not None:
            store, loaded, load_errors = resumable
            result = replay_resumable(
                loaded,
                [str(strategy)],
                store=store,
                point=i,
                settings=current,
                pm=pm,
                out_dir=out_dir if out_dir is not None else checkpoint,
                **replay_options,
            )
            result.errors[:0] = load_errors
        else:
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


def _resumable(
    transcripts: Sequence[Transcript | str | Path],
    strategy: str | AgentMiddleware,
    points: Sequence[CompressionSettings],
    pm: pluggy.PluginManager | None,
    checkpoint: str | Path | None,
    resume: bool,
    options: dict[str, Any],
) -> tuple[RunStore, list[Transcript], list[ReplayIssue]] | None:
    """The checkpoint folder of a sweep, its transcripts loaded (in ``replay_many``'s order: the
    loaded ones, then the files) and the load problems; ``None`` without a checkpoint."""
    if checkpoint is None:
        return None
    if not isinstance(strategy, str):
        raise ValueError("a sweep with a checkpoint needs a strategy name (a run is kept by its name)")
    from ctxlab.replay.strategies import make_lab_manager
    from ctxlab.transcripts import load_many

    pm = pm or make_lab_manager(load_entrypoints=True)
    loaded = [t for t in transcripts if isinstance(t, Transcript)]
    paths = [t for t in transcripts if not isinstance(t, Transcript)]
    more, errors = load_many(paths, format=options.get("format"), pm=pm) if paths else ([], [])
    loaded += more
    store = open_store(
        checkpoint,
        resume=resume,
        points=points,
        strategies=[strategy],
        paths=[t.source for t in loaded],
        pm=pm,
        **options,
    )
    return store, loaded, [ReplayIssue.from_transcript_error(e) for e in errors]
