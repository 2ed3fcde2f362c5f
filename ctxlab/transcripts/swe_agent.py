"""SWE-agent ``.traj`` files (SOURCES.md format **F1**).

Shape: one JSON object with ``history`` (the messages actually sent to the model: ``role`` in
``system``/``user``/``assistant``/``tool``, ``content``, plus ``agent``, ``message_type``,
``thought``, ``action``, ``is_demo``), ``trajectory`` (steps ``{thought, action, observation,
response, ...}``), ``info`` (``exit_status``, ``model_stats``, ``submission``, ...), ``environment``
and sometimes ``replay_config`` (an object or a JSON string).

Conversion (one Transcript per file, from ``history``):

* function-calling configs: ``assistant.tool_calls=[{id, function{name, arguments}}]`` become
  ``AIMessage.tool_calls``; ``tool`` messages carry ``tool_call_ids: [id]`` and become
  ToolMessages answering the first id (the call's name is looked up by id).
* text configs: the tool output is a ``user`` message; every user message after the first
  assistant message is a text observation (``additional_kwargs[OBSERVATION_KEY]``, listed in
  ``Transcript.observations``).  Demonstration messages keep ``additional_kwargs["is_demo"]``.
* ``history`` is kept as recorded; nothing is added from ``trajectory``.  When ``history`` holds
  fewer (non-demonstration) assistant messages than ``trajectory`` has steps and its last
  assistant action is not the trajectory's last action (a function-calling run that stops before
  its final ``submit`` call), the loader warns (:class:`TranscriptWarning`) and records
  ``metadata["history_missing_final_step"] = {"missing_steps", "final_action"}`` (else ``None``):
  the replay then ends before the run's last model call.

Errors: ``key history`` missing or not a list, ``key history[i].role`` etc.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import as_dict, expect, join_key, need, objects, top_key
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, openai_call, stripped_head, warn
from ctxlab.transcripts.base import Transcript, TranscriptError

_TRAJECTORY = re.compile(r'"trajectory"\s*:\s*\[')
_HISTORY = re.compile(r'"history"\s*:\s*\[')


class SweAgentFormat(JsonFormat):
    name = "swe_agent"
    description = "SWE-agent .traj (F1): history messages, text or function-calling tools"

    def sniff(self, path: Path, head: str) -> bool:
        if path.suffix == ".traj":
            return True
        h = stripped_head(head)
        if not h.startswith("{") or '"trajectory_format"' in h:
            return False
        return bool(_TRAJECTORY.search(h)) and (bool(_HISTORY.search(h)) or '"environment"' in h)

    def match_json(self, data: Any) -> bool:
        return (
            isinstance(data, dict)
            and isinstance(data.get("history"), list)
            and isinstance(data.get("trajectory"), list)
        )

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        history = top_key(path, data, "history", list)
        info = as_dict(data.get("info"))
        b = MessageBuilder(path.name)
        seen_assistant = False
        for at, msg in objects(path, history, "history"):
            role = need(path, msg, "role", str, at)
            content = msg.get("content")
            extra: dict[str, Any] = {"is_demo": True} if msg.get("is_demo") else {}
            if role == "system":
                b.system(content, **extra)
            elif role == "user":
                b.human(content, observation=seen_assistant, **extra)
            elif role == "assistant":
                seen_assistant = True
                raw_calls = msg.get("tool_calls") or []
                calls = [openai_call(raw) for _, raw in objects(path, raw_calls, join_key(at, "tool_calls"))]
                b.ai(content, calls, **extra)
            elif role == "tool":
                ids = msg.get("tool_call_ids") or ([msg["tool_call_id"]] if msg.get("tool_call_id") else [])
                expect(path, ids, list, join_key(at, "tool_call_ids"))
                if len(ids) > 1:
                    extra["tool_call_ids"] = list(ids)
                b.tool(content, ids[0] if ids else None, **extra)
            else:
                raise TranscriptError(path, f"key {join_key(at, 'role')}", f"unknown role {role!r}")
        stats = as_dict(info.get("model_stats"))
        meta: dict[str, Any] = {
            "history_missing_final_step": _missing_final_step(history, data.get("trajectory")),
            "instance_id": path.stem,
            "exit_status": info.get("exit_status"),
            "model_stats": stats,
            "trajectory_steps": len(data.get("trajectory") or []),
            "environment": data.get("environment"),
            "function_calling": any(getattr(m, "tool_calls", None) for m in b.messages),
        }
        missing = meta["history_missing_final_step"]
        if missing:
            warn(
                path,
                f"history lacks the trajectory's last {missing['missing_steps']} step(s) (final action "
                f"{missing['final_action']!r}); loaded as recorded, ending before that model call",
                meta,
            )
        return [b.transcript(path, self.name, model=_model(data), metadata=meta)]


def _missing_final_step(history: list[Any], trajectory: Any) -> dict[str, Any] | None:
    """``{"missing_steps", "final_action"}`` when ``history`` stops before ``trajectory`` does."""
    if not isinstance(trajectory, list) or not trajectory or not isinstance(trajectory[-1], dict):
        return None
    turns = [
        m for m in history if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("is_demo")
    ]
    final = trajectory[-1].get("action")
    last = turns[-1].get("action") if turns else None
    if len(turns) >= len(trajectory) or (
        isinstance(final, str) and isinstance(last, str) and final.strip() == last.strip()
    ):
        return None
    return {"missing_steps": len(trajectory) - len(turns), "final_action": final}


def _model(data: dict[str, Any]) -> str | None:
    """``replay_config.agent.model.name`` when recorded (older files record no model)."""
    cfg = data.get("replay_config")
    if isinstance(cfg, str):
        try:
            cfg = json.loads(cfg)
        except json.JSONDecodeError:
            return None
    if not isinstance(cfg, dict):
        return None
    model = (cfg.get("agent") or {}).get("model") if isinstance(cfg.get("agent"), dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


FORMAT = SweAgentFormat()
