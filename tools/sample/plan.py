"""The conversation of the sample: its system prompt, the four user turns, and the scripted plan
that answers them (one sub-plan per user turn)."""

from __future__ import annotations

from tools.sample.plan_followups import turn_pairing, turn_summarization, turn_sync_async
from tools.sample.plan_survey import turn_survey
from tools.sample.script import Plan, Turns

__all__ = ["SYSTEM_PROMPT", "USER_TURNS", "scripted_plan"]

SYSTEM_PROMPT = """\
You are a careful senior Python engineer working as a research agent inside a sandbox.

Tools:
- read_file(file_path, offset=1, limit=2000): read a text file with line numbers. Paths are
  relative to the Python site-packages directory (e.g. `langchain/agents/factory.py`), or to your
  workspace when they start with `workspace/`. Output is capped at 40,000 characters; use
  offset/limit to page through long files.
- run_command(command): run one command, without a shell (no pipes, no redirection), from the
  site-packages directory. Allowed programs: ls, grep, wc, head, tail and `python -c`. Globs are
  expanded. Paths starting with `workspace/` refer to your workspace.
- write_file(file_path, content): create or overwrite a file in your workspace.
- edit_file(file_path, old_string, new_string, replace_all=False): replace an exact string in a
  workspace file; old_string must be unique unless replace_all is true.

Working rules:
- Ground every claim in the installed source: cite `path:line`.
- Prefer narrow reads (grep first, then read the lines you need) and keep notes in the workspace
  so that you do not have to re-read large files.
- When you run experiments, keep them small and print only what you need.
- Write reports in Markdown. Be precise about sync vs async behaviour and ordering.
"""

USER_TURNS = (
    "I want to understand how LangChain v1's agent middleware works under the hood before we write "
    "our own context-compression middleware. Please survey the installed packages: the hook types in "
    "`langchain.agents.middleware`, how `create_agent` wires them into the LangGraph graph (ordering, "
    "sync vs async, jumps), and how DeepAgents builds its own middleware stack on top. Keep notes in "
    "the workspace as you go and write a report to `report/middleware_survey.md` with file:line "
    "references.",
    "Good. Next, compare DeepAgents' SummarizationMiddleware with LangChain's: when does each one "
    "trigger, what does it keep, and what does it offload to files? Add a section to the report.",
    "Can you double-check the sync/async story? For every built-in middleware in both packages, which "
    "hooks have a sync and which an async implementation? Put a table in the report, and flag any "
    "that would break or silently fall back under `ainvoke`.",
    "Last thing: how do these middlewares keep an AIMessage's tool calls together with their "
    "ToolMessages when they cut or trim history? Add a short section with line references, then "
    "give me a summary of the whole report.",
)


def scripted_plan(t: Turns) -> Plan:
    """The whole run: four user turns, each ending with an answer without tool calls."""
    yield from turn_survey(t)
    yield from turn_summarization(t)
    yield from turn_sync_async(t)
    yield from turn_pairing(t)
