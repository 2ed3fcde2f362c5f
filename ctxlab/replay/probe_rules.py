"""Whether an L2 summary passes a probe (:mod:`ctxlab.replay.probes`): its statements, the words
that state an attribute, and the rules that keep a list of every attribute from passing.

**When a summary passes a probe** (:func:`check_probes`).  The summary is cut into *statements*:
its lines; a line longer than 240 characters into sentences, a sentence still longer at commas.
A probe passes when one statement both *names* the subject and *states* the attribute:

* names: the file's path, a ``/``-suffix of it or its base name; the command's target (its
  key when it has none); the error class name; half of the constraint's content words; the
  value (all as whole words, case-sensitive except constraint words);
* states: a word of the attribute's vocabulary (:data:`VOCABULARY`, English and Chinese) among the
  statement's *prose words* — identifiers (tokens with ``/ . _ =``, digits or inner capitals) are
  not prose, so ``test_failed.py`` states nothing.  For outcomes and error status a word preceded
  (within two words) by a negation (``not``, ``no``, ``never``, ``n't``) counts for the other side.
  A statement that names more than half of a kind's categories (both, for the two-sided kinds)
  states the expected one only when it is the last named: a line listing every outcome says
  nothing.  For a value: the name it was given, as a whole word or identifier (``--port``
  names ``port``; ``listen_port`` does not), in the clause around the value (40 characters
  before it, 20 after, not across a comma or semicolon).

So a list of names passes nothing; "``reproduce.py``: changed, ran: failed" passes the file and
the command probes of that script.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "PROBE_KINDS",
    "VOCABULARY",
    "Probe",
    "check_probes",
    "probe_counts",
    "statements",
    "word_in",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: the kinds of probe, in report order
PROBE_KINDS = ("file", "command", "error", "constraint", "value")

#: per kind, per attribute: the words that state it (lower case; Chinese words matched as text)
VOCABULARY: dict[str, dict[str, frozenset[str]]] = {
    "file": {
        "read": _words(
            "read reads reading viewed view views viewing inspected inspect inspecting opened open "
            "examined examine looked checked displayed showed shown listed searched grepped "
            "查看 读取 阅读 打开 检查"
        ),
        "changed": _words(
            "changed change changes created create creates wrote written write writes edited edit "
            "edits editing modified modify modifies patched patch updated update updates replaced "
            "fixed fix rewrote rewritten refactored added saved generated amended "
            "修改 编辑 创建 新建 写入 更新 修复 添加"
        ),
        "ran": _words("ran run runs running executed execute executes tested invoked 运行 执行"),
        "deleted": _words("deleted delete deletes removed remove removes 删除 移除"),
    },
    "command": {
        "failed": _words(
            "failed fails fail failing failure failures error errors errored crashed crash crashes "
            "broken broke raised raises exception traceback nonzero 失败 报错 错误 异常"
        ),
        "passed": _words(
            "passed passes pass passing succeeded succeeds success successful successfully ok works "
            "worked working clean green fine 成功 通过 正常"
        ),
    },
    "error": {
        "fixed": _words(
            "fixed resolved solved gone addressed passes passed passing works working 已修复 已解决 解决"
        ),
        "open": _words(
            "open unresolved unfixed unsolved still remains remaining persists persisting outstanding "
            "pending unfixed 未解决 未修复 仍然 依然 仍"
        ),
    },
    "constraint": {
        "never": _words(
            "not never don't dont avoid without no cannot can't mustn't shouldn't nor forbidden "
            "不要 别 不能 禁止 不得 勿 避免 不"
        ),
        "must": _words(
            "must always only ensure sure required require requires need needs should prefer use "
            "必须 只 务必 一定 需要 要"
        ),
    },
}
_TWO_SIDED = ("command", "error")
_NEGATORS = _words("not no never didn't doesn't isn't wasn't hasn't haven't cannot can't won't nothing")
_LONG = 240
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_IDENT_TOKEN = re.compile(r"[/._\\=]|\d|[a-z][A-Z]")
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class Probe:
    """One probe (module docstring).

    Attributes:
        kind: one of :data:`PROBE_KINDS`.
        subject: the path, command key, error class, constraint sentence or value.
        attribute: what the summary must state: a key of :data:`VOCABULARY` ``[kind]``, or for a
            value the name it was given.
        names: what names the subject in a statement (any one; for a constraint, its content
            words, half of which must appear).
        used_at: the index in ``later`` of the first message that uses it.
    """

    kind: str
    subject: str
    attribute: str
    names: tuple[str, ...]
    used_at: int

    def as_dict(self) -> dict[str, Any]:
        """``kind``, ``subject`` (up to 200 characters), ``attribute`` and ``used_at``."""
        return {
            "kind": self.kind,
            "subject": self.subject[:200],
            "attribute": self.attribute,
            "used_at": self.used_at,
        }


# --- statements and what they state -----------------------------------------------------------


def statements(text: str) -> list[str]:
    """A summary cut into statements: its lines; a line over 240 characters into sentences, a
    sentence still over 240 characters at commas."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if len(line) <= _LONG:
            out.append(line)
            continue
        for sentence in re.split(r"(?<=[.!?;。；！？])\s+", line):
            if len(sentence) <= _LONG:
                out.append(sentence)
            else:
                out.extend(p for p in re.split(r",\s+|，", sentence) if p.strip())
    return out


@lru_cache(maxsize=65_536)
def _prose(statement: str) -> tuple[tuple[int, str], ...]:
    """The prose words of a statement with their positions: Latin words (lower case) of the
    tokens that are not identifiers, and the Chinese vocabulary words found in its text."""
    found: list[tuple[int, str]] = []
    at = 0
    for token in statement.split(" "):
        core = token.strip("`'\"()[]{}<>,;:!?*")
        if core and not _IDENT_TOKEN.search(core.rstrip(".")):
            found.extend((at + m.start(), m.group(0).lower()) for m in _WORD.finditer(token))
        at += len(token) + 1
    if _CJK.search(statement):
        for term in _CJK_TERMS:
            start = statement.find(term)
            while start >= 0:
                found.append((start, term))
                start = statement.find(term, start + 1)
    return tuple(sorted(found))


_CJK_TERMS = tuple(
    sorted({w for kind in VOCABULARY.values() for words in kind.values() for w in words if _CJK.search(w)})
)


def _named(statement: str, kind: str) -> list[str]:
    """The categories of ``kind`` the statement names, in order of their last mention (negated
    words of a two-sided kind count for the other side)."""
    vocab = VOCABULARY[kind]
    words = _prose(statement)
    last: dict[str, int] = {}
    for i, (pos, w) in enumerate(words):
        for category, terms in vocab.items():
            if w in terms:
                if kind in _TWO_SIDED and any(
                    p in _NEGATORS or p.endswith("n't") for _, p in words[max(0, i - 2) : i]
                ):
                    category = next(c for c in vocab if c != category)
                last[category] = pos
    return sorted(last, key=last.__getitem__)


def _states(statement: str, kind: str, expected: str) -> bool:
    named = _named(statement, kind)
    if expected not in named:
        return False
    limit = 1 if kind in _TWO_SIDED or kind == "constraint" else len(VOCABULARY[kind]) // 2
    return len(named) <= limit or named[-1] == expected


def word_in(word: str, statement: str) -> bool:
    """Whether ``word`` occurs in ``statement`` as a whole word (not inside a longer name)."""
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", statement) is not None


def _names(text: str) -> set[str]:
    """The names of a statement, lower case: its words and identifiers whole (``--port`` is
    ``port``; ``listen_port`` is not ``port``)."""
    return {t.lower().strip("-") for t in re.findall(r"[A-Za-z][\w-]*", text)}


def _names_value(statement: str, value: str, name: str) -> bool:
    """Whether the statement gives ``value`` its ``name``: the name within the clause around the
    value (up to 40 characters before it and 20 after, not across a comma or semicolon)."""
    for m in re.finditer(rf"(?<![\w]){re.escape(value)}(?![\w])", statement):
        before = re.split(r"[,;]\s", statement[max(0, m.start() - 40) : m.start()])[-1]
        after = re.split(r"[,;]\s", statement[m.end() : m.end() + 20])[0]
        if name.lower() in _names(before) | _names(after):
            return True
    return False


def _passes(probe: Probe, statement: str) -> bool:
    if probe.kind == "constraint":
        low = statement.lower()
        hits = sum(1 for w in probe.names if w in low)
        return hits >= math.ceil(len(probe.names) / 2) and _states(statement, "constraint", probe.attribute)
    if not any(word_in(n, statement) for n in probe.names):
        return False
    if probe.kind == "value":
        return _names_value(statement, probe.subject, probe.attribute)
    return _states(statement, probe.kind, probe.attribute)


def check_probes(probes: Sequence[Probe], text: str) -> list[bool]:
    """Whether ``text`` (a summary) passes each probe (module docstring, "When a summary passes")."""
    parts = statements(text)
    return [any(_passes(p, s) for s in parts) for p in probes]


def probe_counts(probes: Sequence[Probe], passed: Sequence[bool]) -> dict[str, list[int]]:
    """Per kind of :data:`PROBE_KINDS`: ``[probes, passed]``."""
    out = {k: [0, 0] for k in PROBE_KINDS}
    for p, ok in zip(probes, passed, strict=True):
        out[p.kind][0] += 1
        out[p.kind][1] += int(ok)
    return out
