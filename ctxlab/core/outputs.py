"""The middleware's files in a thread's file scope: what exists, what to write, how to read it.

A file that a request view names must exist in the file scope of that request's thread (R6,
R17).  A middleware instance keeps, per file scope, a record of the offload files it wrote there
itself (:class:`ScopeRecord`, in the instance's :class:`OwnFiles`; issue 31): a path it wrote is
trusted from that record and not checked again, as long as nothing else changed the scope's
offload files since — a ``FilesystemBackend``'s offload folder is one ``os.stat`` per request
(its change time and identity), a DeepAgents ``StateBackend`` the state's ``files`` holding the
paths; after a change, each own path is checked once more before a view names it (a vanished
file is written again).  With any other backend nothing is trusted (there is no cheap way to see
a file vanish): every path named is checked, or written when the backend cannot tell.  A path the instance did not write itself is
checked every time a view names it (one ``os.lstat``, state lookup or ``download_files`` call per
path, never a listing of the folder, which grows with every offload: issue 20).  Offload paths are
content-addressed, so writing a file again is harmless.

New files go through the instance's write-behind queue (:mod:`ctxlab.core.writes`) when the scope
is a folder or another backend that does I/O and its last write succeeded: the view names the path
at once and the middleware waits for the request's writes before its model node returns.  The
first write in a scope, every write after a failure and every ``StateBackend`` write (it must be
sent from the model node itself) are made at once, so a write that fails falls back as it always
did (the view keeps a preview that names no file).  A write-behind that fails is forgotten as
written (the next request checks and writes the path again, or falls back) and its text is kept a
while, so that ``read_saved_output`` can still answer for it.

:func:`make_read_tool` is the tool a middleware contributes so that the model can read what it is
told to read when the agent has no file tool of its own over the same backend (plain
``create_agent``).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool

from ctxlab.core.files import (
    CONVERSATION_HISTORY_DIR,
    LARGE_TOOL_RESULTS_DIR,
    FileProbe,
    FileWriteError,
    file_checker,
    tool_result_path_and_size,
    write_text,
)
from ctxlab.core.identity import IdentityCache
from ctxlab.core.own_files import FOLDER, OTHER, STATE, OwnFiles, ScopeRecord, record_failed, record_written
from ctxlab.core.writes import PendingWrites

logger = logging.getLogger("ctxlab.core.outputs")

T = TypeVar("T")

#: the name of the read tool a middleware contributes (:func:`make_read_tool`)
READ_TOOL_NAME = "read_saved_output"
#: lines the read tool returns by default (as DeepAgents' ``read_file``)
READ_LIMIT_LINES = 2000
#: texts whose offload path and size are remembered (keyed by the text object itself): enough for
#: the offloads of one view at the default settings (the bench's realistic 8,000-message run holds
#: at most 151), which a backend the instance cannot trust checks again on every round; a
#: trusted scope asks for each new text once (issue 31: 1,024 entries held ~0.5 MB)
PATHS_CACHED = 256

__all__ = [
    "PATHS_CACHED",
    "READ_LIMIT_LINES",
    "READ_TOOL_NAME",
    "FileScope",
    "OffloadPaths",
    "OwnFiles",
    "make_read_tool",
]


class OffloadPaths:
    """``(tool name, text) -> (virtual path, bytes written)`` of an offload file (R6), remembered
    per text object so that a long run hashes each tool result once.  Thread-safe."""

    def __init__(self, max_entries: int = PATHS_CACHED) -> None:
        self._cache: IdentityCache[str, tuple[str, int]] = IdentityCache(max_entries)

    def __call__(self, tool_name: str | None, text: str) -> tuple[str, int]:
        return self._cache.get_or_put(text, lambda t: tool_result_path_and_size(tool_name, t), tool_name)


class FileScope:
    """The outputs of one request's file scope (the thread's), as the backend shows them.

    Args:
        backend: returns the request's backend (called on first need).
        paths: the offload path maker shared by the middleware.
        state_files: the ``files`` channel of the request's state (a DeepAgents ``StateBackend``
            keeps the thread's files there); ``None``: the state has none.
        own: the middleware's :class:`OwnFiles` (its records and write-behind queue); ``None``:
            nothing is trusted or written behind (every path named is checked, every write made
            at once), as before issue 31.
        thread_id: the request's thread (part of a scope that is not a folder).

    A path the instance wrote itself in this scope is trusted (see the module docstring); any other
    path is checked once per request (:func:`ctxlab.core.files.file_checker`: O(1) in the files
    the backend holds, never a listing; issue 20).  When the backend cannot tell, a path that is
    not the instance's own is written (the path is content-addressed, a second write is harmless).
    """

    def __init__(
        self,
        backend: Callable[[], Any],
        paths: OffloadPaths,
        state_files: Mapping[str, Any] | None = None,
        *,
        own: OwnFiles | None = None,
        thread_id: str | None = None,
    ) -> None:
        self._backend = backend
        self._paths = paths
        self._state_files = state_files
        self._seen: dict[str, FileProbe] = {}
        self._check: Callable[[str], FileProbe] | None = None
        self._own = own
        self._thread_id = thread_id
        self._record: ScopeRecord | None = None
        self._epoch: Hashable | None = None
        #: the write-behinds of this request (waited for before the model node returns)
        self.pending = PendingWrites()
        self._queued: list[tuple[ScopeRecord, str, int, str]] = []

    def _probe(self, path: str) -> FileProbe:
        found = self._seen.get(path)
        if found is None:
            if self._check is None:
                backend = self._backend()
                own = self._own
                self._check = (
                    own.checker(backend, self._state_files, file_checker)
                    if own is not None
                    else file_checker(backend, self._state_files)
                )
            found = self._seen[path] = self._check(path)
        return found

    def _scope(self) -> ScopeRecord | None:
        """This request's :class:`ScopeRecord`, its epoch brought up to date on first use."""
        if self._own is None:
            return None
        record = self._record
        if record is None:
            record = self._record = self._own.record(self._backend(), self._thread_id)
            with record.lock:
                if record.kind == FOLDER:
                    now = record.folder_stat()
                    if now != record.generation or now is None:
                        record.changed()  # another writer, a deletion, a new folder
                        record.generation = now
                elif record.kind == STATE:
                    files = self._state_files if self._state_files is not None else {}
                    if not all(map(files.__contains__, record.written.keys())):
                        record.changed()  # a step whose writes were discarded, a rewind
                # another backend: no cheap way to see a change, so nothing is trusted (epoch None)
                self._epoch = (id(record), record.epoch) if record.kind != OTHER else None
        return record

    def files_epoch(self) -> Hashable | None:
        """For :attr:`ctxlab.core.l1.TrimContext.files_epoch`: equal from request to request while
        the instance's own files in this scope are known unchanged; ``None``: nothing is known."""
        self._scope()
        return self._epoch

    def _owned(self, path: str, size: int | None) -> bool:
        record = self._scope()
        if record is None or record.kind == OTHER:
            return False
        with record.lock:
            known = record.written.get(path)
            if known is None or (size is not None and known != size):
                return False
            return path not in record.suspect

    def owns(self, path: str) -> bool:
        """For :attr:`ctxlab.core.l1.TrimContext.file_owned`: did this instance write ``path`` in
        this scope, and is it trusted there (no change of the scope since)?"""
        return self._owned(path, None)

    def exists(self, path: str, size: int | None = None) -> bool | None:
        """Does the virtual ``path`` exist (with ``size`` bytes, when both sizes are known)?
        ``None``: the backend cannot tell."""
        if self._owned(path, size):
            return True
        there, known = self._probe(path)
        if there is not True:
            return there
        if size is not None and known is not None and known != size:
            return False
        record = self._record
        if record is not None and path in record.suspect:
            with record.lock:  # an own file checked again after a change of the scope
                record.suspect.discard(path)
        return True

    def file_exists(self, path: str) -> bool:
        """For :attr:`ctxlab.core.l1.TrimContext.file_exists`: ``False`` only when the backend
        says that the file is not there."""
        return self.exists(path) is not False

    def save_tool_result(self, tool_name: str | None, text: str) -> str:
        """Make sure ``text`` exists at its offload path in this scope; return the path (R6).
        A new file goes behind (see the module docstring) or is written at once.

        Raises:
            FileWriteError: the backend could not write it (a write made at once).
        """
        path, size = self._paths(tool_name, text)
        if self.exists(path, size) is True:
            return path
        record = self._record if self._own is not None else None
        if record is not None and record.healthy and record.kind != STATE:
            self._write_behind(record, path, size, text)
            return path
        before = record.folder_stat() if record is not None else None
        write_text(self._backend(), path, text, exist_ok=True)
        self._seen[path] = (True, size)
        if record is not None:
            record_written(record, path, size, before)
        return path

    def _write_behind(self, record: ScopeRecord, path: str, size: int, text: str) -> None:
        with record.lock:
            record.written.put(path, size)  # trusted at once: the node waits for the write
            record.suspect.discard(path)
        self._queued.append((record, path, size, text))

    def submit_writes(self) -> None:
        """Hand the writes queued so far to the write-behind thread, as one job (one hand-over per
        L1 pass, not one per file); :meth:`wait` does it too."""
        if not self._queued or self._own is None:
            return
        queued, self._queued = self._queued, []
        backend = self._backend()

        def write_all() -> None:
            for record, path, size, text in queued:
                before = record.folder_stat()
                try:
                    write_text(backend, path, text, exist_ok=True)
                except Exception as exc:  # each file's outcome is its own
                    record_failed(record, path, text, exc)
                else:
                    record_written(record, path, size, before)

        self.pending.add(self._own.queue.submit(write_all))

    def failed(self, path: str) -> bool:
        """Whether a write-behind of ``path`` in this request's scope failed (call after
        :meth:`wait`)."""
        record = self._record
        return record is not None and record.failed.get(path) is not None and record.written.get(path) is None

    def after_l1(self, done: T) -> T:
        """:meth:`submit_writes` after an L1 pass; returns the pass's result ``done`` as it is."""
        self.submit_writes()
        return done

    def wait(self) -> None:
        """Block until this request's write-behinds are done."""
        self.submit_writes()
        self.pending.wait()

    async def await_all(self) -> None:
        """:meth:`wait` on the event loop."""
        self.submit_writes()
        await self.pending.await_all()


def _read_result_text(result: Any) -> str:
    """The text of a backend ``read`` answer: a ``ReadResult`` (DeepAgents 0.7), or a string."""
    if isinstance(result, str):
        return result
    error = getattr(result, "error", None)
    if error:
        return f"Error: {error}"
    data = getattr(result, "file_data", None)
    content = data.get("content") if isinstance(data, dict) else None
    if isinstance(content, list):
        return "\n".join(str(line) for line in content)
    return str(content) if content is not None else ""


def make_read_tool(
    backend_for: Callable[[Any], Any], recover: Callable[[str], str | None] | None = None
) -> Any:
    """A LangChain tool ``read_saved_output(path, offset=0, limit=2000)`` that reads a file the
    middleware saved (R6, R10): an offloaded tool result under ``/outputs/large_tool_results/``
    or a conversation history under ``/outputs/conversation_history/``.

    ``backend_for(runtime)`` gives the backend of the tool call's runtime (the same file scope as
    the model call that named the file).  ``offset`` and ``limit`` count lines.  Any other path
    is refused (the tool reads nothing else of the backend); an unknown file answers an error
    text, never raises.  ``recover(path)``: the text of a write-behind of ``path`` that failed
    (:meth:`OwnFiles.failed_text`), written again before reading, or answered from memory when
    that fails too (nothing the model was told to read is lost).
    """

    def recovered(backend: Any, norm: str, offset: int, limit: int) -> str | None:
        text = recover(norm) if recover is not None else None
        if text is None:
            return None
        try:
            write_text(backend, norm, text, exist_ok=True)
            return None
        except FileWriteError as exc:
            logger.warning("%s could not be written again (%s): answered from memory", norm, exc.detail)
            return "\n".join(text.splitlines()[max(0, offset) : max(0, offset) + max(1, limit)])

    def check(path: str) -> str | None:
        norm = "/" + path.strip().lstrip("/")
        folder = posixpath.dirname(norm)
        if folder not in (LARGE_TOOL_RESULTS_DIR, CONVERSATION_HISTORY_DIR) or ".." in norm.split("/"):
            return None
        return norm

    def read_saved_output(
        path: str, runtime: ToolRuntime, offset: int = 0, limit: int = READ_LIMIT_LINES
    ) -> str:
        """Read a file that context compression saved: a full tool result (a path under
        /outputs/large_tool_results/) or an earlier part of the conversation (a path under
        /outputs/conversation_history/).  offset: first line (0-based); limit: lines to return."""
        norm = check(path)
        if norm is None:
            return f"Error: {path!r} is not a saved output (only /outputs/large_tool_results/ and /outputs/conversation_history/ files)"
        try:
            backend = backend_for(runtime)
            answer = recovered(backend, norm, offset, limit)
            if answer is not None:
                return answer
            return _read_result_text(backend.read(norm, offset=max(0, offset), limit=max(1, limit)))
        except Exception as exc:  # a tool answers, it does not raise
            logger.warning("reading %s failed: %s", norm, exc)
            return f"Error: {norm} could not be read ({type(exc).__name__})"

    async def aread_saved_output(
        path: str, runtime: ToolRuntime, offset: int = 0, limit: int = READ_LIMIT_LINES
    ) -> str:
        norm = check(path)
        if norm is None:
            return read_saved_output(path, runtime, offset, limit)
        backend = backend_for(runtime)
        reader = getattr(backend, "aread", None)
        try:
            if reader is None or (recover is not None and recover(norm) is not None):
                return read_saved_output(norm, runtime, offset, limit)
            return _read_result_text(await reader(norm, offset=max(0, offset), limit=max(1, limit)))
        except Exception as exc:
            logger.warning("reading %s failed: %s", norm, exc)
            return f"Error: {norm} could not be read ({type(exc).__name__})"

    return StructuredTool.from_function(
        func=read_saved_output,
        coroutine=aread_saved_output,
        name=READ_TOOL_NAME,
        description=read_saved_output.__doc__ or "",
    )
