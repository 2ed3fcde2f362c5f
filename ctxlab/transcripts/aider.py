"""Aider chat history (SOURCES.md format **F15**): ``.aider.chat.history.md``, text mode.

Shape (Markdown, appended to by every session): ``# aider chat started at <time>`` opens a
session; ``#### <text>`` lines are what the user typed (one input may span several such lines);
``> `` lines are Aider's console output (the start-up banner, commit and token lines, lint and test
output, edit errors); every other line is the model's reply, with its edit blocks (``<<<<<<<
SEARCH`` / ``=======`` / ``>>>>>>> REPLACE``, usually inside a fenced block).  Lines inside a
fenced block of a reply always belong to the reply.  Aider ends user and console lines with two
spaces (a Markdown line break); they are dropped.  There are no tool calls and no ids, and the
repository map and file contents Aider put in each prompt are not in the file.

Conversion (text mode, like mini-swe-agent):

* a user input -> HumanMessage; a command (``/add``, ``/drop``, ``/run``, ``!cmd`` ...) is not sent
  to the model and is only counted (``metadata["commands"]``), except ``/ask``, ``/code``,
  ``/architect`` and ``/context`` whose text is; ``/clear`` and ``/reset`` empty the model's
  context, so they start a new run;
* a model reply -> AIMessage (its edit blocks are its actions; ``metadata["edit_blocks"]`` counts
  the ``<<<<<<< SEARCH`` lines);
* console output after a reply -> HumanMessage marked as a text observation (what came of the
  reply: applied edits, lint/test output and edit errors Aider reflects to the model); console
  output of ``/run``/``/test`` that the user added to the chat (``Add ... to the chat? ... y`` or
  ``Added N lines of output to the chat``) -> observation too; any other console block (the
  banner, acknowledgements of commands) is not a message (``metadata["console_blocks_skipped"]``).

Runs: one per session, split at ``/clear``/``/reset``; ``run_id`` is the file name when there is
one run, else ``session<n>`` (``session<n>.<k>`` for the k-th part after a clear).  The model is
read from the banner (``Model:``/``Models:``/``Main model:``).

Errors: ``line 1`` when the file holds no user input or model reply.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ctxlab.transcripts._util import MessageBuilder, read_text, split_lines, stripped_head
from ctxlab.transcripts.base import Transcript, TranscriptError

_SESSION = re.compile(r"\A# aider chat started at (?P<time>.*?)\s*\Z")
_FENCE = re.compile(r"\A\s*```")
_MODEL = re.compile(r"\A(?:Main model|Models?): (?P<model>\S+)")
_ADDED = re.compile(
    r"(?m)^(Add .* to the chat\?.*:\s*y(es)?\s*$|Added \d+ lines? of output to the chat)", re.I
)
SENT_COMMANDS = frozenset({"ask", "code", "architect", "context"})
CLEAR_COMMANDS = frozenset({"clear", "reset"})
RUN_COMMANDS = frozenset({"run", "test"})


def _unbreak(line: str) -> str:
    return line[:-2] if line.endswith("  ") else line


@dataclass
class Block:
    """A run of lines of one kind: ``"session"``, ``"user"``, ``"console"`` or ``"reply"``."""

    kind: str
    line: int
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


def blocks(text: str) -> list[Block]:
    """The file as blocks in order (see the module docstring for the line kinds)."""
    out: list[Block] = []
    in_fence = False
    for n, raw in enumerate(split_lines(text), 1):
        cur = out[-1] if out else None
        if cur is not None and cur.kind == "reply" and in_fence and not _SESSION.match(raw):
            cur.lines.append(raw)
            in_fence = not _FENCE.match(raw)
            continue
        in_fence = False
        if _SESSION.match(raw):
            out.append(Block("session", n, [raw]))
        elif raw.startswith("####") and (raw == "####" or raw.startswith("#### ")):
            line = _unbreak(raw[5:])
            if cur is not None and cur.kind == "user":
                cur.lines.append(line)
            else:
                out.append(Block("user", n, [line]))
        elif raw == ">" or raw.startswith("> "):
            line = _unbreak(raw[2:])
            if cur is not None and cur.kind == "console":
                cur.lines.append(line)
            else:
                out.append(Block("console", n, [line]))
        elif not raw.strip():
            if cur is not None and cur.kind == "reply":
                cur.lines.append(raw)
            elif cur is not None and cur.kind == "user":
                out.append(Block("gap", n))  # a blank line ends a user input
        else:
            if cur is None or cur.kind != "reply":
                out.append(Block("reply", n, []))
            out[-1].lines.append(raw)
            in_fence = bool(_FENCE.match(raw))
    return [b for b in out if b.kind != "gap"]


@dataclass
class _Run:
    builder: MessageBuilder
    session: int
    part: int
    started: str
    commands: Counter[str] = field(default_factory=Counter)
    edit_blocks: int = 0
    console_skipped: int = 0


class AiderHistoryFormat:
    name = "aider_history"
    description = "Aider .aider.chat.history.md (F15): #### user lines, > console output, replies"

    def sniff(self, path: Path, head: str) -> bool:
        h = stripped_head(head)
        return h.startswith("# aider chat started at ") or (
            path.name.endswith(".aider.chat.history.md") and "\n#### " in h
        )

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        runs: list[_Run] = []
        model: str | None = None
        session, part, started = 0, 0, ""
        prev = "start"  # what the previous block was: start / user / command:<name> / reply

        def new_run() -> _Run:
            runs.append(_Run(MessageBuilder(""), session, part, started))
            return runs[-1]

        run = new_run()
        for block in blocks(read_text(path)):
            if block.kind == "session":
                m = _SESSION.match(block.lines[0])
                session, part, prev, started = session + 1, 0, "start", m.group("time") if m else ""
                run = new_run()
            elif block.kind == "user":
                command = _command(block.text)
                if command is None:
                    run.builder.human(block.text)
                    prev = "user"
                    continue
                name, rest = command
                run.commands[name] += 1
                prev = f"command:{name}"
                if name in CLEAR_COMMANDS:
                    part += 1
                    run = new_run()
                elif name in SENT_COMMANDS and rest:
                    run.builder.human(rest)
                    prev = "user"
            elif block.kind == "reply":
                run.builder.ai(block.text)
                run.edit_blocks += sum(1 for line in block.lines if line.startswith("<<<<<<< SEARCH"))
                prev = "reply"
            else:  # console
                if prev == "start" and model is None:
                    model = _first_model(block.lines)
                ran = prev.startswith("command:") and prev.split(":", 1)[1] in RUN_COMMANDS
                if prev == "reply" or (ran and _ADDED.search(block.text)):
                    run.builder.human(block.text, observation=True)
                    prev = "observation"
                else:
                    run.console_skipped += 1
        kept = [r for r in runs if r.builder.messages]
        if not kept:
            raise TranscriptError(path, "line 1", "no user input or model reply in the chat history")
        return [self._transcript(path, r, model, single=len(kept) == 1) for r in kept]

    def _transcript(self, path: Path, r: _Run, model: str | None, *, single: bool) -> Transcript:
        run_id = path.name if single else f"session{r.session}" + (f".{r.part + 1}" if r.part else "")
        for i, msg in enumerate(r.builder.messages):  # ids were made before the run id was known
            msg.id = f"{run_id}-{i}"
        r.builder.run_id = run_id
        meta = {
            "session": r.session,
            "started": r.started or None,
            "after_clear": r.part > 0,
            "commands": dict(r.commands),
            "edit_blocks": r.edit_blocks,
            "console_blocks_skipped": r.console_skipped,
        }
        return r.builder.transcript(path, self.name, model=model, metadata=meta)

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


def _command(text: str) -> tuple[str, str] | None:
    """``(name, rest)`` of a ``/command rest`` or ``!shell`` input, else ``None``."""
    if text.startswith("!"):
        return "run", text[1:].strip()
    m = re.match(r"\A/([A-Za-z][\w-]*)\s*(.*)\Z", text, re.S)
    return (m.group(1).lower(), m.group(2).strip()) if m else None


def _first_model(lines: list[str]) -> str | None:
    for line in lines:
        if m := _MODEL.match(line):
            return m.group("model")
    return None


FORMAT = AiderHistoryFormat()
