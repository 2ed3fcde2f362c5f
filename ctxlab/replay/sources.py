"""Where a transcript comes from: its data provenance, ``real``, ``scripted`` or ``synthetic``.

A pooled figure over real agent runs must not be moved by a scripted sample or a hand-built
history, so every row carries its transcript's provenance (column ``data_provenance``) and the
pooled views (:mod:`ctxlab.analysis.verdicts`, the saving figure) use the real runs unless asked.

Rules, first match wins (:func:`data_provenance`):

1. the transcript's ``metadata["data_provenance"]`` when it is one of :data:`DATA_PROVENANCES`
   (a loader, or a file, that knows says so);
2. ``scripted``: the bundled sample (:data:`ctxlab.transcripts.locate.SAMPLE_TRANSCRIPT`) or any
   run whose recorded model is ctxlab's scripted fake (``scripted-fake``, the ``_llm_type`` of
   :class:`ctxlab.replay.models.ScriptedChatModel`, which ``python -m ctxlab.cli.sample record``
   records with);
3. ``synthetic``: a transcript whose source is not a file (messages made in code);
4. ``real``: everything else (a recorded run read from a file).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ctxlab.replay.models import ScriptedChatModel

if TYPE_CHECKING:
    from ctxlab.transcripts.base import Transcript

__all__ = ["DATA_PROVENANCES", "data_provenance"]

#: the provenances a transcript may have, in the order reports list them
DATA_PROVENANCES: tuple[str, ...] = ("real", "scripted", "synthetic")

#: the model name a scripted run records (``ScriptedChatModel._llm_type``)
_SCRIPTED_MODEL: str = ScriptedChatModel(plan=iter(()))._llm_type


def data_provenance(transcript: Transcript) -> str:
    """The transcript's data provenance, one of :data:`DATA_PROVENANCES` (rules: module docstring)."""
    from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

    declared = transcript.metadata.get("data_provenance")
    if declared in DATA_PROVENANCES:
        return str(declared)
    source = Path(transcript.source)
    if transcript.model == _SCRIPTED_MODEL:
        return "scripted"
    try:
        if source.resolve() == SAMPLE_TRANSCRIPT.resolve():
            return "scripted"
        if not source.is_file():
            return "synthetic"
    except OSError:
        return "synthetic"
    return "real"
