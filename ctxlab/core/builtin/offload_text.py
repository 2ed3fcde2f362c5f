"""The texts of an offloaded tool result's copy in a view (spec R6): its headers, its preview
candidates within a token budget, the image blocks kept beside them, and the copy whose file is gone.

Used by :class:`ctxlab.core.builtin.trimmers.ToolResultOffload`; pure functions of their arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.messages import BaseMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import LARGE_TOOL_RESULTS_DIR
from ctxlab.core.l1 import fit_preview
from ctxlab.core.marks import OFFLOAD_MARKER

__all__ = [
    "FILE_GONE",
    "MIN_PREVIEW_TOKENS",
    "PATH_SHAPE",
    "headers",
    "path_gone",
    "replacements",
    "with_images",
]

#: what the offload file name looks like, for the size of a header before the file exists
PATH_SHAPE = f"{LARGE_TOOL_RESULTS_DIR}/{{stem}}-{'0a1b2c3d4e5f6789' * 4}.txt"
#: replaces the path of an offloaded copy whose file is gone from the thread's file scope
FILE_GONE = "(a file that is no longer available)"
#: a preview shorter than this (tokens) is not worth a header: a shorter header is tried first
MIN_PREVIEW_TOKENS = 8


def with_images(text: str, images: list[Any]) -> str | list[Any]:
    """The content of a replacement: ``text``, beside the image blocks kept in the view."""
    return [{"type": "text", "text": text}, *images] if images else text


def headers(text: str, before: int, path: str | None) -> list[str]:
    """The headers an offloaded copy may open with, longest first; ``path`` ``None``: the file
    could not be saved."""
    if path is None:
        return [
            f"{OFFLOAD_MARKER} {len(text)} characters (~{before} tokens); the full output could not "
            "be saved, only this preview is shown:",
            f"{OFFLOAD_MARKER} not saved; preview:",
        ]
    return [
        f"{OFFLOAD_MARKER} {len(text)} characters (~{before} tokens). "
        f"Full output saved at {path} \nRead that file for the complete result. Preview:",
        f"{OFFLOAD_MARKER} Full output saved at {path}",
    ]


def replacements(text: str, budget: int, headers: list[str], text_tokens: int | None = None) -> Iterator[str]:
    """Replacement texts within ``budget`` tokens, best first: each header (longest first) with
    a preview of at least :data:`MIN_PREVIEW_TOKENS`, then each header alone (``text_tokens``:
    about what the whole text is estimated at, :func:`ctxlab.core.l1.fit_preview`'s first try)."""
    sizes = [estimate_text_tokens(h) for h in headers]
    for header, size in zip(headers, sizes, strict=True):
        if size + 8 + MIN_PREVIEW_TOKENS <= budget:  # fit_preview keeps 8 tokens of slack
            yield fit_preview(text, budget, header, text_tokens if text_tokens and text_tokens > 0 else None)
    for header, size in zip(headers, sizes, strict=True):
        if size <= budget:
            yield header


def path_gone(m: BaseMessage, path: str) -> BaseMessage:
    """``m`` with ``path`` replaced by :data:`FILE_GONE` in its text."""
    content = m.content
    if isinstance(content, str):
        new: str | list[Any] = content.replace(path, FILE_GONE)
    else:
        new = [
            {**b, "text": b["text"].replace(path, FILE_GONE)}
            if isinstance(b, dict) and isinstance(b.get("text"), str)
            else b
            for b in content
        ]
    return m.model_copy(update={"content": new})
