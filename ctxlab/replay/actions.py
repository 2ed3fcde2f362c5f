"""What an agent *did* in a transcript: the files its actions touched and the commands it ran,
read from its tool calls and shell commands, with the result each got.  The facts the probe
measure (:mod:`ctxlab.replay.probes`) asks a summary about.

These rules are the measure's own; the offline summarizers (:mod:`ctxlab.core.builtin`) read the
same messages with rules of their own, so that a summarizer is not graded by its own code.

**Actions.**  Each tool call of an ``AIMessage`` is one action; its result is the ``ToolMessage``
answering its id.  A text-action agent (mini-swe-agent, SWE-agent in text mode) writes its
command in a fenced shell block: each block is one action, its result the observation message
(:func:`ctxlab.core.marks.is_tool_result`) that follows the assistant message.

**Files touched** (:class:`Touch`), by category (:data:`FILE_CATEGORIES`):

``read``
    a read tool (a name holding ``read``, ``view``, ``open``, ``cat``, ``glob``, ``grep``,
    ``search``; ``str_replace_editor`` with ``command=view``), or a shell ``cat``, ``head``,
    ``tail``, ``less``, ``nl``, ``grep``, ``sed`` without ``-i``, ``awk``, ``diff``, ... of the file;
``changed``
    a write or edit tool (a name holding ``write``, ``create``, ``edit``, ``replace``, ``patch``,
    ``insert``, ``apply``; ``str_replace_editor`` with ``create``/``str_replace``/``insert``), a shell
    redirection (``> f``, ``>> f``, a heredoc into ``f``), ``tee``, ``sed -i``, ``perl -i``,
    ``touch``, the target of ``cp``/``mv``, ``git checkout/restore`` of the file;
``ran``
    the file run as a program (``python f``, ``node f``, ``bash f``, ``./f``, ``pytest f``, ...);
``deleted``
    ``rm f``, a tool whose name holds ``delete`` or ``remove``.

A file is a token with an extension (``name.ext``, the extension 1 to 8 letters or digits, not
all digits), with or without directories; a pytest node id counts as its file.

**Commands run** (:class:`Run`): a shell segment (commands are split at ``&&``, ``||``, ``;``,
``|`` and new lines; a heredoc's body is skipped) whose program is not one that only reads,
navigates or moves files (:data:`NOT_RUNNERS`).  Its *key* is the program (``python -m mod``: the
module; ``npm``/``yarn``/``cargo``/``go``/``make``/...: with its sub-command) and its *target*,
the first argument that is a file (its base name) or, for a runner without a file, its first
plain argument (``runtests.py sitemaps_tests`` keeps ``sitemaps_tests``).  Leading environment
assignments and wrappers (``timeout N``, ``env``, ``sudo``, ``time``, ``nohup``) are skipped.

**Outcome** of an action (:func:`outcome_of`): ``failed`` when its result states an exit code
other than 0, or holds a failure mark (a ``Traceback``, an error line ``SomeError: ...``, a word
``FAILED``, ``N failed``, a line starting ``error:``/``fatal:``/``panic:``, ``command not
found``, ``No such file or directory``, ``Segmentation fault``); ``passed`` otherwise.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.core.identity import IdentityCache
from ctxlab.core.marks import is_summary_message, is_tool_result
from ctxlab.core.messages import message_text

__all__ = [
    "FILE_CATEGORIES",
    "NOT_RUNNERS",
    "Action",
    "ActionIndex",
    "Run",
    "Touch",
    "error_names",
    "outcome_of",
    "same_file",
    "shell_actions",
]

#: what an action did to a file (see the module docstring)
FILE_CATEGORIES = ("read", "changed", "ran", "deleted")

#: programs whose runs are not commands to probe: they read, navigate, move or print
NOT_RUNNERS = frozenset(
    {
        "cat", "head", "tail", "less", "more", "nl", "bat", "ls", "ll", "cd", "pwd", "echo", "printf",
        "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "sed", "awk", "gawk", "wc", "sort",
        "uniq", "cut", "tr", "diff", "cmp", "git", "which", "whereis", "type", "file", "stat", "tree",
        "du", "df", "env", "export", "source", ".", "true", "false", "sleep", "clear", "history",
        "touch", "mkdir", "rmdir", "cp", "mv", "rm", "ln", "chmod", "chown", "tee", "xargs", "set",
        "unset", "alias", "read", "test", "[", "exit", "open", "view", "submit", "str_replace_editor",
        "python-c", "date", "whoami", "id", "uname", "hostname", "ps", "kill", "top", "jq", "basename",
        "dirname", "realpath", "readlink", "md5sum", "sha256sum", "strings", "hexdump", "xxd", "od",
        "column", "paste", "join", "comm", "tac", "rev", "fold", "fmt", "expand", "yes", "seq",
    }
)  # fmt: skip

_READERS = frozenset(
    {"cat", "head", "tail", "less", "more", "nl", "bat", "grep", "egrep", "fgrep", "rg", "ag", "ack",
     "awk", "gawk", "wc", "diff", "cmp", "sort", "uniq", "cut", "file", "stat", "view", "open", "tac",
     "strings", "hexdump", "xxd", "od", "md5sum", "sha256sum", "jq"}
)  # fmt: skip
_INTERPRETERS = frozenset(
    {"python", "python2", "python3", "node", "deno", "bun", "ruby", "perl", "php", "bash", "sh", "zsh",
     "lua", "Rscript", "julia", "tsx", "ts-node"}
)  # fmt: skip
#: runners whose first plain argument is a sub-command that belongs to the key
_SUBCOMMANDS = frozenset(
    {"npm", "yarn", "pnpm", "npx", "cargo", "go", "make", "mvn", "gradle", "dotnet", "poetry", "uv",
     "pip", "pip3", "docker", "kubectl", "bundle", "rake", "mix", "stack", "cabal", "dune", "zig",
     "swift", "corral", "tox", "nox", "hatch", "pdm", "conda"}
)  # fmt: skip
_WRAPPERS = frozenset({"timeout", "env", "sudo", "time", "nohup", "nice", "stdbuf", "xvfb-run", "command"})
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")"})
_REDIRECTS = frozenset({">", ">>", "&>", "2>", "1>", ">|", "&>>"})
_PROGRAM = re.compile(r"[\w./~+-]*[\w+-]")
_ASSIGNMENT, _HEREDOC = re.compile(r"^[A-Za-z_]\w*="), re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
_FILE = re.compile(r"^[\w./~@+-]*[\w@+-]\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,8}$")
_SHELL_FENCES, _COMMAND_KEYS = ("", "bash", "sh", "shell", "console", "zsh"), ("command", "cmd", "script")
_PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path", "target")
_EDITOR_COMMANDS = {"view": "read", "create": "changed", "str_replace": "changed", "insert": "changed"}
_READ_TOOL = re.compile(r"read|view|open|cat|glob|grep|search|list|ls", re.I)
_CHANGE_TOOL = re.compile(r"write|create|edit|replace|patch|insert|apply|update", re.I)
_DELETE_TOOL = re.compile(r"delete|remove", re.I)
_SHELL_TOOL = re.compile(r"bash|shell|exec|run|terminal|command|cmd|powershell", re.I)

_EXIT_CODE = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|exit (?:code|status)[:\s]+(-?\d+)|"
    r"[\"']?(?:returncode|exit_code|exitCode)[\"']?\s*[:=]\s*(-?\d+)|exited with (?:code )?(-?\d+)",
    re.I,
)
#: an error line: a (dotted) class name ending in Error or Exception, a colon, a message; not a line
#: of code that names the class (except / raise / class / def / import / a comment)
_ERROR_LINE = re.compile(
    r"^(?!\s*(?:except|raise|class|def|import|from|#|//|\*|-|\+))"
    r".*?(?<![\w.])(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception)):(?:\s|$)",
    re.M,
)
_FAILURE_MARKS = re.compile(
    r"^Traceback \(most recent call last\)|\bFAILED\b|\b\d+ failed\b|^\s*(?:error|fatal|panic):|"
    r"command not found|No such file or directory|Segmentation fault",
    re.M,
)
_SCAN = 200_000  # characters of a result scanned for its outcome (head and tail)


@dataclass(frozen=True)
class Touch:
    """A file an action touched: ``path`` as written, ``category`` one of :data:`FILE_CATEGORIES`."""

    path: str
    category: str


@dataclass(frozen=True)
class Run:
    """A command an action ran: ``key`` (program and target, what identifies a re-run), ``target``
    (its file's base name or first plain argument; ``""``: none), ``program``, ``text`` (the
    segment as run, up to 160 characters)."""

    key: str
    target: str
    program: str
    text: str


@dataclass(frozen=True)
class Action:
    """One action of an assistant message: what it touched and ran, and its result.

    Attributes:
        position: the index of the assistant message in the sequence read.
        touches: the files touched, in order.
        runs: the commands run (programs not in :data:`NOT_RUNNERS`), in order.
        result: the result's text (``""``: none recorded).
        outcome: ``"passed"`` or ``"failed"`` (:func:`outcome_of` of the result), ``None`` without a
            result.
        text: the action's own text (the tool call's arguments as JSON, or the shell block).
    """

    position: int
    touches: tuple[Touch, ...]
    runs: tuple[Run, ...]
    result: str
    outcome: str | None
    text: str


def _scanned(text: str) -> str:
    return text if len(text) <= _SCAN else text[: _SCAN // 2] + "\n" + text[-_SCAN // 2 :]


def outcome_of(result: str) -> str:
    """``"failed"`` or ``"passed"`` for an action's result (module docstring, "Outcome")."""
    text = _scanned(result)
    for m in _EXIT_CODE.finditer(text):
        code = next(g for g in m.groups() if g is not None)
        if int(code) != 0:
            return "failed"
    if _FAILURE_MARKS.search(text) or _ERROR_LINE.search(text):
        return "failed"
    return "passed"


def error_names(result: str) -> list[str]:
    """The error class names of the error lines of a result (``ValueError`` of ``ValueError:
    max() arg is an empty sequence``), each once, in order."""
    return list(dict.fromkeys(m.group(1) for m in _ERROR_LINE.finditer(_scanned(result))))


def _file_token(token: str) -> str | None:
    token = token.strip("'\"`,()[]{}")
    token = token.split("::", 1)[0]
    if token.startswith("-") or "://" in token or not token:
        return None
    return token if _FILE.match(token) else None


def same_file(a: str, b: str) -> bool:
    """Whether two written paths name the same file: equal after dropping ``./``, or one is a
    suffix of the other on a ``/`` boundary (``pkg/mod.py`` and ``/repo/pkg/mod.py``)."""
    a, b = a.removeprefix("./"), b.removeprefix("./")
    if a == b:
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long.endswith("/" + short.lstrip("/"))


_NOISE = re.compile(r"\d?>&\d|(?:\d|&)?>>?\s*/dev/null")
_PLAIN, _WORD = re.compile(r"[^'\"\\;&|()<>]*"), re.compile(r"[^ \t\r\n]+")  # shlex's specials; a word


def _tokens(line: str) -> list[str]:
    line = _NOISE.sub(" ", line)
    if _PLAIN.fullmatch(line):  # no quote, escape or punctuation: shlex's words are the blank-split ones
        return _WORD.findall(line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split, lexer.commenters = True, ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: plain words
        return line.split()


def _logical_lines(command: str) -> list[str]:
    """The command lines of a shell text: physical lines joined where a quoted string or a
    backslash continues them; a heredoc's body (up to its delimiter line) left out."""
    out: list[str] = []
    buf: list[str] = []
    quote: str | None = None
    skip_until: str | None = None
    for line in command.split("\n"):
        if skip_until is not None:
            if line.strip() == skip_until:
                skip_until = None
            continue
        buf.append(line)
        escaped = False
        for ch in line:
            if escaped:
                escaped = False
            elif ch == "\\" and quote != "'":
                escaped = True
            elif quote is None and ch in "'\"":
                quote = ch
            elif ch == quote:
                quote = None
        if quote is not None or escaped:
            continue
        joined = "\n".join(buf).replace("\\\n", " ")
        buf = []
        heredoc = _HEREDOC.search(joined)
        if heredoc:
            skip_until = heredoc.group(2)
            joined = joined[: heredoc.start()] + joined[heredoc.end() :]
        out.append(joined)
    if buf:
        out.append("\n".join(buf))
    return out


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a shell text (:func:`_logical_lines` split at the operators); each
    a list of words, redirections kept."""
    out: list[list[str]] = []
    for line in _logical_lines(command):
        current: list[str] = []
        for tok in _tokens(line):
            if tok in _OPERATORS:
                if current:
                    out.append(current)
                current = []
            else:
                current.append(tok)
        if current:
            out.append(current)
    return out


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop leading assignments and wrappers (``timeout 60``, ``env X=1``, ``sudo``)."""
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGNMENT.match(w):
            i += 1
        elif w in _WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or words[i].rstrip("smhd").isdigit()):
                i += 1
        else:
            break
    return words[i:]


def _plain(words: Sequence[str]) -> list[str]:
    return [w for w in words if not w.startswith("-") and w not in _REDIRECTS]


def _segment(words: list[str]) -> tuple[list[Touch], list[Run]]:
    touches: list[Touch] = []
    # redirections: > f, >> f (changed), < f (read)
    clean: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in (">", ">>", "&>", "&>>", ">|") or (w.endswith(">") and w[:-1].isdigit()):
            if i + 1 < len(words) and (f := _file_token(words[i + 1])):
                touches.append(Touch(f, "changed"))
            i += 2
            continue
        if w == "<":
            if i + 1 < len(words) and (f := _file_token(words[i + 1])):
                touches.append(Touch(f, "read"))
            i += 2
            continue
        clean.append(w)
        i += 1
    words = _strip_prefix(clean)
    if not words:
        return touches, []
    if not _PROGRAM.fullmatch(words[0]):  # not a command: quoted output, prose
        return touches, []
    program = PurePosixPath(words[0]).name or words[0]
    args = words[1:]
    files = [f for a in args if (f := _file_token(a))]
    runs: list[Run] = []
    text = " ".join(words)[:160]
    if program in ("sed", "perl") and any(a.startswith("-i") or a == "--in-place" for a in args):
        touches.extend(Touch(f, "changed") for f in files)
    elif program in _READERS or program == "sed":
        touches.extend(Touch(f, "read") for f in files)
    elif program in ("tee", "touch"):
        touches.extend(Touch(f, "changed") for f in files)
    elif program in ("cp", "mv", "ln"):
        if files:
            touches.append(Touch(files[-1], "changed"))
        if program == "mv":
            touches.extend(Touch(f, "deleted") for f in files[:-1])
    elif program == "rm":
        touches.extend(Touch(f, "deleted") for f in files)
    elif program == "git":
        sub = _plain(args)[:1]
        if sub and sub[0] in ("checkout", "restore", "apply", "am", "stash"):
            touches.extend(Touch(f, "changed") for f in files)
        elif sub and sub[0] in ("diff", "show", "log", "blame"):
            touches.extend(Touch(f, "read") for f in files)
    elif program not in NOT_RUNNERS:
        runs.append(_run(program, args, text))
        if words[0].startswith("./") and (f := _file_token(words[0])):
            touches.append(Touch(f, "ran"))
        touches.extend(Touch(f, "ran") for f in files[:1])
    return touches, runs


def _run(program: str, args: list[str], text: str) -> Run:
    """The key of a runner segment (module docstring, "Commands run")."""
    plain = _plain(args)
    name = program
    if re.fullmatch(r"python[\d.]*", program):
        name = "python"
        if "-m" in args:
            at = args.index("-m")
            if at + 1 < len(args):
                name = args[at + 1]
                plain = _plain(args[at + 2 :])
        elif "-c" in args:
            return Run("python -c", "", "python", text)
    elif program in _SUBCOMMANDS and plain and not _file_token(plain[0]):
        name = f"{program} {plain[0]}"
        if plain[0] in ("run", "exec", "test") and len(plain) > 1 and program in ("npm", "yarn", "pnpm"):
            name = f"{name} {plain[1]}"
            plain = plain[2:]
        else:
            plain = plain[1:]
    target = next((PurePosixPath(f).name for a in plain if (f := _file_token(a))), "")
    if not target and program not in _INTERPRETERS and plain:
        first = plain[0].strip("'\"")
        target = first if re.fullmatch(r"[\w.:/@+-]{2,80}", first) else ""
    key = f"{name} {target}".strip()
    return Run(key, target, name, text)


def shell_actions(command: str) -> tuple[tuple[Touch, ...], tuple[Run, ...]]:
    """The files a shell command touches and the commands it runs (module docstring)."""
    touches: list[Touch] = []
    runs: list[Run] = []
    for words in _segments(command):
        t, r = _segment(words)
        touches.extend(t)
        runs.extend(r)
    # a heredoc into a file: ``cat <<'EOF' > f`` is found as the redirection of ``cat``
    return tuple(touches), tuple(runs)


def shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced shell blocks of a text (```` ```bash ````, ```` ```sh ````, ...);
    bare fences only when no block names a shell (a bare fence beside one is quoted output)."""
    parts = text.split("```")
    labelled: list[str] = []
    bare: list[str] = []
    for body in parts[1:-1:2]:
        lang, _, code = body.partition("\n")
        lang = lang.strip().lower()
        if lang in _SHELL_FENCES and code.strip():
            (labelled if lang else bare).append(code)
    return labelled or bare


def _tool_call(call: dict[str, Any]) -> tuple[tuple[Touch, ...], tuple[Run, ...], str]:
    name = str(call.get("name") or "")
    args = call.get("args") or {}
    if not isinstance(args, dict):
        args = {}
    text = json.dumps(args, ensure_ascii=False, default=str)[:4000]
    path = next((str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]), None)
    command = next((str(args[k]) for k in _COMMAND_KEYS if isinstance(args.get(k), str)), None)
    if path is not None and command in _EDITOR_COMMANDS:  # str_replace_editor and its kin
        return (Touch(path, _EDITOR_COMMANDS[command]),), (), text
    if command is not None and (_SHELL_TOOL.search(name) or path is None):
        touches, runs = shell_actions(command)
        return touches, runs, text
    if path is None:
        return (), (), text
    if _DELETE_TOOL.search(name):
        return (Touch(path, "deleted"),), (), text
    if _CHANGE_TOOL.search(name):
        return (Touch(path, "changed"),), (), text
    if _READ_TOOL.search(name):
        return (Touch(path, "read"),), (), text
    return (), (), text


class ActionIndex:
    """Reads actions from messages, caching each assistant message's parse (one per run).

    Args:
        max_messages: assistant messages whose parse one index remembers.
    """

    def __init__(self, max_messages: int = 100_000) -> None:
        self._parsed: IdentityCache[BaseMessage, tuple[tuple[Any, ...], ...]] = IdentityCache(max_messages)

    def _parse(self, message: BaseMessage) -> tuple[tuple[Any, ...], ...]:
        out: list[tuple[Any, ...]] = []
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                touches, runs, text = _tool_call(dict(call))
                out.append((call.get("id"), touches, runs, text))
            if not message.tool_calls:
                for block in shell_blocks(message_text(message)):
                    touches, runs = shell_actions(block)
                    out.append((None, touches, runs, block[:4000]))
        return tuple(out)

    def actions(self, messages: Sequence[BaseMessage]) -> list[Action]:
        """The actions of ``messages`` in order, each with its result among ``messages``: the
        ``ToolMessage`` answering its call id, or, for a shell block, the tool result that follows
        its assistant message.  Summary messages are not actions."""
        results: dict[str, str] = {}
        for m in messages:
            if isinstance(m, ToolMessage):
                results.setdefault(m.tool_call_id, message_text(m))
        out: list[Action] = []
        for i, m in enumerate(messages):
            if not isinstance(m, AIMessage) or is_summary_message(m):
                continue
            parsed = self._parsed.get_or_put(m, self._parse)
            for call_id, touches, runs, text in parsed:
                if call_id is not None:
                    result = results.get(call_id)
                else:
                    nxt = messages[i + 1] if i + 1 < len(messages) else None
                    result = message_text(nxt) if nxt is not None and is_tool_result(nxt) else None
                out.append(
                    Action(
                        position=i,
                        touches=touches,
                        runs=runs,
                        result=result or "",
                        outcome=outcome_of(result) if result is not None else None,
                        text=text,
                    )
                )
        return out
