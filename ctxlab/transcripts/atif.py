"""Agent Trajectory Interchange Format (``atif``): Harbor / Terminal-Bench ``trajectory.json``
(RFC 0001 of https://github.com/laude-institute/harbor, ``docs/rfcs/0001-trajectory-format.md``).

Shape: ``{schema_version: "ATIF-v1.x", session_id, agent: {name, version, model_name?},
steps: [...], final_metrics?, notes?}``; a step is ``{step_id, source: "system" | "user" |
"agent", message, reasoning_content?, tool_calls?: [{tool_call_id, function_name, arguments}],
observation?: {results: [{source_call_id?, content?, subagent_trajectory_ref?}]}, metrics?:
{prompt_tokens (cached included), completion_tokens, cached_tokens, extra}, model_name?}``.

Conversion: a system step -> SystemMessage (the first; a later one -> HumanMessage marked
``is_system_step``: the agent's context notes), a user step -> HumanMessage, an agent step -> one
AIMessage (``message``; ``reasoning_content`` in ``additional_kwargs["reasoning"]``; its usage:
input = ``prompt_tokens``, cache read = ``cached_tokens``, cache creation =
``metrics.extra.cache_creation_input_tokens``) followed by its observation: a result naming a
``source_call_id`` -> the ToolMessage of that call; a result without one -> HumanMessage marked
as a text observation.  **Text-mode steps**: when none of a step's results names a call (agents
such as Terminus 2 parse their commands from the reply's text and report the tool calls they
derived), the calls are kept in ``additional_kwargs["atif_tool_calls"]`` and not as structured
calls, so no call is left unanswered; ``metadata["text_mode_steps"]`` counts them.  A result that
references a sub-agent's trajectory keeps the reference in its message
(``additional_kwargs["subagent_trajectory_ref"]``); ``metadata["subagent_refs"]`` lists them.  A
result naming a call of no earlier step is kept as an orphan and said in a warning.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect, join_key, need
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    stripped_head,
    tool_call,
    usage_metadata,
)
from ctxlab.transcripts.base import Transcript

_HEAD = re.compile(r'"schema_version"\s*:\s*"ATIF-v\d')


def is_trajectory(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("schema_version"), str)
        and data["schema_version"].startswith("ATIF")
        and isinstance(data.get("steps"), list)
    )


def _usage(metrics: Any) -> dict[str, Any] | None:
    if not isinstance(metrics, dict):
        return None
    raw_extra = metrics.get("extra")
    extra: dict[str, Any] = raw_extra if isinstance(raw_extra, dict) else {}
    return usage_metadata(
        metrics.get("prompt_tokens"),
        metrics.get("completion_tokens"),
        cache_read=metrics.get("cached_tokens"),
        cache_creation=extra.get("cache_creation_input_tokens"),
        reasoning=extra.get("reasoning_tokens"),
    )


def _content(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


class AtifFormat(JsonFormat):
    name = "atif"
    description = "Agent Trajectory Interchange Format (Harbor / Terminal-Bench trajectory.json)"

    def sniff(self, path: Path, head: str) -> bool:
        return stripped_head(head).startswith("{") and bool(_HEAD.search(head[:4096]))

    def match_json(self, data: Any) -> bool:
        return is_trajectory(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        expect(path, data, dict, "(top level)")
        b = MessageBuilder(path.name)
        agent = data.get("agent") if isinstance(data.get("agent"), dict) else {}
        meta: dict[str, Any] = {
            "schema_version": data.get("schema_version"),
            "session_id": data.get("session_id"),
            "agent": agent.get("name"),
            "text_mode_steps": 0,
            "subagent_refs": [],
        }
        if isinstance(data.get("final_metrics"), dict):
            meta["final_metrics"] = data["final_metrics"]
        models: list[str] = []
        for i, step in enumerate(need(path, data, "steps", list, "")):
            at = join_key("steps", i)
            source = need(path, expect(path, step, dict, at), "source", str, at)
            message = step.get("message")
            text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
            if source == "system":
                if b.messages:
                    b.human(text, is_system_step=True)
                else:
                    b.system(text)
                continue
            if source == "user":
                b.human(text)
                continue
            if isinstance(step.get("model_name"), str):
                models.append(step["model_name"])
            raw_calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)]
            obs = step.get("observation") if isinstance(step.get("observation"), dict) else {}
            results = [r for r in obs.get("results") or [] if isinstance(r, dict)]
            named = any(r.get("source_call_id") for r in results)
            calls = [
                tool_call(c.get("function_name"), c.get("arguments"), c.get("tool_call_id"))
                for c in raw_calls
            ]
            extra: dict[str, Any] = {}
            if isinstance(step.get("reasoning_content"), str):
                extra["reasoning"] = step["reasoning_content"]
            if calls and not named:
                extra["atif_tool_calls"] = calls
                meta["text_mode_steps"] += 1
                calls = []
            b.ai(text, calls, usage=_usage(step.get("metrics")), **extra)
            for r in results:
                ref = r.get("subagent_trajectory_ref")
                kw = {"subagent_trajectory_ref": ref} if ref else {}
                if ref:
                    meta["subagent_refs"].append(ref)
                call_id = r.get("source_call_id")
                if call_id:
                    b.tool(_content(r), call_id, **kw)
                else:
                    b.human(_content(r), observation=True, **kw)
        model = (
            agent.get("model_name")
            if isinstance(agent.get("model_name"), str)
            else (models[-1] if models else None)
        )
        return [b.transcript(path, self.name, model=model, metadata=meta)]


FORMAT = AtifFormat()
