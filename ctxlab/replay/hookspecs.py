"""The replay floor's hook specification (pluggy project ``ctxlab``): named strategies.

Added to a plugin manager by :func:`ctxlab.replay.strategies.make_lab_manager`.
"""

from __future__ import annotations

from ctxlab.core.hookspecs import hookspec
from ctxlab.core.strategy import RegisterStrategy


@hookspec
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    """Register named strategies: call ``register(name, factory, description="", *, levels=None,
    per_run=False)`` per strategy (a :class:`ctxlab.core.strategy.RegisterStrategy`; each call is
    checked as a :class:`~ctxlab.core.strategy.Strategy`, ``TypeError``/``ValueError`` naming the
    argument) (``levels``: how reports name the strategy's compression levels,
    e.g. ``{"L1": "masking"}`` when its L1 rounds are observation masking; default: L1 and L2).

    ``factory(settings) -> list[object] | AgentMiddleware``: a list of plugin objects that, added
    on top of the ARS defaults in a :class:`~ctxlab.CompressionMiddleware`, make up the strategy
    (an empty list is ARS itself); or a ready ``AgentMiddleware`` (a baseline from another
    framework), driven as is.  A replay batch builds one ctxlab middleware per strategy and
    reuses it for every run (transcript) of the batch: its plugins must keep no run's state on
    themselves, or the strategy is registered with ``per_run=True`` (a middleware per run,
    slower).  A foreign middleware is made per run.  Every implementation runs; a name registered twice is an
    error (``ValueError``).  Replay and ``ctxlab compare`` look strategies up by name.  Returns
    nothing.
    """
