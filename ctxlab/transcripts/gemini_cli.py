"""Gemini CLI session files (``gemini_cli``): ``~/.gemini/tmp/<project hash>/chats/session-*.json``.

Shape: one JSON object ``{sessionId, projectHash, startTime, lastUpdated, messages}``; each message
has ``id``, ``timestamp``, ``type`` and ``content`` (a string, or Gemini ``parts`` ``[{text}]``):

* ``type: "user"`` -- what the user typed;
* ``type: "gemini"`` -- a model reply: ``content`` (its text), ``thoughts`` (``[{subject,
  description, timestamp}]`` thinking summaries), ``tokens`` (``input``/``output``/``cached``/
  ``thoughts``/``tool``/``total``), ``model`` and ``toolCalls``: ``[{id, name, args, result, status,
  timestamp, resultDisplay, displayName, ...}]`` where ``result`` is the Gemini ``parts`` sent back
  (``[{functionResponse{id, name, response{output | error}}}]``);
* ``info``/``error``/``warning`` -- UI notices, not sent to the model (counted in
  ``metadata["skipped_messages"]``).

The CLI appends the calls of follow-up responses that have no text to the same ``gemini`` record,
so one record can hold several model calls.  Calls recorded together share their ``timestamp``:
each run of calls with one timestamp is one model response.

Conversion: ``user`` -> HumanMessage; a ``gemini`` record -> one AIMessage per response (the text,
``thoughts`` in ``additional_kwargs["thoughts"]`` and ``tokens`` in ``response_metadata["usage"]``
and as ``usage_metadata`` (``input``; output = ``output`` + ``thoughts``, as
langchain-google-genai counts; ``cached`` as cache reads, ``thoughts`` as reasoning) on the first; each with its calls), every call's result -> ToolMessage right after its response
(``response.output`` as text, else ``response.error`` with ``status="error"``, else the response
as JSON; extra parts such as ``inlineData`` kept as blocks).  A call without ``result`` stays
unanswered and is counted in ``metadata["calls_without_result"]``.  The model is the most frequent
``model``.

Errors: ``key messages[i]`` not an object, ``key messages[i].toolCalls[j]`` not an object.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import all_tagged, objects, optional_objects, top_key
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, stripped_head, tool_call, usage_metadata
from ctxlab.transcripts.base import Transcript

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_SESSION_KEYS = re.compile(r'"(sessionId|projectHash)"\s*:')


def _text(content: Any) -> Any:
    """Gemini parts ``[{text}]`` as text blocks; a string stays."""
    if isinstance(content, list):
        return [
            {"type": "text", "text": p["text"]} if isinstance(p, dict) and "text" in p else p for p in content
        ]
    return content


def _result(parts: list[Any]) -> tuple[Any, bool]:
    """``(content, is_error)`` of a call's result parts."""
    blocks: list[Any] = []
    error = False
    for part in parts:
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(fr, dict):
            blocks.append(_text([part])[0])
            continue
        response = fr.get("response")
        if isinstance(response, dict) and isinstance(response.get("output"), str):
            text = response["output"]
        elif isinstance(response, dict) and "error" in response:
            error = True
            err = response["error"]
            text = err if isinstance(err, str) else json.dumps(err, ensure_ascii=False)
        else:
            text = json.dumps(response, ensure_ascii=False)
        blocks.append({"type": "text", "text": text})
    return blocks, error


def _responses(calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: list[list[dict[str, Any]]] = []
    for call in calls:
        if groups and call.get("timestamp") == groups[-1][-1].get("timestamp"):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups or [[]]


def is_session(data: Any) -> bool:
    """``{sessionId, messages: [{type: user|gemini|...}]}``."""
    msgs = data.get("messages") if isinstance(data, dict) else None
    return (
        isinstance(data, dict)
        and "sessionId" in data
        and isinstance(msgs, list)
        and all_tagged(msgs, "type", MESSAGE_TYPES)
    )


class GeminiCliFormat(JsonFormat):
    name = "gemini_cli"
    description = "Gemini CLI session JSON: user/gemini messages, toolCalls with functionResponse results"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return h.startswith("{") and len(set(_SESSION_KEYS.findall(h[:4096]))) == 2 and '"messages"' in h

    def match_json(self, data: Any) -> bool:
        return is_session(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        messages = top_key(path, data, "messages", list)
        b = MessageBuilder(path.name)
        skipped: Counter[str] = Counter()
        models: Counter[str] = Counter()
        missing = 0
        for at, msg in objects(path, messages, "messages"):
            kind = msg.get("type")
            if kind == "user":
                b.human(_text(msg.get("content")))
                continue
            if kind != "gemini":
                skipped[str(kind)] += 1
                continue
            if isinstance(msg.get("model"), str):
                models[msg["model"]] += 1
            raw_calls = [call for _, call in optional_objects(path, msg, "toolCalls", at)]
            for k, group in enumerate(_responses(raw_calls)):
                usage = None
                extra: dict[str, Any] = {}
                meta: dict[str, Any] = {}
                if k == 0:
                    if msg.get("thoughts"):
                        extra["thoughts"] = msg["thoughts"]
                    if isinstance(msg.get("tokens"), dict):
                        meta["usage"] = msg["tokens"]
                        tok = msg["tokens"]
                        thoughts = tok.get("thoughts") if isinstance(tok.get("thoughts"), int) else 0
                        output = tok.get("output")
                        usage = usage_metadata(  # output with the thoughts, as langchain-google-genai counts
                            tok.get("input"),
                            output + thoughts if isinstance(output, int) else None,
                            cache_read=tok.get("cached"),
                            reasoning=tok.get("thoughts"),
                        )
                content = _text(msg.get("content")) if k == 0 else ""
                calls = [tool_call(c.get("name"), c.get("args"), c.get("id")) for c in group]
                b.ai(content, calls, response_metadata=meta, usage=usage, **extra)
                for c in group:
                    if not isinstance(c.get("result"), list) or not c["result"]:
                        missing += 1
                        continue
                    content_r, error = _result(c["result"])
                    b.tool(content_r, c.get("id"), c.get("name"), error=error or c.get("status") == "error")
        meta_t = {
            "session_id": data.get("sessionId"),
            "project_hash": data.get("projectHash"),
            "start_time": data.get("startTime"),
            "last_updated": data.get("lastUpdated"),
            "skipped_messages": dict(skipped),
            "calls_without_result": missing,
        }
        model = models.most_common(1)[0][0] if models else None
        return [b.transcript(path, self.name, model=model, metadata=meta_t)]


FORMAT = GeminiCliFormat()
