"""What happened in a span of an agent's session, as facts a summary can state (issue 28).

The offline summarizers (:mod:`ctxlab.core.builtin.extractive`, the structured summarizer) state
these facts rather than list names: a summary that says a file was edited, a command failed or an
error is still open keeps what a later turn needs to go on.  The rules are this module's own
(the replay's probe measure, :mod:`ctxlab.replay.probes`, reads the transcript with rules of its
own, so that a summarizer is not graded by its own code).

**Actions.**  A tool call of an assistant message, answered by the ``ToolMessage`` with its id; or
a fenced shell block (```` ```bash ````) of a text-action agent, answered by the observation that
follows.  A shell text is cut into commands at ``&&``, ``||``, ``;``, ``|`` and line ends
(heredoc bodies left out); leading ``VAR=value`` words and ``timeout``/``env``/``sudo``/``time``
are skipped.

**Files** (:class:`FileFact`): each file an action names, with what was done to it, in order:
``read`` (a read/view tool, ``cat``/``head``/``tail``/``nl``/``grep``/``sed -n``/...),
``created`` (a write/create tool or a redirection to a file not seen before), ``edited`` (an
edit/replace/insert tool, ``sed -i``, a write to a file seen before), ``ran`` (``python f``,
``node f``, ``bash f``, ``./f``, ``pytest f``), ``deleted`` (``rm f``, a delete tool).

**Commands** (:class:`CommandFact`): each command that runs something (not a reader, navigation,
``echo``, ``git``, file moves), keyed by its program and first file or argument; its last
outcome: ``failed`` when the result gives a non-zero exit code or shows a traceback, an error
line, ``FAILED``/``N failed``, ``error:``/``fatal:``, ``command not found`` or ``No such file``;
else ``passed``.

**Errors** (:class:`ErrorFact`): each error class of an error line (``ValueError: ...``) in the
result of a command; ``fixed`` when a later run of the same command passed without it.

**Values** (:class:`ValueFact`): a value (number of 4+ digits, a version ``1.2.3``, a hex id of 7+
characters with a digit, a code of 5-10 capitals and digits) written right after a name
(``port: 8080``, ``--port 8080``, ``"reservation_id": "JG7FMM"``) in the agent's own actions and
text or a user message, then in tool results.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ctxlab.core.marks import is_observation, is_summary_message, is_tool_result
from ctxlab.core.messages import message_text

__all__ = [
    "CommandFact",
    "ErrorFact",
    "FileFact",
    "SessionFacts",
    "ValueFact",
    "same_file",
    "session_facts",
]

_SCAN = 60_000
_FILE = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)*[\w@+-]+\.(?=\w*[A-Za-z])\w{1,8}(?![\w/])")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?(.*?)\n.*?\n\1\s*(?:\n|$)", re.S)
_READ = {
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "nl",
    "grep",
    "egrep",
    "rg",
    "ag",
    "awk",
    "wc",
    "diff",
    "view",
}
_QUIET = {
    "cd", "ls", "pwd", "echo", "printf", "find", "git", "which", "export", "source", "mkdir", "cp", "mv",
    "touch", "chmod", "sleep", "true", "false", "sort", "uniq", "cut", "tr", "xargs", "tee", "sed", "rm",
    "set", "exit", "submit", "tree", "du", "env", "date", "jq", "open",
}  # fmt: skip
_PROGRAM = re.compile(r"[\w./~+-]*[\w+-]")
_WRAP = {"timeout", "env", "sudo", "time", "nohup", "nice"}
_INTERPRETERS = re.compile(r"^(?:python[\d.]*|node|deno|bun|ruby|perl|php|bash|sh|zsh)$")
_EXIT = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|exit (?:code|status)[:\s]+(-?\d+)|exited with (?:code )?(-?\d+)",
    re.I,
)
_ERROR = re.compile(
    r"^(?!\s*(?:except|raise|class|def|import|from|#))\s*(?:E\s+)?.*?(?<![\w.])"
    r"(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception)):\s*(.*)$",
    re.M,
)
_FAILED = re.compile(
    r"^Traceback \(most|\bFAILED\b|\b\d+ failed\b|^\s*(?:error|fatal|panic):|command not found|"
    r"No such file or directory",
    re.M,
)
_VALUE = re.compile(
    r"(?<![\w.-])([A-Za-z][A-Za-z_-]{1,30})[\"']?\s*(?:[:=]|\s)\s*[\"']?"
    r"(v?\d+\.\d+\.\d+|\d{4,}|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
    r"|(?=[A-Z0-9]*\d)(?=(?:[A-Z0-9]*[A-Z]){2})[A-Z0-9]{5,10})(?![\w.-])"
)
_VALUE_NAMES_SKIP = {"line", "lines", "the", "and", "returncode", "total", "size", "at", "in", "of", "to"}
_PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path")
_COMMAND_KEYS = ("command", "cmd", "script")
_EDITOR = {"view": "read", "create": "created", "str_replace": "edited", "insert": "edited"}


@dataclass
class FileFact:
    """A file and what the span's actions did to it, in order (``read``, ``created``, ``edited``,
    ``ran``, ``deleted``; consecutive repeats once)."""

    path: str
    actions: list[str] = field(default_factory=list)

    def add(self, action: str) -> None:
        if not self.actions or self.actions[-1] != action:
            self.actions.append(action)

    @property
    def changed(self) -> str | None:
        """The last change (``created``, ``edited`` or ``deleted``), ``None`` when only read or run."""
        return next((a for a in reversed(self.actions) if a in ("created", "edited", "deleted")), None)

    def statement(self) -> str:
        """What was done to it, the change last: ``ran; edited``, ``read``, ``created``."""
        change = self.changed
        if change == "created" and "edited" in self.actions:
            change = "created, then edited"
        other = "ran" if "ran" in self.actions else ("read" if change is None else None)
        return "; ".join(x for x in (other, change) if x)


@dataclass
class CommandFact:
    """A command run: ``shown`` (its first line, up to 100 characters), ``key`` (program and
    target), its last ``outcome`` (``passed``/``failed``; ``no result yet`` when the span holds
    none), how often it ran, and the first error line of its last failed result (``""``: none)."""

    shown: str
    key: str
    outcome: str
    runs: int = 1
    error: str = ""


@dataclass
class ErrorFact:
    """An error class seen in a command's result: its last error ``line`` (up to 120 characters),
    the command ``key`` that showed it, and whether a later run of that command passed without it."""

    name: str
    line: str
    key: str
    fixed: bool = False


@dataclass
class ValueFact:
    """A value and the name it was written after (``port`` / ``8080``)."""

    name: str
    value: str


@dataclass
class SessionFacts:
    """The facts of a span (module docstring), each in order of last appearance (latest last)."""

    files: OrderedDict[str, FileFact] = field(default_factory=OrderedDict)
    commands: OrderedDict[str, CommandFact] = field(default_factory=OrderedDict)
    errors: OrderedDict[str, ErrorFact] = field(default_factory=OrderedDict)
    values: OrderedDict[str, ValueFact] = field(default_factory=OrderedDict)
    #: values named in tool results (the agent's and the user's are :attr:`values`)
    seen_values: OrderedDict[str, ValueFact] = field(default_factory=OrderedDict)

    def ran(self, shown: str, key: str, outcome: str, error: str) -> None:
        """Record a run of the command ``key`` (the latest last; its runs counted)."""
        old = self.commands.pop(key, None)
        self.commands[key] = CommandFact(shown, key, outcome, runs=(old.runs + 1) if old else 1, error=error)

    def touch(self, path: str, action: str) -> None:
        key = next((k for k in self.files if same_file(k, path)), None)
        if key is None:
            fact = FileFact(path)
        else:
            fact = self.files.pop(key)
            if len(path) > len(fact.path):
                fact.path = path
        if action == "created" and fact.actions and fact.actions[-1] != "deleted":
            action = "edited"  # a write to a file seen before
        fact.add(action)
        self.files[fact.path] = fact


def same_file(a: str, b: str) -> bool:
    """``a`` and ``b`` name the same file: equal (a leading ``./`` aside), or one is a path ending
    in the other (``src/app.py`` and ``/repo/src/app.py``)."""
    a, b = a.removeprefix("./"), b.removeprefix("./")
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.endswith("/" + short.lstrip("/"))


def _scanned(text: str) -> str:
    return text if len(text) <= _SCAN else text[: _SCAN // 2] + "\n" + text[-_SCAN // 2 :]


def _outcome(result: str) -> tuple[str, str]:
    """``(passed | failed, first error line)`` of a result."""
    text = _scanned(result)
    error = _ERROR.search(text)
    line = error.group(0).strip()[:120] if error else ""
    for m in _EXIT.finditer(text):
        if int(next(g for g in m.groups() if g is not None)) != 0:
            return "failed", line
    failed = _FAILED.search(text)
    if error or failed:
        return "failed", line or (failed.group(0).strip()[:120] if failed else "")
    return "passed", ""


def _shell(command: str) -> list[tuple[str, str, list[str]]]:
    """``(program, segment, files)`` of each command of a shell text; a redirection target comes
    back as a ``">"`` program (a write)."""
    text = _HEREDOC.sub(lambda m: f"<< {m.group(2)}\n", command.replace("\\\n", " "))
    out: list[tuple[str, str, list[str]]] = []
    for segment in _split(text):
        seg = segment.strip()
        redirect = re.search(r"(?<![0-9&])>{1,2}\s*['\"]?([\w./~@+-]+)", seg)
        if redirect and _FILE.fullmatch(redirect.group(1)):
            out.append((">", seg, [redirect.group(1)]))
            seg = seg[: redirect.start()]
        words = seg.split()
        while words and ("=" in words[0].split("/")[0] or words[0] in _WRAP or words[0].isdigit()):
            words = words[1:]
        if not words or not _PROGRAM.fullmatch(words[0]):  # quoted output or prose, not a command
            continue
        program = words[0].rsplit("/", 1)[-1]
        files = [m.group(0) for w in words[1:] if (m := _FILE.fullmatch(w.strip("'\"`,:").split("::")[0]))]
        if words[0].startswith("./") and _FILE.fullmatch(words[0]):
            files.insert(0, words[0])
        out.append((program, " ".join(words), files))
    return out


def _split(text: str) -> list[str]:
    """A shell text cut at ``&&``, ``||``, ``;``, ``|`` and line ends outside quotes."""
    out: list[str] = []
    start = 0
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in ";|\n" or text.startswith("&&", i):
            out.append(text[start:i])
            i += 2 if text.startswith(("&&", "||"), i) else 1
            start = i
            continue
        i += 1
    out.append(text[start:])
    return out


def _command_key(program: str, segment: str, files: list[str]) -> str | None:
    words = segment.split()
    if re.match(r"python[\d.]*$", program):
        if "-c" in words or words[1:2] == ["-"]:
            return None
        if "-m" in words and words.index("-m") + 1 < len(words):
            module = words[words.index("-m") + 1]
            return f"{module} {files[0].rsplit('/', 1)[-1]}".strip() if files else module
    if files:
        name = "python" if re.match(r"python[\d.]*$", program) else program
        return f"{name} {files[0].rsplit('/', 1)[-1]}"
    plain = [w for w in words[1:] if not w.startswith("-")]
    if _INTERPRETERS.match(program) and not plain:
        return None
    return " ".join([program, *plain[:2]])[:80]


def _actions(message: AIMessage) -> list[tuple[str | None, str, dict[str, Any], str]]:
    """``(call id, tool name, args, shell text)`` per action of an assistant message."""
    out: list[tuple[str | None, str, dict[str, Any], str]] = []
    for tc in message.tool_calls:
        args = tc.get("args") or {}
        args = args if isinstance(args, dict) else {}
        command = next((str(args[k]) for k in _COMMAND_KEYS if isinstance(args.get(k), str)), "")
        out.append((tc.get("id"), str(tc.get("name") or ""), args, command))
    if not message.tool_calls:
        blocks = _fences(message_text(message))
        out.extend((None, "bash", {}, b) for b in blocks)
    return out


def _fences(text: str) -> list[str]:
    """The bodies of the shell and bare fenced blocks of a text, in order (``python`` blocks are code)."""
    parts = text.split("```")
    out = []
    for body in parts[1:-1:2]:
        lang, _, code = body.partition("\n")
        if lang.strip().lower() in ("", "bash", "sh", "shell", "console", "zsh") and code.strip():
            out.append(code)
    return out


def _tool(facts: SessionFacts, name: str, args: dict[str, Any]) -> bool:
    """Record a file tool's action; ``False`` when the call is not one (a shell tool)."""
    path = next((str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]), None)
    if path is None:
        return False
    sub = args.get("command")
    low = name.lower()
    if isinstance(sub, str) and sub in _EDITOR:
        facts.touch(path, _EDITOR[sub])
    elif re.search(r"delete|remove", low):
        facts.touch(path, "deleted")
    elif re.search(r"edit|replace|patch|insert|apply|update", low):
        facts.touch(path, "edited")
    elif re.search(r"write|create", low):
        facts.touch(path, "created")
    elif re.search(r"read|view|open|cat|grep|glob|search", low):
        facts.touch(path, "read")
    else:
        return False
    return True


def _run_shell(facts: SessionFacts, command: str, result: str | None) -> list[str]:
    """Record a shell text's files and commands; the keys of the commands it ran."""
    keys: list[str] = []
    outcome, error = _outcome(result) if result is not None else ("", "")
    for program, segment, files in _shell(command):
        if program == ">":
            facts.touch(files[0], "created")
        elif program in _READ or (program == "sed" and "-i" not in segment.split()):
            for f in files:
                facts.touch(f, "read")
        elif program in ("sed", "perl") and "-i" in " ".join(segment.split()[:3]):
            for f in files:
                facts.touch(f, "edited")
        elif program == "rm":
            for f in files:
                facts.touch(f, "deleted")
        elif program not in _QUIET:
            if files:
                facts.touch(files[0], "ran")
            key = _command_key(program, segment, files)
            if key is None:
                continue
            keys.append(key)
            facts.ran(
                segment.splitlines()[0][:100] if segment else key, key, outcome or "no result yet", error
            )
    return keys


def _run_tool(facts: SessionFacts, name: str, args: dict[str, Any], result: str | None) -> list[str]:
    """Record a call of a tool that is neither a file tool nor a shell (``run_tests``,
    ``get_user_details``) as a command ``name: <its first text argument>``; its outcome is
    ``failed`` when the result shows an error, else ``done``.  The keys recorded (none without a
    tool name)."""
    if not name:
        return []
    arg = next((str(v) for v in args.values() if isinstance(v, str) and v.strip()), "")
    key = f"{name}: {arg.splitlines()[0][:80]}" if arg else name
    outcome, error = _outcome(result) if result is not None else ("no result yet", "")
    facts.ran(key, key, "done" if outcome == "passed" else outcome, error)
    return [key]


def _values(facts: SessionFacts, text: str, *, seen: bool = False) -> None:
    """The named values of ``text``: the agent's or the user's (``seen=False``), or a tool result's
    (``seen=True``: kept apart, they rank after the ones the agent or the user wrote)."""
    into = facts.seen_values if seen else facts.values
    for m in _VALUE.finditer(_scanned(text)):
        name, value = m.group(1), m.group(2)
        if name.lower() in _VALUE_NAMES_SKIP or (seen and value in facts.values):
            continue
        into.pop(value, None)
        into[value] = ValueFact(name, value)


def session_facts(messages: Sequence[BaseMessage]) -> SessionFacts:
    """The facts of ``messages`` (module docstring); summary messages are skipped."""
    facts = SessionFacts()
    results = {m.tool_call_id: message_text(m) for m in messages if isinstance(m, ToolMessage)}
    for i, m in enumerate(messages):
        if is_summary_message(m):
            continue
        if isinstance(m, HumanMessage) and not is_observation(m):
            _values(facts, message_text(m))
        elif is_tool_result(m):
            _values(facts, message_text(m), seen=True)
        if not isinstance(m, AIMessage):
            continue
        _values(facts, message_text(m))
        for call_id, name, args, command in _actions(m):
            if call_id is not None:
                result = results.get(call_id)
            else:
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                result = message_text(nxt) if nxt is not None and is_tool_result(nxt) else None
            if command:
                _values(facts, command)
            else:
                _values(facts, json.dumps(args, ensure_ascii=False, default=str)[:4000])
            if _tool(facts, name, args):
                continue
            keys = _run_shell(facts, command, result) if command else _run_tool(facts, name, args, result)
            if result is None or not keys:
                continue
            seen = {e.group(1): e.group(0).strip()[:120] for e in _ERROR.finditer(_scanned(result))}
            for err in facts.errors.values():  # fixed by a clean run of the command that showed it
                if err.key in keys and err.name not in seen and facts.commands[err.key].outcome == "passed":
                    err.fixed = True
            for name_, line in seen.items():
                facts.errors.pop(name_, None)
                facts.errors[name_] = ErrorFact(name_, line, keys[-1])
    return facts
