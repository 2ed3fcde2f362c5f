"""Reasoning sent back is counted by the providers' rules (issue 30, item 8; spec R16).

* Anthropic thinking: the thinking text counts; the ``signature`` does not (it verifies the
  block; the provider does not bill its length).  ``redacted_thinking``: its encrypted ``data``
  counts as the thinking it holds, not as base64 text.
* OpenAI Responses reasoning items: the ``summary`` text counts; ``encrypted_content`` counts as
  the reasoning it holds (one token per five characters), not as base64 text.
* DeepSeek, Kimi, Qwen ``reasoning_content`` and OpenRouter ``reasoning_details``: the text
  counts; an encrypted OpenRouter item as the reasoning it holds.

Against recorded usage: the shared Claude Code session that crosses an automatic compaction
(``../shared/transcripts/incoming/claude-code-compaction``, loaded by ctxlab's own loader)
records the provider's input tokens of every model call and carries a thinking block with its
signature in each answer.  Between consecutive calls the prompt grows by the messages in
between; a least-squares fit of that growth on the estimate and on the signatures' text shows
the signatures are not billed as text, and the estimate with the providers' rule follows the
growth far more closely than one that counts the signatures.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from langchain_core.messages import AIMessage

from ctxlab.cli.bench import default_transcripts_dir
from ctxlab.core.estimation import CharClassEstimator, estimate_text_tokens, reasoning_tokens
from ctxlab.transcripts import load_transcripts

EST = CharClassEstimator()
THINKING = "First list the failing tests, then read each traceback before editing anything. " * 20
SIGNATURE = "EqQBCkYIBxgCKkAq9vW0" * 300  # 6,000 base64 characters
PLAIN = AIMessage("ok", id="r")


def extra(message: AIMessage) -> int:
    return EST.message_tokens(message) - EST.message_tokens(PLAIN)


def test_anthropic_thinking_counts_its_text_not_its_signature():
    signed = AIMessage(
        [{"type": "thinking", "thinking": THINKING, "signature": SIGNATURE}, {"type": "text", "text": "ok"}],
        id="r",
    )
    unsigned = AIMessage(
        [{"type": "thinking", "thinking": THINKING, "signature": ""}, {"type": "text", "text": "ok"}], id="r"
    )
    assert EST.message_tokens(signed) == EST.message_tokens(unsigned)
    assert extra(signed) >= estimate_text_tokens(THINKING)


def test_encrypted_reasoning_counts_the_reasoning_it_holds_not_its_base64():
    # spec: R16 — Anthropic redacted thinking, an OpenAI Responses item, an OpenRouter item
    blob = "gAAAAABo" * 750  # 6,000 characters
    as_text = estimate_text_tokens(blob)
    for message in (
        AIMessage([{"type": "redacted_thinking", "data": blob}, {"type": "text", "text": "ok"}], id="r"),
        AIMessage(
            "ok",
            id="r",
            additional_kwargs={"reasoning": {"id": "rs_1", "type": "reasoning", "encrypted_content": blob}},
        ),
        AIMessage(
            "ok",
            id="r",
            additional_kwargs={"reasoning_details": [{"type": "reasoning.encrypted", "data": blob}]},
        ),
    ):
        assert 6000 // 5 <= extra(message) <= 6000 // 5 + 8 < as_text


@pytest.mark.parametrize(
    "message",
    [
        AIMessage("ok", id="r", additional_kwargs={"reasoning_content": THINKING}),  # DeepSeek, Kimi, Qwen
        AIMessage(
            [
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": THINKING}]},
                {"type": "text", "text": "ok"},
            ],
            id="r",
        ),  # OpenAI Responses reasoning item
        AIMessage(
            "ok",
            id="r",
            additional_kwargs={
                "reasoning_details": [{"type": "reasoning.text", "text": THINKING, "signature": SIGNATURE}]
            },
        ),
    ],
)
def test_reasoning_text_counts_as_text(message):
    assert estimate_text_tokens(THINKING) <= extra(message) <= estimate_text_tokens(THINKING) + 8


def test_reasoning_tokens_reads_the_shapes_directly():
    assert reasoning_tokens("abc def") == estimate_text_tokens("abc def")
    assert reasoning_tokens(
        {"type": "thinking", "thinking": "abc", "signature": SIGNATURE}
    ) == 2 + estimate_text_tokens("abc")
    assert reasoning_tokens({"encrypted_content": "x" * 101}) == 2 + 21


@pytest.fixture(scope="module")
def session():
    path = default_transcripts_dir() / "incoming" / "claude-code-compaction"
    files = sorted(Path(path).glob("*.jsonl"))
    if not files:
        raise AssertionError(f"the recorded Claude Code session is missing under {path}")
    (transcript,) = load_transcripts(files[0])
    return transcript.messages


def steps(messages):
    """(recorded growth, estimate, signatures' text) per step between consecutive model calls
    with usage; a step whose prompt shrank (the compaction) is left out."""
    calls = [i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.usage_metadata]
    out = []
    for a, b in itertools.pairwise(calls):
        grown = messages[b].usage_metadata["input_tokens"] - messages[a].usage_metadata["input_tokens"]
        if grown <= 0:
            continue
        est = sum(EST.message_tokens(m) for m in messages[a:b])
        sig = sum(
            estimate_text_tokens(f'{{"signature": "{blk["signature"]}"}}')
            for m in messages[a:b]
            if isinstance(m, AIMessage) and isinstance(m.content, list)
            for blk in m.content
            if isinstance(blk, dict) and blk.get("type") == "thinking" and blk.get("signature")
        )
        out.append((grown, est, sig))
    return np.array(out, float)


def test_against_recorded_usage_the_signatures_are_not_billed_as_text(session):
    # spec: R16 — growth ≈ a × estimate + b × signatures' text + c over the recorded steps: the
    # signatures add (almost) nothing, and the estimate explains the growth closely
    data = steps(session)
    assert len(data) >= 15 and data[:, 2].sum() > 5000  # thinking with signatures on every step
    grown, est, sig = data[:, 0], data[:, 1], data[:, 2]
    (a, b, _c), *_ = np.linalg.lstsq(np.c_[est, sig, np.ones(len(data))], grown, rcond=None)
    assert a > 0.8 and abs(b) < 0.15 * a, (a, b)
    # the best linear reading of each estimate: with the providers' rule, and counting signatures
    errors = {}
    for name, x in (("rule", est), ("signatures as text", est + sig)):
        coef, *_ = np.linalg.lstsq(np.c_[x, np.ones(len(data))], grown, rcond=None)
        errors[name] = float(np.mean(np.abs(np.c_[x, np.ones(len(data))] @ coef - grown)))
    assert errors["rule"] < 0.5 * errors["signatures as text"], errors
