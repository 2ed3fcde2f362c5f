"""The tool pairs of a loaded run, checked once for every format: a tool result that answers no
earlier call, and a call whose result never arrives although the run goes on, are said in a
warning that names the file, the run and the message index.

A provider refuses a request with a tool result whose call is not in it (Anthropic, OpenAI), and
one whose call is followed by anything but its results; such a run's uncompressed requests from
that message on are refused (the replay's ``raw_rejected_reason``).  The run is loaded as it is:
this only says so, so that a reader knows before the replay's numbers.  Pairing is the middleware's
own (:mod:`ctxlab.core.toolcalls`: ``tool_calls`` and ToolMessages, and the content-block shapes):
a result answers the nearest earlier message that issued its id.  A call still open at the end of
the run (the session stopped while the tool ran) is no problem.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab.core.toolcalls import tool_pairs

__all__ = ["pairing_problems"]

#: the first problems a warning names (the rest are counted)
SHOWN = 3


def pairing_problems(messages: Sequence[BaseMessage]) -> str | None:
    """What is wrong with the tool pairs of ``messages`` (a run's, system message included, so
    that indices are ``Transcript.messages`` indices), in one sentence; ``None``: nothing.

    Example: ``"tool result 'zz' (message 2) has no matching call; tool call 'a' (message 1)
    has no result"``."""
    pairs = tool_pairs(messages)
    last_ai = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    orphans = [f"tool result {cid!r} (message {i}) has no matching call" for i, cid in pairs.orphans]
    dead = [
        f"tool call {cid!r} (message {i}) has no result"
        for i, cid in pairs.issued
        if (i, cid) not in pairs.answered and i < last_ai
    ]
    if not orphans and not dead:
        return None
    said = [*orphans, *dead]
    more = f"; and {len(said) - SHOWN} more" if len(said) > SHOWN else ""
    why = []
    if orphans:
        why.append(
            "a provider refuses a request with such a result: the replay counts those in raw_rejected_calls"
        )
    if dead:
        why.append("a call with no result before the next answer is refused too; no strategy can add it")
    return "; ".join(said[:SHOWN]) + more + " (" + "; ".join(why) + ")"
