"""OpenHands resolver output (``openhands_resolver``): ``output/output.jsonl`` of the GitHub issue
resolver (``openhands.resolver.resolve_issue``), one run per line.

Shape: each line is a ``ResolverOutput`` ``{issue{owner, repo, number, title, body, ...},
issue_type, instruction, base_commit, git_patch, history, metrics{accumulated_cost, costs},
success, comment_success, result_explanation, error}``.  ``history`` is the run's event list,
either as OpenHands V0 events (``{id, source, action, args, ...}``, converted as F3a by
:func:`ctxlab.transcripts.openhands.convert_events`) or, in older resolver versions, as **flat
events**: an action ``{action, thought, command | code | content | outputs, ...}`` or an
observation ``{observation, content, command | code, exit_code, ...}``, without source or tool-call
ids (prompt-based CodeAct).

Conversion of flat events (text mode, as the CodeAct agent built its prompt from them): the first
``message`` action (the instruction) -> HumanMessage, a later one -> AIMessage; a ``run`` action ->
AIMessage ``"<thought>\\n<execute_bash>\\n<command>\\n</execute_bash>"``, ``run_ipython`` the same
with ``<execute_ipython>`` and its ``code`` (CodeAct's own rendering of an action); other actions
(``finish`` ...) -> AIMessage of their thought; every observation -> HumanMessage marked as a text
observation with its ``content``.  ``run_id`` is ``<owner>/<repo>#<number>`` of the issue; the
metadata keeps ``success``, ``issue_type``, ``accumulated_cost`` and whether there is a patch.

Errors: ``line N`` for a line that is not a resolver output; ``line N, key history[i]`` for a bad
event.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._checks import as_dict, expect, need, objects
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    iter_jsonl,
    read_text,
    stripped_head,
    unique_run_id,
)
from ctxlab.transcripts.base import Transcript, TranscriptError
from ctxlab.transcripts.openhands import convert_events

#: how CodeAct wrote an action into its prompt: action -> (tag, field holding the code)
CODEACT_TAGS = {"run": ("execute_bash", "command"), "run_ipython": ("execute_ipython", "code")}


def is_output(obj: Any) -> bool:
    """A resolver output line: ``issue{owner, repo, number}`` and a ``history`` list."""
    issue = obj.get("issue") if isinstance(obj, dict) else None
    return (
        isinstance(issue, dict)
        and {"owner", "repo", "number"} <= set(issue)
        and isinstance(obj.get("history"), list)
    )


def add_flat_events(path: Path, b: MessageBuilder, events: list[Any], where: str) -> None:
    """Append flat (pre-V0) resolver events to ``b`` in text mode (see the module docstring)."""
    for at, ev in objects(path, events, where):
        action, obs = ev.get("action"), ev.get("observation")
        if action is not None:
            thought = str(ev.get("thought") or "")
            if action == "message":
                text = ev.get("content") or ""
                if any(isinstance(m, AIMessage) for m in b.messages):
                    b.ai(text)
                else:
                    b.human(text)
            elif action in CODEACT_TAGS:
                tag, key = CODEACT_TAGS[action]
                b.ai(f"{thought}\n<{tag}>\n{ev.get(key) or ''}\n</{tag}>".lstrip("\n"))
            else:
                b.ai(thought)
        elif obs is not None:
            b.human(ev.get("content") or "", observation=True)
        else:
            raise TranscriptError(path, f"key {at}", "event has neither 'action' nor 'observation'")


class OpenHandsResolverFormat(JsonFormat):
    name = "openhands_resolver"
    description = "OpenHands issue-resolver output.jsonl: one run per resolved issue"

    def sniff(self, path: Path, head: str) -> bool:
        first = stripped_head(head).split("\n", 1)[0]
        return first.startswith('{"issue"') and '"owner"' in first[:2000] and '"history"' in first

    def match_json(self, data: Any) -> bool:
        return is_output(data)

    def match_line(self, obj: Any) -> bool:
        return is_output(obj)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        return [self._run(path, data, 1, Counter())]

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        seen: Counter[str] = Counter()
        return [self._run(path, obj, n, seen) for n, obj in iter_jsonl(path, read_text(path))]

    def _run(self, path: Path, obj: Any, lineno: int, seen: Counter[str]) -> Transcript:
        try:
            expect(path, obj, dict, "(line)")
            issue = need(path, obj, "issue", dict, "")
            history = need(path, obj, "history", list, "")
            run_id = unique_run_id(seen, f"{issue.get('owner')}/{issue.get('repo')}#{issue.get('number')}")
            b = MessageBuilder(run_id)
            tools: list[dict[str, Any]] = []
            if any(isinstance(e, dict) and ("source" in e or "args" in e) for e in history):
                tools, _ = convert_events(path, history, b, "history")
                mode = "events"
            else:
                add_flat_events(path, b, history, "history")
                mode = "flat"
        except TranscriptError as exc:  # name the line as well as the key
            raise TranscriptError(path, f"line {lineno}, {exc.where}", exc.problem) from exc
        metrics = as_dict(obj.get("metrics"))
        meta = {
            "line": lineno,
            "issue": {k: issue.get(k) for k in ("owner", "repo", "number", "title")},
            "issue_type": obj.get("issue_type"),
            "success": obj.get("success"),
            "error": obj.get("error"),
            "accumulated_cost": metrics.get("accumulated_cost"),
            "has_patch": bool(obj.get("git_patch")),
            "history_form": mode,
        }
        return b.transcript(path, self.name, tools=tools, metadata=meta)


FORMAT = OpenHandsResolverFormat()
__all__ = ["FORMAT", "add_flat_events", "is_output"]
