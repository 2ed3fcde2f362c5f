"""How a middleware performs the file side of a compression round (spec R6, R10, R12, R17):
the history file written off the request's thread, and the request's write-behinds settled
before its model node returns (issue 31).

:mod:`ctxlab.core.outputs` decides what is written and when; this module is the driver's part:
the sync and async history writers (a failed history write is logged and warned about, and
summarizing goes on with ``file_path`` ``None``, R10), waiting for a request's write-behinds (a
cancelled request waits too), and dropping from a round's state update the trimmed messages
whose offload file could not be written (R12: the state keeps their originals).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ctxlab.core.compression import RoundUpdate
from ctxlab.core.files import FileWriteError, awrite_text, takes_bytes, write_pieces
from ctxlab.core.marks import offloaded_path_of
from ctxlab.core.outputs import FileScope
from ctxlab.core.writes import WriteQueue

logger = logging.getLogger("ctxlab.core.middleware")

__all__ = ["awrite_history", "confirmed", "render_and_write", "settled", "write_history"]


async def settled(scope: FileScope) -> None:
    """Await ``scope``'s write-behinds; a cancelled request still waits for them (shielded), so
    that no write outlives the request that named its file."""
    task = asyncio.ensure_future(scope.await_all())
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


def confirmed(update: RoundUpdate | None, scope: FileScope) -> RoundUpdate | None:
    """``update`` without the trimmed messages (R12) whose offload file could not be written
    behind: the state keeps their originals (nothing lost)."""
    if not update or not update.get("messages"):
        return update
    kept = [m for m in update["messages"] if not scope.failed(offloaded_path_of(m) or "")]
    if len(kept) == len(update["messages"]):
        return update
    out: RoundUpdate = {**update}
    if kept:
        out["messages"] = kept
    else:
        del out["messages"]
    return out or None


def _history_failed(path: str, exc: FileWriteError) -> None:
    logger.error("conversation history could not be saved to %s: %s", path, exc.detail)
    logger.warning(
        "L2 continues without a history file: the summarized messages are recoverable "
        "only from the checkpoint (file_path=None)"
    )
    warnings.warn(f"conversation history not saved ({exc}); summarizing anyway", RuntimeWarning, stacklevel=3)


def render_and_write(
    backend: Callable[[], Any], path: str, content: str | Callable[[], Iterable[str]]
) -> str:
    """Write the history file (R10), rendering its pieces first when given a function, as bytes
    where the backend takes them (:func:`~ctxlab.core.files.write_pieces`: issue 31).

    Raises:
        FileWriteError: the backend could not write it.
    """
    return write_pieces(backend(), path, content if callable(content) else lambda: (content,))


def write_history(
    queue: WriteQueue, backend: Callable[[], Any], path: str, content: str | Callable[[], Iterable[str]]
) -> str | None:
    """Render and write the history file on ``queue``'s thread and wait for it (the sync path
    summarizes after the write, R10): its path, ``None`` when the write failed (logged, warned)."""
    writing = queue.submit(lambda: render_and_write(backend, path, content))
    try:
        return writing.result()
    except FileWriteError as exc:
        _history_failed(path, exc)
        return None


async def awrite_history(
    backend: Callable[[], Any], path: str, content: str | Callable[[], Iterable[str]]
) -> str | None:
    """:func:`write_history` for an async agent: rendered in a thread; a backend that takes bytes
    is written there too, any other with its ``awrite``."""
    try:
        target = backend()
        if takes_bytes(target):
            return await asyncio.to_thread(render_and_write, lambda: target, path, content)
        text = await asyncio.to_thread(lambda: "".join(content())) if callable(content) else content
        return await awrite_text(target, path, text)
    except FileWriteError as exc:
        _history_failed(path, exc)
        return None
