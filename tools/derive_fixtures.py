"""Write the two derived fixtures of ``tests/data`` from files of the shared public set.

No public file was found for two formats, so these are built from real public runs (see
``tests/data/SOURCES.md``); ``tests/test_transcripts_formats.py`` checks that the committed files
are what this script writes::

    .venv/bin/python -m tools.derive_fixtures          # rewrite them
    .venv/bin/python -m tools.derive_fixtures --check  # exit 1 when they differ

* ``anthropic-messages/coverage-test-fix.messages.json`` -- the Anthropic Messages API list that
  the Claude Code session ``raw/claude-code/.../coverage-test-fix/transcript.jsonl`` sent: the
  ``message`` of every ``user``/``assistant`` line, reduced to ``{role, content}``; the streamed
  lines of one assistant message (same ``message.id``) joined into one message; consecutive user
  lines joined into one user message (string content as a text block), as the API requires
  alternating roles.
* ``openai-responses/rollout-019b7f94.items.json`` -- the OpenAI Responses API items of the Codex
  CLI rollout ``wild/codex-cli/rollout-...-019b7f94-....jsonl``: the ``payload`` of every
  ``response_item`` line, in order, without Codex's own ``ghost_snapshot`` items.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: the fixtures' folder: ``tests/data`` of the repository
HERE = Path(__file__).resolve().parents[1] / "tests" / "data"
SHARED = (HERE.parents[1] / ".." / "shared" / "transcripts").resolve()
CLAUDE = SHARED / "raw/claude-code/snapshot-tests/tests/coverage-test-fix/transcript.jsonl"
CODEX = SHARED / "wild/codex-cli/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
OUT_ANTHROPIC = HERE / "anthropic-messages" / "coverage-test-fix.messages.json"
OUT_RESPONSES = HERE / "openai-responses" / "rollout-019b7f94.items.json"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def anthropic_messages() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    last_id = None
    for line in _lines(CLAUDE):
        if line.get("type") not in ("user", "assistant") or not isinstance(line.get("message"), dict):
            continue
        msg = line["message"]
        role = msg["role"]
        if role == "assistant":
            target = next((m for m in reversed(out) if m["role"] == "assistant"), None)
            if target is not None and msg.get("id") is not None and msg.get("id") == last_id:
                target["content"].extend(_blocks(msg["content"]))
                continue
            last_id = msg.get("id")
            out.append({"role": "assistant", "content": _blocks(msg["content"])})
        elif out and out[-1]["role"] == "user":
            out[-1]["content"].extend(_blocks(msg["content"]))
        else:
            out.append({"role": "user", "content": _blocks(msg["content"])})
    return out


def response_items() -> list[dict[str, Any]]:
    return [
        line["payload"]
        for line in _lines(CODEX)
        if line.get("type") == "response_item" and line["payload"].get("type") != "ghost_snapshot"
    ]


def render(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str]) -> int:
    outputs = {OUT_ANTHROPIC: render(anthropic_messages()), OUT_RESPONSES: render(response_items())}
    if "--check" in argv:
        stale = [
            str(p) for p, text in outputs.items() if not p.is_file() or p.read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"out of date: {stale}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
