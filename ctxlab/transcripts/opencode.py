"""OpenCode session exports in Markdown (SOURCES.md format **F13**).

Shape: ``# <title>``, ``**Session ID:** ses_...``, ``**Created:**``, ``**Updated:**``, then turns
separated by ``---``: ``## User`` and ``## Assistant (<agent> · <model> · <seconds>s)`` (the
seconds may be missing), with optional ``_Thinking:_`` paragraphs.  A tool call is a bare fenced
block whose first line is ``Tool: <name>``, holding ``**Input:**`` and a JSON block, then
``**Output:**`` or ``**Error:**`` and a text block (or nothing), the inner fences nested inside the
outer one::

    ```
    Tool: bash

    **Input:**
    ```json
    {"command": "ls"}
    ```
    **Output:**
    ```
    ...output, which may itself contain ``` lines...
    ```
    ```

The block ends at the first pair of consecutive ```` ``` ```` lines after the output opens.
Headers are only recognised after a ``---`` line and a blank line, outside tool blocks.

Conversion: ``## User`` -> HumanMessage; an assistant turn is split at its tool blocks: the
prose before a run of tool blocks -> AIMessage carrying those calls, each call's output ->
ToolMessage (``status="error"`` for ``**Error:**``), trailing prose -> AIMessage.  Prose is kept
as written (``_Thinking:_`` paragraphs included); only the blank lines and ``---`` that the export
puts around turns and tool blocks are dropped.  The export has no tool-call ids: they are made up
as ``<run_id>-call<n>``.  The turn header's agent, model and seconds go to ``response_metadata``.

A tool block without ``**Output:**``/``**Error:**`` is a call whose output was empty: the export
writes the output section only for a non-empty output (``git add``, ``cp`` print nothing), and
the agent was sent that empty output.  Such a call is answered by an empty ToolMessage marked
``additional_kwargs[SYNTHETIC_KEY] = True`` (so no call is left unanswered -- a view a provider
would reject), and counted in ``metadata["calls_without_output"]``.

Errors: ``line 1`` when no ``## User``/``## Assistant`` turn is found.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import MessageBuilder, read_text, split_lines, tool_call
from ctxlab.transcripts.base import SYNTHETIC_KEY, Transcript, TranscriptError

FENCE = "```"
ASSISTANT = re.compile(r"\A## Assistant \((?P<agent>[^·]*?) · (?P<model>[^·]*?)(?: · (?P<secs>[\d.]+)s)?\)\Z")
_HEADER_FIELD = re.compile(r"\A\*\*(Session ID|Created|Updated):\*\* ?(.*)\Z")


def _is_turn_header(lines: list[str], i: int) -> bool:
    line = lines[i]
    return (
        (line == "## User" or bool(ASSISTANT.match(line)))
        and i >= 2
        and lines[i - 1] == ""
        and lines[i - 2] == "---"
    )


def _parse_tool(lines: list[str], i: int) -> tuple[dict[str, Any], int] | None:
    """Parse the tool block opening at line ``i``; return ``(tool, index of its last line)``."""
    n = len(lines)
    name = lines[i + 1][len("Tool: ") :]
    j = i + 2
    while j < n and lines[j] == "":
        j += 1
    if j + 1 >= n or lines[j] != "**Input:**" or not lines[j + 1].startswith(FENCE):
        return None
    k = j + 2
    while k < n and lines[k] != FENCE:
        k += 1
    if k >= n:
        return None
    tool: dict[str, Any] = {
        "name": name,
        "input": "\n".join(lines[j + 2 : k]),
        "output": None,
        "error": False,
    }
    m = k + 1
    if m < n and lines[m] == FENCE:
        return tool, m
    if m + 1 < n and lines[m] in ("**Output:**", "**Error:**") and lines[m + 1].startswith(FENCE):
        for e in range(m + 2, n - 1):
            if lines[e] == FENCE and lines[e + 1] == FENCE:
                tool["output"] = "\n".join(lines[m + 2 : e])
                tool["error"] = lines[m] == "**Error:**"
                return tool, e + 1
    return None


def _trim_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and lines[start] == "":
        start += 1
    while end > start and lines[end - 1] == "":
        end -= 1
    return lines[start:end]


def parse_sections(lines: list[str]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """``(header fields, turns)``; a turn is ``{role, header match, segments}`` where segments are
    ``("text", [lines])`` or ``("tool", tool dict)``."""
    header: dict[str, str] = {}
    turns: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    buf: list[str] = []
    n = len(lines)

    def close_text() -> None:
        nonlocal buf
        if cur is not None:
            cur["segments"].append(("text", buf))
        buf = []

    i = 0
    while i < n:
        line = lines[i]
        if cur is None:
            if line.startswith("# ") and "title" not in header:
                header["title"] = line[2:]
            elif m := _HEADER_FIELD.match(line):
                header[m.group(1)] = m.group(2)
        if (
            cur is not None
            and cur["role"] == "assistant"
            and line == FENCE
            and lines[i + 1 : i + 2]
            and lines[i + 1].startswith("Tool: ")
        ):
            parsed = _parse_tool(lines, i)
            if parsed is not None:
                close_text()
                cur["segments"].append(("tool", parsed[0]))
                i = parsed[1] + 1
                continue
        if _is_turn_header(lines, i):
            if cur is not None:
                if buf and _trim_blank(buf)[-1:] == ["---"]:
                    buf = _trim_blank(buf)[:-1]
                close_text()
            cur = {
                "role": "user" if line == "## User" else "assistant",
                "header": ASSISTANT.match(line),
                "line": i + 1,
            }
            cur["segments"] = []
            turns.append(cur)
            buf = []
        elif cur is not None:
            buf.append(line)
        i += 1
    if cur is not None:
        trimmed = _trim_blank(buf)
        if trimmed[-1:] == ["---"]:
            buf = trimmed[:-1]
        close_text()
    return header, turns


class OpenCodeFormat:
    name = "opencode_md"
    description = "OpenCode Markdown session export (F13): ## User / ## Assistant turns, Tool: blocks"

    def sniff(self, path: Path, head: str) -> bool:
        h = head.lstrip("\ufeff")
        return h.startswith("# ") and (
            "\n**Session ID:** " in h[:4096] or bool(re.search(r"\n---\n\n## (User|Assistant \()", h))
        )

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        header, turns = parse_sections(split_lines(read_text(path)))
        if not turns:
            raise TranscriptError(path, "line 1", "no '## User' or '## Assistant (...)' turn found")
        run_id = path.name
        b = MessageBuilder(run_id)
        models: Counter[str] = Counter()
        n_calls = 0
        for turn in turns:
            if turn["role"] == "user":
                text = "\n".join(
                    _trim_blank([x for kind, seg in turn["segments"] if kind == "text" for x in seg])
                )
                b.human(text)
                continue
            n_calls = _assistant_turn(b, turn, run_id, n_calls, models)
        meta = {
            "calls_without_output": sum(1 for m in b.messages if m.additional_kwargs.get(SYNTHETIC_KEY)),
            "title": header.get("title"),
            "session_id": header.get("Session ID"),
            "created": header.get("Created"),
            "updated": header.get("Updated"),
            "turns": len(turns),
        }
        model = models.most_common(1)[0][0] if models else None
        return [b.transcript(path, self.name, model=model, metadata=meta)]


def _assistant_turn(
    b: MessageBuilder, turn: dict[str, Any], run_id: str, n_calls: int, models: Counter[str]
) -> int:
    """Append one assistant turn to ``b``; return the running number of tool calls."""
    hm = turn["header"]
    meta: dict[str, Any] = {"agent": hm.group("agent"), "model_name": hm.group("model")}
    if hm.group("secs"):
        meta["duration_s"] = float(hm.group("secs"))
    if meta["model_name"] != "Assistant":
        models[meta["model_name"]] += 1
    text: str | None = None
    calls: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def flush() -> None:
        nonlocal text, calls
        if text is not None or calls:
            b.ai(text or "", [c for c, _ in calls], response_metadata=dict(meta))
            for call, tool in calls:
                if tool["output"] is not None:
                    b.tool(tool["output"], call["id"], call["name"], error=tool["error"])
                else:
                    b.tool("", call["id"], call["name"], **{SYNTHETIC_KEY: True})
        text, calls = None, []

    for kind, seg in turn["segments"]:
        if kind == "text":
            lines = _trim_blank(seg)
            if not lines:
                continue
            if calls:
                flush()
            text = "\n".join(lines) if text is None else text + "\n\n" + "\n".join(lines)
        else:
            n_calls += 1
            calls.append((tool_call(seg["name"], _args(seg["input"]), f"{run_id}-call{n_calls}"), seg))
    if text is None and not calls:
        text = ""  # an empty assistant turn is still a turn
    flush()
    return n_calls


def _args(text: str) -> Any:
    """The input block as a dict when it is a JSON object, else the raw text (-> ``{"_raw"}``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, dict) else text


FORMAT = OpenCodeFormat()
