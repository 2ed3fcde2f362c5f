"""Replays that survive an interruption: finished runs are kept as they finish, and a resumed
replay skips them.

A **checkpoint folder** (``ctxlab replay``/``compare`` use their staging folder,
``OUT/.ctxlab-staging``, where the middlewares write their files and views) holds:

* ``resume.json`` — what the replay is (:func:`resume_spec`): ctxlab's version and the versions of
  the packages and plugins that shape the numbers, the ``CTXLAB_*`` environment, the settings of
  every point, the strategies, the measure, the window, the price row, the summarizer, the call
  limit, the format and the transcript paths;
* ``runs/`` — one file per finished transcript × strategy run (per settings point): its
  :class:`~ctxlab.replay.ReplayResult`, pickled, written atomically when the transcript's runs
  finish.

:meth:`RunStore.open` with ``resume=True`` refuses a folder whose ``resume.json`` differs from this
replay's (:class:`ResumeError` names each field that differs: nothing is mixed); with
``resume=False`` it starts afresh.  :func:`replay_resumable` (the serial replay) and
:func:`ctxlab.replay.parallel.run_grid` (``checkpoint=``, ``resume=``) replay only what the
folder does not hold and merge stored and new runs in the serial order, so a resumed replay
gives the rows of an uninterrupted one (``overhead_ms``, wall time, aside).  A run is replayed
again when its stored result holds a failed run (``kind="replay"``: it may have failed for a
reason that passed); its partial files and views are removed first.

The run files are pickles: read them only from a folder your own replay wrote.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.names import safe_name, transcript_labels
from ctxlab.replay.result import ReplayResult
from ctxlab.replay.views import view_file

if TYPE_CHECKING:
    from collections.abc import Callable

    import pluggy

    from ctxlab.replay.options import ReplayOptions
    from ctxlab.transcripts.base import Transcript

__all__ = [
    "RESUME_FILE",
    "ResumeError",
    "RunStore",
    "add_cache_stats",
    "clear_run",
    "grid_runs",
    "open_store",
    "replay_resumable",
    "resume_spec",
    "settings_fingerprint",
]

#: the file of a checkpoint folder naming what it holds
RESUME_FILE = "resume.json"
#: the folder of the finished runs inside a checkpoint folder
RUNS_DIR = "runs"
#: the provenance keys (:func:`ctxlab.replay.provenance.provenance`) a resumed replay must share
SPEC_KEYS = (
    "ctxlab",
    "packages",
    "plugins",
    "environment",
    "measure",
    "context_window",
    "strategies",
    "summarizer",
    "cost_model",
)


class _Task(Protocol):
    """What :func:`grid_runs` reads of a :class:`ctxlab.replay.parallel.GridTask`."""

    @property
    def index(self) -> int: ...
    @property
    def point(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def out_dir(self) -> str: ...


class ResumeError(ValueError):
    """A checkpoint folder that holds another replay (other settings, strategies, versions ...):
    the message names the folder and each field that differs."""


def resume_spec(
    provenance: dict[str, Any],
    *,
    settings: Sequence[dict[str, Any]],
    paths: Sequence[str],
    options: dict[str, Any],
) -> dict[str, Any]:
    """What a replay is, for :class:`RunStore` (JSON-ready).

    Args:
        provenance: the replay's provenance (its :data:`SPEC_KEYS` are kept).
        settings: each settings point as the provenance records it (``provenance["settings"]``).
        paths: the transcript files and folders, made absolute here.
        options: the other options that shape the rows (price row, call limit, format, ...).
    """
    spec = {k: provenance.get(k) for k in SPEC_KEYS}
    spec["settings"] = list(settings)
    spec["paths"] = [os.path.abspath(p) for p in paths]
    spec["options"] = options
    back: dict[str, Any] = json.loads(json.dumps(spec, default=str, sort_keys=True))  # as it reads back
    return back


def settings_fingerprint(settings: CompressionSettings) -> dict[str, Any]:
    """The settings as :func:`resume_spec` compares them: the five fields and the language, a
    custom prompt as its SHA-256."""
    import hashlib

    out = dict(settings.to_dict())
    prompt = out.pop("summary_prompt", None)
    out["summary_prompt_sha256"] = (
        hashlib.sha256(str(prompt).encode("utf-8")).hexdigest() if prompt is not None else None
    )
    return out


#: the replay options that shape the rows besides the provenance (:func:`open_store`)
SPEC_OPTIONS = ("limit_calls", "format", "provider_count", "write_views", "unrecorded_prefix")


def open_store(
    folder: str | os.PathLike[str],
    *,
    resume: bool,
    points: Sequence[CompressionSettings],
    strategies: Sequence[str],
    paths: Sequence[str | os.PathLike[str]],
    **options: Unpack[ReplayOptions],
) -> RunStore:
    """:meth:`RunStore.open` for a replay of ``paths`` × ``strategies`` × ``points`` with the
    :class:`~ctxlab.replay.engine.ReplayOptions` ``options``: its spec is the provenance of that
    replay (versions, plugins, environment, measure, window, strategies, summarizer), every
    point's :func:`settings_fingerprint`, the price row, :data:`SPEC_OPTIONS` and the paths.

    Raises:
        ResumeError: ``resume=True`` and the folder holds another replay.
    """
    from ctxlab.replay.engine import replay_many

    header_options: ReplayOptions = {**options, "settings": points[0], "progress": False}
    header = replay_many([], list(strategies), **header_options)
    spec = resume_spec(
        header.provenance,
        settings=[settings_fingerprint(p) for p in points],
        paths=[os.fspath(p) for p in paths],
        options={
            "price": header.price.key if header.price is not None else None,
            **{k: options.get(k) for k in SPEC_OPTIONS},
        },
    )
    return RunStore.open(folder, spec, resume=resume)


def _differences(old: dict[str, Any], new: dict[str, Any], where: str = "") -> list[str]:
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        name = f"{where}.{key}" if where else key
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(_differences(a, b, name))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                item = name if len(a) == 1 else f"{name}[{i}]"
                if isinstance(x, dict) and isinstance(y, dict):
                    out.extend(_differences(x, y, item))
                elif x != y:
                    out.append(
                        f"{item}: {json.dumps(x, default=str)[:80]} then, {json.dumps(y, default=str)[:80]} now"
                    )
        else:
            out.append(
                f"{name}: {json.dumps(a, default=str)[:80]} then, {json.dumps(b, default=str)[:80]} now"
            )
    return out


@dataclass
class RunStore:
    """A checkpoint folder (module doc): finished runs by settings point, transcript label and
    strategy.  Make one with :meth:`open`."""

    folder: Path
    spec: dict[str, Any]

    @classmethod
    def open(cls, folder: str | os.PathLike[str], spec: dict[str, Any], *, resume: bool) -> RunStore:
        """The checkpoint folder for a replay described by ``spec`` (:func:`resume_spec`).

        ``resume=False``: the runs the folder held are removed (a fresh start).  ``resume=True``:
        they are kept when the folder's ``resume.json`` equals ``spec``.

        Raises:
            ResumeError: ``resume=True`` and the folder holds another replay.
        """
        root = Path(folder)
        saved = root / RESUME_FILE
        if resume and saved.is_file():
            old = json.loads(saved.read_text(encoding="utf-8"))
            diff = _differences(old, spec)
            if diff:
                raise ResumeError(
                    f"{root} holds a replay with other settings or versions; nothing was mixed "
                    f"(run without --resume to start over): {'; '.join(diff[:6])}"
                    + (f"; ... {len(diff) - 6} more" if len(diff) > 6 else "")
                )
        elif (root / RUNS_DIR).is_dir():
            shutil.rmtree(root / RUNS_DIR)
        (root / RUNS_DIR).mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return cls(root, spec)

    def _path(self, label: str, strategy: str, point: int) -> Path:
        return self.folder / RUNS_DIR / f"{point}" / safe_name(label) / f"{safe_name(strategy)}.pickle"

    def load(self, label: str, strategy: str, point: int = 0) -> ReplayResult | None:
        """The finished run, or ``None`` (not finished, or it failed: replay it again)."""
        path = self._path(label, strategy, point)
        if not path.is_file():
            return None
        with path.open("rb") as f:
            result = pickle.load(f)  # a folder this replay wrote (module doc)
        if not isinstance(result, ReplayResult) or any(e.kind == "replay" for e in result.errors):
            return None
        return result

    def save(self, label: str, strategy: str, result: ReplayResult, point: int = 0) -> None:
        """Keep a finished run (written to a temporary file, then renamed: never half a file)."""
        path = self._path(label, strategy, point)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)

    def finished(self) -> int:
        """How many runs the folder holds."""
        return sum(1 for _ in (self.folder / RUNS_DIR).rglob("*.pickle"))


def clear_run(out_dir: str | Path, label: str, strategy: str) -> None:
    """Remove what an interrupted run may have left in ``out_dir``: its files and its views."""
    shutil.rmtree(Path(out_dir) / "files" / safe_name(label) / safe_name(strategy), ignore_errors=True)
    view_file(out_dir, label, strategy).unlink(missing_ok=True)


def add_cache_stats(merged: ReplayResult, one: ReplayResult) -> None:
    """Sum a run's summary cache hits and misses into the merged result's provenance, and add
    what wrote its strategy's summaries (as the serial replay records them)."""
    if "summarizers" in one.provenance:
        merged.provenance.setdefault("summarizers", {}).update(one.provenance["summarizers"])
    stats = one.provenance.get("summary_cache")
    if stats:
        total = merged.provenance.setdefault("summary_cache", {"path": stats["path"], "hits": 0, "misses": 0})
        total["hits"] += stats["hits"]
        total["misses"] += stats["misses"]


def split_by_strategy(result: ReplayResult, names: Sequence[str]) -> dict[str, ReplayResult]:
    """One transcript's result cut into one result per strategy name (rows, events, summaries,
    offloads, views, problems and the runs' warnings; a strategy's rows carry its row label, which
    ``result.provenance["strategies"]`` maps to the name)."""
    records = result.provenance.get("strategies") or {}
    out: dict[str, ReplayResult] = {}
    for name in names:
        labels = {name, *(label for label, r in records.items() if r.get("strategy") == name)}
        part = ReplayResult(
            settings=result.settings,
            strategies=[s for s in result.strategies if s in labels],
            measure=result.measure,
            files_dir=result.files_dir,
            sources=dict(result.sources),
            price=result.price,
            window=result.window,
        )
        part.rows = [r for r in result.rows if r.get("strategy") in labels]
        part.events = [e for e in result.events if e.get("strategy") in labels]
        part.summaries = [s for s in result.summaries if s.get("strategy") in labels]
        part.offloads = [o for o in result.offloads if o.get("strategy") in labels]
        part.errors = [e for e in result.errors if e.strategy in labels]
        part.warnings = [w for w in result.warnings if w.strategy in labels]
        part.prefixes = dict(result.prefixes)
        summarizers = result.provenance.get("summarizers") or {}
        part.provenance["summarizers"] = {k: v for k, v in summarizers.items() if k in labels}
        for attr in ("views", "requests", "updates"):
            getattr(part, attr).update({k: v for k, v in getattr(result, attr).items() if k[1] in labels})
        if result.provenance.get("summary_cache"):
            part.provenance["summary_cache"] = (
                result.provenance["summary_cache"] if name == names[0] else None
            )
        out[name] = part
    return out


def replay_resumable(
    transcripts: Sequence[Transcript],
    strategies: Sequence[str],
    *,
    store: RunStore,
    labels: Sequence[str] | None = None,
    stop_on_failure: bool = False,
    point: int = 0,
    on_transcript: Callable[[], None] | None = None,
    **options: Unpack[ReplayOptions],
) -> ReplayResult:
    """:func:`~ctxlab.replay.engine.replay_many` over loaded transcripts, keeping each
    transcript's runs in ``store`` as they finish and skipping those it holds (module doc).

    Each transcript is replayed by its own ``replay_many`` call over the strategies the store does
    not hold (as :mod:`ctxlab.replay.parallel` replays a task), and the merged result holds the
    runs in the serial order: the rows of ``replay_many(transcripts, strategies, **options)``.

    Args:
        transcripts, strategies: as for ``replay_many`` (strategy *names*).
        store: the checkpoint folder (:meth:`RunStore.open`).
        labels: the transcripts' labels (default :func:`~ctxlab.replay.names.transcript_labels`).
        stop_on_failure: stop after the first run that failed or whose summaries failed.
        point: the settings point (a sweep keeps one set of runs per point).
        on_transcript: called after each transcript (a progress bar).
        **options: :class:`~ctxlab.replay.engine.ReplayOptions`; ``out_dir`` is required (the
            runs' files and views live there beside the store).

    Raises:
        ValueError: no ``out_dir``.  What ``replay_many`` raises before replaying.
    """
    from ctxlab.replay.engine import replay_many

    out_dir = options.get("out_dir")
    if out_dir is None:
        raise ValueError("replay_resumable needs out_dir (the runs' files live beside the store)")
    options["progress"] = False
    merged = replay_many([], list(strategies), **options)  # provenance, price, window: no run
    labels = list(labels) if labels is not None else transcript_labels(transcripts)
    for transcript, label in zip(transcripts, labels, strict=True):
        runs = {s: store.load(label, s, point) for s in strategies}
        todo = [s for s, r in runs.items() if r is None]
        if todo:
            for s in todo:
                clear_run(out_dir, label, s)
            fresh = replay_many(
                [transcript], todo, labels=[label], stop_on_failure=stop_on_failure, **options
            )
            for s, part in split_by_strategy(fresh, todo).items():
                if part.rows or part.errors:
                    store.save(label, s, part, point)
                runs[s] = part
        stop = False
        for s in strategies:
            one = runs[s]
            if one is None:
                continue
            merged.extend(one)
            merged.sources[label] = transcript.source
            add_cache_stats(merged, one)
            stop = stop or any(e.kind in ("replay", "summary") for e in one.errors)
        if on_transcript is not None:
            on_transcript()
        if stop and stop_on_failure:
            break
    return merged


def grid_runs(
    checkpoint: str | os.PathLike[str] | None,
    resume: bool,
    tasks: Sequence[_Task],
    points: Sequence[CompressionSettings],
    names: Sequence[str],
    paths: Sequence[Any],
    pm: pluggy.PluginManager,
    options: dict[str, Any],
    format: str | None,
    price_model: Any,
) -> tuple[RunStore | None, dict[int, ReplayResult]]:
    """The checkpoint folder of a :func:`~ctxlab.replay.parallel.run_grid` and the tasks it holds
    (by task index; ``(None, {})`` without a checkpoint); the files an unfinished task may have
    left are removed.

    Raises:
        ResumeError: ``resume=True`` and the folder holds another grid.
    """
    if checkpoint is None:
        return None, {}
    keep = (
        "measure",
        "limit_calls",
        "context_window",
        "summarizer_model",
        "write_views",
        "unrecorded_prefix",
        "cache_breakpoints",
    )
    store = open_store(
        checkpoint,
        resume=resume,
        points=points,
        strategies=names,
        paths=paths,
        pm=pm,
        format=format,
        price_model=price_model,
        **{k: options[k] for k in keep},
    )
    stored: dict[int, ReplayResult] = {}
    for t in tasks:
        one = store.load(t.label, t.strategy, t.point) if resume else None
        if one is not None:
            stored[t.index] = one
        else:
            clear_run(t.out_dir, t.label, t.strategy)
    return store, stored
