"""Reading JSON-lines files line by line, partial logs included (re-exported by
:mod:`ctxlab.transcripts._util` and the SDK)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ctxlab.transcripts.base import TranscriptError, TranscriptWarning


def split_lines(text: str) -> list[str]:
    """Lines split on ``\n`` only (``\r\n`` tolerated).

    Unlike ``str.splitlines`` this keeps U+2028, U+0085, form feeds ... inside a line, which JSON
    strings may contain unescaped.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


#: set (``lenient_lines(True)``) while loading for ``--keep-going``: a bad line in the middle of a
#: JSON-lines file is then left out with a warning instead of failing the whole file
_LENIENT_LINES: ContextVar[bool] = ContextVar("ctxlab_lenient_lines", default=False)


@contextmanager
def lenient_lines(on: bool = True) -> Iterator[None]:
    """Within the block, :func:`iter_jsonl` leaves out (and warns about) every line that is not
    JSON instead of raising (what ``ctxlab replay --keep-going`` asks for: one bad line never
    loses a whole file)."""
    token = _LENIENT_LINES.set(on)
    try:
        yield
    finally:
        _LENIENT_LINES.reset(token)


def _cut_off(line: str, exc: json.JSONDecodeError) -> bool:
    """A line that ends inside a JSON value (what a log cut mid-write looks like)."""
    return exc.msg.startswith("Unterminated string") or exc.pos >= len(line.rstrip()) - 1


def iter_jsonl(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, value)`` for every non-blank line (1-based line numbers).

    **Partial logs**: a *last* line cut off inside a JSON value (a live agent's log, or one whose
    agent crashed mid-write) is left out with a :class:`TranscriptWarning` naming the file and
    the line; every complete line before it is yielded.  Inside :func:`lenient_lines` any line
    that is not JSON is left out so (with a warning each).

    Raises:
        TranscriptError: any other line that is not JSON (``line N column C``).
    """
    lines = split_lines(text)
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    kept = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            cut = lineno - 1 == last and _cut_off(line, exc)
            if not (cut or _LENIENT_LINES.get()):
                raise TranscriptError(
                    path, f"line {lineno} column {exc.colno}", f"invalid JSON line: {exc.msg}"
                ) from exc
            what = "cut off mid-line (a partial log: a live or crashed agent's)" if cut else "invalid JSON"
            text = (
                f"{path}: line {lineno}: {what}: {exc.msg} (column {exc.colno} of {len(line)}); "
                f"left out ({kept} complete line(s) before it kept)"
            )
            warnings.warn(TranscriptWarning(text), stacklevel=3)
            continue
        kept += 1
        yield lineno, value
