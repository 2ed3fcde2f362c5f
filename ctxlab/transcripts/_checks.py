"""Typed access to parsed JSON with located errors: the structure checks of the loaders.

Every check raises :class:`~ctxlab.transcripts.base.TranscriptError` naming the file and the place
as a key path (``key history[3].content``, built with :func:`join_key`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator
from pathlib import Path
from typing import Any

from ctxlab.transcripts.base import TranscriptError

_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def expect(path: Path, value: Any, types: type | tuple[type, ...], where: str) -> Any:
    """Return ``value`` if it is of ``types``, else raise ``TranscriptError`` at ``key <where>``."""
    if not isinstance(value, types):
        wanted = types if isinstance(types, tuple) else (types,)
        names = " or ".join(sorted({_TYPE_NAMES.get(t, t.__name__) for t in wanted}))
        raise TranscriptError(path, f"key {where}", f"expected {names}, found {_kind(value)}")
    return value


def need(path: Path, obj: dict[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` checked against ``types``; a missing key is reported at ``key <where>.<key>``."""
    if key not in obj:
        raise TranscriptError(path, f"key {join_key(where, key)}", "missing")
    return expect(path, obj[key], types, join_key(where, key))


def join_key(where: str, key: str | int) -> str:
    """``history`` + ``3`` -> ``history[3]``; ``history[3]`` + ``content`` -> ``history[3].content``."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object (a dict), else an empty dict (for optional sub-objects)."""
    return value if isinstance(value, dict) else {}


def str_field(obj: dict[str, Any], key: str) -> str | None:
    """``obj[key]`` when it is a string, else ``None`` (optional fields such as ``model``)."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def top_key(path: Path, data: Any, key: str, types: type | tuple[type, ...]) -> Any:
    """``data[key]`` checked against ``types``, where ``data`` is the whole document.

    Raises:
        TranscriptError: at ``key (top level)`` when ``data`` is not an object, at ``key <key>``
            when the key is missing or holds another type (:func:`need`).
    """
    expect(path, data, dict, "(top level)")
    return need(path, data, key, types, "")


def objects(path: Path, items: list[Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(place, item)`` for each item of the list found at ``key <where>`` (``""``: the top
    level), the place being ``<where>[i]`` (:func:`join_key`).

    Raises:
        TranscriptError: at ``key <where>[i]`` for an item that is not an object, when the
            iteration reaches it (the items before it have been yielded).
    """
    for i, item in enumerate(items):
        at = join_key(where, i)
        yield at, expect(path, item, dict, at)


def optional_objects(
    path: Path, obj: dict[str, Any], key: str, where: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """:func:`objects` of the optional list ``obj[key]`` (``obj`` found at ``key <where>``; a
    missing, null or empty value is no items).

    Raises:
        TranscriptError: at ``key <where>.<key>`` when the value is not a list (at once), at
            ``key <where>.<key>[i]`` for an item that is not an object (when reached).
    """
    at = join_key(where, key)
    return objects(path, expect(path, obj.get(key) or [], list, at), at)


def request_messages(path: Path, data: Any, key: str) -> tuple[list[Any], str, dict[str, Any]]:
    """A message list stored bare or in a request object under ``key`` (``{"messages": [...],
    "model", "tools", ...}``): ``(the list, its place: "" or key, the request: {} for a bare list)``.

    Raises:
        TranscriptError: at ``key <key>`` when a request lacks the list or holds another type
            there, at ``key (top level)`` when ``data`` is neither a list nor an object.
    """
    if isinstance(data, dict):
        return need(path, data, key, list, ""), key, data
    return expect(path, data, list, "(top level)"), "", {}


def all_tagged(items: Iterable[Any], key: str, values: Container[Any]) -> bool:
    """Whether every item is an object whose ``key`` is one of ``values`` (``True`` for no items):
    the shape test of a message list in ``match_json``."""
    return all(isinstance(m, dict) and m.get(key) in values for m in items)


def describe_shape(data: Any) -> str:
    """A short description of a JSON value for 'unknown shape' errors."""
    if isinstance(data, dict):
        keys = list(data)[:8]
        return f"an object with keys {keys}" + (" ..." if len(data) > 8 else "")
    if isinstance(data, list):
        if not data:
            return "an empty list"
        first = data[0]
        inner = f"objects, the first with keys {list(first)[:8]}" if isinstance(first, dict) else _kind(first)
        return f"a list of {len(data)} {inner}"
    return _kind(data)
