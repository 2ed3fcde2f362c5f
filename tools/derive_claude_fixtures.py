"""Write the Claude Code fixtures of issue 29 (``tests/data/claude-code-*``) from public sessions.

The sources are real Claude Code 2.1 sessions kept by https://github.com/rcgray/claude-code-bug-phantom-reads-17407
(MIT, © 2025 Robert C. Gray) under ``dev/misc/`` at commit
``96731ef211669bf0c7f903ae4c49291b450bf9d2``; give this script a checkout of that commit::

    .venv/bin/python -m tools.derive_claude_fixtures PATH/TO/claude-code-bug-phantom-reads-17407

It writes (details in ``tests/data/SOURCES.md``):

* ``claude-code-synthetic/22c9f3be-....jsonl`` -- a byte-for-byte copy (three model calls and
  one ``<synthetic>`` "Prompt is too long" turn);
* ``claude-code-microcompact/b811ba2a-....jsonl`` -- the session with two
  ``microcompact_boundary`` lines, without what ctxlab never reads so that it stays small: the
  ``toolUseResult`` key of every line (Claude Code's UI copy of a tool result) and the
  ``file-history-snapshot`` lines.  Every message, usage and boundary is as recorded;
* ``claude-code-session/800d0f7b-....jsonl`` with ``800d0f7b-.../subagents/agent-a51f8d5.jsonl``
  -- a session with a Task sub-agent (its side file and the main file's ``agent_progress`` copy),
  every text over 600 characters in a tool result, a ``toolUseResult`` or a
  ``<local-command-stdout>`` shortened to its first 400 characters plus a note saying how many
  were left out (the files are 484 KB and 323 KB otherwise); messages, calls, ids and usage are
  as recorded.  Beside them ``subagents/agent-acompact-5e1f0c2a9b7d4e36.jsonl``, **made up** in
  the shape Claude Code writes a compaction call's file (sidechain lines of agent
  ``acompact-<id>``): no public one was found.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1] / "tests" / "data"
SYNTHETIC = "experiment-04d/20260126-081607/22c9f3be-569b-42ee-86ed-20644f79c5ef.jsonl"
MICRO = "barebones-2115/20260128-130258/b811ba2a-b3e3-44cf-8a97-c6b79d9eb8b5.jsonl"
SESSION = "schema-13-2120/20260129-204305/800d0f7b-eaa5-4c23-9a5c-3db4294bc504"
AGENT = "agent-a51f8d5.jsonl"
COMPACT_ID = "acompact-5e1f0c2a9b7d4e36"
KEEP, LIMIT = 400, 600


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")


def _short(text: str) -> str:
    if len(text) <= LIMIT:
        return text
    return text[:KEEP] + f"\n[... {len(text) - KEEP} characters left out of this fixture]"


def _shorten(value: Any) -> Any:
    """Every long string inside ``value`` shortened (lists and dicts walked)."""
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    return value


def _shorten_line(line: dict[str, Any]) -> dict[str, Any]:
    out = dict(line)
    if "toolUseResult" in out:
        out["toolUseResult"] = _shorten(out["toolUseResult"])
    message = out.get("message")
    if isinstance(message, dict) and out.get("type") == "user":
        content = message.get("content")
        if isinstance(content, str) and content.startswith("<local-command-stdout>"):
            content = _short(content)
        elif isinstance(content, list):
            content = [_shorten(b) if b.get("type") == "tool_result" else b for b in content]
        out["message"] = {**message, "content": content}
    data = out.get("data")
    if isinstance(data, dict) and isinstance(data.get("message"), dict):
        out["data"] = {**data, "message": _shorten_line(data["message"])}
    return out


def _compaction_call(main: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A made-up compaction call file: the shape only (no public one was found)."""
    first = next(x for x in main if x.get("sessionId"))
    common: dict[str, Any] = {k: first[k] for k in ("cwd", "sessionId", "version", "gitBranch") if k in first}
    ask = "Summarise the conversation so far for a continuation (fixture text, not Claude Code's)."
    reply = "<summary>The user asked for a WPD analysis; a sub-agent read eight specifications.</summary>"
    return [
        {
            "parentUuid": None,
            "isSidechain": True,
            "agentId": COMPACT_ID,
            "type": "user",
            "uuid": "00000000-0000-4000-8000-000000000001",
            **common,
            "message": {"role": "user", "content": ask},
        },
        {
            "parentUuid": "00000000-0000-4000-8000-000000000001",
            "isSidechain": True,
            "agentId": COMPACT_ID,
            "type": "assistant",
            "uuid": "00000000-0000-4000-8000-000000000002",
            **common,
            "message": {
                "id": "msg_fixture_compaction",
                "model": "claude-opus-4-5-20251101",
                "role": "assistant",
                "content": [{"type": "text", "text": reply}],
            },
        },
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    misc = Path(argv[0]) / "dev" / "misc"
    out = HERE / "claude-code-synthetic" / Path(SYNTHETIC).name
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(misc / SYNTHETIC, out)
    micro = [
        {k: v for k, v in x.items() if k != "toolUseResult"}
        for x in _lines(misc / MICRO)
        if x.get("type") != "file-history-snapshot"
    ]
    _write(HERE / "claude-code-microcompact" / Path(MICRO).name, micro)
    name = Path(SESSION).name
    main_lines = [_shorten_line(x) for x in _lines(misc / f"{SESSION}.jsonl")]
    folder = HERE / "claude-code-session"
    _write(folder / f"{name}.jsonl", main_lines)
    side = [_shorten_line(x) for x in _lines(misc / SESSION / "subagents" / AGENT)]
    _write(folder / name / "subagents" / AGENT, side)
    _write(folder / name / "subagents" / f"agent-{COMPACT_ID}.jsonl", _compaction_call(main_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
