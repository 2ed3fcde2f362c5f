"""ctxlab-baselines: other frameworks' summarization as ctxlab strategies.

Two strategies whose factory returns a configured ``AgentMiddleware`` that the replay engine
drives as LangGraph would (``before_model`` then ``wrap_model_call``):

* ``langchain-summarization`` — LangChain's ``langchain.agents.middleware.SummarizationMiddleware``:
  in ``before_model``, when the approximate count of the state messages reaches the trigger, it
  replaces the state messages with a summary message plus the kept ones
  (``RemoveMessage(REMOVE_ALL_MESSAGES)``).
* ``deepagents-summarization`` — DeepAgents' ``SummarizationMiddleware`` (what
  ``create_deep_agent`` installs): in ``wrap_model_call``, it truncates old ``write_file`` /
  ``edit_file`` arguments, summarizes into a private ``_summarization_event`` (state messages
  kept), writes the evicted history to ``/conversation_history/<session>.md`` through its
  backend, and clips an overflowing tail.

Settings mapping (ARS → baseline): trigger ``("tokens", T)`` with ``T = summary_threshold × 1024``;
keep ``("messages", summary_keep_messages)`` (at least 1: both refuse 0).  Each uses its own
default token counter (``count_tokens_approximately``) and prompt.  T counts what ARS's T counts,
the whole request (spec R16): DeepAgents counts the system message, the tool schemas and the
messages itself; LangChain's trigger counts the state messages only, so the replay gives the
factory the run's fixed part (``fixed_request``: the system message, with the unrecorded prefix
of :mod:`ctxlab.replay.prefix`, and the tool schemas), counted once with LangChain's counter and
added to its trigger's count (its trimming and cutoff are unchanged).  Both report whether their
trigger fired on the last call (``ctxlab_trigger_reached``, read by the replay's "reached T").
DeepAgents names its history file ``/conversation_history/session_<id>.md`` with a random id;
here the id is derived from the LangGraph thread (the replay's thread is its transcript's label),
so two identical replays write identical summaries and rows.  LangChain keeps its
default ``trim_tokens_to_summarize=4000``; DeepAgents uses what ``create_summarization_middleware``
uses: no trimming, and the argument-truncation settings of ``compute_summarization_defaults`` for
a model without a profile (from 20 messages on, outside the last 20).  DeepAgents gets a
``FilesystemBackend(root_dir=<temporary folder>, virtual_mode=True)`` unless one is given; the
folder is removed when the middleware is garbage-collected (or at exit).

Both summarize with :class:`OfflineSummaryModel`, a deterministic chat model that builds a
structured summary (:class:`ctxlab.core.builtin.StructuredSummarizer`) from the messages in the prompt
it receives — the same summarizer ARS uses offline, so a comparison measures the strategy, not
the model.  Pass ``model=`` to the factories to summarize with a real chat model instead.

The entry point names the package itself (``baselines = "ctxlab_baselines"``): its one
module-level hook, :func:`ctxlab_register_strategies`, registers the two strategies only.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import weakref
from typing import Any
from xml.sax.saxutils import unescape

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ctxlab.core.marks import langchain_summary_kwargs
from ctxlab.sdk import (
    CompressionSettings,
    RegisterStrategy,
    StructuredSummarizer,
    SummaryJob,
    hookimpl,
    message_text,
)

__all__ = [
    "OfflineSummaryModel",
    "ctxlab_register_strategies",
    "deepagents_summarization",
    "fixed_tokens",
    "langchain_summarization",
    "parse_prompt_messages",
]

_MESSAGE = re.compile(r"<message type=\"(\w+)\">(.*?)</message>", re.S)
_CONTENT = re.compile(r"<content>(.*?)</content>", re.S)
_TOOL_CALL = re.compile(r"<tool_call id=\"([^\"]*)\" name=\"([^\"]*)\">(.*?)</tool_call>", re.S)
#: how LangChain's and DeepAgents' summary messages open (their previous summary in a prompt)
_SUMMARY_OPENINGS = (
    "Here is a summary of the conversation to date:",
    "You are in the middle of a conversation that has been summarized.",
)
_MESSAGES_BLOCK = re.compile(r"<messages>\s*(?:Messages to summarize:)?(.*)</messages>", re.S)


def parse_prompt_messages(prompt: str) -> list[BaseMessage]:
    """The messages of a summary prompt rendered with ``get_buffer_string(..., format="xml")``
    (what LangChain's and DeepAgents' summarization send); the whole prompt as one user
    message when it holds no ``<message>`` elements.  A user message that opens like their
    summary messages is marked ``lc_source="summarization"`` (the XML drops that mark), so the
    structured summarizer carries it over as the earlier summary instead of taking it for the
    task."""
    block = _MESSAGES_BLOCK.search(prompt)
    body = block.group(1) if block else prompt
    out: list[BaseMessage] = []
    # LangChain's XML buffer names no call on a tool result: results answer the pending calls of
    # the AI message before them in order (so that a summary pairs each command with its result)
    pending: list[str] = []
    for i, m in enumerate(_MESSAGE.finditer(body)):
        kind, inner = m.group(1), m.group(2)
        if kind == "ai":
            content_m = _CONTENT.search(inner)
            content = (
                unescape(content_m.group(1))
                if content_m
                else ("" if _TOOL_CALL.search(inner) else unescape(inner))
            )
            calls = []
            for j, tc in enumerate(_TOOL_CALL.finditer(inner)):
                raw = unescape(tc.group(3))
                try:
                    args = json.loads(raw)
                except ValueError:
                    args = {"input": raw}
                if not isinstance(args, dict):
                    args = {"input": args}
                calls.append(
                    {
                        "id": unescape(tc.group(1)) or f"call-{i}-{j}",
                        "name": unescape(tc.group(2)),
                        "args": args,
                        "type": "tool_call",
                    }
                )
            out.append(AIMessage(content=content, tool_calls=calls))
            pending = [str(c["id"]) for c in calls]
        elif kind == "tool":
            call_id = pending.pop(0) if pending else f"call-{i}"
            out.append(ToolMessage(content=unescape(inner), tool_call_id=call_id))
        elif kind == "system":
            out.append(SystemMessage(content=unescape(inner)))
        else:
            text = unescape(inner)
            summary = text.lstrip().startswith(_SUMMARY_OPENINGS)
            out.append(
                HumanMessage(content=text, additional_kwargs=langchain_summary_kwargs() if summary else {})
            )
    if not out:
        out.append(HumanMessage(content=body))
    return out


class OfflineSummaryModel(BaseChatModel):
    """A deterministic, offline summarizer model for the baselines.

    It reads the messages out of the summary prompt (:func:`parse_prompt_messages`) and answers
    with :class:`ctxlab.core.builtin.StructuredSummarizer`'s summary of them (task, files touched,
    commands run, errors seen, current state).  ``bind_tools`` returns the model itself; no
    profile, so triggers are absolute token counts.
    """

    @property
    def _llm_type(self) -> str:
        return "ctxlab-offline-summary"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineSummaryModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n".join(message_text(m) for m in messages if not isinstance(m, SystemMessage))
        parsed = parse_prompt_messages(prompt)
        result = StructuredSummarizer().summarize(
            SummaryJob(messages=parsed, prompt="{messages}", budget_tokens=10**9)
        )
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=result.text))])


def _trigger_keep(settings: CompressionSettings) -> tuple[tuple[str, int], tuple[str, int]]:
    return ("tokens", settings.entry_threshold_tokens), ("messages", max(1, settings.summary_keep_messages))


def fixed_tokens(fixed_request: Any) -> int:
    """LangChain's approximate count (``count_tokens_approximately``) of a request's fixed part,
    ``(system message or None, tool schemas)``; 0 for ``None``."""
    from langchain_core.messages.utils import count_tokens_approximately

    if not fixed_request:
        return 0
    system, tools = fixed_request
    messages = [system] if system is not None else []
    if not messages and not tools:
        return 0
    return int(count_tokens_approximately(messages, tools=list(tools or []) or None))


def _thread_session(state: Any) -> str | None:
    """The DeepAgents session id of the current LangGraph thread (``None``: no thread), kept in
    the state once set, as DeepAgents keeps its random one."""
    from deepagents.middleware.summarization import SUMMARIZATION_SESSION_ID_KEY
    from langgraph.config import get_config

    existing = state.get(SUMMARIZATION_SESSION_ID_KEY) if hasattr(state, "get") else None
    if isinstance(existing, str) and existing:
        return existing
    try:
        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # outside a runnable context
        return None
    if thread is None:
        return None
    return "session_" + hashlib.sha256(str(thread).encode("utf-8")).hexdigest()[:32]


def langchain_summarization(
    settings: CompressionSettings | None = None,
    *,
    model: BaseChatModel | None = None,
    fixed_request: Any = None,
) -> Any:
    """LangChain's ``SummarizationMiddleware`` with the ARS trigger and keep (module docstring);
    ``fixed_request``: the run's ``(system message, tool schemas)``, counted in the trigger."""
    from langchain.agents.middleware import SummarizationMiddleware

    class LangChainSummarization(SummarizationMiddleware):
        """LangChain's middleware whose trigger also counts the request's fixed part."""

        ctxlab_trigger_reached: bool | None = None

        @property
        def name(self) -> str:
            return "SummarizationMiddleware"

        def _should_summarize(self, messages: list[Any], total_tokens: int) -> bool:
            fired = bool(super()._should_summarize(messages, total_tokens + self.ctxlab_fixed_tokens))
            self.ctxlab_trigger_reached = fired
            return fired

    trigger, keep = _trigger_keep(settings or CompressionSettings())
    mw = LangChainSummarization(model=model or OfflineSummaryModel(), trigger=trigger, keep=keep)
    mw.ctxlab_fixed_tokens = fixed_tokens(fixed_request)
    return mw


def deepagents_summarization(
    settings: CompressionSettings | None = None, *, model: BaseChatModel | None = None, backend: Any = None
) -> Any:
    """DeepAgents' ``SummarizationMiddleware`` with the ARS trigger and keep (module docstring)."""
    from deepagents.middleware.summarization import SummarizationMiddleware, compute_summarization_defaults

    class DeepAgentsSummarization(SummarizationMiddleware):  # type: ignore[misc, valid-type]
        """DeepAgents' middleware with a history name of the thread and its trigger reported."""

        ctxlab_trigger_reached: bool | None = None

        @property
        def name(self) -> str:
            return "SummarizationMiddleware"

        def _get_session_id(self, state: Any) -> str:
            return _thread_session(state) or str(super()._get_session_id(state))

        def _should_summarize(self, messages: list[Any], total_tokens: int) -> bool:
            fired = bool(super()._should_summarize(messages, total_tokens))
            self.ctxlab_trigger_reached = fired
            return fired

    model = model or OfflineSummaryModel()
    tmp: str | None = None
    if backend is None:
        from deepagents.backends import FilesystemBackend

        tmp = tempfile.mkdtemp(prefix="ctxlab-deepagents-")
        backend = FilesystemBackend(root_dir=tmp, virtual_mode=True)
    trigger, keep = _trigger_keep(settings or CompressionSettings())
    mw = DeepAgentsSummarization(
        model=model,
        backend=backend,
        trigger=trigger,
        keep=keep,
        trim_tokens_to_summarize=None,
        truncate_args_settings=compute_summarization_defaults(model)["truncate_args_settings"],
    )
    if tmp is not None:  # the temporary folder goes with the middleware (or at exit)
        weakref.finalize(mw, shutil.rmtree, tmp, ignore_errors=True)
    return mw


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """The entry point's one hook: the two strategies."""
    register(
        "langchain-summarization",
        langchain_summarization,
        "LangChain SummarizationMiddleware (trigger T tokens, keep summary_keep_messages; offline summarizer "
        "unless the run has a summarizer chat model)",
    )
    register(
        "deepagents-summarization",
        deepagents_summarization,
        "DeepAgents SummarizationMiddleware (trigger T tokens, keep summary_keep_messages; offline summarizer "
        "unless the run has a summarizer chat model, "
        "FilesystemBackend in a temporary folder)",
    )
