"""Files through a DeepAgents backend: offloaded tool results and conversation history (R6, R10, R17).

Paths are virtual (``/outputs/...``), relative to the backend's root; the model only ever sees
these virtual paths, never a host path (R17), and neither do stream events: the error text of a
failed write has host paths reduced to their virtual part (:func:`hide_host_paths`).  Tool names
are reduced to a safe file-name stem so that no name can move a file outside
``/outputs/large_tool_results/``.  Text is written with lone surrogates escaped
(:func:`writable_text`), so that an undecodable file name in a tool output never leaves an empty
file behind.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping
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
    "FileProbe",
    "FileWriteError",
    "checked_backend",
    "default_backend",
    "encoded",
    "file_checker",
    "hide_host_paths",
    "history_path",
    "loaded_class",
    "safe_stem",
    "takes_bytes",
    "tool_result_path",
    "tool_result_path_and_size",
    "writable_text",
    "write_pieces",
    "write_text",
]

#: an absolute host path inside an error text (POSIX or Windows), up to a quote or a blank
_HOST_PATH_RE = re.compile(r"(?<![\w.~/-])(?:[A-Za-z]:[\\/]|/)[^\s'\"]+")


def checked_backend(backend: Any) -> Any:
    """``backend`` as given when it can be one of a middleware's (R17): ``None``, a DeepAgents
    backend (an object with ``write`` or ``awrite``) or a factory ``runtime -> backend`` (a
    callable).

    Raises:
        TypeError: anything else, e.g. a folder given as a string (``backend="workspace"``):
            every offload and history write would fail at run time.
    """
    if (
        backend is None
        or callable(getattr(backend, "write", None))
        or callable(getattr(backend, "awrite", None))
    ):
        return backend
    if callable(backend):
        return backend
    hint = (
        f"; for files on disk: FilesystemBackend(root_dir={backend!r}, virtual_mode=True)"
        if isinstance(backend, str | os.PathLike)
        else ""
    )
    raise TypeError(
        "backend must be a DeepAgents backend (with write/awrite) or a factory runtime -> backend, "
        f"not {type(backend).__name__} ({backend!r}){hint}"
    )


def hide_host_paths(text: str, roots: tuple[str, ...] = ()) -> str:
    """``text`` with every absolute host path replaced by its virtual part (R17).

    A path that contains ``/outputs/`` keeps that tail (``/srv/x/outputs/a.txt`` -> ``/outputs/a.txt``);
    any other absolute path becomes ``<host path>``; a virtual ``/outputs/...`` path stays.  Each
    of ``roots`` (a backend's root folder) is removed first, so that a root with blanks in it
    leaves nothing behind.  Pure; never raises.
    """
    for root in roots:
        root = root.rstrip("/\\")
        if root:
            text = text.replace(root + "/", "/").replace(root + "\\", "/")

    def virtual(match: re.Match[str]) -> str:
        path = match.group(0).replace("\\", "/")
        if path.startswith("/outputs/"):
            return path
        at = path.find("/outputs/")
        return path[at:] if at >= 0 else "<host path>"

    return _HOST_PATH_RE.sub(virtual, text)


def _backend_roots(backend: Any) -> tuple[str, ...]:
    """The host folders a backend is known to write under (``FilesystemBackend.cwd``)."""
    root = getattr(backend, "cwd", None)
    return (str(root),) if isinstance(root, (str, os.PathLike)) else ()


class FileWriteError(OSError):
    """The backend could not write a file (an error result or an exception).

    ``path`` is virtual; ``reason`` is the backend's error text with host paths hidden
    (:func:`hide_host_paths`), safe for stream events; ``detail`` is the text as the backend gave
    it, for the operator's log.
    """

    def __init__(self, path: str, reason: str, *, roots: tuple[str, ...] = ()) -> None:
        self.path = path
        self.detail = reason
        self.reason = hide_host_paths(reason, roots)
        super().__init__(f"could not write {path}: {self.reason}")


#: a lone surrogate: the only code points UTF-8 cannot encode (:func:`writable_text`)
_SURROGATE = re.compile("[\ud800-\udfff]")


def writable_text(text: str) -> str:
    """``text`` as a backend can encode it: lone surrogates (a file name read with
    ``surrogateescape``, ``'caf\\udce9.txt'``) become ``\\udce9`` escapes; every other character
    is kept.  The same object is returned when nothing needed escaping (checked without an
    encoded copy of the text: a history file is hundreds of KB, issue 31)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@functools.lru_cache(maxsize=256)  # a pure function of two strings: a run has a few tool names
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


#: the UTF-8 of a lone surrogate (``surrogatepass``): ``ED A0..BF xx``
_SURROGATE_UTF8 = re.compile(rb"\xed[\xa0-\xbf]")


def tool_result_path_and_size(tool_name: str | None, content: str) -> tuple[str, int]:
    """(:func:`tool_result_path`, the bytes :func:`write_text` writes for ``content``), encoding the
    text once (a long tool result is the costly part of an offload: issue 31)."""
    data = content.encode("utf-8", "surrogatepass")
    path = f"{LARGE_TOOL_RESULTS_DIR}/{safe_stem(tool_name)}-{hashlib.sha256(data).hexdigest()}.txt"
    if not data.isascii() and _SURROGATE_UTF8.search(data):
        return path, len(writable_text(content).encode("utf-8"))
    return path, len(data)


def history_path(thread_id: str | None, start: int, end: int, content: str) -> str:
    """``/outputs/conversation_history/<thread>-<start>-<end>-<sha12>.md`` for state messages
    ``[start, end)``; the hash of ``content`` (what names the span:
    :func:`ctxlab.core.cutoff.history_key`) keeps two different histories of one range apart."""
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


def _check_result(backend: Any, path: str, result: Any, exist_ok: bool) -> str:
    err = _result_error(result)
    if err and not (exist_ok and "already exists" in err):
        raise FileWriteError(path, err, roots=_backend_roots(backend))
    return path


def write_text(backend: Any, path: str, content: str, *, exist_ok: bool = False) -> str:
    """Write ``content`` (through :func:`writable_text`) at virtual ``path`` with
    ``backend.write``; return the path.

    ``exist_ok``: a backend that refuses to overwrite ("... already exists") has the file
    already, which is success for a content-addressed path (the same path holds the same text).

    Raises:
        FileWriteError: the path leaves ``/outputs/``, the backend returned an error, or it raised.
    """
    _check_virtual(path)
    try:
        result = backend.write(path, writable_text(content))
    except Exception as exc:
        raise FileWriteError(path, f"{type(exc).__name__}: {exc}", roots=_backend_roots(backend)) from exc
    return _check_result(backend, path, result, exist_ok)


#: the methods of a ``FilesystemBackend`` that :func:`takes_bytes` requires unchanged
_SAME_BYTES = ("write", "awrite", "upload_files", "aupload_files")


def takes_bytes(backend: Any) -> bool:
    """Whether :func:`write_pieces` writes to ``backend`` with ``upload_files``: a DeepAgents
    ``FilesystemBackend`` (or a subclass) whose ``write`` and ``upload_files`` (and their async
    forms) are that class's own, the two writing the same bytes to the same file (``write`` encodes the text as UTF-8,
    ``upload_files`` writes the bytes as given).  Any other backend — ``StateBackend`` and
    ``StoreBackend`` (their ``upload_files`` decodes the bytes back to text and stores the file
    unlike ``write``), ``CompositeBackend``, a user's own, a subclass that changes either method —
    is written with ``write``, as the protocol's one required writing method."""
    fs_cls = loaded_class("deepagents.backends.filesystem", "FilesystemBackend")
    if fs_cls is None or not isinstance(backend, fs_cls):
        return False
    kind = type(backend)
    return all(getattr(kind, name) is getattr(fs_cls, name) for name in _SAME_BYTES)


def encoded(pieces: Iterable[str]) -> bytes:
    """``writable_text("".join(pieces)).encode("utf-8")``, encoded piece by piece as they come:
    the whole text is never held as one ``str`` beside its bytes (issue 31).
    ``backslashreplace`` escapes a lone surrogate exactly as :func:`writable_text` does."""
    out = io.BytesIO()
    for piece in pieces:
        out.write(piece.encode("utf-8", "backslashreplace"))
    return out.getvalue()


def write_pieces(backend: Any, path: str, render: Callable[[], Iterable[str]]) -> str:
    """:func:`write_text` of ``"".join(render())``, the same file byte for byte: when
    :func:`takes_bytes`, the UTF-8 of the pieces (:func:`encoded`, as ``render()`` makes them)
    goes to ``backend.upload_files([(path, data)])``, so the text is held once, as bytes
    (``write(path, str)`` would hold the text and its encoding: issue 31); otherwise, or when the
    upload fails (an error answer, an exception, an answer of unknown shape), :func:`write_text` —
    a failed upload is tried again with ``write`` (``render()`` is called again), so a failure is
    reported exactly as a failed write is (its error text), and a file the upload could not write
    but ``write`` can is written.

    Raises:
        FileWriteError: as :func:`write_text`.
    """
    _check_virtual(path)
    if takes_bytes(backend):
        data = encoded(render())
        try:
            answers = backend.upload_files([(path, data)])
        except Exception as exc:
            logger.debug("uploading %s failed, writing it instead: %s", path, exc)
            answers = None
        del data
        answer = answers[0] if isinstance(answers, list) and len(answers) == 1 else None
        if answer is not None and getattr(answer, "error", "unknown") is None:
            return path
        logger.debug("uploading %s answered %r, writing it instead", path, answers)
    return write_text(backend, path, "".join(render()))


async def awrite_text(backend: Any, path: str, content: str, *, exist_ok: bool = False) -> str:
    """Async :func:`write_text` through ``backend.awrite`` (same errors)."""
    _check_virtual(path)
    try:
        result = await backend.awrite(path, writable_text(content))
    except Exception as exc:
        raise FileWriteError(path, f"{type(exc).__name__}: {exc}", roots=_backend_roots(backend)) from exc
    return _check_result(backend, path, result, exist_ok)


#: what a :func:`file_checker` answers: ``(exists, size in bytes)``; ``exists`` ``None``: the backend
#: cannot tell; ``size`` ``None``: unknown
FileProbe = tuple[bool | None, int | None]


def loaded_class(module: str, name: str) -> type[Any] | None:
    """``module.name`` when that module is imported already (a backend of that class exists only
    then), else ``None``: a probe never imports DeepAgents."""
    found = getattr(sys.modules.get(module), name, None)
    return found if isinstance(found, type) else None


def file_checker(backend: Any, state_files: Mapping[str, Any] | None = None) -> Callable[[str], FileProbe]:
    """``virtual path -> (exists, size)``: the existence check of single files in ``backend``,
    chosen once for the backend; each check costs O(1) in the number of files the backend holds
    (issue 20: never a listing).

    * DeepAgents ``StateBackend``: a lookup in ``state_files``, the ``files`` channel of the
      request's state (the thread's checkpointed files; ``None``: the state has no files yet).
      The size is not known (``None``).
    * DeepAgents ``FilesystemBackend``: one ``os.lstat`` of the file in its folder's host path;
      the backend itself resolves each folder (``_resolve_path``: the root, virtual mode, its
      symlink checks) once per checker.  The file must be a regular file, not a link, as the
      backend's own ``O_NOFOLLOW`` reads and writes require.  DeepAgents' protocol has no stat,
      and ``download_files`` would read every byte.
    * any other backend: ``download_files([path])`` (the protocol's per-path call); the size is
      the length of the content.

    A check answers ``(None, None)`` when the backend cannot tell (no such method, an exception,
    an answer of unknown shape): the caller then writes instead of trusting it.  Never raises.
    """
    state_cls = loaded_class("deepagents.backends.state", "StateBackend")
    if state_cls is not None and isinstance(backend, state_cls):
        files = state_files if state_files is not None else {}
        return lambda path: (files.get(path) is not None, None)
    fs_cls = loaded_class("deepagents.backends.filesystem", "FilesystemBackend")
    if fs_cls is not None and isinstance(backend, fs_cls):
        return _on_disk(backend)
    return lambda path: _downloaded(backend, path)


def _on_disk(backend: Any) -> Callable[[str], FileProbe]:
    """:func:`file_checker` of a DeepAgents ``FilesystemBackend``."""
    folders: dict[str, str] = {}  # virtual folder -> host folder

    def check(path: str) -> FileProbe:
        folder, _, name = path.rpartition("/")
        try:
            host = folders.get(folder)
            if host is None:
                host = folders[folder] = str(backend._resolve_path(folder or "/"))
            info = os.lstat(f"{host}/{name}")
        except FileNotFoundError:
            return False, None
        except (OSError, ValueError, RuntimeError) as exc:
            logger.debug("checking %s failed: %s", path, exc)
            return None, None
        return (True, info.st_size) if stat.S_ISREG(info.st_mode) else (False, None)

    return check


def _downloaded(backend: Any, path: str) -> FileProbe:
    """One check of :func:`file_checker` through ``backend.download_files([path])``."""
    download = getattr(backend, "download_files", None)
    if not callable(download):
        return None, None
    try:
        answers = download([path])
        answer = answers[0] if isinstance(answers, list) and len(answers) == 1 else None
    except Exception as exc:
        logger.debug("checking %s failed: %s", path, exc)
        return None, None
    error = getattr(answer, "error", None)
    content = getattr(answer, "content", None)
    if isinstance(content, (bytes, str)) and not error:
        return True, len(content.encode("utf-8") if isinstance(content, str) else content)
    if error in ("file_not_found", "is_directory"):
        return False, None
    return None, None


def default_backend(root: str | os.PathLike[str] | None = None) -> Any:
    """A local DeepAgents ``FilesystemBackend`` in virtual mode.

    Root: ``root``, else ``$CTXLAB_FILES_DIR``, else ``./.ctxlab/files``; created on first write.
    Virtual mode keeps every path inside the root and shows the model only ``/outputs/...``.
    """
    from deepagents.backends import FilesystemBackend

    folder = Path(root or os.environ.get("CTXLAB_FILES_DIR") or DEFAULT_FILES_DIR).resolve()
    return FilesystemBackend(root_dir=str(folder), virtual_mode=True)
