"""The bundled sample transcript: a long scripted agent run with real tools.

``record_sample(out_path)`` runs a LangChain v1 agent (``langchain.agents.create_agent``) whose
chat model is scripted (:class:`ScriptedChatModel`: it replays a fixed plan of assistant turns
and tool calls, no API key, no network) while the tools are real and do real work:

* ``read_file`` reads source files of the installed ``langchain``/``langgraph``/``deepagents``
  packages (paths relative to site-packages) or of the agent's temporary workspace;
* ``run_command`` runs a small whitelist of programs (``ls``, ``grep``, ``wc``, ``head``,
  ``tail``, ``python -c``) without a shell;
* ``write_file`` and ``edit_file`` write into the temporary workspace.

The plan surveys how LangChain's middleware hooks are implemented and writes a report, over four
user turns: about 230 tool calls, some of them parallel, mostly small results plus ~25 large file
reads, and several ``write_file``/``edit_file`` calls with arguments over 2,000 characters. With
ARS's default settings the run crosses the entry threshold, then L1 trims the large results, and
the small messages that remain still exceed the L2 trigger, so both levels happen on replay.

The recording is in the OpenAI chat-completions message format, wrapped as
``{"messages": [...], "model": "scripted-fake", "generator": "ctxlab.cli.sample", ...}``. Host paths
never appear in it: site-packages paths are shown relative, the workspace as ``workspace/``.
The structure (messages, tool-call names and ids) is fixed by the plan; tool outputs are
deterministic for the same installed package versions.

This module depends only on LangChain/LangGraph and the standard library.

CLI::

    python -m ctxlab.cli.sample record OUT.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import re
import shlex
import site
import subprocess
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ctxlab.replay.models import ScriptedChatModel
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

__all__ = [
    "SAMPLE_TRANSCRIPT",
    "main",
    "record_sample",
    "to_openai_messages",
]


MODEL_NAME = "scripted-fake"
GENERATOR = "ctxlab.cli.sample"
#: read_file / run_command cap their output like real agent harnesses do
MAX_OUTPUT_CHARS = 40_000
MAX_LINE_CHARS = 2_000
COMMAND_TIMEOUT_S = 120
ALLOWED_PROGRAMS = ("ls", "grep", "wc", "head", "tail", "python")
WORKSPACE = "workspace"
PACKAGES = ("langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "deepagents")

SYSTEM_PROMPT = """\
You are a careful senior Python engineer working as a research agent inside a sandbox.

Tools:
- read_file(file_path, offset=1, limit=2000): read a text file with line numbers. Paths are
  relative to the Python site-packages directory (e.g. `langchain/agents/factory.py`), or to your
  workspace when they start with `workspace/`. Output is capped at 40,000 characters; use
  offset/limit to page through long files.
- run_command(command): run one command, without a shell (no pipes, no redirection), from the
  site-packages directory. Allowed programs: ls, grep, wc, head, tail and `python -c`. Globs are
  expanded. Paths starting with `workspace/` refer to your workspace.
- write_file(file_path, content): create or overwrite a file in your workspace.
- edit_file(file_path, old_string, new_string, replace_all=False): replace an exact string in a
  workspace file; old_string must be unique unless replace_all is true.

Working rules:
- Ground every claim in the installed source: cite `path:line`.
- Prefer narrow reads (grep first, then read the lines you need) and keep notes in the workspace
  so that you do not have to re-read large files.
- When you run experiments, keep them small and print only what you need.
- Write reports in Markdown. Be precise about sync vs async behaviour and ordering.
"""

USER_TURNS = (
    "I want to understand how LangChain v1's agent middleware works under the hood before we write "
    "our own context-compression middleware. Please survey the installed packages: the hook types in "
    "`langchain.agents.middleware`, how `create_agent` wires them into the LangGraph graph (ordering, "
    "sync vs async, jumps), and how DeepAgents builds its own middleware stack on top. Keep notes in "
    "the workspace as you go and write a report to `report/middleware_survey.md` with file:line "
    "references.",
    "Good. Next, compare DeepAgents' SummarizationMiddleware with LangChain's: when does each one "
    "trigger, what does it keep, and what does it offload to files? Add a section to the report.",
    "Can you double-check the sync/async story? For every built-in middleware in both packages, which "
    "hooks have a sync and which an async implementation? Put a table in the report, and flag any "
    "that would break or silently fall back under `ainvoke`.",
    "Last thing: how do these middlewares keep an AIMessage's tool calls together with their "
    "ToolMessages when they cut or trim history? Add a short section with line references, then "
    "give me a summary of the whole report.",
)


# ---------------------------------------------------------------------------------------------
# the sandbox: real tools over the installed packages and a temporary workspace
# ---------------------------------------------------------------------------------------------


def _site_roots() -> list[Path]:
    """Directories that hold the installed packages, the one holding ``langchain`` first."""
    import langchain

    roots = [Path(langchain.__file__).resolve().parent.parent]
    try:
        extra = site.getsitepackages()
    except AttributeError:  # pragma: no cover - unusual interpreters
        extra = []
    for p in [*extra, site.getusersitepackages() if site.ENABLE_USER_SITE else None]:
        if p and Path(p).is_dir() and Path(p).resolve() not in roots:
            roots.append(Path(p).resolve())
    return roots


class _Sandbox:
    """Path mapping and output cleaning shared by the tools of one recording."""

    def __init__(self, workspace: Path) -> None:
        self.roots = _site_roots()
        self.site = self.roots[0]
        self.workspace = workspace.resolve()
        replacements: dict[str, str] = {str(self.workspace): WORKSPACE}
        for root in self.roots:
            replacements.setdefault(str(root), "")
        for prefix, label in (
            (sys.prefix, "<venv>"),
            (sys.base_prefix, "<python>"),
            (sys.exec_prefix, "<venv>"),
            (tempfile.gettempdir(), "<tmp>"),
            (str(Path.home()), "~"),
            (os.getcwd(), "<cwd>"),
        ):
            for variant in {prefix, str(Path(prefix).resolve())}:
                if variant and variant != "/":
                    replacements.setdefault(variant, label)
        # longest first, so that a root inside the venv wins over the venv itself
        self._replacements = sorted(replacements.items(), key=lambda kv: len(kv[0]), reverse=True)

    def clean(self, text: str) -> str:
        """Replace every absolute host path prefix by a neutral label."""
        for prefix, label in self._replacements:
            if prefix not in text:
                continue
            text = text.replace(prefix + "/", f"{label}/" if label else "")
            text = text.replace(prefix, label or ".")
        return text

    def resolve_read(self, file_path: str) -> Path | str:
        """The host path of a readable file, or an error message."""
        rel = file_path.strip()
        if rel.startswith(WORKSPACE + "/"):
            return self._inside(self.workspace, rel[len(WORKSPACE) + 1 :], file_path)
        for root in self.roots:
            got = self._inside(root, rel, file_path)
            if isinstance(got, Path) and got.exists():
                return got
        return f"Error: file not found: {file_path}"

    def resolve_write(self, file_path: str) -> Path | str:
        rel = file_path.strip()
        if rel.startswith(WORKSPACE + "/"):
            rel = rel[len(WORKSPACE) + 1 :]
        return self._inside(self.workspace, rel, file_path)

    @staticmethod
    def _inside(root: Path, rel: str, shown: str) -> Path | str:
        if not rel or Path(rel).is_absolute():
            return f"Error: path must be relative: {shown}"
        path = (root / rel).resolve()
        if not path.is_relative_to(root):
            return f"Error: path escapes its root: {shown}"
        return path

    def show(self, path: Path) -> str:
        """How a host path is shown to the model."""
        if path.is_relative_to(self.workspace):
            return f"{WORKSPACE}/{path.relative_to(self.workspace).as_posix()}"
        return self.clean(str(path))


def _cap(text: str, hint: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_OUTPUT_CHARS)
    cut = cut if cut > MAX_OUTPUT_CHARS // 2 else MAX_OUTPUT_CHARS
    rest = text[cut:]
    return f"{text[:cut]}\n... [output truncated: {len(rest)} more characters, {rest.count(chr(10))} more lines; {hint}]"


def _make_tools(box: _Sandbox) -> list[BaseTool]:
    def read_file(file_path: str, offset: int = 1, limit: int = 2000) -> str:
        """Read a text file with line numbers (cat -n style).

        Args:
            file_path: relative to site-packages, or starting with `workspace/`.
            offset: first line to show (1-based).
            limit: maximum number of lines to show.
        """
        path = box.resolve_read(file_path)
        if isinstance(path, str):
            return path
        if path.is_dir():
            return f"Error: {file_path} is a directory; use run_command with ls"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            return f"Error: cannot read {file_path}: {type(exc).__name__}"
        start = max(int(offset), 1)
        chosen = lines[start - 1 : start - 1 + max(int(limit), 1)]
        if not chosen:
            return f"Error: offset {start} is past the end of {file_path} ({len(lines)} lines)"
        body = "\n".join(
            f"{start + i:6d}\t{line[:MAX_LINE_CHARS]}{' [line truncated]' if len(line) > MAX_LINE_CHARS else ''}"
            for i, line in enumerate(chosen)
        )
        return box.clean(_cap(body, "use offset/limit to read further"))

    def run_command(command: str) -> str:
        """Run one whitelisted command (ls, grep, wc, head, tail, python -c) without a shell.

        Args:
            command: the command line; globs are expanded, `workspace/...` paths map to the workspace.
        """
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return f"Error: cannot parse command: {exc}"
        if not argv or argv[0] not in ALLOWED_PROGRAMS:
            return f"Error: program not allowed: {argv[0] if argv else '(empty)'}; allowed: {', '.join(ALLOWED_PROGRAMS)}"
        if argv[0] == "python":
            if len(argv) < 3 or argv[1] != "-c":
                return "Error: only `python -c CODE` is allowed"
            argv = [sys.executable, *argv[1:]]
        else:
            expanded: list[str] = [argv[0]]
            for arg in argv[1:]:
                if arg.startswith(WORKSPACE + "/"):
                    arg = str(box.workspace / arg[len(WORKSPACE) + 1 :])
                if any(ch in arg for ch in "*?[") and not arg.startswith("-"):
                    matches = sorted(p.as_posix() for p in Path(box.site).glob(arg))
                    expanded.extend(matches or [arg])
                else:
                    expanded.append(arg)
            argv = expanded
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C",
            "LANG": "C",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONWARNINGS": "ignore",
            "PYTHONIOENCODING": "utf-8",
            "HOME": str(box.workspace),
            "NO_COLOR": "1",
        }
        try:
            proc = subprocess.run(
                argv,
                cwd=box.site,
                env=env,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=COMMAND_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"Error: command timed out after {COMMAND_TIMEOUT_S} s"
        out = proc.stdout
        if argv[0] == "grep" and any(a.startswith("-") and ("r" in a or "R" in a) for a in argv[1:]):
            # recursive grep lists files in directory order, which differs between machines
            out = "".join(sorted(out.splitlines(keepends=True), key=lambda line: line.split(":", 1)[0]))
        if proc.stderr.strip():
            out += ("\n" if out and not out.endswith("\n") else "") + "[stderr]\n" + proc.stderr
        if proc.returncode != 0:
            out += ("\n" if out and not out.endswith("\n") else "") + f"[exit code {proc.returncode}]"
        return box.clean(_cap(out.rstrip("\n"), "narrow the command")) or "(no output)"

    def write_file(file_path: str, content: str) -> str:
        """Create or overwrite a file in the workspace.

        Args:
            file_path: path inside the workspace (an optional `workspace/` prefix is accepted).
            content: the full new content.
        """
        path = box.resolve_write(file_path)
        if isinstance(path, str):
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        path.write_text(content, encoding="utf-8")
        verb = "Overwrote" if existed else "Wrote"
        return f"{verb} {box.show(path)} ({len(content)} characters, {content.count(chr(10)) + 1} lines)"

    def edit_file(file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace an exact string in a workspace file.

        Args:
            file_path: path inside the workspace (an optional `workspace/` prefix is accepted).
            old_string: the exact text to replace; must occur once unless replace_all is true.
            new_string: the replacement text.
            replace_all: replace every occurrence.
        """
        path = box.resolve_write(file_path)
        if isinstance(path, str):
            return path
        if not path.exists():
            return f"Error: file not found: {file_path}"
        text = path.read_text(encoding="utf-8")
        count = text.count(old_string)
        if count == 0:
            return f"Error: old_string not found in {box.show(path)}"
        if count > 1 and not replace_all:
            return (
                f"Error: old_string occurs {count} times in {box.show(path)}; add context or set replace_all"
            )
        path.write_text(text.replace(old_string, new_string), encoding="utf-8")
        n = count if replace_all else 1
        return f"Edited {box.show(path)}: replaced {n} occurrence{'s' if n > 1 else ''} ({len(old_string)} -> {len(new_string)} characters)"

    return [
        StructuredTool.from_function(fn)
        for fn in (read_file, run_command, write_file, edit_file)  # type: ignore[arg-type]
    ]


# ---------------------------------------------------------------------------------------------
# the scripted model
# ---------------------------------------------------------------------------------------------

Plan = Generator[AIMessage, list[str], None]


# ---------------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------------

Call = tuple[str, dict[str, Any]]


class _Turns:
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
    return read(path, offset=max(1, line - before), limit=size)


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

HOOKS = ("before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call")
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

PY_VERSIONS = """import importlib.metadata as md
for name in ("langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "deepagents"):
    print(f"{name:20} {md.version(name)}")"""

PY_HOOK_SIGNATURES = """import inspect
from langchain.agents.middleware import AgentMiddleware
for name in ("before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call"):
    for fn_name in (name, "a" + name):
        fn = getattr(AgentMiddleware, fn_name, None)
        if fn is None:
            print(f"{fn_name:18} (missing)")
            continue
        kind = "async" if inspect.iscoroutinefunction(fn) else "sync"
        params = ", ".join(inspect.signature(fn).parameters)
        print(f"{fn_name:18} {kind:5} ({params})")"""

PY_OVERRIDES = """import langchain.agents.middleware as m
from langchain.agents.middleware import AgentMiddleware
hooks = ["before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call"]
short = dict(zip(hooks, ["bA", "bM", "aM", "aA", "wM", "wT"]))
for name in sorted(m.__all__):
    cls = getattr(m, name)
    if isinstance(cls, type) and issubclass(cls, AgentMiddleware) and cls is not AgentMiddleware:
        own = [short[h] for h in hooks if getattr(cls, h, None) is not getattr(AgentMiddleware, h)]
        print(f"{name:34} {' '.join(own) or '-'}")"""

PY_ORDER_EXPERIMENT = """from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
log = []
class Probe(AgentMiddleware):
    def before_model(self, state, runtime):
        log.append(f"{self.name}.before_model")
    def after_model(self, state, runtime):
        log.append(f"{self.name}.after_model")
    def wrap_model_call(self, request, handler):
        log.append(f"{self.name}.wrap_model_call enter")
        response = handler(request)
        log.append(f"{self.name}.wrap_model_call exit")
        return response
class A(Probe): pass
class B(Probe): pass
class C(Probe): pass
model = GenericFakeChatModel(messages=iter([AIMessage(content="done")]))
agent = create_agent(model, [], middleware=[A(), B(), C()])
agent.invoke({"messages": [("user", "hi")]})
print("graph nodes:", ", ".join(n for n in agent.get_graph().nodes if n not in ("__start__", "__end__")))
print("\\n".join(log))"""

PY_ASYNC_EXPERIMENT = """import asyncio
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
class SyncOnly(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request)
class Both(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request)
    async def awrap_model_call(self, request, handler):
        return await handler(request)
for mw in (SyncOnly(), Both()):
    model = GenericFakeChatModel(messages=iter([AIMessage(content="ok")]))
    agent = create_agent(model, [], middleware=[mw])
    try:
        out = asyncio.run(agent.ainvoke({"messages": [("user", "hi")]}))
        print(f"{type(mw).__name__:9} ainvoke -> {out['messages'][-1].content!r}")
    except Exception as exc:
        print(f"{type(mw).__name__:9} ainvoke -> {type(exc).__name__}: {str(exc)[:160]}")"""

PY_SYNC_ASYNC_BATCH = """import importlib
from langchain.agents.middleware import AgentMiddleware
hooks = ["before_agent", "before_model", "after_model", "after_agent", "wrap_model_call", "wrap_tool_call"]
for spec in {specs!r}:
    module, _, name = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        print(f"{{name:30}} not available ({{type(exc).__name__}})")
        continue
    cells = []
    for h in hooks:
        s = getattr(cls, h, None) is not getattr(AgentMiddleware, h)
        a = getattr(cls, "a" + h, None) is not getattr(AgentMiddleware, "a" + h)
        if s or a:
            cells.append(f"{{h}}[{{'S' if s else '-'}}{{'A' if a else '-'}}]")
    print(f"{{name:30}} {{' '.join(cells) or '(no hooks)'}}")"""

PY_SUMMARIZATION_SIGNATURES = """import inspect
from langchain.agents.middleware import SummarizationMiddleware as LC
from deepagents.middleware import SummarizationMiddleware as DA
for cls in (LC, DA):
    print(cls.__module__ + "." + cls.__name__)
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if name == "self":
            continue
        value = p.default
        if value is inspect.Parameter.empty:
            default = ""
        elif callable(value):
            default = f" = <function {getattr(value, '__name__', type(value).__name__)}>"
        else:
            default = f" = {value!r}"[:70]
        print(f"    {name}{default}")"""

PY_TRIM_EXPERIMENT = """from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
msgs = [
    SystemMessage("sys"),
    HumanMessage("question " * 20),
    AIMessage("", tool_calls=[{"name": "a", "args": {}, "id": "t1"}, {"name": "b", "args": {}, "id": "t2"}]),
    ToolMessage("result a " * 30, tool_call_id="t1"),
    ToolMessage("result b " * 30, tool_call_id="t2"),
    HumanMessage("follow-up"),
]
count = lambda ms: sum(len(m.text) // 4 + 3 for m in ms)
for max_tokens in (200, 120, 40):
    for start_on in (None, "human"):
        kw = {"start_on": start_on} if start_on else {}
        kept = trim_messages(msgs, max_tokens=max_tokens, token_counter=count, strategy="last", include_system=True, **kw)
        print(f"max={max_tokens:3} start_on={start_on!s:5} ->", [type(m).__name__.replace("Message", "") for m in kept])"""


def _plan(t: _Turns) -> Plan:
    """The whole run: four user turns, each ending with an answer without tool calls."""
    yield from _turn_survey(t)
    yield from _turn_summarization(t)
    yield from _turn_sync_async(t)
    yield from _turn_pairing(t)


def _turn_survey(t: _Turns) -> Plan:
    r = yield t.say(
        "I'll start with a map of the middleware package and the exact versions installed, so that "
        "every line reference in the report is tied to a version.",
        run(f"ls {MW}"),
        run("python -c " + shlex.quote(PY_VERSIONS)),
    )
    versions = r[1]
    r = yield t.say(
        "The package is split into one module per built-in middleware plus `types.py`, which should "
        "hold the base class and the hook definitions. Sizes first, to plan my reads.",
        run(f"wc -l {FACTORY} {TYPES} {MW}/__init__.py {LC_SUMM} {MW}/human_in_the_loop.py"),
    )
    r = yield t.say(
        "`types.py` and `factory.py` are both large. I'll list the top-level definitions of `types.py` "
        "before reading it.",
        run(f"grep -n '^class \\|^def ' {TYPES}"),
    )
    class_line = line_of(r[0], "class AgentMiddleware", 1)
    r = yield t.say(
        f"`AgentMiddleware` is defined at line {class_line}. I'll read the first part of the file, "
        "which should cover the request/response types and the start of the base class.",
        read(TYPES, offset=1, limit=420),
    )
    r = yield t.say(
        "That covers `ModelRequest` (with `override()`), `ModelResponse` and the state types. Now the "
        "hook methods themselves: one grep for every hook name, sync and async.",
        run(f"{HOOK_DEF_GREP} {TYPES}"),
    )
    hook_lines = r[0]
    for pair in (("before_agent", "before_model"), ("after_model", "after_agent")):
        r = yield t.say(
            f"Reading the `{pair[0]}` and `{pair[1]}` definitions side by side.",
            window(TYPES, line_of(hook_lines, f"def {pair[0]}(", class_line)),
            window(TYPES, line_of(hook_lines, f"def {pair[1]}(", class_line)),
        )
    for hook in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
        line = line_of(hook_lines, f"def {hook}(", class_line)
        r = yield t.say(
            f"`{hook}` is at line {line}; reading its signature and the first part of its docstring.",
            window(TYPES, line, size=16),
        )
        if hook == "awrap_model_call":
            r = yield t.say(
                "The async variant has its own default. Let me see what the default body does when a "
                "subclass only implements the sync one.",
                window(TYPES, line + 14, before=0, size=20),
            )
    r = yield t.say(
        "Let me confirm the hook surface at runtime rather than from the source alone: parameter "
        "names and whether each default is a coroutine.",
        run("python -c " + shlex.quote(PY_HOOK_SIGNATURES)),
    )
    signatures = r[0]
    r = yield t.say(
        "Now the decorator helpers (`@before_model`, `@wrap_model_call`, ...) further down the file.",
        run(f"grep -n '^def \\|can_jump_to\\|hook_config' {TYPES}"),
    )
    deco = line_of(r[0], "def before_model", 700)
    r = yield t.say(
        "Reading the decorator section, which shows how a plain function becomes a middleware class.",
        read(TYPES, offset=max(1, deco - 30), limit=420),
    )
    r = yield t.say(
        "Decorators build a subclass on the fly with the function as the hook. `hook_config` carries "
        "`can_jump_to`. Let me read `hook_config` itself.",
        window(TYPES, line_of(r[0], "def hook_config", deco), size=18),
    )
    r = yield t.say(
        "Next, which built-in middleware overrides which hook. I'll compute it instead of grepping "
        "each file: compare every class's attributes with `AgentMiddleware`'s.",
        run("python -c " + shlex.quote(PY_OVERRIDES)),
    )
    overrides = r[0]

    # --- the factory ---------------------------------------------------------------------
    r = yield t.say(
        "Now `create_agent`. Top-level functions of `factory.py` first.",
        run(f"grep -n '^def \\|^async def ' {FACTORY}"),
    )
    factory_defs = r[0]
    chain_model = line_of(factory_defs, "_chain_model_call_handlers", 100)
    chain_tool = line_of(factory_defs, "_chain_tool_call_wrappers", 200)
    create = line_of(factory_defs, "def create_agent", 600)
    r = yield t.say(
        f"`_chain_model_call_handlers` (line {chain_model}) is what composes `wrap_model_call`. "
        "Reading the helpers at the top of the file in one go.",
        read(FACTORY, offset=1, limit=480),
    )
    r = yield t.say(
        "The composition is a right fold: the first middleware in the list becomes the outermost "
        "wrapper. Reading the tool-call chaining as well.",
        window(FACTORY, chain_tool, size=18),
    )
    r = yield t.say(
        "Both chains fold the same way. Now the body of `create_agent` where nodes and edges are added.",
        run(f"grep -n 'add_node\\|add_conditional_edges\\|add_edge' {FACTORY}"),
    )
    edges = r[0]
    first_node = line_of(edges, "add_node", create)
    r = yield t.say(
        f"The graph is assembled from line {first_node} onwards. Reading the main part of "
        "`create_agent`, from the middleware bookkeeping to the node wiring.",
        read(FACTORY, offset=max(create, first_node - 260), limit=460),
    )
    r = yield t.say(
        "Let me read the rest of the wiring, where the before/after nodes are chained and the jump "
        "destinations are resolved.",
        read(FACTORY, offset=first_node + 200, limit=420),
    )
    r = yield t.say(
        "I want the exact spot where `after_model` nodes are chained in reverse order.",
        run(f"grep -n 'reversed\\|after_model_node\\|after_agent_node' {FACTORY}"),
    )
    rev = line_of(r[0], "reversed", first_node)
    r = yield t.say(
        f"`reversed(...)` at line {rev}. Reading the lines around it.",
        window(FACTORY, rev, before=4, size=16),
    )
    r = yield t.say(
        "And the conditional edges that implement `jump_to` (`model`, `tools`, `end`).",
        run(f"grep -n '_make_model_to_tools_edge\\|_make_tools_to_model_edge\\|jump_to' {FACTORY}"),
    )
    jump = line_of(r[0], "def _resolve_jump", line_of(r[0], "jump_to", first_node))
    r = yield t.say(
        "Reading the jump resolution helper.",
        window(FACTORY, jump, size=18),
    )
    r = yield t.say(
        "Reading the model-to-tools edge, which decides whether tool calls are sent to the tool node.",
        window(FACTORY, line_of(r[0] + "\n" + edges, "def _make_model_to_tools_edge", jump), size=18),
    )
    r = yield t.say(
        "Tool calls are dispatched one `Send` per call, which is how parallel tool calls run as "
        "separate tasks. Let me confirm the exact line.",
        run(f"grep -n 'Send(' {FACTORY}"),
    )
    send = line_of(r[0], "Send(", jump)
    r = yield t.say(
        "Reading around the `Send` dispatch.",
        window(FACTORY, send, before=8, size=14),
    )
    r = yield t.say(
        "The static picture is clear. Now an experiment to pin the runtime order: three probe "
        "middlewares, each logging `before_model`, `after_model` and entering/leaving "
        "`wrap_model_call`, on an agent with a fake model.",
        run("python -c " + shlex.quote(PY_ORDER_EXPERIMENT)),
    )
    order = r[0]
    r = yield t.say(
        "Confirmed: `before_model` runs A→B→C, `wrap_model_call` nests A(B(C(model))), and "
        "`after_model` runs C→B→A. I'll write my first notes file before moving on to the built-in "
        "middleware.",
        write(
            f"{NOTES}/01_hooks_and_factory.md",
            _notes_hooks(versions, signatures, hook_lines, factory_defs, order, overrides),
        ),
    )

    # --- the built-in middleware, one module at a time ------------------------------------
    hook_table: dict[str, list[str]] = {}
    for i in range(0, len(LC_MODULES), 2):
        pair = LC_MODULES[i : i + 2]
        r = yield t.say(
            f"Built-in middleware, batch {i // 2 + 1} of {len(LC_MODULES) // 2}: `{pair[0]}` and "
            f"`{pair[1]}`. Class and hook definitions first, for both at once.",
            *(run(f"{HOOK_GREP} {MW}/{mod}.py") for mod in pair),
        )
        outs = dict(zip(pair, r, strict=True))
        for mod in pair:
            hook_table[mod] = grep_hits(outs[mod], limit=10)
            class_line = line_of(outs[mod], "class ", 1)
            defs = lines_of(outs[mod], "def ") or [class_line]
            hooks = ", ".join(f"`{h}`" for h in hook_names(outs[mod])) or "no hook methods"
            r = yield t.say(
                f"`{mod}.py` defines {hooks}; the class starts at line {class_line}. Reading its header "
                "and constructor arguments to see what it is configured with.",
                window(f"{MW}/{mod}.py", class_line, before=0, size=20),
            )
            r = yield t.say(
                f"From the header: {observe(r[0])}. The first hook is at line {defs[0]}; reading how it "
                "is implemented.",
                window(f"{MW}/{mod}.py", defs[0], size=20),
            )
            if mod in LC_LARGE:
                r = yield t.say(
                    f"The hook body ({observe(r[0], 2)}) delegates to helpers further down, and "
                    f"`{mod}.py` is one of the more involved middlewares, so I'll read it in full (the "
                    "tool caps the output; that's fine for an overview).",
                    read(f"{MW}/{mod}.py"),
                )
    r = yield t.say(
        "I have the hook inventory of the built-in middleware. Writing it down with line references.",
        write(f"{NOTES}/02_builtin_middleware.md", _notes_builtins(hook_table)),
    )

    # --- DeepAgents -----------------------------------------------------------------------
    r = yield t.say(
        "Now DeepAgents. The middleware stack is assembled in `create_deep_agent`; first the list of "
        "middleware modules and where each middleware is instantiated in `graph.py`.",
        run(f"ls {DA}"),
        run("grep -n 'def create_deep_agent\\|Middleware(' deepagents/graph.py"),
    )
    stack = r[1]
    cda = line_of(stack, "def create_deep_agent", 1)
    main_stack = line_of(stack, "SubAgentMiddleware(", cda)
    r = yield t.say(
        f"`create_deep_agent` starts at line {cda}; the main stack is built around line {main_stack}. "
        "Reading the main agent's stack assembly in full.",
        read("deepagents/graph.py", offset=max(cda, main_stack - 120), limit=330),
    )
    r = yield t.say(
        "And the start of `create_deep_agent` with its docstring, to see which arguments feed the stack.",
        read("deepagents/graph.py", offset=cda, limit=260),
    )
    da_table: dict[str, list[str]] = {}
    for i in range(0, len(DA_MODULES), 3):
        group = DA_MODULES[i : i + 3]
        r = yield t.say(
            "DeepAgents middleware modules: " + ", ".join(f"`{g}`" for g in group) + ". Hook "
            "definitions first, in parallel.",
            *(run(f"{HOOK_GREP} {DA}/{mod}.py") for mod in group),
        )
        outs = dict(zip(group, r, strict=True))
        for mod in group:
            da_table[mod] = grep_hits(outs[mod], limit=10)
            class_line = line_of(outs[mod], "Middleware(", line_of(outs[mod], "class ", 1))
            defs = lines_of(outs[mod], "def ") or [class_line]
            hooks = ", ".join(f"`{h}`" for h in hook_names(outs[mod])) or "no hook methods"
            r = yield t.say(
                f"`{mod}.py` implements {hooks}. Reading the middleware class header (line "
                f"{class_line}) for its state schema and tools.",
                window(f"{DA}/{mod}.py", class_line, before=0, size=16),
            )
            yield t.say(
                f"Noted {observe(r[0])}. Now its first hook (line {defs[0]}).",
                window(f"{DA}/{mod}.py", defs[0], size=16),
            )
    r = yield t.say(
        "`PatchToolCallsMiddleware` is short and directly relevant to message pairing; reading it whole.",
        read(f"{DA}/patch_tool_calls.py"),
    )
    r = yield t.say(
        "The filesystem middleware is the biggest module. Its tools and the large-result eviction "
        "live there; reading the tool-call wrapper region.",
        run(
            f"grep -n 'def wrap_tool_call\\|def awrap_tool_call\\|def _intercept_large_tool_result\\|tool_token_limit_before_evict' {DA}/filesystem.py"
        ),
    )
    evict = line_of(r[0], "def _intercept_large_tool_result", line_of(r[0], "wrap_tool_call", 1))
    r = yield t.say(
        "Reading the large-result interception code in full.",
        read(f"{DA}/filesystem.py", offset=max(1, evict - 40), limit=360),
    )
    r = yield t.say(
        "Now `SubAgentMiddleware`: how a `task` tool call becomes a nested agent run.",
        read(f"{DA}/subagents.py", offset=1, limit=380),
    )
    r = yield t.say(
        "Where is the sub-agent's result turned into a ToolMessage for the parent?",
        run(f"grep -n 'ToolMessage(\\|Command(' {DA}/subagents.py"),
    )
    r = yield t.say(
        "Reading that spot.",
        window(f"{DA}/subagents.py", line_of(r[0], "ToolMessage(", 1), before=10, size=16),
    )

    # --- LangGraph ------------------------------------------------------------------------
    r = yield t.say(
        "Last piece of the survey: LangGraph's side. `wrap_tool_call` is executed by `ToolNode`, so "
        "let me find where it is invoked there.",
        run(f"grep -n 'wrap_tool_call\\|awrap_tool_call\\|tool_call_wrapper' {TOOL_NODE}"),
    )
    tn = line_of(r[0], "wrap_tool_call", 1)
    r = yield t.say(
        f"The wrapper is consulted around line {tn}. Reading the `ToolNode` execution path in full.",
        read(TOOL_NODE, offset=max(1, tn - 200), limit=440),
    )
    r = yield t.say(
        "And how `StateGraph.add_node` records input schemas, which is why middleware `state_schema`s "
        "merge into one graph state.",
        run(f"grep -n 'def add_node\\|def compile\\|_add_schema' {STATE_GRAPH}"),
    )
    r = yield t.say(
        "Reading `_add_schema` and the start of `add_node`.",
        window(STATE_GRAPH, line_of(r[0], "def _add_schema", 1), size=16),
        window(STATE_GRAPH, line_of(r[0], "def add_node", 1), size=12),
    )
    r = yield t.say(
        "Checking that my notes are in place before writing the report.",
        run("ls workspace/notes workspace/report"),
    )
    r = yield t.say(
        "Writing the first version of the report.",
        write(REPORT, _report_v1(versions, order, overrides, hook_table, da_table)),
    )
    r = yield t.say(
        "Reading back the top of the report to check the formatting.",
        read(f"{WORKSPACE}/{REPORT}", offset=1, limit=24),
    )
    r = yield t.say(
        "The ordering section should say explicitly that the experiment output is verbatim. Small fix.",
        edit(REPORT, "## 3. Ordering", "## 3. Ordering (verified by experiment, output verbatim)"),
    )
    r = yield t.say(
        "I'll add a section on the DeepAgents stack order, which the first draft only mentioned in passing.",
        edit(REPORT, "## 5. Open questions", _deepagents_stack_section(stack) + "\n## 5. Open questions"),
    )
    r = yield t.say(
        "Final check of the report size.",
        run(
            f"wc -l -c workspace/{REPORT} workspace/{NOTES}/01_hooks_and_factory.md workspace/{NOTES}/02_builtin_middleware.md"
        ),
    )
    yield t.say(
        f"The report is in `{REPORT}`. Summary:\n\n"
        "- **Six hook kinds**: node-style `before_agent`, `before_model`, `after_model`, "
        "`after_agent` (return a state update or `None`; may jump with `can_jump_to`), and "
        "wrap-style `wrap_model_call` / `wrap_tool_call` (an onion around the call, `handler` is the "
        "rest of the chain). Each has an `a`-prefixed async twin.\n"
        "- **Ordering** (verified by experiment): `before_*` run in list order, `after_*` in reverse, "
        "and the first middleware's `wrap_model_call` is the outermost layer.\n"
        "- **Wiring**: `create_agent` adds one graph node per node-style hook, chains them, and folds "
        "the wrap hooks into the model node and the `ToolNode`; tool calls are dispatched with one "
        "`Send` per call.\n"
        "- **DeepAgents** builds a fixed stack (todo list, filesystem, sub-agents, summarization, "
        "prompt caching, tool-call patching, ...) and passes it to `create_agent` unchanged; user "
        "middleware goes after the built-ins.\n\n"
        "Notes with the raw inventories are in `notes/`."
    )


def _turn_summarization(t: _Turns) -> Plan:
    r = yield t.say(
        "I'll read both summarization middlewares. Sizes and the signatures of both constructors first.",
        run(f"wc -l -c {LC_SUMM} {DA_SUMM}"),
        run("python -c " + shlex.quote(PY_SUMMARIZATION_SIGNATURES)),
    )
    signatures = r[1]
    r = yield t.say(
        "LangChain's version: where the trigger is evaluated and where the cutoff is chosen.",
        run(f"grep -n 'def \\|trigger\\|keep' {LC_SUMM}"),
    )
    lc_defs = r[0]
    r = yield t.say(
        "Reading LangChain's `SummarizationMiddleware` in full; it is under the tool's output cap.",
        read(LC_SUMM),
    )
    for needle in (
        "def _should_summarize",
        "def _determine_cutoff_index",
        "def _partition_messages",
        "def before_model",
    ):
        line = line_of(lc_defs, needle, 1)
        r = yield t.say(
            f"Zooming in on `{needle[4:]}` (line {line}) to quote it precisely.",
            window(LC_SUMM, line, size=16),
        )
    r = yield t.say(
        "Now DeepAgents' version, which is more than twice as long. Its definitions first.",
        run(f"grep -n '^class \\|^def \\|    def ' {DA_SUMM}"),
    )
    da_defs = r[0]
    r = yield t.say(
        "Reading the first part of the DeepAgents module (settings, defaults, state).",
        read(DA_SUMM, offset=1, limit=520),
    )
    middle = line_of(da_defs, "def wrap_model_call", 900)
    r = yield t.say(
        f"`wrap_model_call` is at line {middle}: unlike LangChain's, DeepAgents summarizes inside the "
        "model call rather than in `before_model`. Reading the part before it.",
        read(DA_SUMM, offset=max(1, middle - 520), limit=520),
    )
    r = yield t.say(
        "And the model-call hooks themselves.",
        read(DA_SUMM, offset=max(1, middle - 10), limit=480),
    )
    r = yield t.say(
        "The offloading is the part that matters most for us. Where is the history written, and what "
        "path does it use?",
        run(
            f"grep -n 'history_path_prefix\\|conversation_history\\|def _offload\\|backend.write\\|awrite' {DA_SUMM}"
        ),
    )
    off = r[0]
    for needle in ("conversation_history", "def _offload", "backend.write", "awrite"):
        line = line_of(off, needle, 1)
        r = yield t.say(
            f"Reading the lines around `{needle}` (line {line}).",
            window(DA_SUMM, line, before=4, size=14),
        )
    r = yield t.say(
        'The trigger: DeepAgents accepts the same `("tokens", n)` / `("fraction", f)` / '
        '`("messages", n)` tuples. Let me find the defaults it computes from the model profile.',
        run(
            f"grep -n 'fraction\\|max_input_tokens\\|_compute_summarization_defaults\\|def _get_profile' {DA_SUMM}"
        ),
    )
    prof = r[0]
    r = yield t.say(
        "Reading the profile-based defaults.",
        window(
            DA_SUMM,
            line_of(prof, "def _compute_summarization_defaults", line_of(prof, "max_input_tokens", 1)),
            size=18,
        ),
    )
    r = yield t.say(
        "And the argument truncation (DeepAgents' counterpart of ARS L1 for `write_file`/`edit_file`).",
        run(f"grep -n 'truncate_args\\|max_length\\|def _truncate' {DA_SUMM}"),
    )
    for needle in ("def _truncate", "truncate_args", "max_length"):
        yield t.say(
            f"Reading the `{needle}` lines.",
            window(DA_SUMM, line_of(r[0], needle, 1), size=14),
        )
    r = yield t.say(
        "How does DeepAgents mark an offloaded result so that it is not offloaded twice? Searching "
        "across the middleware package.",
        run(f"grep -rn 'already\\|_evicted\\|offloaded' {DA}"),
    )
    r = yield t.say(
        "Quick check of the summary message format: is it a HumanMessage or a SystemMessage, and is it "
        "tagged?",
        run(f"grep -n 'HumanMessage(\\|lc_source\\|SUMMARY_PREFIX\\|additional_kwargs' {DA_SUMM}"),
    )
    yield t.say(
        "Reading where the summary message is built.",
        window(DA_SUMM, line_of(r[0], "HumanMessage(", 1), before=6, size=14),
    )
    r = yield t.say(
        "I have what I need. Adding the comparison section to the report.",
        edit(
            REPORT,
            "## 5. Open questions",
            _summarization_section(signatures, lc_defs, da_defs) + "\n## 5. Open questions",
        ),
    )
    r = yield t.say(
        "Checking the section landed where intended.",
        run(f"grep -n '^## ' workspace/{REPORT}"),
    )
    yield t.say(
        "Added section 5, *Summarization: LangChain vs DeepAgents*. In short:\n\n"
        "- **LangChain** summarizes in `before_model`: when the trigger fires (tokens, fraction of the "
        "profile's window, or message count) it picks a cutoff that keeps the last `keep` messages, "
        "replaces everything before with one summary message (`RemoveMessage(REMOVE_ALL_MESSAGES)` + "
        "summary + kept tail) and **rewrites state**. Nothing is offloaded.\n"
        "- **DeepAgents** summarizes inside `wrap_model_call`, keeps the full history in state, records "
        "a `_summarization_event` (cutoff index + summary), **offloads the evicted messages to a "
        "backend file** under `/conversation_history/`, and truncates old `write_file`/`edit_file` "
        "arguments first, which is very close to ARS's L1/L2 split.\n"
        "- Both derive defaults from the model profile's `max_input_tokens` when one is available."
    )


def _turn_sync_async(t: _Turns) -> Plan:
    lc_specs = [f"langchain.agents.middleware:{name}" for name in _LC_CLASSES]
    da_specs = [f"deepagents.middleware:{name}" for name in _DA_CLASSES]
    specs = lc_specs + da_specs
    rows: list[str] = []
    for i in range(0, len(specs), 4):
        batch = specs[i : i + 4]
        r = yield t.say(
            f"Computing sync (S) / async (A) overrides for classes {i + 1}–{i + len(batch)} of {len(specs)}.",
            run("python -c " + shlex.quote(PY_SYNC_ASYNC_BATCH.format(specs=batch))),
        )
        rows.extend(line for line in r[0].splitlines() if line.strip())
    r = yield t.say(
        "Now the key question: what does the agent do under `ainvoke` when a middleware only has a "
        "sync `wrap_model_call`? An experiment with a sync-only and a dual middleware.",
        run("python -c " + shlex.quote(PY_ASYNC_EXPERIMENT)),
    )
    experiment = r[0]
    r = yield t.say(
        "Let me find the code path in the factory that produces that behaviour.",
        run(f"grep -n 'awrap_model_call\\|NotImplementedError\\|is not AgentMiddleware' {FACTORY}"),
    )
    line = line_of(r[0], "awrap_model_call", 1)
    r = yield t.say(
        f"Reading around line {line}.",
        window(FACTORY, line, before=6, size=18),
    )
    r = yield t.say(
        "And the base class's default `awrap_model_call`, to see whether it delegates to the sync one.",
        run(
            f"grep -n 'async def awrap_model_call\\|async def awrap_tool_call\\|async def abefore_model' {TYPES}"
        ),
    )
    for needle in ("async def awrap_model_call", "async def awrap_tool_call"):
        yield t.say(
            f"Reading the default `{needle[10:]}` body.",
            window(TYPES, line_of(r[0], needle, 1), before=0, size=18),
        )
    for folder, modules, size in ((MW, LC_MODULES, 2), (DA, DA_MODULES, 3)):
        for i in range(0, len(modules), size):
            group = modules[i : i + size]
            r = yield t.say(
                "Cross-checking the computed table against the source: async definitions in "
                + " and ".join(f"`{m}`" for m in group)
                + ".",
                *(run(f"grep -n 'async def a' {folder}/{mod}.py") for mod in group),
            )
            outs = dict(zip(group, r, strict=True))
            for mod in group:
                found = lines_of(outs[mod], "async def a")
                if found:
                    text = (
                        f"`{mod}.py` has {len(found)} async definition(s), the first at line {found[0]}. "
                        "Reading it to see whether it shares code with the sync hook or re-implements it."
                    )
                else:
                    found = [1]
                    text = (
                        f"`{mod}.py` has no async definitions at all, so every hook it has runs through the "
                        "base class's async defaults. Reading the module header to confirm what it imports."
                    )
                yield t.say(
                    text, window(f"{folder}/{mod}.py", found[0], before=1, size=20 if folder == MW else 16)
                )
    r = yield t.say(
        "Cross-check from the source: number of async hook definitions per LangChain module.",
        run(f"grep -c 'async def a' {MW}/*.py"),
    )
    r = yield t.say(
        "And the same for DeepAgents.",
        run(f"grep -c 'async def a' {DA}/*.py"),
    )
    r = yield t.say(
        "Two of the DeepAgents middlewares implement only some async hooks; checking which by name.",
        run(
            f"grep -n 'async def a\\(before\\|after\\|wrap\\)' {DA}/memory.py {DA}/skills.py {DA}/subagents.py"
        ),
    )
    r = yield t.say(
        "Adding the sync/async table to the report.",
        edit(
            REPORT, "## 5. Open questions", _sync_async_section(rows, experiment) + "\n## 5. Open questions"
        ),
    )
    r = yield t.say(
        "Verifying the table renders as intended (first rows).",
        run(f"grep -n -A 6 'Sync and async' workspace/{REPORT}"),
    )
    yield t.say(
        "Added section 6 with a table of every built-in middleware in both packages, sync (S) vs "
        "async (A) per hook.\n\n"
        "- Node-style hooks (`before_*`/`after_*`) without an async twin are **run in a thread** under "
        "`ainvoke`; that works, but blocks nothing and costs a thread hop.\n"
        "- A wrap-style hook **without** an async twin is the risky case: see the experiment output "
        "in the report for what the installed version does.\n"
        "- For our compression middleware: implement both `wrap_model_call` and `awrap_model_call` "
        "(sharing one pure compression function), and run the summarizer with `ainvoke` on the async "
        "path."
    )


_LC_CLASSES = (
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
_DA_CLASSES = (
    "FilesystemMiddleware",
    "MemoryMiddleware",
    "SkillsMiddleware",
    "SubAgentMiddleware",
    "AsyncSubAgentMiddleware",
    "SummarizationMiddleware",
    "UnsupportedContentMiddleware",
    "RubricMiddleware",
)


def _turn_pairing(t: _Turns) -> Plan:
    r = yield t.say(
        "Where do the middlewares reason about tool-call/result pairs? Searching both packages for "
        "the usual helpers.",
        run(f"grep -rn 'tool_call_id' {LC_SUMM} {DA_SUMM} {DA}/patch_tool_calls.py"),
        run(f"grep -n 'def _find_safe_cutoff\\|def _is_safe_cutoff\\|def _cutoff\\|safe' {LC_SUMM}"),
    )
    hits = r[0]
    safe = r[1]
    for needle in ("def _find_safe_cutoff", "def _is_safe_cutoff", "safe"):
        yield t.say(
            f"Reading LangChain's `{needle.replace('def ', '')}` logic.",
            window(LC_SUMM, line_of(safe, needle, 1), size=18),
        )
    r = yield t.say(
        "DeepAgents' equivalent.",
        run(f"grep -n 'safe\\|AIMessage\\|ToolMessage' {DA_SUMM}"),
    )
    da_safe = r[0]
    for needle in ("safe", "ToolMessage", "AIMessage"):
        yield t.say(
            f"Reading DeepAgents' summarization around `{needle}`.",
            window(DA_SUMM, line_of(da_safe, needle, 1), before=4, size=16),
        )
    r = yield t.say(
        "`trim_messages` in langchain_core is what many users reach for instead; reading its "
        "implementation of the `last` strategy.",
        run(
            f"grep -n 'def trim_messages\\|def _last_max_tokens\\|def _first_max_tokens\\|start_on\\|end_on' {MSG_UTILS}"
        ),
    )
    tm = line_of(r[0], "def _last_max_tokens", line_of(r[0], "def trim_messages", 1))
    r = yield t.say(
        "Reading the `last`-strategy helper and its neighbourhood in full.",
        read(MSG_UTILS, offset=max(1, tm - 250), limit=420),
    )
    r = yield t.say(
        "An experiment: does `trim_messages` keep an AIMessage with two tool calls together with "
        "both ToolMessages at different budgets?",
        run("python -c " + shlex.quote(PY_TRIM_EXPERIMENT)),
    )
    trim = r[0]
    r = yield t.say(
        "And `PatchToolCallsMiddleware`'s role: it repairs dangling tool calls (calls without a "
        "result) before the model sees them. Where is it applied?",
        run(f"grep -n 'def before_agent\\|def wrap_model_call\\|ToolMessage(' {DA}/patch_tool_calls.py"),
    )
    r = yield t.say(
        "Writing the pairing section.",
        edit(REPORT, "## 5. Open questions", _pairing_section(hits, trim) + "\n## 5. Open questions"),
    )
    r = yield t.say(
        "Reading the whole report once more before summarizing it.",
        read(f"{WORKSPACE}/{REPORT}"),
    )
    r = yield t.say(
        "Renumbering: the open-questions section should come last with its own number.",
        edit(REPORT, "## 5. Open questions", "## 9. Open questions"),
    )
    r = yield t.say(
        "Final size of the deliverables.",
        run(
            "wc -c workspace/report/middleware_survey.md workspace/notes/01_hooks_and_factory.md workspace/notes/02_builtin_middleware.md"
        ),
    )
    yield t.say(
        "Added section 7 on tool-call/result pairing. Summary of the whole report "
        f"(`{REPORT}`):\n\n"
        "1. **Hooks**: four node-style hooks and two wrap-style hooks, each with an async twin; "
        "decorators build middleware classes from functions.\n"
        "2. **Wiring and order**: `before_*` in list order, `after_*` reversed, first middleware "
        "outermost around the model and tool calls; jumps via `can_jump_to`.\n"
        "3. **Built-ins**: an inventory of which middleware uses which hook, with line references.\n"
        "4. **DeepAgents**: its fixed stack, the filesystem middleware's large-result eviction, "
        "sub-agents as a `task` tool.\n"
        "5. **Summarization**: LangChain rewrites state in `before_model`; DeepAgents keeps state, "
        "records an event and offloads history to files, after truncating old file-tool arguments.\n"
        "6. **Sync/async**: a table per hook; implement both variants of wrap-style hooks.\n"
        "7. **Pairing**: both summarizers move the cutoff so that an AIMessage and all its "
        "ToolMessages fall on the same side; `trim_messages` only guarantees it with `start_on`/"
        "`end_on`; DeepAgents patches dangling calls.\n\n"
        "For our middleware the DeepAgents design is the closer model: keep state, offload, record "
        "an event, and choose cutoffs over whole call/result groups."
    )


# --- write_file / edit_file contents built from what the tools returned -------------------------


def _block(text: str) -> str:
    return "```\n" + text.strip("\n") + "\n```"


def _notes_hooks(
    versions: str, signatures: str, hook_lines: str, factory_defs: str, order: str, overrides: str
) -> str:
    factory = "\n".join(f"- `factory.py:{h}`" for h in grep_hits(factory_defs, limit=40))
    return f"""# Notes 1: hooks and the agent factory

## Versions
{_block(versions)}

## Hook methods on `AgentMiddleware` (`{TYPES}`)
{_block(hook_lines)}

Runtime view (parameter names; sync/async):
{_block(signatures)}

Two families:
- node-style: `before_agent`, `before_model`, `after_model`, `after_agent`. Each becomes its own
  graph node named `<MiddlewareName>.<hook>`; it receives `(state, runtime)` and returns a state
  update dict or `None`. A hook decorated with `hook_config(can_jump_to=[...])` may return
  `{{"jump_to": "model" | "tools" | "end"}}`.
- wrap-style: `wrap_model_call(request, handler)` and `wrap_tool_call(request, handler)`. They do
  not become nodes: the factory folds them into one callable around the model call (in the model
  node) and around each tool call (in `ToolNode`). `handler` is the rest of the chain; calling it
  zero times short-circuits, calling it twice retries.

## `factory.py` top-level definitions
{factory}

## Built-in overrides (bA before_agent, bM before_model, aM after_model, aA after_agent,
## wM wrap_model_call, wT wrap_tool_call)
{_block(overrides)}

## Order experiment (three probe middlewares A, B, C)
{_block(order)}
"""


def _notes_builtins(table: dict[str, list[str]]) -> str:
    parts = ["# Notes 2: built-in LangChain middleware, hook by hook\n"]
    for mod, hits in table.items():
        parts.append(f"## `{MW}/{mod}.py`")
        parts.extend(f"- line {h}" for h in hits) if hits else parts.append("- (no hooks found)")
        parts.append("")
    return "\n".join(parts)


def _report_v1(
    versions: str, order: str, overrides: str, lc: dict[str, list[str]], da: dict[str, list[str]]
) -> str:
    lc_rows = "\n".join(
        f"| `{mod}` | {'; '.join(h.split(': ', 1)[1][:60] for h in hits if ' def ' in ' ' + h) or '-'} |"
        for mod, hits in lc.items()
    )
    da_rows = "\n".join(
        f"| `{mod}` | {'; '.join(h.split(': ', 1)[1][:60] for h in hits if ' def ' in ' ' + h) or '-'} |"
        for mod, hits in da.items()
    )
    return f"""# How LangChain v1 agent middleware works

Survey of the installed packages:
{_block(versions)}

## 1. The hook surface

`AgentMiddleware` (`{TYPES}`) defines six hooks, each with an async twin prefixed `a`:

| hook | style | receives | returns |
|---|---|---|---|
| `before_agent` | node | `(state, runtime)` | state update or `None` |
| `before_model` | node | `(state, runtime)` | state update or `None`, may `jump_to` |
| `after_model` | node | `(state, runtime)` | state update or `None`, may `jump_to` |
| `after_agent` | node | `(state, runtime)` | state update or `None` |
| `wrap_model_call` | wrap | `(request: ModelRequest, handler)` | `ModelResponse` / `AIMessage` / `ExtendedModelResponse` |
| `wrap_tool_call` | wrap | `(request: ToolCallRequest, handler)` | `ToolMessage` or `Command` |

`ModelRequest.override(messages=..., system_message=..., tools=...)` returns a modified copy, so a
wrap-style hook can change what the model sees **without** touching graph state. To change state
from a wrap-style hook, return `ExtendedModelResponse(model_response, command=Command(update=...))`.

Node-style hooks can also be written as functions with the decorators `@before_model`,
`@after_model`, ... which build a middleware class around the function; `@hook_config(can_jump_to=
[...])` declares the jump destinations, which the factory turns into conditional edges.

## 2. How `create_agent` wires them (`{FACTORY}`)

- every node-style hook becomes a node `<Name>.<hook>`; before-nodes are chained in list order in
  front of the model node, after-nodes in reverse order behind it;
- `wrap_model_call` hooks are folded into one handler by `_chain_model_call_handlers`: the first
  middleware in the list is the outermost layer; the same for `wrap_tool_call`, executed inside
  `ToolNode`;
- the model-to-tools edge sends one `Send("tools", ...)` per pending tool call, so parallel tool
  calls run as separate tasks and their ToolMessages are appended in task order;
- middleware `state_schema`s are merged into the graph state, so private keys (for example a
  summarization event) live in the checkpoint.

## 3. Ordering

{_block(order)}

So for middleware `[A, B, C]`: `A.before_model → B.before_model → C.before_model →
A.wrap(B.wrap(C.wrap(model))) → C.after_model → B.after_model → A.after_model`.

## 4. Built-in middleware inventory

Which hooks each built-in overrides (computed by comparing with `AgentMiddleware`):
{_block(overrides)}

Hook definitions per LangChain module (line: definition):

| module | hooks |
|---|---|
{lc_rows}

DeepAgents modules (`{DA}`):

| module | hooks |
|---|---|
{da_rows}

## 5. Open questions

- Does any built-in middleware depend on running before or after another one (beyond its position
  in the list)?
- How do wrap-style hooks behave when the handler raises a context-overflow error?
"""


def _deepagents_stack_section(stack: str) -> str:
    hits = "\n".join(f"- `graph.py:{h}`" for h in grep_hits(stack, limit=30))
    return f"""## 4b. The DeepAgents stack

`create_deep_agent` builds the list below (general-purpose sub-agent stack first, then the main
agent's) and passes it to `langchain.agents.create_agent` unchanged; user-supplied middleware is
appended after the built-ins, and a middleware whose `.name` equals a built-in's replaces it.

{hits}

Consequences for a compression middleware:
- it sits inside DeepAgents' own stack, so it sees the request **after** the filesystem and
  sub-agent middleware have added their tools and system-prompt sections, which counts against
  the context budget;
- DeepAgents already ships a `SummarizationMiddleware`; to replace it, our class must be named
  `SummarizationMiddleware` (a different name would run both);
- the filesystem middleware evicts large tool results to the backend on its own
  (`tool_token_limit_before_evict`), so a second offloading layer must recognise already-evicted
  content and not write it twice.
"""


def _summarization_section(signatures: str, lc_defs: str, da_defs: str) -> str:
    lc = "\n".join(f"- `summarization.py:{h}`" for h in grep_hits(lc_defs, limit=24))
    da = "\n".join(f"- `deepagents/.../summarization.py:{h}`" for h in grep_hits(da_defs, limit=24))
    return f"""## 5. Summarization: LangChain vs DeepAgents

Constructors (from `inspect.signature`):
{_block(signatures)}

| | LangChain `SummarizationMiddleware` | DeepAgents `SummarizationMiddleware` |
|---|---|---|
| hook | `before_model` (node) | `wrap_model_call` (wrap) |
| trigger | `("tokens", n)`, `("fraction", f)` of the profile window, `("messages", n)`; any of a list | same tuple forms; defaults from the model profile |
| kept | `keep=("messages", 20)` by default, cutoff moved to a safe point | `keep` tuple; cutoff moved to a safe point |
| state | **rewritten**: remove-all + summary + kept messages | **kept**: a `_summarization_event` records cutoff + summary |
| offload | none | evicted messages appended to a markdown file under `/conversation_history/` in the backend |
| arguments | untouched | old `write_file`/`edit_file` arguments truncated before summarizing |
| summary message | `HumanMessage` with a fixed prefix | `HumanMessage` marked as a summary, with the history path |

Definitions in LangChain's module:
{lc}

Definitions in DeepAgents' module:
{da}

Take-aways for ARS: DeepAgents' "keep state, record an event, rebuild the effective messages on
every call" is the design to follow; it makes compression a pure function of (state, event) and
keeps the checkpoint complete. LangChain's rewrite loses the originals and is not reversible.
"""


def _sync_async_section(rows: list[str], experiment: str) -> str:
    table = "\n".join(
        f"| `{r.split()[0]}` | {' '.join(r.split()[1:]).replace('[', ' `').replace(']', '`')} |"
        for r in rows
        if r.split()
    )
    return f"""## 6. Sync and async

S = sync hook overridden, A = async twin overridden, `-` = inherited default.
LangChain classes first, then DeepAgents.

| class | hooks |
|---|---|
{table}

What happens under `ainvoke` (experiment: a middleware with only a sync `wrap_model_call`, and one
with both):
{_block(experiment)}

Rules that follow:
- node-style hooks without an async twin are run in a worker thread on the async path;
- a wrap-style hook needs its async twin for `ainvoke`/`astream` (see the experiment above);
- the compression middleware must implement `wrap_model_call` **and** `awrap_model_call`, sharing
  one pure "compression round" function, and call the summarizer with `ainvoke` on the async path
  (history write and summary can then run concurrently with `asyncio.gather`).
"""


def _pairing_section(hits: str, trim: str) -> str:
    refs = "\n".join(f"- `{h}`" for h in hits.splitlines()[:24])
    return f"""## 7. Keeping tool calls and results together

A provider rejects a request where a ToolMessage has no preceding AIMessage with a matching tool
call, and most reject an AIMessage whose tool calls are not all answered. Every cutoff or trim must
therefore treat "an AIMessage with tool calls + all its ToolMessages" as one unit.

- **LangChain `SummarizationMiddleware`** searches for a safe cutoff: if the tentative cutoff falls
  on a ToolMessage, it moves back to the AIMessage that issued the call (so the whole group is kept),
  and it checks every tool-call id of that AIMessage.
- **DeepAgents `SummarizationMiddleware`** applies the same rule over the effective messages and
  never separates a parallel group; the offloaded history contains whole groups.
- **`PatchToolCallsMiddleware`** (DeepAgents) repairs the other failure: an AIMessage whose tool
  call never got a result (for example after an interrupt) gets a synthetic ToolMessage saying the
  call was cancelled.
- **`trim_messages`** (langchain_core) does *not* reason about groups by itself; only
  `start_on="human"` (or `end_on`) keeps it from starting on an orphan ToolMessage:

{_block(trim)}

References (`tool_call_id` in the summarizers and the patcher):
{refs}

For ARS: group messages into units (AIMessage + its results, including results that arrive out of
order or interleave with another AIMessage's) before choosing any cutoff, and test the rule with
generated histories rather than a few examples.
"""


# ---------------------------------------------------------------------------------------------
# recording
# ---------------------------------------------------------------------------------------------


def _content_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return message.text


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat-completions messages (text content only)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": _content_text(m)})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": _content_text(m)})
        elif isinstance(m, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": _content_text(m)}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": tc["id"],
                        "type": "function",
                        "function": {
                            "name": tc["name"],
                            "arguments": json.dumps(tc["args"], ensure_ascii=False),
                        },
                    }
                    for tc in m.tool_calls
                ]
            out.append(entry)
        elif isinstance(m, ToolMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": m.tool_call_id,
                    "name": m.name or "",
                    "content": _content_text(m),
                }
            )
        else:  # pragma: no cover - the agent produces only the four kinds above
            raise TypeError(f"unexpected message type {type(m).__name__}")
    return out


def _versions() -> dict[str, str]:
    got = {}
    for name in PACKAGES:
        try:
            got[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            got[name] = "not installed"
    return got


def record_sample(out_path: str | Path, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the scripted agent and write the transcript JSON to ``out_path``.

    Args:
        out_path: where to write the JSON (parent folders are created).
        progress: optional callback receiving one line per finished user turn.

    Returns:
        The recorded document (``{"messages": [...], "model": ..., "generator": ..., ...}``).
    """
    out_path = Path(out_path)
    turns = _Turns()
    plan = _plan(turns)
    model = ScriptedChatModel(plan=plan)
    with tempfile.TemporaryDirectory(prefix="ctxlab-sample-") as tmp:
        box = _Sandbox(Path(tmp))
        tools = _make_tools(box)
        agent = create_agent(model, tools, system_prompt=SYSTEM_PROMPT)
        messages: list[BaseMessage] = []
        for i, text in enumerate(USER_TURNS, 1):
            state = agent.invoke(
                {"messages": [*messages, HumanMessage(text)]},
                config={"recursion_limit": 2_000},
            )
            messages = list(state["messages"])
            if progress:
                progress(f"turn {i}: {len(messages)} messages, {turns.n} tool calls so far")
    try:
        next(plan)
    except StopIteration:
        pass
    else:  # pragma: no cover - a plan/turn mismatch is a bug in this module
        raise RuntimeError("the scripted plan has assistant turns left after the last user turn")

    doc = {
        "messages": to_openai_messages([SystemMessage(SYSTEM_PROMPT), *messages]),
        "model": MODEL_NAME,
        "generator": GENERATOR,
        "tools": [convert_to_openai_tool(tool) for tool in tools],
        "metadata": {
            "description": "Scripted survey of LangChain/DeepAgents middleware with real tool outputs.",
            "packages": _versions(),
            "python": platform.python_version(),
        },
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return doc


def _iter_lines(doc: dict[str, Any]) -> Iterator[str]:
    msgs = doc["messages"]
    calls = sum(len(m.get("tool_calls", [])) for m in msgs)
    chars = sum(len(m.get("content") or "") for m in msgs)
    yield f"{len(msgs)} messages, {calls} tool calls, {chars} content characters"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ctxlab.cli.sample record OUT``: record the sample transcript."""
    parser = argparse.ArgumentParser(prog="python -m ctxlab.cli.sample", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the scripted agent and write the transcript JSON")
    rec.add_argument("out", type=Path, nargs="?", default=SAMPLE_TRANSCRIPT, help="output file")
    args = parser.parse_args(argv)
    if args.command == "record":
        doc = record_sample(args.out, progress=lambda line: print(line, file=sys.stderr))
        for line in _iter_lines(doc):
            print(line)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
