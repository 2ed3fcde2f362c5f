"""τ-bench historical trajectories (SOURCES.md format **F6**): one JSON list of runs.

Shape: ``[{task_id, trial, reward, info{task{user_id, actions, instruction, outputs}, source,
user_cost, reward_info}, traj: [<OpenAI chat messages>]}, ...]``.  ``traj`` holds ``system``
(domain policy), ``user`` (the LLM-simulated customer), ``assistant`` with optional
``tool_calls=[{id, type, function{name, arguments}}]`` (``content`` may be ``null``) and ``tool``
messages ``{role: "tool", tool_call_id, name, content}``.

One Transcript per run, ``run_id = "task<task_id>-trial<trial>"`` (made unique with ``#n`` if a
file repeats a pair).  The model is not recorded in the file (the file name may say it).

Errors: ``key [i].traj`` missing or not a list, ``key [i].traj[j].role`` ...
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import as_dict, expect, join_key, need, objects
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    add_openai_messages,
    stripped_head,
    unique_run_id,
)
from ctxlab.transcripts.base import Transcript

_TRAJ = re.compile(r'"traj"\s*:\s*\[')


class TauBenchFormat(JsonFormat):
    name = "tau_bench"
    description = "τ-bench trajectory list (F6): many runs per file, OpenAI messages in traj"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return h.startswith("[") and bool(_TRAJ.search(h)) and '"task_id"' in h

    def match_json(self, data: Any) -> bool:
        return (
            isinstance(data, list)
            and bool(data)
            and all(isinstance(r, dict) and isinstance(r.get("traj"), list) for r in data[:5])
        )

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        expect(path, data, list, "(top level)")
        out = []
        seen: Counter[str] = Counter()
        for i, (at, run) in enumerate(objects(path, data, "")):
            traj = need(path, run, "traj", list, at)
            b = MessageBuilder(unique_run_id(seen, f"task{run.get('task_id')}-trial{run.get('trial')}"))
            add_openai_messages(path, b, traj, join_key(at, "traj"))
            info = as_dict(run.get("info"))
            task = as_dict(info.get("task"))
            meta = {
                "index": i,
                "task_id": run.get("task_id"),
                "trial": run.get("trial"),
                "reward": run.get("reward"),
                "user_id": task.get("user_id"),
                "end_source": info.get("source"),
                "user_cost": info.get("user_cost"),
            }
            out.append(b.transcript(path, self.name, metadata=meta))
        return out


FORMAT = TauBenchFormat()
