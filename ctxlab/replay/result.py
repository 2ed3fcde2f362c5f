"""What a replay produced: :class:`ReplayResult` (rows, views, events, summaries, offloads) and
the problems of a batch, :class:`ReplayIssue`."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxlab.core.settings import CompressionSettings
from ctxlab.core.thrash import SummaryThrashWarning
from ctxlab.replay.metrics import RequestView
from ctxlab.replay.prices import PriceRow
from ctxlab.replay.table import calls_frame, summary_frame
from ctxlab.transcripts.base import TranscriptError

if TYPE_CHECKING:
    from collections.abc import Sequence

    import polars as pl

    from ctxlab.replay.diff import RunDiff
    from ctxlab.replay.paired import PairedComparison

__all__ = ["ReplayIssue", "ReplayResult", "raising_plugin", "recording_warnings"]


@dataclass
class ReplayIssue:
    """A problem of a batch: a file that could not be loaded (``kind="load"``), a
    transcript × strategy that failed during replay (``kind="replay"``; ``plugin`` names the
    plugin whose hook raised, ``traceback`` is the traceback), failed summaries
    (``kind="summary"``) or a plugin that failed to load or was skipped (``kind="plugin"``,
    ``source`` the plugin)."""

    kind: str
    source: str
    problem: str
    where: str = ""
    transcript: str | None = None
    strategy: str | None = None
    plugin: str | None = None
    traceback: str = ""

    @classmethod
    def from_exception(
        cls, exc: BaseException, source: str, transcript: str, strategy: str, pm: Any = None
    ) -> ReplayIssue:
        """A failed run (``kind="replay"``) from the exception it raised: the call in its notes,
        its traceback, and the plugin of ``pm`` whose code raised it (the innermost frame in a
        non-builtin plugin's file), when one did."""
        import traceback

        plugin = raising_plugin(exc, pm) if pm is not None else None
        return cls(
            kind="replay",
            source=source,
            transcript=transcript,
            strategy=strategy,
            where="; ".join(getattr(exc, "__notes__", None) or []).removeprefix("ctxlab replay: "),
            problem=(f"plugin {plugin!r}: " if plugin else "") + f"{type(exc).__name__}: {exc}",
            plugin=plugin,
            traceback="".join(traceback.format_exception(exc)),
        )

    def __str__(self) -> str:
        who = self.source
        if self.transcript:
            who = f"{self.transcript} [{self.strategy}]" if self.strategy else self.transcript
        return f"{who}: {self.where}: {self.problem}" if self.where else f"{who}: {self.problem}"

    @classmethod
    def from_transcript_error(cls, err: TranscriptError) -> ReplayIssue:
        return cls(kind="load", source=err.path, where=err.where, problem=err.problem)


def raising_plugin(exc: BaseException, pm: Any) -> str | None:
    """The name of the non-builtin plugin of ``pm`` whose file holds the innermost frame of
    ``exc``'s traceback, else ``None``."""
    import inspect
    import os

    files: dict[str, str] = {}
    for name, plugin in pm.list_name_plugin():
        if plugin is None or name.startswith("ctxlab.builtin."):
            continue
        try:
            path = inspect.getfile(plugin if inspect.ismodule(plugin) else type(plugin))
        except (TypeError, OSError):
            continue
        files[os.path.realpath(path)] = name
    tb, found = exc.__traceback__, None
    while tb is not None:
        found = files.get(os.path.realpath(tb.tb_frame.f_code.co_filename), found)
        tb = tb.tb_next
    return found


@dataclass
class ReplayResult:
    """Everything a replay produced.

    Attributes:
        rows: one dict per model call (:data:`CALL_COLUMNS`).
        views: ``(transcript, strategy, call_index) -> RequestView`` when ``keep_views=True``
            (the last request of the call: the one the model answered).
        requests: the same key -> every request the model received in the call, in order (one,
            or more when the provider refused one with ``ContextOverflowError``), with
            ``keep_views=True``.
        updates: ``(transcript, strategy, call_index) -> [(state key, value), ...]`` when
            ``keep_views=True``: the state writes of the call's hooks besides the model's answer
            (``before_model``'s update, then the ``Command`` update of ``wrap_model_call``: the
            ``_summarization_event`` of an L2 round and the tail-trimmed messages, R11/R12).
        events: every stream event, with ``transcript``, ``strategy`` and ``call_index`` added.
        summaries: one dict per L2 round: ``transcript, strategy, call_index, cutoff_index,
            text, tokens, file_path, error``.
        offloads: one dict per offloaded tool result per call: ``transcript, strategy,
            call_index, path, bytes, first`` (``first``: the first call that offloaded it).
        errors: load and replay problems (:class:`ReplayIssue`).
        warnings: what was said as a warning while the run was made but is no failure
            (:class:`ReplayIssue` of ``kind`` ``"load"``: a loader's warning, e.g. a JSON-lines
            file cut off mid-line, naming the file and the line, or a file skipped as not a
            transcript; ``"setting"``: a value outside its recommended range); ``ctxlab
            replay``/``compare`` fill it with every warning they print, and the run record
            (``run.json`` ``warnings``, the report's "Errors and skipped files") lists them.
        settings: the settings used; ``strategies``: the strategy names; ``measure``: the
            measuring estimator; ``files_dir``: where offloads and histories were written;
            ``price``: the price row of the cost columns (:mod:`ctxlab.replay.cost`).
        sources: transcript label -> its file.
        prefixes: transcript label -> its unrecorded prefix (``tokens``, ``source``, ``calls``,
            ``off_by``, ``raw_off_by``; :class:`ctxlab.replay.prefix.UnrecordedPrefix`).
        window: the provider's context window description (``None``: no window).
        provenance: what produced the result (:func:`ctxlab.replay.provenance.provenance`),
            set by :func:`~ctxlab.replay.engine.replay_many`.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    views: dict[tuple[str, str, int], RequestView] = field(default_factory=dict)
    requests: dict[tuple[str, str, int], list[RequestView]] = field(default_factory=dict)
    updates: dict[tuple[str, str, int], list[tuple[str, Any]]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    offloads: list[dict[str, Any]] = field(default_factory=list)
    errors: list[ReplayIssue] = field(default_factory=list)
    warnings: list[ReplayIssue] = field(default_factory=list)
    settings: CompressionSettings = field(default_factory=CompressionSettings)
    strategies: list[str] = field(default_factory=list)
    measure: str = "char-class"
    files_dir: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)
    prefixes: dict[str, dict[str, Any]] = field(default_factory=dict)
    price: PriceRow | None = None
    window: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def extend(self, other: ReplayResult) -> None:
        """Append another result's rows, views, events, summaries, offloads and errors."""
        self.rows.extend(other.rows)
        self.views.update(other.views)
        self.requests.update(other.requests)
        self.updates.update(other.updates)
        self.events.extend(other.events)
        self.summaries.extend(other.summaries)
        self.offloads.extend(other.offloads)
        self.errors.extend(other.errors)
        self.warnings.extend(w for w in getattr(other, "warnings", []) if w not in self.warnings)
        self.sources.update(other.sources)
        self.prefixes.update(other.prefixes)
        self.price = self.price or other.price
        self.window = self.window or other.window
        if other.provenance.get("summarizers"):
            merged = self.provenance.setdefault("summarizers", {})
            merged.update({k: v for k, v in other.provenance["summarizers"].items() if k not in merged})
        for s in other.strategies:
            if s not in self.strategies:
                self.strategies.append(s)

    def frame(self) -> pl.DataFrame:
        """The per-call rows as a polars DataFrame (see :func:`ctxlab.replay.table.calls_frame`)."""

        return calls_frame(self.rows)

    def summary(self) -> pl.DataFrame:
        """One row per transcript × strategy (see :func:`ctxlab.replay.table.summary_frame`)."""
        return summary_frame(self.frame())

    def compare(
        self,
        a: str,
        b: str,
        measure: str = "saving_pct",
        *,
        data: str | Sequence[str] = "real",
        seed: int = 0,
    ) -> PairedComparison:
        """Strategies ``a`` and ``b`` compared run by run on one per-run column of
        :meth:`summary` (``"saving_pct"``, ``"cost_usd"``, ``"needed_recall"``, ...), with a
        seeded bootstrap interval of the mean difference ``a − b``
        (:func:`ctxlab.replay.paired.paired_comparison`; ``"no compression"`` is a strategy too).

        ``data``: which runs (default the real ones; ``"all"``, or provenances).

        Raises:
            KeyError: an unknown column.  ValueError: an unknown strategy or ``data``.
        """
        from ctxlab.replay.paired import paired_comparison

        return paired_comparison(self.summary(), a, b, measure, data=data, seed=seed)

    def diff(
        self,
        other: ReplayResult,
        *,
        names: Sequence[str] = ("A", "B"),
        data: str | Sequence[str] = "real",
    ) -> RunDiff:
        """This replay (A) against ``other`` (B), per strategy over the runs both hold: settings and
        provenance side by side and the paired differences ``B − A`` of tokens, dollars, needed
        recall and failures with compare's bootstrap intervals (:func:`ctxlab.replay.diff.run_diff`;
        ``.summary()`` the executive summary, ``.table`` the numbers,
        :func:`ctxlab.analysis.plotting.plot_diff` the figure).

        Raises:
            RunDiffError: no strategy in common.  ValueError: a bad ``data``.
        """
        from ctxlab.replay.diff import run_diff

        return run_diff(
            self.summary(), other.summary(), self._record(), other._record(), names=names, data=data
        )

    def _record(self) -> dict[str, Any]:
        """The provenance with the price row, the runs and the calls (what ``run.json`` holds)."""
        return {
            **self.provenance,
            "price": self.price.key if self.price is not None else None,
            "replayed": self.replayed,
            "calls": len(self.rows),
        }

    @property
    def replayed(self) -> int:
        """How many transcript × strategy runs produced at least one row."""
        return len({(r["transcript"], r["strategy"]) for r in self.rows})


#: the warnings :func:`recording_warnings` has shown again (the ``default`` action's registry)
_SHOWN: dict[Any, Any] = {}


@contextmanager
def recording_warnings(result: ReplayResult, transcript: str, strategy: str) -> Iterator[None]:
    """Keep every warning raised while one run replays in ``result.warnings`` (a
    :class:`ReplayIssue` of ``kind`` ``"run"`` naming the transcript and the strategy; one per
    distinct category and text), so that the run record lists it (``run.json`` ``warnings``,
    the report's "Warnings") also when the run was replayed in a worker process (``--jobs``):
    e.g. "conversation history not saved" from the middleware, a plugin's own warning.

    The caller's warning filters decide as usual: an ignored warning is neither kept nor shown,
    one turned into an error raises where it is raised.  Each kept warning is shown again after
    the run (also when the run raised), once per process for the ``default`` action however many
    runs raise it.  Warnings raised on other threads during the run are caught too (the filters
    are the process's).  The middleware's :class:`~ctxlab.core.thrash.SummaryThrashWarning` is
    ignored: the replay measures the same thing per run (``summary_thrash``)."""
    kept: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # the replay says it per run in its own words (summary_thrash, the thrash warning)
            warnings.filterwarnings("ignore", category=SummaryThrashWarning)
            try:
                yield
            finally:
                kept = list(caught)
    finally:
        _keep_and_show(kept, result, transcript, strategy)


def _keep_and_show(
    kept: list[warnings.WarningMessage], result: ReplayResult, transcript: str, strategy: str
) -> None:
    for w in kept:
        issue = ReplayIssue(
            kind="run",
            source=transcript,
            transcript=transcript,
            strategy=strategy,
            problem=f"{w.category.__name__}: {w.message}",
        )
        if issue in result.warnings:  # one per distinct category and text
            continue
        result.warnings.append(issue)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry=_SHOWN, source=w.source)
