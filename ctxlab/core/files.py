"""Files through a DeepAgents backend: offloaded tool results and conversation history (R6, R10, R17).

Paths are virtual (``/outputs/...``), relative to the backend's root; the model only ever sees
these virtual paths, never a host path (R17).  Tool names are reduced to a safe file-name stem
so that no name can move a file outside ``/outputs/large_tool_results/``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

logger = logging.getLogger("ctxlab.core.files")

LARGE_TOOL_RESULTS_DIR = "/outputs/large_tool_results"
CONVERSATION_HISTORY_DIR = "/outputs/conversation_history"
#: default root of the local backend when the middleware is given none (``$CTXLAB_FILES_DIR``)
DEFAULT_FILES_DIR = ".ctxlab/files"
_MAX_STEM = 64

__all__ = [
    "CONVERSATION_HISTORY_DIR",
    "DEFAULT_FILES_DIR",
    "LARGE_TOOL_RESULTS_DIR",
    "FileWriteError",
    "default_backend",
    "history_path",
    "safe_stem",
    "tool_result_path",
    "write_text",
]


class FileWriteError(OSError):
    """The backend could not write a file (an error result or an exception); ``path`` is virtual."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"could not write {path}: {reason}")


def safe_stem(name: str | None, fallback: str = "tool") -> str:
    """A file-name stem from a tool name: ``[A-Za-z0-9_-]`` only, no dots, at most 64 characters.

    ``../../etc/x`` → ``etc_x``; ``a/b`` → ``a_b``; ``./.hidden`` → ``hidden``; an empty result
    becomes ``fallback``.  Non-ASCII letters are transliterated where NFKD allows, else dropped.
    """
    text = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_-")
    text = re.sub(r"_+", "_", text)[:_MAX_STEM].strip("_-")
    return text or fallback


def content_sha256(text: str) -> str:
    """Hex SHA-256 of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def tool_result_path(tool_name: str | None, content: str) -> str:
    """``/outputs/large_tool_results/<safe tool>-<sha256 of content>.txt`` (R6: same content, same path)."""
    return f"{LARGE_TOOL_RESULTS_DIR}/{safe_stem(tool_name)}-{content_sha256(content)}.txt"


def history_path(thread_id: str | None, start: int, end: int, content: str) -> str:
    """``/outputs/conversation_history/<thread>-<start>-<end>-<sha8>.md`` for state messages
    ``[start, end)``; the hash keeps two different histories of one range apart."""
    return f"{CONVERSATION_HISTORY_DIR}/{safe_stem(thread_id, 'session')}-{start:05d}-{end:05d}-{content_sha256(content)[:12]}.md"


def _check_virtual(path: str) -> None:
    parts = path.split("/")
    if not path.startswith("/outputs/") or any(p in ("", ".", "..") for p in parts[1:]):
        raise FileWriteError(path, "path escapes the outputs folder")


def _result_error(result: Any) -> str | None:
    if result is None:
        return None
    err = getattr(result, "error", None)
    if err is None and isinstance(result, dict):
        err = result.get("error")
    return str(err) if err else None


def write_text(backend: Any, path: str, content: str) -> str:
    """Write ``content`` at virtual ``path`` through ``backend.write``; return the path.

    Raises:
        FileWriteError: the path leaves ``/outputs/``, the backend returned an error, or it raised.
    """
    _check_virtual(path)
    try:
        result = backend.write(path, content)
    except Exception as exc:
        raise FileWriteError(path, f"{type(exc).__name__}: {exc}") from exc
    err = _result_error(result)
    if err:
        raise FileWriteError(path, err)
    return path


async def awrite_text(backend: Any, path: str, content: str) -> str:
    """Async :func:`write_text` through ``backend.awrite`` (same errors)."""
    _check_virtual(path)
    try:
        result = await backend.awrite(path, content)
    except Exception as exc:
        raise FileWriteError(path, f"{type(exc).__name__}: {exc}") from exc
    err = _result_error(result)
    if err:
        raise FileWriteError(path, err)
    return path


def default_backend(root: str | os.PathLike[str] | None = None) -> Any:
    """A local DeepAgents ``FilesystemBackend`` in virtual mode.

    Root: ``root``, else ``$CTXLAB_FILES_DIR``, else ``./.ctxlab/files``; created on first write.
    Virtual mode keeps every path inside the root and shows the model only ``/outputs/...``.
    """
    from deepagents.backends import FilesystemBackend

    folder = Path(root or os.environ.get("CTXLAB_FILES_DIR") or DEFAULT_FILES_DIR).resolve()
    return FilesystemBackend(root_dir=str(folder), virtual_mode=True)
