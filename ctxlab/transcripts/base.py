"""Shapes shared by every transcript loader.

A loader turns one file into one or more :class:`Transcript` objects (a τ-bench file holds many
runs).  Messages are LangChain messages: ``SystemMessage``, ``HumanMessage``, ``AIMessage`` (with
``tool_calls``), ``ToolMessage`` (with ``tool_call_id`` and ``name``).  Where a format records
calls and results only as text (mini-swe-agent), the observation messages are marked with
``additional_kwargs["ctxlab_observation"] = True`` and listed in ``Transcript.observations``.
A message the loader had to add (a tool result the file does not record, see OpenCode) is marked
``additional_kwargs["ctxlab_synthetic"] = True`` and counted in the format's metadata.

Loaders warn with :class:`TranscriptWarning` (``warnings.warn``) where a file is loaded but
something in it is doubtful; the same text is kept in ``Transcript.metadata["warnings"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import AIMessage, BaseMessage

# additional_kwargs key marking a text observation (a tool result recorded as a user message);
# its one home is ctxlab.core.marks, re-exported here for the loaders
from ctxlab.core.marks import OBSERVATION_KEY as OBSERVATION_KEY

#: additional_kwargs key marking a message no model produced: the loader added it (the file does not
#: record it), or the agent made it up (Claude Code's ``<synthetic>`` assistant messages).  A
#: marked ``AIMessage`` is not a model call (:func:`is_model_call`): a replay makes no row for it
#: and sends it in no request.
SYNTHETIC_KEY = "ctxlab_synthetic"

#: additional_kwargs key marking a message of a **recorded compaction**: what the agent itself put
#: in place of its history when it compacted (Claude Code's ``isCompactSummary`` message after a
#: ``compact_boundary``, Codex's ``compacted`` summary or ``replacement_history``).  The value is a
#: dict: ``index`` (0 for the file's first compaction), ``trigger`` (``"auto"``, ``"manual"`` or
#: ``None``), ``pre_tokens`` (the agent's count of the context it compacted, or ``None``),
#: ``source`` (the line type it came from).  Every message of one compaction carries the same
#: ``index``; after it the model saw only the system message, these messages and what followed.
#: A replay feeds them to the ``recorded`` strategy only (:mod:`ctxlab.replay.recorded`).
RECORDED_COMPACTION_KEY = "ctxlab_recorded_compaction"


#: additional_kwargs key marking a message the agent itself **left out** of its requests from some
#: call on, without a summary in its place (Cline's ``conversationHistoryDeletedRange``: the
#: history it truncated to fit its window).  The value is a dict: ``from_call`` (the 0-based model
#: call of the run whose request first leaves it out) and ``source`` (what in the file records it).
#: A replay's ``recorded`` strategy leaves the message out from that call on; every other
#: strategy gets it (:mod:`ctxlab.replay.recorded`).
RECORDED_TRUNCATION_KEY = "ctxlab_recorded_truncation"


def recorded_truncation_of(message: object) -> dict[str, Any] | None:
    """The :data:`RECORDED_TRUNCATION_KEY` mark of ``message``, or ``None`` when the agent never
    left it out of a request."""
    kwargs = getattr(message, "additional_kwargs", None)
    mark = kwargs.get(RECORDED_TRUNCATION_KEY) if isinstance(kwargs, dict) else None
    return mark if isinstance(mark, dict) else None


#: additional_kwargs key marking a tool result that the agent **cleared** from its context without
#: a summary (Claude Code's ``microcompact_boundary``: old tool results replaced by a short
#: placeholder).  The value is a dict: ``index`` (0 for the file's first such boundary),
#: ``trigger``, ``pre_tokens``, ``tokens_saved`` (the agent's counts, or ``None``), ``line`` (of
#: the boundary), ``after`` (the id of the last message before the boundary: every request holding
#: it was sent with this result cleared) and ``placeholder`` (the text the agent sent instead).
#: The loaded message keeps its content (other strategies replay the run as if the agent had not
#: cleared it); the ``recorded`` strategy sends the placeholder (:mod:`ctxlab.replay.recorded`).
RECORDED_MICROCOMPACTION_KEY = "ctxlab_recorded_microcompaction"


def recorded_microcompaction_of(message: object) -> dict[str, Any] | None:
    """The :data:`RECORDED_MICROCOMPACTION_KEY` mark of ``message``, or ``None``."""
    kwargs = getattr(message, "additional_kwargs", None)
    mark = kwargs.get(RECORDED_MICROCOMPACTION_KEY) if isinstance(kwargs, dict) else None
    return mark if isinstance(mark, dict) else None


def is_model_call(message: object) -> bool:
    """An ``AIMessage`` that a model produced: a replay runs one model call for it.  An AIMessage
    marked :data:`SYNTHETIC_KEY` (made up by the agent or the loader, e.g. Claude Code's
    ``<synthetic>`` "No response requested." or API-error stand-ins) is not a model call."""
    return isinstance(message, AIMessage) and not message.additional_kwargs.get(SYNTHETIC_KEY)


def recorded_compaction_of(message: object) -> dict[str, Any] | None:
    """The :data:`RECORDED_COMPACTION_KEY` mark of ``message``, or ``None`` when it is not part
    of a recorded compaction."""
    kwargs = getattr(message, "additional_kwargs", None)
    mark = kwargs.get(RECORDED_COMPACTION_KEY) if isinstance(kwargs, dict) else None
    return mark if isinstance(mark, dict) else None


class TranscriptWarning(UserWarning):
    """A file loaded, but with a doubt worth saying: a fallback shape was used, a format's
    detection raised, a step the file's own summary records is missing from its messages.
    The message starts with the file's path."""


class TranscriptError(ValueError):
    """A file is not a valid transcript of its format, or of any known format.

    ``path`` names the file and ``where`` the place (``"line 12"``, ``"key history[3].content"``).
    ``kind`` says what went wrong: ``"invalid"`` (a file of a known format, or JSON, that is
    broken: the default), ``"unknown_format"`` (no format recognises the file), ``"not_text"``
    (a binary file), ``"not_a_run"`` (a Claude Code compaction call's file) or
    ``"no_conversation"`` (a file of a known format with no user or model message).
    :func:`ctxlab.transcripts.load_many` skips and lists the files of the kinds other than
    ``"invalid"`` found by walking a folder (they are not transcripts) instead of failing.
    """

    def __init__(self, path: str | Path, where: str, problem: str, *, kind: str = "invalid") -> None:
        self.path = str(path)
        self.where = where
        self.problem = problem
        self.kind = kind
        super().__init__(f"{self.path}: {where}: {problem}" if where else f"{self.path}: {problem}")


@dataclass
class Transcript:
    """One agent run as LangChain messages plus metadata.

    Attributes:
        messages: the run in order; ``messages[0]`` is the system message when one was recorded.
        source: the file it came from.
        run_id: a stable id of the run inside the file (the file name for single-run files, so
            :attr:`name` is just the file name); message ids are ``f"{run_id}-{index}"``.
        format: the name of the format that loaded it.
        model: the model name when the file records one, else ``None``.
        observations: indices into ``messages`` of text observations (see module docstring).
        tools: tool schemas when the file records them (provider dicts), else empty.
        metadata: anything else worth keeping (task id, exit status, ...).
    """

    messages: list[BaseMessage]
    source: str
    run_id: str
    format: str
    model: str | None = None
    observations: list[int] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """A short label: ``<file stem>`` or ``<file stem>#<run id>`` for multi-run files."""
        stem = Path(self.source).name
        return stem if self.run_id in ("", stem) else f"{stem}#{self.run_id}"


@runtime_checkable
class TranscriptFormat(Protocol):
    """A transcript format.  Registered through ``ctxlab_register_transcript_formats``.

    ``sniff`` looks at the file's path and its first characters (up to 64 KiB, decoded as UTF-8
    with replacement) and says whether this format can load it; ``load`` reads the whole file
    and raises :class:`TranscriptError` naming the file and the place on bad input.
    """

    name: str
    description: str

    def sniff(self, path: Path, head: str) -> bool: ...

    def load(self, path: Path) -> list[Transcript]: ...
