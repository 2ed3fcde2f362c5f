"""Which transcript formats exist: the built-ins, plugin formats, and the manager holding them.

Formats are registered through the ``ctxlab_register_transcript_formats`` hook; the built-ins by
:data:`formats_plugin` (``trylast``), so a plugin format is sniffed first and a plugin format
with a built-in's name replaces it.  See ``docs/transcripts.md`` for writing one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pluggy

from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.plugins import make_plugin_manager
from ctxlab.transcripts import hookspecs
from ctxlab.transcripts.base import TranscriptFormat

__all__ = [
    "BuiltinTranscriptFormats",
    "available_formats",
    "builtin_formats",
    "formats_plugin",
    "make_formats_manager",
]


def builtin_formats() -> list[TranscriptFormat]:
    """The built-in formats, in sniffing order: specific shapes first, then the plain message
    lists (Responses items, Anthropic messages, OpenAI chat), then ``generic_messages`` (which
    never sniffs; it is the fallback of :mod:`ctxlab.transcripts.detection`)."""
    from ctxlab.transcripts import (
        agent_tars,
        aider,
        anthropic,
        atif,
        claude_code,
        claude_stream,
        cline,
        codex,
        codex_exec,
        deer_flow,
        gemini_cli,
        gemini_contents,
        gemini_json,
        generic,
        inspect_ai,
        kimi_cli,
        langchain_export,
        litellm,
        mini_swe_agent,
        openai_chat,
        opencode,
        opencode_storage,
        openhands,
        openhands_resolver,
        openhands_v1,
        pydantic_ai,
        responses,
        sharegpt,
        smolagents,
        specstory,
        swe_agent,
        tau_bench,
    )

    return [
        mini_swe_agent.FORMAT,
        swe_agent.FORMAT,
        openhands_resolver.FORMAT,
        openhands_v1.FORMAT,
        openhands.EVAL,
        openhands.EVENTS,
        tau_bench.FORMAT,
        litellm.FORMAT,
        agent_tars.SESSION,
        agent_tars.REQUEST,
        agent_tars.EVENTS,
        claude_stream.FORMAT,
        claude_code.FORMAT,
        codex_exec.FORMAT,
        codex.FORMAT,
        gemini_json.FORMAT,
        gemini_cli.FORMAT,
        atif.FORMAT,
        deer_flow.FORMAT,
        specstory.FORMAT,
        opencode.FORMAT,
        opencode_storage.FORMAT,
        aider.FORMAT,
        kimi_cli.FORMAT,
        langchain_export.FORMAT,
        inspect_ai.FORMAT,
        pydantic_ai.FORMAT,
        smolagents.FORMAT,
        gemini_contents.FORMAT,
        sharegpt.FORMAT,
        cline.FORMAT,
        responses.FORMAT,
        anthropic.FORMAT,
        openai_chat.FORMAT,
        generic.FORMAT,
    ]


class BuiltinTranscriptFormats:
    """The plugin registering the built-in formats (``trylast``, so plugins come first)."""

    name = "transcript_formats"

    @hookimpl(trylast=True)
    def ctxlab_register_transcript_formats(self, register: Any) -> None:
        for fmt in builtin_formats():
            register(fmt)


#: register this in a plugin manager to get the built-in formats (the default plugins do)
formats_plugin = BuiltinTranscriptFormats()


def make_formats_manager(extra: Iterable[object] = ()) -> pluggy.PluginManager:
    """A plugin manager holding the transcript hook spec, the built-in formats and ``extra``.

    Compression plugins are not registered (``defaults=False``): only formats matter here.
    """
    pm = make_plugin_manager(defaults=False, specs=[hookspecs])
    pm.register(formats_plugin, name="ctxlab.builtin.transcript_formats")
    for plugin in extra:
        pm.register(plugin)
    return pm


def available_formats(pm: pluggy.PluginManager | None = None) -> dict[str, TranscriptFormat]:
    """Every transcript format by name, in sniffing order.

    Calls ``ctxlab_register_transcript_formats`` in ``pm`` (a default manager when ``None``).
    Plugin formats come first; for a name registered twice the first registration wins (so a
    plugin can replace a built-in).  The built-ins are always included, also when ``pm`` does not
    hold :data:`formats_plugin`.

    Raises:
        TypeError: a plugin registered something without ``name``, ``sniff`` and ``load``.
    """
    if pm is None:
        pm = make_formats_manager()
    found: dict[str, TranscriptFormat] = {}

    def register(fmt: Any) -> None:
        if not isinstance(fmt, TranscriptFormat):
            raise TypeError(f"not a TranscriptFormat (needs name, description, sniff, load): {fmt!r}")
        found.setdefault(fmt.name, fmt)

    hook = getattr(pm.hook, "ctxlab_register_transcript_formats", None)
    if hook is not None:
        hook(register=register)
    if not pm.is_registered(formats_plugin):
        for fmt in builtin_formats():
            found.setdefault(fmt.name, fmt)
    return found
