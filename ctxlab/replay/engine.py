"""Replay: drive a middleware through a recorded transcript as a live agent would have.

For each model call of a transcript (each ``AIMessage``), the replay state's ``messages`` get the
transcript messages recorded since the previous call (the system message is not a state message:
it goes to ``ModelRequest.system_message``).  Then, like LangGraph's model node with middleware:

1. the middleware's ``before_model(state, runtime)`` runs when the middleware overrides it; its
   update is applied (``messages`` through ``add_messages``, other keys by assignment);
2. a real ``ModelRequest`` is built (a placeholder chat model that refuses to be called, the
   state messages, the recorded system message and tool schemas, a ``Runtime`` whose stream
   writer collects the ``context_compression`` events);
3. the REAL ``middleware.wrap_model_call(request, handler)`` runs; ``handler`` records the
   request view and answers with the recorded ``AIMessage``;
4. the returned ``Command(update=...)`` is applied (``_summarization_event`` by assignment,
   ``messages`` through ``add_messages``; a dict or a list of pairs) and the recorded
   ``AIMessage`` is appended.

The state carries forward to the next call.  A ctxlab middleware reports its rounds in
``context_compression`` events.  A foreign middleware (a baseline) emits none, so its L2 rounds
are read from the state it changed, whichever hook changed it: a new ``_summarization_event``
(DeepAgents, from ``wrap_model_call``) or a new summary message in ``messages`` (LangChain, from
``before_model``).  Its summarizer's calls and tokens are counted by a LangChain callback
handler active during the call (``register_configure_hook``): provider usage when reported,
else estimates of the prompt and the response by the measuring estimator.

Each call yields one row (see :data:`ctxlab.replay.metrics.METRIC_DEFINITIONS`); all token columns are
measured with one measuring estimator for every strategy.  :func:`sweep` replays a set of
transcripts once per value of one setting.

Strategies are looked up by name in :func:`ctxlab.core.plugins.strategies`: a factory returning a
list of plugin objects makes a :class:`~ctxlab.CompressionMiddleware` with those plugins; a
factory returning an ``AgentMiddleware`` (a baseline from another framework) is driven as is.
"""

from __future__ import annotations

import logging
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.types import Command

from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.compression import EVENT_KEY
from ctxlab.core.events import EVENT_TYPE
from ctxlab.core.identity import IdentityCache
from ctxlab.core.marks import is_summary_message
from ctxlab.core.middleware import CompressionMiddleware
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.metrics import (
    MESSAGES_CACHED,
    VIEW_PARTS,
    IdentifierIndex,
    RequestView,
    cache_reusable_tokens,
    make_measure,
    request_keys,
    retention,
    unmatched_tool_pairs,
    view_parts,
)
from ctxlab.replay.models import ReplayModel
from ctxlab.replay.strategies import make_lab_manager
from ctxlab.replay.strategies import strategies as registered_strategies
from ctxlab.replay.table import TOTALS_COLUMNS, calls_frame, strategy_totals, summary_frame
from ctxlab.transcripts import load_many, load_transcripts
from ctxlab.transcripts.base import Transcript, TranscriptError

if TYPE_CHECKING:
    import pluggy
    import polars as pl

    from ctxlab.core.estimation import EstimateCache

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


@dataclass
class ReplayIssue:
    """A problem of a batch: a file that could not be loaded (``kind="load"``) or a
    transcript × strategy that failed during replay (``kind="replay"``)."""

    kind: str
    source: str
    problem: str
    where: str = ""
    transcript: str | None = None
    strategy: str | None = None

    def __str__(self) -> str:
        who = self.source
        if self.transcript:
            who = f"{self.transcript} [{self.strategy}]" if self.strategy else self.transcript
        return f"{who}: {self.where}: {self.problem}" if self.where else f"{who}: {self.problem}"

    @classmethod
    def from_transcript_error(cls, err: TranscriptError) -> ReplayIssue:
        return cls(kind="load", source=err.path, where=err.where, problem=err.problem)


@dataclass
class ReplayResult:
    """Everything a replay produced.

    Attributes:
        rows: one dict per model call (:data:`CALL_COLUMNS`).
        views: ``(transcript, strategy, call_index) -> RequestView`` when ``keep_views=True``.
        events: every stream event, with ``transcript``, ``strategy`` and ``call_index`` added.
        summaries: one dict per L2 round: ``transcript, strategy, call_index, cutoff_index,
            text, tokens, file_path, error``.
        offloads: one dict per offloaded tool result per call: ``transcript, strategy,
            call_index, path, bytes, first`` (``first``: the first call that offloaded it).
        errors: load and replay problems (:class:`ReplayIssue`).
        settings: the settings used; ``strategies``: the strategy names; ``measure``: the
            measuring estimator; ``files_dir``: where offloads and histories were written.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    views: dict[tuple[str, str, int], RequestView] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    offloads: list[dict[str, Any]] = field(default_factory=list)
    errors: list[ReplayIssue] = field(default_factory=list)
    settings: CompressionSettings = field(default_factory=CompressionSettings)
    strategies: list[str] = field(default_factory=list)
    measure: str = "char-class"
    files_dir: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def extend(self, other: ReplayResult) -> None:
        """Append another result's rows, views, events, summaries, offloads and errors."""
        self.rows.extend(other.rows)
        self.views.update(other.views)
        self.events.extend(other.events)
        self.summaries.extend(other.summaries)
        self.offloads.extend(other.offloads)
        self.errors.extend(other.errors)
        self.sources.update(other.sources)
        for s in other.strategies:
            if s not in self.strategies:
                self.strategies.append(s)

    def frame(self) -> pl.DataFrame:
        """The per-call rows as a polars DataFrame (see :func:`ctxlab.analysis.report.calls_frame`)."""

        return calls_frame(self.rows)

    def summary(self) -> pl.DataFrame:
        """One row per transcript × strategy (see :func:`ctxlab.analysis.report.summary_frame`)."""
        return summary_frame(self.frame())

    @property
    def replayed(self) -> int:
        """How many transcript × strategy runs produced at least one row."""
        return len({(r["transcript"], r["strategy"]) for r in self.rows})


# --- strategies ---------------------------------------------------------------------------------


def safe_name(text: str, limit: int = 80, *, empty: str = "x") -> str:
    """A file or folder name for ``text``: ASCII letters, digits, ``._-``, at most ``limit``
    characters.  A name that had to change (other characters, or too long) ends with ``-`` and
    8 hex digits of the text's SHA-1, so that two texts never share a name.

    Examples: ``safe_name("ars") == "ars"``; ``safe_name("a/b.json")`` is ``"a_b.json-<sha1>"``.
    """
    import hashlib

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
        mw = CompressionMiddleware(
            settings=settings, backend=backend, summarizer=summarizer, plugins=[*made, *folder_plugins]
        )
        mw._ctxlab_files_root = root.resolve()  # type: ignore[attr-defined]
        return strategy, mw
    raise TypeError(
        f"strategy {strategy!r}: factory returned {type(made).__name__}; expected a list of plugin objects "
        "or an AgentMiddleware instance"
    )


def _overrides(mw: AgentMiddleware, name: str) -> bool:
    return getattr(type(mw), name, None) is not getattr(AgentMiddleware, name, None)


# --- one transcript × strategy ------------------------------------------------------------------


def _split_system(messages: Sequence[BaseMessage]) -> tuple[SystemMessage | None, list[BaseMessage], int]:
    """(system message, the rest, offset of the rest in ``messages``)."""
    if messages and isinstance(messages[0], SystemMessage):
        return messages[0], list(messages[1:]), 1
    return None, list(messages), 0


def _update_items(update: Any) -> list[tuple[str, Any]]:
    """The ``(key, value)`` pairs of a node or ``Command`` update: a dict, a list of pairs, or a
    state object (what ``Command.update`` may hold)."""
    if update is None:
        return []
    if isinstance(update, Command):
        return list(update._update_as_tuples())
    return list(Command(update=update)._update_as_tuples())


def _apply_update(state: dict[str, Any], update: Any) -> None:
    """Apply an update as LangGraph would: ``messages`` through ``add_messages``, every other key
    by assignment."""
    for key, value in _update_items(update):
        if key == "messages":
            state["messages"] = add_messages(state["messages"], value)
        else:
            state[key] = value


def _summary_ids(messages: Sequence[BaseMessage]) -> set[str | None]:
    return {m.id for m in messages if is_summary_message(m)}


class _SummarizerUsage(BaseCallbackHandler):
    """Counts the chat-model calls made while a foreign middleware handles one model call (its
    summarizer: the main model of a replay is never called) and their tokens.

    Tokens are the provider's ``usage_metadata`` when the response reports it; otherwise they
    are estimated with the replay's measuring estimator: the prompt messages as input, the
    response message as output (``estimated`` is then ``True``).
    """

    raise_error = False

    def __init__(self, measure: EstimateCache) -> None:
        self.measure = measure
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.estimated = False
        self._prompts: dict[Any, list[BaseMessage]] = {}

    def on_chat_model_start(
        self, serialized: Any, messages: list[list[BaseMessage]], *, run_id: Any, **kwargs: Any
    ) -> None:
        self._prompts[run_id] = [m for batch in messages for m in batch]

    def on_llm_start(self, serialized: Any, prompts: list[str], *, run_id: Any, **kwargs: Any) -> None:
        self._prompts[run_id] = [HumanMessage(content=p) for p in prompts]

    def on_llm_end(self, response: LLMResult, *, run_id: Any, **kwargs: Any) -> None:
        prompt = self._prompts.pop(run_id, [])
        self.calls += 1
        for batch in response.generations:
            for gen in batch:
                message = getattr(gen, "message", None)
                usage = getattr(message, "usage_metadata", None)
                if usage:
                    self.input_tokens += int(usage.get("input_tokens") or 0)
                    self.output_tokens += int(usage.get("output_tokens") or 0)
                    prompt = []  # the prompt is counted in the provider's input tokens
                    continue
                self.estimated = True
                out = message if isinstance(message, BaseMessage) else AIMessage(content=gen.text)
                self.output_tokens += self.measure.message_tokens(out)
        if prompt:
            self.estimated = True
            self.input_tokens += sum(self.measure.message_tokens(m) for m in prompt)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._prompts.pop(run_id, None)
        self.calls += 1


#: the usage counter of the call being replayed; LangChain adds it to the callbacks of every
#: model invoked in this context (``register_configure_hook``), whatever config the caller passes
_USAGE: ContextVar[_SummarizerUsage | None] = ContextVar("ctxlab_replay_summarizer_usage", default=None)
register_configure_hook(_USAGE, inheritable=True)


def _offload_bytes(mw: Any, path: str | None) -> int | None:
    root = getattr(mw, "_ctxlab_files_root", None)
    if root is None or not path:
        return None
    try:
        return (Path(root) / path.lstrip("/")).stat().st_size
    except OSError:
        return None


class _Recorder:
    """The handler given to ``wrap_model_call``: records the request view and its time."""

    def __init__(self, response: AIMessage) -> None:
        self.response = response
        self.view: RequestView | None = None
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, request: ModelRequest) -> ModelResponse:
        t0 = time.perf_counter()
        self.calls += 1
        self.view = RequestView(
            system=request.system_message, tools=list(request.tools or []), messages=list(request.messages)
        )
        response = ModelResponse(result=[self.response])
        self.seconds += time.perf_counter() - t0
        return response


def _replay_one(
    transcript: Transcript,
    label: str,
    strategy_name: str,
    mw: AgentMiddleware,
    *,
    settings: CompressionSettings,
    measure: EstimateCache,
    context_window: int | None,
    limit_calls: int | None,
    keep_views: bool,
    on_call: Callable[[], None] | None = None,
) -> ReplayResult:
    result = ReplayResult(settings=settings, strategies=[strategy_name])
    system, rest, offset = _split_system(transcript.messages)
    tools = list(transcript.tools or [])
    model = ReplayModel.create(context_window)
    is_ars = hasattr(mw, "settings") and isinstance(getattr(mw, "settings", None), CompressionSettings)
    T = mw.settings.entry_threshold_tokens if is_ars else None  # type: ignore[attr-defined]
    T2 = mw.settings.l2_threshold_tokens if is_ars else None  # type: ignore[attr-defined]
    run_before = _overrides(mw, "before_model")
    run_wrap = _overrides(mw, "wrap_model_call")

    state: dict[str, Any] = {"messages": []}
    ids = IdentifierIndex()
    key_cache: IdentityCache[BaseMessage, tuple[Any, ...]] = IdentityCache(MESSAGES_CACHED)
    earlier_idents: set[str] = set()
    # answered calls as (id of the calling AIMessage, call id): a result answers the latest call
    # of its id (ids may be reused across turns, R9)
    answered: set[tuple[str | None, str]] = set()
    issuer: dict[str, str | None] = {}
    raw_messages_tokens = 0
    base_tokens = measure.tools_tokens(tools) + (measure.message_tokens(system) if system is not None else 0)
    prev_view: RequestView | None = None
    prev_keys: list[Any] | None = None
    seen_offloads: set[str] = set()
    pending: list[BaseMessage] = []
    call_index = 0

    for pos, original in enumerate(rest):
        if original.id is None:  # add_messages would give it a random id: make it stable
            original = original.model_copy(update={"id": f"{transcript.run_id}-{pos + offset}"})
        if not isinstance(original, AIMessage):
            pending.append(original)
            raw_messages_tokens += measure.message_tokens(original)
            if not isinstance(original, SystemMessage):
                earlier_idents |= ids.present(original)
            if isinstance(original, ToolMessage):
                answered.add((issuer.get(original.tool_call_id), original.tool_call_id))
            continue
        if limit_calls is not None and call_index >= limit_calls:
            break
        if pending:
            state["messages"] = add_messages(state["messages"], pending)
            pending = []
        events: list[dict[str, Any]] = []
        runtime = Runtime(context=None, store=None, stream_writer=events.append)
        recorded = original
        recorder = _Recorder(recorded)
        usage = _SummarizerUsage(measure)
        # what a foreign middleware's L2 round changes: the summary messages in the state
        # (LangChain) or the _summarization_event (DeepAgents)
        summaries_before = _summary_ids(state["messages"])
        event_before = state.get(EVENT_KEY)

        token = _USAGE.set(usage)
        t0 = time.perf_counter()
        try:
            if run_before:
                _apply_update(state, mw.before_model(state, runtime))
            request = ModelRequest(
                model=model,
                messages=list(state["messages"]),
                system_message=system,
                tools=tools,
                tool_choice=None,
                response_format=None,
                state=state,  # type: ignore[arg-type]
                runtime=runtime,
                model_settings={},
            )
            out: Any = mw.wrap_model_call(request, recorder) if run_wrap else recorder(request)
        finally:
            elapsed = time.perf_counter() - t0
            _USAGE.reset(token)

        if recorder.view is None:
            raise RuntimeError(f"strategy {strategy_name!r} did not call the model at call {call_index}")
        if isinstance(out, ExtendedModelResponse) and isinstance(out.command, Command):
            _apply_update(state, out.command)
        new_summaries = [
            m for m in state["messages"] if is_summary_message(m) and m.id not in summaries_before
        ]
        event_after = state.get(EVENT_KEY)
        new_event = event_after if isinstance(event_after, dict) and event_after is not event_before else None
        state["messages"] = add_messages(state["messages"], [recorded])
        issuer.update({cid: recorded.id for tc in recorded.tool_calls if (cid := tc.get("id")) is not None})

        # --- measure ---------------------------------------------------------------------------
        view = recorder.view
        parts = view_parts(view, measure)
        view_tokens = sum(parts.values())
        raw_tokens = base_tokens + raw_messages_tokens
        keys = request_keys(view, key_cache)
        reusable = cache_reusable_tokens(prev_view, view, measure, previous_keys=prev_keys, current_keys=keys)
        prev_view, prev_keys = view, keys
        ret = retention(original, earlier_idents, view.messages, index=ids)

        completed = next(
            (
                e
                for e in reversed(events)
                if isinstance(e, dict) and e.get("type") == EVENT_TYPE and e.get("phase") == "completed"
            ),
            None,
        )
        stats = (completed or {}).get("stats") or {}
        summ = stats.get("summarizer") or {}
        level = (completed or {}).get("level") or "none"
        summary_error = (completed or {}).get("error")
        cutoff_index = (completed or {}).get("cutoff_index")
        if completed is None and not is_ars:
            # a foreign middleware emits no event: its summarizer calls come from the callback
            # counter, its L2 round from the state it changed
            summ = {
                "calls": usage.calls,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
            }
            summary_message = new_event.get("summary_message") if new_event else None
            if new_event is not None and isinstance(summary_message, BaseMessage):  # DeepAgents
                cutoff_index = new_event.get("cutoff_index")
                found = [(summary_message, new_event)]
            else:  # LangChain: the history rewritten with a summary message
                found = [(m, {}) for m in new_summaries]
            if found:
                level = "L2"
            for m, ev in found:
                result.summaries.append(
                    {
                        "transcript": label,
                        "strategy": strategy_name,
                        "call_index": call_index,
                        "cutoff_index": ev.get("cutoff_index"),
                        "text": m.text,
                        "tokens": measure.message_tokens(m),
                        "file_path": ev.get("file_path"),
                        "error": None,
                    }
                )
        elif new_event is not None and level == "L2":  # ARS: the summary is in the new event
            sm = new_event.get("summary_message")
            result.summaries.append(
                {
                    "transcript": label,
                    "strategy": strategy_name,
                    "call_index": call_index,
                    "cutoff_index": new_event.get("cutoff_index"),
                    "text": sm.text if isinstance(sm, BaseMessage) else str(sm),
                    "tokens": measure.message_tokens(sm) if isinstance(sm, BaseMessage) else None,
                    "file_path": new_event.get("file_path"),
                    "error": new_event.get("summary_error"),
                }
            )
        event_state = state.get(EVENT_KEY) if isinstance(state.get(EVENT_KEY), dict) else None
        offloaded_paths = (
            [p for p in stats.get("offloaded") or [] if p] if isinstance(stats.get("offloaded"), list) else []
        )
        for p in offloaded_paths:
            result.offloads.append(
                {
                    "transcript": label,
                    "strategy": strategy_name,
                    "call_index": call_index,
                    "path": p,
                    "bytes": _offload_bytes(mw, p),
                    "first": p not in seen_offloads,
                }
            )
            seen_offloads.add(p)
        for e in events:
            if isinstance(e, dict):
                result.events.append(
                    {**e, "transcript": label, "strategy": strategy_name, "call_index": call_index}
                )

        row = {
            "transcript": label,
            "strategy": strategy_name,
            "call_index": call_index,
            "message_index": pos + offset,
            "raw_tokens": raw_tokens,
            "view_tokens": view_tokens,
            **{f"view_{p}_tokens": parts[p] for p in VIEW_PARTS},
            "view_messages": len(view.messages),
            "level": level,
            "cutoff_index": cutoff_index,
            "state_cutoff_index": event_state.get("cutoff_index") if event_state else None,
            "offloaded": len(stats.get("offloaded") or []),
            "truncated_args": int(stats.get("truncated_args") or 0),
            "summarizer_calls": int(summ.get("calls") or 0),
            "summarizer_input_tokens": int(summ.get("input_tokens") or 0),
            "summarizer_output_tokens": int(summ.get("output_tokens") or 0),
            "summary_error": summary_error,
            "forced_by_overflow": bool((completed or {}).get("forced_by_overflow")),
            "overhead_ms": max(0.0, (elapsed - recorder.seconds) * 1000.0),
            "cache_reusable_tokens": reusable,
            "cache_reusable_share": reusable / view_tokens if view_tokens else None,
            "retention": ret,
            "threshold": T,
            "l2_threshold": T2,
            "unmatched_tool_pairs": unmatched_tool_pairs(view.messages, answered),
        }
        result.rows.append(row)
        if keep_views:
            result.views[(label, strategy_name, call_index)] = view
        if on_call is not None:
            on_call()

        # the recorded answer joins what later calls saw earlier
        raw_messages_tokens += measure.message_tokens(original)
        earlier_idents |= ids.present(original)
        call_index += 1
    return result


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

    Raises:
        KeyError: unknown strategy.  TranscriptError: the file cannot be loaded.
        ValueError: the file holds several runs (use :func:`replay_many`).
    """
    settings = settings or CompressionSettings()
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
        result = _replay_one(
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

    Returns:
        A :class:`ReplayResult`; files that failed to load and runs that failed are in
        ``result.errors``.

    Raises:
        KeyError: an unknown strategy name (checked before anything is replayed).
    """

    settings = settings or CompressionSettings()
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
    result = ReplayResult(settings=settings, measure=measure)
    if paths:
        loaded, load_errors = load_many(paths, format=format, pm=pm)
        transcripts.extend(loaded)
        result.errors.extend(ReplayIssue.from_transcript_error(e) for e in load_errors)
    labels = transcript_labels(transcripts)
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
                one = _replay_one(
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
    import warnings

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
