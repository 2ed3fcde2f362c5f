"""The tool calls of the scripted agent: one builder per tool of :mod:`tools.sample.sandbox`
(``run_command``, ``read_file``, ``write_file``, ``edit_file``), each giving a :data:`Call`.

Paths are as the agent writes them: relative to site-packages, or ``workspace/...``; line numbers
and ``offset``/``limit`` are 1-based lines of the file.
"""

from __future__ import annotations

import shlex
from typing import Any

__all__ = ["Call", "edit", "python", "read", "run", "window", "write"]

#: one tool call: ``(tool name, arguments)``
Call = tuple[str, dict[str, Any]]


def run(command: str) -> Call:
    """``run_command`` of ``command`` (no shell: see the sandbox's whitelist)."""
    return ("run_command", {"command": command})


def read(path: str, offset: int | None = None, limit: int | None = None) -> Call:
    """``read_file`` of ``path``, from line ``offset`` for ``limit`` lines (the tool's defaults
    when ``None``: from line 1, 2,000 lines)."""
    args: dict[str, Any] = {"file_path": path}
    if offset is not None:
        args["offset"] = offset
    if limit is not None:
        args["limit"] = limit
    return ("read_file", args)


def write(path: str, content: str) -> Call:
    """``write_file`` of ``content`` to ``path`` in the workspace."""
    return ("write_file", {"file_path": path, "content": content})


def edit(path: str, old: str, new: str) -> Call:
    """``edit_file`` replacing the exact string ``old`` with ``new`` in a workspace file."""
    return ("edit_file", {"file_path": path, "old_string": old, "new_string": new})


def python(code: str) -> Call:
    """``run_command`` of ``python -c CODE``, the code shell-quoted as one argument."""
    return run("python -c " + shlex.quote(code))


def window(path: str, line: int, before: int = 2, size: int = 14) -> Call:
    """``read_file`` of ``size`` lines starting ``before`` lines above ``line`` (1-based, at least 1)."""
    return read(path, offset=max(1, line - before), limit=size)
