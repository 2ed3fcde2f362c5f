"""Gemini CLI's headless output (``gemini_json_output``): ``gemini -p PROMPT --output-format json``.

Shape (Gemini CLI ``docs/cli/headless.md``, https://github.com/google-gemini/gemini-cli,
Apache-2.0): one JSON object ``{response: str, stats: {models: {<model>: {api: {totalRequests,
totalErrors, totalLatencyMs}, tokens: {prompt, candidates, total, cached, thoughts, tool}}},
tools: {totalCalls, totalSuccess, totalFail, byName: {<tool>: {count, ...}}}, files: {...}},
error?: {type, message, code}, session_id?}``.

What it holds is the **final reply only**: neither the prompt nor the model's intermediate
replies and tool calls are in it.  It loads as one AIMessage (the response), and a warning says
how many model requests and tool calls the file leaves out (``metadata["requests"]``,
``["tool_calls_by_name"]``).  The token counts are for the whole run: the AIMessage gets them as
its usage only when the run made exactly one model request (input = ``prompt``, cached included;
cache read = ``cached``; output = ``candidates``; reasoning = ``thoughts``); otherwise they stay
in ``metadata["stats"]``.  A file with an ``error`` and no response has no conversation and is
refused; the error is kept in ``metadata["error"]``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import JsonFormat, MessageBuilder, stripped_head, usage_metadata, warn
from ctxlab.transcripts.base import Transcript, TranscriptError

_HEAD = re.compile(r'\A\{\s*("session_id"\s*:\s*"[^"]*"\s*,\s*)?"(response|stats)"\s*:')


def is_output(data: Any) -> bool:
    stats = data.get("stats") if isinstance(data, dict) else None
    return (
        isinstance(stats, dict)
        and isinstance(stats.get("models"), dict)
        and ("response" in data or "error" in data)
    )


class GeminiJsonOutputFormat(JsonFormat):
    name = "gemini_json_output"
    description = "gemini --output-format json: the final response and the run's stats"

    def sniff(self, path: Path, head: str) -> bool:
        return bool(_HEAD.match(stripped_head(head))) and '"models"' in head

    def match_json(self, data: Any) -> bool:
        return is_output(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        if not is_output(data):
            raise TranscriptError(path, "top level", "expected {response, stats: {models}}")
        stats = data["stats"]
        models = {k: v for k, v in stats["models"].items() if isinstance(v, dict)}
        requests = {k: int((v.get("api") or {}).get("totalRequests") or 0) for k, v in models.items()}
        tools = stats.get("tools") if isinstance(stats.get("tools"), dict) else {}
        by_name = {k: v.get("count") for k, v in (tools.get("byName") or {}).items() if isinstance(v, dict)}
        meta: dict[str, Any] = {
            "session_id": data.get("session_id"),
            "requests": requests,
            "tool_calls_by_name": by_name,
            "stats": stats,
        }
        if data.get("error"):
            meta["error"] = data["error"]
        b = MessageBuilder(path.name)
        response = data.get("response")
        usage = None
        if sum(requests.values()) == 1:
            tokens = next(iter(models.values())).get("tokens") or {}
            usage = usage_metadata(
                tokens.get("prompt"),
                tokens.get("candidates"),
                cache_read=tokens.get("cached"),
                reasoning=tokens.get("thoughts"),
            )
        if isinstance(response, str) and response:
            b.ai(response, usage=usage)
        model = max(requests, key=lambda k: requests[k]) if requests else None
        t = b.transcript(path, self.name, model=model, metadata=meta)
        if t.messages:
            warn(
                path,
                f"holds only the final reply: the prompt, {max(sum(requests.values()) - 1, 0)} earlier model "
                f"request(s) and {sum(v or 0 for v in by_name.values())} tool call(s) are not in the file",
                meta,
            )
        return [t]


FORMAT = GeminiJsonOutputFormat()
