"""The realistic history of ``ctxlab bench`` (issue 31): a coding agent's run with heavy-tailed
tool outputs and six tool schemas, the history the default rows of section 1 measure.

The synthetic history of :func:`~ctxlab.cli.bench.overhead.synthetic_history` has one tool and
results of 100-3,000 characters; a real coding agent's results are heavy-tailed (most are a few
hundred characters, a few are a whole file or a long test log) and its requests carry several
tool schemas.  :func:`realistic_history` draws, per tool, output sizes from a log-normal
distribution (the median and spread in :data:`OUTPUT_SIZES`, characters, capped), parallel calls
(one turn in ten issues two or three), ``write_file`` contents and ``edit_file`` strings of
log-normal size (many ``write_file`` contents exceed the 2,000-character argument limit, R5), and
a user follow-up every 60-150 messages.  Texts are code, test logs, grep matches and file lists
built from a word pool and random identifiers (deterministic for a seed).  Every message has an
id, as LangGraph's ``add_messages`` gives them.
"""

from __future__ import annotations

import functools
import math
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage, SystemMessage

__all__ = ["OUTPUT_SIZES", "TOOL_SCHEMAS", "realistic_history", "size_summary"]

#: per tool: (share of calls, median output characters, log-normal sigma, cap in characters)
OUTPUT_SIZES: dict[str, tuple[float, int, float, int]] = {
    "bash": (0.34, 700, 1.6, 120_000),
    "read_file": (0.24, 2_400, 1.1, 60_000),
    "grep": (0.12, 500, 1.5, 40_000),
    "edit_file": (0.13, 70, 0.3, 400),
    "write_file": (0.08, 60, 0.3, 400),
    "list_files": (0.09, 300, 1.0, 8_000),
}

#: the six tool schemas of the request (OpenAI function format, as ``bind_tools`` accepts them)
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": t, "description": d} for p, t, d in params},
                "required": [p for p, _t, _d in params[:1]],
            },
        },
    }
    for name, description, params in (
        (
            "bash",
            "Run a shell command in the repository and return its standard output and error.",
            [
                ("command", "string", "the command line"),
                ("timeout", "integer", "seconds before it is killed"),
            ],
        ),
        (
            "read_file",
            "Read a text file of the repository; long files are returned in pages of lines.",
            [
                ("path", "string", "the file, relative to the repository root"),
                ("offset", "integer", "first line, 0-based"),
                ("limit", "integer", "lines to return"),
            ],
        ),
        (
            "write_file",
            "Create or overwrite a file with the given content.",
            [("path", "string", "the file to write"), ("content", "string", "the whole new content")],
        ),
        (
            "edit_file",
            "Replace one exact occurrence of a string in a file.",
            [
                ("path", "string", "the file to edit"),
                ("old_string", "string", "the text to replace, exactly as it is"),
                ("new_string", "string", "the replacement"),
            ],
        ),
        (
            "grep",
            "Search the repository for a regular expression; prints file:line:match.",
            [
                ("pattern", "string", "a regular expression"),
                ("path", "string", "a folder or file to search"),
                ("glob", "string", "only files matching this glob"),
            ],
        ),
        (
            "list_files",
            "List the files under a folder, recursively, one path a line.",
            [("path", "string", "the folder")],
        ),
    )
]

_WORDS = [
    "the",
    "build",
    "step",
    "compiles",
    "each",
    "module",
    "and",
    "test",
    "run",
    "checks",
    "every",
    "case",
    "against",
    "expected",
    "output",
    "then",
    "report",
    "lists",
    "failures",
    "with",
    "their",
    "file",
    "line",
    "so",
    "next",
    "change",
    "can",
    "fix",
    "them",
    "parser",
    "token",
    "stream",
    "buffer",
    "index",
    "cache",
    "value",
    "request",
    "handler",
    "config",
    "option",
    "retry",
    "timeout",
    "session",
    "client",
    "server",
    "error",
    "warning",
    "value",
    "result",
    "state",
    "update",
    "merge",
    "branch",
    "commit",
    "schema",
    "field",
    "record",
    "batch",
    "worker",
    "queue",
    "task",
]
_MODULES = ("parser", "lexer", "cache", "server", "client", "config", "models", "utils", "cli", "store")


def _lognormal(rng: random.Random, median: int, sigma: float, cap: int) -> int:
    return max(16, min(cap, int(median * math.exp(rng.gauss(0.0, sigma)))))


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}{rng.randint(0, 99)}"


def _code_line(rng: random.Random, depth: int) -> str:
    kind = rng.random()
    pad = "    " * depth
    if kind < 0.2:
        return f"{pad}def {_ident(rng)}(self, {_ident(rng)}: int, {_ident(rng)}: str = None) -> dict:"
    if kind < 0.45:
        return f"{pad}{_ident(rng)} = self.{_ident(rng)}.get({_ident(rng)!r}, {rng.randint(0, 4096)})"
    if kind < 0.6:
        return f"{pad}if {_ident(rng)} is not None and len({_ident(rng)}) > {rng.randint(1, 64)}:"
    if kind < 0.75:
        return f"{pad}return {{{_ident(rng)!r}: {_ident(rng)}, {_ident(rng)!r}: [{rng.randint(0, 9)}, {rng.randint(10, 99)}]}}"
    if kind < 0.85:
        return f"{pad}# {' '.join(rng.choices(_WORDS, k=rng.randint(4, 12)))}"
    return f'{pad}raise ValueError(f"{" ".join(rng.choices(_WORDS, k=5))} {{{_ident(rng)}}}")'


def _path(rng: random.Random) -> str:
    return f"src/{rng.choice(_MODULES)}/{_ident(rng)}.py"


def _lines(rng: random.Random, tool: str, chars: int) -> str:
    out: list[str] = []
    total = 0
    n = 0
    while total < chars:
        n += 1
        if tool == "read_file":
            line = f"{n:5d}\t{_code_line(rng, rng.randint(0, 3))}"
        elif tool == "grep":
            line = f"{_path(rng)}:{rng.randint(1, 900)}:{_code_line(rng, 1).strip()}"
        elif tool == "list_files":
            line = _path(rng)
        elif rng.random() < 0.55:  # bash: test logs and tracebacks
            status = "PASSED" if rng.random() < 0.85 else "FAILED"
            line = f"tests/test_{rng.choice(_MODULES)}.py::test_{_ident(rng)} {status} [{rng.randint(0, 100):3d}%]"
        elif rng.random() < 0.5:
            line = f'  File "{_path(rng)}", line {rng.randint(1, 900)}, in {_ident(rng)}'
        else:
            line = f"{rng.choice(('INFO', 'DEBUG', 'WARNING'))} {_ident(rng)}: {' '.join(rng.choices(_WORDS, k=rng.randint(3, 10)))}"
        out.append(line)
        total += len(line) + 1
    return "\n".join(out)[:chars]


def _args(rng: random.Random, tool: str, step: int) -> dict[str, Any]:
    if tool == "bash":
        return {"command": f"pytest tests/test_{rng.choice(_MODULES)}.py -k {_ident(rng)} -q", "timeout": 120}
    if tool == "read_file":
        return {"path": _path(rng), "offset": 0, "limit": 2000}
    if tool == "write_file":
        return {"path": _path(rng), "content": _lines(rng, "read_file", _lognormal(rng, 1_500, 1.0, 30_000))}
    if tool == "edit_file":
        size = _lognormal(rng, 200, 1.2, 12_000)
        return {
            "path": _path(rng),
            "old_string": _lines(rng, "read_file", size),
            "new_string": _lines(rng, "read_file", size),
        }
    if tool == "grep":
        return {"pattern": f"def {_ident(rng)}", "path": "src/", "glob": "*.py"}
    return {"path": f"src/{rng.choice(_MODULES)}"}


def _output(rng: random.Random, tool: str, args: dict[str, Any]) -> str:
    _share, median, sigma, cap = OUTPUT_SIZES[tool]
    size = _lognormal(rng, median, sigma, cap)
    if tool in ("write_file", "edit_file"):
        return f"Updated {args['path']} ({size} bytes changed)."
    return _lines(rng, tool, size)


@functools.lru_cache(maxsize=4)
def _build(n: int, seed: int) -> tuple[Any, tuple[Any, ...]]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    rng = random.Random(seed)
    names = list(OUTPUT_SIZES)
    shares = [OUTPUT_SIZES[t][0] for t in names]
    system = SystemMessage(
        content="You are a coding agent working in a Python repository. Use the tools to read, search, "
        "run and change code; keep changes small and run the tests after each one. " * 12,
        id="sys",
    )
    msgs: list[BaseMessage] = [
        HumanMessage(
            content="Fix the failing tests in the parser module and keep the API stable. " * 4, id="m0"
        )
    ]
    next_user = rng.randint(60, 150)
    step = 0
    while len(msgs) < n:
        i = len(msgs)
        if i >= next_user and not isinstance(msgs[-1], AIMessage):
            words = " ".join(rng.choices(_WORDS, k=rng.randint(10, 60)))
            msgs.append(HumanMessage(content=f"Also: {words}", id=f"m{i}"))
            next_user = i + rng.randint(60, 150)
            continue
        step += 1
        width = 1 if rng.random() < 0.9 else rng.randint(2, 3)
        calls: list[dict[str, Any]] = []
        for j in range(width):
            tool = rng.choices(names, shares)[0]
            calls.append(
                {"name": tool, "args": _args(rng, tool, step), "id": f"call-{step}-{j}", "type": "tool_call"}
            )
        thought = " ".join(rng.choices(_WORDS, k=_lognormal(rng, 25, 0.8, 300)))
        msgs.append(AIMessage(content=thought, id=f"m{len(msgs)}", tool_calls=calls))
        for c in calls:
            msgs.append(
                ToolMessage(
                    content=_output(rng, c["name"], c["args"]),
                    tool_call_id=c["id"],
                    name=c["name"],
                    id=f"m{len(msgs)}",
                )
            )
    return system, tuple(msgs[:n])


def realistic_history(n: int, seed: int = 0) -> tuple[SystemMessage, list[BaseMessage], list[dict[str, Any]]]:
    """(system message, ``n`` messages, the six tool schemas) of a deterministic coding-agent run
    (see the module docstring).  The messages are built once per ``(n, seed)`` and shared: the
    list is new, the message objects are the same (the middlewares never edit a message)."""
    system, msgs = _build(n, seed)
    return system, list(msgs), TOOL_SCHEMAS


def size_summary(messages: list[BaseMessage]) -> dict[str, int]:
    """Tool results of ``messages`` by output size: count, median and largest characters, and the
    count over 10,000 characters (for the bench's description of the history)."""
    from langchain_core.messages import ToolMessage

    sizes = sorted(len(str(m.content)) for m in messages if isinstance(m, ToolMessage))
    if not sizes:
        return {"results": 0, "median_chars": 0, "max_chars": 0, "over_10k": 0}
    return {
        "results": len(sizes),
        "median_chars": sizes[len(sizes) // 2],
        "max_chars": sizes[-1],
        "over_10k": sum(1 for s in sizes if s > 10_000),
    }
