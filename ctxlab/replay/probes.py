"""Probe fidelity: does an L2 summary *state* what the later turns of the run needed from the span?

Identifier recall (``needed_recall``, :mod:`ctxlab.replay.fidelity`) counts a name as carried
when it appears; a list of every identifier scores well on it.  A **probe** asks more: for one
thing the agent comes back to after the round, the summary must name it *and* state the
attribute a useful summary gives — what was done to the file, how the command ended, whether the
error was fixed, which way the constraint goes, what the value is.  Everything is checked by the
rules below, deterministically, without a model.

**Where probes come from** (:func:`round_probes`, per L2 round).  The *span* is what the round
replaced (:func:`ctxlab.replay.run_measures.summarized_span`); *later* are the transcript messages
from the round's call on; *available* is what the request still holds without the summary — the
system message, the kept window and the latest user request the round carries verbatim.  A probe
is drawn only for a subject of the span that a later turn uses and that nothing available holds
(so only the summary could have kept it); once per subject per round.  Actions (files touched,
commands run, results, outcomes) are read by :mod:`ctxlab.replay.actions`.

============  ===================================  ==================================  ==============================
kind          subject (from the span)              used later when                     attribute the summary must state
============  ===================================  ==================================  ==============================
``file``      a file an action touched             a later action touches it again     what was done to it: ``changed``
                                                                                       (created/written/edited),
                                                                                       ``deleted``, else ``ran``, else
                                                                                       ``read`` (the strongest action
                                                                                       of the span, the last change
                                                                                       deciding changed/deleted)
``command``   a command run (program + target)     a later action runs the same key    its last outcome in the span:
                                                                                       ``passed`` or ``failed``
``error``     an error class of an error line in   a later assistant turn names it,    ``fixed`` (a later run of the
              the result of a command run          or a later result shows it again    same command in the span
                                                                                       passed without it) or ``open``
``constraint``a sentence of a user message with a  a later assistant turn holds half   its direction: ``never``
              constraint word (must, never, only,  of its content words                (don't, never, avoid, without,
              don't, avoid, ...)                                                       ...) or ``must`` (must, always,
                                                                                       only, make sure, ...)
``value``     a value (number of 4+ digits,        a later assistant turn holds it     the name it was given in the
              version, hex id, code) with a name                                       span (``port`` of
              just before it on its line                                               ``--port 8080``)
============  ===================================  ==================================  ==============================

Whether a summary passes a probe: :mod:`ctxlab.replay.probe_rules` (its statements, the
attribute vocabularies, the rules against listing every attribute).

**What this does not capture.**  Paraphrase beyond the vocabularies; whether a stated attribute
is *true* (a summary saying "passed" for a command that failed passes no probe of that command,
but one saying "failed" twice, for both commands, is not punished for the other); subjects the
actions module cannot see (files named only in prose, commands in unknown tools); uses the later
turns make without naming the subject.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.marks import is_observation, is_summary_message, is_tool_result, is_user_request
from ctxlab.core.messages import message_text
from ctxlab.replay.actions import Action, ActionIndex, error_names, same_file
from ctxlab.replay.identifiers import extract_identifiers, message_search_text
from ctxlab.replay.probe_rules import (
    PROBE_KINDS,
    VOCABULARY,
    Probe,
    check_probes,
    probe_counts,
    statements,
    word_in,
)

__all__ = [
    "PROBE_KINDS",
    "VOCABULARY",
    "Probe",
    "check_probes",
    "probe_counts",
    "round_probes",
    "statements",
]

_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words(
    "about above after again against also because been before being below between both could "
    "does doing down during each every from further have having here itself just more most other "
    "over same should some such than that their them then there these they this those through "
    "under until very what when where which while will with would your yours please first using "
    "make sure must never always only avoid without don't"
)
_VALUE = re.compile(
    r"(?<![\w.-])(?:v?\d+\.\d+\.\d+(?:[.-][\w]+)?|\d{4,}|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
    r"|(?=[A-Z0-9]*\d)(?=(?:[A-Z0-9]*[A-Z]){2})[A-Z0-9]{5,10})(?![\w-])"
)
_KEY = re.compile(r"([A-Za-z][A-Za-z_-]{1,30})[\"']?\s*(?:[:=#]|\bis\b|\bof\b|\bto\b)?\s*[\"'#(]?\s*$")
_KEY_STOP = _words(
    "the a an and or in at on by for with from was were be been has have had it this that as is are "
    "returncode output n"
)
#: what makes a user sentence a constraint (drawing probes), and a negative one
_CONSTRAINT_MARK = re.compile(
    r"\b(?:must|never|always|only|don't|do not|should|avoid|make sure|ensure|need to|needs to|required|"
    r"prefer|instead of|without)\b|不要|别|禁止|不得|勿|避免|不能|必须|务必|一定要|只能|只需",
    re.I,
)
_NEGATIVE_MARK = re.compile(
    r"\b(?:never|don't|do not|should not|shouldn't|must not|mustn't|avoid|without)\b|不要|别|禁止|不得|勿|避免|不能",
    re.I,
)
_CONSTRAINT_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*|\n+")
_SCAN = 100_000


# --- drawing the probes of a round --------------------------------------------------------------


def _path_forms(path: str) -> tuple[str, ...]:
    """The ``/``-suffixes of a path that name it in a summary, longest first, down to its base name."""
    parts = [p for p in path.strip().split("/") if p and p != "."]
    return tuple("/".join(parts[i:]) for i in range(len(parts)))


def _strongest(categories: Sequence[str]) -> str:
    changes = [c for c in categories if c in ("changed", "deleted")]
    if changes:
        return changes[-1]
    return "ran" if "ran" in categories else "read"


def _file_probes(span: list[Action], kept: list[Action], later: list[Action]) -> list[Probe]:
    files: dict[str, list[str]] = {}  # longest path -> categories in order
    for a in span:
        for t in a.touches:
            key = next((k for k in files if same_file(k, t.path)), None)
            if key is None:
                files[t.path] = [t.category]
            else:
                files[key].append(t.category)
                if len(t.path) > len(key):
                    files[t.path] = files.pop(key)
    out: list[Probe] = []
    for path, categories in files.items():
        if any(same_file(path, t.path) for a in kept for t in a.touches):
            continue  # the kept window shows what is being done to it
        use = next((a.position for a in later if any(same_file(path, t.path) for t in a.touches)), None)
        if use is not None:
            out.append(Probe("file", path, _strongest(categories), _path_forms(path), use))
    return out


def _command_probes(span: list[Action], kept: list[Action], later: list[Action]) -> list[Probe]:
    last: dict[str, tuple[str, str]] = {}  # key -> (outcome, what names it)
    for a in span:
        for r in a.runs:
            if a.outcome is None or r.key in ("python", "python -c") or not (r.target or " " in r.key):
                continue
            last[r.key] = (a.outcome, r.target or r.key)
    in_kept = {r.key for a in kept for r in a.runs}
    out: list[Probe] = []
    for key, (outcome, name) in last.items():
        if key in in_kept:
            continue
        use = next((a.position for a in later if any(r.key == key for r in a.runs)), None)
        if use is not None:
            out.append(Probe("command", key, outcome, (name,), use))
    return out


def _error_probes(span: list[Action], later: Sequence[BaseMessage], available: str) -> list[Probe]:
    seen: dict[str, int] = {}  # error -> index in span of the action whose result last showed it
    for i, a in enumerate(span):
        if a.runs:
            for name in error_names(a.result):
                seen[name] = i
    out: list[Probe] = []
    for name, at in seen.items():
        if word_in(name, available):
            continue
        keys = {r.key for r in span[at].runs}
        fixed = any(
            b.outcome == "passed" and not word_in(name, b.result) and keys & {r.key for r in b.runs}
            for b in span[at + 1 :]
        )
        use = None
        for j, m in enumerate(later):
            if isinstance(m, AIMessage):
                if word_in(name, message_search_text(m)):
                    use = j
                    break
            elif is_tool_result(m) and name in error_names(message_text(m)):
                use = j
                break
        if use is not None:
            out.append(Probe("error", name, "fixed" if fixed else "open", (name,), use))
    return out


def _content_words(sentence: str) -> tuple[str, ...]:
    """Up to six content words of a constraint: its identifiers, then its longest other words
    (5+ letters, not common), then Chinese two-character runs; lower case."""
    words: list[str] = [i.lower() for i in sorted(extract_identifiers(sentence))]
    latin = sorted(
        {w.lower() for w in _WORD.findall(sentence) if len(w) >= 5 and w.lower() not in _STOP},
        key=lambda w: (-len(w), w),
    )
    words.extend(latin)
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]{2,}", sentence):
        words.extend(run[i : i + 2] for i in range(0, len(run) - 1, 2))
    words = [
        w for w in dict.fromkeys(words) if not any(w in terms for terms in VOCABULARY["constraint"].values())
    ]
    return tuple(words[:6])


def _constraint_probes(
    span_messages: Sequence[BaseMessage], later: Sequence[BaseMessage], available: str, carried: str
) -> list[Probe]:
    out: list[Probe] = []
    seen: set[str] = set()
    low_available = available.lower()
    for m in span_messages:
        if not is_user_request(m) or is_observation(m):
            continue
        text = message_text(m)
        if carried and text.strip() == carried.strip():
            continue
        for sentence in _CONSTRAINT_SENTENCE.split(text[:_SCAN]):
            sentence = sentence.strip()
            if not 12 <= len(sentence) <= 300 or sentence in seen:
                continue
            mark = _CONSTRAINT_MARK.search(sentence)
            if mark is None:
                continue
            words = _content_words(sentence)
            if len(words) < 2:
                continue
            need = math.ceil(len(words) / 2)
            if sum(1 for w in words if w in low_available) >= need:
                continue
            use = next(
                (
                    j
                    for j, later_m in enumerate(later)
                    if isinstance(later_m, AIMessage)
                    and sum(1 for w in words if w in message_search_text(later_m).lower()) >= need
                ),
                None,
            )
            if use is None:
                continue
            seen.add(sentence)
            polarity = "never" if _NEGATIVE_MARK.search(sentence) else "must"
            out.append(Probe("constraint", sentence, polarity, words, use))
    return out


def _value_probes(
    span_messages: Sequence[BaseMessage], later: Sequence[BaseMessage], available: str
) -> list[Probe]:
    keys: dict[str, str] = {}
    for m in span_messages:
        if is_summary_message(m):
            continue
        text = message_search_text(m)
        text = text if len(text) <= _SCAN else text[: _SCAN // 2] + "\n" + text[-_SCAN // 2 :]
        for match in _VALUE.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            before = text[max(line_start, match.start() - 40) : match.start()]
            named = _KEY.search(before)
            if named is not None and named.group(1).lower() not in _KEY_STOP:
                keys[match.group(0)] = named.group(1)
    out: list[Probe] = []
    for value, key in keys.items():
        if word_in(value, available):
            continue
        use = next(
            (
                j
                for j, m in enumerate(later)
                if isinstance(m, AIMessage) and word_in(value, message_search_text(m))
            ),
            None,
        )
        if use is not None:
            out.append(Probe("value", value, key, (value,), use))
    return out


def _texts(messages: Iterable[BaseMessage | None]) -> str:
    return "\n".join(message_search_text(m) for m in messages if m is not None)


def round_probes(
    span: Sequence[BaseMessage],
    later: Sequence[BaseMessage],
    *,
    kept: Sequence[BaseMessage] = (),
    system: BaseMessage | None = None,
    carried: str = "",
    actions: ActionIndex | None = None,
) -> list[Probe]:
    """The probes of one L2 round (module docstring, "Where probes come from").

    Args:
        span: the summarized messages, in order.
        later: the transcript messages from the round's call on (its recorded answer first).
        kept: the rest of the view the round produced (the kept window; summaries are skipped).
        system: the system message of the request.
        carried: the latest user request the round carries verbatim after its summary (``""``: none).
        actions: the run's action cache (a fresh one when ``None``).

    Returns:
        The probes, by kind in :data:`PROBE_KINDS` order, each once.
    """
    actions = actions or ActionIndex()
    kept = [m for m in kept if not is_summary_message(m)]
    available = _texts([system, *kept]) + "\n" + carried
    span_actions = actions.actions(span)
    kept_actions = actions.actions(kept)
    later_actions = actions.actions(later)
    return [
        *_file_probes(span_actions, kept_actions, later_actions),
        *_command_probes(span_actions, kept_actions, later_actions),
        *_error_probes(span_actions, later, available),
        *_constraint_probes(span, later, available, carried),
        *_value_probes(span, later, available),
    ]
