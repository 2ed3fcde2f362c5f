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
* ``compacted``: a context compaction ``{message, replacement_history?}``: kept as a **recorded
  compaction** (``additional_kwargs[RECORDED_COMPACTION_KEY]`` on its messages: the
  ``replacement_history`` items when recorded, else the summary ``message`` as a user message,
  marked ``approximate``); ``metadata["compactions"]`` counts them.

Conversion: ``base_instructions.text`` (when recorded) -> SystemMessage; the ``response_item``
payloads in order through :func:`ctxlab.transcripts.responses.add_response_items` (each run of
model output items -> one AIMessage; ``function_call_output`` -> ToolMessage).  ``instructions`` are
not added again (they are in the first user message); their length is in ``metadata``.  The model
is the last ``turn_context.model``; ``event_msg`` and ``turn_context`` lines are counted in
``metadata["skipped_lines"]``.  Each ``token_count`` event's ``info.last_token_usage`` (the
provider's counts of the call just made) becomes the ``usage_metadata`` of the AIMessage before it.
An MCP tool's ``namespace`` is kept in the call's name
(:func:`ctxlab.transcripts.responses.qualified_name`).

Errors: ``line N`` for a line that is not JSON or not an object, ``line N, key payload``;
``key response_item[i]`` (the i-th response item) for a bad item.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._util import MessageBuilder, iter_jsonl, read_text, split_lines, usage_metadata
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
        # the response items, cut into segments at each ``compacted`` line: (items, compacted payload)
        segments: list[tuple[list[Any], dict[str, Any] | None]] = [([], None)]
        usages: list[tuple[int, int, dict[str, Any]]] = []  # (segment, items before, last_token_usage)
        skipped: Counter[str] = Counter()
        meta: dict[str, Any] = {}
        model = None
        system = None
        for lineno, line in iter_jsonl(path, read_text(path)):
            if not isinstance(line, dict):
                raise TranscriptError(path, f"line {lineno}", "expected a JSON object")
            kind = line.get("type")
            payload = line.get("payload")
            if not isinstance(payload, dict):
                raise TranscriptError(path, f"line {lineno}, key payload", "expected an object")
            if kind == "response_item":
                segments[-1][0].append(payload)
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
                segments.append(([], {**payload, "line": lineno}))
            else:
                info = payload.get("info") if payload.get("type") == "token_count" else None
                last = info.get("last_token_usage") if isinstance(info, dict) else None
                if isinstance(last, dict):
                    usages.append((len(segments) - 1, len(segments[-1][0]), last))
                skipped[f"{kind}:{payload.get('type')}" if kind == "event_msg" else str(kind)] += 1
        b = MessageBuilder(path.name)
        if system is not None:
            b.system(system)
        counts: Counter[str] = Counter()
        positions: list[list[int]] = []
        for k, (items, compacted) in enumerate(segments):
            if compacted is not None:
                _add_compaction(path, b, compacted, k - 1, counts)
            positions.append([])
            counts += add_response_items(path, b, items, "response_item", positions[-1])
        for seg, before, last in usages:
            _attach_usage(b, positions[seg][:before], last)
        if not b.messages:
            raise TranscriptError(path, "line 1", "no response_item messages in the rollout")
        meta.update(split_counts(counts), skipped_lines=dict(skipped), compactions=len(segments) - 1)
        return [b.transcript(path, self.name, model=model, metadata=meta)]

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


def _add_compaction(
    path: Path, b: MessageBuilder, compacted: dict[str, Any], index: int, counts: Counter[str]
) -> None:
    """The messages a ``compacted`` line put in place of the history, marked as recorded
    compaction ``index``: its ``replacement_history`` items when recorded, else its summary
    ``message`` as a user message (Codex then rebuilds the history from the initial context, the
    recent user messages and that summary; only the summary is kept here: ``"approximate": True``
    in the mark)."""
    start = len(b.messages)
    replacement = compacted.get("replacement_history")
    mark = {
        "index": index,
        "trigger": None,
        "pre_tokens": None,
        "source": "compacted",
        "line": compacted["line"],
    }
    if isinstance(replacement, list):
        counts += add_response_items(path, b, replacement, f"line {compacted['line']}: replacement_history")
    elif isinstance(compacted.get("message"), str):
        b.human(compacted["message"])
        mark["approximate"] = True
    b.mark_compaction(start, mark)


def _attach_usage(b: MessageBuilder, positions: list[int], last: dict[str, Any]) -> None:
    """Put a ``token_count`` event's ``last_token_usage`` on the AIMessage of the latest model
    output before it (input includes ``cached_input_tokens``, as OpenAI counts it)."""
    for idx in reversed(positions):
        if idx >= 0 and isinstance(b.messages[idx], AIMessage):
            usage = usage_metadata(
                last.get("input_tokens"),
                last.get("output_tokens"),
                cache_read=last.get("cached_input_tokens"),
                reasoning=last.get("reasoning_output_tokens"),
            )
            msg = b.messages[idx]
            if usage is not None and isinstance(msg, AIMessage) and msg.usage_metadata is None:
                msg.usage_metadata = usage  # type: ignore[assignment]
            return


FORMAT = CodexRolloutFormat()
