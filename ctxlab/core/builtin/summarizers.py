"""Built-in summarizers: the LLM summarizer (R10) and the offline structured summarizer."""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.marks import is_summary_message, is_user_request
from ctxlab.core.messages import message_text
from ctxlab.core.summarize import LLMSummarizer, SummaryJob, SummaryResult

_PATH = re.compile(r"(?<![\w/])(?:/?[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b")
_ERROR = re.compile(r"^.*\b(?:[A-Z]\w*(?:Error|Exception)|Traceback|FAILED|fatal|错误|失败)\b.*$", re.M)
_COMMAND_TOOLS = ("bash", "shell", "run", "exec", "command", "terminal", "cmd")


class StructuredSummarizer:
    """A deterministic summary without a model: task, files touched, commands run, errors seen,
    current state (offline replay default).  Facts of a previous summary are carried over.

    Output sections are capped (25 items each, task and state 1,500 characters), so its size is
    bounded (~1,500–3,000 tokens) however many rounds run: an earlier summary's sections are
    merged into the new ones, not nested.
    """

    name = "structured"
    MAX_ITEMS = 25

    def summarize(self, job: SummaryJob) -> SummaryResult:
        text = self._build(job.messages)
        tokens_in = sum(estimate_text_tokens(message_text(m)) for m in job.messages)
        return SummaryResult(
            text=text, calls=1, input_tokens=tokens_in, output_tokens=estimate_text_tokens(text)
        )

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        return self.summarize(job)

    def _build(self, messages: list[BaseMessage]) -> str:
        previous = ""
        task = ""
        files: OrderedDict[str, None] = OrderedDict()
        commands: list[str] = []
        errors: OrderedDict[str, None] = OrderedDict()
        state = ""
        for m in messages:
            text = message_text(m)
            if is_summary_message(m):
                previous = text
                continue
            if is_user_request(m) and not task:
                task = text.strip()
            if isinstance(m, AIMessage):
                if text.strip():
                    state = text.strip()
                for tc in m.tool_calls:
                    args = tc.get("args") or {}
                    name = (tc.get("name") or "").lower()
                    for v in args.values():
                        if isinstance(v, str):
                            for p in _PATH.findall(v[:4000]):
                                files[p] = None
                    if any(k in name for k in _COMMAND_TOOLS):
                        cmd = args.get("command") or args.get("cmd") or next(iter(args.values()), "")
                        commands.append(f"{tc.get('name')}: {str(cmd)[:160]}")
                    else:
                        commands.append(f"{tc.get('name')}({', '.join(list(args)[:4])})")
            if isinstance(m, (ToolMessage, HumanMessage)):
                for line in _ERROR.findall(text[:20000]):
                    errors[line.strip()[:200]] = None
                for p in _PATH.findall(text[:4000]):
                    if len(files) < 200:
                        files[p] = None
        prior = _sections(previous) if previous else {}
        task = prior.get("Task", "").strip() or task
        files_all = _merge(prior.get("Files touched"), list(files))
        commands_all = _merge(prior.get("Commands run"), commands)
        errors_all = _merge(prior.get("Errors seen"), list(errors))
        state = state or prior.get("Current state", "").strip()
        parts = [
            "Task:\n" + (task[:1500] or "(no user request in this part)"),
            "Files touched:\n" + _bullets(files_all[-self.MAX_ITEMS :]),
            "Commands run:\n" + _bullets(commands_all[-self.MAX_ITEMS :]),
            "Errors seen:\n" + _bullets(errors_all[-self.MAX_ITEMS :]),
            "Current state:\n" + (state[-1500:] or "(no assistant text)"),
        ]
        return "\n\n".join(parts)


_SECTIONS = ("Task", "Files touched", "Commands run", "Errors seen", "Current state")


def _sections(text: str) -> dict[str, str]:
    """The sections of an earlier structured summary (by their headers), so that a new summary
    merges them instead of nesting the whole earlier text (which would grow every round)."""
    found: dict[str, str] = {}
    pattern = re.compile(r"^(" + "|".join(map(re.escape, _SECTIONS)) + r"):\n", re.M)
    marks = list(pattern.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end() : end]
        if m.group(1) == "Current state":
            body = body.split("\n\n", 1)[0]  # the framing after the summary is not state
        found[m.group(1)] = body.strip()
    return found


def _merge(previous: str | None, new: list[str]) -> list[str]:
    items = [
        line[2:] for line in (previous or "").splitlines() if line.startswith("- ") and line != "- (none)"
    ]
    return list(OrderedDict.fromkeys([*items, *new]))


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {i}" for i in items) if items else "- (none)"


class DefaultSummarizer:
    """R10 default: the LLM summarizer with the given model; without a model (offline replay),
    the structured summarizer."""

    name = "default-summarizer"

    @hookimpl(trylast=True)
    def ctxlab_get_summarizer(self, model: Any, settings: Any) -> Any:
        if model is None:
            return StructuredSummarizer()
        return LLMSummarizer(model)


class ForceStructuredSummarizer:
    """Plugin: always use :class:`StructuredSummarizer`, even when a model is available."""

    name = "structured-summarizer"

    @hookimpl
    def ctxlab_get_summarizer(self, model: Any, settings: Any) -> Any:
        return StructuredSummarizer()
