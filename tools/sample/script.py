"""The vocabulary of the scripted plan: scripted turns, tables of turns, readers of grep and
read_file output, and the paths and module lists the plan surveys (the tool calls themselves are
built by :mod:`tools.sample.calls`).

A plan is a generator (:data:`Plan`) that yields one scripted ``AIMessage`` per assistant turn
and receives the texts of that turn's tool results (one string per tool call, in call order).
Runs of turns are written as tables of :data:`Step` rows (:func:`steps`); code between the tables
reads the results that the next turns depend on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence

from langchain_core.messages import AIMessage

from tools.sample.calls import Call, edit, run, window

Plan = Generator[AIMessage, list[str], None]


class Turns:
    """Builds scripted AIMessages, numbering tool-call ids ``call_0001``, ``call_0002``, ..."""

    def __init__(self) -> None:
        self.n = 0

    def say(self, text: str, *calls: Call) -> AIMessage:
        tool_calls = []
        for name, args in calls:
            self.n += 1
            tool_calls.append({"name": name, "args": args, "id": f"call_{self.n:04d}", "type": "tool_call"})
        return AIMessage(content=text, tool_calls=tool_calls)


_GREP_LINE = re.compile(r"^(?:[^:\n]*:)?(\d+)[:-](.*)$")


def line_of(grep_output: str, needle: str = "", default: int = 1) -> int:
    """The first line number in ``grep -n`` output whose text contains ``needle``."""
    for line in grep_output.splitlines():
        m = _GREP_LINE.match(line)
        if m and needle in m.group(2):
            return int(m.group(1))
    return default


def lines_of(grep_output: str, needle: str) -> list[int]:
    """Every line number in ``grep -n`` output whose text contains ``needle``."""
    out = []
    for line in grep_output.splitlines():
        m = _GREP_LINE.match(line)
        if m and needle in m.group(2):
            out.append(int(m.group(1)))
    return out


_HOOK_NAME = re.compile(r"def (a?(?:before|after|wrap)_(?:agent|model|model_call|tool_call))\b")
_CODE_LINE = re.compile(r"^\s*\d+\t(.*)$")


def hook_names(grep_output: str) -> list[str]:
    """Hook method names defined in ``grep -n`` output, in order, without repeats."""
    seen: list[str] = []
    for name in _HOOK_NAME.findall(grep_output):
        if name not in seen:
            seen.append(name)
    return seen


def observe(read_output: str, k: int = 3) -> str:
    """A short quote of the most telling code lines of a read_file result (for the narration)."""
    lines = []
    for raw in read_output.splitlines():
        m = _CODE_LINE.match(raw)
        text = (m.group(1) if m else raw).strip()
        if not text or text.startswith(("#", '"""', "@")) or text in ("(", ")", "):"):
            continue
        if any(key in text for key in ("def ", "class ", "return", "=", "raise", "await", "yield")):
            lines.append(text[:90])
        if len(lines) >= k:
            break
    if not lines:
        return "nothing unexpected"
    return "; ".join(f"`{line}`" for line in lines)


def grep_hits(grep_output: str, limit: int = 12) -> list[str]:
    """Up to ``limit`` ``N: text`` lines from grep -n output, whitespace squeezed."""
    out = []
    for line in grep_output.splitlines():
        m = _GREP_LINE.match(line)
        if m:
            out.append(f"{m.group(1)}: {' '.join(m.group(2).split())[:110]}")
        if len(out) >= limit:
            break
    return out


def hook_list(grep_output: str) -> str:
    """The hooks defined in ``grep -n`` output as inline code (`` `before_model`, ... ``), or
    ``"no hook methods"``."""
    return ", ".join(f"`{h}`" for h in hook_names(grep_output)) or "no hook methods"


#: one scripted turn as data: the narration, then its tool calls (several run in parallel)
Step = tuple[str, Call, *tuple[Call, ...]]
#: a row of :func:`steps`: a :data:`Step`, or a function of the tool results so far that gives the
#: steps to run at that point (e.g. :func:`around`, which reads where an earlier grep found things)
Row = Step | Callable[[list[str]], list[Step]]


def steps(t: Turns, *rows: Row) -> Generator[AIMessage, list[str], list[str]]:
    """One turn per step of ``rows``, in order; returns the tool results of all the turns (one
    string per call, in call order)."""
    results: list[str] = []
    for row in rows:
        for text, *calls in row(results) if callable(row) else [row]:
            results += yield t.say(text, *calls)
    return results


def per_module(
    t: Turns,
    folder: str,
    modules: Sequence[str],
    size: int,
    grep: str,
    text: Callable[[int, Sequence[str]], str],
    each: Callable[[str, str, str], Plan],
) -> Plan:
    """The modules of ``folder`` in batches of ``size``: per batch, one turn ``text(batch number
    from 0, batch)`` running ``<grep> <folder>/<module>.py`` for each module in parallel, then
    ``each(module, its path, its grep output)`` for each module of the batch."""
    for i in range(0, len(modules), size):
        batch = modules[i : i + size]
        paths = [f"{folder}/{mod}.py" for mod in batch]
        outs = yield t.say(text(i // size, batch), *(run(f"{grep} {path}") for path in paths))
        for mod, path, out in zip(batch, paths, outs, strict=True):
            yield from each(mod, path, out)


_DEF = re.compile(r"\A(?:async )?def ")


def around(
    path: str,
    *needles: str,
    text: str,
    before: int = 2,
    size: int = 14,
    of: int = -1,
) -> Callable[[list[str]], list[Step]]:
    """A :data:`Row` reading ``path`` where a grep found things: one step per needle, a
    :func:`window` of ``path`` around the needle's first hit in the grep output ``results[of]``
    (``of`` counts back from the table's latest result: -1, the default, is the last one; line 1
    when the needle has no hit), narrated by ``text`` formatted with ``needle``, ``name`` (the
    needle without a leading ``def ``/``async def ``) and ``line``."""

    def rows(results: list[str]) -> list[Step]:
        out: list[Step] = []
        for needle in needles:
            line = line_of(results[of], needle, 1)
            name = _DEF.sub("", needle, count=1)
            out.append(
                (
                    text.format(needle=needle, name=name, line=line),
                    window(path, line, before=before, size=size),
                )
            )
        return out

    return rows


MW = "langchain/agents/middleware"
TYPES = f"{MW}/types.py"
FACTORY = "langchain/agents/factory.py"
DA = "deepagents/middleware"
DA_SUMM = f"{DA}/summarization.py"
LC_SUMM = f"{MW}/summarization.py"
TOOL_NODE = "langgraph/prebuilt/tool_node.py"
STATE_GRAPH = "langgraph/graph/state.py"
MSG_UTILS = "langchain_core/messages/utils.py"
NOTES = "notes"
REPORT = "report/middleware_survey.md"
#: the report's last heading; sections are inserted before it (:func:`add_section`)
OPEN_QUESTIONS = "## 5. Open questions"

_HOOK_ALT = r"a\?\(before_agent\|before_model\|after_model\|after_agent\|wrap_model_call\|wrap_tool_call\)\b"
#: grep -n for class lines and hook definitions (sync and async)
HOOK_GREP = rf"grep -n '^class \|    \(async \)\?def {_HOOK_ALT}'"
#: grep -n for hook definitions only
HOOK_DEF_GREP = rf"grep -n '    \(async \)\?def {_HOOK_ALT}'"

#: built-in LangChain middleware modules surveyed one by one (a fixed list keeps the plan stable)
LC_MODULES = (
    "context_editing",
    "model_call_limit",
    "model_retry",
    "model_fallback",
    "tool_call_limit",
    "tool_retry",
    "tool_emulator",
    "tool_selection",
    "todo",
    "pii",
    "shell_tool",
    "file_search",
    "human_in_the_loop",
    "model_router",
    "tool_error",
    "auto_mode",
)
#: of those, the ones read at length
LC_LARGE = ("human_in_the_loop", "tool_call_limit", "model_fallback", "pii")
DA_MODULES = (
    "patch_tool_calls",
    "memory",
    "skills",
    "subagents",
    "filesystem",
    "async_subagents",
    "unsupported_content",
    "_tool_exclusion",
    "_prompt_caching",
    "_parent_notifier",
    "rubric",
)
LC_CLASSES = (
    "ContextEditingMiddleware",
    "FilesystemFileSearchMiddleware",
    "HumanInTheLoopMiddleware",
    "LLMToolEmulator",
    "LLMToolSelectorMiddleware",
    "ModelCallLimitMiddleware",
    "ModelFallbackMiddleware",
    "ModelRetryMiddleware",
    "PIIMiddleware",
    "ShellToolMiddleware",
    "SummarizationMiddleware",
    "TodoListMiddleware",
    "ToolCallLimitMiddleware",
    "ToolRetryMiddleware",
    "ModelRouterMiddleware",
    "ToolErrorMiddleware",
)
DA_CLASSES = (
    "FilesystemMiddleware",
    "MemoryMiddleware",
    "SkillsMiddleware",
    "SubAgentMiddleware",
    "AsyncSubAgentMiddleware",
    "SummarizationMiddleware",
    "UnsupportedContentMiddleware",
    "RubricMiddleware",
)


def add_section(section: str) -> Call:
    """``edit_file`` of the report that inserts ``section`` (Markdown ending with a newline) before
    :data:`OPEN_QUESTIONS`."""
    return edit(REPORT, OPEN_QUESTIONS, section + "\n" + OPEN_QUESTIONS)
