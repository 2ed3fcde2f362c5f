"""Inspect AI's compaction strategies (``CompactionEdit``, ``CompactionTrim``, ``CompactionSummary``)
driven through Inspect's own classes, as baselines.

:class:`InspectCompactionMiddleware` holds an Inspect ``CompactionStrategy`` and Inspect's own
compaction handler (``inspect_ai.model.compaction(strategy, prefix, tools, model)``, what
``react()`` uses): every request's messages are converted to Inspect's
(:func:`ctxlab.integrations.inspect.convert.to_inspect`: tool-call pairs kept, text observations
as tool results), given to ``compact_input``, and the input Inspect would send is converted back
(:func:`~ctxlab.integrations.inspect.convert.to_langchain`: unchanged messages are the original
objects).  Inspect's handler is stateful (after a compaction it sends the compacted input plus the
messages that arrived since, and compacts again when that passes the threshold), so the strategy
is registered ``per_run``.

What is Inspect's and what is ctxlab's:

* the rule, the threshold test, the iteration (up to three more passes) and the error
  ("Compaction insufficient") are Inspect's code;
* tokens are ctxlab's measure: the handler's model is ``ctxlab/offline``
  (:mod:`ctxlab.integrations.inspect.models`), whose ``count_tokens`` is ctxlab's estimate, so
  Inspect's threshold is T tokens of the same measure as ARS's;
* the summary model is ``ctxlab/offline`` (ctxlab's structured summary, no network) unless a
  model is given (``model="openai/gpt-4.1-mini"``: any Inspect model);
* Inspect's handler is never told the provider's usage (``record_output``): a replay has none.

A call in which Inspect compacted is an ``L1`` round (edit, trim) or an ``L2`` round (summary);
a call in which Inspect raised ("Compaction insufficient": the strategy cannot bring the request
under the threshold, which stops an Inspect sample) sends the uncompacted request and records the
error in the event (column ``summary_error``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    Compact,
    CompactionEdit,
    CompactionResult,
    CompactionStrategy,
    CompactionSummary,
    CompactionTrim,
    Model,
    compaction,
    get_model,
)
from inspect_ai.tool import ToolInfo, ToolParams
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from ctxlab.core.settings import CompressionSettings
from ctxlab.integrations.inspect.convert import to_inspect, to_langchain
from ctxlab_field.view import Edit, ViewMiddleware, run_sync

__all__ = [
    "InspectCompactionMiddleware",
    "inspect_edit",
    "inspect_summary",
    "inspect_trim",
    "tool_infos",
]


class _Observed(CompactionStrategy):
    """Delegates to an Inspect strategy and counts its passes (and a summary's tokens)."""

    def __init__(self, inner: CompactionStrategy, model: Model) -> None:
        super().__init__(type=inner.type, threshold=inner.threshold, memory=inner.memory)
        self.inner = inner
        self.model = model
        self.passes = 0
        self.summary_input = 0

    @property
    def preserve_prefix(self) -> bool:
        return self.inner.preserve_prefix

    async def compact(
        self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]
    ) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        return await self.inner.compact(model, messages, tools)

    async def compact_outcome(
        self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]
    ) -> CompactionResult:
        self.passes += 1
        outcome = await self.inner.compact_outcome(model, messages, tools)
        if outcome.message is not None:
            self.summary_input += await self.model.count_tokens(messages)
        return outcome


def tool_infos(tools: Sequence[Any]) -> list[ToolInfo]:
    """Inspect ``ToolInfo`` for LangChain tools or provider schemas (counted in Inspect's
    threshold as they are in ctxlab's, R16); a schema Inspect's model refuses keeps its name and
    carries its JSON as the description, so that its tokens still count."""
    out: list[ToolInfo] = []
    for t in tools:
        try:
            fn = convert_to_openai_tool(t)["function"]
        except Exception:
            fn = {"name": str(getattr(t, "name", None) or "tool"), "description": json.dumps(t, default=str)}
        try:
            params = ToolParams.model_validate(fn.get("parameters") or {})
            out.append(ToolInfo(name=fn["name"], description=fn.get("description") or "", parameters=params))
        except Exception:
            text = json.dumps(fn, default=str)
            out.append(ToolInfo(name=str(fn.get("name") or "tool"), description=text))
    return out


class InspectCompactionMiddleware(ViewMiddleware):
    """An Inspect ``CompactionStrategy`` as a ctxlab baseline (module doc).

    Args:
        strategy: the Inspect strategy (its threshold is the handler's).
        name: the middleware's name (the strategy's row label in a replay).
        model: the handler's target model, which counts the tokens (default ``ctxlab/offline``:
            ctxlab's measure).

    Attributes:
        inspect_strategy: ``strategy`` itself: ``ctxlab.integrations.inspect`` runs it natively
            inside Inspect (a ctxlab strategy name → an Inspect strategy).
    """

    def __init__(self, strategy: CompactionStrategy, *, name: str, model: str | Model | None = None) -> None:
        super().__init__(name)
        self.inspect_strategy = strategy
        self.model = get_model(model if model is not None else "ctxlab/offline")
        self._observed = _Observed(strategy, self.model)
        self._handler: Compact | None = None

    def _compactor(self, messages: list[ChatMessage], tools: Sequence[Any]) -> Compact:
        if self._handler is None:
            prefix: list[ChatMessage] = []
            for m in messages:  # the system message and the task, as react() gives its input
                prefix.append(m)
                if not isinstance(m, ChatMessageSystem):
                    break
            self._handler = compaction(
                self._observed, prefix=prefix, tools=tool_infos(tools), model=self.model
            )
        return self._handler

    def edit(self, request: ModelRequest) -> Edit:
        return run_sync(self.aedit(request))

    async def aedit(self, request: ModelRequest) -> Edit:
        originals = list(request.messages)
        messages = to_inspect(originals, request.system_message)
        handler = self._compactor(messages, list(request.tools or []))
        passes = self._observed.passes
        self._observed.summary_input = 0
        try:
            compacted, _summary = await handler.compact_input(messages)
        except RuntimeError as exc:
            return Edit(
                originals,
                "L1",
                stats={"inspect_strategy": type(self.inspect_strategy).__name__},
                error=str(exc),
            )
        view = [m for m in to_langchain(compacted, originals) if m.type != "system"]
        ran = self._observed.passes - passes
        if not ran:
            return Edit(view)
        stats = {"inspect_strategy": type(self.inspect_strategy).__name__, "inspect_passes": ran}
        summary_msg = _summary_of(view)
        if self.inspect_strategy.type != "summary" or summary_msg is None:
            return Edit(view, "L1", stats=stats)
        out_tokens = self.measure.message_tokens(summary_msg)
        return Edit(
            view,
            "L2",
            stats=stats,
            summary=summary_msg,
            cutoff_index=len(originals),
            summarizer={
                "calls": ran,
                "input_tokens": self._observed.summary_input,
                "output_tokens": out_tokens,
                "usage_reported": False,
                "error": None,
            },
        )


def _summary_of(view: list[BaseMessage]) -> BaseMessage | None:
    from ctxlab.core.marks import is_summary_message

    return next((m for m in reversed(view) if is_summary_message(m)), None)


def _threshold(settings: CompressionSettings | None) -> int:
    return int((settings or CompressionSettings()).entry_threshold_tokens)


def inspect_edit(settings: CompressionSettings | None = None) -> InspectCompactionMiddleware:
    """Inspect's ``CompactionEdit`` at threshold T (``summary_threshold × 1024`` tokens), its
    defaults otherwise (keep the last 3 tool uses, tool inputs kept, thinking of the last turn)."""
    return InspectCompactionMiddleware(CompactionEdit(threshold=_threshold(settings)), name="inspect-edit")


def inspect_trim(settings: CompressionSettings | None = None) -> InspectCompactionMiddleware:
    """Inspect's ``CompactionTrim`` at threshold T, its default ``preserve=0.8``."""
    return InspectCompactionMiddleware(CompactionTrim(threshold=_threshold(settings)), name="inspect-trim")


def inspect_summary(
    settings: CompressionSettings | None = None, *, model: str | Model | None = None
) -> InspectCompactionMiddleware:
    """Inspect's ``CompactionSummary`` at threshold T, summarizing with ``model`` (default
    ``ctxlab/offline``: ctxlab's structured summary, offline), its default prompt."""
    summarizer = get_model(model if model is not None else "ctxlab/offline")
    return InspectCompactionMiddleware(
        CompactionSummary(threshold=_threshold(settings), model=summarizer), name="inspect-summary"
    )
