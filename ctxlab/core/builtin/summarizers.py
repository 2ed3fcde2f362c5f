"""Built-in summarizers: the LLM summarizer (R10) and the offline structured summarizer."""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab.core.builtin.session_facts import session_facts
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.marks import is_summary_message, is_user_request
from ctxlab.core.messages import message_text
from ctxlab.core.prompts import text_language
from ctxlab.core.summarize import LLMSummarizer, SummaryJob, SummaryResult

_PATH = re.compile(r"(?<![\w/])(?:/?[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b")
_ERROR = re.compile(r"^.*\b(?:[A-Z]\w*(?:Error|Exception)|Traceback|FAILED|fatal|错误|失败)\b.*$", re.M)
_COMMAND_TOOLS = ("bash", "shell", "run", "exec", "command", "terminal", "cmd")


class StructuredSummarizer:
    """A deterministic summary without a model: task, files touched, commands run, errors seen,
    current state (offline replay default).  Facts of a previous summary are carried over.

    Files, commands and errors are stated, one line each, with what happened to them
    (:mod:`ctxlab.core.builtin.session_facts`): a file ``edited``/``created``/``ran``/``read``, a
    command's last outcome ``passed``/``failed``, an error ``fixed``/``still open``; paths and
    commands the actions do not explain follow as names.

    Its labels are in the round's summary language (``job.language``; ``None``: the language of
    ``job.prompt``), one language throughout, so that the summary matches its framing.

    Output sections are capped (25 items each, task and state 1,500 characters), so its size is
    bounded (~1,500–3,000 tokens) however many rounds run: an earlier summary's sections are
    merged into the new ones, not nested.
    """

    name = "structured"
    MAX_ITEMS = 25

    def summarize(self, job: SummaryJob) -> SummaryResult:
        language = job.language or text_language(job.prompt.replace("{messages}", ""))
        text = self._build(job.messages, LABELS_ZH if language == "zh" else LABELS_EN)
        tokens_in = sum(estimate_text_tokens(message_text(m)) for m in job.messages)
        return SummaryResult(
            text=text, calls=1, input_tokens=tokens_in, output_tokens=estimate_text_tokens(text)
        )

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        return self.summarize(job)

    def _build(self, messages: list[BaseMessage], labels: _Labels) -> str:
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
        facts = session_facts(messages)
        words = labels.words
        stated = OrderedDict((p, f"{p}: {_say(f.statement(), words)}") for p, f in facts.files.items())
        files_out = [*stated.values(), *(p for p in files if not any(_same(p, q) for q in stated))]
        commands_out = [
            f"{c.shown}{f' ({c.error})' if c.outcome == 'failed' and c.error else ''}: {words.get(c.outcome, c.outcome)}"
            for c in facts.commands.values()
        ]
        # the shell commands are stated above; other tool calls stay as names
        commands_out += [c for c in commands if ": " not in c[:60]]
        errors_out = [
            f"{e.line}: {words['fixed' if e.fixed else 'still open']}" for e in facts.errors.values()
        ]
        errors_out += [e for e in errors if not any(e.startswith(f.line[:60]) for f in facts.errors.values())]
        prior = _sections(previous) if previous else {}
        task = prior.get("task", "").strip() or task
        files_all = _merge_facts(prior.get("files"), files_out)
        commands_all = _merge_facts(prior.get("commands"), commands_out)
        errors_all = _merge_facts(prior.get("errors"), errors_out)
        state = state or prior.get("state", "").strip()
        n = self.MAX_ITEMS
        parts = [
            f"{labels.task}\n" + (task[:1500] or labels.no_task),
            f"{labels.files}\n" + _bullets(files_all[-n:], labels),
            f"{labels.commands}\n" + _bullets(commands_all[-n:], labels),
            f"{labels.errors}\n" + _bullets(errors_all[-n:], labels),
            f"{labels.state}\n" + (state[-1500:] or labels.no_state),
        ]
        return "\n\n".join(parts)


@dataclass(frozen=True)
class _Labels:
    """The words of a structured summary in one language (section headers end with a colon)."""

    task: str
    files: str
    commands: str
    errors: str
    state: str
    none: str
    no_task: str
    no_state: str
    #: the words a fact line states its attribute with (English -> this language)
    words: dict[str, str] = field(default_factory=dict)

    def sections(self) -> dict[str, str]:
        """Section key -> header."""
        return {k: getattr(self, k) for k in ("task", "files", "commands", "errors", "state")}


LABELS_EN = _Labels(
    "Task:",
    "Files touched:",
    "Commands run:",
    "Errors seen:",
    "Current state:",
    "(none)",
    "(no user request in this part)",
    "(no assistant text)",
    {
        w: w
        for w in (
            "passed",
            "failed",
            "fixed",
            "still open",
            "read",
            "created",
            "then",
            "edited",
            "ran",
            "deleted",
        )
    },
)
LABELS_ZH = _Labels(
    "任务：",
    "涉及的文件：",
    "执行的命令：",
    "遇到的错误：",
    "当前状态：",
    "（无）",
    "（这部分没有用户请求）",
    "（没有助手的文字）",
    {
        "passed": "通过",
        "failed": "失败",
        "fixed": "已修复",
        "still open": "未解决",
        "read": "读取",
        "created": "创建",
        "then": "之后",
        "edited": "修改",
        "ran": "运行",
        "deleted": "删除",
    },
)
_HEADERS = {header: key for labels in (LABELS_EN, LABELS_ZH) for key, header in labels.sections().items()}
_NONE = {f"- {LABELS_EN.none}", f"- {LABELS_ZH.none}"}


def _sections(text: str) -> dict[str, str]:
    """The sections of an earlier structured summary (by their headers, in either language), so
    that a new summary merges them instead of nesting the whole earlier text (which would grow
    every round)."""
    found: dict[str, str] = {}
    pattern = re.compile(r"^(" + "|".join(map(re.escape, _HEADERS)) + r")\n", re.M)
    marks = list(pattern.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end() : end]
        key = _HEADERS[m.group(1)]
        if key == "state":
            body = body.split("\n\n", 1)[0]  # the framing after the summary is not state
        found[key] = body.strip()
    return found


def _merge_facts(previous: str | None, new: list[str]) -> list[str]:
    """The previous summary's lines, then the new ones; a previous line about the same subject
    (the text before its first ``": "``) as a new one gives way to it."""
    subjects = {line.split(": ", 1)[0] for line in new}
    items = [
        line[2:]
        for line in (previous or "").splitlines()
        if line.startswith("- ") and line not in _NONE and line[2:].split(": ", 1)[0] not in subjects
    ]
    return list(OrderedDict.fromkeys([*items, *new]))


def _same(a: str, b: str) -> bool:
    a, b = a.removeprefix("./"), b.removeprefix("./")
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return short == long or long.endswith("/" + short.lstrip("/"))


def _say(statement: str, words: dict[str, str]) -> str:
    """A file statement (:meth:`~ctxlab.core.builtin.session_facts.FileFact.statement`) in the
    summary's language."""
    for en, local in words.items():
        statement = re.sub(rf"\b{re.escape(en)}\b", local, statement)
    return statement


def _bullets(items: list[str], labels: _Labels) -> str:
    return "\n".join(f"- {i}" for i in items) if items else f"- {labels.none}"


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
