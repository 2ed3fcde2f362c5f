"""L2: whether a round summarizes (spec R7, R8), where the summarized part of the effective
messages ends (R9, R11), and the summary message and history file that replace it (R10).

Positions: a *local* cutoff ``c`` is an index into the effective messages (``messages[:c]`` is
summarized, ``messages[c:]`` is kept); the *global* cutoff stored in ``_summarization_event`` is
a position in the full state messages (R11).  With a previous summary at ``messages[0]`` and a
previous global cutoff ``p``, local ``c`` maps to global ``p + c - 1``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NotRequired, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import writable_text
from ctxlab.core.marks import (
    history_path_of,
    is_summary_message,
    latest_request_of,
    latest_request_path_of,
    summary_body_of,
    summary_kwargs,
)
from ctxlab.core.messages import last_human_index, message_text, request_digest
from ctxlab.core.prompts import SummaryFraming, framing_for
from ctxlab.core.summarize import LATEST_REQUEST_CHARS, SummaryResult
from ctxlab.core.toolcalls import CALL_BLOCKS, RESULT_BLOCKS

if TYPE_CHECKING:
    from ctxlab.core.settings import CompressionSettings

__all__ = [
    "CARRIED_REQUEST_SHARE",
    "CutoffContext",
    "CutoffDecision",
    "SummarizationEvent",
    "SummarizeContext",
    "SummarizeDecision",
    "build_summary_message",
    "carried_request_tokens",
    "first_new_position",
    "history_document",
    "history_key",
    "history_pieces",
    "summarization_event",
    "to_global",
]


class SummarizationEvent(TypedDict):
    """The checkpointed ``_summarization_event`` an L2 round writes (R11).

    Attributes:
        cutoff_index: the global cutoff (a position in the state messages, cumulative).
        summary_message: the summary message that replaces ``messages[:cutoff_index]``.
        file_path: the virtual path of the history file, ``None`` when it could not be written.
        summary_error: the summarizer's error when the summary failed (R10), else ``None``.
        last_summarized_id: the id of the state message just before the cutoff (``None`` if it has
            none), which the cutoff follows when messages are removed.
        first_kept_id: the id of the state message at the cutoff (``None`` if it has none, or
            nothing is kept).  With ``last_summarized_id`` it anchors the event to this state:
            an event neither of whose messages is in a state is not that state's, or the state
            was rewound past it (:func:`ctxlab.core.messages.resolve_cutoff`, issues 24, 30).
        last_summarized_digest: when the last summarized message is a user request, a digest
            of its content (:func:`ctxlab.core.messages.request_digest`): the request edited in
            place is sent again (issue 30); ``None`` otherwise.
        kept_as_sent: only when the cutoff rule asked for it (:attr:`CutoffDecision.kept_as_sent`)
            and the round sent some of its kept messages as L1 copies: how many messages after
            the cutoff later requests send in their L1 form, below T too (issue 28).
    """

    cutoff_index: int
    summary_message: HumanMessage
    file_path: str | None
    summary_error: str | None
    last_summarized_id: str | None
    first_kept_id: str | None
    last_summarized_digest: str | None
    kept_as_sent: NotRequired[int]


def summarization_event(
    state_messages: Sequence[BaseMessage],
    global_cut: int,
    summary: HumanMessage,
    file_path: str | None,
    error: str | None,
) -> SummarizationEvent:
    """The event of an L2 round that summarized ``state_messages[:global_cut]`` (R11), anchored
    to the messages on both sides of the cutoff."""
    return {
        "cutoff_index": global_cut,
        "summary_message": summary,
        "file_path": file_path,
        "summary_error": error,
        "last_summarized_id": state_messages[global_cut - 1].id if global_cut > 0 else None,
        "first_kept_id": state_messages[global_cut].id if global_cut < len(state_messages) else None,
        "last_summarized_digest": request_digest(state_messages[global_cut - 1]) if global_cut > 0 else None,
    }


@dataclass(frozen=True)
class SummarizeContext:
    """Inputs of the L2 decision (hook ``ctxlab_should_summarize``).

    Attributes:
        tokens: estimate of the L1 request: system message, tool schemas and the L1 view (tokens).
        threshold_tokens: the entry threshold T (tokens, R3).
        l2_threshold_tokens: the L2 threshold T2 (tokens, R7).
        keep_messages: messages an L2 cutoff keeps at least (``summary_keep_messages``).
        has_previous_summary: ``view[0]`` is the previous summary message.
        estimate: tokens of one message (cached estimator).
        forced: a context overflow forced this round (R12): ARS summarizes regardless of T2.
    """

    tokens: int
    threshold_tokens: float
    l2_threshold_tokens: float
    keep_messages: int
    has_previous_summary: bool
    estimate: Callable[[BaseMessage], int]
    forced: bool = False


@dataclass(frozen=True)
class SummarizeDecision:
    """An L2 decision: ``summarize`` (True: choose a cutoff and summarize; False: send the L1
    view); ``reason`` says why, for the event's ``stats["l2_decision"]``."""

    summarize: bool
    reason: str = ""


@dataclass(frozen=True)
class CutoffContext:
    """Inputs of a cutoff rule.

    Attributes:
        keep_messages: messages to keep after the cutoff at least (``summary_keep_messages``;
            the summary message is not counted).
        has_previous_summary: ``messages[0]`` is the previous summary message.
        estimate: tokens of one message (cached estimator), for token-aware rules.
        target_tokens: the L2 threshold T2 in tokens (a rule may aim the kept part below it).
        forced: the round was forced by a context overflow (R12): a rule should cut if it can.
    """

    keep_messages: int
    has_previous_summary: bool
    estimate: Callable[[BaseMessage], int]
    target_tokens: float
    forced: bool = False

    @classmethod
    def for_round(
        cls,
        settings: CompressionSettings,
        estimate: Callable[[BaseMessage], int],
        *,
        has_previous_summary: bool,
        forced: bool = False,
    ) -> CutoffContext:
        """The context an L2 round (and a prepared summary of the round to come, issue 34) gives
        the cutoff rule: ``summary_keep_messages`` and T2 (``l2_threshold_tokens``) from
        ``settings``; one home, so that the two always ask the rule the same question."""
        return cls(
            keep_messages=settings.summary_keep_messages,
            has_previous_summary=has_previous_summary,
            estimate=estimate,
            target_tokens=settings.l2_threshold_tokens,
            forced=forced,
        )


@dataclass(frozen=True)
class CutoffDecision:
    """A cutoff choice: ``index`` local to the effective messages, or ``None`` (no valid cutoff,
    R13); ``reason`` says why, for events and reports.

    ``by_design`` (default ``False``): with ``index=None``, the strategy never summarizes here by
    its own rule (a masking-only strategy), not for want of a valid cutoff — the round's
    ``l2_decision`` says so and it is no declined summary (the replay's ``declined_summaries`` and
    marks count only R13's "no valid cutoff").

    ``kept_as_sent`` (default ``False``, the ARS rule): the messages the round keeps after the
    cutoff go out, until the next summary, in the form the round sends them — their L1 copies
    (an offloaded tool result stays offloaded) — also in the calls below T, where ARS sends the
    effective messages whole (R3).  The compacted request is then the prefix of the next one, so
    that a provider's prompt cache reads it instead of writing the kept window again whole
    (issue 28; ``ars-cache``'s cutoff sets it).  The state messages keep their full text (R6):
    the event records only how many messages this applies to
    (:attr:`SummarizationEvent.kept_as_sent`).
    """

    index: int | None
    reason: str = ""
    by_design: bool = False
    kept_as_sent: bool = False


def to_global(local: int, previous_cutoff: int | None, has_previous_summary: bool) -> int:
    """Convert a local cutoff into a position in the state messages (R11, cumulative)."""
    if has_previous_summary and previous_cutoff is not None:
        return previous_cutoff + local - 1
    return local


def first_new_position(has_previous_summary: bool) -> int:
    """The smallest local cutoff that summarizes at least one message not yet summarized."""
    return 2 if has_previous_summary else 1


# --- the summary message and the history file ---------------------------------------------------

#: share of T2 the latest request carried verbatim in a summary may use (tokens; issue 30)
CARRIED_REQUEST_SHARE = 0.25
#: a request of at most this many tokens is always carried whole (~800 characters of prose)
MIN_CARRIED_REQUEST_TOKENS = 200


def carried_request_tokens(l2_threshold_tokens: float) -> int:
    """The most tokens the latest request may use when a summary carries it (issue 30): a
    quarter of T2 (:data:`CARRIED_REQUEST_SHARE`), at least :data:`MIN_CARRIED_REQUEST_TOKENS`.

    A longer request is carried as its head and the path of the file that holds it whole, so
    that the summary alone never keeps the next views above T2 (a request carried whole above
    that share would be summarized again on every call, the summarizer running each time)."""
    return max(MIN_CARRIED_REQUEST_TOKENS, int(l2_threshold_tokens * CARRIED_REQUEST_SHARE))


def history_document(messages: list[BaseMessage], start: int, end: int, previous_summary: str | None) -> str:
    """The history file's text (R10; seed: 可恢复原文以…历史文件为准, the file is the recoverable
    original): the summarized state messages ``[start, end)`` in full, a previous summary message
    replaced by the previous summary's text.

    Markdown: one heading per message (position, role, id, tool name, status), then its content
    verbatim in a fence longer than any backtick run inside it, so whitespace survives exactly;
    list content keeps text blocks verbatim and every other block (images with their URLs or
    data, tool-use blocks) as JSON.  Tool calls follow with every argument in full: a string
    verbatim in a fence, any other value as JSON; invalid tool calls with their raw argument
    text; no cap, no truncation.
    """
    return "".join(history_pieces(messages, start, end, previous_summary))


def history_pieces(
    messages: list[BaseMessage], start: int, end: int, previous_summary: str | None
) -> Iterator[str]:
    """:func:`history_document` as the pieces it joins, in order, made one message at a time; the
    pieces refer to the messages' own texts (no copy), so the document can be encoded as it is
    made (issue 31: the history of an 8,000-message run is ~400 KB, written without ever holding
    it as one text)."""
    head = f"# Conversation history: state messages {start}..{end - 1}\n\n"
    if previous_summary:
        head += "## Previous summary\n\n" + _fenced(previous_summary) + "\n## Messages\n\n"
    yield head
    position = start
    for m in messages:
        if is_summary_message(m):
            continue
        parts: list[str] = []
        _history_entry(m, position, parts)
        yield from parts
        position += 1


def history_key(messages: Sequence[BaseMessage], start: int, end: int) -> str:
    """What names the history file of the state messages ``[start, end)`` (R10): their ids,
    types and content sizes, one line each (issue 31: the file's name is known without rendering
    it; :func:`history_document` renders the text where it is written).  Two different histories
    of one range differ here too: a rewind brings new message ids, an edit a new size."""
    lines = [f"{start}-{end}"]
    lines += [
        f"{m.id}\t{m.type}\t{len(c) if isinstance(c := m.content, (str, list)) else 0}\t"
        f"{len(m.tool_calls) if isinstance(m, AIMessage) else 0}"
        for m in messages
    ]
    return "\n".join(lines)


def _fenced(text: str) -> str:
    """``text`` verbatim between two fence lines longer than any backtick run in it."""
    return "".join(_fence(text))


def _fence(text: str) -> tuple[str, str, str]:
    """The pieces of :func:`_fenced` (opening line, ``text`` itself, closing line): joined once
    with the rest of a document, the text is not copied on its own."""
    if "```" not in text:  # the usual case: no run of three backticks, the shortest fence
        return "```\n", text, "\n```\n"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n", text, f"\n{fence}\n"


def _history_entry(message: BaseMessage, position: int, out: list[str]) -> None:
    """Append the pieces of ``message``'s entry (at state ``position``) to ``out``."""
    labels = [f"### {position}: {message.type}"]
    for key in ("id", "name", "tool_call_id", "status"):
        value = getattr(message, key, None)
        if value is not None and not (key == "status" and value == "success"):
            labels.append(f"{key}={value}")
    out.append(" · ".join(labels) + "\n\n")
    content = message.content
    if isinstance(content, str):
        out.extend(_fence(content))
    else:
        for block in content:
            if isinstance(block, str):
                out.extend(_fence(block))
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                out.extend(_fence(block["text"]))
            else:
                kind = str(block.get("type"))
                if kind in CALL_BLOCKS:  # a call carried as a block: named like tool_calls (issue 30)
                    out.append(
                        f"tool call {block.get('name')} · id={block.get(CALL_BLOCKS[kind][0])} ({kind}):\n"
                    )
                elif kind in RESULT_BLOCKS:
                    out.append(f"tool result · id={block.get(RESULT_BLOCKS[kind][0])} ({kind}):\n")
                out.extend(_fence(json.dumps(block, ensure_ascii=False, default=str)))
    if isinstance(message, AIMessage):
        for tc in message.tool_calls:
            out.append(f"\ntool call {tc.get('name')} · id={tc.get('id')}\n")
            for key, value in (tc.get("args") or {}).items():
                if isinstance(value, str):
                    out.append(f"argument {key}:\n")
                    out.extend(_fence(value))
                else:
                    out.append(f"argument {key} (JSON):\n")
                    out.extend(_fence(json.dumps(value, ensure_ascii=False, default=str)))
        for bad in message.invalid_tool_calls:  # sent to the provider as calls: kept whole too
            out.append(
                f"\ninvalid tool call {bad.get('name')} · id={bad.get('id')} · error={bad.get('error')}\n"
            )
            args = bad.get("args")
            out.extend(
                _fence(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str))
            )
    out.append("\n")


def build_summary_message(
    eff: list[BaseMessage],
    local: int,
    result: SummaryResult,
    file_path: str | None,
    prompt: str,
    global_cut: int,
    request_tokens: int | None = None,
) -> HumanMessage:
    """The summary message (R8): a ``HumanMessage`` (never an assistant message at the end of a
    view, and accepted by every provider right after the system message).

    It carries the summarizer's text (or the error text, R10), the history file path when it was
    written, and the latest user request verbatim when that request falls before the cutoff
    ``local`` of the effective messages ``eff``: whole when it fits ``request_tokens``
    (:func:`carried_request_tokens`; ``None``: no token bound) and
    :data:`~ctxlab.core.summarize.LATEST_REQUEST_CHARS` characters, else its head and the path
    of the file that holds it whole (this round's history file, or the one an earlier summary
    named; issue 30).  A failed summary carries everything the
    previous summary carried: its body, and its verbatim latest request and history path either
    through this round's history file (which holds the previous summary verbatim) or, when that
    file could not be written, inline (issue 24: an outage of several rounds loses no request).
    A summary whose own history file could not be written names the previous summary's.  Its
    marks are :func:`ctxlab.core.marks.summary_kwargs` (the history path recorded is the one
    it names); its id is ``ctxlab-summary-<global_cut>-<sha256 of the text, 12 hex>``.
    """
    framing = framing_for(prompt)
    parts = [framing.header]
    if file_path:
        parts.append(framing.saved_at.format(path=file_path))
    body = result.text.strip()
    latest, latest_path = _latest_request(eff, local, framing, file_path, request_tokens)
    previous = eff[0] if local > 0 and is_summary_message(eff[0]) else None
    # without a history file of its own, the summary names the previous one (which, through the
    # files it names, holds everything summarized before)
    earlier = history_path_of(previous) if previous is not None and not file_path else None
    if result.error and not body:
        parts.append(framing.failed.format(error=result.error))
        if previous is not None:
            # R10: facts of earlier rounds survive a failed round: carry the previous summary's
            # body (not its framing, so repeated failures do not nest and grow); what else it
            # carried is in this round's history file, or inline when that file is missing
            body = _carried(previous, latest, framing, inline=not file_path)
            parts.append(f"{framing.previous}\n{body}")
    else:
        parts.append(body)
        if earlier and earlier not in body:
            parts.append(framing.earlier_history.format(path=earlier).strip())
    if latest:
        parts.append(f"{framing.latest_request}\n{latest}")
    # sent to the model on every later call: text UTF-8 cannot encode (a lone surrogate) is
    # escaped as in the history file (issue 30)
    text = writable_text("\n\n".join(p for p in parts if p))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return HumanMessage(
        content=text,
        id=f"ctxlab-summary-{global_cut}-{digest}",
        additional_kwargs=summary_kwargs(
            writable_text(body),
            writable_text(latest) if latest else latest,
            file_path or earlier,
            latest_path,
        ),
    )


def _carried(previous: BaseMessage, latest: str | None, framing: SummaryFraming, *, inline: bool) -> str:
    """What a failed round keeps of the ``previous`` summary message (R10, issue 24): its body;
    with ``inline`` (this round's history file, which holds the previous summary verbatim, could
    not be written) also its verbatim latest request (unless it is this round's ``latest`` too)
    and the path of the history file it names, each once.  A summary another framework wrote:
    its whole text."""
    body = summary_body_of(previous)
    if body is None:
        return message_text(previous)
    if not inline:
        return body
    parts = [body]
    request = latest_request_of(previous)
    if request and request != latest and request not in body:
        parts.append(f"{framing.earlier_request}\n{request}")
    path = history_path_of(previous)
    if path and path not in body:
        parts.append(framing.earlier_history.format(path=path).strip())
    return "\n\n".join(p for p in parts if p)


def _latest_request(
    eff: list[BaseMessage],
    local: int,
    framing: SummaryFraming,
    file_path: str | None,
    request_tokens: int | None,
) -> tuple[str | None, str | None]:
    """``(text, path)``: the latest user request if it lies in the summarized part ``eff[:local]``
    (else ``(None, None)``), whole or as its head, and the file that holds it whole when only
    its head is carried (``None`` when it is carried whole).

    A request over ``request_tokens`` tokens or :data:`~ctxlab.core.summarize.LATEST_REQUEST_CHARS`
    characters is cut to fit both, with ``framing.request_continues`` naming the rest and the
    file that holds it whole: this round's history file (``file_path``), which holds the
    summarized messages and the previous summary verbatim, or the file the previous summary
    named for it.  With no such file (the history write failed), the old cut at
    ``LATEST_REQUEST_CHARS`` characters is kept, so nothing is lost that no file holds."""
    idx = last_human_index(eff)
    if idx is not None and idx >= local:
        return None, None  # kept verbatim in the view
    previous_path = None
    if idx is not None and not is_summary_message(eff[idx]):
        text = message_text(eff[idx])
    else:
        found = latest_request_of(eff[0]) if eff else None
        if not found:
            return None, None
        text, previous_path = found, latest_request_path_of(eff[0])
    whole_at = previous_path or file_path
    limit_chars = LATEST_REQUEST_CHARS
    fits = len(text) <= limit_chars and (
        request_tokens is None or estimate_text_tokens(text) <= request_tokens
    )
    if fits:
        return text, previous_path
    if whole_at is None:
        if len(text) <= limit_chars:
            return text, None
        return text[:limit_chars] + f"\n[... {len(text) - limit_chars} more characters]", None
    head = _head(text, limit_chars, request_tokens)
    rest = framing.request_continues.format(chars=len(text) - len(head), path=whole_at)
    return f"{head}\n{rest}", whole_at


def _head(text: str, chars: int, tokens: int | None) -> str:
    """The longest head of ``text`` within ``chars`` characters and ``tokens`` tokens (the
    estimate grows with the text, so a shorter head never costs more), cut at a line end or a
    blank in its second half when there is one."""
    n = min(len(text), chars)
    if tokens is not None:
        est = estimate_text_tokens(text[:n])
        while n > 1 and est > tokens:
            n = max(1, min(n - 1, int(n * tokens / est * 0.98)))
            est = estimate_text_tokens(text[:n])
    head = text[:n]
    cut = max(head.rfind("\n", n // 2), head.rfind(" ", n // 2))
    return head[:cut] if cut > 0 else head
