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

from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    add_openai_messages,
    expect,
    iter_jsonl,
    join_key,
    json_decode_error,
    need,
    openai_tools,
    parse_json,
    read_text,
    stripped_head,
    tool_call,
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
        for i, ev in enumerate(data):
            at = f"[{i}]"
            expect(path, ev, dict, at)
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
                raw_calls = ev.get("toolCalls") or []
                expect(path, raw_calls, list, join_key(at, "toolCalls"))
                for j, raw in enumerate(raw_calls):
                    expect(path, raw, dict, join_key(join_key(at, "toolCalls"), j))
                    fn = raw.get("function") if isinstance(raw.get("function"), dict) else {}
                    calls.append(tool_call(fn.get("name"), fn.get("arguments"), raw.get("id")))
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
        model = start.get("model") if isinstance(start.get("model"), str) else None
        return [b.transcript(path, self.name, model=model, tools=list(tools.values()), metadata=meta)]


class AgentTarsRequestFormat(JsonFormat):
    name = "agent_tars_request"
    description = "Agent TARS LLM request snapshot (F11): {provider, baseURL, request{messages}}"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return (
            h.startswith("{")
            and bool(re.search(r'"request"\s*:\s*\{', h))
            and ('"baseURL"' in h or path.name == "llm-request.jsonl")
            and not re.search(r'"history"\s*:\s*\[', h)  # that is a session (F12)
        )

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
        expect(path, data, dict, "(top level)")
        request = need(path, data, "request", dict, "")
        messages = need(path, request, "messages", list, "request")
        b = MessageBuilder(path.name)
        add_openai_messages(path, b, messages, "request.messages", text_observations="tool_prefix")
        meta = {"provider": data.get("provider"), "base_url": data.get("baseURL")}
        model = request.get("model") if isinstance(request.get("model"), str) else None
        return [
            b.transcript(
                path, self.name, model=model, tools=openai_tools(request.get("tools")), metadata=meta
            )
        ]


class AgentTarsSessionFormat(JsonFormat):
    name = "agent_tars_session"
    description = "Agent TARS CLI session (F12): last request's prompt plus its response"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return (
            h.startswith("{")
            and '"sessionId"' in h
            and bool(re.search(r'"history"\s*:\s*\[', h))
            and bool(re.search(r'"type"\s*:\s*"request"', h))
        )

    def match_json(self, data: Any) -> bool:
        hist = data.get("history") if isinstance(data, dict) else None
        return (
            isinstance(hist, list)
            and bool(hist)
            and isinstance(hist[0], dict)
            and hist[0].get("type") in ("request", "response")
        )

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        expect(path, data, dict, "(top level)")
        history = need(path, data, "history", list, "")
        last = None
        for i, item in enumerate(history):
            expect(path, item, dict, f"history[{i}]")
            if item.get("type") == "request":
                last = i
        if last is None:
            raise TranscriptError(path, "key history", "no request in the session history")
        at = f"history[{last}]"
        req_data = need(path, history[last], "data", dict, at)
        request = need(path, req_data, "request", dict, f"{at}.data")
        messages = need(path, request, "messages", list, f"{at}.data.request")
        b = MessageBuilder(path.name)
        add_openai_messages(path, b, messages, f"{at}.data.request.messages", text_observations="tool_prefix")
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
        agent = data.get("agent") if isinstance(data.get("agent"), dict) else {}
        meta = {
            "session_id": data.get("sessionId"),
            "agent": agent.get("name"),
            "requests": sum(1 for h in history if h.get("type") == "request"),
            "provider": req_data.get("provider"),
        }
        model = request.get("model") if isinstance(request.get("model"), str) else None
        return [
            b.transcript(
                path, self.name, model=model, tools=openai_tools(request.get("tools")), metadata=meta
            )
        ]


EVENTS = AgentTarsEventsFormat()
REQUEST = AgentTarsRequestFormat()
SESSION = AgentTarsSessionFormat()
