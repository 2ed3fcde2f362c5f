"""What one replay run is made of: the middleware of a strategy (:func:`build_middleware`, with
the plugins-folder plugins and the row label they imply), the provider's context window
(:func:`make_window`), the summarizer, and the record of the strategies for provenance
(:func:`strategy_records`)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware.types import AgentMiddleware

from ctxlab.core.builtin import ExtractiveSummarizer, StructuredSummarizer
from ctxlab.core.middleware import CompressionMiddleware
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.names import did_you_mean
from ctxlab.replay.provider import ContextWindow
from ctxlab.replay.strategies import folder_plugins, make_lab_manager, strategy_label
from ctxlab.replay.strategies import strategies as registered_strategies

if TYPE_CHECKING:
    import pluggy

__all__ = [
    "OFFLINE_SUMMARIZERS",
    "PRICE_WINDOW",
    "STAND_IN",
    "RunFiles",
    "build_middleware",
    "chat_model",
    "make_summarizer",
    "make_window",
    "no_window_note",
    "price_window",
    "strategy_records",
    "summarizer_name",
    "summarizer_of",
]


class RunFiles:
    """The backend of a ctxlab middleware that a batch reuses from run to run: each run's files go
    to its own folder (:meth:`use`), as with a middleware built for that run.

    Given to :class:`~ctxlab.CompressionMiddleware` as a backend factory (it calls ``backend(runtime)``
    when a request writes a file, spec R17), it answers with a ``FilesystemBackend`` (virtual mode)
    rooted at the current run's folder.  The folder and the backend are made on that first call,
    so a run that writes nothing leaves no folder behind.

    Raises:
        RuntimeError: called before :meth:`use`.
    """

    def __init__(self) -> None:
        self.root: Path | None = None
        self._backend: Any = None

    def use(self, root: str | Path) -> Path:
        """Send the files of the next requests to ``root`` (made when first written to); returns it
        resolved."""
        import deepagents.backends  # noqa: F401  # imported with the batch, not inside a run

        self.root = Path(root).resolve()
        self._backend = None
        return self.root

    def __call__(self, runtime: Any) -> Any:
        if self._backend is None:
            if self.root is None:
                raise RuntimeError("RunFiles: no run folder yet (call use(folder) first)")
            from deepagents.backends import FilesystemBackend

            self.root.mkdir(parents=True, exist_ok=True)
            self._backend = FilesystemBackend(root_dir=str(self.root), virtual_mode=True)
        return self._backend


def build_middleware(
    strategy: str | AgentMiddleware,
    *,
    settings: CompressionSettings,
    pm: pluggy.PluginManager | None = None,
    files_dir: str | Path | None = None,
    summarizer: Any = None,
    backend: RunFiles | None = None,
    price: Any = None,
    fixed: Any = None,
) -> tuple[str, AgentMiddleware]:
    """A fresh middleware for a strategy name (or the given middleware), and the label of its rows.

    Plugins loaded from a plugins folder into ``pm`` are added to a ctxlab-middleware strategy;
    when one of them changes what the middleware does, the label is ``<name>+<plugin>``
    (:func:`ctxlab.replay.strategies.strategy_label`), so a row labelled ``ars`` is the built-in.

    Args:
        strategy: a name registered through ``ctxlab_register_strategies`` in ``pm``, or an
            ``AgentMiddleware`` instance (used as is, labelled with its ``name``).
        settings: the compression settings handed to the strategy factory and the middleware.
        pm: where strategies are looked up; default: ``make_lab_manager(load_entrypoints=True)``.
        files_dir: root of the middleware's ``FilesystemBackend`` (virtual mode).
        backend: a :class:`RunFiles` instead (a middleware reused from run to run; ``files_dir``
            is then ignored and the middleware has no ``_ctxlab_files_root``).
        summarizer: the ``summarizer=`` of the CompressionMiddleware (default: the offline
            :class:`ctxlab.core.builtin.StructuredSummarizer`).
        price: the run's price row, given to a factory that takes one
            (:meth:`~ctxlab.core.strategy.Strategy.make`; ``ars-cache``); ``None``: none.
        fixed: the run's ``(system message, tool schemas)``, given to a factory that names
            ``fixed_request`` (the LangChain baseline's trigger counts it); ``None``: none.
            A ``summarizer`` that is a chat model is also given to a factory that names
            ``model`` (the LangChain and DeepAgents baselines summarize with it too).

    Raises:
        KeyError: the strategy name is not registered (the message lists the known names).
        TypeError: the factory returned neither a list of plugins nor an AgentMiddleware.
    """

    if isinstance(strategy, AgentMiddleware):
        return strategy.name, strategy
    if pm is None:
        pm = make_lab_manager(load_entrypoints=True)
    known = registered_strategies(pm)
    if strategy not in known:
        raise KeyError(
            f"unknown strategy {strategy!r}{did_you_mean(strategy, known)}; "
            f"known: {', '.join(sorted(known)) or '(none)'}"
        )
    settings = known[strategy].settings_for(settings)  # a strategy may change settings fields
    made = known[strategy].make(settings, price, fixed, model=chat_model(summarizer))
    if isinstance(made, AgentMiddleware):
        return strategy, made
    if isinstance(made, (list, tuple)):
        if summarizer is None:
            summarizer = StructuredSummarizer()
        summarizer = _strategy_summarizer(made, summarizer, settings)
        root: Path | None = None
        files: Any = backend
        if files is None:
            from deepagents.backends import FilesystemBackend

            root = (
                Path(files_dir) if files_dir is not None else Path(tempfile.mkdtemp(prefix="ctxlab-replay-"))
            )
            root.mkdir(parents=True, exist_ok=True)
            files = FilesystemBackend(root_dir=str(root.resolve()), virtual_mode=True)
        extra = [p for _, p, _ in folder_plugins(pm)]
        # the recorded agent never had ctxlab's read tool: a replayed request carries the
        # recorded tools only, so that raw and sent requests differ by compression alone
        mw = CompressionMiddleware(
            settings=settings,
            backend=files,
            summarizer=summarizer,
            plugins=[*made, *extra],
            read_tool=False,
        )
        if root is not None:
            mw._ctxlab_files_root = root.resolve()  # type: ignore[attr-defined]
        return strategy_label(strategy, pm), mw
    raise TypeError(
        f"strategy {strategy!r}: factory returned {type(made).__name__}; expected a list of plugin objects "
        "or an AgentMiddleware instance"
    )


def strategy_records(
    strategies: Sequence[str | AgentMiddleware],
    pm: pluggy.PluginManager,
    settings: CompressionSettings,
    price: Any = None,
) -> dict[str, dict[str, Any]]:
    """Row label -> what it is, for provenance: ``strategy`` (the registered name or the
    middleware's class), ``description``, ``plugins`` (the plugins-folder plugins added, with
    the hooks that changed it), ``levels`` (level renames, ``{"L1": "masking"}``) and, when the
    strategy's plugins carry a ``provenance`` dict (``ars-cache``: the price row it optimizes
    for and where it came from), ``parameters`` (those dicts merged).  ``price``: the run's
    price row, as for :func:`build_middleware`."""
    known = registered_strategies(pm)
    added = [{"name": n, "hooks": list(h)} for n, _, h in folder_plugins(pm)]
    out: dict[str, dict[str, Any]] = {}
    for s in strategies:
        if isinstance(s, AgentMiddleware):
            out[s.name] = {"strategy": type(s).__name__, "description": "", "plugins": [], "levels": {}}
            continue
        entry = known[s]
        try:
            made: Any = entry.make(settings, price)
        except Exception:  # a factory that fails fails its runs, where it is reported
            made = []
        foreign = isinstance(made, AgentMiddleware)
        record: dict[str, Any] = {
            "strategy": s,
            "description": entry.description,
            "plugins": [] if foreign else added,
            "levels": dict(entry.levels),
        }
        parameters = {} if foreign else _plugin_provenance(made)
        if entry.settings:  # the settings fields the strategy changes
            parameters = {**parameters, "settings": dict(entry.settings)}
        if parameters:
            record["parameters"] = parameters
        out[s if foreign else strategy_label(s, pm)] = record
    return out


def _plugin_provenance(plugins: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for plugin in plugins if isinstance(plugins, (list, tuple)) else ():
        given = getattr(plugin, "provenance", None)
        if isinstance(given, dict):
            out.update(given)
    return out


#: ``context_window="price"``: the window of the price row's model (the default of a replay)
PRICE_WINDOW = "price"


def price_window(price: Any, provider_count: str = "tiktoken") -> ContextWindow | None:
    """The window of the price row's model, ``provider:model`` of the row, from the installed
    LangChain provider package's model profile (:func:`ctxlab.replay.provider.profile_window`),
    counted with ``provider_count``; ``None`` when the row has no key or no profile knows the
    model (the report then says so: a window must be given in tokens)."""
    from ctxlab.replay.provider import profile_window

    key = getattr(price, "key", None)
    if not isinstance(key, str):
        return None
    try:
        tokens = profile_window(key)
    except ValueError:
        return None
    return ContextWindow(tokens, counter=provider_count, source=f"the price row's model {key} (its profile)")


def no_window_note(asked: object, price: Any) -> str:
    """What the provenance says of a replay without a window: why none, when the price row's
    model's was asked (:data:`PRICE_WINDOW`) and no profile knows it."""
    if asked == PRICE_WINDOW:
        return (
            f"none: the price row's model {getattr(price, 'key', price)} has no window in the installed "
            "LangChain profiles (give one with --context-window)"
        )
    return "none (none asked)"


def make_window(
    context_window: int | ContextWindow | str | None, provider_count: str = "tiktoken", price: Any = None
) -> ContextWindow | None:
    """A :class:`ContextWindow` from a number of tokens (counted with ``provider_count``), the
    given one, or, for :data:`PRICE_WINDOW` (``"price"``), the window of the price row's model
    (:func:`price_window`; ``None`` when none is known); ``None`` stays ``None`` (no window).

    Raises:
        ValueError: not a positive integer, another string, or an unknown counter.
    """
    if context_window is None or isinstance(context_window, ContextWindow):
        return context_window
    if isinstance(context_window, str):
        if context_window != PRICE_WINDOW:
            raise ValueError(
                f"context_window={context_window!r} is invalid: allowed tokens, a ContextWindow, "
                f"{PRICE_WINDOW!r} or None"
            )
        return price_window(price, provider_count)
    return ContextWindow(int(context_window), counter=provider_count)


def _strategy_summarizer(plugins: Sequence[object], summarizer: Any, settings: CompressionSettings) -> Any:
    """The summarizer of a strategy whose own plugins choose one (``ctxlab_get_summarizer``,
    e.g. ``ars-extractive``): offline (``summarizer`` is a summarizer object, not a chat model)
    the first plugin's answer for ``model=None`` replaces the offline stand-in; with a chat model
    the middleware asks the hook with that model itself."""
    if not hasattr(summarizer, "summarize") or hasattr(summarizer, "invoke"):
        return summarizer
    for plugin in plugins:
        hook = getattr(plugin, "ctxlab_get_summarizer", None)
        chosen = hook(model=None, settings=settings) if callable(hook) else None
        if chosen is not None:
            return chosen
    return summarizer


def chat_model(summarizer: Any) -> Any:
    """``summarizer`` when it is a LangChain chat model (``BaseChatModel``), else ``None`` (an
    offline ctxlab summarizer, or none): what another framework's summarization can be given."""
    from langchain_core.language_models import BaseChatModel

    return summarizer if isinstance(summarizer, BaseChatModel) else None


#: offline summarizers by the name ``summarizer_model`` (``--summarizer-model``) may give instead
#: of a chat model
OFFLINE_SUMMARIZERS: dict[str, type[Any]] = {
    "structured": StructuredSummarizer,
    "extractive": ExtractiveSummarizer,
}


def make_summarizer(summarizer_model: str | Any | None) -> Any:
    """The L2 summarizer: the offline :class:`StructuredSummarizer` (``None``), an offline one by
    name (:data:`OFFLINE_SUMMARIZERS`), a chat model by ``"provider:model"`` (``init_chat_model``;
    raises what it raises), or the given object."""
    if summarizer_model is None:
        return StructuredSummarizer()
    if isinstance(summarizer_model, str) and summarizer_model in OFFLINE_SUMMARIZERS:
        return OFFLINE_SUMMARIZERS[summarizer_model]()
    if isinstance(summarizer_model, str):
        from langchain.chat_models import init_chat_model

        return init_chat_model(summarizer_model)
    return summarizer_model


def summarizer_name(summarizer_model: str | Any | None) -> str:
    """What writes the L2 summaries, in words (provenance)."""
    if summarizer_model is None:
        return "offline structured summarizer (ctxlab.core.builtin.StructuredSummarizer)"
    if isinstance(summarizer_model, str) and summarizer_model in OFFLINE_SUMMARIZERS:
        kind = OFFLINE_SUMMARIZERS[summarizer_model]
        return f"offline {summarizer_model} summarizer (ctxlab.core.builtin.{kind.__name__})"
    if isinstance(summarizer_model, str):
        return f"chat model {summarizer_model} (init_chat_model)"
    name = getattr(summarizer_model, "model_name", None) or getattr(summarizer_model, "model", None)
    return f"{type(summarizer_model).__name__}" + (f" {name}" if isinstance(name, str) else "")


#: what a summarizer label says of a stand-in (``summarizer_of``): no model wrote the summaries
STAND_IN = "offline stand-in, not a model"


def summarizer_of(mw: AgentMiddleware) -> str:
    """What writes a middleware's L2 summaries, in words, for the reports: a ctxlab middleware's
    summarizer (an offline one by class, a chat model by name), a foreign middleware's ``model``
    (the baselines' offline :class:`OfflineSummaryModel` by its type), ``"the agent's own
    (recorded)"`` for a middleware that summarizes nothing itself.  An offline summarizer is
    labelled :data:`STAND_IN`."""
    if isinstance(mw, CompressionMiddleware):
        given = getattr(mw, "_summarizer", None)  # what the replay gave it (make_summarizer)
        return _summarizer_label(given if given is not None else StructuredSummarizer())
    # a foreign middleware's summarizer (the field baselines' ``summarizer``), else its ``model``
    model = getattr(mw, "summarizer", None) or getattr(mw, "model", None)
    if model is None:
        return (
            "the agent's model, as recorded" if getattr(mw, "replays_recorded_compactions", False) else "none"
        )
    return _summarizer_label(model)


def _summarizer_label(obj: Any) -> str:
    kind = type(obj).__name__
    offline = hasattr(obj, "summarize") and not hasattr(obj, "invoke")
    llm_type = getattr(obj, "_llm_type", "")
    if offline or (isinstance(llm_type, str) and llm_type.startswith("ctxlab-offline")):
        return f"{kind} ({STAND_IN})"
    name = getattr(obj, "model_name", None) or getattr(obj, "model", None)
    if not isinstance(name, str) and type(obj).__module__.startswith("inspect_ai"):
        name = str(obj)  # an Inspect AI model: "provider/name"
    if isinstance(name, str) and name.startswith("ctxlab/"):
        return f"{name} ({STAND_IN})"  # ctxlab's offline Inspect models
    return f"chat model {name}" if isinstance(name, str) else f"chat model {kind}"
