"""The vocabulary of the scripted plan: scripted turns, tool-call builders, readers of grep and
read_file output, and the paths and module lists the plan surveys.

A plan is a generator (:data:`Plan`) that yields one scripted ``AIMessage`` per assistant turn
and receives the texts of that turn's tool results (one string per tool call, in call order).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Generator
from typing import Any

from langchain_core.messages import AIMessage

Plan = Generator[AIMessage, list[str], None]

Call = tuple[str, dict[str, Any]]


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


def run(command: str) -> Call:
    return ("run_command", {"command": command})


def read(path: str, offset: int | None = None, limit: int | None = None) -> Call:
    args: dict[str, Any] = {"file_path": path}
    if offset is not None:
        args["offset"] = offset
    if limit is not None:
        args["limit"] = limit
    return ("read_file", args)


def write(path: str, content: str) -> Call:
    return ("write_file", {"file_path": path, "content": content})


def edit(path: str, old: str, new: str) -> Call:
    return ("edit_file", {"file_path": path, "old_string": old, "new_string": new})


def python(code: str) -> Call:
    """``run_command`` of ``python -c CODE``, the code shell-quoted as one argument."""
    return run("python -c " + shlex.quote(code))


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


def window(path: str, line: int, before: int = 2, size: int = 14) -> Call:
    """``read_file`` of ``size`` lines starting ``before`` lines above ``line`` (1-based, at least 1)."""
    return read(path, offset=max(1, line - before), limit=size)


def hook_list(grep_output: str) -> str:
    """The hooks defined in ``grep -n`` output as inline code (`` `before_model`, ... ``), or
    ``"no hook methods"``."""
    return ", ".join(f"`{h}`" for h in hook_names(grep_output)) or "no hook methods"


def read_around(
    t: Turns,
    path: str,
    grep_output: str,
    needles: tuple[str, ...],
    text: Callable[[str, int], str],
    *,
    before: int = 2,
    size: int = 14,
) -> Plan:
    """One turn per needle: ``text(needle, line)`` and a :func:`window` of ``path`` around the
    needle's first hit in ``grep_output`` (line 1 when it has none); the results are not used."""
    for needle in needles:
        line = line_of(grep_output, needle, 1)
        yield t.say(text(needle, line), window(path, line, before=before, size=size))


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
