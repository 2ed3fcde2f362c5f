"""The middleware's files in a thread's file scope: what exists, what to write, how to read it.

A file that a request view names must exist in the file scope of that request's thread (R6,
R17): a per-thread or state backend (DeepAgents' ``StateBackend`` keeps files in the thread's
checkpointed state), a backend that lost the file, or a step that failed and whose state writes
were discarded all mean that "written once by this process" proves nothing.  So nothing is
remembered across requests: :class:`FileScope` checks each path the view names, once per request
(one ``os.stat``, state lookup or ``download_files`` call per path, never a listing of the
folder, which grows with every offload: issue 20), and writes what is missing.  Offload paths are
content-addressed, so writing a file again is harmless.

:func:`make_read_tool` is the tool a middleware contributes so that the model can read what it is
told to read when the agent has no file tool of its own over the same backend (plain
``create_agent``).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool

from ctxlab.core.files import (
    CONVERSATION_HISTORY_DIR,
    LARGE_TOOL_RESULTS_DIR,
    FileProbe,
    file_checker,
    tool_result_path,
    writable_text,
    write_text,
)
from ctxlab.core.identity import IdentityCache

logger = logging.getLogger("ctxlab.core.outputs")

#: the name of the read tool a middleware contributes (:func:`make_read_tool`)
READ_TOOL_NAME = "read_saved_output"
#: lines the read tool returns by default (as DeepAgents' ``read_file``)
READ_LIMIT_LINES = 2000
#: texts whose offload path and size are remembered (keyed by the text object itself)
PATHS_CACHED = 4096

__all__ = [
    "PATHS_CACHED",
    "READ_LIMIT_LINES",
    "READ_TOOL_NAME",
    "FileScope",
    "OffloadPaths",
    "make_read_tool",
]


class OffloadPaths:
    """``(tool name, text) -> (virtual path, bytes written)`` of an offload file (R6), remembered
    per text object so that a long run hashes each tool result once.  Thread-safe."""

    def __init__(self, max_entries: int = PATHS_CACHED) -> None:
        self._cache: IdentityCache[str, tuple[str, int]] = IdentityCache(max_entries)

    def __call__(self, tool_name: str | None, text: str) -> tuple[str, int]:
        return self._cache.get_or_put(
            text,
            lambda t: (tool_result_path(tool_name, t), len(writable_text(t).encode("utf-8"))),
            tool_name,
        )


class FileScope:
    """The outputs of one request's file scope (the thread's), as the backend shows them.

    Args:
        backend: returns the request's backend (called on first need).
        paths: the offload path maker shared by the middleware.
        state_files: the ``files`` channel of the request's state (a DeepAgents ``StateBackend``
            keeps the thread's files there); ``None``: the state has none.

    Only the paths asked about are checked, each once per request
    (:func:`ctxlab.core.files.file_checker`: O(1) in the files the backend holds, never a listing;
    issue 20), and what this scope writes is known to exist.  When the backend cannot tell,
    nothing is known to exist and every save writes (the path is content-addressed, so a second
    write is harmless).  Nothing outlives the request (R6, R17: a file may vanish between two).
    """

    def __init__(
        self, backend: Callable[[], Any], paths: OffloadPaths, state_files: Mapping[str, Any] | None = None
    ) -> None:
        self._backend = backend
        self._paths = paths
        self._state_files = state_files
        self._seen: dict[str, FileProbe] = {}
        self._check: Callable[[str], FileProbe] | None = None

    def _probe(self, path: str) -> FileProbe:
        found = self._seen.get(path)
        if found is None:
            if self._check is None:
                self._check = file_checker(self._backend(), self._state_files)
            found = self._seen[path] = self._check(path)
        return found

    def exists(self, path: str, size: int | None = None) -> bool | None:
        """Does the virtual ``path`` exist (with ``size`` bytes, when both sizes are known)?
        ``None``: the backend cannot tell."""
        there, known = self._probe(path)
        if there is not True:
            return there
        return size is None or known is None or known == size

    def file_exists(self, path: str) -> bool:
        """For :attr:`ctxlab.core.l1.TrimContext.file_exists`: ``False`` only when the backend
        says that the file is not there."""
        return self.exists(path) is not False

    def save_tool_result(self, tool_name: str | None, text: str) -> str:
        """Make sure ``text`` exists at its offload path in this scope; return the path (R6).

        Raises:
            FileWriteError: the backend could not write it.
        """
        path, size = self._paths(tool_name, text)
        if self.exists(path, size) is not True:
            write_text(self._backend(), path, text, exist_ok=True)
            self._seen[path] = (True, size)
        return path


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


def make_read_tool(backend_for: Callable[[Any], Any]) -> Any:
    """A LangChain tool ``read_saved_output(path, offset=0, limit=2000)`` that reads a file the
    middleware saved (R6, R10): an offloaded tool result under ``/outputs/large_tool_results/``
    or a conversation history under ``/outputs/conversation_history/``.

    ``backend_for(runtime)`` gives the backend of the tool call's runtime (the same file scope as
    the model call that named the file).  ``offset`` and ``limit`` count lines.  Any other path
    is refused (the tool reads nothing else of the backend); an unknown file answers an error
    text, never raises.
    """

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
            return _read_result_text(
                backend_for(runtime).read(norm, offset=max(0, offset), limit=max(1, limit))
            )
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
            if reader is None:
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
