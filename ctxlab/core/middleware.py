"""``CompressionMiddleware``: ARS two-level compression as a LangChain v1 agent middleware.

Drop it into ``langchain.agents.create_agent(..., middleware=[CompressionMiddleware(...)])``, or
into DeepAgents' ``create_deep_agent(middleware=[CompressionMiddleware(..., name=
"SummarizationMiddleware")])`` to replace the built-in summarization (DeepAgents replaces a stack
entry whose ``.name`` matches; :meth:`CompressionMiddleware.for_deep_agent` does this for you).

Both ``wrap_model_call`` and ``awrap_model_call`` drive the same round
(:func:`ctxlab.core.compression.compression_round`); see the spec (R3–R17) for the behaviour.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
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
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langgraph.types import Command

from ctxlab.core.compression import (
    EVENT_KEY,
    CallModel,
    RoundInput,
    RoundUpdate,
    RunL1,
    RunL2,
    compression_round,
)
from ctxlab.core.estimation import EstimateCache
from ctxlab.core.events import CompressionEvent
from ctxlab.core.files import FileWriteError, awrite_text, default_backend, tool_result_path, write_text
from ctxlab.core.hooks import CompressionHooks
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import run_l1
from ctxlab.core.plugins import make_plugin_manager
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.summarize import Summarizer, SummaryJob, SummaryResult, input_budget

logger = logging.getLogger("ctxlab.core.middleware")

#: summarizers remembered per model object (models made per request must not pile up)
SUMMARIZERS_CACHED = 16
#: (backend, path) pairs remembered as written (offload files are content-addressed)
WRITTEN_CACHED = 100_000

__all__ = ["CompressionMiddleware", "CompressionState"]


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
            a local ``FilesystemBackend`` rooted at ``$CTXLAB_FILES_DIR`` or ``./.ctxlab/files``,
            created on first write.
        summarizer: ``None`` — the agent's own model summarizes (R10); a chat model — that model
            summarizes; an object with ``summarize``/``asummarize`` — used as is.
        plugins: plugin objects added on top of the ARS defaults (each instance owns its own
            plugin manager, so two instances with different plugins run side by side).
        load_entrypoints: also load plugins of the ``ctxlab`` entry-point group.
        plugins_dir: also load the plugins of this folder of ``.py`` files (never read from the
            environment by the middleware itself).
        name: the middleware's name; ``"SummarizationMiddleware"`` replaces DeepAgents' built-in.

    Raises:
        TypeError: ``settings`` is not a :class:`CompressionSettings`.
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
        self._backend = backend
        self._summarizer = summarizer
        self._summarizers: IdentityCache[Any, Summarizer | None] = IdentityCache(SUMMARIZERS_CACHED)
        # content-addressed offload files already written, per backend object (qualifier: path)
        self._written: IdentityCache[Any, bool] = IdentityCache(WRITTEN_CACHED)
        self._name = name or "CompressionMiddleware"
        self.tools = []

    @classmethod
    def for_deep_agent(cls, **kwargs: Any) -> CompressionMiddleware:
        """An instance named ``SummarizationMiddleware``, so that ``create_deep_agent(middleware=
        [...])`` uses it instead of DeepAgents' built-in summarization."""
        kwargs.setdefault("name", "SummarizationMiddleware")
        return cls(**kwargs)

    @property
    def name(self) -> str:
        return self._name

    # --- collaborators ------------------------------------------------------------------------

    def _backend_for(self, request: ModelRequest) -> Any:
        backend = self._backend
        if backend is None:
            self._backend = backend = default_backend()
        if not hasattr(backend, "write") and callable(backend):
            backend = backend(request.runtime)
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

    def _round_input(self, request: ModelRequest) -> tuple[RoundInput, Any, Callable[[], Any]]:
        backend_holder: list[Any] = []

        def backend() -> Any:
            if not backend_holder:
                backend_holder.append(self._backend_for(request))
            return backend_holder[0]

        def save_tool_result(tool_name: str | None, text: str) -> str:
            path = tool_result_path(tool_name, text)
            target = backend()
            if self._written.get(target, path) is None:  # content-addressed: same path, same text
                write_text(target, path, text)
                self._written.put(target, True, path)
            return path

        summarizer, model = self._summarizer_for(request)
        capacity = _max_input_tokens(request.model)
        writer = _stream_writer(request)
        hooks = self.hooks

        def emit(event: CompressionEvent) -> None:
            if writer is not None:
                writer(event)
            try:
                hooks.on_event(event)
            except Exception as exc:  # an observer never aborts the model call
                logger.warning("a ctxlab_on_event observer raised: %s", exc)

        state: Mapping[str, Any] = request.state if isinstance(request.state, dict) else {}
        event = state.get(EVENT_KEY)
        messages: list[BaseMessage] = (
            cast(list[BaseMessage], request.messages)
            if isinstance(request.messages, list)
            else list(request.messages)
        )
        inp = RoundInput(
            state_messages=messages,
            event=event if isinstance(event, dict) else None,
            system=request.system_message,
            tools=list(request.tools or []),
            settings=self.settings,
            estimates=self.estimates,
            hooks=hooks,
            save_tool_result=save_tool_result,
            capacity_tokens=capacity,
            # the main model's window sizes the summarizer only when it is the main model (R10)
            summarizer_budget=input_budget(
                model, self.settings.summary_prompt, capacity if model is request.model else None
            ),
            thread_id=_thread_id(),
            emit=emit,
        )
        return inp, summarizer, backend

    # --- the two drivers ----------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse | ExtendedModelResponse:
        """Sync path: R3–R14; history is written before summarizing (R10)."""
        inp, summarizer, backend = self._round_input(request)
        gen = compression_round(inp)
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = gen.throw(error) if error is not None else gen.send(value)
            except StopIteration as stop:
                return _result(*stop.value)
            value, error = None, None
            try:
                if isinstance(effect, CallModel):
                    value = handler(request.override(messages=_any_messages(effect.messages)))
                elif isinstance(effect, RunL1):
                    value = run_l1(self.hooks.l1_trim, effect.effective, effect.ctx)
                elif isinstance(effect, RunL2):
                    path = _write_history(backend, effect.history_path, effect.history_content)
                    value = (path, _safe_summarize(summarizer, effect.job))
                else:  # pragma: no cover
                    raise TypeError(f"unknown effect {effect!r}")
            except BaseException as exc:  # cancellation too: the round emits ``failed``
                error = exc

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse:
        """Async path: the same round; history write and summary run concurrently (R10)."""
        inp, summarizer, backend = self._round_input(request)
        gen = compression_round(inp)
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = gen.throw(error) if error is not None else gen.send(value)
            except StopIteration as stop:
                return _result(*stop.value)
            value, error = None, None
            try:
                if isinstance(effect, CallModel):
                    value = await handler(request.override(messages=_any_messages(effect.messages)))
                elif isinstance(effect, RunL1):
                    value = await asyncio.to_thread(run_l1, self.hooks.l1_trim, effect.effective, effect.ctx)
                elif isinstance(effect, RunL2):
                    path, summary = await asyncio.gather(
                        _awrite_history(backend, effect.history_path, effect.history_content),
                        _asafe_summarize(summarizer, effect.job),
                    )
                    value = (path, summary)
                else:  # pragma: no cover
                    raise TypeError(f"unknown effect {effect!r}")
            except BaseException as exc:  # cancellation too: the round emits ``failed``
                error = exc


# --- helpers ------------------------------------------------------------------------------------


def _any_messages(messages: list[BaseMessage]) -> list[AnyMessage]:
    """The view as ``ModelRequest.messages`` types it (the same list: every message of a view is a
    LangChain message class of ``AnyMessage``)."""
    return cast(list[AnyMessage], messages)


def _result(response: Any, update: RoundUpdate | None) -> ModelResponse | ExtendedModelResponse:
    """The driver's result: the handler's response, with ``Command(update=...)`` after L2 (R11)."""
    if isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    if update is None:
        return cast(ModelResponse, response)
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


def _max_input_tokens(model: Any) -> int | None:
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict):
        value = profile.get("max_input_tokens")
        if isinstance(value, int) and value > 0:
            return value
    return None


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


def _history_failed(path: str, exc: BaseException) -> None:
    logger.error("conversation history could not be saved to %s: %s", path, exc)
    logger.warning(
        "L2 continues without a history file: the summarized messages are recoverable "
        "only from the checkpoint (file_path=None)"
    )
    warnings.warn(f"conversation history not saved ({exc}); summarizing anyway", RuntimeWarning, stacklevel=3)


def _write_history(backend: Callable[[], Any], path: str, content: str) -> str | None:
    try:
        return write_text(backend(), path, content)
    except FileWriteError as exc:
        _history_failed(path, exc)
        return None


async def _awrite_history(backend: Callable[[], Any], path: str, content: str) -> str | None:
    try:
        return await awrite_text(backend(), path, content)
    except FileWriteError as exc:
        _history_failed(path, exc)
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
