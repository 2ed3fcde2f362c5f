"""Section 2 of ``ctxlab bench``, part two: the estimate against the provider's own input-token counts.

Claude Code records the provider's usage on every assistant record of its session JSONL
(``message.usage``: ``input_tokens`` + ``cache_creation_input_tokens`` + ``cache_read_input_tokens``
is the whole prompt of that model call).  The prompt also holds Claude Code's system prompt and
tool schemas, which the transcript does not record, so the comparison is on the *growth*: between
two consecutive model calls the prompt grows by the records in between (the first call's answer,
the tool results and user turns that followed).  Per transcript, Σ growth reported by the
provider is set against Σ estimate of the text of those records (the core default,
:func:`ctxlab.core.estimation.estimate_text_tokens`) and against Σ cl100k tokens of the same text.
The provider counts with its own tokenizer and adds its per-message and per-block framing and any
text Claude Code injects, so no target: the table shows how far a cl100k-calibrated estimate is
from what the provider bills.  Codex and Kimi CLI record usage too; the shared corpus holds no
sessions of theirs.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ProviderUsageRow", "provider_usage_rows"]

#: where the Claude Code sessions of the shared corpus are, below the transcripts folder
CLAUDE_CODE_DIR = "raw/claude-code"


@dataclass
class ProviderUsageRow:
    """One session: model calls with usage, and three sums over the growth between calls (tokens)."""

    transcript: str
    calls: int
    provider_tokens: int
    estimate_tokens: int
    cl100k_tokens: int


def _block_text(content: Any) -> str:
    """The text of a Claude message ``content`` (text, tool_use input as JSON, tool results, thinking)."""
    if isinstance(content, str):
        return content
    out: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind == "tool_use":
            out.append(str(block.get("name", "")) + json.dumps(block.get("input"), ensure_ascii=False))
        elif kind == "tool_result":
            out.append(_block_text(block.get("content")))
        elif kind == "thinking":
            out.append(str(block.get("thinking", "")))
    return "\n".join(out)


def _session_row(
    path: Path, estimate: Callable[[str], int], cl100k: Callable[[str], int]
) -> ProviderUsageRow | None:
    """The row of one session file (``None``: fewer than two model calls with usage)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    calls: list[tuple[int, int]] = []  # (prompt tokens, index of the call's first record)
    seen: set[str] = set()
    for i, rec in enumerate(records):
        msg = rec.get("message") if isinstance(rec, dict) else None
        if not isinstance(msg, dict) or rec.get("type") != "assistant":
            continue
        usage = msg.get("usage")
        if not isinstance(usage, dict) or str(msg.get("id")) in seen:
            continue  # one model answer is split over records sharing its message id
        seen.add(str(msg.get("id")))
        prompt = sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        calls.append((prompt, i))
    if len(calls) < 2:
        return None
    provider = est = truth = 0
    for (before, start), (after, end) in itertools.pairwise(calls):
        texts = [
            _block_text((rec.get("message") or {}).get("content"))
            for rec in records[start:end]
            if rec.get("type") in ("assistant", "user") and not rec.get("isMeta")
        ]
        provider += after - before
        est += sum(estimate(t) for t in texts)
        truth += sum(cl100k(t) for t in texts)
    return ProviderUsageRow(path.parent.name, len(calls), provider, est, truth)


def provider_usage_rows(transcripts_dir: Path, cl100k: Callable[[str], int]) -> list[ProviderUsageRow]:
    """One :class:`ProviderUsageRow` per Claude Code session under ``transcripts_dir`` (sorted by
    path; sessions with fewer than two model calls with usage are left out)."""
    from ctxlab.core.estimation import estimate_text_tokens

    out = []
    for path in sorted((transcripts_dir / CLAUDE_CODE_DIR).rglob("*.jsonl")):
        row = _session_row(path, estimate_text_tokens, cl100k)
        if row is not None:
            out.append(row)
    return out
