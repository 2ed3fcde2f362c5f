"""ctxlab-masking: observation masking as an L1 trimmer.

Observation masking keeps the last ``N`` tool results verbatim and replaces every older one with
a short placeholder — the baseline of Lindenbauer et al., *The Complexity Trap: Simple
Observation Masking Is as Efficient as LLM Summarization for Agent Context Management* (2025),
after SWE-agent's ``LastNObservations`` history processor.  A *tool result* is a ToolMessage or
a text observation recorded as a user message (``additional_kwargs["ctxlab_observation"]``, the
mini-swe-agent format); each such message counts as one result (parallel calls give several).

:class:`ObservationMasking` implements ``ctxlab_l1_trim`` (``tryfirst``: it runs before the
built-in trimmers), so it composes with ARS: it only edits the request view, never the state,
and it runs whenever L1 runs, i.e. once the request estimate reaches the entry threshold T.

What a faithful masking baseline needs, and how the ``masking`` strategy provides it:

* **Masking only, no summary.**  :class:`NoSummaryCutoff` answers ``ctxlab_select_cutoff`` with
  ``CutoffDecision(None, "masking strategy: no L2", by_design=True)``: L2 never runs and the masked (L1) view is
  sent even above T2 (spec R13's fallback).
* **Masking from the entry threshold on, every call.**  ARS runs L1 as soon as the estimate of
  the *unmasked* effective messages reaches T, and the state is never rewritten, so once a run
  crosses T every later call is masked too (no oscillation as masking shrinks the view).  To
  mask from the first call, as in the paper's setup, set ``summary_threshold`` small.
* **The last N results verbatim.**  The strategy's trimmer adds the kept results to
  ``ctx.protect_ids``, so the built-in tool-result offload does not shorten them, and adds the
  assistant messages too, so the built-in argument truncation leaves tool calls as the agent
  wrote them: the only edit in the view is the masking.
* **No fallback.**  On a context overflow the round forces L1 and, with no cutoff, sends the
  masked view once more; a second overflow propagates (R12/R13), as a masking-only agent would
  fail.

``N`` is ``keep`` (default 10); the strategy reads ``$CTXLAB_MASKING_KEEP``.  The package is the
plugin its entry point names (``masking = "ctxlab_masking"``): its one module-level hook,
:func:`ctxlab_register_strategies`, registers the ``masking`` strategy only, so installing the
package changes no middleware.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.sdk import (
    CompressionSettings,
    CutoffContext,
    CutoffDecision,
    IdentityCache,
    RegisterStrategy,
    TrimContext,
    TrimReport,
    hookimpl,
    is_tool_result,
    message_text,
    protect_key,
)

__all__ = [
    "DEFAULT_KEEP",
    "MASK_MARKER",
    "MaskReport",
    "NoSummaryCutoff",
    "ObservationMasking",
    "ctxlab_register_strategies",
    "is_masked",
    "is_observation",
    "keep_from_env",
    "masking_plugins",
]

DEFAULT_KEEP = 10
#: first words of every placeholder; a message carrying it is not masked again
MASK_MARKER = "[ctxlab: old tool output masked]"
#: masked copies remembered per trimmer (a run reuses them on every call)
MAX_CACHED_COPIES = 20_000


def is_observation(message: BaseMessage) -> bool:
    """A tool result: a ToolMessage or an observation-marked message
    (:func:`ctxlab.core.marks.is_tool_result`)."""
    return is_tool_result(message)


def is_masked(message: BaseMessage) -> bool:
    """The message is a masking placeholder."""
    content = message.content
    return isinstance(content, str) and content.startswith(MASK_MARKER)


def placeholder(message: BaseMessage) -> str:
    """The text that replaces an old tool result: marker, tool name and what was omitted."""
    text = message_text(message)
    lines = text.count("\n") + 1 if text else 0
    tool = getattr(message, "name", None)
    what = f" of {tool}" if tool else ""
    return f"{MASK_MARKER} Old output{what} omitted ({lines} lines, {len(text)} characters)."


@dataclass
class MaskReport(TrimReport):
    """A :class:`ctxlab.core.l1.TrimReport` with the masked messages: one dict per placeholder
    (``message_id``, ``tool``, ``chars``)."""

    masked: list[dict[str, Any]] = field(default_factory=list)
    kept: int = 0


class ObservationMasking:
    """L1 trimmer: the last ``keep`` tool results stay verbatim, older ones become placeholders.

    Args:
        keep: how many of the most recent tool results stay verbatim (``N``, ≥ 0).
        protect_recent: add the kept results to ``ctx.protect_ids`` so that later trimmers (the
            built-in offload) leave them whole.
        protect_calls: add every assistant message with tool calls to ``ctx.protect_ids`` so
            that the built-in argument truncation leaves them whole.

    Raises:
        ValueError: ``keep`` is negative.
    """

    name = "observation-masking"

    def __init__(
        self, keep: int = DEFAULT_KEEP, *, protect_recent: bool = False, protect_calls: bool = False
    ) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(
                f"keep={keep!r} is invalid: allowed an integer >= 0 (tool results kept verbatim)"
            )
        self.keep = keep
        self.protect_recent = protect_recent
        self.protect_calls = protect_calls
        # original message -> its masked copy, so that every call of a run sends the very same
        # placeholder objects (cheap, and the estimate cache recognises them by identity)
        self._copies: IdentityCache[BaseMessage, BaseMessage] = IdentityCache(MAX_CACHED_COPIES)

    def mask(self, view: list[BaseMessage], ctx: TrimContext) -> MaskReport:
        """Mask ``view`` in place (entries replaced by copies, never edited) and return the report."""
        report = MaskReport(trimmer=self.name)
        results = [i for i, m in enumerate(view) if is_observation(m)]
        cut = max(0, len(results) - self.keep)
        old, recent = results[:cut], results[cut:]
        report.kept = len(recent)
        for i in old:
            m = view[i]
            if protect_key(m) in ctx.protect_ids or is_masked(m):
                continue
            view[i] = self._copies.get_or_put(
                m, lambda old: old.model_copy(update={"content": placeholder(old)})
            )
            report.masked.append(
                {"message_id": m.id, "tool": getattr(m, "name", None), "chars": len(message_text(m))}
            )
        if self.protect_recent:
            ctx.protect_ids.update(protect_key(view[i]) for i in recent)
        if self.protect_calls:
            ctx.protect_ids.update(protect_key(m) for m in view if isinstance(m, AIMessage) and m.tool_calls)
        return report

    @hookimpl(tryfirst=True)
    def ctxlab_l1_trim(self, view: list[BaseMessage], ctx: TrimContext) -> MaskReport:
        return self.mask(view, ctx)


class NoSummaryCutoff:
    """Cutoff plugin that disables L2: every round answers "no cutoff" (the L1 view is sent)."""

    name = "no-summary-cutoff"

    def __init__(self, reason: str = "masking strategy: no L2") -> None:
        self.reason = reason

    @hookimpl(tryfirst=True)
    def ctxlab_select_cutoff(self, messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision:
        return CutoffDecision(None, self.reason, by_design=True)


def keep_from_env(default: int = DEFAULT_KEEP) -> int:
    """``$CTXLAB_MASKING_KEEP`` as an int, else ``default``.

    Raises:
        ValueError: the variable is set but is not an integer >= 0.
    """
    raw = os.environ.get("CTXLAB_MASKING_KEEP")
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"CTXLAB_MASKING_KEEP={raw!r} is invalid: allowed an integer >= 0")
    return value


def masking_plugins(keep: int | None = None) -> list[object]:
    """The plugins of the ``masking`` strategy: faithful masking, no L2 (see module docstring)."""
    n = keep_from_env() if keep is None else keep
    return [ObservationMasking(n, protect_recent=True, protect_calls=True), NoSummaryCutoff()]


def _strategy(settings: CompressionSettings) -> list[object]:
    return masking_plugins()


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """The entry point's one hook: the ``masking`` strategy (L1 rounds reported as masking)."""
    register(
        "masking",
        _strategy,
        "Observation masking (Lindenbauer et al. 2025): last N tool results verbatim, older ones "
        "replaced by a placeholder from T on; no L2 ($CTXLAB_MASKING_KEEP, default 10)",
        levels={"L1": "masking"},
    )
