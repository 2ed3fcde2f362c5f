"""Cline (and Roo Code) task folders (``cline_task``): one task, one transcript.

Shape: Cline keeps a task in ``<globalStorage>/tasks/<task id>/``:

* ``api_conversation_history.json`` -- what it sends the model: an Anthropic Messages API list
  (:mod:`ctxlab.transcripts.anthropic`, with extra keys such as ``ts`` and ``modelInfo``);
* ``ui_messages.json`` -- its UI log, a list of ``{ts, type: "say"|"ask", say|ask, text, ...}``.
  Every model request is a ``say: "api_req_started"`` whose ``text`` is a JSON string holding
  ``request`` (the user content sent), ``tokensIn``, ``tokensOut``, ``cacheWrites``,
  ``cacheReads`` and ``cost`` (the provider's usage of that request, as Cline records it); every
  message carries ``conversationHistoryDeletedRange`` (``[start, end]``, inclusive: the part of
  the history Cline truncated to fit its window, in force when the message was added) and
  ``modelInfo`` (``modelId``, ``providerId``);
* ``task_metadata.json`` -- ``files_in_context``, ``model_usage``, ``environment_history``.

Loading: the **history file** is the transcript (its messages as ``anthropic_messages`` loads
them), read together with the files beside it; in a folder walk the other files of a task are
skipped (:func:`is_task_member`), and a UI log without its history is refused with a hint naming
the file that holds the conversation.

Recorded usage: the ``api_req_started`` requests are matched in order to the assistant messages
of the history (one request per answer; when the counts differ the first ones are matched and a
:class:`TranscriptWarning` says so), and each answer's ``usage_metadata`` is the request's usage
(``input_tokens`` = ``tokensIn + cacheReads + cacheWrites``: Cline records Anthropic's counts,
whose input excludes the cached part; ``cache_read`` / ``cache_creation``; ``output_tokens`` =
``tokensOut``) and its ``response_metadata["recorded_cost_usd"]`` the request's ``cost``.  The
first request holds Cline's system prompt and tools, which the history does not: the replay's
unrecorded prefix measures them from this usage (:mod:`ctxlab.replay.prefix`).

Cline's own truncation: the range in force for request *k* is the one stamped on the last UI
message before request *k + 1* (Cline sets it while preparing request *k*, after its
``api_req_started``).  Every message of a history entry in that range is marked
:data:`~ctxlab.transcripts.base.RECORDED_TRUNCATION_KEY` with the first request that left it out
(``from_call``), so that the ``recorded`` strategy sends what Cline sent
(:mod:`ctxlab.replay.recorded`).  Cline's in-place edits of kept messages (``context_history.json``:
a truncation notice, duplicate file reads replaced) are not replayed.

Metadata: ``task_id``, ``recorded_requests``, ``requests_matched``, ``deleted_ranges`` (each range
and the request it starts at), ``last_context_tokens`` (the last request's tokensIn + tokensOut +
cacheWrites + cacheReads, what Cline shows as context used) and from ``task_metadata.json``
``files_in_context`` (a count) and ``model_usage``.

Errors: ``key [i]`` of the UI log not an object, ``api_req_started`` text that is not JSON
(named by its index), and those of ``anthropic_messages``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._checks import expect, objects
from ctxlab.transcripts._util import MessageBuilder, json_error_where, read_text, usage_metadata, warn
from ctxlab.transcripts.anthropic import add_anthropic_messages
from ctxlab.transcripts.base import RECORDED_TRUNCATION_KEY, Transcript, TranscriptError

__all__ = ["FORMAT", "HISTORY", "UI_LOG", "ClineTaskFormat", "is_task_member"]

#: the file of a task folder that holds the conversation
HISTORY = "api_conversation_history.json"
#: the task's UI log (per-request usage, truncation ranges)
UI_LOG = "ui_messages.json"
#: the other files of a task folder, read through the history file
_MEMBERS = (UI_LOG, "task_metadata.json", "context_history.json")
_SOURCE = "cline conversationHistoryDeletedRange"


def is_task_member(path: Path) -> bool:
    """A file of a Cline task folder read through its history file (the UI log, the task
    metadata, the context history), when the history file is beside it."""
    return path.name in _MEMBERS and (path.parent / HISTORY).is_file()


def _read_json(path: Path, what: Path) -> Any:
    text = read_text(what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            path, f"{what.name}: {json_error_where(exc)}", f"invalid JSON: {exc.msg}"
        ) from exc


def _requests(path: Path, ui: list[Any]) -> list[dict[str, Any]]:
    """The ``api_req_started`` requests of the UI log, in order: their parsed info plus
    ``deleted`` (the truncation range in force for that request, or ``None``) and ``model``."""
    out: list[dict[str, Any]] = []
    latest: list[int] | None = None
    for at, msg in objects(path, ui, UI_LOG):
        stamped = msg.get("conversationHistoryDeletedRange")
        if isinstance(stamped, list) and len(stamped) == 2 and all(isinstance(x, int) for x in stamped):
            latest = [int(stamped[0]), int(stamped[1])]
        if out:  # a message after request k carries the range Cline set for it
            out[-1]["deleted"] = latest
        if msg.get("type") != "say" or msg.get("say") != "api_req_started":
            continue
        text = msg.get("text")
        try:
            info = json.loads(text) if isinstance(text, str) and text.strip() else {}
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                path, f"key {at}.text", f"api_req_started text is not JSON: {exc.msg}"
            ) from exc
        model: dict[str, Any] = msg["modelInfo"] if isinstance(msg.get("modelInfo"), dict) else {}
        out.append(
            {**expect(path, info, dict, f"{at}.text"), "deleted": latest, "model": model.get("modelId")}
        )
    return out


def _usage(info: dict[str, Any]) -> dict[str, Any] | None:
    def n(key: str) -> int:
        value = info.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    if not isinstance(info.get("tokensIn"), int) and not isinstance(info.get("tokensOut"), int):
        return None
    return usage_metadata(
        n("tokensIn") + n("cacheReads") + n("cacheWrites"),
        n("tokensOut"),
        cache_read=n("cacheReads"),
        cache_creation=n("cacheWrites"),
    )


class ClineTaskFormat:
    """Cline/Roo Code task folders (module docstring)."""

    name = "cline_task"
    description = (
        "Cline/Roo Code task folder: api_conversation_history.json with ui_messages.json (per-request "
        "tokensIn/out, cache reads/writes, cost; truncation ranges) and task_metadata.json"
    )

    def sniff(self, path: Path, head: str) -> bool:
        if path.name == HISTORY:
            return (path.parent / UI_LOG).is_file()
        return path.name == UI_LOG and head.lstrip().startswith("[")

    def load(self, path: Path) -> list[Transcript]:
        if path.name != HISTORY:
            raise TranscriptError(
                path,
                "",
                f"this is Cline's UI log, not the conversation: the messages sent to the model are in "
                f"{HISTORY} beside it ({path.parent / HISTORY} is missing); load that file or its task folder",
            )
        data = _read_json(path, path)
        history = expect(path, data, list, "(top level)")
        builder = MessageBuilder(path.parent.name or path.name)
        spans: list[tuple[int, int]] = []
        add_anthropic_messages(path, builder, history, "", spans)
        ui_path = path.parent / UI_LOG
        ui = expect(path, _read_json(path, ui_path), list, UI_LOG) if ui_path.is_file() else []
        requests = _requests(path, ui)
        answers = [m for m in builder.messages if isinstance(m, AIMessage)]
        if requests and len(requests) != len(answers):
            warn(
                path,
                f"{len(requests)} api_req_started requests in {UI_LOG} for {len(answers)} assistant messages: "
                f"the first {min(len(requests), len(answers))} matched in order",
            )
        for answer, info in zip(answers, requests, strict=False):
            answer.usage_metadata = _usage(info)  # type: ignore[assignment]  # the UsageMetadata shape
            if isinstance(info.get("cost"), (int, float)):
                answer.response_metadata["recorded_cost_usd"] = float(info["cost"])
        deleted = self._mark_truncations(builder, history, spans, requests)
        meta_path = path.parent / "task_metadata.json"
        meta = _read_json(path, meta_path) if meta_path.is_file() else {}
        meta = meta if isinstance(meta, dict) else {}
        last = requests[-1] if requests else {}
        models = [r["model"] for r in requests if isinstance(r.get("model"), str)]
        model = models[-1] if models else _history_model(history)
        metadata: dict[str, Any] = {
            "task_id": path.parent.name,
            "recorded_requests": len(requests),
            "requests_matched": min(len(requests), len(answers)),
            "deleted_ranges": deleted,
            "last_context_tokens": sum(
                int(last.get(k) or 0) for k in ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")
            )
            or None,
        }
        if isinstance(meta.get("files_in_context"), list):
            metadata["files_in_context"] = len(meta["files_in_context"])
        if isinstance(meta.get("model_usage"), list):
            metadata["model_usage"] = meta["model_usage"]
        return [builder.transcript(path, self.name, model=model, metadata=metadata)]

    @staticmethod
    def _mark_truncations(
        builder: MessageBuilder,
        history: list[Any],
        spans: list[tuple[int, int]],
        requests: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Mark the messages of every history entry Cline left out of a request with the first
        such request (``from_call``); the ranges and where each starts."""
        first: dict[int, int] = {}  # history index -> the first request that left it out
        ranges: list[dict[str, Any]] = []
        seen: list[int] | None = None
        for k, info in enumerate(requests):
            rng = info.get("deleted")
            if not rng:
                continue
            if rng != seen:
                ranges.append({"range": list(rng), "from_call": k})
                seen = rng
            for i in range(max(0, rng[0]), min(len(history) - 1, rng[1]) + 1):
                first.setdefault(i, k)
        for i, k in first.items():
            start, end = spans[i]
            for message in builder.messages[start:end]:
                message.additional_kwargs[RECORDED_TRUNCATION_KEY] = {"from_call": k, "source": _SOURCE}
        return ranges


def _history_model(history: list[Any]) -> str | None:
    models = [
        m["modelInfo"]["modelId"]
        for m in history
        if isinstance(m, dict)
        and isinstance(m.get("modelInfo"), dict)
        and isinstance(m["modelInfo"].get("modelId"), str)
    ]
    return models[-1] if models else None


FORMAT = ClineTaskFormat()
