"""Claude Code sessions (SOURCES.md format **F7**): a session JSONL file and its side files.

Shape: each line has ``type`` in ``user``/``assistant``/``queue-operation``/``system``/...;
common fields ``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``, ``cwd``, ``version``,
``gitBranch``, ``isSidechain``, ``isMeta``.  ``message`` is an Anthropic Messages API object:
assistant ``content`` blocks ``text``, ``thinking``, ``tool_use{id, name, input}``, plus ``model``
and ``id``; user ``content`` is a string or blocks, tool results being
``tool_result{tool_use_id, content, is_error}``.  One streamed assistant turn spans several lines
sharing ``message.id``.

**A session folder is one unit** (Claude Code 2.1): the main file ``<project>/<session>.jsonl``
and, beside it, ``<project>/<session>/subagents/agent-<id>.jsonl`` (a Task sub-agent's whole run),
``<project>/<session>/subagents/agent-acompact-<id>.jsonl`` (the request Claude Code sent to
summarise the session when it compacted it: not an agent run) and ``<project>/<session>/
tool-results/`` (tool outputs Claude Code saved to disk).  Loading the main file reads its side
files; :func:`ctxlab.transcripts.load_many` does not load them again (:func:`session_main_of`).

Conversion (:mod:`ctxlab.transcripts.claude_code_lines` reads the lines):

* assistant lines sharing ``message.id`` are merged into one AIMessage (text and tool_use in
  order; a later line of the same id is merged even when tool results came in between, so the
  results follow the whole turn).  Text alone becomes a string; thinking/other blocks keep the
  content a list of blocks.
* a user line with string content -> HumanMessage (``is_meta`` kept for hook feedback etc.);
  with blocks, each ``tool_result`` -> ToolMessage (``status="error"`` when ``is_error``) and each
  run of other blocks -> one HumanMessage, in source order.
* **synthetic turns**: an assistant line whose model is ``<synthetic>`` (Claude Code's stand-in
  for an API error, "Prompt is too long", "No response requested.") is kept as an AIMessage
  marked ``additional_kwargs[SYNTHETIC_KEY] = True`` with no usage: it is not a model call
  (:func:`ctxlab.transcripts.base.is_model_call`; a replay makes no row for it and sends it in no
  request).  ``metadata["synthetic_messages"]`` counts them.
* other line types (``queue-operation``, ``system``, ``summary``, ...) are not messages; they are
  counted in ``metadata["skipped_events"]``.
* **recorded compaction**: a ``system`` line with ``subtype: "compact_boundary"``
  (``compactMetadata{trigger, preTokens}``) marks where Claude Code compacted; the next user line
  with ``isCompactSummary: true`` holds the summary it continued from.  That HumanMessage is
  marked ``additional_kwargs[RECORDED_COMPACTION_KEY] = {index, trigger, pre_tokens, source,
  line}``; ``metadata["compactions"]`` counts the boundaries.  The compaction call's own file
  (``agent-acompact-*``) is counted in ``metadata["compaction_calls"]``, never a run; loaded by
  itself it is refused (``TranscriptError`` of kind ``"not_a_run"``).
* **microcompaction**: a ``system`` line with ``subtype: "microcompact_boundary"``
  (``microcompactMetadata{trigger, preTokens, tokensSaved, compactedToolIds}``) cleared the
  results of those tool calls from every later request (Claude Code sends
  ``[Old tool result content cleared]`` instead).  Each cleared ToolMessage keeps its content and
  is marked ``additional_kwargs[RECORDED_MICROCOMPACTION_KEY]`` (:mod:`ctxlab.transcripts.base`),
  which the ``recorded`` strategy replays; ``metadata["microcompactions"]`` counts the
  boundaries.  Ids the run does not hold are said in a warning.
* **sub-agents**: a sub-agent's run is its side file when there is one; otherwise the lines with
  ``isSidechain: true`` and the nested ``data.message`` of ``progress`` lines with ``data.type:
  "agent_progress"`` (the main file's copy, which lacks the sub-agent's text blocks and its last
  call) -- never both.  One run per ``agentId`` (``run_id`` ``agent-<agentId>``,
  ``agent-sidechain`` without one), after the main run, with ``metadata["parent_run"]`` (the main
  run's id), ``agent_id``, ``parent_tool_call_id`` (the main run's Task call: the
  ``parentToolUseID`` of the progress lines, else the Task result naming the agent in
  ``toolUseResult.agentId``) and ``file`` (where its messages came from); ``source`` is the main
  file (the unit).  The main run lists them in ``metadata["sub_agent_runs"]``.  A file holding
  only one sub-agent's lines, loaded by itself, is that run, named as a single-run file.
* **usage**: each AIMessage gets the provider's counts of its call as ``usage_metadata`` (the
  ``usage`` of the turn's last streamed line; input = ``input_tokens`` + cache reads + cache
  writes, with ``input_token_details``).

A cut-off last line (a live or crashed session) is left out with a warning; results whose
``tool_use_id`` has no earlier call are kept as they are (orphans are possible in resumed or
compacted sessions).  Errors: ``line N`` for a bad line, ``line N, key message.content`` for a bad
shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ctxlab.transcripts._util import HEAD_BYTES, split_lines, warn
from ctxlab.transcripts.base import Transcript, TranscriptError
from ctxlab.transcripts.claude_code_lines import (
    COMPACTION_AGENT_PREFIX,
    EVENT_TYPES,
    Lines,
    Run,
    is_message_line,
    looks_like_event,
    parse,
)

__all__ = ["FORMAT", "ClaudeCodeFormat", "session_main_of"]

_TYPE = re.compile(
    r'"type"\s*:\s*"(user|assistant|queue-operation|summary|system|file-history-snapshot|progress)"'
)


def session_main_of(path: Path) -> Path | None:
    """The main file of the session folder ``path`` belongs to (``<dir>/<session>.jsonl`` for
    ``<dir>/<session>/subagents/*`` and ``<dir>/<session>/tool-results/*``), when it exists."""
    if len(path.parts) < 3 or path.parent.name not in ("subagents", "tool-results"):
        return None
    session = path.parent.parent
    main = session.with_name(session.name + ".jsonl")
    return main if main.is_file() else None


def side_files(main: Path) -> list[Path]:
    """The sub-agent and compaction-call files of the session ``main``, sorted by name."""
    folder = main.with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


def is_compaction_call_file(path: Path) -> bool:
    return path.name.startswith(f"agent-{COMPACTION_AGENT_PREFIX}")


class ClaudeCodeFormat:
    name = "claude_code"
    description = "Claude Code session JSONL (F7) with its sub-agent files: Anthropic content blocks"

    def sniff(self, path: Path, head: str) -> bool:
        """True when the first complete lines are session lines and one of them is a message
        (or all are known bookkeeping lines)."""
        lines = split_lines(head)[:50]
        if len(head.encode("utf-8", errors="replace")) >= HEAD_BYTES and len(lines) > 1:
            lines = lines[:-1]  # the last line may be cut by the head limit
        objs = []
        for line in lines:
            if line.strip():
                try:
                    objs.append(json.loads(line))
                except (json.JSONDecodeError, RecursionError):  # not a line of ours (or cut off)
                    break
        if objs:
            if not all(looks_like_event(o) for o in objs):
                return False
            return any(is_message_line(o) for o in objs) or all(o["type"] in EVENT_TYPES for o in objs)
        line = head.lstrip().split("\n", 1)[0]  # one line longer than the head
        return (
            line.startswith("{")
            and bool(_TYPE.search(line))
            and ('"sessionId"' in line or '"parentUuid"' in line)
        )

    def match_line(self, obj: Any) -> bool:
        return looks_like_event(obj)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        lines = parse(path)
        if lines.is_compaction_call or (is_compaction_call_file(path) and not lines.runs[None].entries):
            raise TranscriptError(
                path,
                "",
                "a Claude Code compaction call (agent-acompact-*): the request that summarised a "
                "session, not an agent run; load the session's main file",
                kind="not_a_run",
            )
        main = lines.runs.pop(None)
        subs = {agent: run for agent, run in lines.runs.items() if agent is not None and run.has_messages}
        if not main.has_messages and len(subs) == 1:
            [(agent_id, run)] = subs.items()
            if not run.parent_call:  # a sub-agent's own file (subagents/agent-<id>.jsonl): its one run
                meta = {**lines.session, "skipped_events": dict(lines.skipped), "agent_id": agent_id}
                return [_built(path, run, path.name, self.name, run.model, {**meta, "parent_run": None})]
        if not main.has_messages:
            raise TranscriptError(path, "line 1", "no user or assistant messages in the session")
        compaction_calls, files = self._side_runs(path, subs, lines)
        model = main.model
        run_meta = {
            **lines.session,
            "skipped_events": dict(lines.skipped),
            "compactions": lines.compactions,
            "compaction_calls": compaction_calls,
            "sub_agent_runs": [f"agent-{agent}" for agent in subs],
        }
        if lines.microcompactions:
            run_meta["microcompactions"] = lines.microcompactions
        out = [_built(path, main, path.name, self.name, model, run_meta)]
        for agent_id, run in subs.items():
            sub_meta = {
                **lines.session,
                "parent_run": path.name,
                "agent_id": agent_id,
                "parent_tool_call_id": run.parent_call or lines.task_links.get(agent_id),
                "file": str(files.get(agent_id, path)),
            }
            out.append(_built(path, run, f"agent-{agent_id}", self.name, run.model or model, sub_meta))
        return out

    def _side_runs(self, path: Path, subs: dict[str, Run], lines: Lines) -> tuple[int, dict[str, Path]]:
        """Put each sub-agent side file's run in ``subs`` in place of the main file's copy (or
        beside the runs found in the main file); return the number of compaction-call files and
        the file of each side run."""
        compaction_calls = 0
        files: dict[str, Path] = {}
        for f in side_files(path):
            if is_compaction_call_file(f):
                compaction_calls += 1
                continue
            try:
                side = parse(f)
            except TranscriptError as exc:
                warn(path, f"sub-agent file {f.name}: {exc}; the main file's copy of it is used")
                continue
            if side.is_compaction_call:
                compaction_calls += 1
                continue
            found = {a: r for a, r in side.runs.items() if a is not None and r.has_messages}
            if side.runs[None].has_messages:
                warn(path, f"sub-agent file {f.name}: lines without isSidechain left out")
            for agent, run in found.items():
                copy = subs.get(agent)
                run.parent_call = run.parent_call or (copy.parent_call if copy else None)
                if copy is not None and not copy.in_file_copy:
                    warn(
                        path,
                        f"sub-agent {agent}: sidechain lines in the main file and {f.name}; the file is used",
                    )
                subs[agent] = run
                files[agent] = f
        for agent, run in subs.items():
            if not (run.parent_call or lines.task_links.get(agent)):
                warn(path, f"sub-agent {agent}: no Task call of the main run names it (not linked)")
        return compaction_calls, files


def _built(
    path: Path, run: Run, run_id: str, fmt: str, model: str | None, meta: dict[str, Any]
) -> Transcript:
    t, doubts = run.build(path, run_id, fmt, model, meta)
    for doubt in doubts:
        warn(path, f"{run_id}: {doubt}", t.metadata)
    return t


FORMAT = ClaudeCodeFormat()
