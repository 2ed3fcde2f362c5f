"""Anthropic's context editing, ``clear_tool_uses_20250919``, implemented from its documentation.

Source: Anthropic, *Context editing* (Claude Developer Platform docs,
https://docs.claude.com/en/docs/build-with-claude/context-editing, beta header
``context-management-2025-06-27``; read December 2026).  The edit is applied server-side to each
request before it reaches the model; the client keeps its whole history.  The documented rules:

* **trigger** (default 100,000 input tokens): the strategy activates once the prompt exceeds it;
  the value is in ``input_tokens`` or ``tool_uses``.
* **keep** (default 3 tool uses): how many recent tool use/result pairs remain after clearing; the
  oldest are cleared first.
* **clear_at_least** (default none): the minimum number of input tokens one activation must clear;
  when the API cannot clear that many, the strategy is not applied.
* **exclude_tools** (default none): tools whose uses and results are never cleared.
* **clear_tool_inputs** (default false): also clear the tool call's parameters; by default only
  the results are cleared and the calls stay visible.
* The response reports ``cleared_tool_uses`` and ``cleared_input_tokens`` (here: the event's
  ``stats``).

Where the documentation is silent, this implementation chooses, and says so:

* a cleared result's text is :data:`PLACEHOLDER` (the documentation says only that placeholder
  text tells the model the result was removed);
* ``keep`` counts the clearable uses (excluded tools are neither cleared nor counted);
* a tool use is one call with its result; a text observation (a tool result an agent without
  tool calling recorded as a user message, :func:`ctxlab.core.marks.is_observation`) is one use,
  its input the assistant text before it (``clear_tool_inputs`` has no parameters to clear there);
* cleared parameters become ``{}``; tokens are ctxlab's measure of the whole request (system
  message, tool schemas and messages, spec R16), not Anthropic's count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.core.marks import is_observation
from ctxlab.core.settings import CompressionSettings
from ctxlab_field.view import Edit, ViewMiddleware

__all__ = [
    "PLACEHOLDER",
    "ClearResult",
    "ClearToolUses",
    "ClearToolUsesMiddleware",
    "anthropic_clear_tool_uses",
]

#: the text a cleared tool result is replaced with (this implementation's; see the module doc)
PLACEHOLDER = "[tool result cleared by context editing]"


@dataclass(frozen=True)
class ClearToolUses:
    """The configuration of one ``clear_tool_uses_20250919`` edit (defaults: the documentation's).

    Attributes:
        trigger: ``(type, value)``: ``("input_tokens", n)`` or ``("tool_uses", n)``.
        keep: tool uses kept (the most recent ones).
        clear_at_least: input tokens one activation must clear (``None``: no minimum).
        exclude_tools: tool names never cleared.
        clear_tool_inputs: also clear the cleared calls' parameters.
        placeholder: the text of a cleared result.
    """

    trigger: tuple[Literal["input_tokens", "tool_uses"], int] = ("input_tokens", 100_000)
    keep: int = 3
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    placeholder: str = PLACEHOLDER

    def __post_init__(self) -> None:
        kind, value = self.trigger
        if kind not in ("input_tokens", "tool_uses") or value < 0:
            raise ValueError(
                f"trigger={self.trigger!r} is invalid: allowed ('input_tokens' | 'tool_uses', n >= 0)"
            )
        if self.keep < 0:
            raise ValueError(f"keep={self.keep} is invalid: allowed an integer >= 0")
        if self.clear_at_least is not None and self.clear_at_least < 0:
            raise ValueError(f"clear_at_least={self.clear_at_least} is invalid: allowed an integer >= 0")

    @classmethod
    def from_api(cls, edit: Mapping[str, Any]) -> ClearToolUses:
        """The configuration from the API's JSON edit, as the documentation writes it::

            {"type": "clear_tool_uses_20250919",
             "trigger": {"type": "input_tokens", "value": 30000},
             "keep": {"type": "tool_uses", "value": 3},
             "clear_at_least": {"type": "input_tokens", "value": 5000},
             "exclude_tools": ["web_search"], "clear_tool_inputs": false}

        Raises:
            ValueError: another ``type``, or a field of the wrong kind.
        """
        if edit.get("type") != "clear_tool_uses_20250919":
            raise ValueError(f"type={edit.get('type')!r}: not a clear_tool_uses_20250919 edit")
        out: dict[str, Any] = {}
        if (t := edit.get("trigger")) is not None:
            out["trigger"] = (t["type"], int(t["value"]))
        if (k := edit.get("keep")) is not None:
            if k.get("type") != "tool_uses":
                raise ValueError(f"keep={k!r}: allowed {{'type': 'tool_uses', 'value': n}}")
            out["keep"] = int(k["value"])
        if (c := edit.get("clear_at_least")) is not None:
            if c.get("type") != "input_tokens":
                raise ValueError(f"clear_at_least={c!r}: allowed {{'type': 'input_tokens', 'value': n}}")
            out["clear_at_least"] = int(c["value"])
        out["exclude_tools"] = tuple(edit.get("exclude_tools") or ())
        out["clear_tool_inputs"] = bool(edit.get("clear_tool_inputs", False))
        return cls(**out)


@dataclass(frozen=True)
class ClearResult:
    """One request after the edit: ``messages`` (a new list; the input is never mutated),
    whether the strategy ``applied`` and why not (``reason``), ``cleared_tool_uses`` and
    ``cleared_input_tokens`` (ctxlab's measure)."""

    messages: list[BaseMessage]
    applied: bool
    cleared_tool_uses: int = 0
    cleared_input_tokens: int = 0
    reason: str = ""


def _uses(messages: Sequence[BaseMessage]) -> list[tuple[int, int | None, str | None, str | None]]:
    """Tool uses in order of their results: ``(result index, calling message index, call id, tool)``."""
    callers: dict[str, tuple[int, str]] = {}
    last_ai: int | None = None
    out: list[tuple[int, int | None, str | None, str | None]] = []
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage):
            last_ai = i
            for tc in m.tool_calls:
                if tc.get("id"):
                    callers[str(tc["id"])] = (i, tc["name"])
        elif isinstance(m, ToolMessage):
            ai, name = callers.get(m.tool_call_id, (None, m.name))
            out.append((i, ai, m.tool_call_id, name or m.name))
        elif is_observation(m):
            out.append((i, last_ai, None, None))
    return out


def clear_tool_uses(
    messages: Sequence[BaseMessage], config: ClearToolUses, tokens: Callable[[Sequence[BaseMessage]], int]
) -> ClearResult:
    """Apply ``config`` to one request's ``messages`` (the module doc lists the rules).

    Args:
        messages: the request's messages (the full client history).
        config: the edit's configuration.
        tokens: the request's input tokens for a message list (system and tools included).

    Returns:
        The :class:`ClearResult`.
    """
    uses = [u for u in _uses(messages) if not (u[3] is not None and u[3] in config.exclude_tools)]
    before = tokens(messages)
    kind, value = config.trigger
    measured = before if kind == "input_tokens" else len(uses)
    if measured <= value:
        return ClearResult(list(messages), False, reason=f"{kind} {measured} <= trigger {value}")
    clear = uses[: max(0, len(uses) - config.keep)]
    if not clear:
        return ClearResult(list(messages), False, reason=f"no tool use beyond the {config.keep} kept")
    out = list(messages)
    inputs: dict[int, set[str]] = {}
    for result_i, ai_i, call_id, _ in clear:
        out[result_i] = out[result_i].model_copy(update={"content": config.placeholder})
        if config.clear_tool_inputs and ai_i is not None and call_id is not None:
            inputs.setdefault(ai_i, set()).add(call_id)
    for ai_i, ids in inputs.items():
        ai = out[ai_i]
        assert isinstance(ai, AIMessage)
        calls = [{**tc, "args": {}} if tc.get("id") in ids else tc for tc in ai.tool_calls]
        out[ai_i] = ai.model_copy(update={"tool_calls": calls})
    cleared = before - tokens(out)
    if config.clear_at_least is not None and cleared < config.clear_at_least:
        return ClearResult(
            list(messages),
            False,
            reason=f"would clear {cleared} < clear_at_least {config.clear_at_least} tokens",
        )
    return ClearResult(out, True, cleared_tool_uses=len(clear), cleared_input_tokens=cleared)


class ClearToolUsesMiddleware(ViewMiddleware):
    """``clear_tool_uses_20250919`` as a ctxlab baseline: every request is edited from the whole
    state (stateless, as the API edits each request); a call in which it applied is an ``L1``
    round whose ``stats`` hold ``cleared_tool_uses`` and ``cleared_input_tokens``."""

    def __init__(self, config: ClearToolUses, *, name: str = "anthropic-clear-tool-uses") -> None:
        super().__init__(name)
        self.config = config

    def edit(self, request: ModelRequest) -> Edit:
        tools = list(request.tools or [])

        def tokens(msgs: Sequence[BaseMessage]) -> int:
            return self.measure.request_tokens(request.system_message, tools, list(msgs))

        done = clear_tool_uses(list(request.messages), self.config, tokens)
        if not done.applied:
            return Edit(done.messages)
        stats = {
            "cleared_tool_uses": done.cleared_tool_uses,
            "cleared_input_tokens": done.cleared_input_tokens,
        }
        return Edit(done.messages, "L1", stats=stats)


def anthropic_clear_tool_uses(settings: CompressionSettings | None = None) -> ClearToolUsesMiddleware:
    """The strategy ``anthropic-clear-tool-uses``: trigger at T input tokens
    (``summary_threshold × 1024``), the documentation's defaults otherwise (keep 3 tool uses, no
    minimum, no excluded tool, inputs kept)."""
    t = int((settings or CompressionSettings()).entry_threshold_tokens)
    return ClearToolUsesMiddleware(ClearToolUses(trigger=("input_tokens", t)))
