"""The two built-in L1 trimmers: argument truncation (R5) and tool-result offload (R6)."""

from __future__ import annotations

import logging
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.files import FileWriteError
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import OffloadRecord, TrimContext, TrimReport, fit_preview, protect_key
from ctxlab.core.marks import OFFLOAD_MARKER, is_tool_result, truncation_marker
from ctxlab.core.messages import message_text
from ctxlab.core.settings import ARG_TRUNCATE_CHARS

logger = logging.getLogger("ctxlab.core.l1")

__all__ = [
    "OFFLOAD_MARKER",
    "TRUNCATED_TOOLS",
    "ArgumentTruncation",
    "ToolResultOffload",
    "is_tool_result",
    "text_only",
    "truncation_marker",
]

#: tools whose large string arguments L1 truncates (R5)
TRUNCATED_TOOLS = frozenset({"write_file", "edit_file"})
#: markers of results that another component already saved to a file
_FOREIGN_MARKERS = ("saved in the filesystem at this path", "Tool result too large")
#: offloaded copies remembered per trimmer (a long run reuses them on every call)
OFFLOADS_CACHED = 100_000


def text_only(content: list[Any]) -> str:
    """The text blocks of a list content, joined (no image placeholders)."""
    return "\n".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    )


class ArgumentTruncation:
    """R5: every write_file/edit_file string argument over 2,000 characters, in every call
    (no recent-call window), is replaced by :func:`truncation_marker` in the view."""

    name = "arg-truncation"

    @hookimpl(trylast=True)
    def ctxlab_l1_trim(self, view: list[BaseMessage], ctx: TrimContext) -> TrimReport:
        report = TrimReport(trimmer=self.name)
        for i, m in enumerate(view):
            if not isinstance(m, AIMessage) or protect_key(m) in ctx.protect_ids:
                continue
            update: dict[str, Any] = {}
            calls = [self._trim_call(cast(dict[str, Any], tc), "args", report) for tc in m.tool_calls]
            if any(a is not b for a, b in zip(calls, m.tool_calls, strict=True)):
                update["tool_calls"] = calls
            # provider-format content (Anthropic ``tool_use`` blocks) carries the same call again
            if isinstance(m.content, list):
                blocks = [
                    self._trim_call(b, "input", None)
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                    else b
                    for b in m.content
                ]
                if any(a is not b for a, b in zip(blocks, m.content, strict=True)):
                    update["content"] = blocks
            if update:
                view[i] = m.model_copy(update=update)
        return report

    @staticmethod
    def _trim_call(call: dict[str, Any], key: str, report: TrimReport | None) -> dict[str, Any]:
        """The call (a tool call or a ``tool_use`` block) with long string arguments replaced."""
        args = call.get(key) or {}
        if call.get("name") not in TRUNCATED_TOOLS or not isinstance(args, dict):
            return call
        long = {k: v for k, v in args.items() if isinstance(v, str) and len(v) > ARG_TRUNCATE_CHARS}
        if not long:
            return call
        if report is not None:
            for k, v in long.items():
                report.truncated_args.append(
                    {"call_id": call.get("id"), "tool": call.get("name"), "arg": k, "chars": len(v)}
                )
        return {**call, key: {**args, **{k: truncation_marker(len(v)) for k, v in long.items()}}}


class ToolResultOffload:
    """R6: a ToolMessage whose estimate exceeds the token limit is written to
    ``/outputs/large_tool_results/<tool>-<sha256>.txt`` and replaced in the view by the path plus
    a preview within the same token budget.  Image blocks of a list content stay in the view."""

    name = "tool-result-offload"

    def __init__(self) -> None:
        # (message, token limit) -> (trimmed copy, report entry): a long run does not re-offload
        # the same state message on every call
        self._memo: IdentityCache[BaseMessage, tuple[BaseMessage, OffloadRecord]] = IdentityCache(
            OFFLOADS_CACHED
        )

    @hookimpl(trylast=True)
    def ctxlab_l1_trim(self, view: list[BaseMessage], ctx: TrimContext) -> TrimReport:
        report = TrimReport(trimmer=self.name)
        for i, m in enumerate(view):
            if not is_tool_result(m) or protect_key(m) in ctx.protect_ids:
                continue
            memo = self._memo.get(m, ctx.token_limit)
            if memo is not None:
                view[i] = memo[0]
                report.offloaded.append(memo[1])
                continue
            before = ctx.estimate(m)
            if before <= ctx.token_limit:
                continue
            text = message_text(m)
            if isinstance(m.content, list) and estimate_text_tokens(text_only(m.content)) <= ctx.token_limit:
                continue  # what is large is not text (images): offloading text would not shrink it
            if text.startswith(OFFLOAD_MARKER) or any(k in text[:400] for k in _FOREIGN_MARKERS):
                continue  # already saved: not written again
            images = (
                [b for b in m.content if isinstance(b, dict) and b.get("type") in ("image_url", "image")]
                if isinstance(m.content, list)
                else []
            )
            try:
                path = ctx.save_tool_result(getattr(m, "name", None) or "observation", text)
                header = (
                    f"{OFFLOAD_MARKER} {len(text)} characters (~{before} tokens). "
                    f"Full output saved at {path} \nRead that file for the complete result. Preview:"
                )
            except FileWriteError as exc:
                logger.warning("offload of a %s result failed: %s", m.name, exc.reason)
                report.errors.append(str(exc))
                path = None
                header = (
                    f"{OFFLOAD_MARKER} {len(text)} characters (~{before} tokens); the full output could not "
                    "be saved, only this preview is shown:"
                )
            preview = fit_preview(text, ctx.token_limit, header)
            content: str | list[Any] = [{"type": "text", "text": preview}, *images] if images else preview
            new = m.model_copy(update={"content": content})
            view[i] = new
            entry: OffloadRecord = {
                "path": path,
                "tool": getattr(m, "name", None),
                "chars": len(text),
                "tokens_before": before,
                "tokens_after": ctx.estimate(new),
                "message_id": m.id,
                "tool_call_id": getattr(m, "tool_call_id", None),
            }
            report.offloaded.append(entry)
            if path is not None:  # a failed write is tried again next time
                self._memo.put(m, (new, entry), ctx.token_limit)
        return report
