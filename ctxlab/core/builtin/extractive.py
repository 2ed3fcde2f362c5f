"""The offline extractive summarizer: keeps, by salience, what later turns of an agent come back to.

No model call, deterministic (the same span gives the same summary), bounded: the summary holds at
most :data:`SUMMARY_TOKENS` tokens and never more than the round's summary limit
(:func:`ctxlab.core.summarize.summary_token_limit` of the job's budget); measured, its summary
messages are no larger on average than the structured summarizer's on the public runs and the
bundled sample at T = 16K.  It is a production summarizer for teams that do not want a second
model call (issue 23): select it with the strategy ``ars-extractive``, ``--summarizer-model
extractive``, or the plugin :class:`ForceExtractiveSummarizer` in a middleware.

**What it keeps** (sections, in this order; each a rule pinned by ``tests/test_extractive.py``):

``Task``
    the first user request (of the span, else of the previous summary), up to 400 characters;
    when it is the latest request, only a note: the round carries the latest request verbatim
    (in the view or after the summary), so neither it nor its identifiers spend the budget.
``User constraints and decisions``
    the user's later messages when short, and the sentences of user messages that constrain or
    decide (*must, never, don't, only, instead, use ...*, :data:`CONSTRAINT_WORDS`).
``Open tasks``
    the last assistant text of the span (its plan, up to 800 characters) and lines that name work
    left (*TODO, next, remaining, still*, unchecked ``- [ ]``).
``Files``
    each file the span's actions touched, with what was done to it — ``edited``, ``created``,
    ``deleted``, ``ran``, ``read`` (:mod:`ctxlab.core.builtin.session_facts`), the change last —
    and the function and class names a file the agent wrote defines; the latest touched first.
``Commands``
    each command run (program and target), its last outcome (``passed``/``failed``), how often
    it ran and, when it failed, its first error line; the latest first.
``Errors``
    each error class seen in a command's result, its last error line and whether a later run of
    that command passed without it (``fixed``) or not (``still open``); the latest first.
``Values``
    values (numbers of 4+ digits, versions, hex ids) with the name they were given
    (``port: 8080``); the latest first.
``Identifiers``
    the remaining identifiers (dotted, snake_case and CamelCase names, error names, numbers of 4+
    digits; 4+ characters) by salience, comma-joined, until the budget is used.

Each fact is one line that names its subject and states its attribute, so that a later turn
learns what happened, not only that a name occurred (issue 28; the replay's probe measure,
:mod:`ctxlab.replay.probes`, checks exactly that).  The sections before Identifiers share
:data:`FIXED_SHARE` of the budget (the oldest items of the longest section are dropped first);

Identifiers are packed by salience *per token* (a 40-token offload path must be worth ten short
names), skipping what the kept window or the latest request holds and what an identifier already
listed covers (a path's suffixes, a dotted name's runs); files the kept window names are not
listed either.

**Salience** of an identifier is the sum over the messages that hold it of a *source weight*
(:data:`SOURCE_WEIGHTS`: the agent's own tool-call arguments and text weigh most, then the user,
the previous summary, tool results) times a *recency* factor (0.5 for the first message of the span
to 1.0 for the last), times a *kind* factor (paths, defined names and error names ×1.5, numbers
×0.5).  What the agent wrote or typed itself is what it most often types again.  Ties break by
first appearance, so the order is deterministic.

**Rounds.**  A previous summary (``job.messages[0]``) is one more source: its task is carried, its
constraints and fact lines merged (a new fact about the same file, command, error or value
replaces the old line), its identifiers re-scored with the new ones (so old ones give way
under the budget instead of the summary growing).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab.core.builtin.fact_sections import fact_sections
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.marks import is_observation, is_summary_message, is_user_request, latest_request_of
from ctxlab.core.messages import last_human_index, message_text
from ctxlab.core.summarize import LATEST_REQUEST_CHARS, SummaryJob, SummaryResult, summary_token_limit

__all__ = [
    "CONSTRAINT_WORDS",
    "SOURCE_WEIGHTS",
    "SUMMARY_TOKENS",
    "ExtractiveSummarizer",
    "ForceExtractiveSummarizer",
    "salience",
]

#: the most tokens an extractive summary holds (the structured summarizer's size; tokens)
SUMMARY_TOKENS = 1400
#: characters of the agent's last text kept as its open task
OPEN_TASK_CHARS = 300
#: share of the summary the sections before Identifiers may use (the rest is for identifiers)
FIXED_SHARE = 0.7
#: weight of one occurrence by where it stands (see the module docstring)
SOURCE_WEIGHTS = {"call": 3.0, "assistant": 2.0, "user": 2.5, "summary": 1.5, "tool": 1.0}
#: words that make a user sentence a constraint or a decision
CONSTRAINT_WORDS = (
    "must",
    "never",
    "always",
    "don't",
    "do not",
    "only",
    "instead",
    "should",
    "make sure",
    "avoid",
    "without",
    "use ",
    "prefer",
    "required",
    "不要",
    "必须",
    "只",
)
_HEADERS = (
    "Task",
    "User constraints and decisions",
    "Open tasks",
    "Files",
    "Commands",
    "Errors",
    "Values",
    "Identifiers",
)
#: the fact sections merged across rounds, by header: how a line names its subject
_FACT_SECTIONS = ("Files", "Commands", "Errors", "Values")

_SCAN = 60_000  # characters of one message scanned (head and tail)
_PATH = re.compile(r"(?<![\w])~?/?(?:[\w.@+-]+/)+[\w.@+-]*[A-Za-z_][\w.@+-]*")
_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*")
_NUMBER = re.compile(r"(?<![\w.])\d{4,}(?![\w])")
_DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|func|fn)\s+([A-Za-z_]\w*)", re.M)
_SHELL_FENCES = ("", "bash", "sh", "shell", "console", "zsh")
_OPEN_LINE = re.compile(r"^\s*(?:- \[ \]|TODO|Next|Remaining|Still|Then)\b.*$", re.M | re.I)
_SHELL_WRITE = re.compile(r"(?:cat\s*>{1,2}|tee\s+(?:-a\s+)?|>\s*)\s*['\"]?([\w./~@+-]+\.\w{1,8})")
_WRITE_TOOLS = ("write", "create", "edit", "str_replace", "patch", "insert")
_COMMAND_KEYS = ("command", "cmd", "script", "code")
_PATH_KEYS = ("path", "file_path", "filename", "file", "target_file")


def shell_blocks(text: str) -> list[str]:
    """The bodies of the fenced shell code blocks of ``text`` (```` ```bash ````, ```` ```sh ````,
    a bare fence ...), fences paired in order: what a text-action agent runs."""
    parts = text.split("```")
    out = []
    for body in parts[1:-1:2]:  # an unclosed last fence is not a block
        lang, _, code = body.partition("\n")
        if lang.strip().lower() in _SHELL_FENCES and code.strip():
            out.append(code)
    return out


def _scanned(text: str) -> str:
    return text if len(text) <= _SCAN else text[: _SCAN // 2] + "\n" + text[-_SCAN // 2 :]


def _kind_factor(ident: str) -> float:
    if "/" in ident or ident.endswith(("Error", "Exception", "Warning")):
        return 1.5
    if ident.isdigit():
        return 0.5
    return 1.0


def identifiers(text: str) -> list[str]:
    """The identifiers of ``text`` in order of first appearance, each once: paths, dotted names
    (``pkg.mod``, ``file.py``), snake_case and CamelCase names, error names, numbers of 4+ digits;
    4+ characters.  Plain words (``hello``) are not identifiers."""
    out: OrderedDict[str, None] = OrderedDict()
    text = _scanned(text)
    for m in _PATH.finditer(text):
        s = m.group(0).rstrip(".")
        if len(s) >= 4:
            out[s] = None
    for m in _NAME.finditer(text):
        s = m.group(0).rstrip(".")
        if len(s) >= 4 and ("." in s or "_" in s.strip("_") or re.search(r"[a-z0-9][A-Z]", s)):
            out[s] = None
    for m in _NUMBER.finditer(text):
        out[m.group(0)] = None
    return list(out)


def covered_by(idents: Iterable[str]) -> set[str]:
    """What a summary that names ``idents`` conveys: each identifier, the suffixes of a path
    (``pkg/mod.py`` of ``/repo/pkg/mod.py``) and the runs of a dotted name (``config.get`` of
    ``self.config.get``); a covered identifier costs no more budget."""
    out: set[str] = set()
    for ident in idents:
        out.add(ident)
        sep = "/" if "/" in ident else "."
        parts = [p for p in ident.split(sep) if p]
        if len(parts) > 12:
            continue
        for i in range(len(parts)):
            for j in range(i + 1, len(parts) + 1) if sep == "." else (len(parts),):
                out.add(sep.join(parts[i:j]))
    return out


@dataclass
class _Source:
    """One message as the summarizer reads it: its kind (a key of :data:`SOURCE_WEIGHTS`) and text."""

    kind: str
    text: str
    message: BaseMessage | None = None


@dataclass
class _Facts:
    task: str = ""
    constraints: OrderedDict[str, None] = field(default_factory=OrderedDict)
    open_tasks: list[str] = field(default_factory=list)
    scripts: OrderedDict[str, set[str]] = field(default_factory=OrderedDict)
    #: the fact lines of a previous summary, by section header (merged under the new ones)
    prior: dict[str, list[str]] = field(default_factory=dict)


def recency(position: float) -> float:
    """The recency factor of a message at ``position`` in (0, 1] of the span (1: the last):
    ``0.5 + 0.5 * position``, so the end of the span, nearest the turns to come, weighs most
    (a steeper curve and a previous summary exempt from it both measured lower identifier recall)."""
    return 0.5 + 0.5 * position


def salience(sources: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
    """Identifiers of ``sources`` (``(kind, text)`` in span order; kinds of
    :data:`SOURCE_WEIGHTS`) with their salience, highest first (ties: first appearance first).

    Raises:
        KeyError: a kind that :data:`SOURCE_WEIGHTS` does not have.
    """
    scores: dict[str, float] = {}
    n = len(sources)
    for i, (kind, text) in enumerate(sources):
        weight = SOURCE_WEIGHTS[kind] * recency((i + 1) / n)
        for ident in identifiers(text):
            scores[ident] = scores.get(ident, 0.0) + weight * _kind_factor(ident)
    order = {k: i for i, k in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def _call_text(call: dict[str, Any]) -> str:
    args = call.get("args") or {}
    return " ".join(str(v) for v in args.values() if isinstance(v, (str, int, float)))


def _sources(messages: Sequence[BaseMessage]) -> list[_Source]:
    out: list[_Source] = []
    for m in messages:
        text = message_text(m)
        if is_summary_message(m):
            out.append(_Source("summary", text, m))
        elif isinstance(m, AIMessage):
            if text.strip():
                out.append(_Source("assistant", text, m))
            for call in m.tool_calls:
                out.append(_Source("call", _call_text(dict(call)), m))
        elif isinstance(m, HumanMessage) and not is_observation(m):
            out.append(_Source("user", text, m))
        elif text.strip():
            out.append(_Source("tool", text, m))
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s+|\n+", text) if s.strip()]


def _written(call: dict[str, Any]) -> tuple[str, str] | None:
    """``(path, content)`` of a file a tool call writes, or ``None``."""
    args = call.get("args") or {}
    name = str(call.get("name") or "").lower()
    if any(w in name for w in _WRITE_TOOLS):
        path = next((str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
        if path:
            content = " ".join(str(v) for k, v in args.items() if isinstance(v, str) and k not in _PATH_KEYS)
            return path, content
    command = next((str(args[k]) for k in _COMMAND_KEYS if isinstance(args.get(k), str)), "")
    m = _SHELL_WRITE.search(command)
    if m:
        return m.group(1), command
    return None


def _previous_sections(text: str) -> dict[str, list[str]]:
    """The sections of an earlier extractive summary, by header: their lines (bullets unwrapped)."""
    pattern = re.compile(r"^(" + "|".join(map(re.escape, _HEADERS)) + r"):$", re.M)
    marks = list(pattern.finditer(text))
    found: dict[str, list[str]] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        lines = [ln[2:] if ln.startswith("- ") else ln for ln in text[m.end() : end].strip().splitlines()]
        found[m.group(1)] = [ln for ln in lines if ln.strip()]
    return found


def latest_request(messages: Sequence[BaseMessage], kept: Sequence[BaseMessage] = ()) -> str:
    """The latest user request of the span and the kept window, or the one an earlier summary
    carried: the round keeps it verbatim either way (in the view, or after the summary up to
    :data:`~ctxlab.core.summarize.LATEST_REQUEST_CHARS` characters), so the summary need not
    repeat it.  ``""`` when there is none."""
    both = [*messages, *kept]
    idx = last_human_index(both)
    if idx is not None:
        return message_text(both[idx])
    for m in messages:
        if is_summary_message(m):
            return latest_request_of(m) or ""
    return ""


def _facts(messages: Sequence[BaseMessage], latest: str = "") -> _Facts:
    facts = _Facts()
    last_assistant = ""
    for m in messages:
        text = message_text(m)
        if is_summary_message(m):
            prior = _previous_sections(text)
            facts.task = facts.task or " ".join(prior.get("Task", []))
            for line in prior.get("User constraints and decisions", []):
                facts.constraints[line] = None
            for header in _FACT_SECTIONS:
                facts.prior.setdefault(header, []).extend(prior.get(header, []))
            continue
        if isinstance(m, HumanMessage) and not is_observation(m):
            if is_user_request(m) and not facts.task:
                facts.task = text.strip()[:400]
                rest = _sentences(text)[1:]
                if text == latest:  # carried verbatim by the round: name it only
                    facts.task = "(the latest user request, carried verbatim with this summary)"
                    rest = []
            elif text == latest:
                rest = []
            else:
                rest = [text.strip()] if len(text) <= 300 else _sentences(text)
            for s in rest:
                low = s.lower()
                if len(s) <= 300 and (len(rest) == 1 or any(w in low for w in CONSTRAINT_WORDS)):
                    facts.constraints[s] = None
        if isinstance(m, AIMessage):
            if text.strip():
                last_assistant = text.strip()
            # text-action agents (mini-swe-agent) write their commands in shell fences
            calls: list[dict[str, Any]] = [
                {"name": "bash", "args": {"command": b}} for b in shell_blocks(text)
            ]
            for call_d in [*calls, *(dict(c) for c in m.tool_calls)]:
                written = _written(call_d)
                if written is not None:
                    facts.scripts.setdefault(written[0], set()).update(_DEFINES.findall(written[1]))
    if last_assistant:
        facts.open_tasks.append(last_assistant[-OPEN_TASK_CHARS:])
        facts.open_tasks.extend(
            ln.strip()[:200] for ln in _OPEN_LINE.findall(last_assistant[:-OPEN_TASK_CHARS])
        )
    return facts


def _latest(items: Iterable[str], n: int) -> list[str]:
    """The last ``n`` of ``items``, the latest first."""
    return list(items)[-n:][::-1]


class ExtractiveSummarizer:
    """A deterministic, model-free summary of the span that keeps, by salience, what later turns
    use (see the module docstring for the sections and the salience rule).

    Args:
        max_tokens: the most tokens of a summary (default :data:`SUMMARY_TOKENS`); the round's
            summary limit bounds it too.

    Raises:
        ValueError: ``max_tokens`` < 64.
    """

    name = "extractive"

    def __init__(self, max_tokens: int = SUMMARY_TOKENS) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 64:
            raise ValueError(f"max_tokens={max_tokens!r} is invalid: allowed an integer >= 64 (tokens)")
        self.max_tokens = max_tokens

    def summarize(self, job: SummaryJob) -> SummaryResult:
        """The summary of ``job.messages``: no model call (``calls=0``, no tokens billed)."""
        limit = min(self.max_tokens, summary_token_limit(job.budget_tokens, None))
        text = self.build(job.messages, limit, kept=job.kept)
        return SummaryResult(text=text, calls=0, input_tokens=0, output_tokens=0)

    async def asummarize(self, job: SummaryJob) -> SummaryResult:
        return self.summarize(job)

    def build(
        self, messages: Sequence[BaseMessage], max_tokens: int, kept: Sequence[BaseMessage] = ()
    ) -> str:
        """The summary text of ``messages`` within ``max_tokens`` tokens (estimated); identifiers
        that the ``kept`` window holds are left out of Files and Identifiers (the request keeps
        them anyway)."""
        latest = latest_request(messages, kept)
        facts = _facts(messages, latest)
        sources = _sources(messages)
        carried = [s.text for s in _sources(kept)] + [latest[:LATEST_REQUEST_CHARS]]
        in_view = covered_by(i for text in carried for i in identifiers(text))
        ranked = [kv for kv in salience([(s.kind, s.text) for s in sources]) if kv[0] not in in_view]
        sections: list[tuple[str, list[str]]] = [
            ("Task", [facts.task or "(no user request in this part)"]),
            ("User constraints and decisions", _latest(facts.constraints, 10)),
            ("Open tasks", facts.open_tasks[:4]),
            *fact_sections(messages, kept, facts.prior, facts.scripts),
        ]
        return self._fit(sections, ranked, max_tokens)

    @staticmethod
    def _fit(sections: list[tuple[str, list[str]]], ranked: list[tuple[str, float]], max_tokens: int) -> str:
        """Sections within :data:`FIXED_SHARE` of ``max_tokens`` (the last items of the longest
        section dropped first), then identifiers (paths first) by salience in what is left."""

        def render(parts: list[tuple[str, list[str]]]) -> str:
            return "\n\n".join(
                f"{h}:\n" + ("\n".join(f"- {i}" for i in items) if h != "Task" else "\n".join(items))
                for h, items in parts
                if items
            )

        fixed_share = int(max_tokens * FIXED_SHARE)
        sections = [(h, list(items)) for h, items in sections]
        while estimate_text_tokens(render(sections)) > fixed_share:
            longest = max(range(1, len(sections)), key=lambda k: (len(sections[k][1]), k))
            if not sections[longest][1]:
                sections[0] = ("Task", [sections[0][1][0][: max(100, len(sections[0][1][0]) // 2)]])
                if len(sections[0][1][0]) <= 100:
                    break
                continue
            sections[longest][1].pop()
        head = render(sections)
        room = max_tokens - estimate_text_tokens(head) - 16
        files: list[str] = []
        names: list[str] = []
        covered = covered_by(identifiers(head))
        used = 0
        costs = {ident: estimate_text_tokens(ident) + 1 for ident, _ in ranked}
        by_density = sorted(ranked, key=lambda kv: -kv[1] / costs[kv[0]])  # stable: ties keep salience order
        for ident, _score in by_density:
            if ident in covered:
                continue
            cost = costs[ident]
            if used + cost > room:
                continue
            (files if "/" in ident else names).append(ident)
            covered |= covered_by([ident])
            used += cost
        listed = [*files, *names]
        tail = ["Identifiers:\n" + ", ".join(listed)] if listed else []
        return "\n\n".join([head, *tail])


class ForceExtractiveSummarizer:
    """Plugin: always summarize with :class:`ExtractiveSummarizer`, even when a model is
    available (the ``ars-extractive`` strategy)."""

    name = "extractive-summarizer"

    @hookimpl
    def ctxlab_get_summarizer(self, model: Any, settings: Any) -> Any:
        return ExtractiveSummarizer()
