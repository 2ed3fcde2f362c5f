"""OpenHands V1 conversations (``openhands_v1``): the event folder of the OpenHands Software Agent
SDK / agent server (``<conversation>/base_state.json`` with ``<conversation>/events/event-<n>-<id>
.json``, one event per file), or a JSON list of those events (https://github.com/OpenHands/
software-agent-sdk, MIT: ``openhands/sdk/event/``).

Shape: every event has ``kind``, ``id``, ``timestamp``, ``source`` (``agent``/``user``/
``environment``).  ``SystemPromptEvent{system_prompt: {text}, tools}``; ``MessageEvent{llm_message:
{role, content: [{type: text, text}]}}``; ``ActionEvent{thought: [{text}], reasoning_content?,
tool_name, tool_call_id, tool_call: {id, name, arguments}, llm_response_id, action}`` (one per
call; the calls of one model response share ``llm_response_id``); ``ObservationEvent{tool_name,
tool_call_id, observation: {content: [{text}] | str, is_error}}``; ``AgentErrorEvent{tool_name,
tool_call_id, error}``; ``UserRejectObservation{tool_name, tool_call_id, rejection_reason}``;
``Condensation{forgotten_event_ids, summary, summary_offset}`` and state, pause and token events.

Conversion: the system prompt -> SystemMessage (its ``tools`` kept); a user message ->
HumanMessage, an agent message -> AIMessage; the action events of one ``llm_response_id`` -> one
AIMessage (the first thought as its text, reasoning in ``additional_kwargs["reasoning"]``, one
tool call per action); an observation -> the ToolMessage of its call; an agent error or a user
rejection -> an error ToolMessage of its call.  Condensations are counted
(``metadata["condensations"]``) and said in a warning: the run is replayed as if the agent had
not condensed.  State, pause and token events are counted in ``metadata["skipped_events"]``.
In a folder the events are read in file-name order (the index in the name).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect, join_key
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, parse_json, read_text, tool_call, warn
from ctxlab.transcripts.base import Transcript, TranscriptError

KINDS = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation",
     "Condensation", "CondensationRequest", "ConversationStateUpdateEvent", "PauseEvent", "TokenEvent"}
)  # fmt: skip


def events_dir(path: Path) -> Path:
    return path.parent / "events"


def is_event_member(path: Path) -> bool:
    """An event file of a conversation folder (read through its ``base_state.json``)."""
    return (
        path.parent.name == "events"
        and path.suffix == ".json"
        and (path.parent.parent / "base_state.json").is_file()
    )


def is_event_list(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(e, dict) and e.get("kind") in KINDS for e in data)
        and any(e.get("kind") in ("MessageEvent", "ActionEvent") for e in data)
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _text(content.get("text", content.get("content")))
    if isinstance(content, list):
        return "\n".join(_text(c) for c in content if isinstance(c, (dict, str)))
    return "" if content is None else json.dumps(content, ensure_ascii=False)


class OpenHandsV1Format(JsonFormat):
    name = "openhands_v1"
    description = (
        "OpenHands V1 (Software Agent SDK) conversation: base_state.json + events/, or an event list"
    )

    def sniff(self, path: Path, head: str) -> bool:
        if path.name == "base_state.json" and events_dir(path).is_dir():
            return True
        return (
            head.lstrip().startswith("[") and '"kind"' in head[:2048] and '"SystemPromptEvent"' in head[:8192]
        )

    def match_json(self, data: Any) -> bool:
        return is_event_list(data)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        if path.name == "base_state.json" and events_dir(path).is_dir():
            files = sorted(events_dir(path).glob("*.json"))
            events = [(f"{f.name}", parse_json(f, read_text(f))) for f in files]
            if not events:
                raise TranscriptError(path, "events/", "the conversation folder holds no event file")
            return self._build(path, events)
        return self.load_json(parse_json(path, read_text(path)), path)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        expect(path, data, list, "(top level)")
        return self._build(path, [(join_key("", i), e) for i, e in enumerate(data)])

    def _build(self, path: Path, events: list[tuple[str, Any]]) -> list[Transcript]:
        b = MessageBuilder(path.parent.name if path.name == "base_state.json" else path.name)
        skipped: Counter[str] = Counter()
        tools: list[dict[str, Any]] = []
        condensations = 0
        ai: dict[str, Any] | None = None

        def flush() -> None:
            nonlocal ai
            if ai is not None:
                extra = {"reasoning": ai["reasoning"]} if ai["reasoning"] else {}
                b.ai(ai["text"], ai["calls"], **extra)
            ai = None

        for where, ev in events:
            expect(path, ev, dict, where)
            kind = ev.get("kind")
            if kind != "ActionEvent":
                flush()
            if kind == "SystemPromptEvent":
                b.system(_text(ev.get("system_prompt")))
                tools = [t for t in ev.get("tools") or [] if isinstance(t, dict)]
            elif kind == "MessageEvent":
                text = _text((ev.get("llm_message") or {}).get("content"))
                if ev.get("source") == "agent":
                    b.ai(text)
                else:
                    b.human(text)
            elif kind == "ActionEvent":
                call = ev.get("tool_call") if isinstance(ev.get("tool_call"), dict) else {}
                response = ev.get("llm_response_id")
                if ai is None or ai["response"] != response or response is None:
                    flush()
                    thought = _text(ev.get("thought"))
                    ai = {
                        "response": response,
                        "text": thought,
                        "reasoning": ev.get("reasoning_content") or "",
                        "calls": [],
                    }
                ai["calls"].append(
                    tool_call(
                        call.get("name") or ev.get("tool_name"),
                        call.get("arguments"),
                        call.get("id") or ev.get("tool_call_id"),
                    )
                )
            elif kind == "ObservationEvent":
                obs = ev.get("observation") if isinstance(ev.get("observation"), dict) else {}
                b.tool(
                    _text(obs.get("content")),
                    ev.get("tool_call_id"),
                    ev.get("tool_name"),
                    error=bool(obs.get("is_error")),
                )
            elif kind in ("AgentErrorEvent", "UserRejectObservation"):
                text = ev.get("error") if kind == "AgentErrorEvent" else ev.get("rejection_reason")
                b.tool(str(text or ""), ev.get("tool_call_id"), ev.get("tool_name"), error=True)
            elif kind == "Condensation":
                condensations += 1
            else:
                skipped[str(kind)] += 1
        flush()
        meta: dict[str, Any] = {"skipped_events": dict(skipped), "condensations": condensations}
        if condensations:
            warn(
                path,
                f"{condensations} condensation(s) recorded but not replayed: the run is replayed as if none happened",
                meta,
            )
        if b.pending:
            warn(path, f"{len(b.pending)} call(s) without an observation (left unanswered)", meta)
        return [b.transcript(path, self.name, tools=tools, metadata=meta)]


FORMAT = OpenHandsV1Format()
