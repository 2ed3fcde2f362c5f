"""Which format a file is in: sniffing the head, then the parsed shape, then the generic fallback.

Detection, in order (the first that answers wins):

0. **binary sniff** -- a format with ``sniff_binary(path, first_bytes)`` (a zipped log: Inspect
   AI's ``.eval``) is asked first, with the file's first 16 bytes, before the head is decoded;
1. **sniff** -- every format's ``sniff(path, head)`` in :func:`available_formats` order.  ``head`` is
   the file's first :data:`HEAD_BYTES` (64 KiB) decoded as UTF-8 (a character cut at the end is
   replaced).  A JSON-lines file whose first line is longer than that shows its sniffer only the
   start of that line; a sniffer should then decide from the keys that come first (or say
   ``False`` and leave it to step 2).
2. **shape** -- for a file starting with ``{`` or ``[``, the whole file is parsed: a JSON document
   is offered to every format's optional ``match_json(data)`` (a match gets the parsed data through
   ``load_json(data, path)``, parsed once); for JSON lines (the document parser stops at the
   second line) the *first complete line* is offered to ``match_line(obj)``.  This is the fallback
   for files whose telling keys lie beyond the head, including first lines longer than the head.
3. **generic fallback** -- when no format claims a JSON/JSON-lines file, it is searched for
   OpenAI- or Anthropic-style message arrays at any depth (:mod:`ctxlab.transcripts.generic`);
   what is found loads as ``generic_messages``, with a :class:`TranscriptWarning` naming the JSON
   paths used.  Nothing message-like: :class:`TranscriptError` naming the file.

An exception raised inside a format's ``sniff``/``match_json``/``match_line`` (a plugin bug) does
not stop detection: it is reported as a :class:`TranscriptWarning` naming the format and the file,
kept in the loaded transcripts' ``metadata["detection_errors"]``, and named in the error when no
format is found.  Naming a format (``format=NAME``, ``--format NAME``) skips detection.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from ctxlab.transcripts._checks import describe_shape
from ctxlab.transcripts._util import (
    HEAD_BYTES,
    check_text_bytes,
    iter_jsonl,
    json_decode_error,
    read_text,
    stripped_head,
    warn,
)
from ctxlab.transcripts.base import TranscriptError, TranscriptFormat
from ctxlab.transcripts.generic import GENERIC_NAME, JsonLines, find_message_arrays
from ctxlab.transcripts.registry import available_formats

__all__ = ["HEAD_BYTES", "HOW_TO_NAME_OR_WRITE", "Detection", "detect", "detect_format", "read_head"]

#: appended to "unknown format" errors
HOW_TO_NAME_OR_WRITE = (
    "name the format with format=NAME (--format NAME on the command line; see available_formats()) "
    "or write a loader for it (docs/transcripts.md)"
)


@dataclass
class Detection:
    """The outcome of :func:`detect`.

    Attributes:
        format: the format to load the file with.
        how: ``"sniff"``, ``"shape"`` (``match_json``), ``"line"`` (``match_line``) or
            ``"fallback"`` (the generic message search).
        data: the parsed JSON for ``"shape"`` (or :class:`JsonLines` for a JSON-lines
            ``"fallback"``), to pass to ``load_json``; ``None`` when the loader reads the file.
        problems: detection errors reported on the way (``"format 'x': sniff raised ..."``).
    """

    format: TranscriptFormat
    how: str
    data: Any = None
    problems: list[str] = field(default_factory=list)


def check_regular(path: Path) -> None:
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


def read_head(path: Path) -> str:
    """The first :data:`HEAD_BYTES` of ``path`` decoded as UTF-8 (what ``sniff`` gets).

    Raises:
        TranscriptError: a folder, a missing or unreadable file, an empty or binary file.
    """
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


def _ask(fmt: TranscriptFormat, what: str, path: Path, problems: list[str], *args: Any) -> bool:
    """``fmt.<what>(*args)``; an exception is reported (warning + ``problems``) and means no."""
    try:
        return bool(getattr(fmt, what)(*args))
    except Exception as exc:  # a plugin's detection bug: say so, keep detecting
        text = f"format {fmt.name!r}: {what} raised {type(exc).__name__}: {exc}"
        problems.append(text)
        warn(path, f"{text} (ignored; detection went on)")
        return False


def _unknown(path: Path, where: str, problem: str, problems: list[str]) -> TranscriptError:
    extra = f" (detection errors: {'; '.join(problems)})" if problems else ""
    return TranscriptError(path, where, f"{problem}; {HOW_TO_NAME_OR_WRITE}{extra}", kind="unknown_format")


def _by_shape(formats: dict[str, TranscriptFormat], path: Path, problems: list[str]) -> Detection:
    text = read_text(path)
    generic = formats.get(GENERIC_NAME)
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
            raise TranscriptError(
                path, "line 1", f"neither JSON nor JSON lines: {exc2.msg}", kind="unknown_format"
            ) from exc2
        for fmt in formats.values():
            if hasattr(fmt, "match_line") and _ask(fmt, "match_line", path, problems, first):
                return Detection(fmt, "line", problems=problems)
        lines = JsonLines(list(iter_jsonl(path, text)))
        if generic is not None and find_message_arrays(lines):
            return Detection(generic, "fallback", lines, problems)
        shape = describe_shape(first)
        raise _unknown(
            path, "line 1", f"unknown JSON-lines shape: {shape}; no message list in any line", problems
        ) from None
    for fmt in formats.values():
        if hasattr(fmt, "match_json") and _ask(fmt, "match_json", path, problems, data):
            return Detection(fmt, "shape", data, problems)
    if generic is not None and find_message_arrays(data):
        return Detection(generic, "fallback", data, problems)
    raise _unknown(
        path,
        "top level (byte 0)",
        f"unknown JSON shape: {describe_shape(data)}; no OpenAI- or Anthropic-style message list at any depth",
        problems,
    )


def detect(path: Path, formats: dict[str, TranscriptFormat]) -> Detection:
    """Find the format of ``path`` among ``formats`` (see the module docstring for the steps).

    Raises:
        TranscriptError: unreadable, empty or binary file; invalid JSON (located); no format
            recognises the file (the message says how to name a format or write a loader).
    """
    problems: list[str] = []
    binary = [f for f in formats.values() if hasattr(f, "sniff_binary")]
    if binary:  # a zipped format (Inspect AI's .eval) is asked before the text head is decoded
        try:
            with path.open("rb") as f:
                raw = f.read(16)
        except OSError:
            raw = b""
        for fmt in binary:
            if _ask(fmt, "sniff_binary", path, problems, path, raw):
                return Detection(fmt, "sniff", problems=problems)
    head = read_head(path)
    for fmt in formats.values():
        if _ask(fmt, "sniff", path, problems, path, head):
            return Detection(fmt, "sniff", problems=problems)
    if stripped_head(head)[:1] in ("{", "["):
        return _by_shape(formats, path, problems)
    known = ", ".join(formats)
    raise _unknown(
        path,
        "byte 0",
        f"unknown transcript format: no format recognises the start of the file (known: {known})",
        problems,
    )


def detect_format(path: str | os.PathLike[str], *, pm: pluggy.PluginManager | None = None) -> str:
    """The name of the format that :func:`ctxlab.transcripts.load_transcripts` would use for ``path``.

    Raises:
        TranscriptError: as :func:`detect`.
    """
    check_regular(Path(path))
    return detect(Path(path), available_formats(pm)).format.name
