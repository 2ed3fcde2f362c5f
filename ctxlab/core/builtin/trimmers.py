"""The built-in L1 trimmers: tool-result offload (R6) here, argument truncation (R5) in
:mod:`ctxlab.core.builtin.truncation` (importable from here too).

Both only ever replace entries of the request view with edited copies, and an edited copy is
never larger than the message it replaces (its estimate in tokens).
"""

from __future__ import annotations

import logging
import operator
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from ctxlab.core.builtin.arguments import bound_arguments
from ctxlab.core.builtin.offload_text import (
    PATH_SHAPE,
    headers,
    path_gone,
    replacements,
    with_images,
)
from ctxlab.core.builtin.truncation import (
    CALL_BLOCK_ARGUMENTS,
    OFFLOADS_CACHED,
    TRUNCATED_TOOLS,
    ArgumentTruncation,
)
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import FileWriteError, safe_stem
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import (
    OffloadRecord,
    TrimContext,
    TrimPass,
    TrimProgress,
    TrimReport,
    protect_key,
)
from ctxlab.core.marks import (
    OFFLOAD_MARKER,
    is_observation,
    is_tool_result,
    offload_kwargs,
    offloaded_path_of,
    truncation_marker,
)
from ctxlab.core.messages import full_output_text
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.toolcalls import RESULT_BLOCKS, result_block_text, result_blocks

logger = logging.getLogger("ctxlab.core.l1")

__all__ = [
    "CALL_BLOCK_ARGUMENTS",
    "OFFLOAD_MARKER",
    "TRUNCATED_TOOLS",
    "ArgumentTruncation",
    "ToolResultOffload",
    "bound_arguments",
    "is_tool_result",
    "text_only",
    "truncation_marker",
]

#: message framings remembered per trimmer: (estimator, message class, tool name)
FRAMINGS_CACHED = 256


def text_only(content: list[Any]) -> str:
    """The text blocks of a list content, joined (no image placeholders)."""
    return "\n".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    )


@dataclass
class _Offloaded:
    """A remembered offload: the view copy, its report entries and the full texts it saved
    (one for a ToolMessage, one per offloaded result block of a block-format message)."""

    copy: BaseMessage
    entries: list[OffloadRecord]
    texts: list[str]


class ToolResultOffload:
    """R6: a ToolMessage whose estimate exceeds the token limit is written to
    ``/outputs/large_tool_results/<tool>-<sha256>.txt`` and replaced in the view by the path plus
    a preview within the same token budget.  Image blocks of a list content stay in the view.

    The replacement fits the limit (its estimate, images aside, is at most the limit) and is
    smaller than the original.  Below the *path floor* — a limit that cannot hold even the
    shortest header with its path (about 65-90 tokens: a 64-hex hash and the tool name) — the
    replacement is that shortest header alone: over the limit, but smaller than the original (a
    result it would not shrink stays as it is); a ``summary_tool_result_token_limit`` below the
    floor is logged once per trimmer and limit as a warning (the smaller limits of the overflow
    tail trim are not).  The copy carries ctxlab's offload mark
    (:func:`ctxlab.core.marks.offload_kwargs`); a message with that mark whose file exists in the
    thread's file scope is not written again (a text that merely starts with
    :data:`OFFLOAD_MARKER` decides nothing).  A remembered copy is reused only after its file is
    saved again in this request's file scope (``ctx.save_tool_result`` writes only what is missing).
    """

    name = "tool-result-offload"

    def __init__(self) -> None:
        # (message, token limit) -> the offloaded copy: a long run does not rebuild the preview
        # of the same state message on every call
        self._memo: IdentityCache[BaseMessage, _Offloaded] = IdentityCache(OFFLOADS_CACHED)
        self._progress = TrimProgress()
        self._floor_warned: set[int] = set()
        self._floor_lock = threading.Lock()
        # estimator -> (message class, tool name) -> what a message of that kind costs around
        # its text (an empty copy estimated once, not one per offload: issue 31)
        self._framing: IdentityCache[object, int] = IdentityCache(FRAMINGS_CACHED)

    def _warn_floor(self, limit: int, header: str) -> None:
        """Warn once per limit that ``limit`` cannot hold an offload path (the path floor)."""
        with self._floor_lock:
            if limit in self._floor_warned:
                return
            self._floor_warned.add(limit)
        logger.warning(
            "summary_tool_result_token_limit=%s cannot hold an offload path (~%s tokens): "
            "results over it are replaced by the path alone, above the limit",
            limit,
            estimate_text_tokens(header),
        )

    @hookimpl(trylast=True)
    def ctxlab_l1_trim(self, view: list[BaseMessage], ctx: TrimContext) -> TrimReport:
        report = TrimReport(trimmer=self.name)
        protect = ctx.protect_ids
        key = (ctx.token_limit, ctx.file_exists is None)
        done = None if protect else self._progress.resume_pass(view, key)
        source = list(view)
        n = len(view)
        # (position, record) of every offload in the view, in position order
        entries: list[tuple[int, OffloadRecord]] = []
        marked: list[int] = []
        start = 0
        trusted = done is not None and ctx.files_epoch is not None and done.epoch == ctx.files_epoch
        if done is None:
            visit: Iterable[int] = range(n)
        elif trusted:
            # issue 31: the files this middleware wrote are unchanged since the last pass: its
            # copies of the old part stand; only the copies naming files it did not write (and
            # failed writes) are checked again, with the new messages
            start = len(done.source)
            view[:start] = done.output[:start]
            marked = list(done.marked)
            again = set(done.foreign)
            entries = [e for e in done.records if e[0] not in again] if again else list(done.records)
            visit = (*done.foreign, *range(start, n))
        else:
            # a view that extends the previous one in another files epoch: its offloads are
            # checked again (their files must exist in this request's scope, R6/R17), its small
            # results are not visited
            start = len(done.source)
            visit = (*done.marked, *range(start, n))
        recheck: list[int] = []
        kept = len(entries)  # the entries taken over from the last pass (trusted)
        for i in visit:
            m = source[i]
            if not is_tool_result(m) or (protect and protect_key(m) in protect):
                continue
            named = self._visit(i, m, view, ctx, report, entries)
            if (i >= start or not trusted) and (named is not False or ctx.estimate(m) > ctx.token_limit):
                marked.append(i)  # offloaded, or left whole although large: decided again
            if named is None or (isinstance(named, str) and not _owned(ctx, named)):
                recheck.append(i)  # a failed write, or a file this middleware did not write
        if trusted and kept and len(entries) > kept and done is not None and done.foreign:
            entries.sort(key=lambda e: e[0])  # the checked-again copies back in position order
        report.offloaded = list(map(_RECORD, entries))
        if not protect:
            self._progress.remember_pass(
                TrimPass(source, list(view), marked, entries, recheck, key, ctx.files_epoch)
            )
        return report

    def _visit(
        self,
        i: int,
        m: BaseMessage,
        view: list[BaseMessage],
        ctx: TrimContext,
        report: TrimReport,
        entries: list[tuple[int, OffloadRecord]],
    ) -> str | bool | None:
        """Decide ``view[i]`` for the tool result ``m`` (its offload record goes to ``entries``):
        returns the path its copy names, ``True`` when ctxlab offloaded it already and it names no
        file now, ``None`` when its write failed (tried again next time), ``False`` when it stays
        as it is."""
        saved = offloaded_path_of(m)
        if saved is not None:
            # R6: offloaded by ctxlab already (the overflow trim wrote the copy to the state)
            if ctx.file_exists is not None and not ctx.file_exists(saved):
                view[i] = path_gone(m, saved)  # never point the model at a missing file
                return True
            return saved
        memo = self._memo.get(m, ctx.token_limit)
        if memo is not None and _saved_again(memo, ctx):
            view[i] = memo.copy
            entries.extend((i, entry) for entry in memo.entries)
            return memo.entries[-1]["path"]
        before = len(report.offloaded)
        blocks = not isinstance(m, ToolMessage) and not is_observation(m)  # issue 30: result blocks
        new = self._offload_blocks(m, ctx, report) if blocks else self._offload(m, ctx, report)
        if new is None:
            return False
        view[i] = new
        entries.extend((i, entry) for entry in report.offloaded[before:])
        return report.offloaded[-1]["path"] if len(report.offloaded) > before else None

    @hookimpl
    def ctxlab_forget(self, messages: list[BaseMessage], settings: CompressionSettings) -> None:
        self._progress.clear()
        limit = settings.summary_tool_result_token_limit  # the memo's qualifier (ctx.token_limit)
        # only tool results are memo keys: the others find nothing (one hold of the lock, issue 31)
        self._memo.pop_many(messages, limit)

    def _offload(self, m: BaseMessage, ctx: TrimContext, report: TrimReport) -> BaseMessage | None:
        """The offloaded copy of ``m``, or ``None`` when ``m`` stays as it is."""
        before = ctx.estimate(m)
        if before <= ctx.token_limit:
            return None
        # the "full output" file holds every block whole: text, and an embedded resource, a JSON
        # or a file block as its JSON (issue 24); images stay in the view beside the preview
        text = full_output_text(m)
        if isinstance(m.content, list) and estimate_text_tokens(text) <= ctx.token_limit:
            return None  # what is large is images: offloading the rest would not shrink it
        images = (
            [b for b in m.content if isinstance(b, dict) and b.get("type") in ("image_url", "image")]
            if isinstance(m.content, list)
            else []
        )
        tool = getattr(m, "name", None) or "observation"
        framing = self._framing.get_or_put(
            getattr(ctx.estimate, "__self__", ctx.estimate),
            lambda _e: ctx.estimate(m.model_copy(update={"content": ""})),
            (type(m), getattr(m, "name", None)),
        )
        budget = ctx.token_limit - framing  # tokens the text of the replacement may use
        allowance = ctx.token_limit
        if images:
            allowance += ctx.estimate(m.model_copy(update={"content": images})) - framing
        shape = PATH_SHAPE.format(stem=safe_stem(tool))
        # the path floor: a limit that cannot hold the shortest header with its path; then the
        # replacement is that header alone, over the limit but smaller than the original
        floor = budget <= 0 or estimate_text_tokens(headers(text, before, shape)[-1]) > budget
        if floor:
            shortest = headers(text, before, shape)[-1]
            if ctx.estimate(m.model_copy(update={"content": with_images(shortest, images)})) >= before:
                return None  # even the path alone would not shrink it: the message stays as it is
            if ctx.token_limit == ctx.settings.summary_tool_result_token_limit:
                self._warn_floor(ctx.token_limit, shortest)  # the setting, not a tail-trim step
        path: str | None
        try:
            path = ctx.save_tool_result(tool, text)
        except FileWriteError as exc:
            logger.warning("offload of a %s result failed: %s", tool, exc.detail)
            report.errors.append(str(exc))
            path = None
        kwargs = {**m.additional_kwargs, **offload_kwargs(path, len(text))} if path else m.additional_kwargs
        heads = headers(text, before, path)
        candidates = [heads[-1]] if floor else replacements(text, budget, heads, before - framing)
        after = before
        for preview in candidates:
            new = m.model_copy(update={"content": with_images(preview, images), "additional_kwargs": kwargs})
            after = ctx.estimate(new)
            if after < before and (floor or after <= allowance):
                break
        else:
            return None  # no replacement fits: the message stays as it is
        entry: OffloadRecord = {
            "path": path,
            "tool": getattr(m, "name", None),
            "chars": len(text),
            "tokens_before": before,
            "tokens_after": after,
            "message_id": m.id,
            "tool_call_id": getattr(m, "tool_call_id", None),
        }
        report.offloaded.append(entry)
        if path is not None:  # a failed write is tried again next time
            self._memo.put(m, _Offloaded(new, [entry], [text]), ctx.token_limit)
        return new

    def _offload_blocks(self, m: BaseMessage, ctx: TrimContext, report: TrimReport) -> BaseMessage | None:
        """R6 for results carried as content blocks (issue 30: Anthropic ``tool_result``, OpenAI
        Responses ``function_call_output``, in a user message): each result block whose text
        exceeds the token limit is written to its own file and its output replaced by the path
        and a preview within the limit (images of a list output stay beside it); the block keeps
        its type and call id, so the result still pairs with its call.  ``None`` when nothing
        was offloaded or the copy would not be smaller."""
        before = ctx.estimate(m)
        if before <= ctx.token_limit or not isinstance(m.content, list):
            return None
        content = list(m.content)
        entries: list[OffloadRecord] = []
        texts: list[str] = []
        for i, cid, block in result_blocks(m):
            text = result_block_text(block)
            tokens = estimate_text_tokens(text)
            if tokens <= ctx.token_limit:
                continue
            tool = block.get("name") if isinstance(block.get("name"), str) else block.get("type")
            try:
                path: str | None = ctx.save_tool_result(str(tool), text)
            except FileWriteError as exc:
                logger.warning("offload of a %s result failed: %s", tool, exc.detail)
                report.errors.append(str(exc))
                path = None
            heads = headers(text, tokens, path)
            preview = next(replacements(text, ctx.token_limit, heads), heads[-1])
            key = RESULT_BLOCKS[str(block["type"])][1]
            output = block.get(key)
            images = (
                [
                    b
                    for b in output
                    if isinstance(b, dict) and b.get("type") in ("image", "image_url", "input_image")
                ]
                if isinstance(output, list)
                else []
            )
            content[i] = {**block, key: with_images(preview, images)}
            entries.append(
                {
                    "path": path,
                    "tool": str(tool),
                    "chars": len(text),
                    "tokens_before": tokens,
                    "tokens_after": estimate_text_tokens(preview),
                    "message_id": m.id,
                    "tool_call_id": cid,
                }
            )
            if path is not None:
                texts.append(text)
        if not entries:
            return None
        saved = next((e for e in entries if e["path"] is not None), None)
        kwargs = (
            {**m.additional_kwargs, **offload_kwargs(saved["path"], saved["chars"])}
            if saved is not None and saved["path"] is not None
            else m.additional_kwargs
        )
        new = m.model_copy(update={"content": content, "additional_kwargs": kwargs})
        if ctx.estimate(new) >= before:
            return None
        report.offloaded.extend(entries)
        if all(e["path"] is not None for e in entries):  # a failed write is tried again next time
            self._memo.put(m, _Offloaded(new, entries, texts), ctx.token_limit)
        return new


#: the record of a ``(position, record)`` entry
_RECORD = operator.itemgetter(1)


def _owned(ctx: TrimContext, path: str) -> bool:
    """Whether this middleware wrote ``path`` itself and trusts it (:attr:`TrimContext.file_owned`)."""
    return ctx.file_owned is not None and ctx.file_owned(path)


def _saved_again(memo: _Offloaded, ctx: TrimContext) -> bool:
    """Make sure the files of a remembered copy exist in this request's file scope (R6, R17)."""
    try:
        return all(
            ctx.save_tool_result(entry["tool"] or "observation", text) == entry["path"]
            for entry, text in zip(memo.entries, memo.texts, strict=True)
        )
    except FileWriteError:
        return False
