"""Sweeps past one process: transcripts × strategies × settings on local cores or a Ray cluster.

:func:`run_grid` replays every transcript run × strategy × settings point of a grid, serially,
on ``jobs`` local processes (:class:`multiprocessing.pool.Pool`; Ctrl-C is the parent's) or on Ray
(``engine="ray"``, ``ctxlab[ray]``), with the same results: each task is one
:func:`~ctxlab.replay.engine.replay_many` call over one run and one strategy, and the results
are merged in the serial loop's order (settings point, transcript in load order, strategy).
Only ``overhead_ms`` (wall time) differs from one run to another.

A task (:class:`GridTask`) is picklable and small: a file path, the run's position and label, a
strategy *name*, the settings and replay options — never a live transcript, middleware or model.
Each worker builds its own plugin manager (entry points plus ``plugins_dir``) and loads the file
itself (its loader warnings unsaid: the parent said them), so a strategy or format must be
installed wherever a task runs.  On a Ray cluster the middlewares' files are written under
``out_dir`` on the machine that ran the task; the rows come back to the caller.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.cost import DEFAULT_BREAKPOINTS
from ctxlab.replay.engine import batch_result, replay_many, transcript_labels
from ctxlab.replay.names import did_you_mean
from ctxlab.replay.result import ReplayIssue, ReplayResult
from ctxlab.replay.resume import add_cache_stats, grid_runs
from ctxlab.replay.strategies import make_lab_manager
from ctxlab.replay.strategies import strategies as registered_strategies
from ctxlab.transcripts import TranscriptWarning, load_many, load_transcripts

if TYPE_CHECKING:
    import pluggy
    import polars as pl

__all__ = [
    "ENGINES",
    "GridResult",
    "GridTask",
    "RayUnavailableError",
    "grid_tasks",
    "run_batch",
    "run_grid",
    "run_task",
]

#: the execution engines of :func:`run_grid`
ENGINES = ("local", "ray")


class RayUnavailableError(RuntimeError):
    """``engine="ray"`` was asked for but the ``ray`` package cannot be imported
    (``pip install 'ctxlab[ray]'``)."""


@dataclass(frozen=True)
class GridTask:
    """One unit of work: one transcript run × one strategy × one settings point (picklable).

    Attributes:
        index: the task's position in the serial order (results are merged by it).
        point: the index of the settings point in the grid.
        path: the transcript file; ``run``: the run's position among the runs the file holds.
        label: the run's label in the rows (unique over the whole grid, as the serial replay
            labels it: :func:`~ctxlab.replay.engine.transcript_labels`).
        strategy: a registered strategy name.
        settings: the settings of this point.
        out_dir: root of the middlewares' files (``<out_dir>/files/<label>/<strategy>``).
        format: the transcript format name (``None``: detected).
        plugins_dir: a folder of plugin ``.py`` files to load besides the entry points.
        options: further keyword arguments of :func:`~ctxlab.replay.engine.replay_many`
            (``measure``, ``limit_calls``, ``context_window``, ``summarizer_model`` as a
            ``"provider:model"`` string, ``keep_views``); plain values only.
        size: the run's message count (bigger tasks are started first; no effect on results).
    """

    index: int
    point: int
    path: str
    run: int
    label: str
    strategy: str
    settings: CompressionSettings
    out_dir: str
    format: str | None = None
    plugins_dir: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    size: int = 0


@dataclass
class GridResult:
    """The results of :func:`run_grid`: one merged :class:`ReplayResult` per settings point.

    Attributes:
        settings: the settings points, in the order given.
        results: ``results[i]`` holds every transcript × strategy of ``settings[i]``, rows in the
            serial order (transcripts in load order, strategies in the order given); load errors
            first in its ``errors``, then the failed runs.
        engine: ``"local"`` or ``"ray"``; ``jobs``: the local processes (1: in-process).
    """

    settings: list[CompressionSettings] = field(default_factory=list)
    results: list[ReplayResult] = field(default_factory=list)
    engine: str = "local"
    jobs: int = 1

    def frame(self) -> pl.DataFrame:
        """Every point's per-call rows, with a ``point`` column (the settings index) first."""
        import polars as pl

        frames = [r.frame().with_columns(pl.lit(i).alias("point")) for i, r in enumerate(self.results)]
        if not frames:
            return pl.DataFrame()
        out = pl.concat(frames, how="vertical")
        return out.select(["point", *[c for c in out.columns if c != "point"]])


# --- the worker ---------------------------------------------------------------------------------

#: per process: plugin managers by plugins folder; the runs of the files loaded, by (path, format,
#: plugins folder).  :func:`run_grid` fills both before it starts local workers, so that a forked
#: worker (the default on Linux) inherits them instead of loading every file again; a worker
#: started afresh (spawn, Ray) loads what its tasks need and keeps the last few files.
_MANAGERS: dict[str | None, pluggy.PluginManager] = {}
_FILES: OrderedDict[tuple[str, str | None, str | None], list[Any]] = OrderedDict()
_FILES_KEPT = 4
_PLANNED: dict[tuple[str, str | None, str | None], list[Any]] = {}


def _manager(plugins_dir: str | None) -> pluggy.PluginManager:
    pm = _MANAGERS.get(plugins_dir)
    if pm is None:
        pm = _MANAGERS[plugins_dir] = make_lab_manager(load_entrypoints=True, plugins_dir=plugins_dir)
    return pm


def _runs(path: str, format: str | None, plugins_dir: str | None) -> list[Any]:
    key = (path, format, plugins_dir)
    planned = _PLANNED.get(key)
    if planned is not None:
        return planned
    runs = _FILES.get(key)
    if runs is None:
        with warnings.catch_warnings():  # the parent said them when it planned (s40 trial)
            warnings.simplefilter("ignore", TranscriptWarning)
            runs = load_transcripts(path, format=format, pm=_manager(plugins_dir))
        _FILES[key] = runs
        while len(_FILES) > _FILES_KEPT:
            _FILES.popitem(last=False)
    else:
        _FILES.move_to_end(key)
    return runs


def run_task(task: GridTask) -> ReplayResult:
    """Replay one task (module-level, so that worker processes and Ray can call it by name).

    Returns:
        The task's :class:`ReplayResult`.  A failure inside the replay is an entry of its
        ``errors`` (as in :func:`~ctxlab.replay.engine.replay_many`); a file that no longer
        loads, or no longer holds the run, is a ``"load"`` entry.
    """
    pm = _manager(task.plugins_dir)
    options = dict(task.options)
    try:
        transcript = _runs(task.path, task.format, task.plugins_dir)[task.run]
    except Exception as exc:  # the file changed since the grid was planned
        result = ReplayResult(settings=task.settings, measure=options.get("measure", "char-class"))
        result.errors.append(
            ReplayIssue(kind="load", source=task.path, problem=f"{type(exc).__name__}: {exc}")
        )
        return result
    return replay_many(
        [transcript],
        [task.strategy],
        settings=task.settings,
        out_dir=task.out_dir,
        pm=pm,
        progress=False,
        labels=[task.label],
        **options,
    )


def run_batch(tasks: Sequence[GridTask]) -> list[ReplayResult]:
    """Replay several tasks in order (one file's runs × strategies: the file is loaded once)."""
    return [run_task(t) for t in tasks]


# --- planning and merging -----------------------------------------------------------------------


def grid_tasks(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    strategies: Sequence[str],
    settings: Sequence[CompressionSettings],
    *,
    out_dir: str | os.PathLike[str],
    format: str | None = None,
    plugins_dir: str | os.PathLike[str] | None = None,
    pm: pluggy.PluginManager | None = None,
    options: dict[str, Any] | None = None,
) -> tuple[list[GridTask], list[ReplayIssue], list[str]]:
    """Plan a grid: load every file once here (for the labels and the runs it holds).

    Returns:
        ``(tasks in serial order, load errors, the runs' labels)``.  With several settings
        points, each point's files go to ``<out_dir>/point-<i>``.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    pm = pm or make_lab_manager(load_entrypoints=True, plugins_dir=plugins_dir)
    transcripts, load_errors = load_many(list(paths), format=format, pm=pm)
    labels = transcript_labels(transcripts)
    plugins_key = os.fspath(plugins_dir) if plugins_dir is not None else None
    by_file: dict[str, list[Any]] = {}
    for t in transcripts:
        by_file.setdefault(t.source, []).append(t)
    _PLANNED.clear()
    _PLANNED.update({(src, format, plugins_key): runs for src, runs in by_file.items()})
    _MANAGERS.setdefault(plugins_key, pm)
    runs: list[tuple[str, int, str, int]] = []
    seen: dict[str, int] = {}
    for t, lab in zip(transcripts, labels, strict=True):
        run = seen.get(t.source, 0)
        seen[t.source] = run + 1
        runs.append((t.source, run, lab, len(t.messages)))
    opts = tuple(sorted((options or {}).items()))
    root = Path(out_dir)
    tasks: list[GridTask] = []
    for p, point in enumerate(settings):
        point_dir = root / f"point-{p}" if len(settings) > 1 else root
        for source, run, lab, size in runs:
            for s in strategies:
                tasks.append(
                    GridTask(
                        index=len(tasks),
                        point=p,
                        path=source,
                        run=run,
                        label=lab,
                        strategy=s,
                        settings=point,
                        out_dir=str(point_dir),
                        format=format,
                        plugins_dir=os.fspath(plugins_dir) if plugins_dir is not None else None,
                        options=opts,
                        size=size,
                    )
                )
    return tasks, [ReplayIssue.from_transcript_error(e) for e in load_errors], labels


def _batches(tasks: Sequence[GridTask]) -> list[list[GridTask]]:
    """The tasks grouped by settings point and file, the biggest batches first."""
    groups: dict[tuple[int, str], list[GridTask]] = {}
    for t in tasks:
        groups.setdefault((t.point, t.path), []).append(t)
    return sorted(groups.values(), key=lambda b: -sum(t.size for t in b))


_Done = Callable[[GridTask, ReplayResult], None]


def _execute_local(tasks: Sequence[GridTask], jobs: int, on_done: _Done) -> list[ReplayResult]:
    results: dict[int, ReplayResult] = {}
    if jobs <= 1:
        for t in tasks:
            results[t.index] = run_task(t)
            on_done(t, results[t.index])
        return [results[t.index] for t in tasks]
    import multiprocessing

    batches = _batches(tasks)
    # workers ignore Ctrl-C (no traceback from each of them); the parent's KeyboardInterrupt
    # leaves the ``with``, whose ``terminate`` stops them at once, and what finished is kept
    with multiprocessing.Pool(jobs, initializer=_ignore_interrupts) as pool:
        for number, done in pool.imap_unordered(_run_numbered, enumerate(batches)):
            for t, one in zip(batches[number], done, strict=True):
                results[t.index] = one
                on_done(t, one)
    return [results[t.index] for t in tasks]


def _ignore_interrupts() -> None:
    """A local worker's initializer: Ctrl-C is the parent's to handle (``_execute_local``)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_numbered(numbered: tuple[int, list[GridTask]]) -> tuple[int, list[ReplayResult]]:
    """:func:`run_batch` of a numbered batch, returning its number (results arrive unordered)."""
    number, batch = numbered
    return number, run_batch(batch)


def _execute_ray(
    tasks: Sequence[GridTask], address: str | None, init_kwargs: dict[str, Any], on_done: _Done
) -> list[ReplayResult]:
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(
            "engine='ray' needs the ray package: pip install 'ctxlab[ray]' (or use the local engine, --jobs N)"
        ) from exc
    started = False
    if not ray.is_initialized():
        kwargs = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
        ray.init(address=address, **kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(run_batch)
        refs = {remote.remote(batch): batch for batch in _batches(tasks)}
        results: dict[int, ReplayResult] = {}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                for t, one in zip(refs[ref], ray.get(ref), strict=True):
                    results[t.index] = one
                    on_done(t, one)
        return [results[t.index] for t in tasks]
    finally:
        if started:
            ray.shutdown()


def run_grid(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    strategies: Sequence[str] | str = ("ars",),
    settings: CompressionSettings | Sequence[CompressionSettings] | None = None,
    *,
    jobs: int = 1,
    engine: str = "local",
    ray_address: str | None = None,
    ray_init: dict[str, Any] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    format: str | None = None,
    plugins_dir: str | os.PathLike[str] | None = None,
    measure: str = "char-class",
    limit_calls: int | None = None,
    context_window: Any = "price",
    summarizer_model: str | None = None,
    unrecorded_prefix: str | int = "auto",
    keep_views: bool = False,
    write_views: bool = False,
    summary_cache: str | None = None,
    price_model: Any = None,
    cache_breakpoints: str = DEFAULT_BREAKPOINTS,
    progress: bool = False,
    summarizer_latency: str | None = None,
    call_latency: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> GridResult:
    """Replay transcript files × strategies × settings points, in parallel, as the serial loop would.

    Args:
        paths: transcript files and folders (walked recursively), as for
            :func:`~ctxlab.replay.engine.replay_many`; live transcripts are not accepted (a
            task carries a path, never an object).
        strategies: registered strategy names (a string may hold several, comma-separated).
        settings: one settings point or several (default: the ARS defaults).
        jobs: local worker processes (``engine="local"``); 1 replays in this process.
        engine: ``"local"`` or ``"ray"`` (needs ``ctxlab[ray]``).
        ray_address: the cluster to join (``ray.init(address=...)``; ``None``: ``$RAY_ADDRESS``
            or a new local instance).  Ignored when Ray is already initialized; a Ray instance
            started here is shut down at the end.
        ray_init: more keyword arguments of ``ray.init`` (e.g. ``{"num_cpus": 2}``).
        out_dir: root of the middlewares' files (a temporary folder when ``None``).
        format, plugins_dir, measure, limit_calls, context_window, unrecorded_prefix, keep_views,
            write_views: as
            for :func:`~ctxlab.replay.engine.replay_many` (``plugins_dir`` is loaded by every
            worker; the views go to ``out_dir``).
        summary_cache: the SQLite file of the summarizer's reply cache, shared by the workers
            (:mod:`ctxlab.replay.summary_cache`); the merged result's provenance sums their hits
            and misses.
        summarizer_model: a ``"provider:model"`` string (``init_chat_model``, built by each
            worker) or ``None`` for the offline summarizer.
        price_model: the price row of the cost columns (a name or a picklable row), as for
            :func:`~ctxlab.replay.engine.replay_many`; ``cache_breakpoints``: its breakpoint policy.
        progress: a progress bar over the finished tasks.
        summarizer_latency, call_latency: the simulated latencies of the stall columns, as for
            :func:`~ctxlab.replay.engine.replay_many` (``"2s"``, ``"uniform:1s,3s"``, ...).
        checkpoint: a folder keeping every finished task as it finishes (:mod:`ctxlab.replay.resume`;
            ``None``: none).  resume: reuse the tasks ``checkpoint`` holds from an earlier,
            interrupted grid with the same settings and versions, and replay only the others.

    Returns:
        A :class:`GridResult`, one merged :class:`ReplayResult` per settings point.  Its rows
        equal those of ``replay_many(paths, strategies, settings=point)`` except for
        ``overhead_ms`` (wall time).

    Raises:
        KeyError: an unknown strategy name (checked before anything runs).
        ValueError: an unknown engine, ``jobs`` < 1, or a ``summarizer_model`` that is not a string.
        RayUnavailableError: ``engine="ray"`` without the ``ray`` package.
        ResumeError: ``resume=True`` and ``checkpoint`` holds another grid.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: allowed {', '.join(ENGINES)}")
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: allowed an integer >= 1")
    if summarizer_model is not None and not isinstance(summarizer_model, str):
        raise ValueError("summarizer_model must be a 'provider:model' string (tasks carry no live objects)")
    names = (
        [s.strip() for s in strategies.split(",") if s.strip()]
        if isinstance(strategies, str)
        else list(strategies)
    )
    points = (
        [settings] if isinstance(settings, CompressionSettings) else list(settings or [CompressionSettings()])
    )
    pm = make_lab_manager(load_entrypoints=True, plugins_dir=plugins_dir)
    known = registered_strategies(pm)
    for s in names:
        if s not in known:
            raise KeyError(
                f"unknown strategy {s!r}{did_you_mean(s, known)}; known: {', '.join(sorted(known))}"
            )
    root = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-grid-"))
    options = {
        "measure": measure,
        "limit_calls": limit_calls,
        "context_window": context_window,
        "unrecorded_prefix": unrecorded_prefix,
        "summarizer_model": summarizer_model,
        "keep_views": keep_views,
        "write_views": write_views,
        "summary_cache": summary_cache,
        "cache_breakpoints": cache_breakpoints,
        "summarizer_latency": summarizer_latency,
        "call_latency": call_latency,
    }
    if price_model is not None:
        options["price_model"] = price_model
    if resume and checkpoint is None:
        raise ValueError("resume=True needs the checkpoint folder of the grid to resume")
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    tasks, load_errors, _ = grid_tasks(
        paths, names, points, out_dir=root, format=format, plugins_dir=plugins_dir, pm=pm, options=options
    )
    store, stored = grid_runs(
        checkpoint, resume, tasks, points, names, paths, pm, options, format, price_model
    )
    todo = [t for t in tasks if t.index not in stored]
    bar: Any = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"grid ({engine})", unit="run", dynamic_ncols=True)

    def on_done(task: GridTask, one: ReplayResult) -> None:
        if store is not None:
            store.save(task.label, task.strategy, one, task.point)
        if bar is not None:
            bar.update(1)

    try:
        if engine == "ray":
            fresh = _execute_ray(todo, ray_address, dict(ray_init or {}), on_done)
        else:
            fresh = _execute_local(todo, jobs, on_done)
    finally:
        _PLANNED.clear()  # the planner's transcripts are not kept past the grid
        if bar is not None:
            bar.close()
    by_index = {**stored, **{t.index: one for t, one in zip(todo, fresh, strict=True)}}
    done = [by_index[t.index] for t in tasks]
    out = GridResult(settings=points, engine=engine, jobs=jobs)
    for p, point in enumerate(points):
        # what the serial replay records: settings, measure, price row, window, provenance
        merged = batch_result(
            list(dict.fromkeys(names)),
            settings=point,
            pm=pm,
            measure=measure,
            context_window=context_window,
            summarizer_model=summarizer_model,
            price_model=price_model,
            cache_breakpoints=cache_breakpoints,
            unrecorded_prefix=unrecorded_prefix,
        )
        merged.files_dir = (root / f"point-{p}" if len(points) > 1 else root) / "files"
        merged.errors.extend(load_errors)
        for task, one in zip(tasks, done, strict=True):
            if task.point == p:
                merged.extend(one)
                add_cache_stats(merged, one)
        out.results.append(merged)
    return out
