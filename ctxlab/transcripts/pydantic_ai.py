"""PydanticAI message histories (``pydantic_ai``): ``ModelMessagesTypeAdapter.dump_json(
result.all_messages())`` (https://ai.pydantic.dev/message-history/, MIT).

Shape: a JSON list of messages, each ``{kind: "request", parts, instructions?}`` or ``{kind:
"response", parts, usage, model_name, timestamp, provider_name?}``.  Request parts
(``part_kind``): ``system-prompt{content}``, ``user-prompt{content}`` (a string or a list of
strings and media), ``tool-return{tool_name, content, tool_call_id}``, ``retry-prompt{content,
tool_name?, tool_call_id}``; response parts: ``text{content}``, ``tool-call{tool_name, args,
tool_call_id}`` (``args`` a dict or a JSON string), ``thinking{content}``, ``builtin-tool-call``
/ ``builtin-tool-return``.  ``usage`` is ``{input_tokens, output_tokens, cache_read_tokens,
cache_write_tokens, ...}`` (``request_tokens``/``response_tokens`` before version 0.7).

Conversion: a request's ``instructions`` and system prompts -> SystemMessage (the first
request's only: later ones repeat them); user prompts -> HumanMessage; a tool return -> a
ToolMessage of its call; a retry prompt with a ``tool_name`` -> an error ToolMessage of its call
(PydanticAI sends it as the call's result), without one -> HumanMessage; a response -> one
AIMessage (text parts joined, thinking parts as ``additional_kwargs["reasoning"]``, tool calls)
with its usage (``input_tokens`` includes the cached tokens, as PydanticAI counts them).  Parts
of an unknown kind are left out with a warning naming them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect, join_key, need
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    stripped_head,
    tool_call,
    usage_metadata,
    warn,
)
from ctxlab.transcripts.base import Transcript

_START = re.compile(r'\A\[\s*\{\s*"(parts|kind|instructions)"\s*:')
_KINDS = ("request", "response")


def is_history(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(m, dict) and m.get("kind") in _KINDS and isinstance(m.get("parts"), list) for m in data
        )
        and any(isinstance(p, dict) and "part_kind" in p for m in data for p in m["parts"])
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c for c in content if isinstance(c, str))
    return json.dumps(content, ensure_ascii=False)


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    return usage_metadata(
        raw.get("input_tokens", raw.get("request_tokens")),
        raw.get("output_tokens", raw.get("response_tokens")),
        cache_read=raw.get("cache_read_tokens"),
        cache_creation=raw.get("cache_write_tokens"),
    )


class PydanticAIFormat(JsonFormat):
    name = "pydantic_ai"
    description = "PydanticAI message history (ModelMessagesTypeAdapter JSON: requests and responses)"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_START.match(h)) and '"part_kind"' in h

    def match_json(self, data: Any) -> bool:
        return is_history(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        b = MessageBuilder(path.name)
        unknown: Counter[str] = Counter()
        models: Counter[str] = Counter()
        for i, msg in enumerate(expect(path, data, list, "(top level)")):
            at = join_key("", i)
            kind = need(path, expect(path, msg, dict, at), "kind", str, at)
            parts = need(path, msg, "parts", list, at)
            if kind == "response":
                texts, reasoning, calls = [], [], []
                for j, p in enumerate(parts):
                    pk = p.get("part_kind") if isinstance(p, dict) else None
                    if pk == "text":
                        texts.append(str(p.get("content") or ""))
                    elif pk == "thinking":
                        reasoning.append(str(p.get("content") or ""))
                    elif pk == "tool-call":
                        calls.append(
                            tool_call(
                                p.get("tool_name"),
                                p.get("args"),
                                p.get("tool_call_id") or f"{b.run_id}-call{i}.{j}",
                            )
                        )
                    else:
                        unknown[str(pk)] += 1
                if isinstance(msg.get("model_name"), str):
                    models[msg["model_name"]] += 1
                extra: dict[str, Any] = {"reasoning": "\n".join(reasoning)} if reasoning else {}
                b.ai("\n".join(texts), calls, usage=_usage(msg.get("usage")), **extra)
                continue
            if i == 0 and isinstance(msg.get("instructions"), str) and msg["instructions"]:
                b.system(msg["instructions"])
            for p in parts:
                pk = p.get("part_kind") if isinstance(p, dict) else None
                if pk == "system-prompt":
                    if not any(m.type == "system" for m in b.messages):
                        b.system(_text(p.get("content")))
                elif pk == "user-prompt":
                    b.human(_text(p.get("content")))
                elif pk == "tool-return":
                    b.tool(_text(p.get("content")), p.get("tool_call_id"), p.get("tool_name"))
                elif pk == "retry-prompt" and p.get("tool_name"):
                    b.tool(_text(p.get("content")), p.get("tool_call_id"), p.get("tool_name"), error=True)
                elif pk == "retry-prompt":
                    b.human(_text(p.get("content")))
                else:
                    unknown[str(pk)] += 1
        meta: dict[str, Any] = {}
        if unknown:
            warn(path, f"left out {sum(unknown.values())} part(s) of unknown kinds: {dict(unknown)}", meta)
        model = models.most_common(1)[0][0] if models else None
        return [b.transcript(path, self.name, model=model, metadata=meta)]


FORMAT = PydanticAIFormat()
