"""What ``ctxlab bench`` measures that a plugin package provides, found through the ``ctxlab``
entry points (never imported: no module of ctxlab imports a plugin package, an import-linter
contract in ``pyproject.toml``).

The bench looks a plugin's strategy up by name in the lab's plugin manager
(:func:`ctxlab.replay.make_lab_manager` with the installed entry points) and takes the
estimator out of what the strategy's factory returns:

* ``ars-fast`` (distribution ``ctxlab-fast-estimator``): the sampled estimator, driven as the
  strategy's plugins (section 1) and through its ``text_tokens`` (section 2);
* ``ars-tiktoken`` (distribution ``ctxlab-tiktoken``): a tiktoken estimator whose encoding the
  strategy reads from ``$CTXLAB_TIKTOKEN_ENCODING`` (section 2, the o200k_base check).

A strategy that is not registered raises :class:`PluginMissingError` naming the distribution
to install; :func:`require` checks the sections' plugins before any is measured.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from ctxlab.core.estimation import CharClassEstimator, TokenizerEstimator
from ctxlab.core.settings import CompressionSettings
from ctxlab.core.strategy import Strategy

__all__ = [
    "PLUGIN_STRATEGIES",
    "SECTION_STRATEGIES",
    "PluginMissingError",
    "fast_estimator",
    "plugin_strategy",
    "require",
    "strategy_plugins",
    "tiktoken_estimator",
]

#: strategy the bench measures -> the plugin distribution that registers it
PLUGIN_STRATEGIES: dict[str, str] = {"ars-fast": "ctxlab-fast-estimator", "ars-tiktoken": "ctxlab-tiktoken"}
#: bench section -> the plugin strategies it measures
SECTION_STRATEGIES: dict[str, tuple[str, ...]] = {
    "overhead": ("ars-fast",),
    "estimators": ("ars-fast", "ars-tiktoken"),
}


class PluginMissingError(LookupError):
    """A strategy the bench measures is not registered: its plugin distribution is not installed."""


def plugin_strategy(name: str) -> Strategy:
    """The strategy ``name`` (a key of :data:`PLUGIN_STRATEGIES`) from the installed entry points.

    Raises:
        PluginMissingError: no installed plugin registers it (the message names the distribution).
    """
    from ctxlab.replay.strategies import make_lab_manager, strategies

    found = strategies(make_lab_manager(load_entrypoints=True, read_env=False)).get(name)
    if found is None:
        dist = PLUGIN_STRATEGIES.get(name, "a ctxlab plugin")
        raise PluginMissingError(
            f"ctxlab bench measures the strategy {name!r}, registered by the plugin distribution {dist}, "
            f"which is not installed: pip install -e plugins/{dist} (`make setup` installs every plugin)"
        )
    return found


def require(sections: Iterable[str]) -> None:
    """Check that the plugin strategies of ``sections`` (:data:`SECTION_STRATEGIES`) are installed.

    Raises:
        PluginMissingError: the first one missing.
    """
    for section in sections:
        for name in SECTION_STRATEGIES.get(section, ()):
            plugin_strategy(name)


def strategy_plugins(name: str) -> Callable[[], Sequence[object]]:
    """A function returning fresh plugin objects of strategy ``name`` on every call (its factory
    with the default settings).

    Raises:
        PluginMissingError: the strategy is not registered.
        TypeError: its factory returns no list of plugins (a foreign middleware).
    """
    factory = plugin_strategy(name).factory
    settings = CompressionSettings()

    def plugins() -> Sequence[object]:
        made = factory(settings)
        if not isinstance(made, list | tuple):
            raise TypeError(
                f"strategy {name!r}: the bench needs a list of plugins, got {type(made).__name__}"
            )
        return made

    return plugins


def _estimator(name: str) -> CharClassEstimator:
    found = [p for p in strategy_plugins(name)() if isinstance(p, CharClassEstimator)]
    if len(found) != 1:
        raise TypeError(f"strategy {name!r}: expected one estimator plugin, found {len(found)}")
    return found[0]


def fast_estimator() -> CharClassEstimator:
    """The estimator of the ``ars-fast`` strategy (its ``text_tokens`` is the sampled count)."""
    return _estimator("ars-fast")


@contextmanager
def _environment(key: str, value: str) -> Iterator[None]:
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[key]
        else:
            os.environ[key] = old


def tiktoken_estimator(encoding: str) -> TokenizerEstimator:
    """The estimator of the ``ars-tiktoken`` strategy for ``encoding`` (the strategy reads
    ``$CTXLAB_TIKTOKEN_ENCODING``, set for the call); its ``encoding`` is the tiktoken one.

    Raises:
        PluginMissingError: the strategy is not registered.
        RuntimeError: the plugin cannot load ``encoding`` offline (its ``EncodingUnavailableError``).
    """
    with _environment("CTXLAB_TIKTOKEN_ENCODING", encoding):
        found = _estimator("ars-tiktoken")
    if not isinstance(found, TokenizerEstimator):
        raise TypeError(f"strategy 'ars-tiktoken': expected a TokenizerEstimator, got {type(found).__name__}")
    return found
