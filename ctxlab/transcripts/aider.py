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
  the ``<<<<<<< SEARCH`` lines); the ``Tokens: N sent[, W cache write][, H cache hit], M
  received`` line Aider prints after it is its recorded usage (``usage_metadata``; Aider rounds
  counts above 1,000 to ``5.1k``/``18k``);
* console output after a reply -> HumanMessage marked as a text observation, **only what Aider
  sent the model** (lint and test output, the errors of edits that failed to apply): the lines
  only the user saw (usage, ``Applied edit``, ``Commit``, ``You can use /undo``, questions,
  warnings, documentation links; :mod:`ctxlab.transcripts.aider_console`) are left out and
  counted (``metadata["console_lines_dropped"]``), and a block of nothing else is no message; the
  error shown with ``Only 3 reflections allowed, stopping.`` was never sent.  Console output of
  ``/run``/``/test`` that the user added to the chat -> observation too; any other console block
  (the banner, acknowledgements of commands) is not a message
  (``metadata["console_blocks_skipped"]``).  A console message of several lines (Aider prefixes
  only its first line with ``> ``) stays one console block.
* **architect mode**: Aider re-sends an architect's reply (its plan) as the user input of a fresh
  editor coder, which the history file writes as ``####`` lines equal to the reply.  Such an
  input is not a typed message: it starts an **editor run** of its own (``run_id``
  ``<run>.editor<k>``, ``metadata["role"] = "editor"``, ``parent_run``, ``parent_message``: the
  plan's id, also in the plan message's ``additional_kwargs["aider_plan_of"]``), holding the plan,
  the editor's replies and what was reflected to it, with the editor model of the banner; the
  architect run (``role`` ``"architect"``, ``editor_runs``) then gets the two turns Aider adds to
  its history ("I made those changes to the files." / "Ok."), marked ``SYNTHETIC_KEY`` (the
  "Ok." is no model call).  From ``aider/coders/architect_coder.py`` (Apache-2.0).

Runs: one per session, split at ``/clear``/``/reset``; ``run_id`` is the file name when there is
one run, else ``session<n>`` (``session<n>.<k>`` for the k-th part after a clear); editor runs
follow their architect run.  The models are read from the banner (``Model:``/``Models:``/``Main
model:``; ``Editor model:``).

Errors: ``line 1`` when the file holds no user input or model reply.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._util import MessageBuilder, read_text, split_lines, stripped_head
from ctxlab.transcripts.aider_console import model_lines, usage_of
from ctxlab.transcripts.base import SYNTHETIC_KEY, Transcript, TranscriptError

_SESSION = re.compile(r"\A# aider chat started at (?P<time>.*?)\s*\Z")
_FENCE = re.compile(r"\A\s*```")
_MODEL = re.compile(r"\A(?:Main model|Models?): (?P<model>\S+)")
_EDITOR_MODEL = re.compile(r"\AEditor model: (?P<model>\S+)")
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


def _continues_console(out: list[Block]) -> bool:
    """Aider prefixes only the first line of a console message with ``> ``: the rest of a
    message of several lines looks like a reply, but it follows a console block, ends with
    Aider's line break (two spaces) and runs into the next console line without a blank line."""
    if len(out) < 2 or out[-1].kind != "reply" or out[-2].kind != "console":
        return False
    lines = out[-1].lines
    return bool(lines) and lines[-1].endswith("  ") and bool(lines[-1].strip())


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
            if _continues_console(out):  # a console message of several lines, not a reply
                reply = out.pop()
                out[-1].lines.extend(reply.lines)
                cur = out[-1]
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
    console_lines_dropped: int = 0
    synthetic: int = 0
    #: the architect run an editor run belongs to, and the id of the plan it carried out
    architect: _Run | None = None
    plan_index: int = 0
    editors: list[_Run] = field(default_factory=list)
    run_id: str = ""


def _plain(text: str) -> str:
    """Text compared line by line without trailing blanks (a re-sent plan against its reply)."""
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


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
        editor_model: str | None = None
        session, part, started = 0, 0, ""
        prev = "start"  # what the previous block was: start / user / command:<name> / reply / observation
        editor: _Run | None = None  # the editor run an architect plan started, while it lasts

        def new_run() -> _Run:
            runs.append(_Run(MessageBuilder(""), session, part, started))
            return runs[-1]

        def end_editor() -> None:
            nonlocal editor
            if editor is not None and editor.architect is not None:
                # Aider tells the architect the editor is done (a turn no model wrote)
                arch = editor.architect
                made_up: dict[str, Any] = {SYNTHETIC_KEY: True}
                arch.builder.human("I made those changes to the files.", **made_up)
                arch.builder.ai("Ok.", [], **made_up)
                arch.synthetic += 2
            editor = None

        run = new_run()
        for block in blocks(read_text(path)):
            target = editor if editor is not None else run
            if block.kind == "session":
                end_editor()
                m = _SESSION.match(block.lines[0])
                session, part, prev, started = session + 1, 0, "start", m.group("time") if m else ""
                run = new_run()
            elif block.kind == "user":
                plan = _last_reply(run) if editor is None and prev in ("reply", "console") else None
                if plan is not None and _plain(block.text) == _plain(str(plan.content)):
                    # an architect's plan, re-sent by Aider as the editor's request
                    at = len(run.builder.messages) - 1
                    editor = _Run(MessageBuilder(""), session, part, started, architect=run, plan_index=at)
                    run.editors.append(editor)
                    editor.builder.human(block.text, aider_plan_of=None)
                    prev = "user"
                    continue
                end_editor()
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
                target.builder.ai(block.text)
                target.edit_blocks += sum(1 for line in block.lines if line.startswith("<<<<<<< SEARCH"))
                prev = "reply"
            else:  # console
                if prev == "start" and model is None:
                    model = _first_model(block.lines)
                    editor_model = _first_model(block.lines, _EDITOR_MODEL)
                prev = self._console(block, target, prev)
        end_editor()
        kept = [r for r in runs if r.builder.messages]
        if not kept:
            raise TranscriptError(path, "line 1", "no user input or model reply in the chat history")
        for r in kept:
            r.run_id = (
                path.name if len(kept) == 1 else f"session{r.session}" + (f".{r.part + 1}" if r.part else "")
            )
            for k, e in enumerate(r.editors, 1):
                e.run_id = f"{r.run_id}.editor{k}"
        return [
            self._transcript(path, x, editor_model or model if x.architect else model)
            for r in kept
            for x in (r, *r.editors)
        ]

    def _console(self, block: Block, target: _Run, prev: str) -> str:
        """One console block: its usage lines go to the latest call of ``target`` without usage;
        what Aider sent the model after a reply (lint/test output, failed edits) or after a
        ``/run`` whose output was added becomes a text observation; the rest is dropped."""
        kept, tokens, dropped = model_lines(block.lines)
        target.console_lines_dropped += dropped
        for line in tokens:
            ai = next((m for m in reversed(target.builder.messages) if isinstance(m, AIMessage)), None)
            usage = usage_of(line)
            if ai is not None and ai.usage_metadata is None and usage is not None:
                ai.usage_metadata = usage  # type: ignore[assignment]
        ran = prev.startswith("command:") and prev.split(":", 1)[1] in RUN_COMMANDS
        if kept and (prev == "reply" or (ran and _ADDED.search(block.text))):
            target.builder.human("\n".join(kept), observation=True)
            return "observation"
        if not kept and prev == "reply":
            return "console"  # only what the user saw (usage, applied edits, commits)
        if not kept and ran:
            return prev
        target.console_skipped += 1
        return prev if prev != "reply" else "console"

    def _transcript(self, path: Path, r: _Run, model: str | None) -> Transcript:
        for i, msg in enumerate(r.builder.messages):  # ids were made before the run id was known
            msg.id = f"{r.run_id}-{i}"
        r.builder.run_id = r.run_id
        meta: dict[str, Any] = {
            "session": r.session,
            "started": r.started or None,
            "after_clear": r.part > 0,
            "commands": dict(r.commands),
            "edit_blocks": r.edit_blocks,
            "console_blocks_skipped": r.console_skipped,
            "console_lines_dropped": r.console_lines_dropped,
        }
        if r.synthetic:
            meta["synthetic_messages"] = r.synthetic
        if r.architect is not None:
            plan = f"{r.architect.run_id}-{r.plan_index}"
            r.builder.messages[0].additional_kwargs["aider_plan_of"] = plan
            meta.update(role="editor", parent_run=r.architect.run_id, parent_message=plan)
        elif r.editors:
            meta.update(role="architect", editor_runs=[e.run_id for e in r.editors])
        return r.builder.transcript(path, self.name, model=model, metadata=meta)

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


def _last_reply(run: _Run) -> AIMessage | None:
    last = run.builder.messages[-1] if run.builder.messages else None
    return last if isinstance(last, AIMessage) and not last.additional_kwargs.get(SYNTHETIC_KEY) else None


def _command(text: str) -> tuple[str, str] | None:
    """``(name, rest)`` of a ``/command rest`` or ``!shell`` input, else ``None``."""
    if text.startswith("!"):
        return "run", text[1:].strip()
    m = re.match(r"\A/([A-Za-z][\w-]*)\s*(.*)\Z", text, re.S)
    return (m.group(1).lower(), m.group(2).strip()) if m else None


def _first_model(lines: list[str], pattern: re.Pattern[str] = _MODEL) -> str | None:
    for line in lines:
        if m := pattern.match(line):
            return m.group("model")
    return None


FORMAT = AiderHistoryFormat()
