"""Load agent transcripts from files: one loader per format, auto-detection, batch loading.

Formats (names for ``format=``; ids from ``/work/shared/transcripts/SOURCES.md``):

=====================  =====  ==============================================================
name                   id     file
=====================  =====  ==============================================================
``swe_agent``          F1     SWE-agent ``.traj``
``mini_swe_agent``     F2     mini-swe-agent ``.traj.json`` (observations as user text)
``openhands_events``   F3a    OpenHands V0 event list (JSON list)
``openhands_eval``     F3b    OpenHands evaluation ``output.jsonl`` (one run per line)
``openai_chat``        F4     OpenAI chat message list (incl. legacy ``function_call``)
``litellm_log``        F5     LiteLLM completion log (prompt + response of one call)
``tau_bench``          F6     τ-bench trajectory list (one run per entry)
``claude_code``        F7     Claude Code session JSONL
``deer_flow``          F9     DeerFlow 1.x SSE replay
``agent_tars_events``  F10    Agent TARS / Tarko event stream
``agent_tars_request`` F11    Agent TARS LLM request snapshot
``agent_tars_session`` F12    Agent TARS CLI session
``opencode_md``        F13    OpenCode Markdown session export
=====================  =====  ==============================================================

Every message gets the id ``f"{run_id}-{index}"``; ``run_id`` is the file name for single-run
files and the recorded run key for multi-run files (τ-bench ``task<id>-trial<n>``, OpenHands
``instance_id``).  See each module's docstring for how its format is mapped.

Formats are registered through the ``ctxlab_register_transcript_formats`` hook; the built-ins by
:data:`formats_plugin` (``trylast``), so a plugin format is sniffed first and a plugin format
with a built-in's name replaces it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pluggy

from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.plugins import make_plugin_manager
from ctxlab.transcripts import hookspecs
from ctxlab.transcripts._util import (
    HEAD_BYTES,
    check_text_bytes,
    describe_shape,
    json_decode_error,
    read_text,
)
from ctxlab.transcripts.base import OBSERVATION_KEY, Transcript, TranscriptError, TranscriptFormat

__all__ = [
    "OBSERVATION_KEY",
    "Transcript",
    "TranscriptError",
    "TranscriptFormat",
    "available_formats",
    "builtin_formats",
    "detect_format",
    "formats_plugin",
    "iter_transcript_files",
    "load_many",
    "load_transcripts",
    "make_formats_manager",
]

#: file names never loaded when walking folders (besides hidden files and README*)
SKIP_NAMES = frozenset({"SOURCES.md", ".gitattributes"})

PathLike = str | os.PathLike[str]


def builtin_formats() -> list[TranscriptFormat]:
    """The built-in formats, in sniffing order (specific shapes first, plain chat lists last)."""
    from ctxlab.transcripts import (
        agent_tars,
        claude_code,
        deer_flow,
        litellm,
        mini_swe_agent,
        openai_chat,
        opencode,
        openhands,
        swe_agent,
        tau_bench,
    )

    return [
        mini_swe_agent.FORMAT,
        swe_agent.FORMAT,
        openhands.EVAL,
        openhands.EVENTS,
        tau_bench.FORMAT,
        litellm.FORMAT,
        agent_tars.SESSION,
        agent_tars.REQUEST,
        agent_tars.EVENTS,
        claude_code.FORMAT,
        deer_flow.FORMAT,
        opencode.FORMAT,
        openai_chat.FORMAT,
    ]


class BuiltinTranscriptFormats:
    """The plugin registering the built-in formats (``trylast``, so plugins come first)."""

    name = "transcript_formats"

    @hookimpl(trylast=True)
    def ctxlab_register_transcript_formats(self, register: Any) -> None:
        for fmt in builtin_formats():
            register(fmt)


#: register this in a plugin manager to get the built-in formats (the default plugins do)
formats_plugin = BuiltinTranscriptFormats()


def make_formats_manager(extra: Iterable[object] = ()) -> pluggy.PluginManager:
    """A plugin manager holding the transcript hook spec, the built-in formats and ``extra``.

    Compression plugins are not registered (``defaults=False``): only formats matter here.
    """
    pm = make_plugin_manager(defaults=False, specs=[hookspecs])
    pm.register(formats_plugin, name="ctxlab.builtin.transcript_formats")
    for plugin in extra:
        pm.register(plugin)
    return pm


def available_formats(pm: pluggy.PluginManager | None = None) -> dict[str, TranscriptFormat]:
    """Every transcript format by name, in sniffing order.

    Calls ``ctxlab_register_transcript_formats`` in ``pm`` (a default manager when ``None``).
    Plugin formats come first; for a name registered twice the first registration wins (so a
    plugin can replace a built-in).  The built-ins are always included, also when ``pm`` does not
    hold :data:`formats_plugin`.

    Raises:
        TypeError: a plugin registered something without ``name``, ``sniff`` and ``load``.
    """
    if pm is None:
        pm = make_formats_manager()
    found: dict[str, TranscriptFormat] = {}

    def register(fmt: Any) -> None:
        if not isinstance(fmt, TranscriptFormat):
            raise TypeError(f"not a TranscriptFormat (needs name, description, sniff, load): {fmt!r}")
        found.setdefault(fmt.name, fmt)

    hook = getattr(pm.hook, "ctxlab_register_transcript_formats", None)
    if hook is not None:
        hook(register=register)
    if not pm.is_registered(formats_plugin):
        for fmt in builtin_formats():
            found.setdefault(fmt.name, fmt)
    return found


def _read_head(path: Path) -> str:
    try:
        with path.open("rb") as f:
            raw = f.read(HEAD_BYTES)
    except IsADirectoryError as exc:
        raise TranscriptError(path, "", "is a folder (use load_many)") from exc
    except FileNotFoundError as exc:
        raise TranscriptError(path, "", "no such file") from exc
    except OSError as exc:
        raise TranscriptError(path, "", f"cannot read file: {exc.strerror or exc}") from exc
    return check_text_bytes(path, raw, head_only=len(raw) >= HEAD_BYTES)


def _sniff(formats: dict[str, TranscriptFormat], path: Path, head: str) -> TranscriptFormat | None:
    for fmt in formats.values():
        try:
            if fmt.sniff(path, head):
                return fmt
        except Exception:  # a broken sniffer must not stop detection
            continue
    return None


def _by_shape(formats: dict[str, TranscriptFormat], path: Path) -> tuple[TranscriptFormat, Any]:
    """Fallback detection on the parsed JSON (or first JSONL line); ``(format, data or None)``."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except RecursionError as exc:
        raise TranscriptError(path, "top level", "JSON nested too deeply to be a transcript") from exc
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise json_decode_error(path, text, exc) from exc
        first_line = text.lstrip().split("\n", 1)[0]
        try:
            first = json.loads(first_line)
        except json.JSONDecodeError as exc2:
            raise TranscriptError(path, "line 1", f"neither JSON nor JSON lines: {exc2.msg}") from exc2
        for fmt in formats.values():
            match = getattr(fmt, "match_line", None)
            if match is not None and match(first):
                return fmt, None
        raise TranscriptError(path, "line 1", f"unknown JSON-lines shape: {describe_shape(first)}") from None
    for fmt in formats.values():
        match = getattr(fmt, "match_json", None)
        if match is not None and match(data):
            return fmt, data
    raise TranscriptError(path, "top level (byte 0)", f"unknown JSON shape: {describe_shape(data)}")


def _run_loader(fmt: TranscriptFormat, path: Path, data: Any = None) -> list[Transcript]:
    try:
        if data is not None and hasattr(fmt, "load_json"):
            result = fmt.load_json(data, path)  # type: ignore[attr-defined]
        else:
            result = fmt.load(path)
    except TranscriptError:
        raise
    except RecursionError as exc:
        raise TranscriptError(path, "", f"{fmt.name}: nested too deeply") from exc
    except Exception as exc:  # a loader bug or an unforeseen shape: still one file's error
        raise TranscriptError(path, "", f"{fmt.name} loader failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, list) or not all(isinstance(t, Transcript) for t in result):
        raise TranscriptError(
            path, "", f"{fmt.name} loader returned {type(result).__name__}, not transcripts"
        )
    if not result:
        raise TranscriptError(path, "", f"no transcripts in file ({fmt.name})")
    return result


def _check_regular(path: Path) -> None:
    """Refuse what is not a regular file before opening it: a FIFO opened for reading waits for a
    writer forever, a device or a socket never ends; name a symlink loop and a broken symlink as
    such (``Path.exists`` calls both "missing").

    Raises:
        TranscriptError: a folder, a FIFO, a socket, a device, a symlink loop, a broken symlink, a
            missing file.
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TranscriptError(path, "", "symbolic link loop (too many levels of symbolic links)") from exc
        if path.is_symlink():
            raise TranscriptError(path, "", "broken symbolic link (its target does not exist)") from exc
        if exc.errno == errno.ENOENT:
            raise TranscriptError(path, "", "no such file") from exc
        raise TranscriptError(path, "", f"cannot read file: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise TranscriptError(path, "", "is a folder (use load_many)")
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise TranscriptError(path, "", f"not a regular file ({kind}): skipped")


def _load(path: Path, fmt_name: str | None, formats: dict[str, TranscriptFormat]) -> list[Transcript]:
    _check_regular(path)
    if fmt_name is not None:
        fmt = formats.get(fmt_name)
        if fmt is None:
            raise TranscriptError(path, "", f"unknown format {fmt_name!r} (known: {', '.join(formats)})")
        if path.is_dir():
            raise TranscriptError(path, "", "is a folder (use load_many)")
        return _run_loader(fmt, path)
    head = _read_head(path)
    fmt = _sniff(formats, path, head)
    if fmt is not None:
        return _run_loader(fmt, path)
    if head.lstrip("\ufeff \t\r\n")[:1] in ("{", "["):
        fmt, data = _by_shape(formats, path)
        return _run_loader(fmt, path, data)
    raise TranscriptError(
        path,
        "byte 0",
        f"unknown transcript format: no format recognises the start of the file (known: {', '.join(formats)})",
    )


def load_transcripts(
    path: PathLike, *, format: str | None = None, pm: pluggy.PluginManager | None = None
) -> list[Transcript]:
    """Load one file as a list of transcripts (one per run).

    Args:
        path: the file.
        format: a format name from :func:`available_formats`; ``None`` detects it: each format
            sniffs the path and the first 64 KiB, and when none claims the file and it is JSON,
            the parsed shape decides.
        pm: the plugin manager whose formats to use (a default one when ``None``).

    Raises:
        TranscriptError: naming the file and the place: an empty file (``byte 0``), a binary file
            (``byte N``), invalid or truncated JSON (``line L column C``), a bad JSONL/SSE line
            (``line N``), an unknown JSON shape (``top level``), a bad key (``key history[3].role``),
            an unknown format.
    """
    return _load(Path(path), format, available_formats(pm))


def detect_format(path: PathLike, *, pm: pluggy.PluginManager | None = None) -> str:
    """The name of the format that :func:`load_transcripts` would use for ``path``.

    Raises:
        TranscriptError: as :func:`load_transcripts` when no format is recognised.
    """
    path = Path(path)
    formats = available_formats(pm)
    _check_regular(path)
    head = _read_head(path)
    fmt = _sniff(formats, path, head)
    if fmt is None:
        if head.lstrip("\ufeff \t\r\n")[:1] not in ("{", "["):
            raise TranscriptError(path, "byte 0", "unknown transcript format")
        fmt = _by_shape(formats, path)[0]
    return fmt.name


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIP_NAMES or name.upper().startswith("README")


def iter_transcript_files(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    """The files to load: files as given, folders walked recursively.

    In folders, hidden files and folders (``.*``), ``README*``, ``SOURCES.md`` and
    ``.gitattributes`` are skipped.  The result is de-duplicated and sorted by path.  It may hold
    FIFOs, devices and symlinks that lead nowhere: loading reports each of them as an error
    (never opening a FIFO) instead of blocking.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: set[Path] = set()
    for p in paths:
        root = Path(p)
        if root.is_dir():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                out.update(Path(dirpath) / f for f in filenames if not _skipped(f))
        elif root.exists() or root.is_symlink():
            out.add(root)  # a file, or a symlink loop or broken symlink that loading names as such
        else:
            raise FileNotFoundError(f"no such file or folder: {root}")
    return sorted(out, key=lambda q: q.as_posix())


def load_many(
    paths: PathLike | Iterable[PathLike],
    *,
    format: str | None = None,
    pm: pluggy.PluginManager | None = None,
) -> tuple[list[Transcript], list[TranscriptError]]:
    """Load every transcript file under ``paths`` (see :func:`iter_transcript_files`).

    A file that fails is reported in the error list and skipped; one bad file (or a missing
    path) never raises.

    Returns:
        ``(transcripts in file order, errors in file order)``.
    """
    formats = available_formats(pm)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    errors: list[TranscriptError] = []
    for p in paths:
        try:
            files.extend(iter_transcript_files([p]))
        except OSError as exc:
            errors.append(TranscriptError(p, "", f"no such file or folder ({exc})"))
    transcripts: list[Transcript] = []
    for f in sorted(set(files), key=lambda q: q.as_posix()):
        try:
            transcripts.extend(_load(f, format, formats))
        except TranscriptError as exc:
            errors.append(exc)
        except OSError as exc:
            errors.append(TranscriptError(f, "", f"cannot read file: {exc}"))
        except (RecursionError, MemoryError, ValueError) as exc:  # one bad file never stops the batch
            errors.append(TranscriptError(f, "", f"cannot load: {type(exc).__name__}: {exc}"))
    return transcripts, errors
