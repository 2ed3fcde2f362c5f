"""L2 summaries: the cleaned history, the bounded summarizer input, the summary's size (R10).

The summarizer sees a plain-text history built from the L1 view of the summarized messages
(offloaded results appear as their path and preview, images as ``[image]``, reasoning blocks
dropped) and, when a previous summary exists, that summary first, so its facts survive (R10).
Its input is bounded by its context: ``profile["max_input_tokens"]`` of the summarizing model
when known (:func:`input_budget`).  A history longer than the budget is **folded**: split into
pieces (a long message — the previous summary above all — at line ends, never cut), and each
call sees the running summary plus as many pieces as fit, so nothing is silently dropped.

A reply without text (only a reasoning block, only a tool call, an empty string) is a failed
summary (:class:`EmptySummaryError`), handled like a model error; so is a reply that stopped at
its output-token cap (:class:`TruncatedSummaryError`: a part of a summary is not one).  What is
committed is bounded (:func:`summary_token_limit`, :func:`bound_summary`).

The summarizer call is tagged ``TAG_NOSTREAM`` (never streamed to the user) and its token usage
is recorded apart from the main model's (R10, R16).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import writable_text
from ctxlab.core.marks import SUMMARIZER_ROLE_METADATA, is_observation, is_summary_message
from ctxlab.core.messages import message_text
from ctxlab.core.replies import EmptySummaryError, TruncatedSummaryError, output_cap_reason, reply_text
from ctxlab.core.toolcalls import block_calls, is_result_message, result_blocks

try:  # LangGraph's tag that keeps a model call out of the "messages" stream
    from langgraph.constants import TAG_NOSTREAM
except ImportError:  # pragma: no cover
    TAG_NOSTREAM = "nostream"

logger = logging.getLogger("ctxlab.core.summarize")

#: summarizer input budget when no profile says the model's context (tokens)
DEFAULT_SUMMARIZER_CONTEXT = 128_000
#: share of the summarizer's context its input may use
INPUT_SHARE = 0.7
#: one message's text in the summarizer's input is cut to this many characters (head and tail
#: kept); never a summary message, which is folded instead
MESSAGE_CHARS_CAP = 20_000
#: the latest user request is carried verbatim up to this many characters
LATEST_REQUEST_CHARS = 8_000
#: share of a folded input given to new pieces at most (the rest is for the running summary)
PIECE_SHARE = 0.6
#: share of a folded input new pieces always get: a running summary larger than the rest is cut
MIN_PIECE_SHARE = 0.2
#: share of the summarizer's input budget (and of the main model's window) a summary may use
SUMMARY_MAX_SHARE = 0.25

__all__ = [
    "SUMMARY_MAX_SHARE",
    "TAG_NOSTREAM",
    "EmptySummaryError",
    "LLMSummarizer",
    "Summarizer",
    "SummaryJob",
    "SummaryResult",
    "TruncatedSummaryError",
    "bound_summary",
    "history_text",
    "input_budget",
    "output_cap_reason",
    "reply_text",
    "summary_token_limit",
]


@dataclass
class SummaryJob:
    """One L2 summary to make.

    Attributes:
        messages: the messages to summarize, as in the L1 view (``messages[0]`` may be the
            previous summary message).
        prompt: the template with ``{messages}`` (``summary_prompt``).
        budget_tokens: the most tokens one summarizer input may have (prompt included).
        previous_summary: text of the previous summary, or ``None``.
        language: the summary language of the round, ``"zh"`` or ``"en"``
            (:func:`ctxlab.core.prompts.summary_language_of`); ``None`` when the caller did not
            resolve one (a summarizer then follows ``prompt``).
        kept: the messages of the L1 view after the cutoff, which the request keeps verbatim
            after the summary (the *kept window*; empty when not known).  A summarizer may leave
            out what they hold, or (:mod:`ctxlab.core.cache`) send them to reuse a cached prefix.
        system: the system message of the agent's request (``None``: none or not known).
    """

    messages: list[BaseMessage]
    prompt: str
    budget_tokens: int
    previous_summary: str | None = None
    language: str | None = None
    kept: list[BaseMessage] = field(default_factory=list)
    system: BaseMessage | None = None


@dataclass
class SummaryResult:
    """A summary (``text``) or the error that prevented it (``error``), with accounting.

    ``input_tokens``/``output_tokens`` are provider-reported usage when the model returns it,
    else estimates; ``calls`` counts summarizer model calls (several when the input was folded).
    """

    text: str
    error: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = False
    inputs: list[int] = field(default_factory=list)


@runtime_checkable
class Summarizer(Protocol):
    """Something that turns a :class:`SummaryJob` into a :class:`SummaryResult`.

    ``summarize`` must not raise for model errors: it returns ``SummaryResult(error=...)``.  A
    result whose ``text`` is empty or blank without an ``error`` is treated as a failed summary
    by the round (R10).
    """

    name: str

    def summarize(self, job: SummaryJob) -> SummaryResult: ...

    async def asummarize(self, job: SummaryJob) -> SummaryResult: ...


# --- the cleaned history -------------------------------------------------------------------------


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    return f"{text[:head]}\n[... {len(text) - limit} characters omitted ...]\n{text[-(limit - head) :]}"


def render_message(message: BaseMessage, cap: int = MESSAGE_CHARS_CAP) -> str:
    """One message as history text: ``[role] text`` plus its tool calls (arguments cut to 2,000
    characters: this is the summarizer's input, the history file keeps them whole); calls and
    results carried as content blocks (Anthropic, OpenAI Responses) read as the others do.  A message
    with a speaker ``name`` (a user or an agent of a multi-party thread) is labelled
    ``[user name=alice]``, so who asked or approved what reaches the summary.  A summary
    message is never cut: it is folded (:func:`split_text`)."""
    if is_summary_message(message):
        return f"[previous summary]\n{message_text(message)}"
    if isinstance(message, HumanMessage) and is_result_message(message):
        ids = ", ".join(cid for _i, cid, _b in result_blocks(message))
        role = f"tool result (call {ids})"  # Anthropic / OpenAI Responses result blocks (issue 30)
    elif isinstance(message, HumanMessage):
        role = "observation" if is_observation(message) else "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
    elif isinstance(message, ToolMessage):
        role = f"tool result {message.name or ''} ({message.status})".replace("  ", " ")
    elif isinstance(message, SystemMessage):
        role = "system note"
    else:
        role = message.type
    speaker = getattr(message, "name", None)
    if isinstance(speaker, str) and speaker and not isinstance(message, ToolMessage):
        role = f"{role} name={speaker}"  # who said it: multi-user and multi-agent threads (issue 24)
    lines = [f"[{role}] {_cap(message_text(message), cap)}".rstrip()]
    if isinstance(message, AIMessage):
        for tc in message.tool_calls:
            args = json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str)
            lines.append(f"  -> call {tc.get('name')}({_cap(args, min(cap, 2000))})")
        for bad in message.invalid_tool_calls:
            raw = bad.get("args")
            raw = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
            lines.append(f"  -> invalid call {bad.get('name')}({_cap(raw, min(cap, 2000))})")
        for call in block_calls(message):  # calls carried as content blocks (issue 30)
            raw = (
                call.args
                if isinstance(call.args, str)
                else json.dumps(call.args or {}, ensure_ascii=False, default=str)
            )
            lines.append(f"  -> call {call.name}({_cap(raw, min(cap, 2000))})")
    return "\n".join(lines)


def history_text(messages: Sequence[BaseMessage], cap: int = MESSAGE_CHARS_CAP) -> str:
    """The cleaned history as plain text, one block per message, blank line between."""
    return "\n\n".join(render_message(m, cap) for m in messages)


def input_budget(model: Any, prompt: str, fallback_context: int | None = None) -> int:
    """Tokens one summarizer input may use: 70 % of the model's ``max_input_tokens`` (from its
    ``profile``; else ``fallback_context``; else 128k), the prompt included.

    ``fallback_context`` is for a model whose window is known another way — the middleware
    passes the main model's window only when the summarizer *is* the main model, never for a
    separate summarizer model without a profile (its window is not the main model's).
    """
    context = None
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict):
        value = profile.get("max_input_tokens")
        context = value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
    context = context or fallback_context or DEFAULT_SUMMARIZER_CONTEXT
    return max(256, int(context * INPUT_SHARE))


def split_text(text: str, max_tokens: int) -> list[str]:
    """``text`` in consecutive pieces of at most about ``max_tokens`` tokens each, split at line
    ends where one falls in the second half of a piece; ``"".join(pieces) == text``."""
    tokens = estimate_text_tokens(text)
    if tokens <= max_tokens or len(text) < 2:
        return [text]
    size = max(1, int(len(text) * max_tokens / tokens * 0.95))  # characters per piece
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            newline = text.rfind("\n", start + size // 2, end)
            end = newline + 1 if newline >= 0 else end
        pieces.append(text[start:end])
        start = end
    return pieces


def _filled(prompt: str, blocks: list[str]) -> str:
    """``prompt.replace("{messages}", "\\n\\n".join(blocks))`` joined once (the blocks are not
    first joined on their own)."""
    head, *rest = prompt.split("{messages}")
    if len(rest) != 1:  # no slot, or several: the plain replacement
        return prompt.replace("{messages}", "\n\n".join(blocks))
    pieces = [head]
    for i, block in enumerate(blocks):
        if i:
            pieces.append("\n\n")
        pieces.append(block)
    pieces.append(rest[0])
    return "".join(pieces)


def fold_prompt(job: SummaryJob, chunk: list[str], running: str | None) -> str:
    """The text sent for one folded input: the running summary first, then the chunk."""
    body = "\n\n".join(chunk)
    if running:
        body = f"[previous summary]\n{running}\n\n{body}"
    return job.prompt.replace("{messages}", body)


def summary_token_limit(summarizer_budget: int, capacity_tokens: int | None) -> int:
    """The most tokens a committed summary's text may hold: :data:`SUMMARY_MAX_SHARE` of the
    summarizer's input budget and of the main model's window when known (the next round must
    fit the summary into both, with room for the messages around it)."""
    limit = summarizer_budget if capacity_tokens is None else min(summarizer_budget, capacity_tokens)
    return max(64, int(limit * SUMMARY_MAX_SHARE))


def bound_summary(text: str, max_tokens: int) -> tuple[str, int]:
    """``(text, tokens)`` when ``text`` fits ``max_tokens``; else the head (70 %) and the tail of
    it, cut at line ends, around a note of what was left out, and the original size in tokens.
    The history file keeps everything the summary covered (R10)."""
    tokens = estimate_text_tokens(text)
    if tokens <= max_tokens:
        return text, tokens
    pieces = split_text(text, max(1, int(max_tokens * 0.09)))  # ~ten pieces per bound
    head: list[str] = []
    tail: list[str] = []
    used = 0
    for piece in pieces:  # the head: 70 % of the limit
        t = estimate_text_tokens(piece)
        if used + t > max_tokens * 0.63:
            break
        head.append(piece)
        used += t
    for piece in reversed(pieces[len(head) :]):  # the tail: what remains of 90 %
        t = estimate_text_tokens(piece)
        if used + t > max_tokens * 0.9:
            break
        tail.insert(0, piece)
        used += t
    omitted = len(text) - sum(map(len, head)) - sum(map(len, tail))
    note = f"\n[... {omitted} characters of the summary omitted: it exceeded {max_tokens} tokens ...]\n"
    return "".join(head) + note + "".join(tail), tokens


def _usage(message: Any) -> tuple[int, int] | None:
    usage = getattr(message, "usage_metadata", None)
    if usage and isinstance(usage, dict) and usage.get("input_tokens") is not None:
        return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return None


class LLMSummarizer:
    """Summarizes with a LangChain chat model (the agent's own model by default, R10).

    Calls are tagged ``TAG_NOSTREAM``; a model error, and a reply without text
    (:class:`EmptySummaryError`), become ``SummaryResult(error=...)``; a context overflow of the
    summarizer halves the budget and tries again (twice at most).
    """

    name = "llm"

    def __init__(self, model: Any) -> None:
        self.model = model

    def _config(self) -> dict[str, Any]:
        return {"tags": [TAG_NOSTREAM], "metadata": dict(SUMMARIZER_ROLE_METADATA)}

    def summarize(self, job: SummaryJob) -> SummaryResult:
        fold = self._fold(job)
        step = _advance(fold, None, None)
        while isinstance(step, str):
            reply, error = _attempt(self.model.invoke, [HumanMessage(content=step)], self._config())
            step = _advance(fold, reply, error)
        return step

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        fold = self._fold(job)
        step = _advance(fold, None, None)
        while isinstance(step, str):
            try:
                reply, error = (
                    await self.model.ainvoke([HumanMessage(content=step)], config=self._config()),
                    None,
                )
            except Exception as exc:  # handed to the fold, which records it (R10)
                reply, error = None, exc
            step = _advance(fold, reply, error)
        return step

    def _fold(self, job: SummaryJob) -> Generator[str, Any, SummaryResult]:
        """Yields each summarizer input text, receives the model's reply (or its exception)."""
        result = SummaryResult(text="")
        budget = job.budget_tokens
        for _attempt in range(3):
            try:
                result.text = yield from self._fold_at(job, budget, result)
                result.error = None
                return result
            except ContextOverflowError as exc:
                logger.warning("summarizer context overflow at budget %s tokens; halving", budget)
                result.error = f"{type(exc).__name__}: {exc}"
                budget //= 2
            except Exception as exc:
                logger.error("summarizer failed: %s", exc)
                result.error = f"{type(exc).__name__}: {exc}"
                return result
        return result

    def _fold_at(self, job: SummaryJob, budget: int, result: SummaryResult) -> Generator[str, Any, str]:
        """One summary within ``budget`` tokens per input: all at once when the history fits,
        else folded piece by piece (:func:`split_text`; nothing is cut but a running summary
        that leaves new pieces less than :data:`MIN_PIECE_SHARE` of the input)."""
        room = max(128, budget - estimate_text_tokens(job.prompt))
        blocks = [render_message(m) for m in job.messages]
        sizes = [estimate_text_tokens(b) for b in blocks]
        if sum(sizes) <= room:
            # what is sent is escaped as the history file is (lone surrogates, issue 30); built in
            # one join, and the rendered blocks dropped before the call (issue 31: peak memory)
            text = writable_text(_filled(job.prompt, blocks))
            del blocks
            return self._account(result, text, (yield text))
        piece_room = max(64, int(room * PIECE_SHARE))
        queue: deque[tuple[str, int]] = deque()
        for block, size in zip(blocks, sizes, strict=True):
            parts = [block] if size <= piece_room else split_text(block, piece_room)
            queue.extend((p, size if len(parts) == 1 else estimate_text_tokens(p)) for p in parts)
        running: str | None = None
        while queue:
            avail = room - (estimate_text_tokens(running) + 8 if running else 0)
            if running and avail < room * MIN_PIECE_SHARE:
                logger.warning("the running summary leaves no room for new pieces; cutting it")
                running = _cap(
                    running, max(200, int(len(running) * room * (1 - MIN_PIECE_SHARE) / (room - avail)))
                )
                avail = int(room * MIN_PIECE_SHARE)
            chunk: list[str] = []
            used = 0
            while queue and used + queue[0][1] <= avail:
                piece, size = queue.popleft()
                chunk.append(piece)
                used += size
            if not chunk:  # the next piece is larger than the room left: split it further
                piece, _size = queue.popleft()
                first, *rest = split_text(piece, max(16, avail))
                queue.extendleft((p, estimate_text_tokens(p)) for p in reversed(rest))
                chunk.append(first)
            text = writable_text(fold_prompt(job, chunk, running))
            running = self._account(result, text, (yield text))
        return running or ""

    @staticmethod
    def _account(result: SummaryResult, text: str, reply: Any) -> str:
        """Count one call and return the reply's text (raises :class:`EmptySummaryError`)."""
        result.calls += 1
        est_in = estimate_text_tokens(text)
        result.inputs.append(est_in)
        usage = _usage(reply)
        if usage:
            result.usage_reported = True
            result.input_tokens += usage[0]
            result.output_tokens += usage[1]
        else:
            result.input_tokens += est_in
            result.output_tokens += estimate_text_tokens(message_text(reply))
        return reply_text(reply)


def _advance(
    fold: Generator[str, Any, SummaryResult], reply: Any, error: BaseException | None
) -> str | SummaryResult:
    """Send the summarizer model's reply (or throw its error) into the fold: the next prompt to
    send (text), or the fold's result when it is done."""
    try:
        return fold.throw(error) if error is not None else fold.send(reply)
    except StopIteration as stop:
        result: SummaryResult = stop.value
        return result


def _attempt(call: Any, messages: list[HumanMessage], config: dict[str, Any]) -> tuple[Any, Exception | None]:
    """``(reply, None)`` of ``call(messages, config=config)``, or ``(None, the exception)``."""
    try:
        return call(messages, config=config), None
    except Exception as exc:  # handed to the fold, which records it (R10)
        return None, exc
