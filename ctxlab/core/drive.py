"""Drivers of the compression round: the sync and the async loop that perform its effects.

:func:`ctxlab.core.compression.compression_round` is a generator of effects (``CallModel``,
``RunL1``, ``RunL2``); it never calls the model or writes a file itself.  A driver sends each
effect's result back into the round, or throws the effect's exception into it (cancellation
included, so that the round emits ``failed``, R14), until the round returns.  The middleware's
``wrap_model_call`` and ``awrap_model_call`` differ only in how they perform an effect.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

__all__ = ["adrive", "drive"]

R = TypeVar("R")


def _step(round_: Generator[Any, Any, R], value: Any, error: BaseException | None) -> tuple[bool, Any]:
    """Send ``value`` (or throw ``error``) into the round: ``(True, its result)`` when it returned,
    else ``(False, its next effect)``."""
    try:
        return False, (round_.throw(error) if error is not None else round_.send(value))
    except StopIteration as stop:
        return True, stop.value


def _attempt(perform: Callable[[Any], Any], effect: Any) -> tuple[Any, BaseException | None]:
    """``(perform(effect), None)``, or ``(None, the exception)`` (cancellation too)."""
    try:
        return perform(effect), None
    except BaseException as exc:  # handed to the round, which emits ``failed`` and re-raises
        return None, exc


def drive(round_: Generator[Any, Any, R], perform: Callable[[Any], Any]) -> R:
    """Run ``round_`` to its end, performing each effect with ``perform`` (sync).

    Returns:
        The round's return value.

    Raises:
        Whatever the round raises (it re-raises the effects' errors it does not handle).
    """
    done, out = _step(round_, None, None)
    while not done:
        done, out = _step(round_, *_attempt(perform, out))
    result: R = out
    return result


async def adrive(round_: Generator[Any, Any, R], perform: Callable[[Any], Awaitable[Any]]) -> R:
    """:func:`drive` with an async ``perform`` (the effects are awaited one at a time)."""
    done, out = _step(round_, None, None)
    while not done:
        try:
            value, error = await perform(out), None
        except BaseException as exc:  # cancellation too: the round emits ``failed``
            value, error = None, exc
        done, out = _step(round_, value, error)
    result: R = out
    return result
