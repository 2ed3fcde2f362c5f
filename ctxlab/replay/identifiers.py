"""Identifiers in message texts: what the ``retention`` metric and summary fidelity look for.

An identifier is a path, a file name, a dotted / snake_case / CamelCase name, an error class name
or a number of 4 or more digits, at least 4 characters long (:data:`IDENTIFIER_PATTERNS`).  An
identifier is *present* in a text when it was extracted from it, or is a path suffix
(``pkg/mod.py`` of ``/repo/pkg/mod.py``) or a run of dotted segments (``os.path`` of
``os.path.join``) of an identifier extracted from it (:func:`expand_identifier`).  The metric's
definition is in :mod:`ctxlab.replay.metrics` (``retention``); these names are re-exported there.

:class:`IdentifierIndex` caches the sets per message object; :class:`EarlierIdentifiers` answers
"which of these identifiers appeared earlier in the run" without extracting the identifiers of
every earlier message (only those of the messages that may hold one of them).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Container

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from ctxlab.core.identity import IdentityCache
from ctxlab.core.messages import message_text

__all__ = [
    "IDENTIFIER_PATTERNS",
    "MESSAGES_CACHED",
    "WORDS_CACHED",
    "EarlierIdentifiers",
    "IdentifierIndex",
    "expand_identifier",
    "extract_identifiers",
    "extract_identifiers_whole",
    "message_search_text",
]

_EXT = (
    r"(?:py|pyi|pyx|ipynb|js|mjs|cjs|ts|tsx|jsx|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|m|"
    r"sh|bash|zsh|ps1|pl|lua|r|jl|dart|ex|exs|erl|hs|ml|pony|sql|md|rst|txt|log|csv|tsv|json|jsonl|"
    r"yaml|yml|toml|ini|cfg|conf|env|lock|xml|html|htm|css|scss|vue|svelte|proto|tf|gradle|mk|"
    r"cmake|dockerfile|patch|diff|traj|pdf|png|jpg|jpeg|gif|svg|zip|gz|tar)"
)

#: the identifier patterns of ``retention`` (names for documentation; all are applied)
IDENTIFIER_PATTERNS: dict[str, re.Pattern[str]] = {
    # /abs/path, ./rel/path, ~/path (at least one segment after the slash)
    "absolute path": re.compile(r"(?<![\w./~:-])(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]*\w"),
    # dir/sub/file.ext (relative, with an extension)
    "relative path": re.compile(r"(?<![\w./~:-])(?:[\w.@+-]+/)+[\w@+-]+\.[A-Za-z0-9]{1,10}(?![\w/])"),
    # file.ext with a known source/data extension
    "file name": re.compile(rf"(?<![\w./-])[\w-]+(?:\.[\w-]+)*\.{_EXT}(?![\w/])", re.IGNORECASE),
    # module.func, obj.attr.method (two or more dotted segments)
    "dotted name": re.compile(r"(?<![\w./-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/])"),
    # snake_case and __dunder__ names
    "snake_case": re.compile(
        r"(?<![\w./-])(?:__[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*__|_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*)(?![\w/])"
    ),
    # CamelCase / camelCase with at least two humps
    "CamelCase": re.compile(r"(?<![\w./-])(?:[A-Z][a-z0-9]+|[a-z]+)(?:[A-Z][a-z0-9]*)+(?![\w/])"),
    # error and warning class names: ValueError, OSError, KeyboardInterrupt is CamelCase
    "error name": re.compile(r"(?<![\w./-])[A-Z]\w*(?:Error|Exception|Warning)(?![\w/])"),
    # numbers of 4 or more digits: issue numbers, line numbers, ports, ids
    "number": re.compile(r"(?<![\w.])\d{4,}(?![\w])"),
}
_MIN_LEN = 4
_STOP = frozenset({"e.g.", "i.e.", "e.g", "i.e", "etc."})
#: characters of one text scanned for identifiers (head and tail of larger texts)
_SCAN_CHARS = 400_000
#: messages whose identifiers (and canonical keys) one run remembers
MESSAGES_CACHED = 200_000


#: a word may hold an identifier only if it has one of these (a necessary condition of every
#: pattern of :data:`IDENTIFIER_PATTERNS`: a path has ``/``, a file or dotted name ``.``, snake_case
#: ``_``, a number 4 digits, CamelCase a lower letter or digit before a capital, an error name its
#: suffix); words without any are skipped without running the patterns
_MAYBE_IDENTIFIER = re.compile(r"[/._]|\d{4}|[a-z0-9][A-Z]|Error|Exception|Warning")
#: distinct words whose identifiers one :class:`IdentifierIndex` remembers (then it starts over)
WORDS_CACHED = 1_000_000


#: per pattern of :data:`IDENTIFIER_PATTERNS`, a necessary condition of a match (a substring or a
#: pattern the word must contain): a pattern whose condition fails is not run on the word
_GATES: dict[str, str | re.Pattern[str]] = {
    "absolute path": "/",
    "relative path": "/",
    "file name": ".",
    "dotted name": ".",
    "snake_case": "_",
    "CamelCase": re.compile(r"[a-z0-9][A-Z]"),
    "error name": re.compile(r"Error|Exception|Warning"),
    "number": re.compile(r"\d{4}"),
}
_GATED = tuple((_GATES[name], pattern) for name, pattern in IDENTIFIER_PATTERNS.items())


def _word_identifiers(word: str) -> tuple[str, ...]:
    """The identifiers of one whitespace-free word (see :func:`extract_identifiers`), in the
    order of :data:`IDENTIFIER_PATTERNS`; each pattern runs only when its gate holds."""
    if len(word) < _MIN_LEN or _MAYBE_IDENTIFIER.search(word) is None:
        return ()
    out: list[str] = []
    for gate, pattern in _GATED:
        if (gate not in word) if isinstance(gate, str) else (gate.search(word) is None):
            continue
        for m in pattern.finditer(word):
            s = m.group(0).rstrip(".")
            if len(s) >= _MIN_LEN and s not in _STOP:
                out.append(s)
    return tuple(out)


def _scanned(text: str) -> str:
    if len(text) > _SCAN_CHARS:
        half = _SCAN_CHARS // 2
        return text[:half] + "\n" + text[-half:]
    return text


def extract_identifiers(text: str, memo: dict[str, tuple[str, ...]] | None = None) -> set[str]:
    """The identifiers in ``text`` by :data:`IDENTIFIER_PATTERNS` (at least 4 characters).

    Texts longer than 400,000 characters are scanned at their head and tail only.

    The patterns run on each distinct whitespace-separated word, not on the whole text, with the
    same result: every pattern matches only characters of ``[\\w./~@+-]`` (never whitespace), and
    looks at most one character before or after a match, where whitespace counts as the start or
    end of the text.  ``memo`` (word -> its identifiers) lets a batch run the patterns once per
    distinct word (``tests/test_metrics.py`` compares with the patterns run on whole texts).
    """
    if not text:
        return set()
    out: set[str] = set()
    for word in set(_scanned(text).split()):
        found = memo.get(word) if memo is not None else None
        if found is None:
            found = _word_identifiers(word)
            if memo is not None:
                if len(memo) >= WORDS_CACHED:
                    memo.clear()
                memo[word] = found
        if found:
            out.update(found)
    return out


def extract_identifiers_whole(text: str) -> set[str]:
    """:func:`extract_identifiers` the plain way: every pattern over the whole (scanned) text.
    The reference the word-by-word extraction is tested against; slower."""
    if not text:
        return set()
    out: set[str] = set()
    for pattern in IDENTIFIER_PATTERNS.values():
        for m in pattern.finditer(_scanned(text)):
            s = m.group(0).rstrip(".")
            if len(s) >= _MIN_LEN and s not in _STOP:
                out.add(s)
    return out


def _qualifies(s: str) -> bool:
    if len(s) < _MIN_LEN:
        return False
    return any(p.fullmatch(s) for p in IDENTIFIER_PATTERNS.values())


def expand_identifier(ident: str) -> set[str]:
    """``ident`` plus the identifiers it contains: path suffixes and runs of dotted segments.

    ``/repo/pkg/mod.py`` → also ``repo/pkg/mod.py``, ``pkg/mod.py``, ``mod.py``;
    ``os.path.join`` → also ``os.path``, ``path.join`` (single segments only when they are
    identifiers themselves, e.g. ``assertEqual`` of ``self.assertEqual``).
    """
    out = {ident}
    if "/" in ident:
        parts = [p for p in ident.split("/") if p]
        for i in range(len(parts)):
            s = "/".join(parts[i:])
            if i == 0 or _qualifies(s):
                out.add(s)
        last = parts[-1] if parts else ""
        if "." in last and _qualifies(last):
            out.add(last)
    elif "." in ident and not ident.isdigit():
        parts = ident.split(".")
        n = len(parts)
        if n <= 12:
            for i in range(n):
                for j in range(i + 1, n + 1):
                    s = ".".join(parts[i:j])
                    if s != ident and (j - i >= 2 or _qualifies(s)):
                        out.add(s)
    return out


def message_search_text(message: BaseMessage) -> str:
    """The text identifiers are looked for in: the message text, then, for an AIMessage, one line
    per tool call (its name and JSON arguments)."""
    text = message_text(message)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [
            f"{tc.get('name')} {json.dumps(tc.get('args') or {}, ensure_ascii=False, default=str)}"
            for tc in message.tool_calls
        ]
        text = text + "\n" + "\n".join(calls)
    return text


class IdentifierIndex:
    """Caches, per message object, its identifiers (plain and expanded); make one per replay run
    or batch (the sets depend on a message's content only, so runs may share one).

    Both caches are :class:`~ctxlab.core.identity.IdentityCache` (bounded, keyed by the message
    object, which they keep alive, so a recycled ``id()`` never returns another message's set).
    Underneath, each distinct word is scanned once and each identifier expanded once
    (:data:`WORDS_CACHED` words, then the memo starts over).  Bounded: at most ``max_messages``
    messages per cache (default :data:`MESSAGES_CACHED`) and :data:`WORDS_CACHED` entries per
    word memo, whatever the number of runs sharing the index.

    Attributes:
        messages_scanned: messages whose whole text was scanned for :meth:`identifiers`.
        words_scanned: words the patterns ran on one by one, outside a whole-message scan
            (:meth:`mentions`, :meth:`word_present`); a word is counted again only after the
            memo started over.
    """

    def __init__(self, max_messages: int = MESSAGES_CACHED) -> None:
        self.messages_scanned = 0
        self.words_scanned = 0
        self._plain: IdentityCache[BaseMessage, frozenset[str]] = IdentityCache(max_messages)
        self._expanded: IdentityCache[BaseMessage, frozenset[str]] = IdentityCache(max_messages)
        self._words: dict[str, tuple[str, ...]] = {}
        self._expansions: dict[str, frozenset[str]] = {}
        self._word_present: dict[str, frozenset[str]] = {}

    def identifiers(self, message: BaseMessage) -> frozenset[str]:
        """Identifiers extracted from the message's text and tool-call arguments."""
        return self._plain.get_or_put(message, self._scan_message)

    def _scan_message(self, message: BaseMessage) -> frozenset[str]:
        self.messages_scanned += 1
        return frozenset(extract_identifiers(message_search_text(message), self._words))

    def present(self, message: BaseMessage) -> frozenset[str]:
        """Identifiers that count as present in the message (extracted plus expanded)."""
        return self._expanded.get_or_put(message, self._expand)

    def mentions(self, message: BaseMessage, pool: Container[str]) -> bool:
        """Whether one of :meth:`identifiers` of ``message`` is in ``pool``; the words of the
        message are scanned only until one is found."""
        known = self._plain.get(message)
        if known is not None:
            return any(i in pool for i in known)
        memo = self._words
        for word in set(_scanned(message_search_text(message)).split()):
            found = memo.get(word)
            if found is None:
                found = self._word_identifiers(word)
            for i in found:
                if i in pool:
                    return True
        return False

    def word_present(self, word: str) -> frozenset[str]:
        """Identifiers that count as present in one whitespace-free word: its identifiers and their
        expansions (:meth:`present` of a message is the union over its words)."""
        found = self._word_present.get(word)
        if found is None:
            found = frozenset().union(*map(self._expansion, self._word_identifiers(word)))
            if len(self._word_present) >= WORDS_CACHED:
                self._word_present.clear()
            self._word_present[word] = found
        return found

    def _word_identifiers(self, word: str) -> tuple[str, ...]:
        found = self._words.get(word)
        if found is None:
            self.words_scanned += 1
            found = _word_identifiers(word)
            if len(self._words) >= WORDS_CACHED:
                self._words.clear()
            self._words[word] = found
        return found

    def _expansion(self, ident: str) -> frozenset[str]:
        expanded = self._expansions.get(ident)
        if expanded is None:
            if len(self._expansions) >= WORDS_CACHED:
                self._expansions.clear()
            expanded = self._expansions[ident] = frozenset(expand_identifier(ident))
        return expanded

    def _expand(self, message: BaseMessage) -> frozenset[str]:
        out: set[str] = set()
        for ident in self.identifiers(message):
            out |= self._expansion(ident)
        return frozenset(out)


class EarlierIdentifiers:
    """The identifiers present in the transcript messages before the current call of a run
    (system messages aside), as ``retention`` defines ``earlier``; messages are :meth:`add`-ed
    in transcript order.

    ``ident in earlier`` is answered without extracting the identifiers of every earlier
    message: an identifier present in a message is a substring of its
    :func:`message_search_text` (extracted identifiers are, and so are their path suffixes and
    dotted runs, since no extracted path has an empty segment), so the earlier texts are
    searched for it and only the words where it occurs are scanned
    (:meth:`IdentifierIndex.word_present`; the message's :meth:`IdentifierIndex.present` for a
    text longer than the 400,000 scanned characters) to confirm it.  Each identifier searches
    each text once per run; confirmed identifiers are remembered.  :meth:`all`
    gives the whole set (every earlier message scanned); from then on it is kept up to date.

    Args:
        index: the identifier cache (shared by the run's measures).
    """

    def __init__(self, index: IdentifierIndex) -> None:
        self.index = index
        #: ``id()`` of every message added, system messages included, in order (the objects are
        #: kept alive by ``_messages``)
        self.objects: list[int] = []
        self._messages: list[BaseMessage] = []  # the non-system messages
        self._pending: list[BaseMessage] = []  # not yet in a chunk
        self._chunks: list[tuple[str, list[BaseMessage], list[int]]] = []  # text, messages, offsets
        self._confirmed: set[str] = set()
        self._searched: dict[str, int] = {}  # identifier -> chunks searched without confirming it
        self._all: set[str] | None = None

    def add(self, message: BaseMessage) -> None:
        """Count ``message`` as earlier from now on (a system message only joins :attr:`objects`)."""
        self.objects.append(id(message))
        self._messages.append(message)  # also keeps the object of ``objects`` alive
        if isinstance(message, SystemMessage):
            return
        if self._all is not None:
            self._all |= self.index.present(message)
        else:
            self._pending.append(message)

    def all(self) -> set[str]:
        """Every identifier present in the earlier messages (scans those not scanned yet)."""
        if self._all is None:
            out: set[str] = set()
            for m in self._messages:
                if not isinstance(m, SystemMessage):
                    out |= self.index.present(m)
            self._all = out
            self._pending, self._chunks, self._searched = [], [], {}
        return self._all

    def __contains__(self, ident: object) -> bool:
        if self._all is not None:
            return ident in self._all
        if not isinstance(ident, str) or not ident:
            return False
        if ident in self._confirmed:
            return True
        if self._pending:
            texts = [message_search_text(m) for m in self._pending]
            offsets, at = [], 0
            for t in texts:
                offsets.append(at)
                at += len(t) + 1
            self._chunks.append(("\n".join(texts), self._pending, offsets))
            self._pending = []
        for c in range(self._searched.get(ident, 0), len(self._chunks)):
            text, messages, offsets = self._chunks[c]
            at = text.find(ident)
            while at >= 0:  # an identifier has no whitespace: a match lies in one word of one message
                k = bisect.bisect_right(offsets, at) - 1
                start = offsets[k]
                end = offsets[k + 1] - 1 if k + 1 < len(offsets) else len(text)
                if end - start > _SCAN_CHARS:  # scanned at its head and tail only: the message's set
                    present = self.index.present(messages[k])
                    self._confirmed |= present
                    if ident in present:
                        return True
                    at = text.find(ident, end)
                    continue
                word_start, word_end = _word_around(text, at, start, end)
                if ident in self.index.word_present(text[word_start:word_end]):
                    self._confirmed.add(ident)
                    return True
                at = text.find(ident, word_end)  # later matches in this word: the same answer
        self._searched[ident] = len(self._chunks)
        return False


_WORD = re.compile(r"\S*")
_LAST_SPACE = re.compile(r"\s\S*\Z")


def _word_around(text: str, at: int, lo: int, hi: int) -> tuple[int, int]:
    """``(start, end)`` of the whitespace-separated word of ``text[lo:hi]`` that holds position
    ``at`` (whitespace as ``str.split`` and ``\\s`` define it, the same characters)."""
    end = _WORD.match(text, at, hi).end()  # type: ignore[union-attr]  # \S* always matches
    width = 64
    while True:
        left = max(lo, at - width)
        m = _LAST_SPACE.search(text, left, at)
        if m is not None:
            return m.start() + 1, end
        if left == lo:
            return lo, end
        width *= 8
