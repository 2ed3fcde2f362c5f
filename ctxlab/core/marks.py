"""Message marks and the predicates that read them: the one place that knows them.

ctxlab recognises and sets these marks on LangChain messages (``additional_kwargs`` keys, and
texts that open an edited message):

* ``additional_kwargs["lc_source"] == "summarization"`` — LangChain's own mark of a summary
  message (:data:`LC_SOURCE_KEY`, :data:`SUMMARY_SOURCE`).  ctxlab's L2 summary message carries
  it (R8, R11), and so do LangChain's and DeepAgents' summaries, so one predicate
  (:func:`is_summary_message`) recognises all of them.
* ``additional_kwargs["ctxlab_summary"]``, ``["ctxlab_summary_body"]``,
  ``["ctxlab_latest_request"]``, ``["ctxlab_latest_request_path"]`` and
  ``["ctxlab_history_path"]`` — set on ctxlab's own summary message only: the flag, the
  summarizer's text without the framing (carried over when a later round's summary fails, R10),
  the latest user request verbatim when it was summarized (or its head, when it is too long to
  carry whole), the file that holds that request whole when only its head is carried (issue
  30), and the history file the summary names (:func:`summary_kwargs`).
* ``additional_kwargs["ctxlab_observation"]`` — a tool result recorded as a user message, in
  transcripts whose format keeps tool output only as text (mini-swe-agent, SWE-agent):
  :data:`OBSERVATION_KEY`, :func:`is_observation`, :func:`is_tool_result`.
* :data:`OFFLOAD_MARKER` — the first words of a ToolMessage that L1 offloaded (R6).  Text only:
  a tool can print it, so it decides nothing.
* ``additional_kwargs["ctxlab_offloaded"]`` — set by L1 on the offloaded copy it makes
  (:data:`OFFLOADED_KEY`, :func:`offload_kwargs`): the virtual path of the file that holds the
  full result (its name carries the SHA-256 of the text) and the text's length.  "Already offloaded" (R6: not written again) is decided
  from this mark and the named file existing, never from the text (:func:`offloaded_path_of`).
* :func:`truncation_marker` — the text that replaces a truncated write/edit argument (R5).
* :data:`SUMMARIZER_ROLE_METADATA` — the run metadata of every summarizer model call (R10).

Predicates take any object and answer ``False`` for what is not a ``BaseMessage``; none raises.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from ctxlab.core.toolcalls import is_result_message

__all__ = [
    "HISTORY_PATH_KEY",
    "LATEST_REQUEST_KEY",
    "LATEST_REQUEST_PATH_KEY",
    "LC_SOURCE_KEY",
    "OBSERVATION_KEY",
    "OFFLOADED_KEY",
    "OFFLOAD_MARKER",
    "SUMMARIZER_ROLE_METADATA",
    "SUMMARY_BODY_KEY",
    "SUMMARY_FLAG_KEY",
    "SUMMARY_SOURCE",
    "history_path_of",
    "is_observation",
    "is_summary_message",
    "is_tool_result",
    "is_user_request",
    "langchain_summary_kwargs",
    "latest_request_of",
    "latest_request_path_of",
    "offload_kwargs",
    "offloaded_path_of",
    "summary_body_of",
    "summary_kwargs",
    "truncation_marker",
]

#: ``additional_kwargs`` key LangChain uses to say where a message comes from
LC_SOURCE_KEY = "lc_source"
#: the :data:`LC_SOURCE_KEY` value of a summary message (LangChain, DeepAgents and ctxlab alike)
SUMMARY_SOURCE = "summarization"
#: ``additional_kwargs`` flag on ctxlab's own summary message
SUMMARY_FLAG_KEY = "ctxlab_summary"
#: ``additional_kwargs`` key: the summarizer's text of a ctxlab summary, without the framing (R10)
SUMMARY_BODY_KEY = "ctxlab_summary_body"
#: ``additional_kwargs`` key: the latest user request, verbatim, when the summary covers it
LATEST_REQUEST_KEY = "ctxlab_latest_request"
#: ``additional_kwargs`` key: the file that holds the latest request whole when the summary
#: carries only its head (a request too long to carry without keeping every later view above T2)
LATEST_REQUEST_PATH_KEY = "ctxlab_latest_request_path"
#: ``additional_kwargs`` key: the virtual path of the history file a ctxlab summary names
HISTORY_PATH_KEY = "ctxlab_history_path"
#: ``additional_kwargs`` key marking a text observation (a tool result recorded as a user message)
OBSERVATION_KEY = "ctxlab_observation"
#: first words of an offloaded ToolMessage in a view (text only: it marks nothing, see OFFLOADED_KEY)
OFFLOAD_MARKER = "[ctxlab: tool result offloaded]"
#: ``additional_kwargs`` key L1 sets on its offloaded copy: ``{"path", "chars"}`` (R6)
OFFLOADED_KEY = "ctxlab_offloaded"
#: run metadata of every summarizer model call (the call is also tagged ``TAG_NOSTREAM``, R10)
SUMMARIZER_ROLE_METADATA: dict[str, str] = {"ctxlab_role": "summarizer"}


def _kwargs(message: object) -> dict[str, Any]:
    if not isinstance(message, BaseMessage):
        return {}
    return message.additional_kwargs or {}


def is_summary_message(message: object) -> bool:
    """A summary message: ``additional_kwargs["lc_source"] == "summarization"`` (ctxlab's L2
    summary, and LangChain's or DeepAgents' summaries)."""
    return _kwargs(message).get(LC_SOURCE_KEY) == SUMMARY_SOURCE


def is_observation(message: object) -> bool:
    """A text observation: a tool result recorded as a user message (``ctxlab_observation``)."""
    return bool(_kwargs(message).get(OBSERVATION_KEY))


def is_tool_result(message: object) -> bool:
    """A tool result: a ``ToolMessage``, a text observation (:func:`is_observation`), or a message
    of result blocks only (Anthropic ``tool_result``, OpenAI Responses ``function_call_output``:
    :func:`ctxlab.core.toolcalls.is_result_message`)."""
    return isinstance(message, ToolMessage) or is_observation(message) or is_result_message(message)


def is_user_request(message: object) -> bool:
    """A user request: a ``HumanMessage`` that is neither a summary, nor a text observation, nor
    a message of tool result blocks only (the shape Anthropic and OpenAI Responses give a tool
    result: :func:`ctxlab.core.toolcalls.is_result_message`)."""
    return (
        isinstance(message, HumanMessage)
        and not is_summary_message(message)
        and not is_observation(message)
        and not is_result_message(message)
    )


def summary_body_of(message: object) -> str | None:
    """The summarizer's text of a ctxlab summary message (without its framing), else ``None``."""
    body = _kwargs(message).get(SUMMARY_BODY_KEY)
    return body if isinstance(body, str) else None


def latest_request_of(message: object) -> str | None:
    """The latest user request a ctxlab summary message carries verbatim, else ``None``."""
    text = _kwargs(message).get(LATEST_REQUEST_KEY)
    return text if isinstance(text, str) else None


def latest_request_path_of(message: object) -> str | None:
    """The file that holds the latest request whole, when a ctxlab summary message carries only
    its head (:data:`LATEST_REQUEST_PATH_KEY`), else ``None``."""
    path = _kwargs(message).get(LATEST_REQUEST_PATH_KEY)
    return path if isinstance(path, str) else None


def history_path_of(message: object) -> str | None:
    """The history file a ctxlab summary message names (:data:`HISTORY_PATH_KEY`), else ``None``."""
    path = _kwargs(message).get(HISTORY_PATH_KEY)
    return path if isinstance(path, str) else None


def summary_kwargs(
    body: str,
    latest_request: str | None = None,
    history_path: str | None = None,
    latest_request_path: str | None = None,
) -> dict[str, Any]:
    """The ``additional_kwargs`` of ctxlab's summary message: LangChain's summary mark, the ctxlab
    flag, the summarizer's ``body`` and, when given, the latest user request (or its head), the
    file that holds that request whole, and the virtual path of the history file the summary
    names."""
    kwargs: dict[str, Any] = {LC_SOURCE_KEY: SUMMARY_SOURCE, SUMMARY_FLAG_KEY: True, SUMMARY_BODY_KEY: body}
    if latest_request:
        kwargs[LATEST_REQUEST_KEY] = latest_request
    if latest_request and latest_request_path:
        kwargs[LATEST_REQUEST_PATH_KEY] = latest_request_path
    if history_path:
        kwargs[HISTORY_PATH_KEY] = history_path
    return kwargs


def offload_kwargs(path: str, chars: int) -> dict[str, Any]:
    """The mark L1 adds to the ``additional_kwargs`` of an offloaded copy (R6): the virtual
    ``path`` of the file with the full text (``<tool>-<sha256>.txt``) and the text's length in
    ``chars`` (characters).  Providers do not send a ToolMessage's ``additional_kwargs``."""
    return {OFFLOADED_KEY: {"path": path, "chars": chars}}


def offloaded_path_of(message: object) -> str | None:
    """The virtual path in ctxlab's offload mark of ``message`` (:func:`offload_kwargs`), else
    ``None``.  A mark proves nothing alone (a tool may return a message with any
    ``additional_kwargs``): the caller checks that the file exists in the thread's file scope."""
    mark = _kwargs(message).get(OFFLOADED_KEY)
    path = mark.get("path") if isinstance(mark, dict) else None
    return path if isinstance(path, str) and path.startswith("/outputs/") else None


def langchain_summary_kwargs() -> dict[str, Any]:
    """Only LangChain's summary mark (``{"lc_source": "summarization"}``), a fresh dict: for a
    summary message that another framework wrote."""
    return {LC_SOURCE_KEY: SUMMARY_SOURCE}


def truncation_marker(length: int) -> str:
    """The text that replaces a truncated argument; states the original length in characters (R5)."""
    return f"[ctxlab: argument truncated in this request view; original length {length} characters]"
