"""How section 1 of ``ctxlab bench`` drives and times the two middlewares, in CPU time.

Both contenders are timed with ``time.thread_time`` (CPU time of the measuring thread, so that
other processes on a shared machine do not count), the model's own time excluded:

* ctxlab: :class:`TimedCompressionMiddleware` (``CompressionMiddleware`` whose
  ``wrap_model_call`` records its CPU time minus the model handler's), driven by the public
  harness :class:`~ctxlab.replay.harness.ModelNodeHarness`;
* LangChain: ``SummarizationMiddleware.before_model(state, runtime)`` plus applying its update
  to the state through ``add_messages`` (what ``create_agent``'s state channel does with it:
  ``RemoveMessage(REMOVE_ALL_MESSAGES)``, the summary, the kept messages), then the model call,
  which it does not wrap.

A run's calls are the model calls of a history (:func:`call_positions`): before call ``k`` the
state holds ``messages[:k]``; the model answers with ``messages[k]``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, SystemMessage

__all__ = [
    "BACKENDS",
    "DeepAgentFiles",
    "MemoryBackend",
    "RunCall",
    "call_positions",
    "fake_summarizer",
    "make_backend",
    "run_ars",
    "run_langchain",
    "timed_langchain",
    "timed_middleware",
    "writer_cpu",
]

#: the summary text the fake summarizer model answers (about 100 tokens)
FAKE_SUMMARY = "Summary: the agent ran the tests, fixed the parser and checked the failing cases. " * 6


def call_positions(messages: Sequence[BaseMessage]) -> list[int]:
    """The model calls of a history: the index of every assistant message but a first one."""
    from langchain_core.messages import AIMessage

    return [k for k, m in enumerate(messages) if isinstance(m, AIMessage) and k > 0]


@dataclass
class RunCall:
    """One timed model call: CPU seconds of the middleware (its summarizer step left out), and
    what it did (ctxlab: the round's level ``"none"`` below T, ``"L1"`` or ``"L2"``; LangChain:
    ``"none"`` or ``"summary"``); ``summarizer_seconds``: the summarizer step's CPU seconds."""

    seconds: float
    level: str
    summarizer_seconds: float = 0.0


class MemoryBackend:
    """A file backend in memory (``write``, ``download_files``) for the runs that offload and save
    histories: writing costs a dict assignment, so the measurement is the middleware's own work."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def write(self, path: str, content: str) -> Any:
        from types import SimpleNamespace

        self.files[path] = content.encode("utf-8")
        return SimpleNamespace(error=None, path=path, files_update=None)

    def download_files(self, paths: list[str]) -> list[Any]:
        from types import SimpleNamespace

        return [
            SimpleNamespace(
                path=p, content=self.files.get(p), error=None if p in self.files else "file_not_found"
            )
            for p in paths
        ]


class DeepAgentFiles:
    """The ``files`` channel of a deep agent's state for a DeepAgents ``StateBackend`` driven by
    :class:`~ctxlab.replay.harness.ModelNodeHarness` (no compiled graph): what LangGraph's Pregel
    hands the backend through the node's config.  ``CONFIG_KEY_READ("files", fresh=True)`` gives
    the state's files with this step's writes merged by DeepAgents' own reducer (a fresh read
    copies the files, as Pregel does), ``CONFIG_KEY_SEND`` queues a write, and :meth:`commit`
    applies the queued writes to the state at the node boundary (outside the timed call)."""

    def __init__(self, harness: Any) -> None:
        from langgraph._internal._constants import CONFIG_KEY_READ, CONFIG_KEY_SEND

        self.harness = harness
        self.pending: list[dict[str, Any]] = []
        harness.config = {"configurable": {CONFIG_KEY_READ: self.read, CONFIG_KEY_SEND: self.send}}

    @staticmethod
    def _reduce(left: Any, right: dict[str, Any]) -> dict[str, Any]:
        from deepagents.middleware.filesystem import _file_data_reducer

        out: dict[str, Any] = _file_data_reducer(left, right)
        return out

    def read(self, channel: str, fresh: bool = False) -> Any:
        value = self.harness.state.get(channel)
        if channel == "files" and fresh:
            for update in self.pending:
                value = self._reduce(value, update)
        return value

    def send(self, writes: Sequence[tuple[str, Any]]) -> None:
        self.pending += [update for channel, update in writes if channel == "files"]

    def commit(self) -> None:
        for update in self.pending:
            self.harness.state["files"] = self._reduce(self.harness.state.get("files"), update)
        self.pending.clear()


#: the backends section 1 runs ctxlab with, real ones first: name -> maker of a fresh backend
#: (``folder``: a new empty directory on disk for the ``FilesystemBackend``)
BACKENDS = ("FilesystemBackend", "StateBackend", "in memory")


def make_backend(kind: str, folder: str) -> Any:
    """A fresh backend of ``kind`` (:data:`BACKENDS`): the README's default
    ``FilesystemBackend(root_dir=folder, virtual_mode=True)`` on disk, DeepAgents' ``StateBackend``
    (a deep agent's default: the files live in the state, :class:`DeepAgentFiles`), or
    :class:`MemoryBackend`."""
    if kind == "FilesystemBackend":
        from deepagents.backends import FilesystemBackend

        return FilesystemBackend(root_dir=folder, virtual_mode=True)
    if kind == "StateBackend":
        from deepagents.backends import StateBackend

        return StateBackend()
    if kind == "in memory":
        return MemoryBackend()
    raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {kind!r}")


def fake_summarizer() -> Any:
    """A LangChain fake chat model answering :data:`FAKE_SUMMARY` forever (``bind_tools``
    returns the model itself): the summarizer of both contenders."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class _Fake(GenericFakeChatModel):
        def bind_tools(self, *args: Any, **kwargs: Any) -> Any:
            return self

    return _Fake(messages=itertools.repeat(AIMessage(content=FAKE_SUMMARY)))


class _TimedSummarizer:
    """A summarizer that adds the CPU seconds of its ``summarize`` calls to ``spent[0]``."""

    def __init__(self, inner: Any, spent: list[float]) -> None:
        self._inner = inner
        self._spent = spent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def summarize(self, job: Any) -> Any:
        t = time.thread_time()
        try:
            return self._inner.summarize(job)
        finally:
            self._spent[0] += time.thread_time() - t


def timed_middleware(**kwargs: Any) -> Any:
    """A ``CompressionMiddleware(**kwargs)`` whose ``last_cpu`` is the CPU seconds of its latest
    ``wrap_model_call``, the model handler's time and the summarizer's (``last_summarizer_cpu``:
    the L2 summarizer's ``summarize`` call, LangChain's counterpart is its ``_create_summary``)
    excluded."""
    from ctxlab.core.middleware import CompressionMiddleware

    class TimedCompressionMiddleware(CompressionMiddleware):
        last_cpu = 0.0
        last_summarizer_cpu = 0.0

        def _summarizer_for(self, request: Any) -> tuple[Any, Any]:
            summarizer, model = super()._summarizer_for(request)
            return _TimedSummarizer(summarizer, self._spent), model

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            inner = 0.0
            self._spent = [0.0]

            def timed(req: Any) -> Any:
                nonlocal inner
                t = time.thread_time()
                try:
                    return handler(req)
                finally:
                    inner += time.thread_time() - t

            t0 = time.thread_time()
            try:
                return super().wrap_model_call(request, timed)
            finally:
                self.last_summarizer_cpu = self._spent[0]
                self.last_cpu = time.thread_time() - t0 - inner - self._spent[0]

    return TimedCompressionMiddleware(**kwargs)


def writer_cpu(mw: Any) -> float:
    """CPU seconds the write-behind thread of a ctxlab middleware has used so far (0 when it never
    started): the file writes the bench's per-call times leave to that thread (issue 31)."""
    queue = getattr(getattr(mw, "_own_files", None), "queue", None)
    executor = getattr(queue, "_executor", None)
    threads = list(getattr(executor, "_threads", ()) or ())
    total = 0.0
    for thread in threads:
        ident = getattr(thread, "ident", None)
        if ident is None or not thread.is_alive():
            continue
        try:
            total += time.clock_gettime(time.pthread_getcpuclockid(ident))
        except (OSError, AttributeError, ValueError):
            continue
    return total


def _level(events: Sequence[Any]) -> str:
    done = [e.get("level") for e in events if isinstance(e, dict) and e.get("phase") == "completed"]
    return str(done[-1]) if done and done[-1] else "none"


def run_ars(
    system: SystemMessage | None,
    messages: Sequence[BaseMessage],
    make: Callable[[], Any],
    upto: int | None = None,
    tools: Sequence[Any] = (),
) -> tuple[list[RunCall], Any]:
    """Drive the middleware ``make()`` (a :func:`timed_middleware`) over the model calls of
    ``messages`` before index ``upto`` (all: ``None``), with the tool schemas ``tools`` in every
    request; returns the calls and the harness (its state is the run's end state)."""
    from langchain_core.messages import AIMessage

    from ctxlab.replay.harness import ModelNodeHarness

    mw = make()
    harness = ModelNodeHarness(mw, system_message=system, tools=list(tools), record=False)
    channel = DeepAgentFiles(harness) if type(mw._backend).__name__ == "StateBackend" else None
    out: list[RunCall] = []
    done = 0
    for k in call_positions(messages):
        if upto is not None and k >= upto:
            break
        harness.add(*messages[done:k])
        answer = messages[k]
        assert isinstance(answer, AIMessage)
        call = harness.call(answer)
        out.append(RunCall(mw.last_cpu, _level(call.events), getattr(mw, "last_summarizer_cpu", 0.0)))
        if channel is not None:
            channel.commit()
        done = k + 1
    return out, harness


def langchain_step(mw: Any, state: dict[str, Any], runtime: Any) -> RunCall:
    """One LangChain model call on ``state`` (changed in place): ``before_model`` and its
    update, timed in CPU seconds."""
    from ctxlab.replay.harness import apply_update

    before = len(state["messages"])
    spent = getattr(mw, "_ctxlab_summary_cpu", None)
    summarizing = spent[0] if spent is not None else 0.0
    t0 = time.thread_time()
    update = mw.before_model(dict(state), runtime)
    if update is not None:
        apply_update(state, update)
    seconds = time.thread_time() - t0
    summarized = spent[0] - summarizing if spent is not None else 0.0
    # its summarizer's time is left out, as ctxlab's is (timed_langchain)
    return RunCall(seconds - summarized, "summary" if len(state["messages"]) < before else "none", summarized)


def timed_langchain(**kwargs: Any) -> Any:
    """LangChain's ``SummarizationMiddleware(**kwargs)`` whose summarizer step (``_create_summary``:
    trimming the messages to summarize, the prompt, the model call) adds its CPU seconds to
    ``mw._ctxlab_summary_cpu[0]``, which :func:`langchain_step` leaves out of the call's time."""
    from langchain.agents.middleware import SummarizationMiddleware

    mw = SummarizationMiddleware(**kwargs)
    spent = [0.0]
    real = mw._create_summary

    def create_summary(messages: Any) -> Any:
        t = time.thread_time()
        try:
            return real(messages)
        finally:
            spent[0] += time.thread_time() - t

    mw._create_summary = create_summary  # type: ignore[method-assign,assignment]
    mw._ctxlab_summary_cpu = spent  # type: ignore[attr-defined]
    return mw


def run_langchain(
    messages: Sequence[BaseMessage], trigger_tokens: int, keep: int, upto: int | None = None
) -> tuple[list[RunCall], Any, dict[str, Any]]:
    """Drive LangChain's ``SummarizationMiddleware`` (trigger ``("tokens", trigger_tokens)``,
    keep ``("messages", keep)``, the fake summarizer) over the model calls of ``messages`` before
    ``upto``; returns the calls, the middleware and the end state."""
    from langgraph.runtime import Runtime

    from ctxlab.replay.harness import apply_update

    mw = timed_langchain(model=fake_summarizer(), trigger=("tokens", trigger_tokens), keep=("messages", keep))
    runtime: Runtime[Any] = Runtime(context=None, store=None, stream_writer=lambda _e: None)
    state: dict[str, Any] = {"messages": []}
    out: list[RunCall] = []
    done = 0
    for k in call_positions(messages):
        if upto is not None and k >= upto:
            break
        apply_update(state, {"messages": list(messages[done:k])})
        out.append(langchain_step(mw, state, runtime))
        apply_update(state, {"messages": [messages[k]]})
        done = k + 1
    return out, mw, state
