"""Named strategies: the registry over ``ctxlab_register_strategies`` and the lab's plugin manager.

A *strategy* is a name for a way of compressing: the ARS defaults plus some plugins, or a
middleware from another framework.  Plugins register strategies through the
:func:`~ctxlab.replay.hookspecs.ctxlab_register_strategies` hook (llm-style: a callback registers
named things, so many coexist and can be compared side by side).

A row labelled with a strategy's name is that strategy and nothing else.  Plugins loaded from a
plugins folder (``--plugins-dir``, ``$CTXLAB_PLUGINS_DIR``) apply to every ctxlab-middleware
strategy of the run; when one of them implements a hook that changes what the middleware does
(:data:`BEHAVIOUR_HOOKS`: every core hook but the observers — estimation, L1 trimming, the
cutoff, the summarizer, ...), the strategy is
a different one and its rows are labelled ``<name>+<plugin>`` (``ars+no_l2``,
:func:`strategy_label`).  An observer (``ctxlab_on_event`` only) changes nothing and renames
nothing.  A folder plugin that registers strategies of its own (``ctxlab_register_strategies``)
is a strategy provider: its hooks act through the strategies it registers (their factories
return its plugins), so it is added to no other strategy and renames none (``ars`` beside it is
the built-in ``ars``).  Installed (entry-point) plugins contribute the strategies they register; their own
compression hooks are not applied to any strategy (:func:`ignored_hook_plugins` names them).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pluggy

from ctxlab.core import hookspecs as core_specs
from ctxlab.core.builtin.extractive import SUMMARY_TOKENS, ForceExtractiveSummarizer
from ctxlab.core.builtin.floors import ForceIdentifierDump, ForceRecentMessages
from ctxlab.core.cache import CACHE_KEEP_MESSAGES, CacheAwareCutoff, CacheAwareSummarize, CachePrices
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.plugins import describe_plugins, make_plugin_manager
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.strategy import RegisterStrategy, Strategy, StrategyFactory
from ctxlab.replay import hookspecs as replay_specs
from ctxlab.transcripts import formats_plugin
from ctxlab.transcripts import hookspecs as transcript_specs

__all__ = [
    "BEHAVIOUR_HOOKS",
    "CACHE_PRICE_ENV",
    "OBSERVER_HOOKS",
    "PREPARED_RATIO",
    "PREPARED_STRATEGY",
    "BuiltinStrategies",
    "Strategy",
    "cache_plugins",
    "folder_plugins",
    "ignored_hook_plugins",
    "make_lab_manager",
    "strategies",
    "strategy_label",
]

#: core hooks that only observe (they change nothing a middleware sends)
OBSERVER_HOOKS = frozenset({"ctxlab_on_event"})
#: the compression hooks that change what a ctxlab middleware sends: every hook the core
#: specifies (:mod:`ctxlab.core.hookspecs`) but the observers; a plugins-folder plugin
#: implementing one renames the strategies it applies to
BEHAVIOUR_HOOKS = frozenset(
    name
    for name, value in vars(core_specs).items()
    if hasattr(value, f"{core_specs.PROJECT}_spec") and name not in OBSERVER_HOOKS
)


class BuiltinStrategies:
    """Registers the ``ars`` strategy (the defaults with nothing added), ``recorded`` (the agent's
    own recorded compactions, :mod:`ctxlab.replay.recorded`), ``ars-prepared`` (the defaults with
    ``summary_prepare_ratio`` :data:`PREPARED_RATIO`), ``ars-cache`` and ``ars-extractive``
    (the defaults with the offline extractive summarizer, :mod:`ctxlab.core.builtin.extractive`;
    with the dollar decision too, :mod:`ctxlab.core.cache`) and the two reference floors
    ``floor-identifiers`` and ``floor-recent`` (:mod:`ctxlab.core.builtin.floors`), ``trylast``."""

    name = "strategies"

    @hookimpl(trylast=True)
    def ctxlab_register_strategies(self, register: RegisterStrategy) -> None:
        from ctxlab.replay.recorded import RECORDED_STRATEGY, RecordedCompactionMiddleware

        register("ars", lambda settings: [], "ARS two-level compression (L1 trim + L2 summary), the defaults")
        register(
            RECORDED_STRATEGY,
            lambda settings: RecordedCompactionMiddleware(),
            "what the agent itself sent: its own recorded compactions (Claude Code, Codex), else everything",
        )
        register(
            "ars-cache",
            cache_plugins,
            "ARS that summarizes only when it pays in dollars under the prompt cache of the run's price row "
            "(--price-model), keeping the last 2 messages, with the extractive summarizer",
        )
        register(
            PREPARED_STRATEGY,
            lambda settings: [],
            f"ARS with its summaries prepared in the background from {PREPARED_RATIO:g} of T and committed "
            "at T without a stall (summary_prepare_ratio; issue 34)",
            settings={"summary_prepare_ratio": PREPARED_RATIO},
        )
        register(
            "ars-extractive",
            lambda settings: [ForceExtractiveSummarizer()],
            "ARS with the offline extractive summarizer (no model call; states what happened to the files, "
            "commands, errors and values of the span, keeps constraints, open tasks and identifiers by salience)",
        )
        register(
            "floor-identifiers",
            lambda settings: [ForceIdentifierDump()],
            "reference floor: ARS whose 'summary' is every identifier of the span, the most recent first, "
            "at the extractive summary's budget (names everything, states nothing)",
        )
        register(
            "floor-recent",
            lambda settings: [ForceRecentMessages()],
            "reference floor: ARS whose 'summary' is the span's last messages verbatim at the extractive "
            "summary's budget (what plain truncation keeps)",
        )


#: the strategy whose summaries are prepared in the background (issue 34), and its ratio of T
PREPARED_STRATEGY = "ars-prepared"
PREPARED_RATIO = 0.8

#: the environment variable naming the price row ``ars-cache`` optimizes for (``provider:model``)
#: when it is given none (a factory call without ``price``); a replay always gives the run's row
CACHE_PRICE_ENV = "CTXLAB_CACHE_PRICE_MODEL"


def cache_plugins(settings: CompressionSettings | None = None, *, price: Any = None) -> list[object]:
    """The plugins of ``ars-cache`` (:mod:`ctxlab.core.cache`): the dollar decision under a price
    row, the cutoff that keeps :data:`~ctxlab.core.cache.CACHE_KEEP_MESSAGES` messages and the
    extractive summarizer (no model call).

    Args:
        settings: unused (the strategy factory's signature).
        price: the price row to optimize for: a ``PriceRow`` (a replay passes the run's,
            ``--price-model``), or ``"provider:model"`` of the shipped table (a middleware in an
            agent: ``CompressionMiddleware(plugins=cache_plugins(price="openai:gpt-4.1"))``).
            ``None``: the row named by ``$CTXLAB_CACHE_PRICE_MODEL``, else the cost columns'
            default row.  Where the row came from is the decision plugin's ``provenance``
            (``{"price_row": key, "price_from": ...}``), which the replay's provenance records.

    Raises:
        KeyError: ``price`` or the variable names no row of the shipped price table.
    """
    from ctxlab.replay.prices import DEFAULT_PRICE_MODEL, load_prices

    env = os.environ.get(CACHE_PRICE_ENV)
    if price is None:
        row = load_prices().get(env or DEFAULT_PRICE_MODEL)
        source = f"${CACHE_PRICE_ENV}" if env else "the default price row (no price given)"
    else:
        row = load_prices().get(price) if isinstance(price, str) else price
        source = "the given price row"
    keep = CACHE_KEEP_MESSAGES
    decide = CacheAwareSummarize(CachePrices.of(row), summary_tokens=SUMMARY_TOKENS, keep_messages=keep)
    decide.provenance = {"price_row": row.key, "price_from": source}
    if price is not None and env and env != row.key:
        decide.provenance["ignored"] = f"${CACHE_PRICE_ENV}={env}"
    return [decide, CacheAwareCutoff(keep), ForceExtractiveSummarizer()]


def make_lab_manager(
    extra: Iterable[object] = (),
    *,
    load_entrypoints: bool = False,
    plugins_dir: str | os.PathLike[str] | None = None,
    read_env: bool = True,
) -> pluggy.PluginManager:
    """A plugin manager for the lab: the compression hooks and defaults, the transcript-format and
    strategy hook specs, the built-in formats and the ``ars`` strategy, then entry-point, folder
    and ``extra`` plugins (see :func:`ctxlab.core.plugins.make_plugin_manager` for the order and
    the errors).  Without ``plugins_dir`` the lab reads the folder in ``$CTXLAB_PLUGINS_DIR``
    unless ``read_env=False`` (a ``CompressionMiddleware`` never reads it by itself)."""
    pm = make_plugin_manager(
        extra,
        load_entrypoints=load_entrypoints,
        plugins_dir=plugins_dir,
        read_env=read_env,
        specs=[transcript_specs, replay_specs],
    )
    pm.register(formats_plugin, name="ctxlab.builtin.transcript_formats")
    pm.register(BuiltinStrategies(), name="ctxlab.builtin.strategies")
    return pm


def strategies(pm: pluggy.PluginManager) -> dict[str, Strategy]:
    """Every strategy registered through ``ctxlab_register_strategies`` in ``pm``, by name.

    The hook's ``register`` is a :class:`~ctxlab.core.strategy.RegisterStrategy`: each call is
    checked as a :class:`~ctxlab.core.strategy.Strategy`.

    Raises:
        ValueError: two plugins register the same strategy name, or a value is out of range.
        TypeError: an argument of ``register`` has the wrong type (the message names it).
    """
    found: dict[str, Strategy] = {}

    def register(
        name: str,
        factory: StrategyFactory,
        description: str = "",
        *,
        levels: Mapping[str, str] | None = None,
        per_run: bool = False,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        made = Strategy(
            name,
            factory,
            description,
            levels={} if levels is None else levels,
            per_run=per_run,
            settings={} if settings is None else settings,
        )
        if made.name in found:
            raise ValueError(f"strategy {name!r} is registered twice")
        found[made.name] = made

    typed: RegisterStrategy = register  # mypy checks the callback against the protocol
    hook = getattr(pm.hook, "ctxlab_register_strategies", None)
    if hook is not None:
        hook(register=typed)
    return found


def _behaviour_hooks(pm: pluggy.PluginManager, plugin: object) -> tuple[str, ...]:
    return tuple(sorted(h.name for h in pm.get_hookcallers(plugin) or [] if h.name in BEHAVIOUR_HOOKS))


def folder_plugins(pm: pluggy.PluginManager) -> list[tuple[str, object, tuple[str, ...]]]:
    """The plugins loaded from a plugins folder into ``pm`` that are added to every
    ctxlab-middleware strategy of a replay: ``(registered name, plugin, the
    :data:`BEHAVIOUR_HOOKS` it implements)``, in registration order.  A folder plugin that
    registers strategies (``ctxlab_register_strategies``) is not among them (see the module doc)."""
    return [
        (name, plugin, _behaviour_hooks(pm, plugin))
        for name, plugin in pm.list_name_plugin()
        if plugin is not None and name.startswith("dir:") and not _registers_strategies(pm, plugin)
    ]


def _registers_strategies(pm: pluggy.PluginManager, plugin: object) -> bool:
    return any(h.name == "ctxlab_register_strategies" for h in pm.get_hookcallers(plugin) or [])


def _short_label(name: str) -> str:
    """``dir:no_l2.py`` → ``no_l2``; ``dir:rules.py:plugin`` → ``rules.plugin``."""
    _, _, rest = name.partition(":")
    file, _, attr = rest.partition(":")
    stem = file[:-3] if file.endswith(".py") else file
    return f"{stem}.{attr}" if attr else stem


def strategy_label(name: str, pm: pluggy.PluginManager) -> str:
    """The label of a ctxlab-middleware strategy's rows: ``name`` itself, or, when plugins-folder
    plugins that change the middleware (:data:`BEHAVIOUR_HOOKS`) are loaded in ``pm``,
    ``name+<plugin>+<plugin>`` (``ars+no_l2``), so that a row labelled ``ars`` is always the
    built-in ``ars``."""
    changing = [_short_label(n) for n, _, hooks in folder_plugins(pm) if hooks]
    return "+".join([name, *changing]) if changing else name


def ignored_hook_plugins(pm: pluggy.PluginManager) -> list[tuple[str, str, tuple[str, ...]]]:
    """Installed (entry-point) plugins that implement :data:`BEHAVIOUR_HOOKS`: ``(name, source,
    hooks)``.  The lab applies only the strategies such a package registers; its hooks reach a
    middleware only through a strategy's factory or ``CompressionMiddleware(plugins=[...])``."""
    out = []
    for info in describe_plugins(pm):
        if info.source.startswith("entry point"):
            hooks = tuple(h for h in info.hooks if h in BEHAVIOUR_HOOKS)
            if hooks:
                out.append((info.name, info.source, hooks))
    return out
