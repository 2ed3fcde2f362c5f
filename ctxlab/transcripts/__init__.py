"""Load agent transcripts from files: one loader per format, auto-detection, batch loading.

Formats (names for ``format=``/``--format``; ids from ``../shared/transcripts/SOURCES.md``):

======================  =====  ==============================================================
name                    id     file
======================  =====  ==============================================================
``swe_agent``           F1     SWE-agent ``.traj``
``mini_swe_agent``      F2     mini-swe-agent ``.traj.json`` (observations as user text)
``openhands_events``    F3a    OpenHands V0 event list (JSON list)
``openhands_eval``      F3b    OpenHands evaluation ``output.jsonl`` (one run per line)
``openai_chat``         F4     OpenAI chat message list (incl. legacy ``function_call``)
``litellm_log``         F5     LiteLLM completion log (prompt + response of one call)
``tau_bench``           F6     τ-bench trajectory list (one run per entry)
``claude_code``         F7/16  Claude Code session JSONL / folder (sub-agent files as linked runs)
``deer_flow``           F9     DeerFlow 1.x SSE replay
``agent_tars_events``   F10    Agent TARS / Tarko event stream
``agent_tars_request``  F11    Agent TARS LLM request snapshot
``agent_tars_session``  F12    Agent TARS CLI session
``opencode_md``         F13    OpenCode Markdown session export
``codex_rollout``       F14    OpenAI Codex CLI rollout JSONL
``aider_history``       F15    Aider ``.aider.chat.history.md`` (text mode)
``kimi_cli``            F18    Kimi CLI context JSONL (``_checkpoint``/``_usage`` lines)
``inspect_eval``        F19    Inspect AI eval log, JSON or zipped ``.eval`` (one run per sample)
``sharegpt``            F20    ShareGPT rows with ``function_call``/``observation`` turns
``openhands_resolver``         OpenHands issue-resolver ``output.jsonl`` (one run per issue)
``langchain_messages``         LangGraph state / LangSmith run export (``langchain_core.load``)
``opencode_storage``           OpenCode JSON storage (a session file with its message/part files)
``gemini_cli``          F17    Gemini CLI session JSON (``~/.gemini/tmp/*/chats/session-*.json``)
``cline_task``                 Cline/Roo task folder: the history with ``ui_messages.json`` (usage, truncation)
``anthropic_messages``         Anthropic Messages API list (Cline/Roo ``api_conversation_history.json``)
``openai_responses``           OpenAI Responses API item list (``function_call``/``..._output``)
``gemini_contents``            Gemini API ``contents`` (Gemini CLI ``/chat save`` checkpoints)
``claude_stream_json``         ``claude -p --output-format stream-json``
``codex_exec_json``            ``codex exec --json`` events
``gemini_json_output``         ``gemini --output-format json`` (the final reply only)
``atif``                       Harbor / Terminal-Bench ATIF ``trajectory.json``
``pydantic_ai``                PydanticAI message history (``ModelMessagesTypeAdapter``)
``smolagents_memory``          smolagents ``agent.memory`` steps (text mode)
``specstory_md``               SpecStory Markdown export (Cursor, Claude Code, Copilot)
``openhands_v1``               OpenHands V1 conversation (``base_state.json`` + ``events/``)
``generic_messages``           fallback: message arrays found anywhere in unknown JSON
======================  =====  ==============================================================

Every message gets the id ``f"{run_id}-{index}"``; ``run_id`` is the file name for single-run
files and the recorded run key for multi-run files (τ-bench ``task<id>-trial<n>``, OpenHands
``instance_id``).  See each module's docstring for how its format is mapped.

The package is split into :mod:`~ctxlab.transcripts.registry` (which formats exist, the
``ctxlab_register_transcript_formats`` hook), :mod:`~ctxlab.transcripts.detection` (which format a
file is in) and :mod:`~ctxlab.transcripts.loading`; :mod:`ctxlab.transcripts.sdk` holds what a
format plugin needs (see ``docs/transcripts.md``).
"""

from __future__ import annotations

from ctxlab.core.marks import OBSERVATION_KEY  # its one home (re-exported by transcripts.base too)
from ctxlab.transcripts.base import (
    SYNTHETIC_KEY,
    Transcript,
    TranscriptError,
    TranscriptFormat,
    TranscriptWarning,
)
from ctxlab.transcripts.detection import detect_format
from ctxlab.transcripts.loading import SKIP_NAMES, iter_transcript_files, load_many, load_transcripts
from ctxlab.transcripts.registry import (
    available_formats,
    builtin_formats,
    formats_plugin,
    make_formats_manager,
)

__all__ = [
    "OBSERVATION_KEY",
    "SKIP_NAMES",
    "SYNTHETIC_KEY",
    "Transcript",
    "TranscriptError",
    "TranscriptFormat",
    "TranscriptWarning",
    "available_formats",
    "builtin_formats",
    "detect_format",
    "formats_plugin",
    "iter_transcript_files",
    "load_many",
    "load_transcripts",
    "make_formats_manager",
]
