"""mini-swe-agent ``.traj.json`` files (SOURCES.md format **F2**).

Shape: one JSON object ``{info, messages, trajectory_format: "mini-swe-agent-1", instance_id}``;
``info`` has ``exit_status``, ``submission``, ``model_stats{instance_cost, api_calls}``,
``mini_version`` and ``config`` (``config.model.model_name``).  ``messages`` are OpenAI-style
``{role, content, extra}`` with ``role`` in ``system``/``user``/``assistant``.

There are no structured tool calls: the assistant writes one ```` ```bash ```` block and the
result returns as the next ``user`` message (``<returncode>N</returncode><output>...``, a format
warning, or the final submission).  The text is kept exactly; every user message after the first
assistant message is marked as a text observation (``additional_kwargs[OBSERVATION_KEY] = True``
and its index in ``Transcript.observations``).  So tool-call and pair counts are 0.  Newer
versions may record native ``tool_calls``/``tool`` messages (converted as in F4) and end with a
bookkeeping ``{"role": "exit"}`` message, which is not a message sent to the model: it is left
out and its content kept in ``metadata["exit_message"]``.

Note: a message index in the file therefore equals the Transcript index only up to that exit.

Errors: ``key messages`` missing or not a list, ``key messages[i].role`` ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import as_dict, str_field, top_key
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, add_openai_messages, stripped_head
from ctxlab.transcripts.base import Transcript


class MiniSweAgentFormat(JsonFormat):
    name = "mini_swe_agent"
    description = "mini-swe-agent .traj.json (F2): text actions, observations as user messages"

    def sniff(self, path: Path, head: str) -> bool:
        if path.name.endswith(".traj.json"):
            return True
        h = stripped_head(head)
        return h.startswith("{") and ('"mini-swe-agent' in h or '"mini_version"' in h)

    def match_json(self, data: Any) -> bool:
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            return False
        info = data.get("info")
        return str(data.get("trajectory_format", "")).startswith("mini-swe-agent") or (
            isinstance(info, dict) and "mini_version" in info
        )

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        messages = top_key(path, data, "messages", list)
        info = as_dict(data.get("info"))
        b = MessageBuilder(path.name)
        exits = [m for m in messages if isinstance(m, dict) and m.get("role") == "exit"]
        kept = [m for m in messages if not (isinstance(m, dict) and m.get("role") == "exit")]
        add_openai_messages(path, b, kept, "messages", text_observations="after_assistant")
        config = as_dict(info.get("config"))
        model_cfg = as_dict(config.get("model"))
        stats = as_dict(info.get("model_stats"))
        meta = {
            "instance_id": data.get("instance_id"),
            "exit_status": info.get("exit_status"),
            "api_calls": stats.get("api_calls"),
            "instance_cost": stats.get("instance_cost"),
            "mini_version": info.get("mini_version"),
            "trajectory_format": data.get("trajectory_format"),
        }
        if exits:  # newer versions end with a bookkeeping {"role": "exit"} message (not sent)
            meta["exit_message"] = exits[-1].get("content")
        return [b.transcript(path, self.name, model=str_field(model_cfg, "model_name"), metadata=meta)]


FORMAT = MiniSweAgentFormat()
