"""Work that runs beside the agent: a thread for sync agents, an asyncio task for async ones.

The prepared summaries of :mod:`ctxlab.core.prepare` (issue 34) start here.  A
:class:`PrepareRunner` starts a piece of work and hands back a :class:`Pending` that the round
can look at (``done``), wait for up to a deadline (``wait`` on the sync path, ``await_`` on the
async path) and read (``outcome``).  :class:`RealRunner` is the middleware's default: a daemon
thread (so a hung summarizer never keeps the process alive) or a task on the running event loop.
The replay's simulated runner (``ctxlab.replay.latency``) implements the same protocol on
simulated time.

Background work is detached from the agent's run: a thread starts with an empty context, and a
task is created in a fresh ``contextvars.Context``, so it never writes to the run's stream or
its callbacks after the model node has returned.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

logger = logging.getLogger("ctxlab.core.background")

__all__ = ["FuturePending", "Pending", "PrepareRunner", "RealRunner", "TaskPending"]

#: what a piece of background work ended with: its value, or the exception that ended it
Outcome = Any


class Pending(Protocol):
    """A piece of background work the round may wait for.

    Attributes:
        started_at: when it started, on its runner's clock (seconds).
    """

    started_at: float

    def done(self) -> bool:
        """Whether the agent may use its outcome now."""
        ...

    def outcome(self) -> Outcome | None:
        """Its value, or the exception that ended it (``asyncio.CancelledError`` for a cancelled
        task); ``None`` while it runs."""
        ...

    def wait(self, timeout: float) -> None:
        """Block until it is done or ``timeout`` seconds passed (sync agents)."""
        ...

    async def await_(self, timeout: float) -> None:
        """Await it until it is done or ``timeout`` seconds passed (async agents); never cancels it."""
        ...

    def on_finish(self, callback: Callable[[Outcome], None]) -> None:
        """Call ``callback(outcome)`` once it ended (at once when it has)."""
        ...


class PrepareRunner(Protocol):
    """Starts background work and tells the time (seconds, any origin)."""

    def now(self) -> float: ...

    def start(self, work: Callable[[], Any]) -> Pending:
        """Run ``work()`` beside a sync agent; never raises for what ``work`` raises."""
        ...

    def start_async(self, work: Callable[[], Awaitable[Any]]) -> Pending:
        """Run ``await work()`` beside an async agent (called inside its event loop)."""
        ...


class FuturePending:
    """A :class:`Pending` over a ``concurrent.futures.Future`` set by a daemon thread."""

    def __init__(self, future: concurrent.futures.Future[Any], started_at: float) -> None:
        self.future = future
        self.started_at = started_at

    def done(self) -> bool:
        return self.future.done()

    def outcome(self) -> Outcome | None:
        if not self.future.done():
            return None
        exc = self.future.exception()
        return exc if exc is not None else self.future.result()

    def wait(self, timeout: float) -> None:
        concurrent.futures.wait([self.future], timeout=max(0.0, timeout))

    async def await_(self, timeout: float) -> None:
        if self.future.done():
            return
        await asyncio.wait({asyncio.wrap_future(self.future)}, timeout=max(0.0, timeout))

    def on_finish(self, callback: Callable[[Outcome], None]) -> None:
        self.future.add_done_callback(lambda f: callback(self.outcome()))


class TaskPending:
    """A :class:`Pending` over an ``asyncio.Task`` of the event loop ``loop``.  Waited for from
    that loop, it is awaited (``asyncio.wait``: a timeout never cancels it); from another thread,
    through an event its done-callback sets; the loop's own thread cannot block on it (a sync
    call inside a running loop): ``wait`` returns at once there."""

    def __init__(self, task: asyncio.Task[Any], loop: asyncio.AbstractEventLoop, started_at: float) -> None:
        self.task = task
        self.loop = loop
        self.started_at = started_at
        self._finished = threading.Event()
        task.add_done_callback(lambda t: self._finished.set())

    def done(self) -> bool:
        return self.task.done()

    def outcome(self) -> Outcome | None:
        if not self.task.done():
            return None
        if self.task.cancelled():
            return asyncio.CancelledError("the background task was cancelled")
        exc = self.task.exception()
        return exc if exc is not None else self.task.result()

    def wait(self, timeout: float) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not self.loop:
            self._finished.wait(max(0.0, timeout))

    async def await_(self, timeout: float) -> None:
        if self.task.done():
            return
        if asyncio.get_running_loop() is self.loop:
            await asyncio.wait({self.task}, timeout=max(0.0, timeout))
        else:  # another loop (another thread's agent): wait without touching this task's loop
            await asyncio.to_thread(self._finished.wait, max(0.0, timeout))

    def on_finish(self, callback: Callable[[Outcome], None]) -> None:
        self.task.add_done_callback(lambda t: callback(self.outcome()))


class RealRunner:
    """Background work on real time: a daemon thread per piece of work (sync agents), a task on the
    running event loop (async agents).  Tasks are referenced until they end (an unreferenced
    task may be collected mid-flight)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic()

    def start(self, work: Callable[[], Any]) -> Pending:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to whoever reads the outcome
                future.set_exception(exc)

        threading.Thread(target=run, name="ctxlab-prepare", daemon=True).start()
        return FuturePending(future, self.now())

    def start_async(self, work: Callable[[], Awaitable[Any]]) -> Pending:
        loop = asyncio.get_running_loop()

        async def run() -> Any:
            return await work()

        # a fresh context: the task never reaches the agent run's stream or callbacks
        task = loop.create_task(run(), name="ctxlab-prepare", context=contextvars.Context())
        with self._lock:
            self._tasks.add(task)

        def forget(t: asyncio.Task[Any]) -> None:
            with self._lock:
                self._tasks.discard(t)

        task.add_done_callback(forget)
        return TaskPending(task, loop, self.now())
