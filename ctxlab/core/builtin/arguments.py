"""The R5 argument bound, apart from the trimmer that applies it (:mod:`ctxlab.core.builtin.trimmers`):
how long an argument is as a provider sends it, and a call's arguments with every one over
:data:`ctxlab.core.settings.ARG_TRUNCATE_CHARS` characters replaced by the truncation marker.
Pure functions; nothing here edits its input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ctxlab.core.marks import truncation_marker
from ctxlab.core.settings import ARG_TRUNCATE_CHARS

__all__ = ["RAW_ARGUMENTS", "bound_arguments", "rebuilt", "with_value"]

#: the name :func:`bound_arguments` reports for arguments that are unparsable JSON text
RAW_ARGUMENTS = "<arguments>"


def _argument_chars(value: Any) -> int:
    """Characters of one argument as a provider sends it: a string's length, a list's or an
    object's compact JSON text."""
    if isinstance(value, str):
        return len(value)
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    except (TypeError, ValueError):
        return len(str(value))


def bound_arguments(args: Any) -> tuple[Any, list[tuple[str, int]]]:
    """The arguments of one call with every top-level argument over :data:`ARG_TRUNCATE_CHARS`
    characters replaced by :func:`truncation_marker` (R5), and ``[(argument name, its characters)]``
    of those replaced.

    ``args`` is a dict (a string argument counts its characters; a list or an object its compact
    JSON, so a ``content`` list of several 1,500-character strings or an ``edits`` list is bounded
    as a whole), or JSON text (``function_call`` blocks, invalid tool calls, OpenAI's legacy
    ``additional_kwargs["tool_calls"]``): parsed, bounded and dumped again; text that is no JSON
    object and is too long is replaced whole (reported as ``"<arguments>"``).  The same object
    is returned when nothing was too long.
    """
    if isinstance(args, str):
        if len(args) <= ARG_TRUNCATE_CHARS:
            return args, []  # no argument inside can be longer than the whole text
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            bounded, cut = bound_arguments(parsed)
            return (json.dumps(bounded, ensure_ascii=False) if cut else args), cut
        return truncation_marker(len(args)), [(RAW_ARGUMENTS, len(args))]
    if not isinstance(args, dict):
        return args, []
    cut = [(str(k), n) for k, v in args.items() if (n := _argument_chars(v)) > ARG_TRUNCATE_CHARS]
    if not cut:
        return args, []
    return {**args, **{k: truncation_marker(n) for k, n in cut}}, cut


def with_value(d: Any, key: str, value: Any) -> Any:
    """``d`` with ``d[key] = value`` as a new dict, or ``d`` itself when ``value`` is already there."""
    return d if d.get(key) is value else {**d, key: value}


def rebuilt(items: list[Any], edit: Callable[[Any], Any]) -> list[Any] | None:
    """``[edit(x) for x in items]`` when any item changed (identity), else ``None``."""
    new = [edit(x) for x in items]
    return new if any(a is not b for a, b in zip(new, items, strict=True)) else None
