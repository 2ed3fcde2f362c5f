"""Anthropic Messages API message lists (``anthropic_messages``).

Shape: a JSON list ``[{role: "user"|"assistant", content}, ...]`` where ``content`` is a string or
a list of blocks: ``text``, ``image``/``document`` (``source``), ``thinking``/``redacted_thinking``,
``tool_use{id, name, input}`` (assistant) and ``tool_result{tool_use_id, content, is_error}``
(user).  Cline and Roo Code store their ``api_conversation_history.json`` like this (with extra
per-message keys such as ``ts`` and ``modelInfo``, kept out of the messages), and so do logs of
Anthropic SDK requests.  Also accepted (shape fallback): a request body ``{model, system,
messages, tools}`` -- ``system`` (a string or text blocks) becomes the SystemMessage and ``tools``
(``{name, description, input_schema}``) ``Transcript.tools``.

Conversion (as Claude Code's, F7): an assistant message -> one AIMessage (its ``tool_use`` blocks
as tool calls, the other blocks as content: one text block becomes a string); a user message with
string content -> HumanMessage; with blocks, each ``tool_result`` -> ToolMessage (``status="error"``
for ``is_error``) and each run of other blocks -> one HumanMessage, in order.

Cline and Roo Code write tool results as **user text blocks** instead: a block starting
``[<tool> for '<arg>'] Result:`` (or ``[<tool>] Result:``, :data:`CLINE_RESULT`) followed by the
result's blocks, up to the next such header or the ``<environment_details>`` block Cline appends.
Each such group answers the earliest unanswered ``tool_use`` call (of that tool name when one is
pending, else the earliest) as a ToolMessage (header included: the model saw it); with no call
pending (Cline's XML tool calls in assistant text) it is a text observation.

Before this loader such a file loaded as OpenAI chat with no tool calls: ``openai_chat`` no longer
claims a list holding ``tool_use``/``tool_result`` blocks.

Errors: ``key [i]`` not an object, ``key [i].role`` missing or unknown, ``key [i].content[j]`` not
a block.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import (
    all_tagged,
    expect,
    join_key,
    need,
    objects,
    request_messages,
    str_field,
)
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, stripped_head, tool_call
from ctxlab.transcripts.base import Transcript, TranscriptError

#: content block types only the Anthropic format has
ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"})
_MARK = re.compile(r'"type"\s*:\s*"(tool_use|tool_result|thinking|redacted_thinking)"')
_START = re.compile(r'\A\[\s*\{\s*"(role|content)"\s*:')
#: the header of a Cline / Roo Code tool result written as a user text block
#: (``[read_file for 'src/a.ts'] Result:``, ``[attempt_completion] Result:``)
CLINE_RESULT = re.compile(r"\A\[(?P<tool>[A-Za-z0-9_.:-]+)(?: for '(?P<arg>.*?)')?\] Result:", re.S)
_ENV_DETAILS = "<environment_details>"


def _has_anthropic_block(msg: dict[str, Any]) -> bool:
    content = msg.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict)
        and (
            b.get("type") in ANTHROPIC_BLOCKS
            or (b.get("type") in ("image", "document") and isinstance(b.get("source"), dict))
        )
        for b in content
    )


def is_anthropic_list(data: Any) -> bool:
    """A non-empty list of ``{role: user|assistant|system, content}`` objects with no OpenAI-only
    keys (``tool_calls``, roles ``tool``/``function``) and at least one Anthropic-only block."""
    if not isinstance(data, list) or not data:
        return False
    if not all_tagged(data, "role", ("user", "assistant", "system")):
        return False
    if any("tool_calls" in m or "function_call" in m or "tool_call_id" in m for m in data):
        return False
    return any(_has_anthropic_block(m) for m in data)


def _is_request(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return False
    tools = data.get("tools")
    anthropic_tools = isinstance(tools, list) and any(
        isinstance(t, dict) and "input_schema" in t for t in tools
    )
    return is_anthropic_list(data["messages"]) or (
        ("system" in data or anthropic_tools)
        and all_tagged(data["messages"], "role", ("user", "assistant"))
        and bool(data["messages"])
    )


def _blocks(path: Path, content: Any, at: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    where = join_key(at, "content")
    return [block for _, block in objects(path, expect(path, content, list, where), where)]


def add_anthropic_messages(
    path: Path,
    builder: MessageBuilder,
    messages: list[Any],
    where: str,
    spans: list[tuple[int, int]] | None = None,
) -> None:
    """Append Anthropic Messages API messages to ``builder`` (see the module docstring).

    ``where`` names the list for error places (``""`` for a top-level list); ``spans``, when
    given, receives for each message of the list the ``(start, end)`` of the builder messages it
    became (a Cline task maps its history indices to them, :mod:`ctxlab.transcripts.cline`).

    Raises:
        TranscriptError: at ``key <where>[i]...`` for a message or block that is not an object, or
            a missing or unknown role.
    """
    starts: list[int] = []
    for at, msg in objects(path, messages, where):
        starts.append(len(builder.messages))
        role = need(path, msg, "role", str, at)
        content = msg.get("content")
        if role == "system":
            builder.system(content)
        elif role == "assistant":
            calls = []
            kept = []
            for block in _blocks(path, content, at):
                if block.get("type") == "tool_use":
                    calls.append(tool_call(block.get("name"), block.get("input"), block.get("id")))
                else:
                    kept.append(block)
            builder.ai(kept, calls)
        elif role == "user":
            if isinstance(content, str):
                builder.human(content)
                continue
            pending: list[dict[str, Any]] = []
            result: list[dict[str, Any]] | None = None  # an open Cline/Roo text result
            for block in _blocks(path, content, at):
                if block.get("type") == "tool_result":
                    _flush_text(builder, pending, result)
                    pending, result = [], None
                    builder.tool(
                        block.get("content"), block.get("tool_use_id"), error=bool(block.get("is_error"))
                    )
                elif _cline_header(block) is not None:
                    _flush_text(builder, pending, result)
                    pending, result = [], [block]
                elif result is not None and not _text_of(block).startswith(_ENV_DETAILS):
                    result.append(block)
                else:
                    if result is not None:
                        _flush_text(builder, [], result)
                        result = None
                    pending.append(block)
            _flush_text(builder, pending, result)
        else:
            raise TranscriptError(path, f"key {join_key(at, 'role')}", f"unknown role {role!r}")
    if spans is not None:
        spans.extend(zip(starts, [*starts[1:], len(builder.messages)], strict=True))


def _text_of(block: dict[str, Any]) -> str:
    text = block.get("text") if block.get("type") == "text" else None
    return text.lstrip() if isinstance(text, str) else ""


def _cline_header(block: dict[str, Any]) -> re.Match[str] | None:
    return CLINE_RESULT.match(_text_of(block))


def _flush_text(
    builder: MessageBuilder, pending: list[dict[str, Any]], result: list[dict[str, Any]] | None
) -> None:
    """Add the user text blocks collected so far: ``pending`` as one HumanMessage, then the open
    Cline/Roo ``result`` group as the ToolMessage of a pending call (its tool's name first) or,
    with none pending, a text observation."""
    if pending:
        builder.human(pending)
    if not result:
        return
    header = _cline_header(result[0])
    tool = header.group("tool") if header else None
    match = next((cid for cid, name in builder.pending if name == tool), None)
    call_id = match or (builder.pending[0][0] if builder.pending else None)
    if call_id is None:
        builder.human(result, observation=True)
    else:
        builder.tool(result, call_id)


def anthropic_tools(tools: Any) -> list[dict[str, Any]]:
    """Anthropic tool definitions kept as provider dicts (only the dict entries of a list)."""
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def _last_model_id(messages: list[dict[str, Any]]) -> str | None:
    """The last ``modelInfo.modelId`` of a bare list's messages (Cline/Roo record one per
    assistant message), ``None`` when none has one."""
    models = [
        m["modelInfo"]["modelId"]
        for m in messages
        if isinstance(m.get("modelInfo"), dict) and isinstance(m["modelInfo"].get("modelId"), str)
    ]
    return models[-1] if models else None


class AnthropicMessagesFormat(JsonFormat):
    name = "anthropic_messages"
    description = (
        "Anthropic Messages API list (Cline/Roo api_conversation_history.json): tool_use/tool_result"
    )

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_START.match(h)) and bool(_MARK.search(h))

    def match_json(self, data: Any) -> bool:
        return is_anthropic_list(data) or _is_request(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        messages, where, request = request_messages(path, data, "messages")
        b = MessageBuilder(path.name)
        if request.get("system"):
            b.system(request["system"])
        add_anthropic_messages(path, b, messages, where)
        model = str_field(request, "model") if request else _last_model_id(messages)
        return [b.transcript(path, self.name, model=model, tools=anthropic_tools(request.get("tools")))]


FORMAT = AnthropicMessagesFormat()
