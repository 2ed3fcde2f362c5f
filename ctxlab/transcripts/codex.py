"""OpenAI Codex CLI rollouts (SOURCES.md format **F14**): ``~/.codex/sessions/**/rollout-*.jsonl``.

Shape: one object per line ``{timestamp, type, payload}``:

* ``session_meta`` (first line): ``id``, ``cwd``, ``originator``, ``cli_version``,
  ``instructions`` (the user's AGENTS.md instructions, which the session also sends as its first
  user message), newer versions ``base_instructions{text}`` (the system prompt);
* ``response_item``: an OpenAI Responses API item the model saw or produced (``message``,
  ``reasoning``, ``function_call``, ``function_call_output``, ``custom_tool_call`` ..., and
  bookkeeping such as ``ghost_snapshot``);
* ``turn_context``: per-turn settings (``model``, ``cwd``, sandbox and approval policy);
* ``event_msg``: what the terminal UI showed (``user_message``, ``agent_message``,
  ``agent_reasoning``, ``token_count`` ...) -- repeats of the items, not messages;
* ``compacted``: a context compaction (counted in ``metadata["compactions"]``).

Conversion: ``base_instructions.text`` (when recorded) -> SystemMessage; the ``response_item``
payloads in order through :func:`ctxlab.transcripts.responses.add_response_items` (each run of
model output items -> one AIMessage; ``function_call_output`` -> ToolMessage).  ``instructions`` are
not added again (they are in the first user message); their length is in ``metadata``.  The model
is the last ``turn_context.model``; ``event_msg`` and ``turn_context`` lines are counted in
``metadata["skipped_lines"]``.

Errors: ``line N`` for a line that is not JSON or not an object, ``line N, key payload``;
``key response_item[i]`` (the i-th response item) for a bad item.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import MessageBuilder, iter_jsonl, read_text, split_lines
from ctxlab.transcripts.base import Transcript, TranscriptError
from ctxlab.transcripts.responses import add_response_items, split_counts

LINE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
_FIRST = re.compile(
    r'\A\s*\{.{0,200}?"type"\s*:\s*"(session_meta|response_item|turn_context|event_msg)"', re.S
)


def _is_line(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") in LINE_TYPES and isinstance(obj.get("payload"), dict)


class CodexRolloutFormat:
    name = "codex_rollout"
    description = "OpenAI Codex CLI rollout JSONL (F14): Responses items under response_item lines"

    def sniff(self, path: Path, head: str) -> bool:
        first = split_lines(head.lstrip("\ufeff"))[:1]
        return bool(first) and bool(_FIRST.match(first[0])) and '"payload"' in first[0]

    def match_line(self, obj: Any) -> bool:
        return _is_line(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        items: list[Any] = []
        skipped: Counter[str] = Counter()
        meta: dict[str, Any] = {}
        model = None
        system = None
        compactions = 0
        for lineno, line in iter_jsonl(path, read_text(path)):
            if not isinstance(line, dict):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
            kind = line.get("type")
            payload = line.get("payload")
            if not isinstance(payload, dict):
                raise TranscriptError(path, f"line {lineno}, key payload", "expected an object")
            if kind == "response_item":
                items.append(payload)
            elif kind == "session_meta":
                for key in ("id", "cwd", "originator", "cli_version", "model_provider"):
                    if key in payload:
                        meta[key] = payload[key]
                if isinstance(payload.get("instructions"), str):
                    meta["instructions_chars"] = len(payload["instructions"])
                base = payload.get("base_instructions")
                if isinstance(base, dict) and isinstance(base.get("text"), str):
                    system = base["text"]
            elif kind == "turn_context":
                skipped["turn_context"] += 1
                if isinstance(payload.get("model"), str):
                    model = payload["model"]
            elif kind == "compacted":
                compactions += 1
            else:
                skipped[f"{kind}:{payload.get('type')}" if kind == "event_msg" else str(kind)] += 1
        b = MessageBuilder(path.name)
        if system is not None:
            b.system(system)
        counts = add_response_items(path, b, items, "response_item")
        if not b.messages:
            raise TranscriptError(path, "line 1", "no response_item messages in the rollout")
        meta.update(split_counts(counts), skipped_lines=dict(skipped), compactions=compactions)
        return [b.transcript(path, self.name, model=model, metadata=meta)]

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = CodexRolloutFormat()
