"""Message framing of every estimate: what one message and the tool schemas cost (spec R16).

:class:`CharClassEstimator` (the ARS default) counts a message as a fixed per-message overhead
(:data:`MESSAGE_OVERHEAD`), its content (text blocks as text, images by size, reasoning and
thinking blocks by the providers' rules — :func:`reasoning_tokens`: the text, encrypted payloads
by the reasoning they hold, signatures not —, unknown blocks by their JSON), each tool call's name and JSON arguments (``invalid_tool_calls`` by their
raw argument text), the reasoning an AIMessage sends back in ``additional_kwargs``
(:data:`SENT_BACK_KWARGS`), and the name of a ToolMessage.  Text goes
through one replaceable function, :attr:`CharClassEstimator.text_tokens`: the character classes
(:func:`~ctxlab.core.estimation.charclass.estimate_text_tokens`) by default.

:class:`TokenizerEstimator` keeps this framing and counts text exactly with a tokenizer (a
``tiktoken.Encoding``, or anything with ``encode_ordinary``): the lab's ``tiktoken`` measure
(:func:`ctxlab.replay.metrics.make_measure`) and the ``ctxlab-tiktoken`` plugin are both this
class, each loading its encoding its own way.  All values are tokens (``int``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.core.estimation.charclass import estimate_text_tokens
from ctxlab.core.estimation.images import UNKNOWN_IMAGE_TOKENS, estimate_image_tokens
from ctxlab.core.toolcalls import CALL_BLOCKS

__all__ = [
    "MESSAGE_OVERHEAD",
    "SENT_BACK_KWARGS",
    "CharClassEstimator",
    "Tokenizer",
    "TokenizerEstimator",
    "content_tokens",
    "reasoning_tokens",
    "sent_back_kwargs",
]

#: tokens per message for role and framing (OpenAI's chat format costs ~3-4)
MESSAGE_OVERHEAD = 4
#: tokens of a result block's framing around its output and call id (type, keys)
RESULT_FRAMING = 4
#: ``AIMessage.additional_kwargs`` keys whose value is sent back to the provider on the next
#: request: ``reasoning_content`` (DeepSeek, Kimi, Qwen and other OpenAI-compatible APIs require
#: it back), ``reasoning`` (an OpenAI Responses reasoning item, langchain-openai's v0 output),
#: ``reasoning_details`` (OpenRouter)
SENT_BACK_KWARGS = ("reasoning_content", "reasoning", "reasoning_details")


#: characters of an encrypted reasoning payload per token of the reasoning it holds: ciphertext is
#: about as long as the plaintext, base64 adds a third, and reasoning text runs ~4 bytes a token
#: (5.3 characters); 5 errs on the safe side
ENCRYPTED_CHARS_PER_TOKEN = 5
#: tokens of the framing of one reasoning item or thinking block
REASONING_FRAMING = 2
#: keys of a reasoning value whose text is the reasoning the model reads back (Anthropic
#: ``thinking``, LangChain v1 ``reasoning``, OpenAI ``summary`` items and OpenRouter ``text``)
_REASONING_TEXT = frozenset({"thinking", "reasoning", "text", "summary", "reasoning_content"})
#: keys of an encrypted reasoning payload (OpenAI ``encrypted_content``, Anthropic
#: ``redacted_thinking.data``, OpenRouter ``reasoning.encrypted`` ``data``)
_REASONING_ENCRYPTED = frozenset({"encrypted_content", "data"})
#: keys that are not model input: Anthropic's ``signature`` verifies a thinking block (the
#: provider bills the thinking, not the signature's length), ids, types, indices, formats
_REASONING_IGNORED = frozenset({"signature", "id", "type", "index", "format", "status"})


def reasoning_tokens(value: Any, text_tokens: Callable[[str], int] = estimate_text_tokens) -> int:
    """Tokens of reasoning a provider receives back (a thinking or reasoning block, a
    ``redacted_thinking`` block, an ``additional_kwargs`` reasoning value), by the providers'
    rules (issue 30, ``docs/middleware.md``):

    * the reasoning's text (Anthropic ``thinking``, OpenAI Responses ``summary`` texts,
      DeepSeek / Kimi / Qwen ``reasoning_content``, OpenRouter ``reasoning.text``) counts as text;
    * an encrypted payload (OpenAI ``encrypted_content``, Anthropic ``redacted_thinking`` ``data``,
      OpenRouter ``reasoning.encrypted``) counts as the reasoning it holds, one token per
      :data:`ENCRYPTED_CHARS_PER_TOKEN` characters, never as base64 text;
    * Anthropic's ``signature`` counts nothing: it verifies the thinking, the provider does not
      bill its length (measured on a recorded Claude Code session: the prompt grows with the
      thinking text, not with the signatures, ``tests/test_estimation_reasoning.py``);
    * ids, types and indices count nothing; any other key counts as its JSON text.

    Reasoning of earlier turns that a provider drops (Anthropic before Opus 4.5, OpenAI,
    DeepSeek) is counted all the same: a per-message estimate cannot tell the turn, and counting
    it errs on the safe side.  :data:`REASONING_FRAMING` tokens per reasoning item."""
    if isinstance(value, str):
        return text_tokens(value)
    if isinstance(value, list):
        return sum(reasoning_tokens(v, text_tokens) for v in value)
    if not isinstance(value, dict):
        return 0 if value is None else text_tokens(json.dumps(value, ensure_ascii=False, default=str))
    n = REASONING_FRAMING
    for key, v in value.items():
        if key in _REASONING_IGNORED or v is None:
            continue
        if key in _REASONING_ENCRYPTED and isinstance(v, str):
            n += -(-len(v) // ENCRYPTED_CHARS_PER_TOKEN)
        elif key in _REASONING_TEXT:
            n += reasoning_tokens(v, text_tokens) - (REASONING_FRAMING if isinstance(v, dict) else 0)
        else:
            n += text_tokens(json.dumps(v, ensure_ascii=False, default=str))
    return n


def sent_back_kwargs(message: BaseMessage) -> dict[str, Any]:
    """The part of an AIMessage's ``additional_kwargs`` a provider receives back
    (:data:`SENT_BACK_KWARGS`, issue 24), ``{}`` for any other message."""
    if not isinstance(message, AIMessage) or not message.additional_kwargs:
        return {}
    kw = message.additional_kwargs
    return {k: kw[k] for k in SENT_BACK_KWARGS if kw.get(k)}


def _block_tokens(block: Any, text_tokens: Callable[[str], int] = estimate_text_tokens) -> int:
    if isinstance(block, str):
        return text_tokens(block)
    if not isinstance(block, dict):
        return text_tokens(str(block))
    kind = block.get("type")
    if kind == "text":
        return text_tokens(str(block.get("text") or ""))
    if kind in ("reasoning", "thinking", "redacted_thinking"):
        return reasoning_tokens(block, text_tokens)
    if kind in ("image_url", "image", "input_image"):
        src = block.get("image_url")
        if isinstance(src, dict):
            src = src.get("url")
        if src is None:
            src = block.get("url") or block.get("data") or block.get("base64")
            source = block.get("source")
            if src is None and isinstance(source, dict):
                src = source.get("data") or source.get("url")
        if isinstance(src, str) and (src.startswith("data:") or len(src) > 200):
            return estimate_image_tokens(src)
        return UNKNOWN_IMAGE_TOKENS if src else 0
    if kind in ("tool_result", "function_call_output"):
        # a tool result carried as a block (Anthropic, OpenAI Responses): its output as content
        # (text as text, images by size), plus the call id that pairs it
        output = block.get("content" if kind == "tool_result" else "output")
        cid = block.get("tool_use_id" if kind == "tool_result" else "call_id")
        return (
            RESULT_FRAMING
            + content_tokens(output, text_tokens)
            + (text_tokens(cid) if isinstance(cid, str) else 0)
        )
    return text_tokens(json.dumps(block, ensure_ascii=False, default=str))


def content_tokens(content: Any, text_tokens: Callable[[str], int] = estimate_text_tokens) -> int:
    """Tokens of a message ``content`` (str or list of blocks); text weighed by ``text_tokens``."""
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list):
        return sum(_block_tokens(b, text_tokens) for b in content)
    return text_tokens(str(content)) if content else 0


class CharClassEstimator:
    """The ARS default estimator (R16): calibrated character classes, images by size.

    ``message_tokens(msg)`` counts content, tool calls (name + JSON args; a ``tool_use`` or v1
    ``tool_call`` content block that repeats one is counted once), the tool name of a ToolMessage
    and a fixed per-message overhead.  Pure: the same message gives the same count.
    Text goes through :attr:`text_tokens` (:func:`estimate_text_tokens`); a subclass may swap it
    (the ``ctxlab-fast-estimator`` plugin uses a sampled variant) and keep this framing.
    """

    name = "char-class"
    text_tokens: Callable[[str], int] = staticmethod(estimate_text_tokens)

    def message_tokens(self, message: BaseMessage) -> int:
        """Tokens of one message in a request: overhead, content, tool calls (valid and invalid),
        the reasoning an AIMessage sends back (:func:`sent_back_kwargs`), ToolMessage name."""
        text_tokens = self.text_tokens
        content = message.content
        if isinstance(message, AIMessage) and message.tool_calls and isinstance(content, list):
            # a provider-format tool_use or function_call block, or a LangChain v1 tool_call
            # block, repeats a tool call (a provider receives it once): count the call once
            ids = {tc.get("id") for tc in message.tool_calls}
            content = [
                b
                for b in content
                if not (
                    isinstance(b, dict)
                    and str(b.get("type")) in CALL_BLOCKS
                    and b.get(CALL_BLOCKS[str(b.get("type"))][0]) in ids
                )
            ]
        n = MESSAGE_OVERHEAD + content_tokens(content, text_tokens)
        if isinstance(message, AIMessage):
            for tc in message.tool_calls:
                n += 3 + text_tokens(tc.get("name") or "")
                n += text_tokens(json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str))
            for bad in message.invalid_tool_calls:  # sent as calls too (raw argument text)
                n += 3 + text_tokens(bad.get("name") or "")
                args = bad.get("args")
                n += text_tokens(args if isinstance(args, str) else json.dumps(args, default=str))
            for value in sent_back_kwargs(message).values():  # the providers' rules, issue 30
                n += reasoning_tokens(value, text_tokens)
        elif isinstance(message, ToolMessage) and message.name:
            n += 1
        return n

    def tools_tokens(self, tools: Sequence[Any]) -> int:
        """Tokens of the tool schemas of a request: each provider dict, or LangChain tool converted
        to the OpenAI tool format, counted as its JSON text."""
        text_tokens = self.text_tokens
        total = 0
        for tool in tools:
            if isinstance(tool, dict):
                total += text_tokens(json.dumps(tool, ensure_ascii=False, default=str))
                continue
            schema: Any = None
            try:
                from langchain_core.utils.function_calling import convert_to_openai_tool

                schema = convert_to_openai_tool(tool)
            except Exception:
                schema = {"name": getattr(tool, "name", ""), "description": getattr(tool, "description", "")}
            total += text_tokens(json.dumps(schema, ensure_ascii=False, default=str))
        return total


class Tokenizer(Protocol):
    """What :class:`TokenizerEstimator` needs of a tokenizer (a ``tiktoken.Encoding`` has it)."""

    @property
    def name(self) -> str: ...

    def encode_ordinary(self, text: str) -> list[int]: ...


class TokenizerEstimator(CharClassEstimator):
    """Exact text counts with a tokenizer, framed like :class:`CharClassEstimator`.

    A text costs ``len(encoding.encode_ordinary(text))`` (special-token text such as
    ``<|endoftext|>`` counts as ordinary text, never refused; a data URL in a text is text, as
    providers count it); the framing (overhead, tool calls, ``tool_use`` blocks counted once,
    image blocks by size) is the default estimator's.

    Args:
        encoding: the tokenizer, e.g. ``tiktoken.get_encoding("cl100k_base")``.
        name: the estimator's name (reports); default ``"tokenizer-<encoding name>"``.

    Attributes:
        encoding: the tokenizer; ``encoding_name``: its name.
    """

    def __init__(self, encoding: Tokenizer, *, name: str | None = None) -> None:
        self.encoding = encoding
        self.encoding_name: str = encoding.name
        self.name = name or f"tokenizer-{encoding.name}"

    def text_tokens(self, text: str) -> int:
        """Exact tokens of ``text`` (0 for ``""``); a data URL inside it is text (issue 30)."""
        if not text:
            return 0
        return len(self.encoding.encode_ordinary(text))
