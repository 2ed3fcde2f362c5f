"""Names a replay gives things: safe file names (:func:`safe_name`), the LangGraph thread id of
a replayed transcript (:func:`thread_id_for`) and the transcripts' labels
(:func:`transcript_labels`)."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxlab.transcripts.base import Transcript

__all__ = ["did_you_mean", "safe_name", "thread_id_for", "transcript_labels"]


def safe_name(text: str, limit: int = 80, *, empty: str = "x", ascii_only: bool = False) -> str:
    """A file or folder name for ``text``: letters and digits of any script (Chinese stays
    readable: ``"深度研究"`` stays ``"深度研究"``), ``._-``, at most ``limit`` bytes of UTF-8 (file
    systems bound a name in bytes; a CJK character takes 3).  ``ascii_only=True`` keeps ASCII
    letters and digits only (identifiers such as a thread id).  Every other run of characters
    becomes ``_``.  A name that had to change (other characters, or too long) ends with ``-`` and
    8 hex digits of the text's SHA-1, so that two texts never share a name.

    Examples: ``safe_name("ars") == "ars"``; ``safe_name("a/b.json")`` is ``"a_b.json-<sha1>"``;
    ``safe_name("如何", ascii_only=True, empty="figure")`` is ``"figure-<sha1>"``.
    """
    pattern = r"[^A-Za-z0-9._-]+" if ascii_only else r"[^\w.-]+"
    s = re.sub(pattern, "_", text).strip("._-") or empty
    if len(s.encode("utf-8", "surrogatepass")) > limit or s != text:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        s = f"{_cut_bytes(s, limit - 9)}-{digest}"
    return s


def _cut_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding has at most ``limit`` bytes."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[: max(limit, 0)].decode("utf-8", "ignore")


def thread_id_for(label: str) -> str:
    """The LangGraph thread id a replay of the transcript labelled ``label`` runs under: the label
    made safe for a file name (:func:`safe_name` with ``ascii_only``: ASCII letters, digits and ``._-``, a hash
    suffix when it had to change; ``"katy.traj"`` stays ``"katy.traj"``).  A live agent run on
    this thread id writes the same history files (spec R10) as the replay, so the summaries,
    which name those files, are the same text too."""
    return safe_name(label, ascii_only=True)


def transcript_labels(transcripts: Sequence[Transcript]) -> list[str]:
    """Unique, readable labels: ``Transcript.name``, prefixed with parent folders of the source
    where two transcripts would otherwise share a name (``python-to-rust-port/transcript.jsonl``)."""
    labels = [t.name for t in transcripts]
    depth = [0] * len(transcripts)
    for _ in range(12):
        seen: dict[str, list[int]] = {}
        for i, lab in enumerate(labels):
            seen.setdefault(lab, []).append(i)
        dups = [ix for ix in seen.values() if len(ix) > 1]
        if not dups:
            break
        for group in dups:
            for i in group:
                depth[i] += 1
                parents = [p for p in Path(transcripts[i].source).parent.parts if p not in ("/", "\\", "")]
                prefix = "/".join(parents[-min(depth[i], len(parents)) :]) if parents else ""
                labels[i] = f"{prefix}/{transcripts[i].name}" if prefix else transcripts[i].name
    # still equal (same file loaded twice): number them
    counts: dict[str, int] = {}
    out = []
    for lab in labels:
        counts[lab] = counts.get(lab, 0) + 1
        out.append(lab if counts[lab] == 1 else f"{lab}~{counts[lab]}")
    return out


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'ars'?)"`` when ``known`` holds names close to ``name`` (``difflib``'s
    close matches, at most three), else ``""``: the tail of an unknown-name error."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
