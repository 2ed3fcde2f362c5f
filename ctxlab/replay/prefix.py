"""The unrecorded prefix: the part of every request that an agent's log does not hold.

Most agent logs record the conversation but not what the agent put in front of it on every call:
its system prompt, its tool schemas, the context it injects.  A replay that sends only what the
file holds sends requests no agent ever sent (a Claude Code request is above 18,000 tokens from
its first call; its log holds a few dozen).  Where a transcript records the provider's usage per
call (``AIMessage.usage_metadata["input_tokens"]``, cached input included: the loaders'
convention, :func:`ctxlab.transcripts._util.usage_metadata`), the size of that missing part is
measured here and added back to every strategy's request as **one labelled, incompressible
block** at the end of the system message (:func:`with_prefix`), so that every trigger (ctxlab's
own estimate of system message + tools + messages, DeepAgents' counter, LangChain's with the
baselines' request count), the provider stand-in's window and the cost columns see it.

The estimate (:func:`estimate_prefix`) is the **median** over the run's calls of ``recorded
input tokens − the replay's estimate of the same request`` (the uncompressed request, in the
measuring estimator's tokens), over the calls before any recorded compaction or truncation (after
one the agent sent less than the file holds) and with a recorded count.  The median is robust to
the odd call whose recorded count is off (a retry, a sub-agent's call), and the difference
absorbs a constant tokenizer offset along with the missing text.  A prefix is never negative: a
run whose estimate is above its recorded counts gets none.

**A file that starts mid-session** (a Claude Code session file continued from an earlier one)
lacks the earlier *conversation* too, and that is no prefix of every request: the agent's own
compaction threw it away with the rest of its history.  Where the run records a compaction
(:data:`ctxlab.transcripts.base.RECORDED_COMPACTION_KEY`) and the provider's usage on calls after
it, the measured gap is split in two:

* the **fixed part** (system prompt, tools: in every request, a compaction keeps it) is the
  median of ``recorded − the replay's estimate of what the agent sent`` over those calls (the
  ``recorded`` strategy's request, :func:`ctxlab.replay.recorded.recorded_view`; at most
  :data:`AFTER_CALLS` calls, evenly spread); it stays the labelled block of the system message;
* the **earlier conversation** is the rest of the gap measured before the compaction (kept only
  when it is clearly positive: at least :data:`HISTORY_MIN_TOKENS` and :data:`HISTORY_MIN_SHARE`
  of the gap; else the whole gap stays the fixed part, as without a compaction).  It becomes one
  labelled **history message** at the start of the conversation (:func:`history_message`, a
  ``HumanMessage`` marked ``additional_kwargs[HISTORY_KEY]``), sized like the block: it is history
  like any old message, so ``recorded`` drops it with everything before the agent's compaction,
  and ARS or a baseline may summarize or cut it.  The uncompressed request (``raw_tokens``) keeps
  it on every call: the agent, uncompressed, would have kept that conversation.

Without usage after a recorded compaction (no compaction, a Cline truncation, usage not recorded
after it) the whole gap is the fixed part.  A run whose ``recorded`` request after a compaction
stays more than :data:`OFF_BY` × from the provider's count on its median call is warned about too
(:attr:`UnrecordedPrefix.after_off_by`).

``ctxlab replay/compare --unrecorded-prefix auto|off|N`` (:func:`resolve_prefix`): ``auto``
(default) measures it where usage is recorded and adds nothing elsewhere; ``off`` never adds it;
``N`` adds N tokens to every run.  The value and its source are recorded per run
(``run.json``, the per-call column ``unrecorded_prefix_tokens``); a run whose corrected estimate
stays more than :data:`OFF_BY` × from its recorded tokens on its median call is named in a warning
(:attr:`UnrecordedPrefix.off_by`).

The block (:func:`prefix_text`) is a label followed by filler words whose count under the
measuring estimator is the prefix exactly; the filler (common three-letter words) counts about the
same under cl100k (the provider stand-in) and under LangChain's ``count_tokens_approximately``
(within a few per cent), so foreign counters see about the same size.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxlab.replay.recorded import recorded_view
from ctxlab.transcripts.base import is_model_call, recorded_compaction_of, recorded_truncation_of

if TYPE_CHECKING:
    from ctxlab.core.estimation import EstimateCache
    from ctxlab.transcripts.base import Transcript

__all__ = [
    "AFTER_CALLS",
    "HISTORY_KEY",
    "HISTORY_MIN_SHARE",
    "HISTORY_MIN_TOKENS",
    "OFF_BY",
    "PREFIX_KEY",
    "PREFIX_SETTINGS",
    "UnrecordedPrefix",
    "after_compaction_pairs",
    "estimate_prefix",
    "history_message",
    "is_off",
    "parse_prefix_setting",
    "prefix_text",
    "recorded_pairs",
    "resolve_prefix",
    "with_prefix",
]

#: ``SystemMessage.additional_kwargs`` key marking the system message that carries the block
#: (``{"tokens": N, "source": ...}``), for the inspector and the tests
PREFIX_KEY = "ctxlab_unrecorded_prefix"
#: ``HumanMessage.additional_kwargs`` key marking the message that stands in for the earlier
#: conversation a file lacks (``{"tokens": N, "source": ...}``)
HISTORY_KEY = "ctxlab_unrecorded_history"
#: the earlier conversation is kept apart from the fixed part only when it is at least this many
#: tokens and this share of the gap measured before the compaction (else: noise between two medians)
HISTORY_MIN_TOKENS = 1_000
HISTORY_MIN_SHARE = 0.1
#: at most this many calls after a recorded compaction (evenly spread) measure the fixed part:
#: each costs the ``recorded`` view of its request
AFTER_CALLS = 64
#: the named settings of ``--unrecorded-prefix`` (besides a number of tokens)
PREFIX_SETTINGS = ("auto", "off")
#: a run whose corrected estimate is more than this many times above or below its recorded input
#: tokens (on its median call) is named in a warning
OFF_BY = 1.5

_LABEL = (
    "[ctxlab: the unrecorded prefix. The recording does not hold about {n:,} tokens of every request "
    "(system prompt, tool schemas, injected context; {source}). These words stand in for them, so "
    "that triggers, the context window and costs see a request of the size the agent sent. They are "
    "not part of the conversation and no strategy may compress them.]\n"
)
_HISTORY_LABEL = (
    "[ctxlab: the earlier conversation. The recording starts mid-session: before the agent's first "
    "recorded compaction every request held about {n:,} tokens of earlier conversation the file does "
    "not hold ({source}). These words stand in for them; they are history like any old message.]\n"
)
#: the filler, word by word: neutral words that state no fact about the run (s40 trial item 7:
#: the old sentence invented "12 tools" and "3 files" for every run, and said "system prompt" in
#: the earlier-conversation placeholder too), one for each placeholder, each naming what it stands
#: for.  The char-class estimate, cl100k and LangChain's characters / 4 count each alike (within
#: 2 % of each other, as the old sentence: tests/test_prefix.py); ~0.25 char-class tokens per
#: character, as before (the block is sized by its count, so its estimated size is unchanged)
_FILLER = (
    "these words state 0 facts about the run; they are a stand-in for a part of each request that "
    "is not in the log."
)
_HISTORY_FILLER = (
    "these words state 0 facts about the run; they are a stand-in for what was said before that is "
    "not in the log."
)
_WORDS = tuple(" " + w for w in _FILLER.split(" "))
_HISTORY_WORDS = tuple(" " + w for w in _HISTORY_FILLER.split(" "))


@dataclass(frozen=True)
class UnrecordedPrefix:
    """The prefix added to every request of one run.

    Attributes:
        tokens: the fixed part, in every request as the system message's block, in the measuring
            estimator's tokens (0: none added).
        source: ``"recorded usage"`` (measured), ``"--unrecorded-prefix"`` (given), ``"off"``
            (not asked), ``"nothing recorded"`` (``auto`` on a run without recorded usage).
        calls: the calls with recorded usage the measure rests on (0: none).
        off_by: the corrected estimate over the recorded input tokens on the median of those
            calls (``None``: nothing recorded); outside ``[1 / OFF_BY, OFF_BY]`` the run is warned about.
        raw_off_by: the same ratio without the prefix (before the correction).
        history_tokens: the earlier conversation the file lacks (module docstring), sent as
            :attr:`history` at the start of the conversation (0: none).
        calls_after: the calls after a recorded compaction with recorded usage that measure the
            fixed part (0: none).
        after_off_by: the estimate of the ``recorded`` request (the agent's own view) with the fixed
            part over the recorded input tokens, on the median of those calls (``None``: none).
        history: the message standing in for the earlier conversation (:func:`history_message`;
            ``None``: none); not in :meth:`as_dict`.
    """

    tokens: int
    source: str
    calls: int = 0
    off_by: float | None = None
    raw_off_by: float | None = None
    history_tokens: int = 0
    calls_after: int = 0
    after_off_by: float | None = None
    history: HumanMessage | None = field(default=None, compare=False, repr=False)

    @property
    def stays_off(self) -> bool:
        """The corrected estimate is still more than :data:`OFF_BY` × from the recorded tokens,
        before or after a recorded compaction (:func:`is_off`)."""
        return is_off(self.off_by) or is_off(self.after_off_by)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``tokens``, ``source``, ``calls``, ``off_by``, ``raw_off_by``,
        ``history_tokens``, ``calls_after``, ``after_off_by``."""
        return {
            "tokens": self.tokens,
            "source": self.source,
            "calls": self.calls,
            "off_by": self.off_by,
            "raw_off_by": self.raw_off_by,
            "history_tokens": self.history_tokens,
            "calls_after": self.calls_after,
            "after_off_by": self.after_off_by,
        }


def is_off(ratio: float | None) -> bool:
    """``ratio`` (estimate over recorded) is more than :data:`OFF_BY` × off (``None``: not)."""
    return ratio is not None and not (1.0 / OFF_BY <= ratio <= OFF_BY)


def parse_prefix_setting(value: str | int | None) -> str | int:
    """``"auto"``, ``"off"`` or a number of tokens >= 0 from ``--unrecorded-prefix`` (``None``: auto).

    Raises:
        ValueError: anything else (the message names the allowed values).
    """
    if value is None:
        return "auto"
    if isinstance(value, bool):
        raise ValueError(
            f"unrecorded prefix {value!r} is invalid: allowed auto, off or a number of tokens >= 0"
        )
    if isinstance(value, int):
        if value < 0:
            raise ValueError(
                f"unrecorded prefix {value} is invalid: allowed auto, off or a number of tokens >= 0"
            )
        return value
    text = str(value).strip().lower()
    if text in PREFIX_SETTINGS:
        return text
    try:
        n = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(
            f"unrecorded prefix {value!r} is invalid: allowed auto, off or a number of tokens >= 0"
        )
    return n


def _recorded_input(message: AIMessage) -> int | None:
    usage = message.usage_metadata
    value = usage.get("input_tokens") if usage else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def recorded_pairs(transcript: Transcript, meter: EstimateCache) -> list[tuple[int, int]]:
    """``(estimate, recorded)`` per call of ``transcript`` with recorded input tokens, before any
    recorded compaction or truncation: the replay's estimate of the uncompressed request (system
    message, tool schemas and the messages before the call, as the ``raw_tokens`` column counts
    it, in ``meter``'s tokens) and the provider's recorded input tokens."""
    messages = list(transcript.messages)
    system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
    rest = messages[1:] if system is not None else messages
    total = meter.tools_tokens(list(transcript.tools or [])) + (
        meter.message_tokens(system) if system is not None else 0
    )
    out: list[tuple[int, int]] = []
    call = 0
    truncated_from = min(
        (
            int(m["from_call"])
            for m in map(recorded_truncation_of, rest)
            if m and isinstance(m.get("from_call"), int)
        ),
        default=None,
    )
    for message in rest:
        if recorded_compaction_of(message) is not None:
            break  # after the agent's own compaction it sent less than the file holds
        if isinstance(message, AIMessage):
            if truncated_from is not None and call >= truncated_from:
                break
            recorded = _recorded_input(message)
            if recorded is not None:
                out.append((total, recorded))
            call += 1
        total += meter.message_tokens(message)
    return out


def after_compaction_pairs(transcript: Transcript, meter: EstimateCache) -> list[tuple[int, int]]:
    """``(estimate, recorded)`` per call of ``transcript`` after its first recorded compaction
    with recorded input tokens (at most :data:`AFTER_CALLS`, evenly spread over them): the
    replay's estimate of the request the agent sent (system message, tool schemas and the
    ``recorded`` strategy's view of the messages before the call,
    :func:`ctxlab.replay.recorded.recorded_view`, in ``meter``'s tokens) and the provider's
    recorded input tokens.  Empty without a recorded compaction."""
    messages = list(transcript.messages)
    system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
    rest = messages[1:] if system is not None else messages
    base = meter.tools_tokens(list(transcript.tools or [])) + (
        meter.message_tokens(system) if system is not None else 0
    )
    state: list[BaseMessage] = []  # the state of the ``recorded`` strategy, as the replay builds it
    compacted = False
    wanted: list[tuple[int, int]] = []  # (messages before the call, recorded input tokens)
    for message in rest:
        if isinstance(message, AIMessage) and not is_model_call(message):
            continue  # made up by the agent: in no request
        mark = recorded_compaction_of(message)
        compacted = compacted or mark is not None
        if compacted and mark is None and isinstance(message, AIMessage):
            recorded = _recorded_input(message)
            if recorded is not None:
                wanted.append((len(state), recorded))
        state.append(message)
    if len(wanted) > AFTER_CALLS:
        step = (len(wanted) - 1) / (AFTER_CALLS - 1)
        wanted = [wanted[round(i * step)] for i in range(AFTER_CALLS)]
    return [
        (base + sum(map(meter.message_tokens, recorded_view(state[:n]))), recorded) for n, recorded in wanted
    ]


def estimate_prefix(transcript: Transcript, meter: EstimateCache) -> UnrecordedPrefix:
    """The run's unrecorded prefix measured from its recorded usage (module docstring): the fixed
    part and, for a file that starts mid-session and records a compaction, the earlier
    conversation (with its :attr:`~UnrecordedPrefix.history` message); a prefix of 0 with source
    ``"nothing recorded"`` when no call records its input tokens."""
    pairs = recorded_pairs(transcript, meter)
    after = after_compaction_pairs(transcript, meter)
    if not pairs and not after:
        return UnrecordedPrefix(0, "nothing recorded")
    gap = max(0, round(statistics.median(r - e for e, r in pairs))) if pairs else 0
    fixed, history = gap, 0
    if after:
        fixed_after = max(0, round(statistics.median(r - e for e, r in after)))
        if not pairs:
            fixed = fixed_after
        elif gap - fixed_after >= max(HISTORY_MIN_TOKENS, HISTORY_MIN_SHARE * gap):
            fixed, history = fixed_after, gap - fixed_after
    prefix = UnrecordedPrefix(
        fixed,
        "recorded usage",
        len(pairs),
        off_by=_median_ratio(pairs, gap) if pairs else None,
        raw_off_by=_median_ratio(pairs, 0) if pairs else None,
        history_tokens=history,
        calls_after=len(after),
        after_off_by=_median_ratio(after, fixed) if after else None,
    )
    return replace(prefix, history=history_message(prefix, meter, transcript.run_id))


def _median_ratio(pairs: list[tuple[int, int]], prefix: int) -> float:
    return float(statistics.median((e + prefix) / r for e, r in pairs))


def resolve_prefix(setting: str | int, transcript: Transcript, meter: EstimateCache) -> UnrecordedPrefix:
    """The prefix of one run under ``--unrecorded-prefix`` (:func:`parse_prefix_setting`):
    ``"auto"`` measures it (:func:`estimate_prefix`), ``"off"`` adds none, a number adds that many
    tokens to every request, no earlier conversation (the recorded usage, when there is some, still
    gives :attr:`UnrecordedPrefix.off_by` and :attr:`~UnrecordedPrefix.after_off_by`).

    Raises:
        ValueError: an invalid setting.
    """
    setting = parse_prefix_setting(setting)
    if setting == "auto":
        return estimate_prefix(transcript, meter)
    measured = recorded_pairs(transcript, meter)
    after = after_compaction_pairs(transcript, meter)
    n = 0 if setting == "off" else int(setting)
    return UnrecordedPrefix(
        n,
        "off" if setting == "off" else "--unrecorded-prefix",
        len(measured),
        off_by=_median_ratio(measured, n) if measured else None,
        raw_off_by=_median_ratio(measured, 0) if measured else None,
        calls_after=len(after),
        after_off_by=_median_ratio(after, n) if after else None,
    )


def prefix_text(tokens: int, meter: EstimateCache, source: str = "measured from the recorded usage") -> str:
    """The labelled block standing in for ``tokens`` unrecorded tokens: the label, then filler
    words, so that ``meter`` counts the system message text block ``tokens`` more than without it
    (as exactly as a word allows; a label longer than ``tokens`` is the whole block).

    Raises:
        ValueError: ``tokens`` < 1.
    """
    if tokens < 1:
        raise ValueError(f"tokens={tokens} is invalid: allowed an integer >= 1")
    label = _LABEL.format(n=tokens, source=source)
    empty = meter.message_tokens(SystemMessage([]))

    def count(words: int) -> int:
        return meter.message_tokens(SystemMessage([{"type": "text", "text": _text(label, words)}])) - empty

    return _text(label, fewest_words(tokens, count))


def fewest_words(tokens: int, count: Callable[[int], int]) -> int:
    """The fewest filler words ``w`` >= 0 with ``count(w) >= tokens``, for a ``count`` that does not
    decrease with ``w`` (the estimate of a text that grows by a word).

    The answer of a bisection over ``[0, w]`` in a few estimates instead of one per halving
    (issue 31: each estimate reads the whole block, tens of thousands of words for a Claude Code
    run): the count is close to linear in the words, so a guess interpolated from the label's
    count and one probe lands within a few words, and the bracket around it is closed by
    galloping, then bisection.  Returns 0 when the label alone counts ``tokens`` or more.
    """
    base = count(0)
    if base >= tokens:
        return 0
    probe = max(1, tokens)
    at = count(probe)
    guess = max(1, round((tokens - base) * probe / max(at - base, 1)))
    lo, hi = (0, probe) if at >= tokens else (probe, None)  # count(lo) < tokens <= count(hi)
    down = False
    if lo < guess and (hi is None or guess < hi):
        down = count(guess) >= tokens
        lo, hi = (lo, guess) if down else (guess, hi)
    step = 1
    if down:  # the answer is at most the guess: gallop down to a word below it
        assert hi is not None
        while hi - step > lo:
            if count(hi - step) < tokens:
                lo = hi - step
                break
            hi -= step
            step *= 2
    else:  # at least the guess: gallop up, up to a known upper end
        while hi is None or lo + step < hi:
            if count(lo + step) >= tokens:
                hi = lo + step
                break
            lo += step
            step *= 2
    assert hi is not None
    while hi - lo > 1:  # the fewest words reaching the count
        mid = (lo + hi) // 2
        if count(mid) >= tokens:
            hi = mid
        else:
            lo = mid
    return hi


def _text(label: str, words: int, cycle: tuple[str, ...] = _WORDS) -> str:
    """``label``, then the first ``words`` words of the filler ``cycle`` repeated."""
    whole, part = divmod(words, len(cycle))
    return label + "".join(cycle) * whole + "".join(cycle[:part])


def with_prefix(
    system: SystemMessage | None, prefix: UnrecordedPrefix, meter: EstimateCache
) -> SystemMessage | None:
    """``system`` with the prefix block appended as its last text block (a new ``SystemMessage``
    when there is none), marked ``additional_kwargs[PREFIX_KEY]``; ``system`` itself when the
    prefix is 0.  The block is part of the system message, which no strategy compresses (R9)."""
    if prefix.tokens <= 0:
        return system
    source = {
        "recorded usage": f"measured from the recorded usage of {prefix.calls} calls",
        "--unrecorded-prefix": "given with --unrecorded-prefix",
    }.get(prefix.source, prefix.source)
    # a new system message brings its own framing (MESSAGE_OVERHEAD): the block is that much smaller
    framing = meter.message_tokens(SystemMessage([])) if system is None else 0
    block = {"type": "text", "text": prefix_text(max(1, prefix.tokens - framing), meter, source)}
    mark = {PREFIX_KEY: {"tokens": prefix.tokens, "source": prefix.source}}
    if system is None:
        return SystemMessage([block], additional_kwargs=mark)
    content = system.content
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if isinstance(content, str) and not content:
        blocks = []
    return system.model_copy(
        update={"content": [*blocks, block], "additional_kwargs": {**system.additional_kwargs, **mark}}
    )


def history_message(prefix: UnrecordedPrefix, meter: EstimateCache, run_id: str = "") -> HumanMessage | None:
    """The message standing in for the earlier conversation of ``prefix`` (module docstring):
    a ``HumanMessage`` of a label and filler words (as :func:`prefix_text`) that ``meter`` counts
    ``prefix.history_tokens`` tokens (as exactly as a word allows), marked
    ``additional_kwargs[HISTORY_KEY]`` (``{"tokens": N, "source": ...}``), with the stable id
    ``"<run_id>-unrecorded-history"``; ``None`` when there is no earlier conversation."""
    tokens = prefix.history_tokens
    if tokens <= 0:
        return None
    source = (
        f"measured from the recorded usage of {prefix.calls} calls before the compaction and "
        f"{prefix.calls_after} after it"
    )
    label = _HISTORY_LABEL.format(n=tokens, source=source)
    mark = {HISTORY_KEY: {"tokens": tokens, "source": prefix.source}}
    ident = f"{run_id}-unrecorded-history"

    def message(words: int) -> HumanMessage:
        return HumanMessage(_text(label, words, _HISTORY_WORDS), id=ident, additional_kwargs=mark)

    return message(fewest_words(tokens, lambda words: meter.message_tokens(message(words))))
