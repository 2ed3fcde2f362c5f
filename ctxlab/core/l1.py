"""L1: structural trimming of the request view (spec R5, R6, R7).

L1 works on a fresh list built for one model call: trimmers replace entries with edited copies
and never touch a state message object (state messages keep their full text, R6).  The trimmers
themselves are plugins (hook ``ctxlab_l1_trim``); the built-in two are in
:mod:`ctxlab.core.builtin.trimmers`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.messages import BaseMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import writable_text
from ctxlab.core.identity import is_prefix
from ctxlab.core.settings import CompressionSettings

logger = logging.getLogger("ctxlab.core.l1")

__all__ = [
    "OffloadRecord",
    "RunL1",
    "TrimContext",
    "TrimPass",
    "TrimProgress",
    "TrimReport",
    "TruncatedArg",
    "fit_preview",
    "protect_key",
    "run_l1",
]


class OffloadRecord(TypedDict):
    """One tool result L1 offloaded (R6).

    Attributes:
        path: the virtual file path (``None`` when the write failed: only the preview was kept).
        tool: the tool's name, if known.  chars: characters of the full text.
        tokens_before, tokens_after: estimates of the message before and after (tokens).
        message_id, tool_call_id: the ids of the original message.
    """

    path: str | None
    tool: str | None
    chars: int
    tokens_before: int
    tokens_after: int
    message_id: str | None
    tool_call_id: str | None


class TruncatedArg(TypedDict):
    """One argument L1 truncated (R5): the call id, the tool, the argument and its length in
    characters."""

    call_id: str | None
    tool: str | None
    arg: str
    chars: int


@dataclass
class TrimReport:
    """What one trimmer did to one view.

    ``offloaded``: one :class:`OffloadRecord` per offloaded ToolMessage; ``truncated_args``:
    one :class:`TruncatedArg` per truncated argument; ``errors``: texts of problems that were
    handled (for instance a failed offload write).
    """

    trimmer: str
    offloaded: list[OffloadRecord] = field(default_factory=list)
    truncated_args: list[TruncatedArg] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class TrimContext:
    """What a trimmer may use.

    Attributes:
        settings: the compression settings.
        estimate: tokens of one message (cached estimator).
        save_tool_result: ``(tool_name, text) -> virtual path``; writes the full text to
            ``/outputs/large_tool_results/<tool>-<sha256>.txt`` through the backend and raises
            :class:`ctxlab.core.files.FileWriteError` when it cannot.
        token_limit: the per-ToolMessage limit in tokens (``summary_tool_result_token_limit``
            in L1; smaller when the overflow tail trimming of R12 calls the trimmers again).
        protect_ids: :func:`protect_key` of the messages a trimmer must leave alone.
        file_exists: ``virtual path -> bool``: does the file exist in this request's file scope
            (the thread's)?  ``None`` when the caller cannot tell: a trimmer then trusts no file
            it did not write in this round (R6, R17).
        files_epoch: an opaque token that stays equal from round to round while the files this
            middleware wrote in the request's file scope are known unchanged
            (:meth:`ctxlab.core.outputs.FileScope.files_epoch`, issue 31): a trimmer may then
            keep what it decided for a message in an earlier round of the same epoch instead of
            checking its file again.  ``None``: nothing is known; check every file named.
        file_owned: ``virtual path -> bool``: did this middleware write the file in this scope
            itself (and is it trusted, :meth:`ctxlab.core.outputs.FileScope.owns`)?  A file it
            did not write is checked every time a view names it.  ``None``: none is.
    """

    settings: CompressionSettings
    estimate: Callable[[BaseMessage], int]
    save_tool_result: Callable[[str | None, str], str]
    token_limit: int
    protect_ids: set[Any] = field(default_factory=set)
    file_exists: Callable[[str], bool] | None = None
    files_epoch: Hashable | None = None
    file_owned: Callable[[str], bool] | None = None


@dataclass
class RunL1:
    """Effect of a compression round: run the L1 trimmers on ``effective`` with ``ctx``; the
    driver sends back ``(view, reports)`` (:func:`run_l1`)."""

    effective: list[BaseMessage]
    ctx: TrimContext


@dataclass
class TrimPass:
    """What a trimmer remembers of its last pass over a view (:class:`TrimProgress`).

    Attributes:
        source: the view as the trimmer received it (a list nobody edits any more).
        output: the view as the trimmer left it (same length; edited entries are its copies).
        marked: positions an untrusted pass visits again (every message it edited or decided
            to leave whole although large).
        records: the pass's report entries, in position order (offload records, truncated
            arguments).
        foreign: positions whose copy names a file this middleware did not write: checked again
            on every pass (:attr:`TrimContext.file_owned`).
        key: what else the pass depended on (the token limit, ...).
        epoch: :attr:`TrimContext.files_epoch` of the pass.
    """

    source: list[BaseMessage]
    output: list[BaseMessage]
    marked: list[int]
    records: list[Any]
    foreign: list[int]
    key: Hashable
    epoch: Hashable | None


class TrimProgress:
    """The last view a trimmer passed over and what it did there, so that an L1 round whose view
    extends the previous one (the history grew) visits only the new messages and those it must
    check again: O(new messages) in a round of the same files epoch (issue 31: the copies of the
    earlier positions are taken over in one slice), O(new messages + remembered positions)
    otherwise.

    One slot, thread-safe.  A view that does not start with the remembered one (another thread's,
    a history rewritten or cut, spec R9/R11) or a different ``key`` (what else the pass depended
    on, e.g. the token limit) resumes nothing: the trimmer passes over it whole.
    """

    def __init__(self) -> None:
        self._slot: TrimPass | None = None
        self._lock = threading.Lock()

    def resume_pass(self, view: list[BaseMessage], key: Hashable = None) -> TrimPass | None:
        """The remembered pass when ``view`` extends its source and ``key`` is its key, else ``None``."""
        with self._lock:
            slot = self._slot
        if slot is None or slot.key != key or not is_prefix(slot.source, view):
            return None
        return slot

    def remember_pass(self, done: TrimPass) -> None:
        """Remember ``done`` (its lists are no longer edited by the caller)."""
        with self._lock:
            self._slot = done

    def resume(self, view: list[BaseMessage], key: Hashable = None) -> tuple[int, list[int]]:
        """``(start, positions)``: visit ``positions`` (ascending, all ``< start``) and then
        ``view[start:]``; ``(0, [])`` when nothing can be resumed."""
        slot = self.resume_pass(view, key)
        if slot is None:
            return 0, []
        return len(slot.source), list(slot.marked)

    def remember(self, source: list[BaseMessage], positions: list[int], key: Hashable = None) -> None:
        """Remember ``source`` (the view as the trimmer received it, a list the caller no longer
        edits) and the ``positions`` it must visit again."""
        self.remember_pass(TrimPass(source, source, positions, [], [], key, None))

    def clear(self) -> None:
        """Forget the remembered view (its messages went behind the cutoff)."""
        with self._lock:
            self._slot = None


def protect_key(message: BaseMessage) -> object:
    """What ``TrimContext.protect_ids`` holds for ``message``: its id, or ``id(message)`` when it
    has none (valid while the round holds the message)."""
    return message.id if message.id is not None else id(message)


def fit_preview(text: str, budget_tokens: int, header: str, text_tokens: int | None = None) -> str:
    """``header`` plus the head (and a short tail) of ``text`` within ``budget_tokens``.

    The result's estimate (:func:`ctxlab.core.estimation.estimate_text_tokens`) is at most the budget,
    or the header alone when even that does not fit.  ``text_tokens``: the estimate of the whole
    ``text`` when known; the first try then takes the characters that many tokens hold in this text
    (usually the only try, issue 31) instead of 4 characters a token.  Units: tokens in, text out.
    Text UTF-8 cannot encode (a lone surrogate) is escaped as in the offload file
    (:func:`ctxlab.core.files.writable_text`): the preview is sent to the model (issue 30).
    """
    text = writable_text(text)
    room = budget_tokens - estimate_text_tokens(header) - 8
    if room <= 0 or not text:
        return header
    per_token = len(text) / text_tokens * 0.97 if text_tokens else 4
    chars = min(len(text), max(16, int(room * per_token)))
    for _ in range(8):
        head_n = int(chars * 0.8)
        tail_n = chars - head_n
        if chars >= len(text):
            body = text
        else:
            body = text[:head_n] + "\n[...]\n" + (text[-tail_n:] if tail_n > 0 else "")
        if estimate_text_tokens(body) <= room:
            return f"{header}\n{body}"
        chars = int(chars * max(0.3, room / max(1, estimate_text_tokens(body))) * 0.95)
        if chars < 16:
            break
    return header


def run_l1(
    trim: Callable[[list[BaseMessage], TrimContext], list[TrimReport]],
    effective: Sequence[BaseMessage],
    ctx: TrimContext,
) -> tuple[list[BaseMessage], list[TrimReport]]:
    """Build a fresh view of ``effective`` and let the trimmers edit it (R5, R6).

    Args:
        trim: runs every ``ctxlab_l1_trim`` plugin on the view
            (:meth:`ctxlab.core.hooks.CompressionHooks.l1_trim`).
        effective: the effective messages; never edited.
        ctx: what the trimmers may use.

    Returns:
        (view, reports): the trimmed view (same length and order as ``effective``; unchanged
        entries are the original objects) and the trimmers' reports.

    Raises:
        RuntimeError: a trimmer changed the number of messages.
    """
    view = list(effective)
    reports = trim(view, ctx)
    if len(view) != len(effective):
        raise RuntimeError("an L1 trimmer changed the number of messages; trimmers may only replace entries")
    return view, reports
