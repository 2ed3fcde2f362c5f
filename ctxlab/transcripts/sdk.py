"""Everything a transcript-format plugin needs, in one public module (see ``docs/transcripts.md``).

A format is an object with ``name``, ``description``, ``sniff(path, head) -> bool`` and
``load(path) -> list[Transcript]`` (the :class:`TranscriptFormat` protocol), optionally
``match_json(data) -> bool`` + ``load_json(data, path)`` (for JSON documents: detection parses once
and hands the data over) and ``match_line(obj) -> bool`` (for JSON lines: the first line).  It is
registered by a plugin implementing ``ctxlab_register_transcript_formats`` (marked with
:data:`hookimpl`); :func:`ctxlab.transcripts.make_formats_manager` builds a manager holding it.

Reading, with places in errors (every error is a :class:`TranscriptError` naming the file and the
place: ``byte 0``, ``line 12``, ``line 3 column 7 (char 40)``, ``key history[3].content``):

* :func:`read_text` -- the whole file as text (empty and binary files refused);
* :func:`parse_json` -- ``json.loads`` with a located error (truncation named as such);
* :func:`iter_jsonl` -- ``(line number, value)`` per non-blank line of a JSON-lines file;
* :func:`split_lines` -- lines split on ``\\n`` only (JSON strings may hold U+2028 ...);
* :func:`expect`, :func:`need`, :func:`join_key` -- type checks raising at ``key <path>``;
* :func:`describe_shape` -- a short description of a JSON value for "unknown shape" errors.

Detection (:mod:`ctxlab.transcripts.detection`): ``sniff`` gets the path and ``head``, the first
:data:`HEAD_BYTES` (64 KiB) decoded as UTF-8 -- :func:`read_head` -- so it must decide from the
start of the file; :func:`stripped_head` drops a BOM and leading blanks, :func:`head_is_cut` says
whether the head is only the start of the file.  A JSON-lines file whose first line exceeds the
head is still detected by ``match_line`` on its first complete line; a JSON document whose telling
keys come late, by ``match_json``.  An exception in any of these is reported as a
:class:`TranscriptWarning` naming the format and the file and kept in ``metadata
["detection_errors"]``; it never stops detection, and it never hides: if no format is found the
error names it.  :func:`detect` returns the :class:`Detection` (format, how, parsed data).

Building messages:

* :class:`MessageBuilder` -- collects a run's LangChain messages with ids ``f"{run_id}-{i}"``;
  **id pairing**: ``tool()`` answers the nearest earlier unanswered call with its id (ids may be
  reused) and fills the tool name from the call, ``pending`` lists unanswered calls,
  ``close_unanswered()`` answers them with marked empty results; **observation marking**:
  ``human(..., observation=True)`` marks a tool result recorded as user text
  (``additional_kwargs[OBSERVATION_KEY]``, listed in ``Transcript.observations``);
* :func:`tool_call`, :func:`parse_args`, :func:`text_content` -- LangChain call dicts, arguments
  as dicts (``{"_raw": text}`` when not a JSON object), content kept faithfully;
* :func:`add_openai_messages`, :func:`add_anthropic_messages`, :func:`add_response_items` --
  whole message lists in the OpenAI chat, Anthropic Messages and OpenAI Responses styles;
* :func:`usage_metadata` -- the provider's recorded counts of a call as LangChain's
  ``usage_metadata`` (``MessageBuilder.ai(..., usage=...)``); ``MessageBuilder.mark_compaction``
  marks the messages of a recorded compaction (:data:`RECORDED_COMPACTION_KEY`);
* :func:`warn` -- a :class:`TranscriptWarning` that is also kept in ``metadata["warnings"]``.

:class:`JsonFormat` is a base class for one-document JSON formats (``load`` parses, then calls
``load_json``).
"""

from __future__ import annotations

from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.marks import OBSERVATION_KEY  # its one home (re-exported by transcripts.base too)
from ctxlab.transcripts._checks import describe_shape, expect, join_key, need
from ctxlab.transcripts._util import (
    HEAD_BYTES,
    JsonFormat,
    MessageBuilder,
    add_openai_messages,
    check_text_bytes,
    head_is_cut,
    iter_jsonl,
    json_decode_error,
    openai_tools,
    parse_args,
    parse_json,
    read_text,
    split_lines,
    stripped_head,
    text_content,
    tool_call,
    usage_metadata,
    warn,
)
from ctxlab.transcripts.anthropic import add_anthropic_messages, is_anthropic_list
from ctxlab.transcripts.base import (
    RECORDED_COMPACTION_KEY,
    SYNTHETIC_KEY,
    Transcript,
    TranscriptError,
    TranscriptFormat,
    TranscriptWarning,
)
from ctxlab.transcripts.detection import Detection, detect, read_head
from ctxlab.transcripts.generic import find_message_arrays, is_message_array
from ctxlab.transcripts.responses import add_response_items, is_item_list

__all__ = [
    "HEAD_BYTES",
    "OBSERVATION_KEY",
    "RECORDED_COMPACTION_KEY",
    "SYNTHETIC_KEY",
    "Detection",
    "JsonFormat",
    "MessageBuilder",
    "Transcript",
    "TranscriptError",
    "TranscriptFormat",
    "TranscriptWarning",
    "add_anthropic_messages",
    "add_openai_messages",
    "add_response_items",
    "check_text_bytes",
    "describe_shape",
    "detect",
    "expect",
    "find_message_arrays",
    "head_is_cut",
    "hookimpl",
    "is_anthropic_list",
    "is_item_list",
    "is_message_array",
    "iter_jsonl",
    "join_key",
    "json_decode_error",
    "need",
    "openai_tools",
    "parse_args",
    "parse_json",
    "read_head",
    "read_text",
    "split_lines",
    "stripped_head",
    "text_content",
    "tool_call",
    "usage_metadata",
    "warn",
]
