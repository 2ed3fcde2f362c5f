"""Replay: drive a middleware through recorded transcripts as a live agent would have.

:func:`replay` runs one transcript through one strategy, :func:`replay_many` every transcript ×
strategy of a batch (a bad file or a failing run never stops it), :func:`sweep` a set of
transcripts once per value of one setting.  Each model call of a transcript is one model-node
run of :class:`~ctxlab.replay.harness.ModelNodeHarness` answered with the recorded
``AIMessage`` (see :mod:`ctxlab.replay.runner` for the loop and the row of each call).

Strategies are looked up by name in :func:`ctxlab.replay.strategies.strategies`: a factory
returning a list of plugin objects makes a :class:`~ctxlab.CompressionMiddleware` with those
plugins; a factory returning an ``AgentMiddleware`` (a baseline from another framework) is
driven as is.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.messages import AIMessage

from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.middleware import CompressionMiddleware
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.metrics import make_measure
from ctxlab.replay.prices import PriceRow, PriceTable
from ctxlab.replay.result import ReplayIssue, ReplayResult
from ctxlab.replay.run_measures import resolve_price
from ctxlab.replay.runner import replay_one
from ctxlab.replay.strategies import make_lab_manager
from ctxlab.replay.strategies import strategies as registered_strategies
from ctxlab.replay.table import TOTALS_COLUMNS, strategy_totals
from ctxlab.transcripts import load_many, load_transcripts
from ctxlab.transcripts.base import Transcript

if TYPE_CHECKING:
    import pluggy
    import polars as pl

logger = logging.getLogger("ctxlab.replay.engine")

__all__ = [
    "ReplayIssue",
    "ReplayResult",
    "build_middleware",
    "replay",
    "replay_many",
    "safe_name",
    "sweep",
    "transcript_labels",
]


# --- strategies ---------------------------------------------------------------------------------


def safe_name(text: str, limit: int = 80, *, empty: str = "x") -> str:
    """A file or folder name for ``text``: ASCII letters, digits, ``._-``, at most ``limit``
    characters.  A name that had to change (other characters, or too long) ends with ``-`` and
    8 hex digits of the text's SHA-1, so that two texts never share a name.

    Examples: ``safe_name("ars") == "ars"``; ``safe_name("a/b.json")`` is ``"a_b.json-<sha1>"``.
    """
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-") or empty
    if len(s) > limit or s != text:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        s = f"{s[: limit - 9]}-{digest}"
    return s


def build_middleware(
    strategy: str | AgentMiddleware,
    *,
    settings: CompressionSettings,
    pm: pluggy.PluginManager | None = None,
    files_dir: str | Path | None = None,
    summarizer: Any = None,
) -> tuple[str, AgentMiddleware]:
    """A fresh middleware for a strategy name (or the given middleware), and its name.

    Args:
        strategy: a name registered through ``ctxlab_register_strategies`` in ``pm``, or an
            ``AgentMiddleware`` instance (used as is).
        settings: the compression settings handed to the strategy factory and the middleware.
        pm: where strategies are looked up; default: ``make_lab_manager(load_entrypoints=True)``.
        files_dir: root of the middleware's ``FilesystemBackend`` (virtual mode).
        summarizer: the ``summarizer=`` of the CompressionMiddleware (default: the offline
            :class:`ctxlab.core.builtin.StructuredSummarizer`).

    Raises:
        KeyError: the strategy name is not registered (the message lists the known names).
        TypeError: the factory returned neither a list of plugins nor an AgentMiddleware.
    """

    if isinstance(strategy, AgentMiddleware):
        return strategy.name, strategy
    if pm is None:
        pm = make_lab_manager(load_entrypoints=True)
    known = registered_strategies(pm)
    if strategy not in known:
        raise KeyError(f"unknown strategy {strategy!r}; known: {', '.join(sorted(known)) or '(none)'}")
    made = known[strategy].factory(settings)
    if isinstance(made, AgentMiddleware):
        return strategy, made
    if isinstance(made, (list, tuple)):
        from deepagents.backends import FilesystemBackend

        if summarizer is None:
            summarizer = StructuredSummarizer()
        root = Path(files_dir) if files_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-replay-"))
        root.mkdir(parents=True, exist_ok=True)
        backend = FilesystemBackend(root_dir=str(root.resolve()), virtual_mode=True)
        # plugins loaded from a plugins folder into ``pm`` apply to the replayed middleware too
        folder_plugins = [p for n, p in pm.list_name_plugin() if n.startswith("dir:") and p is not None]
        # the recorded agent never had ctxlab's read tool: a replayed request carries the
        # recorded tools only, so that raw and sent requests differ by compression alone
        mw = CompressionMiddleware(
            settings=settings,
            backend=backend,
            summarizer=summarizer,
            plugins=[*made, *folder_plugins],
            read_tool=False,
        )
        mw._ctxlab_files_root = root.resolve()  # type: ignore[attr-defined]
        return strategy, mw
    raise TypeError(
        f"strategy {strategy!r}: factory returned {type(made).__name__}; expected a list of plugin objects "
        "or an AgentMiddleware instance"
    )


def _count_calls(transcript: Transcript, limit_calls: int | None) -> int:
    n = sum(1 for m in transcript.messages if isinstance(m, AIMessage))
    return min(n, limit_calls) if limit_calls is not None else n


def transcript_labels(transcripts: Sequence[Transcript]) -> list[str]:
    """Unique, readable labels: ``Transcript.name``, prefixed with parent folders of the source
    where two transcripts would otherwise share a name (``python-to-rust-port/transcript.jsonl``)."""
    labels = [t.name for t in transcripts]
    depth = [0] * len(transcripts)
    for _ in range(12):
        seen: dict[str, list[int]] = {}
        for i, lab in enumerate(labels):
            seen.setdefault(lab, []).append(i)
        dups = [ix for ix in seen.values() if len(ix) > 1]
        if not dups:
            break
        for group in dups:
            for i in group:
                depth[i] += 1
                parents = [p for p in Path(transcripts[i].source).parent.parts if p not in ("/", "\\", "")]
                prefix = "/".join(parents[-min(depth[i], len(parents)) :]) if parents else ""
                labels[i] = f"{prefix}/{transcripts[i].name}" if prefix else transcripts[i].name
    # still equal (same file loaded twice): number them
    counts: dict[str, int] = {}
    out = []
    for lab in labels:
        counts[lab] = counts.get(lab, 0) + 1
        out.append(lab if counts[lab] == 1 else f"{lab}~{counts[lab]}")
    return out


def _summarizer(summarizer_model: str | Any | None) -> Any:
    if summarizer_model is None:
        return StructuredSummarizer()
    if isinstance(summarizer_model, str):
        from langchain.chat_models import init_chat_model

        return init_chat_model(summarizer_model)
    return summarizer_model


def _progress(total: int, desc: str, enabled: bool, leave: bool = True) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        disable=not enabled,
        leave=leave,
        unit="call" if not leave else "run",
        dynamic_ncols=True,
    )


def replay(
    transcript: Transcript | str | Path,
    strategy: str | AgentMiddleware = "ars",
    *,
    settings: CompressionSettings | None = None,
    pm: pluggy.PluginManager | None = None,
    out_dir: str | Path | None = None,
    summarizer_model: str | Any | None = None,
    context_window: int | None = None,
    measure: str = "char-class",
    limit_calls: int | None = None,
    keep_views: bool = False,
    label: str | None = None,
    format: str | None = None,
    progress: bool = False,
    price_model: str | PriceRow | None = None,
    prices: str | Path | PriceTable | None = None,
) -> ReplayResult:
    """Replay one transcript through one strategy.

    Args:
        transcript: a loaded :class:`Transcript`, or a file holding exactly one run.
        strategy: a registered strategy name (``"ars"``) or an ``AgentMiddleware`` instance.
        settings: the five fields (default: the ARS defaults).
        pm: plugin manager for strategies and formats (default: with entry points).
        out_dir: offloads and histories go to ``<out_dir>/files/<transcript>/<strategy>``
            (a temporary folder when ``None``).
        summarizer_model: ``"provider:model"`` (``init_chat_model``) or a chat model for L2
            summaries; ``None``: the offline structured summarizer.
        context_window: the placeholder model's ``profile["max_input_tokens"]``.
        measure: the measuring estimator, ``"char-class"`` or ``"tiktoken"``.
        limit_calls: replay at most this many model calls.
        keep_views: keep every request view in ``result.views``.
        label: the transcript's label in the rows (default: ``Transcript.name``).
        format: the transcript format name when ``transcript`` is a path.
        progress: show a progress bar over the calls.

        price_model, prices: the price row of the cost columns, ``"provider:model"`` of the
            ``prices`` file (default: the shipped table and its default row; see
            :func:`ctxlab.replay.run_measures.resolve_price`).

    Raises:
        KeyError: unknown strategy or price row.  TranscriptError: the file cannot be loaded.
        PriceTableError: an invalid price file.
        ValueError: the file holds several runs (use :func:`replay_many`).
    """
    settings = settings or CompressionSettings()
    price = resolve_price(price_model, prices)
    if pm is None:
        pm = make_lab_manager(load_entrypoints=True)
    if not isinstance(transcript, Transcript):
        loaded = load_transcripts(transcript, format=format, pm=pm)
        if len(loaded) != 1:
            raise ValueError(f"{transcript} holds {len(loaded)} runs; use replay_many")
        transcript = loaded[0]
    label = label or transcript.name
    strategy_label = strategy if isinstance(strategy, str) else strategy.name
    files = _files_dir(out_dir, label, strategy_label)
    name, mw = build_middleware(
        strategy, settings=settings, pm=pm, files_dir=files, summarizer=_summarizer(summarizer_model)
    )
    bar = _progress(_count_calls(transcript, limit_calls), label, progress, leave=False)
    try:
        result = replay_one(
            transcript,
            label,
            name,
            mw,
            settings=settings,
            measure=make_measure(measure),
            context_window=context_window,
            limit_calls=limit_calls,
            keep_views=keep_views,
            on_call=bar.update,
            price=price,
        )
    finally:
        bar.close()
    result.measure = measure
    result.files_dir = files
    result.sources[label] = transcript.source
    return result


def _files_dir(out_dir: str | Path | None, label: str, strategy: str) -> Path:
    base = Path(out_dir) / "files" if out_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-replay-"))
    return base / safe_name(label) / safe_name(strategy)


def replay_many(
    paths_or_transcripts: str | Path | Transcript | Iterable[str | Path | Transcript],
    strategies: Sequence[str | AgentMiddleware] | str = ("ars",),
    *,
    settings: CompressionSettings | None = None,
    out_dir: str | Path | None = None,
    format: str | None = None,
    pm: pluggy.PluginManager | None = None,
    summarizer_model: str | Any | None = None,
    context_window: int | None = None,
    measure: str = "char-class",
    limit_calls: int | None = None,
    keep_views: bool = False,
    progress: bool = True,
    price_model: str | PriceRow | None = None,
    prices: str | Path | PriceTable | None = None,
    labels: Sequence[str] | None = None,
) -> ReplayResult:
    """Replay every transcript × strategy; a bad file or a failing run never stops the batch.

    Args:
        paths_or_transcripts: files, folders (walked recursively) and/or loaded transcripts.
        strategies: strategy names (or ``AgentMiddleware`` instances); a string may hold
            several names separated by commas.
        settings, pm, summarizer_model, context_window, measure, limit_calls, keep_views:
            as for :func:`replay`.
        out_dir: root of the files written by the middlewares (``<out_dir>/files/...``);
            a temporary folder when ``None``.  Reports are written by
            :func:`ctxlab.analysis.report.write_report`.
        format: the transcript format name (default: detected per file).
        progress: progress bars over the runs and the calls of the current run.
        price_model, prices: the price row of the cost columns, as for :func:`replay`.
        labels: the transcripts' labels, one per transcript in load order (default:
            :func:`transcript_labels`); :mod:`ctxlab.replay.parallel` passes the labels of the
            whole batch when it replays one transcript per task.

    Returns:
        A :class:`ReplayResult`; files that failed to load and runs that failed are in
        ``result.errors``.

    Raises:
        KeyError: an unknown strategy name or price row (checked before anything is replayed).
        PriceTableError: an invalid price file.
        ValueError: ``labels`` does not hold one label per transcript.
    """

    settings = settings or CompressionSettings()
    price = resolve_price(price_model, prices)
    if pm is None:
        pm = make_lab_manager(load_entrypoints=True)
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    known = registered_strategies(pm)
    for s in strategies:
        if isinstance(s, str) and s not in known:
            raise KeyError(f"unknown strategy {s!r}; known: {', '.join(sorted(known)) or '(none)'}")

    if isinstance(paths_or_transcripts, (str, Path, Transcript)):
        paths_or_transcripts = [paths_or_transcripts]
    transcripts: list[Transcript] = []
    paths: list[str | Path] = []
    for item in paths_or_transcripts:
        (transcripts if isinstance(item, Transcript) else paths).append(item)  # type: ignore[arg-type]
    result = ReplayResult(settings=settings, measure=measure, price=price)
    if paths:
        loaded, load_errors = load_many(paths, format=format, pm=pm)
        transcripts.extend(loaded)
        result.errors.extend(ReplayIssue.from_transcript_error(e) for e in load_errors)
    if labels is None:
        labels = transcript_labels(transcripts)
    elif len(labels) != len(transcripts):
        raise ValueError(f"{len(labels)} labels for {len(transcripts)} transcripts")
    names = [s if isinstance(s, str) else s.name for s in strategies]
    result.strategies = list(dict.fromkeys(names))
    root = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-replay-"))
    result.files_dir = root / "files"
    meter = make_measure(measure)
    summarizer = _summarizer(summarizer_model)
    jobs = [(t, lab, s) for t, lab in zip(transcripts, labels, strict=True) for s in strategies]
    outer = _progress(len(jobs), "replay", progress)
    try:
        for t, lab, s in jobs:
            sname = s if isinstance(s, str) else s.name
            outer.set_postfix_str(f"{lab[-40:]} [{sname}]", refresh=False)
            result.sources[lab] = t.source
            inner = _progress(_count_calls(t, limit_calls), "calls", progress, leave=False)
            try:
                name, mw = build_middleware(
                    s, settings=settings, pm=pm, files_dir=_files_dir(root, lab, sname), summarizer=summarizer
                )
                one = replay_one(
                    t,
                    lab,
                    name,
                    mw,
                    settings=settings,
                    measure=meter,
                    context_window=context_window,
                    limit_calls=limit_calls,
                    keep_views=keep_views,
                    on_call=inner.update,
                    price=price,
                )
                result.extend(one)
            except Exception as exc:  # one failing run never stops the batch
                logger.exception("replay of %s with %s failed", lab, sname)
                result.errors.append(
                    ReplayIssue(
                        kind="replay",
                        source=t.source,
                        transcript=lab,
                        strategy=sname,
                        problem=f"{type(exc).__name__}: {exc}",
                    )
                )
            finally:
                inner.close()
                outer.update(1)
    finally:
        outer.close()
    return result


# --- a sweep over one setting -------------------------------------------------------------------


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
