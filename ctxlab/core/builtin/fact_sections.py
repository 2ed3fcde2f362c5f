"""The ``Files``, ``Commands``, ``Errors`` and ``Values`` sections of an offline summary
(:func:`fact_sections`): the facts :func:`ctxlab.core.builtin.session_facts.session_facts` finds in
a span, one line per fact, merged with a previous summary's lines about other subjects (issue 28).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from langchain_core.messages import BaseMessage

from ctxlab.core.builtin.session_facts import same_file, session_facts

__all__ = ["fact_sections"]


_CHANGES = ("created, then edited", "created", "edited", "deleted")


def _prior_change(line: str) -> str | None:
    """The change a previous summary's file line states (``edited`` ...), ``None``: none."""
    statement = line.split(": ", 1)[1].split("; defines ", 1)[0] if ": " in line else ""
    return next((c for c in _CHANGES if c in statement.split("; ")), None)


def fact_sections(
    messages: Sequence[BaseMessage],
    kept: Sequence[BaseMessage] = (),
    prior: Mapping[str, Sequence[str]] | None = None,
    defines: Mapping[str, Iterable[str]] | None = None,
) -> list[tuple[str, list[str]]]:
    """The ``Files``, ``Commands``, ``Errors`` and ``Values`` sections of a summary of
    ``messages``, ``(header, lines)``: one line per fact that names its subject and states its
    attribute, the latest first (files: the changed ones first), then the lines of a previous
    summary (``prior``, by header) about other subjects.  A file the ``kept`` window's actions
    touch is left out (the request shows it) unless the span changed it and the kept window does
    not; ``defines`` (path -> names a written script defines) extends a file's line.  Caps: 15
    files, 10 commands, 8 errors, 12 values (those the agent or the user wrote first, then those of
    tool results; the latest first)."""
    prior = prior or {}
    found = session_facts(messages)
    in_kept = session_facts(kept).files
    defines = {p: d for p, d in (defines or {}).items() if d}
    prior_files = {_subject(x): x for x in prior.get("Files", [])}
    changed: list[str] = []
    other: list[str] = []
    for path, fact in reversed(found.files.items()):
        shown = next((f for k, f in in_kept.items() if same_file(path, k)), None)
        if shown is not None and (fact.changed is None or shown.changed is not None):
            continue  # the kept window shows it (a change of the span only when it changes it too)
        statement = fact.statement()
        before = prior_files.get(path)
        if fact.changed is None and before is not None and (change := _prior_change(before)):
            statement = f"{statement}; {change}"  # changed in an earlier part
        line = f"{path}: {statement}"
        defined = next(
            (d for p, d in defines.items() if p == path or p.endswith("/" + path.lstrip("./"))), None
        )
        if defined:
            line += f"; defines {', '.join(sorted(defined)[:8])}"
        (changed if fact.changed is not None or statement.endswith(_CHANGES) else other).append(line)
    files = [*changed, *other]
    commands: list[str] = []
    for c in reversed(found.commands.values()):
        runs = f", {c.runs} runs" if c.runs > 1 else ""
        error = f" ({c.error})" if c.outcome == "failed" and c.error else ""
        commands.append(f"{c.shown}{error}: {c.outcome}{runs}")
    errors = [f"{e.line}: {'fixed' if e.fixed else 'still open'}" for e in reversed(found.errors.values())]
    seen = [v for k, v in found.seen_values.items() if k not in found.values]
    values = [f"{v.name}: {v.value}" for v in [*reversed(found.values.values()), *reversed(seen)]]
    sections: list[tuple[str, list[str]]] = []
    for header, lines, cap in (
        ("Files", files, 15),
        ("Commands", commands, 10),
        ("Errors", errors, 8),
        ("Values", values, 12),
    ):
        subjects = {_subject(x) for x in lines}
        merged = [*lines, *(x for x in prior.get(header, []) if _subject(x) not in subjects)]
        sections.append((header, merged[:cap]))
    return sections


def _subject(line: str) -> str:
    """What a fact line is about: the text before its first ``": "`` (a path, a command, an error
    line's class, a value's name)."""
    return line.split(": ", 1)[0].strip()
