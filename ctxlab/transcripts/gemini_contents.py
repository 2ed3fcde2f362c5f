"""Gemini API ``contents`` lists (``gemini_contents``): Gemini CLI ``/chat save`` checkpoints
(``~/.gemini/tmp/<project>/checkpoint-<tag>.json``) and request bodies.

Shape (Gemini API ``Content``): a list of ``{role: "user" | "model", parts: [...]}``, a part being
``{text}`` (``thought: true`` marks the model's thinking), ``{functionCall: {name, args, id?}}``,
``{functionResponse: {name, response, id?}}``, or media/code parts (``inlineData``,
``fileData``, ``executableCode``, ``codeExecutionResult``).  A request body holds the list under
``contents`` next to ``systemInstruction``/``tools``.  The shape is Google's
(https://ai.google.dev/api/caching#Content); the worked plugin of ``docs/transcripts.md`` is the
short version of this loader.

Conversion: ``systemInstruction`` -> SystemMessage; a model content -> one AIMessage (its text
parts joined, each ``functionCall`` a tool call; a call without an id gets
``<run>-call<i>.<j>``); a user content -> a ToolMessage per ``functionResponse`` (answering the
call with its id, else the earliest unanswered call of its name; the result is
``response.output``, else ``response.error``, else the response as JSON) and a HumanMessage for
its text.  Thought parts are not sent back by Gemini CLI and are left out (counted,
``metadata["thought_parts"]``); media and code parts, which have no text, are left out with a
warning naming how many.  ``tools`` of a request body are kept.

Errors: ``key [i].role`` (or ``contents[i].role``) for a content that is not ``{role, parts}``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect, join_key, need
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, stripped_head, tool_call, warn
from ctxlab.transcripts.base import Transcript

_START = re.compile(r'\A\[\s*\{\s*"(role|parts)"\s*:')


def is_contents(data: Any) -> bool:
    """A non-empty list of ``{role: user|model, parts: [...]}`` objects."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(c, dict) and c.get("role") in ("user", "model") and isinstance(c.get("parts"), list)
            for c in data
        )
    )


def _text(parts: list[Any]) -> str:
    return "\n".join(
        p["text"]
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    )


def _result(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


class GeminiContentsFormat(JsonFormat):
    name = "gemini_contents"
    description = (
        "Gemini API contents list ({role: user|model, parts}): /chat save checkpoints, request bodies"
    )

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_START.match(h)) and '"parts"' in h[:4096]

    def match_json(self, data: Any) -> bool:
        return is_contents(data) or (isinstance(data, dict) and is_contents(data.get("contents")))

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        b = MessageBuilder(path.name)
        skipped: Counter[str] = Counter()
        tools: list[dict[str, Any]] = []
        where = ""
        if isinstance(data, dict):
            system = data.get("systemInstruction") or data.get("system_instruction")
            if isinstance(system, dict) and _text(system.get("parts") or []):
                b.system(_text(system.get("parts") or []))
            tools = [t for t in data.get("tools") or [] if isinstance(t, dict)]
            data, where = need(path, data, "contents", list, ""), "contents"
        for i, content in enumerate(expect(path, data, list, "(top level)")):
            at = join_key(where, i)
            role = need(path, expect(path, content, dict, at), "role", str, at)
            parts = need(path, content, "parts", list, at)
            for p in parts:
                if isinstance(p, dict) and p.get("thought"):
                    skipped["thought"] += 1
                elif not isinstance(p, dict) or not ({"text", "functionCall", "functionResponse"} & p.keys()):
                    skipped[next(iter(p), "?") if isinstance(p, dict) and p else "empty"] += 1
            if role == "model":
                calls = [
                    tool_call(fc.get("name"), fc.get("args"), fc.get("id") or f"{b.run_id}-call{i}.{j}")
                    for j, p in enumerate(parts)
                    if isinstance(p, dict) and isinstance(fc := p.get("functionCall"), dict)
                ]
                b.ai(_text(parts), calls)
                continue
            for p in parts:
                fr = p.get("functionResponse") if isinstance(p, dict) else None
                if isinstance(fr, dict):  # answers its id, else the earliest pending call of its name
                    call_id = fr.get("id") or next((c for c, n in b.pending if n == fr.get("name")), None)
                    b.tool(_result(fr.get("response")), call_id, fr.get("name"))
            if _text(parts):
                b.human(_text(parts))
        meta: dict[str, Any] = {"thought_parts": skipped.pop("thought", 0)}
        if skipped:
            what = ", ".join(f"{n} {k}" for k, n in skipped.items())
            warn(path, f"left out {sum(skipped.values())} part(s) without text ({what})", meta)
        return [b.transcript(path, self.name, tools=tools, metadata=meta)]


FORMAT = GeminiContentsFormat()
