"""Agent TARS / Tarko files (SOURCES.md formats **F10**, **F11**, **F12**).

**F10** (``agent_tars_events``), ``.../snapshot/**/event-stream.jsonl``: despite the extension one
JSON array of events (a file with one event per line is accepted too).  Every event has ``id``,
``type``, ``timestamp``.  ``agent_run_start`` (``sessionId``, ``runOptions.input``, ``provider``,
``model``), ``user_message`` (``content``), ``assistant_message`` (``content``, ``toolCalls`` =
OpenAI-style ``[{id, type, function{name, arguments}}]``, ``finishReason``, ``messageId``),
``tool_call`` (``toolCallId``, ``name``, ``arguments``, ``tool{name, description, schema}``),
``tool_result`` (``toolCallId``, ``name``, ``content`` -- a string or an object), and bookkeeping
(``plan_start``/``plan_update``/``plan_finish``/``system``/...).
Conversion: user_message -> HumanMessage, assistant_message -> AIMessage with its toolCalls,
tool_result -> ToolMessage (object content serialized as JSON, ``ensure_ascii=False``).
``tool_call`` events repeat the assistant's calls; they only contribute tool schemas
(``Transcript.tools``).  Bookkeeping events are counted in ``metadata["skipped_events"]``.
The agent loop's own closing message -- an ``assistant_message`` with no tool calls whose
``messageId`` starts ``msg_termination_`` (content ``"<Agent> is finished"``) -- is written by the
agent, not returned by a model call: it is left out, counted in ``skipped_events`` as
``"termination_message"`` and its text kept in ``metadata["termination_message"]``.

**F11** (``agent_tars_request``), ``.../loop-N/llm-request.jsonl``: one JSON object ``{provider,
baseURL, request}``; ``request`` is an OpenAI chat body (``model``, ``messages``, ...).  Tool calls
are prompt-based: the structured call is not kept, results come back as ``user`` messages
``Tool: <name>\\nResult:\\n<JSON>`` -- those are marked as text observations.  No tool-call ids.

**F12** (``agent_tars_session``), ``workspace/cli_*/session_*.json``: ``{agent{name}, sessionId,
timestamp, history}``; ``history`` alternates ``{type: "request", data{request{model, messages,
tools?}}}`` and ``{type: "response", data{response}}``.  Each request repeats the whole prompt, so
the Transcript is the LAST request's messages plus its response's ``choices[0].message``.
Prompt-based runs (``<tool_call>`` text, ``Tool: <name>\\nResult:`` user messages) keep their
text, with results marked as observations; native runs have ``tool_calls``/``tool`` messages.

Errors: located JSON errors, ``key [i]`` for a non-object event, ``key request.messages`` ...
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import as_dict, expect, need, objects, optional_objects, str_field, top_key
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    add_openai_messages,
    iter_jsonl,
    json_decode_error,
    openai_call,
    openai_tools,
    parse_json,
    read_text,
    stripped_head,
)
from ctxlab.transcripts.base import Transcript, TranscriptError

EVENT_TYPES = frozenset(
    {"agent_run_start", "user_message", "assistant_message", "tool_call", "tool_result", "plan_start"}
)
_EVENT_TYPE = re.compile(
    r'"type"\s*:\s*"(agent_run_start|user_message|assistant_message|tool_call|tool_result)"'
)


#: the messageId prefix of the loop's synthetic end message ("Agent TARS is finished")
TERMINATION_ID = "msg_termination_"
_FINISHED = re.compile(r"\A[^\n]{0,80} is finished\.?\Z")


def is_termination(ev: dict[str, Any]) -> bool:
    """The synthetic end-of-loop ``assistant_message`` (not a model call): no tool calls and a
    ``msg_termination_`` message id, or (older streams without that id) the text
    ``"<name> is finished"`` with ``finishReason: "stop"``."""
    if ev.get("toolCalls"):
        return False
    mid = ev.get("messageId")
    if isinstance(mid, str):
        return mid.startswith(TERMINATION_ID)
    content = ev.get("content")
    return ev.get("finishReason") == "stop" and isinstance(content, str) and bool(_FINISHED.match(content))


def _is_tars_event(e: Any) -> bool:
    return isinstance(e, dict) and e.get("type") in EVENT_TYPES and "timestamp" in e


class AgentTarsEventsFormat(JsonFormat):
    name = "agent_tars_events"
    description = "Agent TARS / Tarko event stream (F10): a JSON array of agent events"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        if h.startswith("["):
            return bool(_EVENT_TYPE.search(h[:8192])) and '"timestamp"' in h[:8192]
        return path.name == "event-stream.jsonl" and h.startswith("{") and bool(_EVENT_TYPE.search(h[:8192]))

    def match_json(self, data: Any) -> bool:
        return isinstance(data, list) and bool(data) and any(_is_tars_event(e) for e in data[:5])

    def match_line(self, obj: Any) -> bool:
        return _is_tars_event(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        text = read_text(path)
        if stripped_head(text).startswith("{"):  # one event per line
            return self.load_json([ev for _, ev in iter_jsonl(path, text)], path)
        return self.load_json(parse_json(path, text), path)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        expect(path, data, list, "(top level)")
        b = MessageBuilder(path.name)
        skipped: Counter[str] = Counter()
        tools: dict[str, dict[str, Any]] = {}
        announced: set[str] = set()
        call_events: list[str] = []
        start: dict[str, Any] = {}
        termination: Any = None
        for at, ev in objects(path, data, ""):
            kind = ev.get("type")
            if kind == "agent_run_start":
                start = ev
                skipped[kind] += 1
            elif kind == "user_message":
                b.human(ev.get("content"))
            elif kind == "assistant_message" and is_termination(ev):
                skipped["termination_message"] += 1
                termination = ev.get("content")
            elif kind == "assistant_message":
                calls = []
                for _, raw in optional_objects(path, ev, "toolCalls", at):
                    calls.append(openai_call(raw))
                    announced.add(str(raw.get("id")))
                meta = {"finish_reason": ev["finishReason"]} if ev.get("finishReason") else {}
                b.ai(ev.get("content"), calls, response_metadata=meta)
            elif kind == "tool_call":
                call_events.append(str(ev.get("toolCallId")))
                tool = ev.get("tool")
                if isinstance(tool, dict) and tool.get("name") and tool["name"] not in tools:
                    tools[tool["name"]] = {
                        "type": "function",
                        "function": {
                            "name": tool["name"],
                            "description": tool.get("description", ""),
                            "parameters": tool.get("schema", {}),
                        },
                    }
            elif kind == "tool_result":
                content = ev.get("content")
                if not isinstance(content, (str, list)) or (
                    isinstance(content, list)
                    and not all(isinstance(x, dict) and "type" in x for x in content)
                ):
                    content = json.dumps(content, ensure_ascii=False)
                b.tool(content, ev.get("toolCallId"), ev.get("name"), error=bool(ev.get("error")))
            else:
                skipped[str(kind)] += 1
        if not b.messages:
            raise TranscriptError(path, "(top level)", "no user, assistant or tool events")
        meta = {
            "session_id": start.get("sessionId"),
            "provider": start.get("provider"),
            "skipped_events": dict(skipped),
            "tool_call_events_without_message": sum(1 for c in call_events if c not in announced),
        }
        if skipped["termination_message"]:
            meta["termination_message"] = termination
        model = str_field(start, "model")
        return [b.transcript(path, self.name, model=model, tools=list(tools.values()), metadata=meta)]


_REQUEST_OBJECT = re.compile(r'"request"\s*:\s*\{')
_HISTORY_LIST = re.compile(r'"history"\s*:\s*\[')
_REQUEST_ENTRY = re.compile(r'"type"\s*:\s*"request"')


def _head_kind(path: Path, head: str) -> str | None:
    """Which Agent TARS object a file's head starts: ``"session"`` (F12: ``sessionId`` and a
    ``history`` list with a request entry), ``"request"`` (F11: no ``history`` list, a ``request``
    object, and ``baseURL`` or the name ``llm-request.jsonl``), else ``None``."""
    h = stripped_head(head)
    if not h.startswith("{"):
        return None
    if _HISTORY_LIST.search(h):
        return "session" if '"sessionId"' in h and _REQUEST_ENTRY.search(h) else None
    if _REQUEST_OBJECT.search(h) and ('"baseURL"' in h or path.name == "llm-request.jsonl"):
        return "request"
    return None


class _RequestFormat(JsonFormat):
    """An Agent TARS format whose transcript is one OpenAI chat request (F11, F12)."""

    #: what :func:`_head_kind` says of this format's files
    kind = ""

    def sniff(self, path: Path, head: str) -> bool:
        return _head_kind(path, head) == self.kind

    @staticmethod
    def _prompt(path: Path, request: dict[str, Any], where: str) -> MessageBuilder:
        """A builder holding the ``messages`` of the request found at ``key <where>``, with the
        results of prompt-based tools (``Tool: <name>\\nResult:``) marked as observations."""
        b = MessageBuilder(path.name)
        messages = need(path, request, "messages", list, where)
        add_openai_messages(path, b, messages, f"{where}.messages", text_observations="tool_prefix")
        return b

    def _transcript(
        self, b: MessageBuilder, path: Path, request: dict[str, Any], meta: dict[str, Any]
    ) -> Transcript:
        """The transcript of ``b`` with the request's ``model`` and ``tools``."""
        tools = openai_tools(request.get("tools"))
        return b.transcript(path, self.name, model=str_field(request, "model"), tools=tools, metadata=meta)


class AgentTarsRequestFormat(_RequestFormat):
    name = "agent_tars_request"
    description = "Agent TARS LLM request snapshot (F11): {provider, baseURL, request{messages}}"
    kind = "request"

    def match_json(self, data: Any) -> bool:
        return (
            isinstance(data, dict)
            and isinstance(data.get("request"), dict)
            and isinstance(data["request"].get("messages"), list)
        )

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise json_decode_error(path, text, exc) from exc
            data = next(iter_jsonl(path, text))[1]  # one object per line: the first is the request
        return self.load_json(data, path)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        request = top_key(path, data, "request", dict)
        b = self._prompt(path, request, "request")
        return [
            self._transcript(
                b, path, request, {"provider": data.get("provider"), "base_url": data.get("baseURL")}
            )
        ]


class AgentTarsSessionFormat(_RequestFormat):
    name = "agent_tars_session"
    description = "Agent TARS CLI session (F12): last request's prompt plus its response"
    kind = "session"

    def match_json(self, data: Any) -> bool:
        hist = data.get("history") if isinstance(data, dict) else None
        return (
            isinstance(hist, list)
            and bool(hist)
            and isinstance(hist[0], dict)
            and hist[0].get("type") in ("request", "response")
        )

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        history = top_key(path, data, "history", list)
        last = None
        for i, (_, item) in enumerate(objects(path, history, "history")):
            if item.get("type") == "request":
                last = i
        if last is None:
            raise TranscriptError(path, "key history", "no request in the session history")
        at = f"history[{last}]"
        req_data = need(path, history[last], "data", dict, at)
        request = need(path, req_data, "request", dict, f"{at}.data")
        b = self._prompt(path, request, f"{at}.data.request")
        for k in range(last + 1, len(history)):
            if history[k].get("type") != "response":
                continue
            data_k = history[k].get("data")
            response = data_k.get("response") if isinstance(data_k, dict) else None
            choices = response.get("choices") if isinstance(response, dict) else None
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                msg = choices[0].get("message")
                if isinstance(msg, dict):
                    rwhere = f"history[{k}].data.response.choices[0].message"
                    add_openai_messages(path, b, [{**msg, "role": "assistant"}], rwhere, single=True)
            break
        agent = as_dict(data.get("agent"))
        meta = {
            "session_id": data.get("sessionId"),
            "agent": agent.get("name"),
            "requests": sum(1 for h in history if h.get("type") == "request"),
            "provider": req_data.get("provider"),
        }
        return [self._transcript(b, path, request, meta)]


EVENTS = AgentTarsEventsFormat()
REQUEST = AgentTarsRequestFormat()
SESSION = AgentTarsSessionFormat()
