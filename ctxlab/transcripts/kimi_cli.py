"""Kimi CLI context JSONL (SOURCES.md format **F18**): ``~/.kimi/sessions/<hash>/<session>.jsonl``.

Shape: one JSON object per line.  OpenAI-style chat messages ``{role: system|user|assistant|tool,
content, tool_calls?, tool_call_id?}`` (``content`` a string or blocks such as ``{type: "text"}``
and ``{type: "think"}``; tool-call ids such as ``Think:0``) interleaved with Kimi's bookkeeping
lines: ``{"role": "_checkpoint", "id": n}`` (a point ``/undo`` can return to) and ``{"role":
"_usage", "token_count": n}`` (the provider's count of the context at that point).

Conversion: the messages through :func:`ctxlab.transcripts.sdk.add_openai_messages`, in order.
Bookkeeping lines are not messages (counted in ``metadata["skipped_lines"]``).  **Usage**: the
``_usage`` line right before an assistant message is that call's prompt (input tokens), the one
right after it the context with the answer; an AIMessage with both gets ``usage_metadata`` (output
= their difference), with only the first ``response_metadata["context_tokens"]``.

Errors: ``line N`` for a line that is not a JSON object or lacks ``role``; ``line N, key role``
for an unknown role.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._util import (
    MessageBuilder,
    add_openai_messages,
    iter_jsonl,
    read_text,
    split_lines,
    usage_metadata,
)
from ctxlab.transcripts.base import Transcript, TranscriptError

ROLES = frozenset({"system", "user", "assistant", "tool"})
BOOKKEEPING = frozenset({"_checkpoint", "_usage"})
_FIRST = re.compile(r'\A\s*\{\s*"role"\s*:\s*"(_checkpoint|_usage)"')


def _is_line(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("role") in BOOKKEEPING


class KimiCliFormat:
    name = "kimi_cli"
    description = "Kimi CLI context JSONL (F18): OpenAI-style messages between _checkpoint/_usage lines"

    def sniff(self, path: Path, head: str) -> bool:
        first = split_lines(head.lstrip("\ufeff"))[:1]
        return bool(first) and bool(_FIRST.match(first[0]))

    def match_line(self, obj: Any) -> bool:
        return _is_line(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        b = MessageBuilder(path.name)
        skipped: Counter[str] = Counter()
        last_usage: int | None = None  # the latest _usage count not yet used
        open_ai: tuple[AIMessage, int | None] | None = None  # the last AIMessage and its prompt count
        for lineno, obj in iter_jsonl(path, read_text(path)):
            if not isinstance(obj, dict) or not isinstance(obj.get("role"), str):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object with a role")
            role = obj["role"]
            if role in BOOKKEEPING:
                skipped[role] += 1
                if role == "_usage":
                    count = obj.get("token_count")
                    last_usage = count if isinstance(count, int) and not isinstance(count, bool) else None
                    if open_ai is not None:
                        _set_usage(*open_ai, last_usage)
                        open_ai, last_usage = None, None
                continue
            if role not in ROLES:
                raise TranscriptError(path, f"line {lineno}, key role", f"unknown role {role!r}")
            add_openai_messages(path, b, [obj], f"line {lineno}", single=True)
            msg = b.messages[-1]
            open_ai = (msg, last_usage) if isinstance(msg, AIMessage) else None
            if isinstance(msg, AIMessage) and last_usage is not None:
                msg.response_metadata["context_tokens"] = last_usage
            last_usage = None
        meta = {"skipped_lines": dict(skipped)}
        return [b.transcript(path, self.name, metadata=meta)]

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


def _set_usage(msg: AIMessage, prompt: int | None, after: int | None) -> None:
    if prompt is None or after is None or after < prompt:
        return
    msg.usage_metadata = usage_metadata(prompt, after - prompt)  # type: ignore[assignment]


FORMAT = KimiCliFormat()
