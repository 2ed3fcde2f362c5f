"""The write-behind queue of a middleware: file writes off the model call's critical path (issue 31).

An L1 offload names its file in the request view before the file is on disk: the write goes to
a :class:`WriteQueue` (one worker thread per middleware instance, started on first use) and the
round goes on; the model call does not wait for the disk.  What reads the file comes after the
model node, and the middleware waits for its request's writes before the node returns
(:meth:`PendingWrites.wait`, or :meth:`PendingWrites.await_all` on the event loop of an async
agent), so a write is complete before the next tool node, ``read_saved_output`` or the
checkpoint of that step can see the path (R6, R17).

A write runs in a copy of the submitting thread's context (``contextvars``), so a backend that
reads LangGraph's config or runtime from there sees the request's.  The worker thread is not a
daemon: at interpreter exit the queued writes are finished (``concurrent.futures``' exit hook).
Nothing here knows about paths or backends: :mod:`ctxlab.core.outputs` decides what goes to the
queue and what a failed write means.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, TypeVar

__all__ = ["PendingWrites", "WriteQueue"]

T = TypeVar("T")


class WriteQueue:
    """A FIFO of writes done by one worker thread, started on the first :meth:`submit`.

    One per middleware instance (never process-global): its writes run in submission order, one
    at a time, so two writes of one path never race.  Thread-safe.
    """

    def __init__(self, name: str = "ctxlab-writes") -> None:
        self._name = name
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn()`` on the worker thread, in a copy of the caller's context; returns its future."""
        executor = self._executor
        if executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
                executor = self._executor
        return executor.submit(contextvars.copy_context().run, fn)

    def shutdown(self, wait: bool = True) -> None:
        """Stop the worker after the queued writes (``wait``: return when they are done)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait)


class PendingWrites:
    """The writes one request submitted, to be waited for before its model node returns."""

    def __init__(self) -> None:
        self._futures: list[Future[Any]] = []
        self._lock = threading.Lock()

    def add(self, future: Future[Any]) -> None:
        with self._lock:
            self._futures.append(future)

    def __len__(self) -> int:
        return len(self._futures)

    def _take(self) -> list[Future[Any]]:
        with self._lock:
            futures, self._futures = self._futures, []
        return futures

    def wait(self) -> None:
        """Block until every write submitted so far is done (their outcome is handled by the
        callbacks their submitter attached; an exception of a write is not raised here)."""
        futures = self._take()
        if futures:
            wait_futures(futures)

    async def await_all(self) -> None:
        """:meth:`wait` without blocking the event loop."""
        futures = self._take()
        if futures:
            await asyncio.wait([asyncio.wrap_future(f) for f in futures])
