"""Message helpers: text of a message, effective messages, tool-call pairing (spec R9, R11), the
view as sent (no orphan tool result).  What a call and a result are — ``tool_calls``, content
blocks of Anthropic and OpenAI Responses, ToolMessages — is :mod:`ctxlab.core.toolcalls`.

Shapes: message lists are ``list[BaseMessage]``; indices are positions in that list.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.files import writable_text
from ctxlab.core.identity import ContentMemo, content_prefix, is_prefix
from ctxlab.core.marks import OBSERVATION_KEY, is_user_request
from ctxlab.core.toolcalls import (
    CALL_BLOCKS,
    RESULT_BLOCKS,
    answered_call_ids,
    is_result_message,
    issued_call_ids,
    result_block_text,
    tool_pairs,
)

logger = logging.getLogger("ctxlab.core.messages")

__all__ = [
    "SCAN_SLOTS",
    "ScanMemory",
    "effective_messages",
    "full_output_text",
    "issued_call_ids",
    "last_human_index",
    "late_result_blocks",
    "late_result_observation",
    "message_text",
    "request_digest",
    "resolve_cutoff",
    "sendable_view",
    "tool_pair_spans",
    "valid_cut_positions",
]


def message_text(message: BaseMessage | Any, *, with_reasoning: bool = False) -> str:
    """The readable text of a message: str content, or its text blocks joined by newlines.

    Image blocks become ``[image]``; reasoning/thinking blocks are dropped unless
    ``with_reasoning``; a tool result block (Anthropic ``tool_result``, OpenAI Responses
    ``function_call_output``) is its output's text; a call block (``tool_use``, ``tool_call``,
    ``function_call``) is left out, as ``tool_calls`` are; any other block (an embedded
    resource, a JSON or file block) is its JSON, cut to 2,000 characters
    (:func:`full_output_text` keeps it whole).  Never returns base64 image data.
    """
    return _joined_text(message, with_reasoning=with_reasoning, block_chars=BLOCK_CHARS)


def full_output_text(message: BaseMessage | Any) -> str:
    """The text of a tool result's "full output" file (R6, issue 24): like :func:`message_text`,
    but every block that is neither text nor an image (an MCP embedded resource, a JSON block, a
    file block) is its whole JSON, never cut.  Images stay ``[image]`` (the view keeps them)."""
    return _joined_text(message, with_reasoning=False, block_chars=None)


#: characters of a non-text block's JSON that :func:`message_text` keeps
BLOCK_CHARS = 2000


def _joined_text(message: BaseMessage | Any, *, with_reasoning: bool, block_chars: int | None) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else str(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind in ("image_url", "image", "input_image"):
                parts.append("[image]")
            elif kind in ("reasoning", "thinking"):
                if with_reasoning:
                    parts.append(str(block.get(kind, "")))
            elif kind == "redacted_thinking" or kind in CALL_BLOCKS:
                continue
            elif kind in RESULT_BLOCKS:
                parts.append(result_block_text(block))
            elif "text" in block and (block_chars is not None or len(block) <= 2):
                parts.append(str(block["text"]))
            else:
                dumped = json.dumps(block, ensure_ascii=False, default=str)
                parts.append(dumped if block_chars is None else dumped[:block_chars])
    return "\n".join(parts)


def request_digest(message: BaseMessage) -> str | None:
    """A short digest (16 hex) of a user request's content, else ``None``: what an event records
    of its last summarized message when that is a user request, so that the request edited in
    place (replaced by id, as LangGraph's "edit a message" does) is told from the one summarized."""
    if not is_user_request(message):
        return None
    content = message.content
    text = (
        content
        if isinstance(content, str)
        else json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def resolve_cutoff(state_messages: Sequence[BaseMessage], event: Mapping[str, Any] | None) -> int | None:
    """Where the kept part of ``state_messages`` starts under ``event`` (R11), or ``None`` when
    ``event`` is not a usable summarization event (not a dict, no summary message, a cutoff that
    is not an int ``>= 0``) or no longer describes this state: then there is no summary yet.

    The stored ``cutoff_index`` is a position; an event ctxlab wrote also names two anchors,
    ``last_summarized_id`` (the message just before the cutoff) and ``first_kept_id`` (the one at
    it), and, when the last summarized message is a user request, ``last_summarized_digest``
    (:func:`request_digest`).  The rule never hides a message added after the summary (messages
    are only ever appended: LangGraph's ``add_messages`` puts a new id at the end):

    1. No anchor at all (an event from before anchors, or messages without ids): the position,
       clamped to ``len(state_messages)``; nothing can be told about removals.
    2. The anchors are where the position says (and the digest matches): the position.
    3. The last summarized message is in the state at ``i``: right after it (``i + 1``) — other
       messages were removed before it (a trimming node) or after it (an undo of the kept
       turn); what follows it is kept or new.  If it is a user request edited in place since
       (its digest differs), at it (``i``): the edited request is sent after the summary.
    4. Else the first kept message is in the state at ``j``: at it (``j``) — summarized messages
       were removed, the kept part is intact.
    5. Else neither is in the state: the event is dropped, with a warning.  Either it was made for
       another state (a sub-agent or harness that copied its parent's keys, issue 24), or the
       history was rewound past the summary (an undo, a rewind, an edit-and-resend that removed
       the last summarized message and everything after it, issue 30): the summary may describe
       turns that no longer exist, and trusting its position would hide what was added since.
       The state's own messages are sent; a later round summarizes them afresh.
    """
    if not isinstance(event, Mapping) or event.get("summary_message") is None:
        return None
    cutoff = event.get("cutoff_index")
    if not isinstance(cutoff, int) or isinstance(cutoff, bool) or cutoff < 0:
        return None
    n = len(state_messages)
    last, first = event.get("last_summarized_id"), event.get("first_kept_id")
    last = last if isinstance(last, str) else None
    first = first if isinstance(first, str) else None
    if last is None and first is None:
        return min(cutoff, n)  # rule 1: no anchor, the position alone
    digest = event.get("last_summarized_digest")
    digest = digest if isinstance(digest, str) else None

    def edited(message: BaseMessage) -> bool:
        return digest is not None and request_digest(message) != digest

    if (last is None or (0 < cutoff <= n and state_messages[cutoff - 1].id == last)) and (
        first is None or (cutoff < n and state_messages[cutoff].id == first)
    ):  # rule 2
        return cutoff - 1 if last is not None and edited(state_messages[cutoff - 1]) else cutoff
    found_first = None
    for i in range(n - 1, -1, -1):
        mid = state_messages[i].id
        if last is not None and mid == last:  # rule 3
            return i if edited(state_messages[i]) else i + 1
        if first is not None and mid == first and found_first is None:
            found_first = i
    if found_first is not None:  # rule 4
        return found_first
    logger.warning(  # rule 5
        "ignoring a _summarization_event that no longer describes this state: neither its last "
        "summarized message (%s) nor its first kept message (%s) is among the %s state messages "
        "(%s); the state's own messages are sent",
        last,
        first,
        n,
        "made for another state" if cutoff > n else "the history was rewound past the summary",
    )
    return None


def effective_messages(
    state_messages: Sequence[BaseMessage], event: Mapping[str, Any] | None
) -> list[BaseMessage]:
    """``[event.summary_message, *state_messages[cutoff:]]`` or the state messages.

    Spec: "effective messages"; ``cutoff`` is :func:`resolve_cutoff` (the stored cutoff, moved to
    its anchor or clamped when messages were removed).  A malformed event (no int
    ``cutoff_index >= 0``, no summary message) is ignored: the full state is returned, so a
    damaged checkpoint degrades to "no summary yet" instead of dropping history.
    """
    cutoff = resolve_cutoff(state_messages, event)
    if cutoff is None or event is None:
        return list(state_messages)
    summary = event["summary_message"]
    if isinstance(summary, dict):
        summary = HumanMessage(**{k: v for k, v in summary.items() if k != "type"})
    return [summary, *state_messages[cutoff:]]


def tool_pair_spans(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """(call index, last result index) for every tool call answered later in ``messages`` (a
    call and a result in any of their shapes: :mod:`ctxlab.core.toolcalls` — ``tool_calls``,
    ``invalid_tool_calls``, ``tool_use``/``tool_call``/``function_call`` blocks; ToolMessages,
    ``tool_result``/``function_call_output`` blocks).

    A result answers the nearest earlier AIMessage that issued its call id — what providers
    check, and the only reading that holds when ids are reused across turns (``read_file:0`` in
    every response, as some providers and proxies emit).  A call whose result never arrives (a
    dead call) yields no span, so it never blocks a cutoff; a result with no earlier call yields
    no span either.  Error and rejection results (``status="error"``) close a call like any
    result; several results for one call all belong to its span.
    """
    return [(owner, j) for (owner, _cid), j in tool_pairs(messages).answered.items()]


def _inside_pairs(messages: Sequence[BaseMessage]) -> list[bool]:
    """``inside[c]`` for ``c`` in ``0..len(messages)``: a cut before ``messages[c]`` would separate
    a tool call from one of its results (:func:`tool_pair_spans`).  Linear."""
    n = len(messages)
    depth = [0] * (n + 2)
    for a, b in tool_pair_spans(messages):
        depth[a + 1] += 1  # cuts a+1 .. b are inside the pair
        depth[b + 1] -= 1
    inside = [False] * (n + 1)
    running = 0
    for c in range(n + 1):
        running += depth[c]
        inside[c] = running > 0
    return inside


def valid_cut_positions(messages: Sequence[BaseMessage]) -> list[bool]:
    """``ok[c]`` for ``c`` in ``0..len(messages)``: may a cutoff go before ``messages[c]``?

    Invalid when the cut separates a tool call from any of its results (R9: parallel calls,
    interleaved results of several AIMessages, out-of-order results, ids reused across turns,
    calls and results in any shape of :mod:`ctxlab.core.toolcalls`), or when the kept part would
    open with a result message (a ToolMessage, a user message of tool results only) or a
    SystemMessage (a provider rejects those right after the summary).  Linear in the number of
    messages.
    """
    n = len(messages)
    inside = _inside_pairs(messages)
    return [
        not inside[c]
        and not (c < n and (isinstance(messages[c], SystemMessage) or is_result_message(messages[c])))
        for c in range(n + 1)
    ]


def _late_head(name: str, call_id: Any, summarized: bool) -> str:
    """The line that opens a result sent as text, saying truly where its call is."""
    if summarized:
        return (
            f"[ctxlab: result of the earlier tool call {name}(id {call_id}); "
            "the call itself is in the summarized part of the conversation]"
        )
    return (
        f"[ctxlab: result of a tool call {name}(id {call_id}) whose call is not in this request; "
        "sent as text, as a provider refuses a tool result without its call]"
    )


def late_result_observation(message: ToolMessage, summarized: bool = True) -> HumanMessage:
    """A ToolMessage whose call is not in the view, as a text observation (same id): a
    ``HumanMessage`` marked :data:`ctxlab.core.marks.OBSERVATION_KEY` that names the tool, the
    call id and where the call is (``summarized``: behind the summary's cutoff; else in no
    message of the request) before the result's own content (text and image blocks kept; text
    UTF-8 cannot encode escaped as in files, :func:`ctxlab.core.files.writable_text`)."""
    head = _late_head(f"{message.name or 'tool'} ", message.tool_call_id, summarized)
    content: str | list[str | dict[Any, Any]]
    if isinstance(message.content, str):
        content = writable_text(f"{head}\n{message.content}")
    else:
        content = [
            {"type": "text", "text": head},
            *(
                {**b, "text": writable_text(b["text"])}
                if isinstance(b, dict) and isinstance(b.get("text"), str)
                else b
                for b in message.content
            ),
        ]
    return HumanMessage(content=content, id=message.id, additional_kwargs={OBSERVATION_KEY: True})


#: views (without orphans) whose scan a :class:`ScanMemory` remembers, most recent first
SCAN_SLOTS = 4


class _Scan(NamedTuple):
    """A view :func:`sendable_view` found without orphans: a copy of its list and the tool-call
    ids its AIMessages issue."""

    messages: list[BaseMessage]
    issuers: set[str]


class ScanMemory:
    """The orphan scans of one owner's views (one per ``CompressionMiddleware``), so that a view
    that extends a remembered orphan-free view scans only its new messages.

    Bounded per instance: the ``slots`` most recent orphan-free views (their lists and the
    tool-call ids they issue), whatever thread or agent sent them; a middleware that serves more
    histories at once than ``slots`` scans some views whole (linear, the same answer).  Nothing
    is process-global: the memory goes with its owner.  Thread-safe.

    Args:
        slots: views remembered (> 0), :data:`SCAN_SLOTS` by default.
        content_memo: the owner's :class:`~ctxlab.core.identity.ContentMemo` (the estimate
            cache's, so that a reloaded checkpoint is compared by content once per call);
            ``None``: a memo of its own.

    Raises:
        ValueError: ``slots`` is not a positive integer.
    """

    def __init__(self, slots: int = SCAN_SLOTS, content_memo: ContentMemo | None = None) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or slots <= 0:
            raise ValueError(f"slots={slots!r} is invalid: allowed an integer > 0")
        self.slots = slots
        self.content_memo = ContentMemo() if content_memo is None else content_memo
        self._scans: list[_Scan] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._scans)

    def clear(self) -> None:
        """Forget every remembered view."""
        with self._lock:
            self._scans.clear()

    def _take(self, view: list[BaseMessage]) -> _Scan | None:
        """Remove and return a remembered view that ``view`` extends: by the same objects (or
        equal ones, :func:`~ctxlab.core.identity.is_prefix`), else, for a checkpoint reloaded in
        this process (new objects), by every field (the most recent such view first)."""
        with self._lock:
            found = next((s for s in self._scans if is_prefix(s.messages, view)), None)
            if found is None:
                found = next((s for s in self._scans if self._same_content(s.messages, view)), None)
            if found is not None:
                self._scans.remove(found)  # its issuer set is extended in place by the caller
        return found

    def _same_content(self, head: list[BaseMessage], view: list[BaseMessage]) -> bool:
        """Whether ``view`` starts with messages equal in every field to ``head`` (the first ones
        must share an id, so that another history is refused in O(1))."""
        return 0 < len(head) <= len(view) and content_prefix(view, head, self.content_memo) == len(head)

    def find_orphans(self, view: list[BaseMessage]) -> list[int]:
        """The orphan indices of ``view`` (see :func:`sendable_view`), amortized: a view that
        extends a remembered orphan-free view scans only its new suffix; any other view (a
        rewritten history) is scanned whole.  An orphan-free view is remembered."""
        found = self._take(view)
        start, issuer = (len(found.messages), found.issuers) if found is not None else (0, set())
        orphans = _scan_orphans(view, start, issuer)
        if not orphans:
            with self._lock:
                self._scans.insert(0, _Scan(list(view), issuer))
                del self._scans[self.slots :]
        return orphans


def _scan_orphans(view: list[BaseMessage], start: int, issuer: set[str]) -> list[int]:
    """Indices ``>= start`` of the messages of ``view`` that answer a call id no earlier AIMessage
    issued (a ToolMessage, or a message with such a result block: :mod:`ctxlab.core.toolcalls`);
    ``issuer`` holds the ids issued by ``view[:start]`` and is extended in place."""
    orphans: list[int] = []
    for i in range(start, len(view)):
        m = view[i]
        if isinstance(m, AIMessage):
            issuer.update(issued_call_ids(m))
        elif any(cid not in issuer for cid in answered_call_ids(m)):
            orphans.append(i)
    return orphans


def late_result_blocks(
    message: BaseMessage, late: set[str], summarized: Container[str] = ()
) -> HumanMessage | BaseMessage:
    """A message whose result blocks answering the call ids ``late`` have no call in the view:
    each such block becomes a text block that names the call id (and whether it is among the
    ``summarized`` ones) before the result's text (an Anthropic ``tool_result`` or OpenAI
    Responses ``function_call_output`` without its call is rejected like a ToolMessage without
    its call).  A message left with no result block is a text observation (a ``HumanMessage``
    marked :data:`ctxlab.core.marks.OBSERVATION_KEY`, same id); one that still answers calls in
    the view keeps its type.  Text is escaped as in files."""
    content: list[Any] = []
    paired = False
    for b in message.content if isinstance(message.content, list) else []:
        keys = RESULT_BLOCKS.get(str(b.get("type"))) if isinstance(b, dict) else None
        if not isinstance(b, dict) or keys is None or (cid := b.get(keys[0])) not in late:
            paired = paired or keys is not None
            content.append(b)
            continue
        head = _late_head("", cid, cid in summarized)
        content.append({"type": "text", "text": writable_text(f"{head}\n{result_block_text(b)}")})
    if paired:
        return message.model_copy(update={"content": content})
    return HumanMessage(content=content, id=message.id, additional_kwargs={OBSERVATION_KEY: True})


def sendable_view(
    view: list[BaseMessage],
    memory: ScanMemory | None = None,
    summarized: Iterable[BaseMessage] = (),
    *,
    summarized_only: bool = False,
) -> list[BaseMessage]:
    """``view`` as a provider accepts it: no tool result without an earlier call in the view (a
    ToolMessage, or a ``tool_result`` / ``function_call_output`` block: :mod:`ctxlab.core.toolcalls`).

    A result that arrives after its call went behind the cutoff (a call still unanswered at the
    cutoff does not block it) would be such an orphan.  It becomes a text observation
    (:func:`late_result_observation`, :func:`late_result_blocks`; same id) in its place, or right
    after the tool-call pair it would split (a message between a call and its results is
    rejected too); a message that also answers calls in the view keeps its place, its late
    result blocks turned to text.  Returns ``view`` itself when it has no orphan (the usual
    case), else a new list; never edits a message.

    ``summarized``: the state messages the view's summary stands for (read only when there is
    an orphan): a result whose call one of them issued says so, any other says its call is not
    in the request.  ``summarized_only`` (below T, R3: the effective messages go as they are):
    only those results are turned to text; a result whose call is nowhere in the conversation
    (the agent's own history, or another component's edit) is sent as it is, refused by a
    provider as the request without ctxlab would be.

    ``memory``: the caller's :class:`ScanMemory` (a middleware's own); a view that extends one it
    remembers (the history grew) then scans only the new messages plus one C-speed comparison of
    the old part.  ``None``, or any other view: scanned whole (linear).  The answer never
    depends on the memory.
    """
    orphans = memory.find_orphans(view) if memory is not None else _scan_orphans(view, 0, set())
    if not orphans:
        return view
    behind = {cid for m in summarized if isinstance(m, AIMessage) for cid in issued_call_ids(m)}
    fixed: dict[int, BaseMessage] = {}
    issued: set[str] = set()
    pending = set(orphans)
    for i, m in enumerate(view):  # which results of each orphan are late, where it stands
        if isinstance(m, AIMessage):
            issued.update(issued_call_ids(m))
        elif i in pending:
            late = {c for c in answered_call_ids(m) if c not in issued}
            if summarized_only and not (late := late & behind):
                continue
            if isinstance(m, ToolMessage):
                fixed[i] = late_result_observation(m, m.tool_call_id in behind)
            else:
                fixed[i] = late_result_blocks(m, late, behind)
    if not fixed:
        return view
    moved = [i for i in fixed if not answered_call_ids(fixed[i])]  # observations now
    view = [fixed.get(i, m) for i, m in enumerate(view)]
    if not moved:
        return view
    skip = set(moved)
    rest = [m for i, m in enumerate(view) if i not in skip]
    inside = _inside_pairs(rest)
    at: dict[int, list[BaseMessage]] = {}
    for i in moved:
        pos = i - sum(1 for j in moved if j < i)  # its position among the other messages
        while inside[pos]:
            pos += 1
        at.setdefault(pos, []).append(view[i])
    out: list[BaseMessage] = []
    for pos in range(len(rest) + 1):
        out.extend(at.get(pos, []))
        if pos < len(rest):
            out.append(rest[pos])
    return out


def last_human_index(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the latest HumanMessage that is a user request (not a summary, not an
    observation recorded as a user message: :func:`ctxlab.core.marks.is_user_request`), or ``None``."""
    for i in range(len(messages) - 1, -1, -1):
        if is_user_request(messages[i]):
            return i
    return None
