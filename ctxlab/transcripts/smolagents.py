"""smolagents memory dumps (``smolagents_memory``): ``json.dumps(agent.memory.get_full_steps())``
or ``get_succinct_steps()`` of a ``ToolCallingAgent``/``CodeAgent`` (https://github.com/
huggingface/smolagents, Apache-2.0: ``memory.py``, ``models.py``).

Shape: a JSON list of step dicts without a type tag, told apart by their keys: the system prompt
``{system_prompt}``, a task ``{task, task_images}``, a planning step ``{plan, model_output_message,
token_usage, ...}``, an action step ``{step_number, model_output, model_output_message,
tool_calls: [{id, type: "function", function: {name, arguments}}], observations, error,
action_output, token_usage: {input_tokens, output_tokens}, is_final_answer, model_input_messages?}``,
a final answer ``{output}``.

Conversion -- what ``write_memory_to_messages`` sends the model, in text (smolagents sends tool
calls and their observations as text messages, its ``tool-call`` role as the assistant's and its
``tool-response`` role as the user's, and joins consecutive messages of one role):

* system prompt -> SystemMessage; task -> HumanMessage ``New task:\\n<task>``;
* an action step -> one AIMessage: its ``model_output``, then ``Calling tools:\\n<the calls as
  Python writes the list>``, with the step's ``token_usage``; its observations ->
  HumanMessage ``Observation:\\n…`` and its error -> HumanMessage ``Call id: …\\nError:\\n…``,
  both marked as text observations;
* a planning step -> AIMessage (the plan, with its usage) and HumanMessage (the plan's follow-up
  is smolagents' own text: left out, said in ``metadata["planning_steps"]``);
* the final answer step is no message (its output is the last call's action output).

No structured tool calls or results (text mode, like mini-swe-agent): ``tool_calls`` of the
steps are kept in ``additional_kwargs["smolagents_tool_calls"]``.  Steps of an unknown shape are
left out with a warning naming how many.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._checks import expect, join_key
from ctxlab.transcripts._util import JsonFormat, MessageBuilder, stripped_head, usage_metadata, warn
from ctxlab.transcripts.base import Transcript

_START = re.compile(r'\A\[\s*\{\s*"(system_prompt|task|step_number|model_input_messages|timing)"\s*:')


def _kind(step: Any) -> str:
    if not isinstance(step, dict):
        return "?"
    if "system_prompt" in step:
        return "system"
    if "task" in step and "step_number" not in step:
        return "task"
    if "plan" in step:
        return "planning"
    if "step_number" in step and ("model_output" in step or "observations" in step):
        return "action"
    if set(step) <= {"output", "final_answer"} or ("output" in step and "step_number" not in step):
        return "final"
    return "?"


def is_memory(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(s, dict) for s in data)
        and any(_kind(s) == "action" for s in data)
        and _kind(data[0]) in ("system", "task")
    )


def _usage(raw: Any) -> dict[str, Any] | None:
    return (
        usage_metadata(raw.get("input_tokens"), raw.get("output_tokens")) if isinstance(raw, dict) else None
    )


def _output_text(step: dict[str, Any]) -> str:
    out = step.get("model_output")
    if isinstance(out, str):
        return out.strip()
    msg = step.get("model_output_message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict)).strip()
    return ""


class SmolagentsFormat(JsonFormat):
    name = "smolagents_memory"
    description = "smolagents agent.memory steps (get_full_steps/get_succinct_steps JSON), text mode"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return bool(_START.match(h)) and ('"step_number"' in h or '"model_output' in h)

    def match_json(self, data: Any) -> bool:
        return is_memory(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        b = MessageBuilder(path.name)
        unknown = 0
        planning = 0
        for i, step in enumerate(expect(path, data, list, "(top level)")):
            kind = _kind(step)
            expect(path, step, dict, join_key("", i))
            if kind == "system":
                b.system(str(step["system_prompt"]))
            elif kind == "task":
                b.human(f"New task:\n{step['task']}")
            elif kind == "planning":
                planning += 1
                b.ai(str(step.get("plan") or ""), usage=_usage(step.get("token_usage")))
            elif kind == "action":
                calls = step.get("tool_calls") if isinstance(step.get("tool_calls"), list) else None
                parts = [x for x in (_output_text(step),) if x]
                if calls:
                    parts.append("Calling tools:\n" + str(calls))
                extra = {"smolagents_tool_calls": calls} if calls else {}
                b.ai("\n".join(parts), usage=_usage(step.get("token_usage")), **extra)
                if step.get("observations") is not None:
                    b.human(f"Observation:\n{step['observations']}", observation=True)
                if step.get("error") is not None:
                    error = step["error"].get("message") if isinstance(step["error"], dict) else step["error"]
                    head = f"Call id: {calls[0].get('id')}\n" if calls and isinstance(calls[0], dict) else ""
                    b.human(f"{head}Error:\n{error}", observation=True)
            elif kind != "final":
                unknown += 1
        meta: dict[str, Any] = {"planning_steps": planning}
        if unknown:
            warn(path, f"left out {unknown} step(s) of an unknown shape", meta)
        return [b.transcript(path, self.name, metadata=meta)]


FORMAT = SmolagentsFormat()
