"""Plugin managers: one per middleware instance or replay, never an import-time global.

Sources of plugins, in the order they are registered:

1. the built-in ARS defaults (:mod:`ctxlab.core.builtin`, every implementation ``trylast``);
2. installed packages in the ``ctxlab`` entry-point group (``load_entrypoints=True``);
3. ``.py`` files in a plugins folder (``plugins_dir=``, or ``$CTXLAB_PLUGINS_DIR``);
4. plugin objects passed explicitly (``extra=``).

A broken third-party plugin is reported (``warnings.warn``) and skipped; it never takes the
process down.  :func:`describe_plugins` lists what is loaded and which hooks each implements.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pluggy

from ctxlab.core import hookspecs

ENTRY_POINT_GROUP = "ctxlab"

__all__ = [
    "ENTRY_POINT_GROUP",
    "PluginInfo",
    "describe_plugins",
    "make_plugin_manager",
]


def make_plugin_manager(
    extra: Iterable[object] = (),
    *,
    load_entrypoints: bool = False,
    plugins_dir: str | os.PathLike[str] | None = None,
    defaults: bool = True,
    specs: Iterable[ModuleType] = (),
) -> pluggy.PluginManager:
    """A fresh plugin manager with the ARS defaults and the given plugins.

    Args:
        extra: plugin objects (modules, classes or instances with ``@hookimpl`` methods).
        load_entrypoints: also load installed plugins of the ``ctxlab`` entry-point group.
        plugins_dir: a folder of ``.py`` plugin files (``FileNotFoundError`` when missing);
            ``None`` reads ``$CTXLAB_PLUGINS_DIR`` (a missing folder there only warns).
        defaults: register the built-in ARS plugins (``False`` only for tests of the hooks).
        specs: more hookspec modules, added before any plugin is registered (the floors above the
            core add theirs: :mod:`ctxlab.transcripts.hookspecs`, :mod:`ctxlab.replay.hookspecs`).

    Returns:
        A ``pluggy.PluginManager`` for project ``ctxlab``.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for module in specs:
        pm.add_hookspecs(module)
    if defaults:
        from ctxlab.core.builtin import default_plugins

        for plugin in default_plugins():
            pm.register(plugin, name=f"ctxlab.builtin.{_plugin_label(plugin)}")
    if load_entrypoints:
        _load_entrypoints(pm)
    if plugins_dir is not None:
        _load_folder(pm, Path(plugins_dir))
    elif os.environ.get("CTXLAB_PLUGINS_DIR"):
        env_dir = Path(os.environ["CTXLAB_PLUGINS_DIR"])
        if env_dir.is_dir():
            _load_folder(pm, env_dir)
        else:
            warnings.warn(
                f"$CTXLAB_PLUGINS_DIR={env_dir} is not a folder; no folder plugins loaded", stacklevel=2
            )
    for plugin in extra:
        if pm.is_registered(plugin):
            continue
        label = getattr(plugin, "name", None) or getattr(plugin, "__name__", None)
        if isinstance(label, str) and pm.get_plugin(label) is None:
            pm.register(plugin, name=label)
        else:
            pm.register(plugin)
    return pm


def _plugin_label(plugin: object) -> str:
    return getattr(plugin, "name", None) or getattr(plugin, "__name__", None) or type(plugin).__name__


def _load_entrypoints(pm: pluggy.PluginManager) -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None:
            continue
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
            dist = getattr(ep, "dist", None)
            label = f"{dist.name} {dist.version}" if dist is not None else ep.value
            _sources(pm)[ep.name] = f"entry point ({label})"
        except Exception as exc:  # a broken plugin is reported and skipped
            warnings.warn(f"ctxlab plugin {ep.name!r} ({ep.value}) failed to load: {exc}", stacklevel=2)


def _load_folder(pm: pluggy.PluginManager, folder: Path) -> None:
    if not folder.is_dir():
        raise FileNotFoundError(f"plugins folder {folder} does not exist")
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        name = f"ctxlab_dir_plugin_{path.stem}"
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            pm.register(module, name=f"dir:{path.name}")
            _sources(pm)[f"dir:{path.name}"] = f"plugins folder ({path})"
        except Exception as exc:
            warnings.warn(f"ctxlab plugin file {path} failed to load: {exc}", stacklevel=2)


def _sources(pm: pluggy.PluginManager) -> dict[str, str]:
    """Where each non-builtin plugin of ``pm`` came from (kept on the manager itself)."""
    found = getattr(pm, "_ctxlab_sources", None)
    if found is None:
        found = {}
        pm._ctxlab_sources = found  # type: ignore[attr-defined]
    return found


@dataclass(frozen=True)
class PluginInfo:
    """One loaded plugin: its registered name, where it came from and the hooks it implements."""

    name: str
    source: str
    hooks: tuple[str, ...]


def describe_plugins(pm: pluggy.PluginManager) -> list[PluginInfo]:
    """What is loaded in ``pm``: one :class:`PluginInfo` per plugin, registration order."""
    known = _sources(pm)
    out = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        hooks = tuple(sorted(h.name for h in pm.get_hookcallers(plugin) or []))
        source = "builtin" if name.startswith("ctxlab.builtin.") else known.get(name, "explicit")
        out.append(PluginInfo(name=name, source=source, hooks=hooks))
    return out
