"""Replay: drive a middleware through recorded transcripts as a live agent would have.

:func:`replay` runs one transcript through one strategy, :func:`replay_many` every transcript ×
strategy of a batch (a bad file or a failing run never stops it); :func:`ctxlab.replay.sweep.sweep`
builds on them.  Each model call of a transcript is one model-node
run of :class:`~ctxlab.replay.harness.ModelNodeHarness` answered with the recorded
``AIMessage`` (see :mod:`ctxlab.replay.runner` for the loop and the row of each call).

Strategies are looked up by name in :func:`ctxlab.replay.strategies.strategies`: a factory
returning a list of plugin objects makes a :class:`~ctxlab.CompressionMiddleware` with those
plugins; a factory returning an ``AgentMiddleware`` (a baseline from another framework) is
driven as is.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from langchain.agents.middleware.types import AgentMiddleware
from langchain_core.messages import SystemMessage

from ctxlab.core.middleware import CompressionMiddleware
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.building import (
    PRICE_WINDOW,
    RunFiles,
    build_middleware,
    make_summarizer,
    make_window,
    no_window_note,
    strategy_records,
    summarizer_name,
    summarizer_of,
)
from ctxlab.replay.cost import DEFAULT_BREAKPOINTS
from ctxlab.replay.hook_failures import hook_failures, recording_level
from ctxlab.replay.latency import Latency, SimTime
from ctxlab.replay.metrics import IdentifierIndex, counts_as_measure, make_measure, run_measure
from ctxlab.replay.names import did_you_mean, safe_name, transcript_labels
from ctxlab.replay.options import ReplayOptions, check_breakpoints
from ctxlab.replay.prefix import UnrecordedPrefix, parse_prefix_setting, resolve_prefix, with_prefix
from ctxlab.replay.provenance import provenance
from ctxlab.replay.result import ReplayIssue, ReplayResult
from ctxlab.replay.run_measures import resolve_price
from ctxlab.replay.runner import replay_one
from ctxlab.replay.share import TranscriptShares
from ctxlab.replay.strategies import make_lab_manager
from ctxlab.replay.strategies import strategies as registered_strategies
from ctxlab.replay.summary_cache import SummaryCache, attach_cache
from ctxlab.replay.views import ViewLog, view_file
from ctxlab.transcripts import load_many, load_transcripts
from ctxlab.transcripts.base import Transcript, is_model_call

if TYPE_CHECKING:
    import pluggy

    from ctxlab.core.estimation import EstimateCache
    from ctxlab.replay.prices import PriceRow
    from ctxlab.replay.provider import ContextWindow

logger = logging.getLogger("ctxlab.replay.engine")

__all__ = [
    "ReplayIssue",
    "ReplayOptions",
    "ReplayResult",
    "batch_result",
    "build_middleware",
    "make_window",
    "replay",
    "replay_many",
    "safe_name",
    "strategy_records",
    "transcript_labels",
]


# --- strategies ---------------------------------------------------------------------------------


def _count_calls(transcript: Transcript, limit_calls: int | None) -> int:
    n = sum(1 for m in transcript.messages if is_model_call(m))
    return n if limit_calls is None else min(n, limit_calls)


def _progress(total: int, desc: str, enabled: bool | None, leave: bool = True) -> Any:
    """A text progress bar on stderr (``enabled=None``: only when stderr is a terminal).  Never
    a notebook widget: an executed notebook would store every bar's widget state (hundreds of
    widgets, megabytes) for nothing."""
    import sys

    from tqdm import tqdm

    if enabled is None:
        enabled = sys.stderr.isatty()
    unit = "call" if not leave else "run"
    return tqdm(total=total, desc=desc, disable=not enabled, leave=leave, unit=unit, dynamic_ncols=True)


@dataclass
class _Batch:
    """What the runs of one call share, resolved from :class:`ReplayOptions` once.  Bounded for any
    batch: ``index`` holds at most :data:`~ctxlab.replay.identifiers.MESSAGES_CACHED` messages
    per cache and :data:`~ctxlab.replay.identifiers.WORDS_CACHED` words per memo (shared, as a
    transcript's strategies replay the same message objects: a two-strategy corpus replay took
    8-11 % longer with an index per run); ``built`` one middleware per strategy name."""

    settings: CompressionSettings
    pm: pluggy.PluginManager
    price: PriceRow
    window: ContextWindow | None
    measure: str
    summarizer_model: Any
    limit_calls: int | None
    keep_views: bool
    views_dir: Path | None = None  # the run folder whose views/ the runs write (write_views)
    summarizer_latency: Latency | None = None  # simulated time (issue 34): the stall columns
    call_latency: Latency | None = None
    meter: EstimateCache = field(init=False)
    summary_cache: str | Path | None = None
    summarizer: Any = field(init=False)
    cache: SummaryCache | None = field(init=False)
    index: IdentifierIndex = field(default_factory=IdentifierIndex)
    cache_breakpoints: str = DEFAULT_BREAKPOINTS
    prefix_setting: str | int = "auto"
    no_window: str = "none"  # what the provenance says when there is no window
    # per transcript label: its unrecorded prefix and the system message that carries it
    prefixes: dict[str, tuple[UnrecordedPrefix, SystemMessage | None]] = field(default_factory=dict)
    # ctxlab middlewares built once per strategy, each writing to the current run's folder
    built: dict[str, tuple[str, AgentMiddleware, RunFiles]] = field(default_factory=dict)
    # row label -> what writes its summaries (building.summarizer_of)
    summarizers: dict[str, str] = field(default_factory=dict)
    shares: TranscriptShares = field(default_factory=TranscriptShares)  # the current transcript's

    def __post_init__(self) -> None:
        self.meter = make_measure(self.measure)
        if self.window is not None:
            self.window.fingerprints_from(self.meter)  # fingerprint each message once (issue 31)
        self.summarizer = make_summarizer(self.summarizer_model)
        self.cache = attach_cache(self.summarizer, self.summary_cache)

    @classmethod
    def of(cls, options: ReplayOptions) -> _Batch:
        """Resolve the options (raises what :func:`replay_many` documents)."""
        pm = options.get("pm")
        price = resolve_price(options.get("price_model"), options.get("prices"))
        return cls(
            settings=options.get("settings") or CompressionSettings(),
            price=price,
            pm=pm if pm is not None else make_lab_manager(load_entrypoints=True),
            window=make_window(
                options.get("context_window", PRICE_WINDOW), options.get("provider_count", "tiktoken"), price
            ),
            measure=options.get("measure", "char-class"),
            summarizer_model=options.get("summarizer_model"),
            summary_cache=options.get("summary_cache"),
            limit_calls=options.get("limit_calls"),
            keep_views=options.get("keep_views", False),
            views_dir=Path(out) if options.get("write_views") and (out := options.get("out_dir")) else None,
            cache_breakpoints=check_breakpoints(options.get("cache_breakpoints", DEFAULT_BREAKPOINTS)),
            prefix_setting=parse_prefix_setting(options.get("unrecorded_prefix", "auto")),
            no_window=no_window_note(options.get("context_window", PRICE_WINDOW), price),
            summarizer_latency=Latency.optional(options.get("summarizer_latency"), "summarizer_latency"),
            call_latency=Latency.optional(options.get("call_latency"), "call_latency"),
        )

    def request_prefix(
        self, transcript: Transcript, label: str
    ) -> tuple[UnrecordedPrefix, SystemMessage | None]:
        """The run's unrecorded prefix (:func:`~ctxlab.replay.prefix.resolve_prefix`, measured
        with the batch's measuring estimator) and the system message every strategy's requests
        carry (the transcript's, with the prefix block); once per transcript."""
        known = self.prefixes.get(label)
        if known is None:
            prefix = resolve_prefix(self.prefix_setting, transcript, self.meter)
            first = transcript.messages[0] if transcript.messages else None
            system = first if isinstance(first, SystemMessage) else None
            known = self.prefixes[label] = (prefix, with_prefix(system, prefix, self.meter))
        return known

    def cache_stats(self, result: ReplayResult) -> ReplayResult:
        """``result`` with what wrote each strategy's summaries and the summary cache's hits and
        misses in its provenance."""
        result.provenance["summarizers"] = dict(self.summarizers)
        if self.cache is not None:
            result.provenance["summary_cache"] = self.cache.stats()
        return result

    def provenance(self, strategies: dict[str, dict[str, Any]]) -> dict[str, Any]:
        record = provenance(
            pm=self.pm,
            settings=self.settings,
            measure=self.meter.name,
            strategies=strategies,
            window=self.window.describe() if self.window is not None else self.no_window,
            summarizer=summarizer_name(self.summarizer_model),
        )
        if self.summarizer_latency is not None:  # the simulated time of the stall columns
            record["latency"] = self.summarizer_latency.provenance(self.call_latency)
        record["cost_model"] = {
            "price_row": self.price.label(),
            "cache_breakpoints": self.cache_breakpoints,
        }
        return record

    def empty(self, strategies: Sequence[str | AgentMiddleware]) -> ReplayResult:
        """A result with no rows yet that records what the batch is: settings, measure, price
        row, strategies, window and provenance (the same for a serial and a parallel replay)."""
        records = strategy_records(strategies, self.pm, self.settings, self.price)
        result = ReplayResult(
            settings=self.settings, measure=self.measure, price=self.price, strategies=list(records)
        )
        result.window = self.window.describe() if self.window is not None else None
        result.provenance = self.provenance(records)
        return result

    def middleware(
        self, strategy: str | AgentMiddleware, files: Path, fixed: tuple[Any, list[Any]] | None = None
    ) -> tuple[str, AgentMiddleware, Path | None]:
        """(row label, middleware, folder of its files) of one run writing to ``files``.

        A ctxlab middleware (a strategy whose factory returns plugins) is built once per
        strategy and reused for every run of the batch: its state is the run's graph state (one
        thread per run), its caches are keyed by message identity or content, and its files go
        to the run's folder (:class:`~ctxlab.replay.building.RunFiles`).  A strategy registered
        with ``per_run=True`` (plugins keeping a run's state on themselves) and a foreign
        middleware are built per run; ``fixed`` is the run's ``(system message, tools)``, given
        to a factory that names ``fixed_request`` (:meth:`~ctxlab.core.strategy.Strategy.make`),
        which is then built per run too.
        """
        if isinstance(strategy, str) and strategy in self.built:
            name, mw, run_files = self.built[strategy]
            return name, mw, run_files.use(files)
        run_files = RunFiles()
        name, mw = build_middleware(
            strategy,
            settings=self.settings,
            pm=self.pm,
            backend=run_files,
            summarizer=self.summarizer,
            price=self.price,
            fixed=fixed,
        )
        self.summarizers.setdefault(name, summarizer_of(mw))
        if isinstance(mw, CompressionMiddleware) and counts_as_measure(mw, self.measure):
            mw.estimates.share_with(self.meter)  # one estimate per message for the batch (issue 31)
        if not isinstance(mw, CompressionMiddleware) or not isinstance(strategy, str):
            return name, mw, None
        entry = registered_strategies(self.pm)[strategy]
        if not entry.per_run and not entry.takes_fixed_request:
            self.built[strategy] = (name, mw, run_files)
        return name, mw, run_files.use(files)

    def run(
        self, transcript: Transcript, label: str, name: str, mw: AgentMiddleware, **more: Any
    ) -> ReplayResult:
        """:func:`~ctxlab.replay.runner.replay_one` with the batch's settings, measures (a
        :func:`~ctxlab.replay.metrics.run_measure` per run) and the transcript's share (:mod:`~ctxlab.replay.share`),
        writing its views to ``views_dir`` when the batch writes views."""
        measure = run_measure(mw, self.measure, self.meter)
        prefix, system = self.request_prefix(transcript, label)
        log = None
        if self.views_dir is not None:
            log = ViewLog(
                view_file(self.views_dir, label, name),
                label,
                name,
                measure.message_tokens,
                source=transcript.source,
                format=transcript.format,
            )
        try:
            return replay_one(
                transcript,
                label,
                name,
                mw,
                settings=self.settings,
                measure=measure,
                window=self.window,
                limit_calls=self.limit_calls,
                keep_views=self.keep_views,
                price=self.price,
                index=self.index,
                view_log=log,
                cache_breakpoints=self.cache_breakpoints,
                system=system,
                prefix=prefix,
                sim=SimTime(self.summarizer_latency, self.call_latency, seed=label),
                share=self.shares.of(label, mw),
                **more,
            )
        finally:
            if log is not None:
                log.close()


def replay(
    transcript: Transcript | str | Path,
    strategy: str | AgentMiddleware = "ars",
    *,
    label: str | None = None,
    thread_id: str | None = None,
    **options: Unpack[ReplayOptions],
) -> ReplayResult:
    """Replay one transcript through one strategy.

    Args:
        transcript: a loaded :class:`Transcript`, or a file holding exactly one run.
        strategy: a registered strategy name (``"ars"``) or an ``AgentMiddleware`` instance.
        label: the transcript's label in the rows (default: ``Transcript.name``).
        thread_id: the LangGraph thread id (default: the label made safe,
            :func:`ctxlab.replay.names.thread_id_for`).
        **options: :class:`ReplayOptions` (settings, window, measures, prices, ...); ``format`` is
            the format of ``transcript`` when it is a path, ``progress`` a bar over the calls.

    Raises:
        KeyError: unknown strategy or price row.  TranscriptError: the file cannot be loaded.
        PriceTableError: an invalid price file.
        ValueError: the file holds several runs (use :func:`replay_many`), or an invalid window.
        ContextOverflowError: the strategy could not fit the window (as a live agent would fail).
    """
    batch = _Batch.of(options)
    if not isinstance(transcript, Transcript):
        loaded = load_transcripts(transcript, format=options.get("format"), pm=batch.pm)
        if len(loaded) != 1:
            raise ValueError(f"{transcript} holds {len(loaded)} runs; use replay_many")
        transcript = loaded[0]
    label = label or transcript.name
    files = _files_dir(
        options.get("out_dir"), label, strategy if isinstance(strategy, str) else strategy.name
    )
    _, system = batch.request_prefix(transcript, label)
    name, mw, root = batch.middleware(strategy, files, (system, list(transcript.tools or [])))
    bar = _progress(
        _count_calls(transcript, batch.limit_calls), label, options.get("progress", False), leave=False
    )
    try:
        result = batch.run(
            transcript, label, name, mw, thread_id=thread_id, on_call=bar.update, files_root=root
        )
    finally:
        bar.close()
    result.measure = batch.measure
    result.files_dir = files
    result.sources[label] = transcript.source
    result.prefixes[label] = batch.prefixes[label][0].as_dict()
    result.window = batch.window.describe() if batch.window is not None else None
    result.provenance = batch.provenance(strategy_records([strategy], batch.pm, batch.settings, batch.price))
    return batch.cache_stats(result)


def batch_result(
    strategies: Sequence[str | AgentMiddleware], **options: Unpack[ReplayOptions]
) -> ReplayResult:
    """An empty :class:`ReplayResult` that records what a batch with these options is — its
    settings, measure, price row, strategies, window and provenance — as :func:`replay_many` fills
    them; :func:`ctxlab.replay.parallel.run_grid` merges its tasks' rows into one, so that a
    parallel replay records the same provenance as a serial one.

    Raises:
        what :func:`replay_many` raises for bad options.
    """
    return _Batch.of(options).empty(strategies)


def _files_dir(out_dir: str | Path | None, label: str, strategy: str) -> Path:
    base = Path(out_dir) / "files" if out_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-replay-"))
    return base / safe_name(label) / safe_name(strategy)


def replay_many(
    paths_or_transcripts: str | Path | Transcript | Iterable[str | Path | Transcript],
    strategies: Sequence[str | AgentMiddleware] | str = ("ars",),
    *,
    stop_on_failure: bool = False,
    labels: Sequence[str] | None = None,
    **options: Unpack[ReplayOptions],
) -> ReplayResult:
    """Replay every transcript × strategy; by default a bad file or a failing run never stops the
    batch.

    Args:
        paths_or_transcripts: files, folders (walked recursively) and/or loaded transcripts.
        strategies: strategy names (or ``AgentMiddleware`` instances); a string may hold
            several names separated by commas.
        stop_on_failure: stop after the first run that failed or whose summaries failed (the
            CLI without ``--keep-going``); files that failed to load stop it before any replay.
        labels: the transcripts' labels, one per transcript in load order (default:
            :func:`transcript_labels`); :mod:`ctxlab.replay.parallel` passes the labels of the
            whole batch when it replays one transcript per task.
        **options: :class:`ReplayOptions`, as for :func:`replay` (each transcript runs on the
            thread id of its label); ``out_dir`` is the root of the files the middlewares write
            (``<out_dir>/files/...``; reports are written by
            :func:`ctxlab.analysis.report.write_report`), ``progress`` bars over the runs and the
            calls of the current run (default: when stderr is a terminal).

    Returns:
        A :class:`ReplayResult`; files that failed to load (``kind="load"``), runs that failed
        (``"replay"``) and runs with failed or text-less summaries (``"summary"``) are in
        ``result.errors``; ``result.provenance`` records what produced it.

    Raises:
        KeyError: an unknown strategy name or price row (checked before anything is replayed).
        PriceTableError: an invalid price file.
        ValueError: a strategy named twice, an invalid context window, or ``labels`` does not
            hold one label per transcript.
    """
    batch = _Batch.of(options)
    if isinstance(strategies, str):
        strategies = [s.strip() for s in strategies.split(",") if s.strip()]
    known = registered_strategies(batch.pm)
    for s in strategies:
        if isinstance(s, str) and s not in known:
            raise KeyError(
                f"unknown strategy {s!r}{did_you_mean(s, known)}; known: {', '.join(sorted(known))}"
            )
    names = [s if isinstance(s, str) else s.name for s in strategies]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"strategy {twice[0]!r} is named twice; each strategy runs once per transcript")

    if isinstance(paths_or_transcripts, (str, Path, Transcript)):
        paths_or_transcripts = [paths_or_transcripts]
    transcripts: list[Transcript] = []
    paths: list[str | Path] = []
    for item in paths_or_transcripts:
        (transcripts if isinstance(item, Transcript) else paths).append(item)  # type: ignore[arg-type]
    result = batch.empty(strategies)
    if paths:
        loaded, load_errors = load_many(paths, format=options.get("format"), pm=batch.pm)
        transcripts.extend(loaded)
        result.errors.extend(ReplayIssue.from_transcript_error(e) for e in load_errors)
        if load_errors and stop_on_failure:
            return result
    if labels is None:
        labels = transcript_labels(transcripts)
    elif len(labels) != len(transcripts):
        raise ValueError(f"{len(labels)} labels for {len(transcripts)} transcripts")
    out_dir = options.get("out_dir")
    root = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-replay-"))
    result.files_dir = root / "files"
    progress = options.get("progress")
    jobs = [(t, lab, s) for t, lab in zip(transcripts, labels, strict=True) for s in strategies]
    outer = _progress(len(jobs), "replay", progress)
    levels = ExitStack()
    levels.enter_context(recording_level())  # one level change for the batch, not two per run
    try:
        for t, lab, s in jobs:
            sname = s if isinstance(s, str) else s.name
            outer.set_postfix_str(f"{lab[-40:]} [{sname}]", refresh=False)
            result.sources[lab] = t.source
            inner = _progress(_count_calls(t, batch.limit_calls), "calls", progress, leave=False)
            try:
                prefix, system = batch.request_prefix(t, lab)
                result.prefixes[lab] = prefix.as_dict()
                name, mw, files = batch.middleware(
                    s, _files_dir(root, lab, sname), (system, list(t.tools or []))
                )
                with hook_failures(batch.pm, t.source, lab, name) as survived:
                    one = batch.run(t, lab, name, mw, on_call=inner.update, files_root=files)
                result.extend(one)
                result.errors.extend(survived)
                failed = _summary_issue(one, t.source, lab, name)
            except Exception as exc:  # one failing run never stops the batch (unless asked)
                logger.info("replay of %s with %s failed", lab, sname, exc_info=True)
                failed = ReplayIssue.from_exception(exc, t.source, lab, sname, batch.pm)
            finally:
                inner.close()
                outer.update(1)
            if failed is not None:
                result.errors.append(failed)
                if stop_on_failure:
                    break
    finally:
        outer.close()
        levels.close()
    return batch.cache_stats(result)


def _summary_issue(one: ReplayResult, source: str, label: str, strategy: str) -> ReplayIssue | None:
    """A ``kind="summary"`` issue when some L2 summaries of a run failed or have no text."""
    bad = [s for s in one.summaries if s.get("error")]
    if not bad:
        return None
    first = bad[0]
    return ReplayIssue(
        kind="summary",
        source=source,
        transcript=label,
        strategy=strategy,
        where=f"call {first.get('call_index')}",
        problem=f"{len(bad)} of {len(one.summaries)} L2 summaries failed; first: {first.get('error')}",
    )
