"""LangGraph's ``messages`` reducer for a replay, with a fast path for the common update: appends.

:func:`langgraph.graph.message.add_messages` rebuilds an index of every message id of the state
on each update, so a run of *n* calls costs O(n²) in the reducer alone (about 5 % of a corpus
replay, issue 31).  :class:`AppendingMessages` gives exactly its result, and computes it from
the ids it already knows when the update only appends: the state list is the very list it
returned last time (LangGraph replaces the messages list, never edits it), and every new message
is a plain message (no ``RemoveMessage``, no chunk) with an id that is neither in the state nor
twice in the update.  Any other update goes through ``add_messages`` itself.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk, RemoveMessage
from langgraph.graph.message import add_messages

__all__ = ["AppendingMessages"]


class AppendingMessages:
    """A ``messages`` reducer equal to ``add_messages`` (module docstring); one per state.

    Attributes:
        appended: updates taken by the fast path; merged: updates given to ``add_messages``.
    """

    def __init__(self) -> None:
        self.appended = 0
        self.merged = 0
        self._last: list[Any] | None = None
        self._length = 0
        self._ids: set[str] = set()

    def __call__(self, left: Any, right: Any) -> Any:
        new = right if isinstance(right, list) else [right]
        last = self._last
        out: list[Any]
        if last is not None and left is last and len(last) == self._length and self._appends(new):
            out = [*last, *new]
            self._ids.update(m.id for m in new)
            self.appended += 1
        else:
            merged: Any = add_messages(left, right)
            out = merged
            self.merged += 1
            self._ids = {m.id for m in out}
        self._last, self._length = out, len(out)
        return out

    def _appends(self, new: list[Any]) -> bool:
        """Whether ``add_messages`` would append ``new`` as it is (the ids of the state known)."""
        ids = self._ids
        fresh: set[str] = set()
        for m in new:
            if (
                not isinstance(m, BaseMessage)
                or isinstance(m, (BaseMessageChunk, RemoveMessage))
                or not isinstance(m.id, str)
                or m.id in ids
                or m.id in fresh
            ):
                return False
            fresh.add(m.id)
        return True
