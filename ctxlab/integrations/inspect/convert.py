"""LangChain messages ↔ Inspect AI chat messages, both ways, tool-call pairing kept.

:func:`to_inspect` turns a LangChain request (system message + messages) into Inspect's
``ChatMessage`` list; :func:`to_langchain` turns an Inspect list back, reusing the original
LangChain message object for every Inspect message that came from one unchanged (same ``id``,
same text), so that a strategy that edits nothing changes nothing a LangChain consumer sees.

The mapping (each row both ways):

============================================  =============================================
LangChain                                     Inspect
============================================  =============================================
``SystemMessage``                             ``ChatMessageSystem``
``HumanMessage`` (a user request)             ``ChatMessageUser``
``AIMessage`` with ``tool_calls``             ``ChatMessageAssistant`` with ``ToolCall``\\ s
                                              (``id``, ``function`` = name, ``arguments``)
``ToolMessage``                               ``ChatMessageTool`` (``tool_call_id``, ``function``)
a text observation (``ctxlab_observation``:   ``ChatMessageTool`` answering a call ``observe``
a tool result an agent without tool calling   that the preceding ``ChatMessageAssistant``
recorded as a user message, mini-swe-agent)   carries (``tool_call_id`` = ``obs-<message id>``)
a summary message (``lc_source``)             ``ChatMessageUser`` with ``metadata={"summary":
                                              True}`` (how Inspect marks its summaries)
============================================  =============================================

The observation row is what lets a strategy whose rule is about *tool results* (Inspect's
``CompactionEdit``, Anthropic's ``clear_tool_uses``) see the observations of a text-protocol
agent as the tool results they are (ctxlab's own rule, :func:`ctxlab.core.marks.is_tool_result`);
back in LangChain the synthetic call is dropped and the result is a user message again, with its
``additional_kwargs`` and its (possibly edited) text.  Content blocks become text
(:func:`ctxlab.core.messages.message_text`: an image is ``[image]``); reasoning blocks are left
out (no Inspect strategy is run here with a reasoning model's history).  Every Inspect message
gets an ``id`` (Inspect's compaction requires one): the LangChain ``id``, else ``lc-<position>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.marks import OBSERVATION_KEY, is_observation, is_summary_message, langchain_summary_kwargs
from ctxlab.core.messages import message_text

__all__ = ["OBSERVE_TOOL", "inspect_text", "to_inspect", "to_langchain"]

#: the function name of the synthetic call an observation answers (see the module doc)
OBSERVE_TOOL = "observe"
_OBS_PREFIX = "obs-"


def _id(message: BaseMessage, position: int) -> str:
    return message.id if isinstance(message.id, str) and message.id else f"lc-{position}"


def inspect_text(message: ChatMessage) -> str:
    """The text of an Inspect message (its ``text`` property: the text parts joined)."""
    return message.text


def to_inspect(
    messages: Sequence[BaseMessage], system: SystemMessage | None = None, *, observations: bool = True
) -> list[ChatMessage]:
    """Inspect chat messages for a LangChain request (module doc: the mapping).

    Args:
        messages: the request's messages (a ``SystemMessage`` among them is converted too).
        system: the request's system message, put first (``ModelRequest.system_message``).
        observations: turn text observations into tool results (default); ``False`` keeps them
            user messages.

    Returns:
        One Inspect message per LangChain message, in order; ids as in the module doc.
    """
    out: list[ChatMessage] = []
    if system is not None:
        out.append(ChatMessageSystem(content=message_text(system), id=_id(system, -1)))
    last_assistant: int | None = None
    for pos, m in enumerate(messages):
        mid = _id(m, pos)
        text = message_text(m)
        if isinstance(m, SystemMessage):
            out.append(ChatMessageSystem(content=text, id=mid))
        elif isinstance(m, AIMessage):
            calls = [
                ToolCall(
                    id=str(tc.get("id") or f"call-{mid}-{j}"), function=tc["name"], arguments=dict(tc["args"])
                )
                for j, tc in enumerate(m.tool_calls)
            ]
            out.append(ChatMessageAssistant(content=text, tool_calls=calls or None, id=mid))
            last_assistant = len(out) - 1
        elif isinstance(m, ToolMessage):
            out.append(
                ChatMessageTool(content=text, tool_call_id=m.tool_call_id, function=m.name or None, id=mid)
            )
        elif observations and is_observation(m) and last_assistant is not None:
            call_id = _OBS_PREFIX + mid
            owner = out[last_assistant]
            assert isinstance(owner, ChatMessageAssistant)
            owner.tool_calls = [
                *(owner.tool_calls or []),
                ToolCall(id=call_id, function=OBSERVE_TOOL, arguments={}),
            ]
            out.append(ChatMessageTool(content=text, tool_call_id=call_id, function=OBSERVE_TOOL, id=mid))
        elif is_summary_message(m):
            out.append(ChatMessageUser(content=text, id=mid, metadata={"summary": True}))
        else:
            out.append(ChatMessageUser(content=text, id=mid))
    return out


def _same(original: BaseMessage, converted: ChatMessage, calls: list[ToolCall] | None) -> bool:
    if message_text(original) != converted.text:
        return False
    if isinstance(original, AIMessage):
        kept = [tc.id for tc in calls or [] if not tc.id.startswith(_OBS_PREFIX)]
        return kept == [str(tc.get("id")) for tc in original.tool_calls]
    return True


def to_langchain(
    messages: Sequence[ChatMessage], originals: Mapping[str, BaseMessage] | Sequence[BaseMessage] = ()
) -> list[BaseMessage]:
    """LangChain messages for an Inspect list (module doc: the mapping, reversed).

    Args:
        messages: Inspect messages (a strategy's output).
        originals: the LangChain messages they may come from (a sequence is indexed by the
            ids :func:`to_inspect` gives).  An Inspect message whose id names an original and
            whose text (and, for an assistant, tool calls) is unchanged *is* that original
            object; an edited one is a copy of the original with the new text (and calls),
            keeping its kind, id and ``additional_kwargs``; one without an original is new.

    Returns:
        The LangChain messages, in order; a synthetic ``observe`` call is dropped, and its result
        becomes a user message (an observation) again.
    """
    if isinstance(originals, Mapping):
        by_id: Mapping[str, BaseMessage] = originals
    else:
        by_id = {_id(m, pos): m for pos, m in enumerate(originals)}
    out: list[BaseMessage] = []
    for m in messages:
        original = by_id.get(m.id or "")
        calls = m.tool_calls if isinstance(m, ChatMessageAssistant) else None
        if original is not None and _same(original, m, calls):
            out.append(original)
            continue
        out.append(_convert_one(m, original, calls))
    return out


def _convert_one(m: ChatMessage, original: BaseMessage | None, calls: list[ToolCall] | None) -> BaseMessage:
    text = m.text
    if original is not None:
        update: dict[str, Any] = {"content": text}
        if isinstance(original, AIMessage):
            update["tool_calls"] = [
                {"id": tc.id, "name": tc.function, "args": dict(tc.arguments), "type": "tool_call"}
                for tc in calls or []
                if not tc.id.startswith(_OBS_PREFIX)
            ]
        return original.model_copy(update=update)
    if isinstance(m, ChatMessageSystem):
        return SystemMessage(content=text, id=m.id)
    if isinstance(m, ChatMessageAssistant):
        return AIMessage(
            content=text,
            id=m.id,
            tool_calls=[
                {"id": tc.id, "name": tc.function, "args": dict(tc.arguments), "type": "tool_call"}
                for tc in calls or []
                if not tc.id.startswith(_OBS_PREFIX)
            ],
        )
    if isinstance(m, ChatMessageTool):
        if (m.tool_call_id or "").startswith(_OBS_PREFIX):
            return HumanMessage(content=text, id=m.id, additional_kwargs={OBSERVATION_KEY: True})
        return ToolMessage(content=text, tool_call_id=m.tool_call_id or "", name=m.function, id=m.id)
    if "summary" in (m.metadata or {}):
        return HumanMessage(content=text, id=m.id, additional_kwargs=langchain_summary_kwargs())
    return HumanMessage(content=text, id=m.id)
