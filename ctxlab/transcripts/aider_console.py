"""Aider's console output (the ``> `` lines of ``.aider.chat.history.md``): what the model saw and
what it did not, and the usage lines.

Aider prints to its console both what it will send to the model next (lint and test output,
the errors of edits that failed to apply: its *reflected* messages) and lines that only the user
sees: the ``Tokens: … sent, … received.`` usage line of each model call, ``Applied edit to …``,
``Commit <hash> …``, ``You can use /undo …``, confirmation questions (``Edit the files?``,
``Attempt to fix lint errors?``, ``Add … to the chat?``), warnings and documentation links.  The
rules here come from Aider's sources (``aider/coders/base_coder.py``: ``show_usage_report``,
``apply_updates``, ``lint_edited``; ``aider/io.py``), read at
https://github.com/Aider-AI/aider (Apache-2.0); no code is copied.
"""

from __future__ import annotations

import re
from typing import Any

from ctxlab.transcripts._util import usage_metadata

#: console lines only the user sees (matched against a whole line)
UI_LINE = re.compile(
    r"""\A(?:
      Tokens:\s.*\bsent\b.*
    | Cost:\s\$.*
    | Applied\ edit\ to\ .*
    | Did\ not\ apply\ edit\ to\ .*
    | Commit\ [0-9a-f]{7,}\b.*
    | Committing\ .*\ before\ applying\ edits\.?
    | You\ can\ use\ /undo\ .*
    | No\ changes\ made\ to\ git\ tracked\ files\.?
    | Edit\ the\ files\?.*
    | Attempt\ to\ fix\ (?:lint|test)\ errors\?.*
    | Add\ .*\ to\ the\ chat\?.*
    | Added\ \d+\ lines?\ of\ output\ to\ the\ chat\.?
    | Create\ new\ file\?.*
    | Allow\ edits\ to\ .*
    | Run\ shell\ commands?\?.*
    | Only\ \d+\ reflections\ allowed,\ stopping\.?
    | The\ LLM\ did\ not\ conform\ to\ the\ edit\ format\.?
    | https?://aider\.chat/\S*
    | Warning:\ .*
    | \^C\ again\ to\ exit
    )\s*\Z""",
    re.X,
)
_STOPPED = re.compile(r"\AOnly \d+ reflections allowed, stopping\.?\Z")
_TOKENS = re.compile(r"\ATokens:\s+(?P<sent>[\d.,]+k?)\s+sent(?P<rest>.*)\Z")
_PART = re.compile(r"(?P<n>[\d.,]+k?)\s+(?P<what>cache write|cache hit|received)")


def count_tokens(text: str) -> int | None:
    """Aider's token counts as printed: ``5,094``, ``958``, ``5.1k``, ``18k`` (``k``: rounded
    thousands, so the count is approximate: ±50 below 10k, ±500 above)."""
    text = text.replace(",", "")
    try:
        return round(float(text[:-1]) * 1000) if text.endswith("k") else int(text)
    except ValueError:
        return None


def usage_of(line: str) -> dict[str, Any] | None:
    """The ``usage_metadata`` of one ``Tokens: N sent[, W cache write][, H cache hit], M received``
    line (input = ``sent``, Aider's whole prompt count; cache parts as details), or ``None``."""
    m = _TOKENS.match(line.strip())
    if m is None:
        return None
    parts = {p.group("what"): count_tokens(p.group("n")) for p in _PART.finditer(m.group("rest"))}
    return usage_metadata(
        count_tokens(m.group("sent")),
        parts.get("received"),
        cache_read=parts.get("cache hit"),
        cache_creation=parts.get("cache write"),
    )


def model_lines(lines: list[str]) -> tuple[list[str], list[str], int]:
    """Split a console block: ``(lines the model was sent, Tokens lines, lines dropped)``.

    Dropped: the :data:`UI_LINE` lines, and a lone file name or URL right before one of their
    questions (``Add … to the chat?``, ``Create new file?``: the question's subject).  Blank lines at either end are dropped too.
    A block saying ``Only N reflections allowed, stopping.`` sent nothing: every line is dropped
    (Aider stops before reflecting the error it shows).
    """
    kept: list[str] = []
    tokens: list[str] = []
    dropped = 0
    for i, line in enumerate(lines):
        stripped = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _TOKENS.match(stripped):
            tokens.append(stripped)
            dropped += 1
        elif UI_LINE.match(stripped) or (
            stripped and " " not in stripped and UI_LINE.match(nxt) is not None and "?" in nxt
        ):
            dropped += 1
        else:
            kept.append(line)
    if any(_STOPPED.match(line.strip()) for line in lines):
        return [], tokens, len(lines)
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    return kept, tokens, dropped
