"""ShareGPT-style rows with function calls (``sharegpt``; SOURCES.md format **F20**).

Shape (the layout LLaMA-Factory and many Hugging Face SFT / agent datasets use): a JSON list of
rows ``{conversations: [{from, value}], tools?, system?}`` (``messages`` is accepted for
``conversations``); ``from`` is ``system``, ``human``/``user``, ``gpt``/``assistant``,
``function_call`` (``value`` a JSON ``{name, arguments}``, or a list of them for parallel calls)
or ``observation`` (a tool result); ``tools`` is a JSON string (or list) of function schemas.
The same rows as JSON lines (one row per line) load too.

Conversion: each row -> one run (``run_id`` ``row<i>``); ``system`` (the row's key or a turn) ->
SystemMessage, ``human`` -> HumanMessage, ``gpt`` -> AIMessage, a ``function_call`` turn -> an
AIMessage with those calls (ids ``<run_id>-call<k>`` are made up: the rows have none), an
``observation`` -> ToolMessage answering the earliest unanswered call (its name taken from
it).  ``tools`` are kept as ``Transcript.tools`` (parsed when a JSON string; a string that is
not JSON is kept in ``metadata["tools_text"]``).

Errors: ``key [i].conversations[j]`` for a bad turn; ``key [i].conversations[j].from`` for an
unknown speaker; ``key [i].conversations[j].value`` for a ``function_call`` that is not JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect, join_key, need, objects
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, stripped_head, tool_call
from ctxlab.transcripts.base import Transcript, TranscriptError

SPEAKERS = frozenset({"system", "human", "user", "gpt", "assistant", "function_call", "observation"})
_START = re.compile(r'\A\[\s*\{\s*"(conversations|messages|tools|system)"\s*:')


def _turns(row: Any) -> Any:
    return row.get("conversations", row.get("messages")) if isinstance(row, dict) else None


def is_rows(data: Any) -> bool:
    """A non-empty list of ``{conversations: [{from, value}]}`` rows whose speakers are ShareGPT's."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(t := _turns(r), list)
            and bool(t)
            and all(isinstance(x, dict) and x.get("from") in SPEAKERS and "value" in x for x in t)
            for r in data
        )
    )


def _tools(raw: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(raw, str) and raw.strip():
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            meta["tools_text"] = raw
            return []
    return [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []


def row_run(path: Path, row: Any, at: str, run_id: str, fmt: str) -> Transcript:
    """One row as a run (see the module docstring)."""
    expect(path, row, dict, at)
    key = "conversations" if "conversations" in row else "messages"
    turns = need(path, row, key, list, at)
    b = MessageBuilder(run_id)
    meta: dict[str, Any] = {}
    if isinstance(row.get("system"), str) and row["system"]:
        b.system(row["system"])
    made = 0
    for t_at, turn in objects(path, turns, join_key(at, key)):
        who, value = turn.get("from"), turn.get("value")
        if who == "system":
            b.system(value)
        elif who in ("human", "user"):
            b.human(value)
        elif who in ("gpt", "assistant"):
            b.ai(value)
        elif who == "function_call":
            try:
                parsed = json.loads(value) if isinstance(value, str) else value
            except json.JSONDecodeError as exc:
                raise TranscriptError(
                    path, f"key {join_key(t_at, 'value')}", f"function_call is not JSON: {exc.msg}"
                ) from exc
            calls = []
            for fc in parsed if isinstance(parsed, list) else [parsed]:
                if not isinstance(fc, dict):
                    raise TranscriptError(
                        path, f"key {join_key(t_at, 'value')}", "expected {name, arguments}"
                    )
                calls.append(tool_call(fc.get("name"), fc.get("arguments"), f"{run_id}-call{made}"))
                made += 1
            b.ai("", calls)
        elif who == "observation":
            call_id = b.pending[0][0] if b.pending else None
            b.tool(value, call_id)
        else:
            raise TranscriptError(path, f"key {join_key(t_at, 'from')}", f"unknown speaker {who!r}")
    tools = _tools(row.get("tools"), meta)
    return b.transcript(path, fmt, tools=tools, metadata=meta)


class ShareGptFormat(JsonFormat):
    name = "sharegpt"
    description = (
        "ShareGPT rows {conversations: [{from, value}], tools} with function_call/observation turns (F20)"
    )

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_START.match(h)) and '"from"' in h[:8192] and '"value"' in h[:8192]

    def match_json(self, data: Any) -> bool:
        return is_rows(data)

    def match_line(self, obj: Any) -> bool:
        return is_rows([obj])

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        rows = expect(path, data, list, "(top level)")
        return [row_run(path, row, join_key("", i), f"row{i}", self.name) for i, row in enumerate(rows)]

    def load(self, path: Path) -> list[Transcript]:
        from ctxlab.transcripts._util import iter_jsonl, parse_json, read_text

        path = Path(path)
        text = read_text(path)
        if text.lstrip().startswith("["):
            return self.load_json(parse_json(path, text), path)
        return [
            row_run(path, row, f"line {n}", f"row{n - 1}", self.name) for n, row in iter_jsonl(path, text)
        ]


FORMAT = ShareGptFormat()
