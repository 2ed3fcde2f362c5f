"""Names a replay gives things: safe file names (:func:`safe_name`) and the LangGraph thread id of
a replayed transcript (:func:`thread_id_for`)."""

from __future__ import annotations

import hashlib
import re

__all__ = ["safe_name", "thread_id_for"]


def safe_name(text: str, limit: int = 80, *, empty: str = "x") -> str:
    """A file or folder name for ``text``: ASCII letters, digits, ``._-``, at most ``limit``
    characters.  A name that had to change (other characters, or too long) ends with ``-`` and
    8 hex digits of the text's SHA-1, so that two texts never share a name.

    Examples: ``safe_name("ars") == "ars"``; ``safe_name("a/b.json")`` is ``"a_b.json-<sha1>"``.
    """
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-") or empty
    if len(s) > limit or s != text:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        s = f"{s[: limit - 9]}-{digest}"
    return s


def thread_id_for(label: str) -> str:
    """The LangGraph thread id a replay of the transcript labelled ``label`` runs under: the label
    made safe for a file name (:func:`safe_name`: ASCII letters, digits and ``._-``, a hash
    suffix when it had to change; ``"katy.traj"`` stays ``"katy.traj"``).  A live agent run on
    this thread id writes the same history files (spec R10) as the replay, so the summaries,
    which name those files, are the same text too."""
    return safe_name(label)
