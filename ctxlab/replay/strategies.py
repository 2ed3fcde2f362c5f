"""Named strategies: the registry over ``ctxlab_register_strategies`` and the lab's plugin manager.

A *strategy* is a name for a way of compressing: the ARS defaults plus some plugins, or a
middleware from another framework.  Plugins register strategies through the
:func:`~ctxlab.replay.hookspecs.ctxlab_register_strategies` hook (llm-style: a callback registers
named things, so many coexist and can be compared side by side).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.plugins import make_plugin_manager
from ctxlab.replay import hookspecs as replay_specs
from ctxlab.transcripts import formats_plugin
from ctxlab.transcripts import hookspecs as transcript_specs

__all__ = ["BuiltinStrategies", "Strategy", "make_lab_manager", "strategies"]


@dataclass(frozen=True)
class Strategy:
    """A named compression strategy.

    ``factory(settings)`` returns the list of plugin objects added on top of the ARS defaults
    (empty for ARS itself), or an ``AgentMiddleware`` used as is.
    """

    name: str
    factory: Callable[[Any], Any]
    description: str = ""
    source: str = field(default="", compare=False)


class BuiltinStrategies:
    """Registers the ``ars`` strategy (the defaults with nothing added), ``trylast``."""

    name = "strategies"

    @hookimpl(trylast=True)
    def ctxlab_register_strategies(self, register: Callable[..., None]) -> None:
        register("ars", lambda settings: [], "ARS two-level compression (L1 trim + L2 summary), the defaults")


def make_lab_manager(
    extra: Iterable[object] = (),
    *,
    load_entrypoints: bool = False,
    plugins_dir: str | os.PathLike[str] | None = None,
) -> pluggy.PluginManager:
    """A plugin manager for the lab: the compression hooks and defaults, the transcript-format and
    strategy hook specs, the built-in formats and the ``ars`` strategy, then entry-point, folder
    and ``extra`` plugins (see :func:`ctxlab.core.plugins.make_plugin_manager` for the order and
    the errors)."""
    pm = make_plugin_manager(
        extra,
        load_entrypoints=load_entrypoints,
        plugins_dir=plugins_dir,
        specs=[transcript_specs, replay_specs],
    )
    pm.register(formats_plugin, name="ctxlab.builtin.transcript_formats")
    pm.register(BuiltinStrategies(), name="ctxlab.builtin.strategies")
    return pm


def strategies(pm: pluggy.PluginManager) -> dict[str, Strategy]:
    """Every strategy registered through ``ctxlab_register_strategies`` in ``pm``, by name.

    Raises:
        ValueError: two plugins register the same strategy name.
    """
    found: dict[str, Strategy] = {}

    def register(name: str, factory: Callable[[Any], Any], description: str = "") -> None:
        if name in found:
            raise ValueError(f"strategy {name!r} is registered twice")
        found[name] = Strategy(name=name, factory=factory, description=description)

    hook = getattr(pm.hook, "ctxlab_register_strategies", None)
    if hook is not None:
        hook(register=register)
    return found
