"""The two built-in L1 trimmers: argument truncation (R5) and tool-result offload (R6).

Both only ever replace entries of the request view with edited copies, and an edited copy is
never larger than the message it replaces (its estimate in tokens).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.core.builtin.arguments import bound_arguments
from ctxlab.core.builtin.arguments import rebuilt as _rebuilt
from ctxlab.core.builtin.arguments import with_value as _with
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import LARGE_TOOL_RESULTS_DIR, FileWriteError, safe_stem
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import (
    OffloadRecord,
    TrimContext,
    TrimProgress,
    TrimReport,
    TruncatedArg,
    fit_preview,
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
from ctxlab.core.toolcalls import CALL_BLOCKS, RESULT_BLOCKS, result_block_text, result_blocks

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

#: tools whose large arguments L1 truncates (R5)
TRUNCATED_TOOLS = frozenset({"write_file", "edit_file"})
#: content blocks of an AIMessage that carry a tool call, and the key of their arguments:
#: Anthropic ``tool_use``, LangChain v1 ``tool_call`` (``output_version="v1"``), OpenAI Responses
#: ``function_call`` (JSON text); :data:`ctxlab.core.toolcalls.CALL_BLOCKS` is their one home
CALL_BLOCK_ARGUMENTS = {kind: keys[1] for kind, keys in CALL_BLOCKS.items()}
#: offloaded (and argument-truncated) copies remembered per trimmer (a long run reuses them on
#: every call)
OFFLOADS_CACHED = 100_000
#: what the offload file name looks like, for the size of a header before the file exists
_PATH_SHAPE = f"{LARGE_TOOL_RESULTS_DIR}/{{stem}}-{'0a1b2c3d4e5f6789' * 4}.txt"
#: replaces the path of an offloaded copy whose file is gone from the thread's file scope
FILE_GONE = "(a file that is no longer available)"
#: a preview shorter than this (tokens) is not worth a header: a shorter header is tried first
MIN_PREVIEW_TOKENS = 8


def text_only(content: list[Any]) -> str:
    """The text blocks of a list content, joined (no image placeholders)."""
    return "\n".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    )


class ArgumentTruncation:
    """R5: every ``write_file``/``edit_file`` argument over 2,000 characters, in every call (no
    recent-call window) and in every place a provider reads a call, is replaced in the view by
    :func:`truncation_marker` (which states the original length).

    The places: ``tool_calls``, ``invalid_tool_calls`` (raw JSON text), content blocks
    (:data:`CALL_BLOCK_ARGUMENTS`: Anthropic ``tool_use``, LangChain v1 ``tool_call``, OpenAI
    Responses ``function_call``), and OpenAI's legacy ``additional_kwargs["tool_calls"]`` /
    ``["function_call"]``.  The size of an argument is measured by :func:`bound_arguments`.  A call
    found in several places is reported once per argument.
    """

    name = "arg-truncation"

    def __init__(self) -> None:
        # message -> (its bounded copy or itself, the arguments it truncated): a long run hands
        # the estimate cache the same copy on every call, so its prefix sums are reused
        self._memo: IdentityCache[AIMessage, tuple[AIMessage, list[TruncatedArg]]] = IdentityCache(
            OFFLOADS_CACHED
        )
        self._progress = TrimProgress()

    @hookimpl(trylast=True)
    def ctxlab_l1_trim(self, view: list[BaseMessage], ctx: TrimContext) -> TrimReport:
        report = TrimReport(trimmer=self.name)
        protect = ctx.protect_ids
        # a view that extends the previous one: only its bounded calls and the new messages
        start, again = (0, []) if protect else self._progress.resume(view)
        source = list(view)
        marked: list[int] = []
        for i in (*again, *range(start, len(view))):
            m = source[i]
            if isinstance(m, AIMessage) and (not protect or protect_key(m) not in protect):
                new, cut = self._memo.get_or_put(m, self._bound)
                if cut:
                    report.truncated_args.extend(cut)
                if new is not m:
                    view[i] = new
                if cut or new is not m:
                    marked.append(i)
        if not protect:
            self._progress.remember(source, marked)
        return report

    @hookimpl
    def ctxlab_forget(self, messages: list[BaseMessage], settings: CompressionSettings) -> None:
        self._progress.clear()
        for m in messages:
            if isinstance(m, AIMessage):
                self._memo.discard(m)

    def _bound(self, m: AIMessage) -> tuple[AIMessage, list[TruncatedArg]]:
        """(``m`` with its long arguments truncated, or ``m`` itself; what was truncated)."""
        report = TrimReport(trimmer=self.name)
        return self._bound_message(m, report), report.truncated_args

    def _bound_message(self, m: AIMessage, report: TrimReport) -> AIMessage:
        reported: set[tuple[Any, str]] = set()

        def bound(call_id: Any, name: Any, args: Any) -> Any:
            if name not in TRUNCATED_TOOLS:
                return args
            new, cut = bound_arguments(args)
            for arg, chars in cut:
                if (call_id, arg) not in reported:
                    reported.add((call_id, arg))
                    report.truncated_args.append(
                        {"call_id": call_id, "tool": name, "arg": arg, "chars": chars}
                    )
            return new

        update: dict[str, Any] = {}
        calls = _rebuilt(
            m.tool_calls, lambda c: _with(c, "args", bound(c.get("id"), c.get("name"), c.get("args")))
        )
        if calls is not None:
            update["tool_calls"] = calls
        invalid = _rebuilt(
            m.invalid_tool_calls, lambda c: _with(c, "args", bound(c.get("id"), c.get("name"), c.get("args")))
        )
        if invalid is not None:
            update["invalid_tool_calls"] = invalid
        if isinstance(m.content, list):

            def block(b: Any) -> Any:
                key = CALL_BLOCK_ARGUMENTS.get(str(b.get("type"))) if isinstance(b, dict) else None
                if key is None or key not in b:
                    return b
                return _with(b, key, bound(b.get("id") or b.get("call_id"), b.get("name"), b[key]))

            blocks = _rebuilt(m.content, block)
            if blocks is not None:
                update["content"] = blocks
        kwargs = self._bound_legacy(m.additional_kwargs, bound)
        if kwargs is not None:
            update["additional_kwargs"] = kwargs
        return m.model_copy(update=update) if update else m

    @staticmethod
    def _bound_legacy(kwargs: dict[str, Any], bound: Callable[[Any, Any, Any], Any]) -> dict[str, Any] | None:
        """OpenAI's legacy ``additional_kwargs`` (``tool_calls`` of ``{"function": {"name",
        "arguments"}}``, ``function_call``) with bounded arguments, or ``None`` when unchanged."""

        def function(owner: Any, call_id: Any) -> Any:
            fn = owner.get("function") if isinstance(owner, dict) and "function" in owner else owner
            if not isinstance(fn, dict) or "arguments" not in fn:
                return owner
            new_fn = _with(fn, "arguments", bound(call_id, fn.get("name"), fn["arguments"]))
            if new_fn is fn:
                return owner
            return _with(owner, "function", new_fn) if owner is not fn else new_fn

        out: dict[str, Any] | None = None
        legacy = kwargs.get("tool_calls")
        if isinstance(legacy, list):
            calls = _rebuilt(legacy, lambda c: function(c, c.get("id") if isinstance(c, dict) else None))
            if calls is not None:
                out = {**kwargs, "tool_calls": calls}
        fc = kwargs.get("function_call")
        if isinstance(fc, dict):
            new_fc = function(fc, None)
            if new_fc is not fc:
                out = {**(out or kwargs), "function_call": new_fc}
        return out


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
        # a view that extends the previous one: its offloads are checked again (their files
        # must exist in this request's scope, R6/R17), its small results are not visited
        key = (ctx.token_limit, ctx.file_exists is None)
        start, again = (0, []) if protect else self._progress.resume(view, key)
        source = list(view)
        marked: list[int] = []
        for i in (*again, *range(start, len(view))):
            m = source[i]
            if not is_tool_result(m) or (protect and protect_key(m) in protect):
                continue
            saved = offloaded_path_of(m)
            if saved is not None:
                # R6: offloaded by ctxlab already (the overflow trim wrote the copy to the state)
                marked.append(i)
                if ctx.file_exists is not None and not ctx.file_exists(saved):
                    view[i] = _path_gone(m, saved)  # never point the model at a missing file
                continue
            memo = self._memo.get(m, ctx.token_limit)
            if memo is not None and _saved_again(memo, ctx):
                marked.append(i)
                view[i] = memo.copy
                report.offloaded.extend(memo.entries)
                continue
            blocks = not isinstance(m, ToolMessage) and not is_observation(m)
            new = self._offload_blocks(m, ctx, report) if blocks else self._offload(m, ctx, report)
            if new is not None:
                view[i] = new
            if new is not None or ctx.estimate(m) > ctx.token_limit:
                marked.append(i)  # offloaded, or left whole although large: decided again
        if not protect:
            self._progress.remember(source, marked, key)
        return report

    @hookimpl
    def ctxlab_forget(self, messages: list[BaseMessage], settings: CompressionSettings) -> None:
        self._progress.clear()
        limit = settings.summary_tool_result_token_limit  # the memo's qualifier (ctx.token_limit)
        for m in messages:
            if is_tool_result(m):
                self._memo.discard(m, limit)

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
        framing = ctx.estimate(m.model_copy(update={"content": ""}))
        budget = ctx.token_limit - framing  # tokens the text of the replacement may use
        allowance = ctx.token_limit
        if images:
            allowance += ctx.estimate(m.model_copy(update={"content": images})) - framing
        shape = _PATH_SHAPE.format(stem=safe_stem(tool))
        # the path floor: a limit that cannot hold the shortest header with its path; then the
        # replacement is that header alone, over the limit but smaller than the original
        floor = budget <= 0 or estimate_text_tokens(_headers(text, before, shape)[-1]) > budget
        if floor:
            shortest = _headers(text, before, shape)[-1]
            if ctx.estimate(m.model_copy(update={"content": _with_images(shortest, images)})) >= before:
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
        headers = _headers(text, before, path)
        candidates = [headers[-1]] if floor else _replacements(text, budget, headers)
        after = before
        for preview in candidates:
            new = m.model_copy(update={"content": _with_images(preview, images), "additional_kwargs": kwargs})
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
            headers = _headers(text, tokens, path)
            preview = next(_replacements(text, ctx.token_limit, headers), headers[-1])
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
            content[i] = {**block, key: _with_images(preview, images)}
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


def _with_images(text: str, images: list[Any]) -> str | list[Any]:
    """The content of a replacement: ``text``, beside the image blocks kept in the view."""
    return [{"type": "text", "text": text}, *images] if images else text


def _headers(text: str, before: int, path: str | None) -> list[str]:
    """The headers an offloaded copy may open with, longest first; ``path`` ``None``: the file
    could not be saved."""
    if path is None:
        return [
            f"{OFFLOAD_MARKER} {len(text)} characters (~{before} tokens); the full output could not "
            "be saved, only this preview is shown:",
            f"{OFFLOAD_MARKER} not saved; preview:",
        ]
    return [
        f"{OFFLOAD_MARKER} {len(text)} characters (~{before} tokens). "
        f"Full output saved at {path} \nRead that file for the complete result. Preview:",
        f"{OFFLOAD_MARKER} Full output saved at {path}",
    ]


def _replacements(text: str, budget: int, headers: list[str]) -> Iterator[str]:
    """Replacement texts within ``budget`` tokens, best first: each header (longest first) with
    a preview of at least :data:`MIN_PREVIEW_TOKENS`, then each header alone."""
    sizes = [estimate_text_tokens(h) for h in headers]
    for header, size in zip(headers, sizes, strict=True):
        if size + 8 + MIN_PREVIEW_TOKENS <= budget:  # fit_preview keeps 8 tokens of slack
            yield fit_preview(text, budget, header)
    for header, size in zip(headers, sizes, strict=True):
        if size <= budget:
            yield header


def _saved_again(memo: _Offloaded, ctx: TrimContext) -> bool:
    """Make sure the files of a remembered copy exist in this request's file scope (R6, R17)."""
    try:
        return all(
            ctx.save_tool_result(entry["tool"] or "observation", text) == entry["path"]
            for entry, text in zip(memo.entries, memo.texts, strict=True)
        )
    except FileWriteError:
        return False


def _path_gone(m: BaseMessage, path: str) -> BaseMessage:
    """``m`` with ``path`` replaced by :data:`FILE_GONE` in its text."""
    content = m.content
    if isinstance(content, str):
        new: str | list[Any] = content.replace(path, FILE_GONE)
    else:
        new = [
            {**b, "text": b["text"].replace(path, FILE_GONE)}
            if isinstance(b, dict) and isinstance(b.get("text"), str)
            else b
            for b in content
        ]
    return m.model_copy(update={"content": new})
