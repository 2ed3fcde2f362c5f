"""One LangGraph model node with middleware, driven by hand.

:class:`ModelNodeHarness` runs one ``AgentMiddleware`` the way the agent graph of
``langchain.agents.create_agent`` runs it (LangChain v1, ``langchain/agents/factory.py``: the
``<name>.before_model`` node, then ``model_node``/``amodel_node``, whose writes
``_build_commands`` orders), without building a graph, so that a researcher (and ctxlab's replay,
benchmark and tests) can drive a middleware call by call and look at what it did::

    harness = ModelNodeHarness(CompressionMiddleware(settings=...), system_message="Be brief.",
                               thread_id="t-1")
    harness.add(HumanMessage("hi", id="h1"))
    call = harness.call(AIMessage("hello", id="a1"))   # the model "answers" with this message
    call.views[-1].messages        # what the model received (without the system message)
    harness.state["messages"]      # [h1, a1]; harness.state["_summarization_event"] after an L2 round
    harness.events                 # the custom stream events (``context_compression``)

What one :meth:`~ModelNodeHarness.call` mirrors:

1. the ``<name>.before_model`` node, when the middleware overrides ``before_model`` (or, in
   :meth:`~ModelNodeHarness.acall`, ``abefore_model``): it receives a fresh dict of the state
   (as every LangGraph node does) and the runtime, and its returned update is applied;
2. the model node: a ``ModelRequest`` (the model, the state messages, the system message, the
   tools, ``tool_choice=None``, the state, the runtime) goes to the middleware's
   ``wrap_model_call`` (``awrap_model_call`` in :meth:`~ModelNodeHarness.acall`) when it
   overrides either of them, else straight to the model handler;
3. the node's writes, in LangGraph's order: first the model response (``messages`` and, when
   set, ``structured_response``), then the ``Command.update`` of an ``ExtendedModelResponse``.

Updates are applied as LangGraph's channels apply them: ``messages`` through the reducer of
``AgentState.messages`` (``langgraph.graph.message.add_messages``: new ids appended, equal ids
replaced, ``RemoveMessage`` honoured), every other key by assignment.  Both hooks run with a
``Runtime`` whose ``stream_writer`` collects custom stream events, and inside a LangGraph config
(``langgraph.config.get_config()``) carrying ``{"configurable": {"thread_id": ...}}`` when a
thread id is given, which is where :class:`~ctxlab.CompressionMiddleware` reads the thread that
names its history files (R10).

Not mirrored: ``after_model`` and the agent-level hooks, tool execution (add tool results with
:meth:`~ModelNodeHarness.add`), the repair of invalid tool calls that ``create_agent`` does
before building the request, checkpointing, and composition of several middlewares (drive one
middleware; compose them yourself if needed).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.types import Command

from ctxlab.replay.metrics import RequestView
from ctxlab.replay.models import ReplayModel

__all__ = ["Answer", "ModelCall", "ModelNodeHarness", "apply_update", "overrides", "update_items"]

#: what the model answers: a message or a response given as is (the same one for every handler
#: call), or a function of the request returning either (an awaitable of either in ``acall``)
Answer = AIMessage | ModelResponse | Callable[[ModelRequest], Any]

#: the ``messages`` reducer: ``(current messages, update value) -> new messages``
MessagesReducer = Callable[[Any, Any], Any]


def overrides(middleware: AgentMiddleware, hook: str) -> bool:
    """Whether ``middleware``'s class overrides ``AgentMiddleware.<hook>`` (the test
    ``create_agent`` uses to decide which nodes and handlers a middleware gets)."""
    return getattr(type(middleware), hook, None) is not getattr(AgentMiddleware, hook, None)


def update_items(update: Any) -> list[tuple[str, Any]]:
    """The ``(key, value)`` pairs of a node update or ``Command``: ``None``, a dict, a list of
    pairs, or a state object (what ``Command.update`` may hold)."""
    if update is None:
        return []
    if isinstance(update, Command):
        return list(update._update_as_tuples())
    return list(Command(update=update)._update_as_tuples())


def apply_update(state: dict[str, Any], update: Any, reducer: MessagesReducer = add_messages) -> None:
    """Apply ``update`` to ``state`` in place, as LangGraph applies a node's write: ``messages``
    through ``reducer`` (default ``add_messages``), every other key by assignment.

    Args:
        state: the state dict; its ``messages`` is a list of messages.
        update: see :func:`update_items`.
        reducer: ``(current, value) -> new`` for the ``messages`` key.
    """
    for key, value in update_items(update):
        if key == "messages":
            state["messages"] = reducer(state.get("messages") or [], value)
        else:
            state[key] = value


@dataclass
class ModelCall:
    """What one model-node run did.

    Attributes:
        request: the ``ModelRequest`` built from the state and handed to the middleware (set on
            every call that returned).
        result: what ``wrap_model_call`` returned, as is (the handler's response when the
            middleware does not wrap the model call).
        before_update: the update ``before_model`` returned (``None``: not overridden, or no update).
        views: every request the model handler received, in order (usually one; none when the
            middleware answered without calling the model).  ``messages`` exclude the system message.
        response: the model response the node wrote (an ``AIMessage`` from the middleware is
            wrapped in a ``ModelResponse``).
        command: the ``Command`` of an ``ExtendedModelResponse``, or ``None``.
        events: the custom stream events written during this call, in order.
        seconds: wall time inside the middleware's hooks (``before_model`` and
            ``wrap_model_call``), the model handler's own time excluded (seconds).  Building
            the request and applying updates are not counted.
    """

    request: ModelRequest | None = None
    result: Any = None
    before_update: Any = None
    views: list[RequestView] = field(default_factory=list)
    response: ModelResponse | None = None
    command: Command[Any] | None = None
    events: list[Any] = field(default_factory=list)
    seconds: float = 0.0


class ModelNodeHarness:
    """Runs a middleware as LangGraph's model node of ``create_agent`` does (see the module doc).

    Args:
        middleware: the ``AgentMiddleware`` to drive.
        model: the chat model put in the request (the middleware may read its ``profile`` or use
            it as its summarizer); default: :class:`~ctxlab.replay.models.ReplayModel`, which
            refuses to be called, so every call needs an answer.
        tools: the tool objects or schemas put in the request.
        system_message: the request's system message (a string becomes a ``SystemMessage``).
            It is not a state message, as in ``create_agent(system_prompt=...)``.
        messages: the initial state messages, applied through ``reducer`` (like graph input).
        thread_id: the ``configurable.thread_id`` of the LangGraph config the hooks run in;
            ``None``: no config is set (the caller's, if any, stays in effect).
        config: more of that config (``callbacks``, ``tags``, ``metadata``, ...); it is set even
            without a thread id.
        context, store: the ``Runtime``'s context and store.
        reducer: the ``messages`` reducer (default ``add_messages``, as ``AgentState``).
        on_event: called with each custom stream event as it is written (besides collecting it).
        record: keep every call's views and events in :attr:`views` and :attr:`events`;
            ``False`` keeps only the returned :class:`ModelCall` (long runs).
        middleware_tools: add the middleware's own ``tools`` to the request's tools, as
            ``create_agent`` does (default); ``False`` sends ``tools`` only (a test that counts
            exactly the tools it passes).

    Attributes:
        state: the graph state: ``{"messages": [...], ...}``; other keys appear as updates set them
            (``_summarization_event`` for :class:`~ctxlab.CompressionMiddleware`, R11).
        views: every request view the model received, over all calls (``record=True``).
        events: every custom stream event, over all calls (``record=True``).
    """

    def __init__(
        self,
        middleware: AgentMiddleware,
        *,
        model: BaseChatModel | None = None,
        tools: Sequence[BaseTool | dict[str, Any]] = (),
        system_message: SystemMessage | str | None = None,
        messages: Sequence[BaseMessage] = (),
        thread_id: str | None = None,
        config: RunnableConfig | None = None,
        context: Any = None,
        store: Any = None,
        reducer: MessagesReducer = add_messages,
        on_event: Callable[[Any], None] | None = None,
        record: bool = True,
        middleware_tools: bool = True,
    ) -> None:
        self.middleware = middleware  # a property: also reads which hooks it overrides
        self.middleware_tools = middleware_tools
        self.model: BaseChatModel = model if model is not None else ReplayModel()
        self.tools: list[BaseTool | dict[str, Any]] = list(tools)
        self.system_message = (
            SystemMessage(content=system_message) if isinstance(system_message, str) else system_message
        )
        self.thread_id = thread_id
        self.config = config
        self.context = context
        self.store = store
        self.reducer = reducer
        self.on_event = on_event
        self.record = record
        self.state: dict[str, Any] = {"messages": []}
        self.views: list[RequestView] = []
        self.events: list[Any] = []
        if messages:
            self.add(*messages)

    @property
    def middleware(self) -> AgentMiddleware:
        """The middleware driven.  Assigning another one
        keeps the state, as when an agent is rebuilt around the same checkpoint."""
        return self._middleware

    @middleware.setter
    def middleware(self, middleware: AgentMiddleware) -> None:
        self._middleware = middleware
        self._before = overrides(middleware, "before_model")
        self._abefore = overrides(middleware, "abefore_model")
        self._wrap = overrides(middleware, "wrap_model_call") or overrides(middleware, "awrap_model_call")

    # --- state --------------------------------------------------------------------------------

    def add(self, *messages: BaseMessage) -> None:
        """Add messages to the state through the reducer (graph input, or a tools node's results)."""
        self.update({"messages": list(messages)})

    def update(self, update: Any) -> None:
        """Apply a state update (see :func:`apply_update`)."""
        apply_update(self.state, update, self.reducer)

    # --- one model call -----------------------------------------------------------------------

    def call(self, answer: Answer | None = None, *, append_response: bool = True) -> ModelCall:
        """Run ``before_model`` and the model node once (sync hooks) and apply their writes.

        Args:
            answer: what the model answers (:data:`Answer`); ``None``: invoke :attr:`model` as
                ``create_agent`` does (``bind_tools`` when there are tools, the system message first).
            append_response: ``False`` leaves the model response out of the state (the command's
                update is still applied): for running one state several times.  A real graph
                always writes it.

        Returns:
            The :class:`ModelCall`.

        Raises:
            TypeError: the middleware (or the answer) returned something other than a
                ``ModelResponse``, ``AIMessage`` or ``ExtendedModelResponse``.
            NotImplementedError: its ``Command`` has ``goto``, ``resume`` or ``graph`` (as
                ``create_agent``).
            Exception: whatever ``before_model``, the middleware or the answer raises,
                unchanged; the state then keeps ``before_model``'s update (its node had
                finished) and nothing of the model node.
        """
        call, runtime, handler_seconds = self._start()

        def handler(request: ModelRequest) -> ModelResponse:
            with self._handling(call, request, handler_seconds):
                return _as_response(_answer_sync(answer, request), "the answer")

        with self._config():
            if self._before:
                t0 = time.perf_counter()
                before = self.middleware.before_model(dict(self.state), runtime)  # type: ignore[arg-type]
                self._before_done(call, before, t0)
            request = self._request(call, runtime)
            with self._in_node(call, handler_seconds):
                out = self.middleware.wrap_model_call(request, handler) if self._wrap else handler(request)
        self._finish(call, out, append_response)
        return call

    async def acall(self, answer: Answer | None = None, *, append_response: bool = True) -> ModelCall:
        """:meth:`call` with the async hooks: ``abefore_model`` (``before_model`` when only that is
        overridden) and ``awrap_model_call``; ``answer`` may also return an awaitable.  ``None``
        invokes :attr:`model` with ``ainvoke``.  Same returns and errors as :meth:`call`."""
        call, runtime, handler_seconds = self._start()

        async def handler(request: ModelRequest) -> ModelResponse:
            with self._handling(call, request, handler_seconds):
                return _as_response(await _answer_async(answer, request), "the answer")

        with self._config():
            if self._abefore or self._before:
                t0 = time.perf_counter()
                before = (
                    await self.middleware.abefore_model(dict(self.state), runtime)  # type: ignore[arg-type]
                    if self._abefore
                    else self.middleware.before_model(dict(self.state), runtime)  # type: ignore[arg-type]
                )
                self._before_done(call, before, t0)
            request = self._request(call, runtime)
            with self._in_node(call, handler_seconds):
                out = (
                    await self.middleware.awrap_model_call(request, handler)
                    if self._wrap
                    else await handler(request)
                )
        self._finish(call, out, append_response)
        return call

    # --- helpers ------------------------------------------------------------------------------

    def _start(self) -> tuple[ModelCall, Runtime[Any], list[float]]:
        call = ModelCall()
        events = call.events

        def writer(event: Any) -> None:
            events.append(event)
            if self.record:
                self.events.append(event)
            if self.on_event is not None:
                self.on_event(event)

        runtime: Runtime[Any] = Runtime(context=self.context, store=self.store, stream_writer=writer)
        return call, runtime, [0.0]

    def _before_done(self, call: ModelCall, before: Any, t0: float) -> None:
        """``before_model`` (started at ``t0``, ``time.perf_counter``) returned ``before``: count
        its seconds and apply its update."""
        call.seconds += time.perf_counter() - t0
        call.before_update = before
        self.update(before)

    def _request(self, call: ModelCall, runtime: Runtime[Any]) -> ModelRequest:
        """The model node's request, kept as ``call.request``."""
        # create_agent gives the model the agent's tools and the tools middlewares contribute
        contributed = (getattr(self.middleware, "tools", None) or []) if self.middleware_tools else []
        call.request = ModelRequest(
            model=self.model,
            messages=list(self.state["messages"]),
            system_message=self.system_message,
            tools=[*self.tools, *contributed],
            tool_choice=None,
            response_format=None,
            state=dict(self.state),  # type: ignore[arg-type]  # the node gets a fresh dict per step
            runtime=runtime,
            model_settings={},
        )
        return call.request

    @contextmanager
    def _handling(
        self, call: ModelCall, request: ModelRequest, handler_seconds: list[float]
    ) -> Iterator[None]:
        """Around the model handler: record the view it received and add its wall time (seconds)
        to ``handler_seconds[0]``, which the middleware's time leaves out."""
        t0 = time.perf_counter()
        try:
            self._view(call, request)
            yield
        finally:
            handler_seconds[0] += time.perf_counter() - t0

    @contextmanager
    def _in_node(self, call: ModelCall, handler_seconds: list[float]) -> Iterator[None]:
        """Around the model node: add its wall time minus the handler's to ``call.seconds``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            call.seconds += time.perf_counter() - t0 - handler_seconds[0]

    def _view(self, call: ModelCall, request: ModelRequest) -> None:
        view = RequestView(
            system=request.system_message, tools=list(request.tools or []), messages=list(request.messages)
        )
        call.views.append(view)
        if self.record:
            self.views.append(view)

    @contextmanager
    def _config(self) -> Iterator[None]:
        """The LangGraph config of the node (read by ``langgraph.config.get_config``)."""
        if self.thread_id is None and self.config is None:
            yield
            return
        config: dict[str, Any] = dict(self.config or {})
        configurable = dict(config.get("configurable") or {})
        if self.thread_id is not None:
            configurable["thread_id"] = self.thread_id
        config["configurable"] = configurable
        token = var_child_runnable_config.set(config)  # type: ignore[arg-type]
        try:
            yield
        finally:
            var_child_runnable_config.reset(token)

    def _finish(self, call: ModelCall, out: Any, append_response: bool) -> None:
        call.result = out
        if isinstance(out, ExtendedModelResponse):
            call.response, call.command = _as_response(out.model_response, "the middleware"), out.command
        else:
            call.response = _as_response(out, "the middleware")
        if call.command is not None:
            for what in ("goto", "resume", "graph"):
                if getattr(call.command, what, None):
                    raise NotImplementedError(
                        f"Command {what} is not supported in wrap_model_call middleware"
                    )
        if append_response:
            self.update({"messages": list(call.response.result)})
            if call.response.structured_response is not None:
                self.state["structured_response"] = call.response.structured_response
        if call.command is not None:
            self.update(call.command)


def _as_response(value: Any, who: str) -> ModelResponse:
    if isinstance(value, ModelResponse):
        return value
    if isinstance(value, AIMessage):
        return ModelResponse(result=[value])
    raise TypeError(
        f"{who} returned {type(value).__name__}; expected a ModelResponse, an AIMessage or an "
        "ExtendedModelResponse"
    )


def _model_input(request: ModelRequest) -> tuple[Any, list[AnyMessage]]:
    model: Any = request.model
    if request.tools:
        model = model.bind_tools(request.tools, tool_choice=request.tool_choice, **request.model_settings)
    elif request.model_settings:
        model = model.bind(**request.model_settings)
    messages = list(request.messages)
    if request.system_message is not None:
        messages = [request.system_message, *messages]
    return model, messages


def _answer_sync(answer: Answer | None, request: ModelRequest) -> Any:
    if answer is None:
        model, messages = _model_input(request)
        return model.invoke(messages)
    if isinstance(answer, (AIMessage, ModelResponse)):
        return answer
    return answer(request)


async def _answer_async(answer: Answer | None, request: ModelRequest) -> Any:
    if answer is None:
        model, messages = _model_input(request)
        return await model.ainvoke(messages)
    if isinstance(answer, (AIMessage, ModelResponse)):
        return answer
    value = answer(request)
    if inspect.isawaitable(value):
        value = await value
    return value
