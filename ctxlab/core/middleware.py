"""``CompressionMiddleware``: ARS two-level compression as a LangChain v1 agent middleware.

Drop it into ``langchain.agents.create_agent(..., middleware=[CompressionMiddleware(...)])``, or
into DeepAgents' ``create_deep_agent(middleware=[CompressionMiddleware(..., name=
"SummarizationMiddleware")])`` to replace the built-in summarization (DeepAgents replaces a stack
entry whose ``.name`` matches; :meth:`CompressionMiddleware.for_deep_agent` does this for you).

Both ``wrap_model_call`` and ``awrap_model_call`` drive the same round
(:func:`ctxlab.core.compression.compression_round`); see the spec (R3–R17) for the behaviour.

Where files go (R17): the given backend; else a backend the runtime context carries (the seed's
composite backend of the runtime context); else, in a deep agent, DeepAgents' own default (a
``StateBackend``: the thread's files, which the agent's ``read_file`` reads), and elsewhere a
local ``FilesystemBackend``, with a ``read_saved_output`` tool contributed so that the model can
read what it is told to read (:mod:`ctxlab.core.outputs`).  Nothing about files is remembered
across requests: each request checks, in its own file scope, the paths its view names.

A deep agent runs middleware after ours that still changes the request (Skills, memory, prompt
caching).  The seed places Summary after them; DeepAgents places user middleware before them, so
:meth:`CompressionMiddleware.for_deep_agent` measures instead: before each round it runs the
inner middleware once against a stand-in model that records the final system message and tools
and answers nothing (``measure_final_request``), and the estimate counts those.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langgraph.types import Command

from ctxlab.core.compression import (
    EVENT_KEY,
    CallModel,
    ModelLimits,
    RoundInput,
    RoundUpdate,
    RunL1,
    RunL2,
    compression_round,
)
from ctxlab.core.drive import adrive, drive
from ctxlab.core.estimation import EstimateCache
from ctxlab.core.events import CompressionEvent
from ctxlab.core.file_effects import awrite_history, confirmed, settled, write_history
from ctxlab.core.files import checked_backend, default_backend
from ctxlab.core.hooks import CompressionHooks
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import run_l1
from ctxlab.core.limits import input_capacity
from ctxlab.core.messages import ScanMemory
from ctxlab.core.outputs import FileScope, OffloadPaths, OwnFiles, make_read_tool
from ctxlab.core.plugins import make_plugin_manager
from ctxlab.core.preparations import Preparations
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import Summarizer, SummaryJob, SummaryResult, input_budget
from ctxlab.core.thrash import ThrashWatch

logger = logging.getLogger("ctxlab.core.middleware")

#: summarizers remembered per model object (models made per request must not pile up)
SUMMARIZERS_CACHED = 16
#: the name of DeepAgents' summarization slot: a middleware so named replaces the built-in one
DEEP_AGENT_SLOT = "SummarizationMiddleware"

__all__ = ["DEEP_AGENT_SLOT", "CompressionMiddleware", "CompressionState"]


class CompressionState(AgentState):
    """Agent state with the private, checkpointed ``_summarization_event`` (R11):
    ``{"cutoff_index": int, "summary_message": HumanMessage, "file_path": str | None, ...}``."""

    _summarization_event: Annotated[NotRequired[dict[str, Any] | None], PrivateStateAttr]


class CompressionMiddleware(AgentMiddleware):
    """Keeps every model request under budget with ARS L1 trimming and L2 summaries.

    Args:
        settings: the five fields (:class:`CompressionSettings`); default: the ARS defaults.
        backend: a DeepAgents backend (``deepagents.backends``) or a factory
            ``runtime -> backend``; files land under its virtual ``/outputs/`` (R17).  ``None``:
            a backend the runtime context carries, else in a deep agent (the name
            ``"SummarizationMiddleware"``) DeepAgents' default ``StateBackend``, else a local
            ``FilesystemBackend`` rooted at ``$CTXLAB_FILES_DIR`` or ``./.ctxlab/files``, created
            on first write.
        summarizer: ``None`` — the agent's own model summarizes (R10); a chat model — that model
            summarizes; an object with ``summarize``/``asummarize`` — used as is.
        plugins: plugin objects added on top of the ARS defaults (each instance owns its own
            plugin manager, so two instances with different plugins run side by side).
        load_entrypoints: also load plugins of the ``ctxlab`` entry-point group.
        plugins_dir: also load the plugins of this folder of ``.py`` files (never read from the
            environment by the middleware itself).
        name: the middleware's name; ``"SummarizationMiddleware"`` replaces DeepAgents' built-in
            (:data:`DEEP_AGENT_SLOT`) and makes the deep-agent defaults below.
        read_tool: contribute the ``read_saved_output`` tool (reads the files this middleware
            saved, through the same backend).  ``None`` (default): yes, except in a deep agent,
            whose ``read_file`` reads them.
        measure_final_request: estimate the request as the model receives it, after the
            middleware that runs inside this one (a dry run of the inner middleware against a
            stand-in model, once per model call).  ``None`` (default): only in a deep agent
            (DeepAgents' Skills and memory middleware change the system message after ours).
        preparations: the summaries prepared in the background (:mod:`ctxlab.core.prepare`); default: its own.

    Raises:
        TypeError: ``settings`` is not a :class:`CompressionSettings`; ``backend`` is neither a
            backend nor a factory (:func:`~ctxlab.core.files.checked_backend`).
    """

    state_schema = CompressionState

    def __init__(
        self,
        *,
        settings: CompressionSettings | None = None,
        backend: Any = None,
        summarizer: Any = None,
        plugins: Iterable[object] = (),
        load_entrypoints: bool = False,
        plugins_dir: str | os.PathLike[str] | None = None,
        name: str | None = None,
        read_tool: bool | None = None,
        measure_final_request: bool | None = None,
        preparations: Preparations | None = None,
    ) -> None:
        super().__init__()
        if settings is None:
            settings = CompressionSettings()
        if not isinstance(settings, CompressionSettings):
            raise TypeError(f"settings must be a CompressionSettings, not {type(settings).__name__}")
        self.settings = settings
        self.plugin_manager = make_plugin_manager(
            plugins, load_entrypoints=load_entrypoints, plugins_dir=plugins_dir
        )
        self.hooks = CompressionHooks(self.plugin_manager)
        self.estimates = EstimateCache(self.hooks.estimate_message, self.hooks.estimate_tools)
        # the orphan scans of the views this middleware sends (issue 12); it shares the estimate
        # cache's content memo, so a reloaded checkpoint is compared by content once per call
        self.scans = ScanMemory(content_memo=self.estimates.content_memo)
        self.thrash = ThrashWatch()  # one warning when every round must summarize again (s40)
        self._name = name or "CompressionMiddleware"
        deep = self._name == DEEP_AGENT_SLOT
        self._backend = checked_backend(backend)
        self._local_backend: Any = None
        self._state_default = deep  # without a backend: DeepAgents' own default, the agent's files
        self._summarizer = summarizer
        self._summarizers: IdentityCache[Any, Summarizer | None] = IdentityCache(SUMMARIZERS_CACHED)
        self._offload_paths = OffloadPaths()
        # the offload files this instance wrote, per file scope, and its write-behind queue (issue 31)
        self._own_files = OwnFiles()
        self.measure_final_request = deep if measure_final_request is None else measure_final_request
        read = not deep if read_tool is None else read_tool
        self.tools = [make_read_tool(self._backend_for, self._own_files.failed_text)] if read else []
        self.preparations = preparations if preparations is not None else Preparations()

    @classmethod
    def for_deep_agent(cls, **kwargs: Any) -> CompressionMiddleware:
        """An instance for ``create_deep_agent(middleware=[...])``.

        Named ``SummarizationMiddleware``, so that DeepAgents uses it instead of its built-in
        summarization (in the main agent and the general-purpose sub-agent).  Without a
        ``backend``, files go where the agent reads them (R17): a backend in the runtime context,
        else DeepAgents' own default, a ``StateBackend`` (the thread's files; a sub-agent's files
        return to its parent).  If you give ``create_deep_agent`` a backend, give the same one here.
        No ``read_saved_output`` tool (the agent's ``read_file`` reads the files), and the
        estimate counts the final request (``measure_final_request=True``).  These defaults
        follow from the name; keyword arguments as for the constructor.
        """
        kwargs.setdefault("name", DEEP_AGENT_SLOT)
        return cls(**kwargs)

    @property
    def name(self) -> str:
        return self._name

    # --- collaborators ------------------------------------------------------------------------

    def _backend_for(self, runtime: Any) -> Any:
        """The backend of one request or tool call (R17), from its ``runtime``: see the module
        docstring for the order."""
        backend = self._backend
        if backend is None:
            found = _context_backend(runtime)
            if found is not None:
                return found
            if self._local_backend is None:
                if self._state_default:
                    from deepagents.backends import StateBackend

                    self._local_backend = StateBackend()
                else:
                    self._local_backend = default_backend()
            return self._local_backend
        if not hasattr(backend, "write") and callable(backend):
            backend = backend(runtime)
        return backend

    def _summarizer_for(self, request: ModelRequest) -> tuple[Any, Any]:
        """(the summarizer, the model it summarizes with or ``None``) for this request (R10)."""
        given = self._summarizer
        if given is not None and hasattr(given, "summarize") and not hasattr(given, "invoke"):
            return given, None
        model = given if given is not None else request.model
        summarizer = self._summarizers.get_or_put(
            model, lambda m: self.hooks.get_summarizer(m, self.settings)
        )
        return summarizer, model

    def _round_input(
        self, request: ModelRequest, final: tuple[BaseMessage | None, list[Any]] | None = None
    ) -> tuple[RoundInput, Callable[[], Any], Callable[[], Any], FileScope]:
        """The round's input for ``request``; ``final``: the system message and tools the model
        receives (:meth:`_measure` / :meth:`_ameasure`), counted instead of the request's own."""
        backend_holder: list[Any] = []

        def backend() -> Any:
            if not backend_holder:
                backend_holder.append(self._backend_for(request.runtime))
            return backend_holder[0]

        state: Mapping[str, Any] = request.state if isinstance(request.state, dict) else {}
        files = state.get("files")  # a StateBackend's files: the thread's checkpointed state
        thread_id = _thread_id()
        # this request's file scope, with what this instance wrote there before (issue 31)
        scope_files = files if isinstance(files, Mapping) else None
        scope = FileScope(backend, self._offload_paths, scope_files, own=self._own_files, thread_id=thread_id)
        picked: list[tuple[Any, Any]] = []

        def chosen() -> tuple[Any, Any]:  # (summarizer, model), made once when L2 needs it
            if not picked:
                picked.append(self._summarizer_for(request))
            return picked[0]

        def summarizer() -> Any:
            return chosen()[0]

        settings = self.settings

        def limits() -> ModelLimits:  # read only when the round needs it (never below T)
            model = chosen()[1]
            # never raises: a malformed profile counts as unknown (issue 30)
            capacity, reserve = input_capacity(request.model, request.model_settings)
            # the main model's window sizes the summarizer only when it is the main model (R10)
            fallback = capacity if model is request.model else None
            return ModelLimits(capacity, input_budget(model, settings.prompt_for("zh"), fallback), reserve)

        writer = _stream_writer(request)
        hooks = self.hooks

        def emit(event: CompressionEvent) -> None:
            if writer is not None:
                writer(event)
            try:
                hooks.on_event(event)
            except Exception as exc:  # an observer never aborts the model call
                # the exception rides along for a recorder (the replay makes it a plugin problem)
                logger.warning("a ctxlab_on_event observer raised: %s", exc, extra={"ctxlab_exception": exc})

        event = state.get(EVENT_KEY)
        messages: list[BaseMessage] = (
            cast(list[BaseMessage], request.messages)
            if isinstance(request.messages, list)
            else list(request.messages)
        )
        system, tools = final if final is not None else (request.system_message, list(request.tools or []))
        inp = RoundInput(
            state_messages=messages,
            event=event if isinstance(event, dict) else None,
            system=system,
            tools=tools,
            settings=settings,
            estimates=self.estimates,
            hooks=hooks,
            save_tool_result=scope.save_tool_result,
            limits=limits,
            thread_id=thread_id,
            emit=emit,
            file_exists=scope.file_exists,
            files_epoch=scope.files_epoch,
            file_owned=scope.owns,
            scans=self.scans,
            preparations=self.preparations,
        )
        return inp, summarizer, backend, scope

    def _measure(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Any]
    ) -> tuple[BaseMessage | None, list[Any]] | None:
        """The system message and tools the model would receive from ``handler`` (the inner
        middleware), by a dry run against a stand-in model; ``None`` when not measured."""
        if not self.measure_final_request:
            return None
        try:
            handler(request.override(model=cast("BaseChatModel", _ProbeModel(request.model))))
        except _FinalRequest as seen:
            return seen.system, seen.tools
        except Exception as exc:  # the real call will meet the same problem, if it is one
            logger.debug("measuring the final request failed: %s", exc)
        return None

    async def _ameasure(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> tuple[BaseMessage | None, list[Any]] | None:
        """Async :meth:`_measure`."""
        if not self.measure_final_request:
            return None
        try:
            await handler(request.override(model=cast("BaseChatModel", _ProbeModel(request.model))))
        except _FinalRequest as seen:
            return seen.system, seen.tools
        except Exception as exc:
            logger.debug("measuring the final request failed: %s", exc)
        return None

    # --- the two drivers ----------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse | ExtendedModelResponse:
        """Sync path: R3–R14; history is written before summarizing (R10)."""
        inp, summarizer, backend, scope = self._round_input(request, self._measure(request, handler))

        def perform(effect: Any) -> Any:
            if isinstance(effect, CallModel):
                return handler(_with_messages(request, effect.messages))
            if isinstance(effect, RunL1):  # the pass's new files go behind while the round goes on
                return scope.after_l1(run_l1(self.hooks.l1_trim, effect.effective, effect.ctx))
            if isinstance(effect, RunL2):  # the history is written before summarizing (R10)
                path = write_history(
                    self._own_files.queue, backend, effect.history_path, effect.history_content
                )
                return (path, _safe_summarize(summarizer(), effect.job))
            write = functools.partial(write_history, self._own_files.queue, backend)
            return self.preparations.perform(effect, summarizer(), write)  # issue 34

        try:
            response, update = self.thrash.after(inp, drive(compression_round(inp), perform))
        finally:
            scope.wait()  # the request's write-behinds are done before anything reads them
        return _result(response, confirmed(update, scope))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse:
        """Async path: the same round; history write and summary run concurrently (R10)."""
        inp, summarizer, backend, scope = self._round_input(request, await self._ameasure(request, handler))

        async def perform(effect: Any) -> Any:
            if isinstance(effect, CallModel):
                return await handler(_with_messages(request, effect.messages))
            if isinstance(effect, RunL1):
                return scope.after_l1(
                    await asyncio.to_thread(run_l1, self.hooks.l1_trim, effect.effective, effect.ctx)
                )
            if isinstance(effect, RunL2):
                path, summary = await asyncio.gather(
                    awrite_history(backend, effect.history_path, effect.history_content),
                    _asafe_summarize(summarizer(), effect.job),
                )
                return (path, summary)
            return await self.preparations.aperform(
                effect, summarizer(), functools.partial(awrite_history, backend)
            )

        try:
            response, update = self.thrash.after(inp, await adrive(compression_round(inp), perform))
        finally:
            await settled(scope)
        return _result(response, confirmed(update, scope))


# --- helpers ------------------------------------------------------------------------------------


def _with_messages(request: ModelRequest, messages: list[BaseMessage]) -> ModelRequest:
    """``request`` with ``messages`` as its view (every message of a view is a LangChain message
    class of ``AnyMessage``); the request itself when they are its own list (nothing changed)."""
    return (
        request
        if messages is request.messages
        else request.override(messages=cast(list[AnyMessage], messages))
    )


def _result(response: Any, update: RoundUpdate | None) -> ModelResponse | ExtendedModelResponse:
    """The driver's result: the handler's response, with ``Command(update=...)`` after L2 (R11)."""
    if isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    if update is None:
        return cast(ModelResponse, response)
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


def _context_backend(runtime: Any) -> Any:
    """A backend the runtime context carries (``context.backend`` or ``context["backend"]``),
    else ``None``: the seed's composite file backend "from the runtime context" (R17)."""
    context = getattr(runtime, "context", None)
    found = context.get("backend") if isinstance(context, Mapping) else getattr(context, "backend", None)
    return found if found is not None and callable(getattr(found, "write", None)) else None


class _FinalRequest(BaseException):
    """Raised by :class:`_ProbeModel` with what the model would have received.  A
    ``BaseException``, so that retry and fallback middleware (which catch ``Exception``) let it
    pass instead of calling a real model."""

    def __init__(self, system: BaseMessage | None, tools: list[Any]) -> None:
        super().__init__("final request measured")
        self.system = system
        self.tools = tools


class _ProbeModel:
    """Stands in for the chat model in a dry run of the inner middleware: records the tools it is
    bound to and raises :class:`_FinalRequest` when called.  Binding and configuring
    (``bind_tools``, ``bind``, ``with_config``, ``with_structured_output``, ...) return the probe
    itself, so that no real model can be called; any other attribute (``profile``, ...) is the
    real model's."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._tools: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("with_", "bind", "configurable_")):
            return lambda *args, **kwargs: self
        return getattr(self._model, name)

    def bind_tools(self, tools: Iterable[Any], **kwargs: Any) -> _ProbeModel:
        self._tools = list(tools)
        return self

    def invoke(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        msgs = list(messages) if isinstance(messages, list) else []
        system = msgs[0] if msgs and isinstance(msgs[0], SystemMessage) else None
        raise _FinalRequest(system, self._tools)

    async def ainvoke(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.invoke(messages)

    stream = batch = generate = invoke
    abatch = agenerate = ainvoke


def _stream_writer(request: ModelRequest) -> Callable[[Any], None] | None:
    runtime = getattr(request, "runtime", None)
    writer = getattr(runtime, "stream_writer", None) if runtime is not None else None
    if writer is not None:
        return cast(Callable[[Any], None], writer)
    try:
        from langgraph.config import get_stream_writer

        return get_stream_writer()
    except Exception:
        return None


def _thread_id() -> str | None:
    try:
        from langgraph.config import get_config

        value = get_config().get("configurable", {}).get("thread_id")
        return str(value) if value is not None else None
    except Exception:
        return None


def _safe_summarize(summarizer: Summarizer, job: SummaryJob) -> SummaryResult:
    try:
        return summarizer.summarize(job)
    except Exception as exc:  # R10: a summarizer exception does not propagate
        logger.error("summarizer %s raised: %s", getattr(summarizer, "name", summarizer), exc)
        return SummaryResult(text="", error=f"{type(exc).__name__}: {exc}")


async def _asafe_summarize(summarizer: Summarizer, job: SummaryJob) -> SummaryResult:
    try:
        return await summarizer.asummarize(job)
    except Exception as exc:
        logger.error("summarizer %s raised: %s", getattr(summarizer, "name", summarizer), exc)
        return SummaryResult(text="", error=f"{type(exc).__name__}: {exc}")
