"""The built-in R5 trimmer: every ``write_file``/``edit_file`` argument over 2,000 characters is
truncated in the request view (:class:`ArgumentTruncation`); the bound itself is
:mod:`ctxlab.core.builtin.arguments`.  The R6 trimmer is :mod:`ctxlab.core.builtin.trimmers`.

An edited copy only ever replaces an entry of the view and is never larger than the message it
replaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.builtin.arguments import bound_arguments
from ctxlab.core.builtin.arguments import rebuilt as _rebuilt
from ctxlab.core.builtin.arguments import with_value as _with
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.identity import IdentityCache
from ctxlab.core.l1 import TrimContext, TrimPass, TrimProgress, TrimReport, TruncatedArg, protect_key
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.toolcalls import CALL_BLOCKS

__all__ = ["CALL_BLOCK_ARGUMENTS", "OFFLOADS_CACHED", "TRUNCATED_TOOLS", "ArgumentTruncation"]

#: tools whose large arguments L1 truncates (R5)
TRUNCATED_TOOLS = frozenset({"write_file", "edit_file"})
#: content blocks of an AIMessage that carry a tool call, and the key of their arguments:
#: Anthropic ``tool_use``, LangChain v1 ``tool_call`` (``output_version="v1"``), OpenAI Responses
#: ``function_call`` (JSON text); :data:`ctxlab.core.toolcalls.CALL_BLOCKS` is their one home
CALL_BLOCK_ARGUMENTS = {kind: keys[1] for kind, keys in CALL_BLOCKS.items()}
#: offloaded (and argument-truncated) copies remembered per trimmer (a long run reuses them on
#: every call)
OFFLOADS_CACHED = 100_000


class ArgumentTruncation:
    """R5: every ``write_file``/``edit_file`` argument over 2,000 characters, in every call (no
    recent-call window) and in every place a provider reads a call, is replaced in the view by
    :func:`~ctxlab.core.marks.truncation_marker` (which states the original length).

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
        # a view that extends the previous one: the copies of the old part are the previous
        # pass's (a message's bounded copy depends on nothing else), only new messages are visited
        done = None if protect else self._progress.resume_pass(view)
        source = list(view)
        start, marked, records = 0, [], []
        if done is not None:
            start = len(done.source)
            view[:start] = done.output[:start]
            marked, records = list(done.marked), list(done.records)
        for i in range(start, len(view)):
            m = source[i]
            if isinstance(m, AIMessage) and (not protect or protect_key(m) not in protect):
                new, cut = self._memo.get_or_put(m, self._bound)
                if cut:
                    records.extend(cut)
                if new is not m:
                    view[i] = new
                if cut or new is not m:
                    marked.append(i)
        report.truncated_args = records
        if not protect:
            self._progress.remember_pass(TrimPass(source, list(view), marked, records, [], None, None))
        return report

    @hookimpl
    def ctxlab_forget(self, messages: list[BaseMessage], settings: CompressionSettings) -> None:
        self._progress.clear()
        # only AI messages are memo keys: the others find nothing (one hold of the lock, issue 31)
        self._memo.pop_many(messages)

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
