"""The keyword arguments :func:`ctxlab.replay.replay` and :func:`ctxlab.replay.replay_many` share
(:class:`ReplayOptions`), and the check of the cache breakpoint policy among them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.cost import BREAKPOINTS

if TYPE_CHECKING:
    import pluggy

    from ctxlab.replay.latency import Latency
    from ctxlab.replay.prices import PriceRow, PriceTable
    from ctxlab.replay.provider import ContextWindow

__all__ = ["ReplayOptions", "check_breakpoints"]


class ReplayOptions(TypedDict, total=False):
    """The keyword arguments :func:`replay` and :func:`replay_many` share (all optional).

    Keys:
        settings: the five fields (default: the ARS defaults).
        pm: plugin manager for strategies and formats (default: with entry points).
        out_dir: offloads and histories go to ``<out_dir>/files/<transcript>/<strategy>`` (a
            temporary folder when ``None``).
        format: the transcript format name of files (default: detected per file).
        summarizer_model: ``"provider:model"`` (``init_chat_model``), a chat model, or an offline
            summarizer's name (:data:`~ctxlab.replay.building.OFFLINE_SUMMARIZERS`; ``None``: structured).
        summary_cache: a SQLite file caching the summarizer model's replies
            (:mod:`ctxlab.replay.summary_cache`; hits and misses in ``result.provenance``);
            ``None`` (default): no cache.
        context_window: the provider's window: tokens (counted with ``provider_count``), a
            :class:`~ctxlab.replay.provider.ContextWindow`, ``"price"`` (default: the window of
            the price row's model, from its LangChain profile, when one is known) or ``None`` (no
            window).  A request above it is refused with ``ContextOverflowError`` as a provider
            would; it is also the model profile's ``max_input_tokens``, and an uncompressed
            request above it is marked ``over_window`` (its no-compression baseline is infeasible).
        provider_count: the provider stand-in's counter, ``"tiktoken"`` (cl100k, default) or
            ``"char-class"``.
        measure: the measuring estimator, ``"char-class"`` (default) or ``"tiktoken"``.
        limit_calls: replay at most this many model calls per run (``None``: all).
        keep_views: keep every request view in ``result.views`` (and state updates in
            ``result.updates``).
        write_views: write every call's raw and sent view into ``<out_dir>/views`` (the call
            inspector's data, :mod:`ctxlab.replay.views`; needs ``out_dir``). Default: off.
        progress: text progress bars on stderr (default: off for :func:`replay`; for
            :func:`replay_many` on when stderr is a terminal, so never in a notebook).
        price_model, prices: the price row of the cost columns, ``"provider:model"`` of the
            ``prices`` file (default: the shipped table and its default row; see
            :func:`ctxlab.replay.run_measures.resolve_price`).
        cache_breakpoints: the breakpoint policy of explicit caching in the cost columns
            (:data:`ctxlab.replay.cost.BREAKPOINTS`; default ``"agent"``, what an agent can place;
            ``"oracle"``: for comparison only).
        unrecorded_prefix: ``"auto"`` (default), ``"off"`` or a number of tokens: the part of
            every request the recording does not hold, added to every strategy's request as one
            labelled block of the system message (:mod:`ctxlab.replay.prefix`); per run in
            ``result.prefixes``.
        summarizer_latency: how long one summarizer call takes in simulated time, for the stall
            columns (:class:`~ctxlab.replay.latency.Latency`: ``"2s"``, ``"uniform:1s,3s"``,
            ``"lognormal:2s,0.5"``; ``None``: no latency model, the stall columns stay empty).
        call_latency: how long one agent step takes (same forms; ``None``: 1 s plus the
            answer's output tokens at 50 per second).
    """

    settings: CompressionSettings | None
    pm: pluggy.PluginManager | None
    out_dir: str | Path | None
    format: str | None
    summarizer_model: str | Any | None
    summary_cache: str | Path | None
    context_window: int | ContextWindow | str | None
    provider_count: str
    measure: str
    limit_calls: int | None
    keep_views: bool
    write_views: bool
    progress: bool | None
    price_model: str | PriceRow | None
    prices: str | Path | PriceTable | None
    cache_breakpoints: str
    unrecorded_prefix: str | int
    summarizer_latency: str | float | Latency | None
    call_latency: str | float | Latency | None


def check_breakpoints(policy: str) -> str:
    """A checked breakpoint policy (``"reusable"``: the old name of ``"oracle"``).

    Raises:
        ValueError: an unknown policy.
    """
    policy = "oracle" if policy == "reusable" else policy
    if policy not in BREAKPOINTS:
        raise ValueError(f"cache_breakpoints={policy!r} is invalid: allowed one of {BREAKPOINTS}")
    return policy
