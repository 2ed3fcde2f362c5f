"""OpenAI Responses API item lists (``openai_responses``), and the item conversion Codex uses.

Shape: a JSON list of Responses *items* -- what the API takes as ``input`` and returns as
``output``: ``message`` (``role`` user/system/developer/assistant, ``content`` a string or parts
``input_text``/``output_text``/``input_image``/``refusal``; the ``type`` may be left out),
``reasoning`` (``summary: [{type: summary_text, text}]``, optional ``content``, opaque
``encrypted_content``), tool calls ``function_call{call_id, name, arguments: <JSON string>}``,
``custom_tool_call{call_id, name, input}``, ``local_shell_call{call_id, action}``,
``computer_call{call_id, action}`` and their results ``function_call_output{call_id, output}``
(likewise ``custom_tool_call_output`` ...), and server-side tool items (``web_search_call`` ...).
Also accepted (shape fallback): a request body ``{model, instructions, input: [...], tools}``.

Conversion (:func:`add_response_items`): user messages -> HumanMessage, system/developer ->
SystemMessage, and every run of model output items between two inputs -> **one** AIMessage (one
model response): assistant text and reasoning summaries (``{"type": "reasoning", "reasoning":
text}`` blocks; the encrypted part is only counted, in ``metadata["encrypted_reasoning_items"]``)
as content, the calls as tool calls (``arguments`` parsed; a custom tool's free text as
``{"input": text}``; a shell/computer ``action`` as the arguments), server-side tool items kept as
content blocks.  Each ``*_output`` -> ToolMessage answering the call with its ``call_id``.  Items of
other types (``item_reference``, Codex's ``ghost_snapshot`` ...) are counted in
``metadata["skipped_items"]``.

Errors: ``key [i]`` not an object, ``key [i].role`` missing on a message.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import join_key, need, objects, request_messages, str_field
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, openai_tools, stripped_head, tool_call
from ctxlab.transcripts.base import Transcript, TranscriptError

CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "computer_call"})
OUTPUT_ITEMS = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "computer_call_output"}
)
SERVER_ITEMS = frozenset(
    {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call"}
)
ITEM_TYPES = CALL_ITEMS | OUTPUT_ITEMS | SERVER_ITEMS | {"message", "reasoning", "item_reference"}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
_START = re.compile(r'\A\[\s*\{\s*"(type|role|id|call_id|content|status|summary)"\s*:')
_MARK = re.compile(r'"type"\s*:\s*"(function_call|function_call_output|reasoning|input_text|output_text)"')


def _part(part: Any) -> Any:
    if isinstance(part, dict):
        kind = part.get("type")
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            return {"type": "text", "text": part["text"]}
        if kind == "refusal" and isinstance(part.get("refusal"), str):
            return {"type": "text", "text": part["refusal"]}
        if kind == "input_image" and isinstance(part.get("image_url"), str):
            return {"type": "image_url", "image_url": {"url": part["image_url"]}}
    return part


def parts(content: Any) -> Any:
    """Responses content (a string or a list of parts) as LangChain content: text parts become
    ``{"type": "text"}`` blocks, images ``image_url`` blocks, anything else stays as it is."""
    return [_part(p) for p in content] if isinstance(content, list) else content


def qualified_name(namespace: Any, name: Any) -> Any:
    """A namespaced tool's name as the model knows it: Codex records an MCP tool's call as
    ``{namespace: "mcp__codex_apps__github", name: "_fetch_pr"}`` -> ``mcp__codex_apps__github_fetch_pr``
    (joined with ``__`` when the name does not start with ``_``: ``mcp__github`` + ``get_me`` ->
    ``mcp__github__get_me``).  No namespace: ``name`` as it is."""
    if not isinstance(namespace, str) or not namespace or not isinstance(name, str):
        return name
    return f"{namespace}{name}" if name.startswith("_") or namespace.endswith("_") else f"{namespace}__{name}"


def _call(item: dict[str, Any], kind: str) -> dict[str, Any]:
    call_id = item.get("call_id") or item.get("id")
    if kind == "function_call":
        return tool_call(
            qualified_name(item.get("namespace"), item.get("name")), item.get("arguments"), call_id
        )
    if kind == "custom_tool_call":
        return tool_call(item.get("name"), {"input": item.get("input")}, call_id)
    name = item.get("name") or ("local_shell" if kind == "local_shell_call" else "computer")
    return tool_call(name, item.get("action"), call_id)


def _reasoning(item: dict[str, Any]) -> list[dict[str, Any]]:
    texts = [
        p["text"]
        for key in ("summary", "content")
        for p in (item.get(key) or [])
        if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]
    return [{"type": "reasoning", "reasoning": "\n\n".join(texts)}] if texts else []


def item_type(item: dict[str, Any]) -> str | None:
    """An item's ``type``; ``"message"`` for a typeless ``{role, content}``."""
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def add_response_items(
    path: Path,
    builder: MessageBuilder,
    items: list[Any],
    where: str,
    positions: list[int] | None = None,
) -> Counter[str]:
    """Append Responses items to ``builder`` (see the module docstring); return the counts of
    items that are not messages (``"skipped:<type>"``) and of encrypted reasoning parts
    (``"encrypted_reasoning"``).

    ``positions``, when given, gets one entry per item: the index in ``builder.messages`` of the
    message the item became (or joined: the AIMessage of a model output item); ``-1`` for a
    skipped item.

    Raises:
        TranscriptError: at ``key <where>[i]`` for an item that is not an object, a message
            without ``role``, or a message role that is not user/system/developer/assistant.
    """
    counts: Counter[str] = Counter()
    blocks: list[Any] = []
    calls: list[dict[str, Any]] = []
    open_group = False
    grouped: list[int] = []  # indices in ``positions`` of the open group's items
    where_to = positions if positions is not None else []

    def flush() -> None:
        nonlocal blocks, calls, open_group
        if open_group:
            builder.ai(blocks, calls)
            for k in grouped:
                where_to[k] = len(builder.messages) - 1
        grouped.clear()
        blocks, calls, open_group = [], [], False

    for at, item in objects(path, items, where):
        kind = item_type(item)
        where_to.append(-1)
        if (
            kind in CALL_ITEMS
            or kind in SERVER_ITEMS
            or kind == "reasoning"
            or (kind == "message" and item.get("role") == "assistant")
        ):
            grouped.append(len(where_to) - 1)
        if kind == "message":
            role = need(path, item, "role", str, at)
            if role == "assistant":
                content = parts(item.get("content"))
                blocks.extend(
                    content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
                )
                open_group = True
                continue
            flush()
            if role in ("system", "developer"):
                builder.system(parts(item.get("content")))
            elif role == "user":
                builder.human(parts(item.get("content")))
            else:
                raise TranscriptError(path, f"key {join_key(at, 'role')}", f"unknown role {role!r}")
            where_to[-1] = len(builder.messages) - 1
        elif kind == "reasoning":
            blocks.extend(_reasoning(item))
            counts["encrypted_reasoning"] += bool(item.get("encrypted_content"))
            open_group = True
        elif kind in CALL_ITEMS:
            calls.append(_call(item, kind))
            open_group = True
        elif kind in OUTPUT_ITEMS:
            flush()
            builder.tool(parts(item.get("output")), item.get("call_id") or item.get("id"))
            where_to[-1] = len(builder.messages) - 1
        elif kind in SERVER_ITEMS:
            blocks.append(item)
            open_group = True
        else:
            counts[f"skipped:{kind}"] += 1
    flush()
    return counts


def is_item_list(data: Any) -> bool:
    """A non-empty list of Responses items with at least one typed, non-chat item (a call, an
    output, reasoning, or a message with ``input_text``/``output_text`` parts)."""
    if not isinstance(data, list) or not data or not all(isinstance(x, dict) for x in data):
        return False
    if any("tool_calls" in x or x.get("role") in ("tool", "function") for x in data):
        return False
    if not all(item_type(x) in ITEM_TYPES or (item_type(x) or "").endswith("_call") for x in data):
        return False
    return any(
        item_type(x) != "message"
        or any(
            isinstance(p, dict) and p.get("type") in ("input_text", "output_text")
            for p in x.get("content") or []
        )
        for x in data
    )


def split_counts(counts: Counter[str]) -> dict[str, Any]:
    """``metadata`` entries from :func:`add_response_items` counts."""
    return {
        "skipped_items": {k.split(":", 1)[1]: v for k, v in counts.items() if k.startswith("skipped:")},
        "encrypted_reasoning_items": counts["encrypted_reasoning"],
    }


class OpenAIResponsesFormat(JsonFormat):
    name = "openai_responses"
    description = "OpenAI Responses API item list: messages, reasoning, function_call/_output items"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_START.match(h)) and bool(_MARK.search(h))

    def match_json(self, data: Any) -> bool:
        return is_item_list(data) or (isinstance(data, dict) and is_item_list(data.get("input")))

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        items, where, request = request_messages(path, data, "input")
        b = MessageBuilder(path.name)
        if request.get("instructions"):
            b.system(request["instructions"])
        counts = add_response_items(path, b, items, where)
        return [
            b.transcript(
                path,
                self.name,
                model=str_field(request, "model"),
                tools=openai_tools(request.get("tools")),
                metadata=split_counts(counts),
            )
        ]


FORMAT = OpenAIResponsesFormat()
