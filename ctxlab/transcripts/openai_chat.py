"""OpenAI chat-completions message lists (SOURCES.md format **F4**).

Shape: a JSON list of messages ``{role, content, ...}`` with ``role`` in
``system``/``developer``/``user``/``assistant``/``tool`` (and the older ``function``);
``assistant.tool_calls = [{id, type: "function", function{name, arguments: <JSON string>}}]``;
``tool`` messages have ``tool_call_id``, ``name`` and ``content`` (a string or a list of
``{type: "text", text}``).  The older form -- ``assistant.function_call{name, arguments}`` answered
by a ``role: "function"`` message with ``name`` -- has no ids: the pair gets a made-up id
``fc-<index of the call message>`` (the result answers the latest unanswered call of that name).

Also accepted (fallback on the parsed shape only): a request body ``{"messages": [...], "model",
"tools"}``.

Detection: the head is claimed only when it is the whole file and holds no Anthropic block
(``tool_use``, ``tool_result``, ...); otherwise the parsed shape decides, where
``anthropic_messages`` and ``openai_responses`` are asked first (a plain text-only chat list is
the same in every style and loads here).

Errors: ``key [i].role`` missing/unknown, ``key [i]`` not an object.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import all_tagged, expect, str_field
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    add_openai_messages,
    head_is_cut,
    openai_tools,
    stripped_head,
)
from ctxlab.transcripts.base import Transcript

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_FIRST_KEY = re.compile(r'\A\[\s*\{\s*"(role|content|tool_calls|tool_call_id|name|function_call)"\s*:')
_OTHER_STYLE = re.compile(
    r'"type"\s*:\s*"(tool_use|tool_result|thinking|redacted_thinking|input_text|output_text|function_call)"'
)


def is_message_list(data: Any) -> bool:
    """A non-empty list whose items are all objects with a known ``role``."""
    return isinstance(data, list) and bool(data) and all_tagged(data, "role", ROLES)


class OpenAIChatFormat(JsonFormat):
    name = "openai_chat"
    description = "OpenAI chat message list (F4), incl. legacy function_call/function messages"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_FIRST_KEY.match(h)) and not head_is_cut(head) and not _OTHER_STYLE.search(h)

    def match_json(self, data: Any) -> bool:
        return is_message_list(data) or (isinstance(data, dict) and is_message_list(data.get("messages")))

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        b = MessageBuilder(path.name)
        model = None
        tools: list[dict[str, Any]] = []
        if isinstance(data, dict):
            messages = expect(path, data.get("messages"), list, "messages")
            add_openai_messages(path, b, messages, "messages")
            model = str_field(data, "model")
            tools = openai_tools(data.get("tools"))
        else:
            expect(path, data, list, "(top level)")
            add_openai_messages(path, b, data, "")
        return [b.transcript(path, self.name, model=model, tools=tools)]


FORMAT = OpenAIChatFormat()
