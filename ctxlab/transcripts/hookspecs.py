"""The transcripts floor's hook specification (pluggy project ``ctxlab``).

Added to a plugin manager with ``make_plugin_manager(specs=[ctxlab.transcripts.hookspecs])``
(:func:`ctxlab.transcripts.make_formats_manager` does it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ctxlab.core.hookspecs import hookspec

if TYPE_CHECKING:
    from ctxlab.transcripts.base import TranscriptFormat


@hookspec
def ctxlab_register_transcript_formats(register: Callable[[TranscriptFormat], None]) -> None:
    """Register transcript formats: call ``register(fmt)`` once per format.

    ``fmt`` is a :class:`ctxlab.transcripts.TranscriptFormat` (``name``, ``description``,
    ``sniff(path, head) -> bool``, ``load(path) -> list[Transcript]``; optionally ``match_json``,
    ``load_json``, ``match_line``).  Every implementation runs; plugin formats are sniffed before
    the built-ins (``trylast``), and for a name registered twice the first registration wins.
    Returns nothing.
    """
