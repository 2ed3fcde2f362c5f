"""Hook failures the middleware survives, recorded as results: an exception a
``ctxlab_on_event`` observer raised is logged and ignored by the middleware (it never aborts the
model call), so a replay would not show it; :func:`hook_failures` catches those log records during
one run and turns each into a :class:`~ctxlab.replay.result.ReplayIssue` (``kind="plugin"``) with
the plugin's name and the traceback."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ctxlab.replay.result import ReplayIssue, raising_plugin

__all__ = ["hook_failures", "recording_level"]

#: the loggers whose records carry a survived hook failure (``extra={"ctxlab_exception": exc}``)
LOGGERS = ("ctxlab.core.middleware",)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.caught: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = getattr(record, "ctxlab_exception", None)
        if isinstance(exc, BaseException):
            self.caught.append(exc)


@contextmanager
def recording_level() -> Iterator[None]:
    """The loggers :func:`hook_failures` records at ``WARNING`` for a whole batch of runs: each
    run's :func:`hook_failures` then leaves their level alone (``Logger.setLevel`` clears the cache
    of every logger of the process, twice per run otherwise: issue 31)."""
    loggers = [logging.getLogger(n) for n in LOGGERS]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, saved, strict=True):
            lg.setLevel(level)


@contextmanager
def hook_failures(pm: Any, source: str, transcript: str, strategy: str) -> Iterator[list[ReplayIssue]]:
    """Collect the hook failures the middleware logs while the block runs; the yielded list is
    filled when the block ends (the same failure in many calls is one issue, with its count).
    While it runs, the middleware's logger records its warnings here instead of printing them."""
    handler = _Collect()
    loggers = [logging.getLogger(n) for n in LOGGERS]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    for lg in loggers:  # recorded here, not printed (the CLI quiets ctxlab's loggers)
        lg.addHandler(handler)
        if lg.level != logging.WARNING:  # setLevel clears every logger's cache: only when needed
            lg.setLevel(logging.WARNING)
        lg.propagate = False
    issues: list[ReplayIssue] = []
    try:
        yield issues
    finally:
        for lg, (level, propagate) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            if lg.level != level:
                lg.setLevel(level)
            lg.propagate = propagate
        seen: dict[str, list[Any]] = {}
        for exc in handler.caught:
            key = f"{type(exc).__name__}: {exc}"
            seen.setdefault(key, [exc, 0])[1] += 1
        for key, (exc, count) in seen.items():
            plugin = raising_plugin(exc, pm)
            issues.append(
                ReplayIssue(
                    kind="plugin",
                    source=plugin or "a ctxlab_on_event observer",
                    transcript=transcript,
                    strategy=strategy,
                    where=f"{count} call(s)",
                    problem=f"a ctxlab_on_event observer raised (ignored by the middleware): {key}",
                    plugin=plugin,
                    traceback="".join(traceback.format_exception(exc)),
                )
            )
