"""What a middleware instance wrote in each file scope, and what it knows of the scope (issue 31).

:class:`OwnFiles` holds one :class:`ScopeRecord` per file scope (a ``FilesystemBackend``'s offload
folder, or a backend object and thread) and the instance's write-behind queue; a request's
:class:`ctxlab.core.outputs.FileScope` reads and updates the record of its scope.  The record says
which offload files the instance wrote there (trusted while its epoch stays the same), when the
scope changed behind the instance's back (a new epoch: every own file is checked once more), and
which write-behinds failed (their text kept a while for ``read_saved_output``).  Bounded:
:data:`OWN_PATHS_CACHED` paths and :data:`FAILED_KEPT` texts per scope, :data:`SCOPES_CACHED`
scopes per instance.  Nothing here is process-global.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ctxlab.core.files import LARGE_TOOL_RESULTS_DIR, FileProbe, FileWriteError, file_checker, loaded_class
from ctxlab.core.identity import BoundedCache, IdentityCache
from ctxlab.core.writes import WriteQueue

logger = logging.getLogger("ctxlab.core.outputs")

__all__ = [
    "FAILED_KEPT",
    "FOLDER",
    "OTHER",
    "OWN_PATHS_CACHED",
    "SCOPES_CACHED",
    "STATE",
    "OwnFiles",
    "ScopeRecord",
    "record_failed",
    "record_written",
]

#: own offload paths remembered per file scope (least recently named first out: a path no longer
#: remembered is checked when a view names it again)
OWN_PATHS_CACHED = 1024
#: file scopes a middleware keeps a record of (a replay batch opens one per run folder)
SCOPES_CACHED = 256
#: texts of failed write-behinds kept per scope for ``read_saved_output``
FAILED_KEPT = 32

#: the kinds of file scope: a folder on disk, a DeepAgents ``StateBackend``, any other backend
FOLDER, STATE, OTHER = "folder", "state", "other"


class ScopeRecord:
    """What one middleware instance wrote in one file scope, and what it knows of the scope.

    Attributes:
        written: own offload paths -> bytes (written, or queued to be), trusted while
            :attr:`epoch` stays the same; bounded (:data:`OWN_PATHS_CACHED`).
        suspect: own paths to check once more (the scope changed since they were written).
        epoch: counts the changes of the scope that this instance did not make (or could not
            tell from its own): trimmers trust what they decided in the same epoch.
        generation: a folder scope's offload folder as ``os.stat`` saw it after this instance's
            last write (inode, change and modification times); ``None``: not known.
        healthy: the last write in this scope succeeded, so the next may go behind.
        failed: path -> text of write-behinds that failed (the last :data:`FAILED_KEPT`).
    """

    def __init__(self, kind: str, folder: str | None = None) -> None:
        self.kind = kind
        self.folder = folder  # the host path of the offload folder (a folder scope)
        self.written: BoundedCache[str, int] = BoundedCache(OWN_PATHS_CACHED)
        self.suspect: set[str] = set()
        self.epoch = 0
        self.generation: Any = None
        self.healthy = False
        self.failed: BoundedCache[str, str] = BoundedCache(FAILED_KEPT)
        self.lock = threading.Lock()

    def folder_stat(self) -> Any:
        """The offload folder's identity and times (a folder scope), ``None`` when missing."""
        if self.folder is None:
            return None
        try:
            info = os.stat(self.folder)
        except OSError:
            return None
        return (info.st_ino, info.st_dev, info.st_mtime_ns, info.st_ctime_ns)

    def changed(self) -> None:
        """The scope changed behind this instance's back: a new epoch, every own path suspect."""
        self.epoch += 1
        self.suspect = set(self.written.keys())


class OwnFiles:
    """A middleware instance's :class:`ScopeRecord` per file scope, and its write-behind queue.

    A scope is a folder on disk for a DeepAgents ``FilesystemBackend`` (its offload folder's host
    path: two backend objects over one folder share it), and the backend object with the thread
    id otherwise (a ``StateBackend`` keeps a thread's files in its state; another backend object
    may scope its files by thread).  At most :data:`SCOPES_CACHED` scopes are remembered.
    Thread-safe.
    """

    def __init__(self, max_scopes: int = SCOPES_CACHED) -> None:
        self.queue = WriteQueue()
        self._folders: BoundedCache[str, ScopeRecord] = BoundedCache(max_scopes)
        self._others: IdentityCache[Any, ScopeRecord] = IdentityCache(max_scopes)
        # backend object -> (kind, the host path of its offload folder): resolved once per backend
        self._kinds: IdentityCache[Any, tuple[str, str | None]] = IdentityCache(max_scopes)
        # a folder backend's file checker (it resolves each folder's host path once)
        self._checkers: IdentityCache[Any, Callable[[str], FileProbe]] = IdentityCache(max_scopes)
        self._lock = threading.Lock()

    def checker(
        self,
        backend: Any,
        state_files: Mapping[str, Any] | None,
        make: Callable[[Any, Mapping[str, Any] | None], Callable[[str], FileProbe]] = file_checker,
    ) -> Callable[[str], FileProbe]:
        """``make(backend, state_files)`` (:func:`ctxlab.core.files.file_checker`), kept per backend
        object when its scope is a folder (the state's files and other backends: made per request)."""
        if self._kinds.get_or_put(backend, _kind_of)[0] == FOLDER:
            return self._checkers.get_or_put(backend, lambda b: make(b, state_files))
        return make(backend, state_files)

    def record(self, backend: Any, thread_id: str | None) -> ScopeRecord:
        """The record of ``backend``'s scope for ``thread_id`` (made on first use)."""
        kind, folder = self._kinds.get_or_put(backend, _kind_of)
        if kind != FOLDER or folder is None:
            return self._other(backend, thread_id, kind)
        with self._lock:
            found = self._folders.get(folder)
            if found is None:
                found = self._folders.put(folder, ScopeRecord(FOLDER, folder))
        return found

    def _other(self, backend: Any, thread_id: str | None, kind: str) -> ScopeRecord:
        with self._lock:
            return self._others.get_or_put(backend, lambda _b: ScopeRecord(kind), thread_id)

    def failed_text(self, path: str) -> str | None:
        """The text of a failed write-behind of ``path`` in any scope, if still kept."""
        with self._lock:
            records = [*self._folders.values(), *self._others.values()]
        for record in records:
            text = record.failed.get(path)
            if text is not None:
                return text
        return None


def _kind_of(backend: Any) -> tuple[str, str | None]:
    """(the kind of ``backend``'s file scope, the host path of its offload folder when a folder)."""
    state_cls = loaded_class("deepagents.backends.state", "StateBackend")
    if state_cls is not None and isinstance(backend, state_cls):
        return STATE, None
    fs_cls = loaded_class("deepagents.backends.filesystem", "FilesystemBackend")
    if fs_cls is not None and isinstance(backend, fs_cls):
        try:
            return FOLDER, str(backend._resolve_path(LARGE_TOOL_RESULTS_DIR))
        except (OSError, ValueError, RuntimeError):
            return OTHER, None
    return OTHER, None


def record_written(record: ScopeRecord, path: str, size: int, before: Any) -> None:
    """Record a successful write of ``path`` (``size`` bytes) in ``record``; ``before``: the
    offload folder's stat before the write (a folder scope).  When nothing else changed the
    folder since the record's last look, the folder's new stat is known; else it is unknown, and
    the next request starts a new epoch."""
    after = record.folder_stat() if record.kind == FOLDER else None
    with record.lock:
        record.written.put(path, size)
        record.suspect.discard(path)
        record.healthy = True
        if record.kind == FOLDER:
            record.generation = after if before == record.generation else None


def record_failed(record: ScopeRecord, path: str, text: str, error: BaseException) -> None:
    """A write-behind of ``path`` failed: it is not the instance's any more, its text is kept for
    ``read_saved_output``, the next write in the scope is made at once, and a new epoch makes the
    next request check (and write at once) what its view names."""
    detail = error.detail if isinstance(error, FileWriteError) else f"{type(error).__name__}: {error}"
    logger.warning("offload file %s could not be written (write-behind): %s", path, detail)
    with record.lock:
        record.written.discard(path)
        record.failed.put(path, text)
        record.healthy = False
        record.changed()
