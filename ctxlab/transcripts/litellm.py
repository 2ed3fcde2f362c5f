"""LiteLLM completion logs (SOURCES.md format **F5**), one JSON object per LLM call.

Shape: ``{messages, tools, kwargs, context_window, response, cost, timestamp, latency_sec}``;
``messages`` is the full prompt of that call in the F4 schema (content as lists of
``{type, text}``), ``tools`` JSON-schema tool definitions, ``response`` a raw ``chat.completion``
(``choices[0].message`` with ``content``/``tool_calls``, ``usage``, ``model``).

Conversion: the prompt messages, then the response message appended as the final AIMessage (so
a log of the last call holds the whole run).  The response's tool calls have no results in the
file: they stay calls without ToolMessages.  ``tools`` -> ``Transcript.tools``; the model is the
response's ``model`` (else ``kwargs.model``).  The response's ``usage`` (the provider's counts of
this call: ``prompt_tokens``, ``completion_tokens``, cached and reasoning details) is the final
AIMessage's ``usage_metadata``.

**Prompt-based (text-mode) function calling** -- the log also has ``raw_messages`` (the
structured conversation before it was turned into text) and/or ``raw_response`` (the model's
text before it was parsed back into tool calls), as the OpenHands SDK writes for models without
native tools.  Then ``messages`` is what the model was sent -- tool descriptions inside the system
prompt, results as user text ``EXECUTION RESULT of [<tool>]:`` -- and the final AIMessage is
``raw_response``'s text (``<function=...>``), not the structured ``response``, so the two views are
never mixed.  The tool schemas are part of the system prompt there: ``Transcript.tools`` stays
empty (their names are in ``metadata["prompt_tools"]``) so they are not counted twice.  User
messages after the first assistant message that start with ``EXECUTION RESULT of [`` are marked
as text observations; ``metadata["function_calling"]`` is ``"prompt"`` (else ``"native"``).

Errors: ``key messages`` missing, ``key messages[i].role``, ``key response.choices`` ...
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._checks import as_dict, expect, need, top_key
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    add_openai_messages,
    openai_tools,
    stripped_head,
    usage_metadata,
)
from ctxlab.transcripts.base import Transcript

_MESSAGES_FIRST = re.compile(r'\A\{\s*"messages"\s*:\s*\[')
#: how prompt-based function calling returns a tool result (OpenHands SDK, text mode)
TEXT_RESULT = re.compile(r"EXECUTION RESULT of \[")
_LOG_KEYS = ('"context_window"', '"latency_sec"', '"kwargs"')


class LiteLLMLogFormat(JsonFormat):
    name = "litellm_log"
    description = "LiteLLM completion log (F5): prompt messages + response of one call"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        if not _MESSAGES_FIRST.match(h):
            return False
        return path.parent.name == "llm-logs" or ('"response"' in h and any(k in h for k in _LOG_KEYS))

    def match_json(self, data: Any) -> bool:
        return (
            isinstance(data, dict)
            and isinstance(data.get("messages"), list)
            and isinstance(data.get("response"), dict)
            and "choices" in data["response"]
        )

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        messages = top_key(path, data, "messages", list)
        text_mode = "raw_messages" in data or isinstance(data.get("raw_response"), dict)
        b = MessageBuilder(path.name)
        add_openai_messages(
            path, b, messages, "messages", text_observations=TEXT_RESULT if text_mode else None
        )
        key = "raw_response" if isinstance(data.get("raw_response"), dict) else "response"
        response = as_dict(data.get(key))
        choices = response.get("choices") or []
        expect(path, choices, list, f"{key}.choices")
        if choices:
            choice = expect(path, choices[0], dict, f"{key}.choices[0]")
            msg = need(path, choice, "message", dict, f"{key}.choices[0]")
            where = f"{key}.choices[0].message"
            add_openai_messages(path, b, [{**msg, "role": "assistant"}], where, single=True)
            b.messages[-1].response_metadata["finish_reason"] = choice.get("finish_reason")
            usage = as_dict(as_dict(data.get("response")).get("usage") or response.get("usage"))
            answer = b.messages[-1]
            if usage and isinstance(answer, AIMessage):
                details = as_dict(usage.get("prompt_tokens_details"))
                answer.usage_metadata = usage_metadata(  # type: ignore[assignment]
                    usage.get("prompt_tokens"),
                    usage.get("completion_tokens"),
                    cache_read=details.get("cached_tokens"),
                    reasoning=as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens"),
                )
        kwargs = as_dict(data.get("kwargs"))
        model = response.get("model") or kwargs.get("model")
        structured = as_dict(data.get("response"))
        meta: dict[str, Any] = {
            "cost": data.get("cost"),
            "timestamp": data.get("timestamp"),
            "latency_sec": data.get("latency_sec"),
            "context_window": data.get("context_window"),
            "usage": structured.get("usage") or response.get("usage"),
            "prompt_messages": len(messages),
            "function_calling": "prompt" if text_mode else "native",
        }
        tools = openai_tools(data.get("tools")) or openai_tools(kwargs.get("tools"))
        if text_mode:
            meta["prompt_tools"] = [(t.get("function") or t).get("name") for t in tools]
            if isinstance(data.get("raw_messages"), list):
                meta["structured_messages"] = len(data["raw_messages"])
            tools = []
        return [b.transcript(path, self.name, model=model, tools=tools, metadata=meta)]


FORMAT = LiteLLMLogFormat()
