"""Offline Inspect models: ``ctxlab/offline`` (a summarizer) and ``ctxlab/reader`` (the offline task's agent).

Both are one Inspect ``ModelAPI``, :class:`CtxlabModelAPI`, registered as the provider ``ctxlab``
(``get_model("ctxlab/offline")``, ``inspect eval ... --model ctxlab/reader``), and both count
tokens with ctxlab's measure (:class:`ctxlab.core.estimation.CharClassEstimator`, spec R16) instead
of Inspect's tiktoken estimate: a compaction threshold then means the same number of tokens in
Inspect as in ctxlab's replay.  Neither makes a network call.

* ``offline`` answers every request with ctxlab's structured summary
  (:class:`ctxlab.core.builtin.StructuredSummarizer`) of the messages it was sent, the summary
  prompt (the last user message) left out: the model-backed baselines (Inspect's
  ``CompactionSummary``) summarize with it offline, as ARS does, so a comparison measures the
  strategy, not the model.
* ``reader`` plays the offline task (:mod:`ctxlab.integrations.inspect.task`) deterministically
  from what it was sent and nothing else (:func:`reader_policy`).

Usage is reported in every output (``ModelUsage``, ctxlab's estimate), so Inspect's logs carry
tokens for these models as for a provider's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from langchain_core.messages import AIMessage, HumanMessage

from ctxlab.core.builtin import StructuredSummarizer
from ctxlab.core.estimation import CharClassEstimator, EstimateCache
from ctxlab.core.summarize import SummaryJob
from ctxlab.integrations.inspect.convert import to_langchain

__all__ = ["PAGE_LINES", "CtxlabModelAPI", "ctxlab_models", "reader_policy"]

#: lines the reader asks for per ``read_saved_output`` call (small pages: a page is never offloaded)
PAGE_LINES = 12
#: the tool the reader reads saved outputs with (ctxlab's read tool, :mod:`...inspect.compaction`)
READ_TOOL = "read_saved_output"
_SAVED = re.compile(r"/outputs/large_tool_results/[\w.\-]+\.txt")
_TARGET = re.compile(r"access code of project (\w+)")
_PREFIX = re.compile(r"prefixed with '([A-Z]+)-'")
_NEXT = re.compile(r'NEXT: fetch\("([\w\-]+)"\)')
_START = re.compile(r'Start with fetch\("([\w\-]+)"\)')
_END = "END of documents"


def _estimator() -> EstimateCache:
    est = CharClassEstimator()
    return EstimateCache(est.message_tokens, est.tools_tokens, name=est.name)


class CtxlabModelAPI(ModelAPI):
    """The ``ctxlab`` provider: model ``offline`` or ``reader`` (module doc).

    Raises:
        ValueError: another model name.
    """

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008  (Inspect's own signature)
        **model_args: Any,
    ) -> None:
        if model_name not in ("offline", "reader"):
            raise ValueError(f"ctxlab/{model_name}: unknown model; known: ctxlab/offline, ctxlab/reader")
        super().__init__(model_name, base_url, api_key, [], config)
        self.measure = _estimator()

    async def count_tokens(self, input: str | list[ChatMessage], config: GenerateConfig | None = None) -> int:
        """Tokens of ``input`` by ctxlab's measure (R16)."""
        if isinstance(input, str):
            return self.measure.message_tokens(HumanMessage(content=input))
        return self.measure.messages_tokens(to_langchain(input))

    def max_tokens(self) -> int | None:
        return 4096

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        if self.model_name == "offline":
            output = ModelOutput.from_content(model="ctxlab/offline", content=offline_summary(input))
        else:
            output = reader_policy(input, [t.name for t in tools])
        in_tokens = await self.count_tokens(input)
        out_msg = output.choices[0].message if output.choices else None
        out_tokens = self.measure.message_tokens(to_langchain([out_msg])[0]) if out_msg is not None else 0
        output.usage = ModelUsage(
            input_tokens=in_tokens, output_tokens=out_tokens, total_tokens=in_tokens + out_tokens
        )
        return output


@modelapi(name="ctxlab")
def ctxlab_models() -> type[ModelAPI]:
    """The ``ctxlab`` provider (:class:`CtxlabModelAPI`)."""
    return CtxlabModelAPI


def offline_summary(input: Sequence[ChatMessage]) -> str:
    """ctxlab's structured summary of ``input`` without its last user message (the prompt)."""
    body = list(input)
    if body and isinstance(body[-1], ChatMessageUser):
        body = body[:-1]
    messages = [m for m in to_langchain(body) if m.type != "system"]
    result = StructuredSummarizer().summarize(
        SummaryJob(messages=messages, prompt="{messages}", budget_tokens=10**9)
    )
    return result.text


def _call(tool: str, args: dict[str, Any], n: int) -> ModelOutput:
    return ModelOutput.for_tool_call(
        model="ctxlab/reader", tool_name=tool, tool_arguments=args, tool_call_id=f"{tool}-{n}"
    )


def reader_policy(input: Sequence[ChatMessage], tools: Sequence[str]) -> ModelOutput:
    """The offline task's agent: the next action from what it was sent, and nothing else.

    1. The task is the first user message that is not a summary: the project whose access code
       to find (``access code of project X``), the answer's prefix (``prefixed with 'P-'``) and
       the first document (``Start with fetch("doc-1")``).  Without it: ``submit("unknown")``.
    2. While the latest tool result names a next document (``NEXT: fetch("doc-k")``), fetch it.
    3. Then answer: the code when any message sent states it (``The access code of project X is
       C``, a summary included): ``submit("P-C")``.  Else read back a saved output a message
       names (``/outputs/large_tool_results/....txt``) with ``read_saved_output``, a page of
       :data:`PAGE_LINES` lines at a time, until a page comes back empty; else
       ``submit("unknown")``.

    Args:
        input: the messages the model was sent.
        tools: the names of the tools it was offered.

    Returns:
        A tool call (``fetch``, ``read_saved_output`` or ``submit``).
    """
    calls = sum(len(m.tool_calls or []) for m in input if isinstance(m, ChatMessageAssistant))
    task = next(
        (m.text for m in input if isinstance(m, ChatMessageUser) and "summary" not in (m.metadata or {})), ""
    )
    target, prefix, start = _TARGET.search(task), _PREFIX.search(task), _START.search(task)
    if target is None or prefix is None or start is None:
        return _call("submit", {"answer": "unknown"}, calls)
    tool_results = [m for m in input if isinstance(m, ChatMessageTool)]
    if not tool_results:
        return _call("fetch", {"name": start.group(1)}, calls)
    latest = tool_results[-1]
    nxt = _NEXT.search(latest.text) if latest.function == "fetch" else None
    if nxt is not None and _END not in latest.text:
        return _call("fetch", {"name": nxt.group(1)}, calls)
    fact = re.compile(rf"The access code of project {re.escape(target.group(1))} is (\w+)")
    for m in input:
        found = fact.search(m.text)
        if found is not None:
            return _call("submit", {"answer": f"{prefix.group(1)}-{found.group(1)}"}, calls)
    if READ_TOOL in tools:
        page = _next_page(input)
        if page is not None:
            return _call(READ_TOOL, {"path": page[0], "offset": page[1], "limit": PAGE_LINES}, calls)
    return _call("submit", {"answer": "unknown"}, calls)


def _next_page(input: Sequence[ChatMessage]) -> tuple[str, int] | None:
    """The next ``(path, offset)`` to read: the first saved output named in ``input`` whose pages
    read so far (the reader's own calls visible in ``input``) did not end on an empty page."""
    paths: list[str] = []
    for m in input:
        for p in _SAVED.findall(m.text):
            if p not in paths:
                paths.append(p)
    results = {m.tool_call_id: m.text for m in input if isinstance(m, ChatMessageTool)}
    for path in paths:
        offset, done = 0, False
        for m in input:
            for tc in m.tool_calls or [] if isinstance(m, ChatMessageAssistant) else []:
                if tc.function == READ_TOOL and tc.arguments.get("path") == path:
                    text = results.get(tc.id, "")
                    offset = max(offset, int(tc.arguments.get("offset", 0)) + PAGE_LINES)
                    done = done or not text.strip() or text.startswith("Error")
        if not done:
            return path, offset
    return None


def as_ai_message(output: ModelOutput) -> AIMessage:
    """The LangChain message of an output's first choice (tests and the replay adapter)."""
    msg = output.choices[0].message
    return AIMessage(
        content=msg.text,
        tool_calls=[
            {"id": tc.id, "name": tc.function, "args": dict(tc.arguments), "type": "tool_call"}
            for tc in msg.tool_calls or []
        ],
    )
