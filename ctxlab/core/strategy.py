"""A named strategy as a plugin registers it: the record, its factory type and the typed ``register``.

A *strategy* is a name for a way of compressing: the ARS defaults plus some plugins, or a
middleware from another framework.  A plugin names its strategies in the
``ctxlab_register_strategies`` hook (:mod:`ctxlab.replay.hookspecs`, llm-style: the hook is given
a ``register`` callback), typed here as :class:`RegisterStrategy`; the lab's registry
(:func:`ctxlab.replay.strategies`) builds one :class:`Strategy` per call.  The record lives in
the core so that a plugin package can be typed against it (``ctxlab.sdk``) without importing the
lab floor (polars ...); nothing in the middleware uses it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeAlias

from langchain.agents.middleware import AgentMiddleware

from ctxlab.core.settings import CompressionSettings

__all__ = ["LEVELS", "RegisterStrategy", "Strategy", "StrategyFactory"]

#: the compression levels a strategy may rename in reports (``levels={"L1": "masking"}``)
LEVELS = ("L1", "L2")

#: ``factory(settings)``: the plugin objects that, on top of the ARS defaults in a
#: :class:`~ctxlab.CompressionMiddleware`, make up the strategy (a list or tuple; empty: ARS
#: itself), or a ready ``AgentMiddleware`` (another framework's), driven as is.  ``settings`` is
#: the run's :class:`~ctxlab.core.settings.CompressionSettings`.  A factory that also names a
#: keyword parameter ``price`` is given the run's price row (a ``ctxlab.replay.prices.PriceRow``:
#: ``key``, ``input``, ``cached_input``, ``cache_write``, ``output``, ``caching``; ``None`` when
#: the caller has none) by :meth:`Strategy.make` (``ars-cache`` optimizes for it).  A factory
#: naming a keyword parameter ``fixed_request`` is given the run's ``(system message, tool
#: schemas)``, the part of every request that is not the conversation (the recorded system message
#: with the replay's unrecorded-prefix block, ``ctxlab.replay.prefix``; ``None`` when the caller
#: has none), and a replay builds its middleware per run: a foreign middleware whose trigger counts
#: the messages only (LangChain's) can count the same request as ctxlab's T (R16).  A factory
#: naming a keyword parameter ``model`` (another framework's summarization) is given the run's
#: summarizer chat model when the caller has one (``ctxlab replay --summarizer-model
#: provider:model``), so that a comparison's summaries are written by the same model on every
#: side; without one it is not passed and the factory keeps its own offline stand-in.
StrategyFactory: TypeAlias = Callable[[CompressionSettings], Sequence[object] | AgentMiddleware[Any, Any]]


class RegisterStrategy(Protocol):
    """The ``register`` callback ``ctxlab_register_strategies`` receives: one call per strategy.

    ``register(name, factory, description="", *, levels=None, per_run=False, settings=None)``;
    the arguments are those of :class:`Strategy` (``levels=None``: no renamed level;
    ``settings=None``: the run's settings as they are).  Raises ``TypeError`` or
    ``ValueError`` naming the argument when one is of the wrong type or out of range, and
    ``ValueError`` when the name is registered twice.
    """

    def __call__(
        self,
        name: str,
        factory: StrategyFactory,
        description: str = "",
        *,
        levels: Mapping[str, str] | None = None,
        per_run: bool = False,
        settings: Mapping[str, Any] | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class Strategy:
    """A named compression strategy.

    Attributes:
        name: what replay, ``ctxlab compare --strategies`` and the rows call it (a non-empty
            string without blanks at either end).
        factory: see :data:`StrategyFactory`; called once per replay batch (or per run with
            ``per_run``).
        description: one line for ``ctxlab plugins`` and the reports (may be empty).
        source: where it was registered (informative, not compared).
        levels: how reports name this strategy's compression levels, keys among :data:`LEVELS`
            (``{"L1": "masking"}``: its L1 rounds are observation masking); empty: ARS's L1 and
            L2.  Kept as a ``dict`` copy of the mapping given.
        per_run: a replay batch builds this strategy's middleware for every run (its plugins keep
            a run's state on themselves); ``False`` (default): one middleware per strategy
            serves every run of a batch, so plugins keep no run's state on themselves (or key it
            by what tells runs apart).
        settings: settings fields this strategy changes on top of the run's
            (``{"summary_prepare_ratio": 0.8}``); empty: none.  Kept as a ``dict`` copy.

    Raises:
        TypeError: a field has the wrong type (the message names the field and the strategy).
        ValueError: ``name`` is empty or padded, a ``levels`` key is not L1/L2 or its value empty,
            or a ``settings`` key is not a settings field.
    """

    name: str
    factory: StrategyFactory
    description: str = ""
    source: str = field(default="", compare=False)
    levels: Mapping[str, str] = field(default_factory=dict, compare=False)
    per_run: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"strategy name must be a str, got {type(self.name).__name__} {self.name!r}")
        if not self.name or self.name != self.name.strip():
            raise ValueError(f"strategy name {self.name!r} is invalid: a non-empty name without outer blanks")
        where = f"strategy {self.name!r}"
        if not callable(self.factory):
            raise TypeError(
                f"{where}: factory must be callable (settings -> plugins or AgentMiddleware), "
                f"got {type(self.factory).__name__}"
            )
        if not isinstance(self.description, str):
            raise TypeError(f"{where}: description must be a str, got {type(self.description).__name__}")
        if not isinstance(self.per_run, bool):
            raise TypeError(f"{where}: per_run must be a bool, got {type(self.per_run).__name__}")
        if not isinstance(self.levels, Mapping):
            raise TypeError(
                f"{where}: levels must be a mapping such as {{'L1': 'masking'}}, got {type(self.levels).__name__}"
            )
        for level, label in self.levels.items():
            if level not in LEVELS:
                raise ValueError(f"{where}: levels key {level!r} is invalid: allowed {', '.join(LEVELS)}")
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"{where}: levels[{level!r}] must be a non-empty str, got {label!r}")
        object.__setattr__(self, "levels", dict(self.levels))
        if not isinstance(self.settings, Mapping):
            raise TypeError(
                f"{where}: settings must be a mapping of settings fields, got {type(self.settings).__name__}"
            )
        known = {f.name for f in fields(CompressionSettings)}
        for key in self.settings:
            if key not in known:
                raise ValueError(
                    f"{where}: settings key {key!r} is not a settings field: allowed {sorted(known)}"
                )
        object.__setattr__(self, "settings", dict(self.settings))

    def settings_for(self, base: CompressionSettings) -> CompressionSettings:
        """The settings this strategy runs with: ``base`` with :attr:`settings` applied.

        Raises:
            SettingsError: a changed value is invalid (the message names the field).
        """
        return base.replace(**self.settings) if self.settings else base

    @property
    def takes_price(self) -> bool:
        """The factory names a ``price`` parameter (it is given the run's price row)."""
        return "price" in self._parameters()

    @property
    def takes_fixed_request(self) -> bool:
        """The factory names a ``fixed_request`` parameter (it is given the run's system message
        and tool schemas, :data:`StrategyFactory`)."""
        return "fixed_request" in self._parameters()

    def _parameters(self) -> Mapping[str, Any]:
        try:
            return inspect.signature(self.factory).parameters
        except (TypeError, ValueError):  # a builtin without a signature takes settings only
            return {}

    @property
    def takes_model(self) -> bool:
        """The factory names a ``model`` parameter (it is given the run's summarizer chat model,
        when there is one: :data:`StrategyFactory`)."""
        return "model" in self._parameters()

    def make(
        self,
        settings: CompressionSettings,
        price: Any = None,
        fixed_request: Any = None,
        model: Any = None,
    ) -> Sequence[object] | AgentMiddleware[Any, Any]:
        """What the factory makes for ``settings``; ``price`` (the run's price row, or ``None``)
        is passed as ``price=`` to a factory that :attr:`takes_price`, ``fixed_request`` (the
        run's ``(system message, tools)``, or ``None``) as ``fixed_request=`` to one that
        :attr:`takes_fixed_request`, ``model`` (the run's summarizer chat model) as ``model=`` to
        one that :attr:`takes_model` when it is not ``None``; other factories get none of them."""
        kwargs: dict[str, Any] = {}
        if self.takes_price:
            kwargs["price"] = price
        if self.takes_fixed_request:
            kwargs["fixed_request"] = fixed_request
        if model is not None and self.takes_model:
            kwargs["model"] = model
        return self.factory(settings, **kwargs)
