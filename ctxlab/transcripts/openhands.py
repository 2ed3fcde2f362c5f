"""OpenHands V0 event streams (SOURCES.md formats **F3a** and **F3b**).

**F3a** (``openhands_events``): a JSON list of events.  Every event has ``id``, ``timestamp``,
``source`` (``user``/``agent``/``environment``), ``message``; actions carry ``action`` and ``args``,
observations carry ``observation``, ``content``, ``extras`` and ``cause``.  With function calling,
both sides carry ``tool_call_metadata{function_name, tool_call_id, model_response,
total_calls_in_response}``.

**F3b** (``openhands_eval``): evaluation output JSONL, one run per line ``{instance_id,
instruction, metadata{agent_class, llm_config{model, ...}}, history: <F3a list>, metrics, error,
instance, test_result{git_patch}}`` -> one Transcript per line (``run_id`` = ``instance_id``).

Conversion (what the agent's prompt is built from, nothing invented):

* ``system`` action -> SystemMessage (``args.content``; ``args.tools`` -> ``Transcript.tools``);
* ``message`` action -> HumanMessage (source user) or AIMessage (source agent);
* an action with ``tool_call_metadata`` -> a tool call on the AIMessage of its
  ``model_response`` (actions sharing a response share one AIMessage, placed at the first); the
  AIMessage text is the response's ``content`` and the arguments are the raw arguments the model
  wrote (the action's ``args`` when the response is missing);
* an observation with ``tool_call_metadata`` -> ToolMessage (``content``; ``status="error"`` for
  ``error`` observations);
* an observation without it (e.g. an ``error`` for a malformed call) -> HumanMessage marked as a
  text observation, as OpenHands sends it to the model as a user message;
* bookkeeping is skipped: ``agent_state_changed``/``null``/``recall`` observations and
  ``change_agent_state``/``recall``/``condensation`` actions (counted in ``metadata``).

A ``finish`` call has no result in the stream: it stays a call without a ToolMessage.

Errors: ``key [i]`` / ``key history[i]`` for an event that is not an object, ``line N`` for a bad
JSONL line (F3b).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import as_dict, expect, need, objects
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    iter_jsonl,
    openai_tools,
    read_text,
    stripped_head,
    tool_call,
    unique_run_id,
)
from ctxlab.transcripts.base import Transcript, TranscriptError

SKIP_ACTIONS = frozenset({"change_agent_state", "recall", "condensation", "condensation_request", "null"})
SKIP_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall"})

_SOURCE = re.compile(r'"source"\s*:\s*"(user|agent|environment)"')
_ACTION_OR_OBS = re.compile(r'"(action|observation)"\s*:\s*"')


def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e)


def _response_message(tcm: dict[str, Any]) -> dict[str, Any]:
    resp = tcm.get("model_response")
    if not isinstance(resp, dict):
        return {}
    choices = resp.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        return msg if isinstance(msg, dict) else {}
    return {}


def convert_events(
    path: Path, events: list[Any], b: MessageBuilder, where: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Append the messages of an F3a event list to ``b``; return ``(tools, stats)``."""
    entries: list[dict[str, Any]] = []
    by_response: dict[str, dict[str, Any]] = {}
    tools: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    model = None
    for at, ev in objects(path, events, where):
        source = ev.get("source")
        tcm = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else None
        if "action" in ev and ev.get("action") is not None:
            action = ev["action"]
            args = as_dict(ev.get("args"))
            if tcm is not None:
                resp = as_dict(tcm.get("model_response"))
                model = model or resp.get("model")
                rmsg = _response_message(tcm)
                call_id = tcm.get("tool_call_id")
                raw_args: Any = {k: v for k, v in args.items() if k != "thought"}
                for rc in rmsg.get("tool_calls") or []:
                    if isinstance(rc, dict) and rc.get("id") == call_id:
                        fn = as_dict(rc.get("function"))
                        raw_args = fn.get("arguments", raw_args)
                call = tool_call(tcm.get("function_name"), raw_args, call_id)
                rid = resp.get("id")
                if rid and rid in by_response:
                    by_response[rid]["calls"].append(call)
                    continue
                content = rmsg.get("content") if rmsg else args.get("thought", "")
                entry = {"kind": "ai", "content": content, "calls": [call]}
                entries.append(entry)
                if rid:
                    by_response[rid] = entry
            elif action == "system":
                entries.append({"kind": "system", "content": args.get("content", ev.get("message"))})
                tools = openai_tools(args.get("tools"))
            elif action in SKIP_ACTIONS or source == "environment":
                skipped[f"action:{action}"] += 1
            elif action == "message":
                text = args.get("content", ev.get("message"))
                entries.append({"kind": "human" if source == "user" else "ai", "content": text, "calls": []})
            elif source == "user":
                entries.append({"kind": "human", "content": ev.get("message", ""), "calls": []})
            else:  # an agent action without function calling: keep what it says
                text = args.get("thought") or ev.get("message") or ""
                entries.append({"kind": "ai", "content": text, "calls": []})
        elif "observation" in ev:
            obs = ev.get("observation")
            if tcm is not None:
                entries.append(
                    {
                        "kind": "tool",
                        "content": ev.get("content", ""),
                        "id": tcm.get("tool_call_id"),
                        "name": tcm.get("function_name"),
                        "error": obs == "error",
                    }
                )
            elif obs in SKIP_OBSERVATIONS:
                skipped[f"observation:{obs}"] += 1
            else:
                entries.append({"kind": "observation", "content": ev.get("content") or ev.get("message", "")})
        else:
            raise TranscriptError(path, f"key {at}", "event has neither 'action' nor 'observation'")
    for e in entries:
        kind = e["kind"]
        if kind == "system":
            b.system(e["content"])
        elif kind == "human":
            b.human(e["content"])
        elif kind == "observation":
            b.human(e["content"], observation=True)
        elif kind == "ai":
            b.ai(e["content"], e["calls"])
        else:
            b.tool(e["content"], e["id"], e["name"], error=e["error"])
    return tools, {"skipped_events": dict(skipped), "events": len(events), "model": model}


class OpenHandsEventsFormat(JsonFormat):
    name = "openhands_events"
    description = "OpenHands V0 event list (F3a): actions/observations with tool_call_metadata"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return h.startswith("[") and bool(_SOURCE.search(h[:4096])) and bool(_ACTION_OR_OBS.search(h[:4096]))

    def match_json(self, data: Any) -> bool:
        return isinstance(data, list) and bool(data) and all(_is_event(e) for e in data[:5])

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        expect(path, data, list, "(top level)")
        b = MessageBuilder(path.name)
        tools, stats = convert_events(path, data, b, "")
        model = stats.pop("model")
        return [b.transcript(path, self.name, model=model, tools=tools, metadata=stats)]


class OpenHandsEvalFormat(JsonFormat):
    name = "openhands_eval"
    description = "OpenHands evaluation output.jsonl (F3b): one run per line"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        if not h.startswith("{"):
            return False
        first_line = h.split("\n", 1)[0]
        has_keys = '"instance_id"' in first_line and (
            '"history"' in first_line or '"instruction"' in first_line
        )
        return has_keys and (
            path.suffix == ".jsonl" or bool(re.search(r'"history"\s*:\s*\[\s*\{', first_line))
        )

    def match_json(self, data: Any) -> bool:
        return self.match_line(data)

    def match_line(self, obj: Any) -> bool:
        """The JSONL fallback check on the first line."""
        return (
            isinstance(obj, dict)
            and isinstance(obj.get("history"), list)
            and ("instance_id" in obj or "instruction" in obj)
            and all(_is_event(e) for e in obj["history"][:5])
        )

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        out = []
        seen: Counter[str] = Counter()
        for lineno, obj in iter_jsonl(path, read_text(path)):
            out.append(self._run(path, obj, f"line {lineno}", lineno, seen))
        if not out:
            raise TranscriptError(path, "byte 0", "no runs in file")
        return out

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        return [self._run(path, data, "line 1", 1, Counter())]

    def _run(self, path: Path, obj: Any, line: str, lineno: int, seen: Counter[str]) -> Transcript:
        try:
            expect(path, obj, dict, "(line)")
            history = need(path, obj, "history", list, "")
            b = MessageBuilder(unique_run_id(seen, str(obj.get("instance_id") or f"line{lineno}")))
            tools, stats = convert_events(path, history, b, "history")
        except TranscriptError as exc:  # name the line as well as the key
            raise TranscriptError(path, f"{line}, {exc.where}", exc.problem) from exc
        meta_in = as_dict(obj.get("metadata"))
        llm = as_dict(meta_in.get("llm_config"))
        metrics = as_dict(obj.get("metrics"))
        test_result = as_dict(obj.get("test_result"))
        model = llm.get("model") or stats.pop("model")
        stats.pop("model", None)
        meta = {
            "instance_id": obj.get("instance_id"),
            "line": lineno,
            "agent_class": meta_in.get("agent_class"),
            "error": obj.get("error"),
            "accumulated_cost": metrics.get("accumulated_cost"),
            "has_patch": bool(test_result.get("git_patch")),
            **stats,
        }
        return b.transcript(path, self.name, model=model, tools=tools, metadata=meta)


EVENTS = OpenHandsEventsFormat()
EVAL = OpenHandsEvalFormat()

__all__ = ["EVAL", "EVENTS", "convert_events"]
