"""Any ctxlab strategy as an Inspect AI ``CompactionStrategy``.

:func:`compaction_strategy` answers a strategy name with what an Inspect agent takes as
``compaction=`` (``react(..., compaction=...)``, or ``inspect_ai.model.compaction(...)`` in a
custom solver):

* ``"none"`` → ``None`` (no compaction);
* a strategy whose middleware carries a native Inspect strategy (``inspect_strategy``: the
  ``inspect-*`` strategies of the ctxlab-field plugin) → that Inspect strategy itself, at T;
* any other registered strategy (``ars``, ``masking``, every plugin strategy) →
  :class:`CtxlabCompaction`, which drives the strategy's middleware.

How :class:`CtxlabCompaction` works.  Inspect's compaction handler calls ``compact()`` when its
count of (the last compacted input + the messages since) exceeds the threshold, T
(``summary_threshold × 1024`` tokens).  The strategy keeps, per sample, the sample's *whole*
history as LangChain state messages (the messages it has not produced itself, in order) and runs
the strategy's middleware on it as LangGraph's model node would
(:class:`ctxlab.replay.harness.ModelNodeHarness`); the request the middleware would send is the
compacted input.  So ARS's cumulative L2 cutoff (R11) and its L1 view are computed from the
history, never from an earlier compacted input.  Between compactions Inspect sends the compacted
input plus the new messages as they are (Inspect's rule, not ARS's: ARS would trim every request
from T on).  Messages the strategy edited get new ids (``ctxlab-<hash>``), so that Inspect's log,
which pools messages by id, shows what was sent.

* **L1 offloads** go to files under ``files_dir`` (``outputs/large_tool_results/...``, R6, R17);
  :meth:`CtxlabCompaction.read_tool` is the Inspect tool ``read_saved_output(path, offset,
  limit)`` that reads them back (give it to the agent).
* **L2 summaries** are written by ``summarizer`` (an Inspect model name or ``Model``), else by the
  task's model (the one ``compact()`` is given), through :class:`InspectSummarizer`.
* **Events**: each ctxlab ``context_compression`` event of a compaction is written to the
  sample's transcript as an Inspect ``InfoEvent`` (source ``ctxlab``), which ``inspect view``
  shows in place; the per-call measures are added to the log afterwards
  (:mod:`ctxlab.integrations.inspect.measures`).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    CompactionStrategy,
    CompactionSummary,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.tool import Tool, ToolInfo, tool
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from ctxlab.core.files import CONVERSATION_HISTORY_DIR, LARGE_TOOL_RESULTS_DIR
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import SummaryJob, SummaryResult
from ctxlab.integrations.inspect.convert import to_inspect, to_langchain
from ctxlab.replay.building import RunFiles, build_middleware
from ctxlab.replay.harness import ModelNodeHarness
from ctxlab.replay.strategies import make_lab_manager

__all__ = ["NO_COMPACTION", "CtxlabCompaction", "InspectSummarizer", "compaction_strategy"]

#: the strategy name that means "no compaction" (``react(compaction=None)``)
NO_COMPACTION = "none"
#: lines ``read_saved_output`` returns by default
READ_LIMIT = 2000


class InspectSummarizer:
    """A ctxlab summarizer (:class:`ctxlab.core.summarize.Summarizer`) that asks an Inspect model:
    one ``generate`` with the job's prompt; a model error or an empty reply is a failed summary
    (``SummaryResult(error=...)``, R10), never an exception."""

    name = "inspect"

    def __init__(self, model: str | Model) -> None:
        self.model = get_model(model)

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        from ctxlab.core.summarize import render_message

        text = job.prompt.replace("{messages}", "\n\n".join(render_message(m) for m in job.messages))
        try:
            out = await self.model.generate([ChatMessageUser(content=text)], config=GenerateConfig())
        except Exception as exc:  # a summarizer reports, it does not raise
            return SummaryResult(text="", error=f"{type(exc).__name__}: {exc}", calls=1)
        usage = out.usage
        return SummaryResult(
            text=out.completion,
            error=None if out.completion.strip() else "the summarizer answered no text",
            calls=1,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            usage_reported=usage is not None,
        )

    def summarize(self, job: SummaryJob) -> SummaryResult:
        """:meth:`asummarize` from sync code (on a worker thread when an event loop runs here)."""
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.asummarize(job))
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.asummarize(job)).result()


def _new_id(message: BaseMessage) -> str:
    payload = json.dumps(
        [message.type, str(message.content), getattr(message, "tool_calls", None)], default=str
    )
    return "ctxlab-" + hashlib.sha256(payload.encode()).hexdigest()[:16]


def _tool_schemas(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters.model_dump(exclude_none=True),
        }
        for t in tools
    ]


@dataclass
class _SampleRun:
    """One sample's history (as the strategy's state) and what the strategy produced."""

    harness: ModelNodeHarness
    originals: dict[str, ChatMessage] = field(default_factory=dict)
    produced: set[str] = field(default_factory=set)
    added: set[str] = field(default_factory=set)
    compactions: int = 0


class CtxlabCompaction(CompactionStrategy):
    """A registered ctxlab strategy as an Inspect ``CompactionStrategy`` (module doc).

    Args:
        strategy: the strategy name (``ctxlab plugins`` lists them); default ``ars``.
        settings: the compression settings (the threshold is their T).
        summarizer: the Inspect model that writes L2 summaries (``None``: the task's model).
        files_dir: where offloaded results and history files go (``None``: a temporary folder).
        pm: the lab's plugin manager (``None``: built-ins and installed plugins).

    Raises:
        KeyError: ``strategy`` is not registered.
    """

    def __init__(
        self,
        strategy: str = "ars",
        settings: CompressionSettings | None = None,
        *,
        summarizer: str | Model | None = None,
        files_dir: str | Path | None = None,
        pm: Any = None,
    ) -> None:
        self.settings = settings or CompressionSettings()
        super().__init__(type="summary", threshold=int(self.settings.entry_threshold_tokens), memory=False)
        self.strategy = strategy
        self.pm = pm if pm is not None else make_lab_manager(load_entrypoints=True)
        self.summarizer = summarizer
        self.files_root = (
            Path(files_dir) if files_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-inspect-"))
        )
        self._runs: dict[str, _SampleRun] = {}
        # a bad name fails here, not mid-eval (RunFiles: no folder is made for this check)
        build_middleware(strategy, settings=self.settings, pm=self.pm, backend=RunFiles())

    def _params(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "threshold": self.threshold, "files": str(self.files_root)}

    def _repr_params_(self) -> dict[str, Any]:
        return {**super()._repr_params_(), **self._params()}

    def _run_for(self, messages: list[ChatMessage], model: Model, tools: list[ToolInfo]) -> _SampleRun:
        key = next((m.id for m in messages if not isinstance(m, ChatMessageSystem)), None) or "sample"
        run = self._runs.get(key)
        if run is None:
            files = RunFiles()
            files.use(self.files_root)
            summarizer = InspectSummarizer(self.summarizer if self.summarizer is not None else model)
            _, mw = build_middleware(
                self.strategy, settings=self.settings, pm=self.pm, backend=files, summarizer=summarizer
            )
            system = next((m for m in messages if isinstance(m, ChatMessageSystem)), None)
            harness = ModelNodeHarness(
                mw,
                tools=_tool_schemas(tools),
                system_message=SystemMessage(content=system.text, id=system.id)
                if system is not None
                else None,
                thread_id=f"inspect-{key}",
                record=False,
            )
            run = self._runs[key] = _SampleRun(harness)
        return run

    async def compact(
        self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]
    ) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        """The strategy's request for the sample's history (module doc); no message to append."""
        run = self._run_for(messages, model, tools)
        fresh = [
            m
            for m in messages
            if not isinstance(m, ChatMessageSystem) and m.id not in run.produced and m.id not in run.added
        ]
        for m in fresh:
            run.originals[m.id or ""] = m
            run.added.add(m.id or "")
        if fresh:
            run.harness.add(*to_langchain(fresh))
        call = await run.harness.acall(AIMessage(content=""), append_response=False)
        run.compactions += 1
        for event in call.events:
            transcript().info(json.loads(json.dumps(event, default=str)), source="ctxlab")
        view = call.views[-1]
        out: list[ChatMessage] = []
        system = [m for m in messages if isinstance(m, ChatMessageSystem)][:1]
        converted = to_inspect(view.messages)
        for lc, im in zip(view.messages, converted, strict=True):
            original = run.originals.get(lc.id or "")
            if original is not None and lc.id in run.added and _unchanged(lc, original):
                out.append(original)
                continue
            im.id = _new_id(lc)
            run.produced.add(im.id)
            out.append(im)
        return [*system, *out], None

    def read_tool(self) -> Tool:
        """The Inspect tool ``read_saved_output(path, offset=0, limit=2000)`` over :attr:`files_root`:
        reads an offloaded tool result (``/outputs/large_tool_results/...``) or a history file
        (``/outputs/conversation_history/...``) the strategy saved; ``offset``/``limit`` count
        lines; any other path, or a missing file, answers an error text."""
        return read_saved_output(str(self.files_root))


def _unchanged(lc: BaseMessage, original: ChatMessage) -> bool:
    (back,) = to_langchain([original])
    return back.content == lc.content and getattr(back, "tool_calls", None) == getattr(lc, "tool_calls", None)


@tool
def read_saved_output(root: str) -> Tool:
    """The read-back tool over the files folder ``root`` (see :meth:`CtxlabCompaction.read_tool`)."""

    async def execute(path: str, offset: int = 0, limit: int = READ_LIMIT) -> str:
        """Read a file that context compression saved: a full tool result (a path under
        /outputs/large_tool_results/) or an earlier part of the conversation (a path under
        /outputs/conversation_history/).

        Args:
            path: the path the compressed message names.
            offset: first line to return (0-based).
            limit: how many lines to return.
        """
        norm = "/" + path.strip().lstrip("/")
        folder = norm.rsplit("/", 1)[0]
        if folder not in (LARGE_TOOL_RESULTS_DIR, CONVERSATION_HISTORY_DIR) or ".." in norm.split("/"):
            return f"Error: {path!r} is not a saved output (only {LARGE_TOOL_RESULTS_DIR}/ and {CONVERSATION_HISTORY_DIR}/ files)"
        file = Path(root) / norm.lstrip("/")
        if not file.is_file():
            return f"Error: {norm} does not exist"
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[max(0, offset) : max(0, offset) + max(1, limit)])

    return execute


def compaction_strategy(
    strategy: str,
    settings: CompressionSettings | None = None,
    *,
    summarizer: str | Model | None = None,
    files_dir: str | Path | None = None,
    pm: Any = None,
) -> CompactionStrategy | None:
    """What ``react(compaction=...)`` takes for a strategy name (module doc).

    Args:
        strategy: ``"none"``, or a registered strategy name.
        settings: the compression settings (T is every strategy's threshold).
        summarizer: the model that summarizes (ctxlab's L2 and ``inspect-summary``); ``None``:
            ctxlab's strategies use the task's model, a native strategy keeps its own default.
        files_dir: where a ctxlab strategy's files go.
        pm: the lab's plugin manager.

    Raises:
        KeyError: an unknown strategy name.
    """
    if strategy == NO_COMPACTION:
        return None
    settings = settings or CompressionSettings()
    pm = pm if pm is not None else make_lab_manager(load_entrypoints=True)
    _, mw = build_middleware(strategy, settings=settings, pm=pm, backend=RunFiles())
    native = getattr(mw, "inspect_strategy", None)
    if isinstance(native, CompactionStrategy):
        if isinstance(native, CompactionSummary) and summarizer is not None:
            return CompactionSummary(threshold=native.threshold, model=summarizer)
        return native
    return CtxlabCompaction(strategy, settings, summarizer=summarizer, files_dir=files_dir, pm=pm)
