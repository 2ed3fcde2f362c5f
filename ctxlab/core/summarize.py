"""L2 summaries: the cleaned history, the bounded summarizer input, the summary message (R10).

The summarizer sees a plain-text history built from the L1 view of the summarized messages
(offloaded results appear as their path and preview, images as ``[image]``, reasoning blocks
dropped) and, when a previous summary exists, that summary first, so its facts survive (R10).
Its input is bounded by its context: ``profile["max_input_tokens"]`` of the summarizing model
when known.  A history longer than the budget is folded chunk by chunk (each call sees the
running summary plus the next chunk), so nothing is silently dropped.

The summarizer call is tagged ``TAG_NOSTREAM`` (never streamed to the user) and its token usage
is recorded apart from the main model's (R10, R16).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.marks import SUMMARIZER_ROLE_METADATA, is_observation, is_summary_message
from ctxlab.core.messages import message_text

try:  # LangGraph's tag that keeps a model call out of the "messages" stream
    from langgraph.constants import TAG_NOSTREAM
except ImportError:  # pragma: no cover
    TAG_NOSTREAM = "nostream"

logger = logging.getLogger("ctxlab.core.summarize")

#: summarizer input budget when no profile says the model's context (tokens)
DEFAULT_SUMMARIZER_CONTEXT = 128_000
#: share of the summarizer's context its input may use
INPUT_SHARE = 0.7
#: one message's text in the history is cut to this many characters (head and tail kept)
MESSAGE_CHARS_CAP = 20_000
#: the latest user request is carried verbatim up to this many characters
LATEST_REQUEST_CHARS = 8_000

__all__ = [
    "TAG_NOSTREAM",
    "LLMSummarizer",
    "Summarizer",
    "SummaryJob",
    "SummaryResult",
    "history_text",
    "input_budget",
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
    """

    messages: list[BaseMessage]
    prompt: str
    budget_tokens: int
    previous_summary: str | None = None


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

    ``summarize`` must not raise for model errors: it returns ``SummaryResult(error=...)``.
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
    """One message as history text: ``[role] text`` plus its tool calls."""
    if is_summary_message(message):
        return f"[previous summary]\n{_cap(message_text(message), cap)}"
    if isinstance(message, HumanMessage):
        role = "observation" if is_observation(message) else "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
    elif isinstance(message, ToolMessage):
        role = f"tool result {message.name or ''} ({message.status})".replace("  ", " ")
    elif isinstance(message, SystemMessage):
        role = "system note"
    else:
        role = message.type
    lines = [f"[{role}] {_cap(message_text(message), cap)}".rstrip()]
    if isinstance(message, AIMessage):
        for tc in message.tool_calls:
            args = json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str)
            lines.append(f"  -> call {tc.get('name')}({_cap(args, min(cap, 2000))})")
    return "\n".join(lines)


def history_text(messages: Sequence[BaseMessage], cap: int = MESSAGE_CHARS_CAP) -> str:
    """The cleaned history as plain text, one block per message, blank line between."""
    return "\n\n".join(render_message(m, cap) for m in messages)


def input_budget(model: Any, prompt: str, fallback_context: int | None = None) -> int:
    """Tokens one summarizer input may use: 70 % of the model's ``max_input_tokens`` (from its
    ``profile``; else ``fallback_context``; else 128k), minus nothing else: the prompt counts
    inside the budget."""
    context = None
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict):
        context = profile.get("max_input_tokens")
    context = context or fallback_context or DEFAULT_SUMMARIZER_CONTEXT
    return max(256, int(context * INPUT_SHARE))


def plan_inputs(job: SummaryJob, previous: str | None = None) -> list[list[str]]:
    """Split the history into chunks so that prompt + running summary + chunk fits the budget.

    Returns a list of chunks, each a list of rendered message blocks.  A single message too
    large for any chunk is cut (head and tail kept) to fit.
    """
    prompt_tokens = estimate_text_tokens(job.prompt)
    room = max(128, job.budget_tokens - prompt_tokens)
    blocks = [render_message(m) for m in job.messages]
    chunk_room = max(96, int(room * 0.6))  # the rest is for the running summary
    chunks: list[list[str]] = []
    current: list[str] = []
    used = 0
    for block in blocks:
        t = estimate_text_tokens(block)
        if t > chunk_room:
            ratio = chunk_room / t
            block = _cap(block, max(200, int(len(block) * ratio * 0.9)))
            t = estimate_text_tokens(block)
        if current and used + t > chunk_room:
            chunks.append(current)
            current, used = [], 0
        current.append(block)
        used += t
    if current:
        chunks.append(current)
    if sum(estimate_text_tokens(b) for c in chunks for b in c) <= room:
        return [[b for c in chunks for b in c]]  # everything fits at once
    return chunks


def fold_prompt(job: SummaryJob, chunk: list[str], running: str | None, room: int) -> str:
    """The text sent for one chunk: the running summary (cut to fit) first, then the chunk."""
    body = "\n\n".join(chunk)
    if running:
        keep = max(200, int((room - estimate_text_tokens(body)) * 3))
        body = f"[previous summary]\n{_cap(running, keep)}\n\n{body}"
    return job.prompt.replace("{messages}", body)


def _usage(message: Any) -> tuple[int, int] | None:
    usage = getattr(message, "usage_metadata", None)
    if usage and isinstance(usage, dict) and usage.get("input_tokens") is not None:
        return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    return None


class LLMSummarizer:
    """Summarizes with a LangChain chat model (the agent's own model by default, R10).

    Calls are tagged ``TAG_NOSTREAM``; a model error becomes ``SummaryResult(error=...)``; a
    context overflow of the summarizer halves the budget and tries again (twice at most).
    """

    name = "llm"

    def __init__(self, model: Any) -> None:
        self.model = model

    def _config(self) -> dict[str, Any]:
        return {"tags": [TAG_NOSTREAM], "metadata": dict(SUMMARIZER_ROLE_METADATA)}

    def summarize(self, job: SummaryJob) -> SummaryResult:
        fold = self._fold(job)
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                text = fold.throw(error) if error is not None else fold.send(reply)
            except StopIteration as stop:
                result: SummaryResult = stop.value
                return result
            reply, error = None, None
            try:
                reply = self.model.invoke([HumanMessage(content=text)], config=self._config())
            except Exception as exc:
                error = exc

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        fold = self._fold(job)
        reply: Any = None
        error: BaseException | None = None
        while True:
            try:
                text = fold.throw(error) if error is not None else fold.send(reply)
            except StopIteration as stop:
                result: SummaryResult = stop.value
                return result
            reply, error = None, None
            try:
                reply = await self.model.ainvoke([HumanMessage(content=text)], config=self._config())
            except Exception as exc:
                error = exc

    def _fold(self, job: SummaryJob) -> Generator[str, Any, SummaryResult]:
        """Yields each summarizer input text, receives the model's reply (or its exception)."""
        result = SummaryResult(text="")
        budget = job.budget_tokens
        for _attempt in range(3):
            running: str | None = None
            room = max(128, budget - estimate_text_tokens(job.prompt))
            sized = SummaryJob(job.messages, job.prompt, budget, job.previous_summary)
            try:
                for chunk in plan_inputs(sized):
                    text = fold_prompt(sized, chunk, running, room)
                    reply = yield text
                    running = self._account(result, text, reply)
                result.text = running or ""
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

    @staticmethod
    def _account(result: SummaryResult, text: str, reply: Any) -> str:
        result.calls += 1
        est_in = estimate_text_tokens(text)
        result.inputs.append(est_in)
        out = message_text(reply)
        usage = _usage(reply)
        if usage:
            result.usage_reported = True
            result.input_tokens += usage[0]
            result.output_tokens += usage[1]
        else:
            result.input_tokens += est_in
            result.output_tokens += estimate_text_tokens(out)
        return out
