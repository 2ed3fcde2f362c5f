"""Plugin managers: one per middleware instance or replay, never an import-time global.

Sources of plugins, in the order they are registered:

1. the built-in ARS defaults (:mod:`ctxlab.core.builtin`, every implementation ``trylast``);
2. installed packages in the ``ctxlab`` entry-point group (``load_entrypoints=True``): the entry
   point names a module whose top-level functions are ``@hookimpl`` functions (``name =
   "package"``, a plugin is a module, as in pytest and llm) or an object with ``@hookimpl``
   methods (``name = "package:attribute"``);
3. ``.py`` files in a plugins folder (``plugins_dir=``, or ``$CTXLAB_PLUGINS_DIR`` when asked with
   ``read_env=True``): the module
   itself when it defines ``@hookimpl`` functions, and every public module-level instance whose
   class has ``@hookimpl`` methods (``plugin = MyPlugin()``);
4. plugin objects passed explicitly (``extra=``).

A broken third-party plugin is reported (a :class:`PluginWarning`) and skipped; it never takes the
process down.  Broken means: it cannot be imported; one of its hook implementations takes an
argument the hook specification lacks (pluggy raises ``PluginValidationError`` at registration);
or it implements a hook that no ctxlab hookspec module specifies (a misspelt name, found the way
pluggy's ``check_pending()`` finds it).  :func:`describe_plugins` lists what is loaded and which
hooks each implements.  The hooks themselves are documented in ``docs/plugins.md``.
"""

from __future__ import annotations

import ast
import functools
import importlib.resources
import importlib.util
import inspect
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

#: Every hookspec module of ctxlab, by import name, one per floor that declares hooks.  A plugin
#: manager holds the core's and those its caller adds (``specs=``); a hook named in any of these
#: is not misspelt even when the manager at hand lacks its spec (a strategy plugin loaded into a
#: middleware implements ``ctxlab_register_strategies``, which only the lab manager specifies).
HOOKSPEC_MODULES: tuple[str, ...] = (
    "ctxlab.core.hookspecs",
    "ctxlab.transcripts.hookspecs",
    "ctxlab.replay.hookspecs",
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "HOOKSPEC_MODULES",
    "PluginInfo",
    "PluginWarning",
    "describe_plugins",
    "make_plugin_manager",
]


class PluginWarning(UserWarning):
    """A third-party plugin could not be loaded or was refused, and was skipped."""


def make_plugin_manager(
    extra: Iterable[object] = (),
    *,
    load_entrypoints: bool = False,
    plugins_dir: str | os.PathLike[str] | None = None,
    read_env: bool = False,
    defaults: bool = True,
    specs: Iterable[ModuleType] = (),
) -> pluggy.PluginManager:
    """A fresh plugin manager with the ARS defaults and the given plugins.

    Args:
        extra: plugin objects (modules, classes or instances with ``@hookimpl`` methods).
        load_entrypoints: also load installed plugins of the ``ctxlab`` entry-point group.
        plugins_dir: a folder of ``.py`` plugin files (``FileNotFoundError`` when missing);
            ``None``: none, or the folder in ``$CTXLAB_PLUGINS_DIR`` when ``read_env``.
        read_env: without ``plugins_dir``, load the folder named by ``$CTXLAB_PLUGINS_DIR`` (a
            missing folder there only warns); ``False`` (default): the environment is not read.
        defaults: register the built-in ARS plugins (``False`` only for tests of the hooks).
        specs: more hookspec modules, added before any plugin is registered (the floors above the
            core add theirs: :mod:`ctxlab.transcripts.hookspecs`, :mod:`ctxlab.replay.hookspecs`).

    Returns:
        A ``pluggy.PluginManager`` for project ``ctxlab``.  Every plugin in it passed the checks
        above; the ones that did not were skipped with a :class:`PluginWarning` naming the plugin
        and the hook.

    Raises:
        FileNotFoundError: ``plugins_dir`` is given and is not a folder.
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
    elif read_env and os.environ.get("CTXLAB_PLUGINS_DIR"):
        env_dir = Path(os.environ["CTXLAB_PLUGINS_DIR"])
        if env_dir.is_dir():
            _load_folder(pm, env_dir)
        else:
            warnings.warn(
                f"$CTXLAB_PLUGINS_DIR={env_dir} is not a folder; no folder plugins loaded",
                PluginWarning,
                stacklevel=2,
            )
    for plugin in extra:
        if pm.is_registered(plugin):
            continue
        label = getattr(plugin, "name", None) or getattr(plugin, "__name__", None)
        name = label if isinstance(label, str) and pm.get_plugin(label) is None else None
        _register(pm, plugin, name, source=None)
    _drop_unknown_hooks(pm)
    return pm


def _plugin_label(plugin: object) -> str:
    label = getattr(plugin, "name", None) or getattr(plugin, "__name__", None)
    return label if isinstance(label, str) else type(plugin).__name__


def _warn(message: str) -> None:
    warnings.warn(message, PluginWarning, stacklevel=2)


def _register(pm: pluggy.PluginManager, plugin: object, name: str | None, source: str | None) -> bool:
    """Register ``plugin``; a hook implementation pluggy refuses (an argument its spec lacks, a
    wrapper that is no generator) skips the whole plugin with a warning.  ``source`` is what
    :func:`describe_plugins` shows (``None``: "explicit").  Returns whether it was registered."""
    try:
        registered = pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        if pm.is_registered(plugin):  # pluggy < 1.6 leaves a refused plugin half-registered
            pm.unregister(plugin)
        label = name or _plugin_label(plugin)
        where = f" ({source})" if source else ""
        detail = " ".join(str(exc).split())
        _warn(f"ctxlab plugin {label!r}{where} skipped: {detail}")
        return False
    if source is not None and registered is not None:
        _sources(pm)[registered] = source
    return True


def _load_entrypoints(pm: pluggy.PluginManager) -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None:
            continue
        dist = getattr(ep, "dist", None)
        label = f"{dist.name} {dist.version}" if dist is not None else ep.value
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken plugin is reported and skipped
            _warn(f"ctxlab plugin {ep.name!r} ({ep.value}) failed to load: {exc}")
            continue
        if isinstance(plugin, ModuleType) and not _has_hookimpls(pm, plugin):
            _warn(
                f"ctxlab plugin {ep.name!r} ({label}) skipped: its entry point names the module "
                f"{plugin.__name__}, which defines no module-level @hookimpl function"
            )
            continue
        _register(pm, plugin, ep.name, source=f"entry point ({label})")


def _load_folder(pm: pluggy.PluginManager, folder: Path) -> None:
    if not folder.is_dir():
        raise FileNotFoundError(f"plugins folder {folder} does not exist")
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module_name = f"ctxlab_dir_plugin_{path.stem}"
        try:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            _warn(f"ctxlab plugin file {path} failed to load: {exc}")
            continue
        found = _folder_plugins(pm, module, f"dir:{path.name}")
        if not found:
            _warn(
                f"ctxlab plugin file {path} defines no hook implementation (module-level @hookimpl "
                "functions, or public module-level instances of classes with @hookimpl methods)"
            )
        for name, plugin in found:
            _register(pm, plugin, name, source=f"plugins folder ({path})")


def _folder_plugins(pm: pluggy.PluginManager, module: ModuleType, base: str) -> list[tuple[str, object]]:
    """The plugins one plugins-folder file provides, with their names: the module (``base``) when
    it has hook functions, then each public module-level instance with hook methods
    (``base:attribute``), skipping objects already registered (a plugin object the file imported)."""
    found: list[tuple[str, object]] = []
    if _has_hookimpls(pm, module):
        found.append((base, module))
    for attr, value in vars(module).items():
        if attr.startswith("_") or isinstance(value, type | ModuleType) or inspect.isroutine(value):
            continue
        if pm.is_registered(value) or any(value is p for _, p in found):
            continue
        if _has_hookimpls(pm, value):
            found.append((f"{base}:{attr}", value))
    return found


def _has_hookimpls(pm: pluggy.PluginManager, obj: object) -> bool:
    for attr in dir(obj):
        try:
            if pm.parse_hookimpl_opts(obj, attr) is not None:
                return True
        except Exception:  # an attribute that cannot be read is no hook implementation
            continue
    return False


def _drop_unknown_hooks(pm: pluggy.PluginManager) -> None:
    """Unregister (with a warning) every non-builtin plugin that implements a hook no ctxlab
    hookspec module specifies (pluggy's ``check_pending()`` rule: ``optionalhook=True``
    implementations are exempt).  Hooks of the floors above the core count as known also in a
    manager that does not hold their specs (see :data:`HOOKSPEC_MODULES`)."""
    try:
        pm.check_pending()
        return  # every hook implementation has a spec in this manager
    except pluggy.PluginValidationError:
        pass
    known = frozenset().union(*(_declared_hooks(m) for m in HOOKSPEC_MODULES))
    for name, plugin in pm.list_name_plugin():
        if plugin is None or name.startswith("ctxlab.builtin."):
            continue
        unknown = sorted(
            caller.name
            for caller in pm.get_hookcallers(plugin) or []
            if not caller.has_spec()
            and caller.name not in known
            and any(impl.plugin is plugin and not impl.optionalhook for impl in caller.get_hookimpls())
        )
        if unknown:
            pm.unregister(plugin)
            where = _sources(pm).pop(name, "explicit")
            _warn(
                f"ctxlab plugin {name!r} ({where}) skipped: unknown hook(s) {', '.join(unknown)} "
                "(misspelt? the hooks are listed in docs/plugins.md)"
            )


@functools.cache
def _declared_hooks(module_name: str) -> frozenset[str]:
    """Names of the hooks the hookspec module ``module_name`` declares.

    Read from the module when it is imported already, else from its source text: importing
    ``ctxlab.replay.hookspecs`` would import the replay floor (polars...) into a middleware, which
    the floors forbid.  An unreadable module declares nothing.
    """
    module = sys.modules.get(module_name)
    marker = f"{hookspecs.PROJECT}_spec"
    if module is not None:
        return frozenset(n for n, v in vars(module).items() if getattr(v, marker, None) is not None)
    package, *parts = module_name.split(".")
    try:
        resource = importlib.resources.files(package)
        for part in parts[:-1]:
            resource = resource.joinpath(part)
        return _hooks_in_source(resource.joinpath(f"{parts[-1]}.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ModuleNotFoundError, IndexError):
        return frozenset()


def _hooks_in_source(source: str) -> frozenset[str]:
    """Names of the top-level functions decorated ``@hookspec`` (or ``@hookspec(...)``) in a
    module's source text."""
    return frozenset(
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and any(_is_hookspec(d) for d in node.decorator_list)
    )


def _is_hookspec(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name == "hookspec"


def _sources(pm: pluggy.PluginManager) -> dict[str, str]:
    """Where each non-builtin plugin of ``pm`` came from (kept on the manager itself)."""
    found: dict[str, str] | None = getattr(pm, "_ctxlab_sources", None)
    if found is None:
        found = {}
        pm._ctxlab_sources = found  # type: ignore[attr-defined]
    return found


@dataclass(frozen=True)
class PluginInfo:
    """One loaded plugin: its registered name, where it came from and the hooks it implements.

    ``source`` is ``"builtin"``, ``"entry point (<distribution> <version>)"``,
    ``"plugins folder (<file>)"`` or ``"explicit"`` (passed as an object).
    """

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
