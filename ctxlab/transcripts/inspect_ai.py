"""Inspect AI eval logs (``inspect_eval``; SOURCES.md format **F19**): the JSON form and the zipped
``.eval`` form of the same log, one run per sample.

Shape (log ``version: 2``): the JSON form is one object ``{version, status, eval, plan, results,
stats, samples, reductions}``; the ``.eval`` form is a zip holding ``header.json`` (``eval``,
``plan``, ``results``, ``stats``) and one ``samples/<id>_epoch_<n>.json`` per sample.  A sample
has ``id``, ``epoch``, ``messages`` (Inspect ``ChatMessage``: ``role`` system/user/assistant/tool,
``content`` a string or items ``{type: text|reasoning|image, ...}``; an assistant's
``tool_calls`` are ``{id, function: "<name>", arguments: {...}}``; a tool message has
``tool_call_id``, ``function`` and maybe ``error``), ``events`` (``model`` events repeat each
request's ``input``, the raw provider ``call`` and the ``output`` with its ``usage``) and
``attachments`` (long texts stored once, referenced as ``attachment://<hash>``).

Conversion: each sample -> one run (``run_id`` ``<id>-epoch<n>``) from its ``messages`` only (the
events repeat them and are not runs); ``attachment://`` references are resolved from
``attachments``; a tool message with ``error`` gets ``status="error"`` and the error text.  The
model is ``eval.model``; ``Transcript.tools`` the first model event's ``tools``.  **Usage**: the
k-th ``model`` event's ``output.usage`` is the k-th assistant message's ``usage_metadata``
(input = ``total_tokens`` - ``output_tokens``, which holds for providers that count cached input
apart and those that do not; ``input_tokens_cache_read`` as ``cache_read``); when the numbers of
events and assistant messages differ, no usage is put on (``metadata["usage_unmatched"]``).

Errors: ``key samples[i]...`` for a bad sample; ``samples/<name>`` for a bad member of a ``.eval``
zip; a zip without ``header.json`` is not an Inspect log.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab.transcripts._checks import expect, join_key, need, objects, top_key
from ctxlab.transcripts._util import (
    JsonFormat,
    MessageBuilder,
    text_content,
    tool_call,
    usage_metadata,
    warn,
)
from ctxlab.transcripts.base import Transcript, TranscriptError

_ATTACHMENT = re.compile(r"attachment://([0-9a-f]{32})")
_KEYS = re.compile(r'"(version|status|eval|plan|samples)"\s*:')


def is_log(data: Any) -> bool:
    """``{version, eval: {task, ...}, samples: [...]}`` (or a header without samples)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("eval"), dict)
        and "task" in data["eval"]
        and isinstance(data.get("version"), int)
    )


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return _ATTACHMENT.sub(lambda m: str(attachments.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _content(content: Any) -> Any:
    """Inspect content items as LangChain blocks (``reasoning`` as ``{type: reasoning,
    reasoning}``; text as text; others kept)."""
    if not isinstance(content, list):
        return content
    out: list[Any] = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "reasoning":
            out.append({"type": "reasoning", "reasoning": item.get("reasoning") or ""})
        elif isinstance(item, dict) and item.get("type") == "text":
            out.append({"type": "text", "text": item.get("text") or ""})
        else:
            out.append(item)
    return out


def sample_run(path: Path, sample: Any, at: str, model: str | None, fmt: str) -> Transcript:
    """One Inspect sample as a run (see the module docstring); ``at`` names it for errors."""
    expect(path, sample, dict, at)
    attachments = sample.get("attachments") if isinstance(sample.get("attachments"), dict) else {}
    messages = _resolve(need(path, sample, "messages", list, at), attachments)
    run_id = f"{sample.get('id')}-epoch{sample.get('epoch', 1)}"
    b = MessageBuilder(run_id)
    where = join_key(at, "messages")
    for m_at, msg in objects(path, messages, where):
        role = need(path, msg, "role", str, m_at)
        content = _content(msg.get("content"))
        if role == "system":
            b.system(content)
        elif role == "user":
            b.human(content)
        elif role == "assistant":
            calls = [
                tool_call(c.get("function"), c.get("arguments"), c.get("id"))
                for _, c in objects(path, msg.get("tool_calls") or [], join_key(m_at, "tool_calls"))
            ]
            b.ai(content, calls)
        elif role == "tool":
            error = msg.get("error")
            if isinstance(error, dict) and error.get("message"):
                content = f"{text_content(content)}\n{error['message']}".strip()
            b.tool(content, msg.get("tool_call_id"), msg.get("function"), error=error is not None)
        else:
            raise TranscriptError(path, f"key {join_key(m_at, 'role')}", f"unknown role {role!r}")
    events = [e for e in sample.get("events") or [] if isinstance(e, dict) and e.get("event") == "model"]
    meta: dict[str, Any] = {
        "sample_id": sample.get("id"),
        "epoch": sample.get("epoch"),
        "usage_unmatched": False,
    }
    ais = [m for m in b.messages if isinstance(m, AIMessage)]
    if len(events) == len(ais):
        for msg_ai, ev in zip(ais, events, strict=True):
            usage = (ev.get("output") or {}).get("usage") if isinstance(ev.get("output"), dict) else None
            if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int):
                msg_ai.usage_metadata = usage_metadata(  # type: ignore[assignment]
                    usage["total_tokens"] - int(usage.get("output_tokens") or 0),
                    usage.get("output_tokens"),
                    cache_read=usage.get("input_tokens_cache_read"),
                    reasoning=usage.get("reasoning_tokens"),
                )
    elif events:
        meta["usage_unmatched"] = True
    first_tools = events[0].get("tools") if events else None
    tools: list[Any] = first_tools if isinstance(first_tools, list) else []
    return b.transcript(
        path, fmt, model=model, tools=[t for t in tools if isinstance(t, dict)], metadata=meta
    )


def _model(header: dict[str, Any]) -> str | None:
    ev = header.get("eval")
    return ev.get("model") if isinstance(ev, dict) and isinstance(ev.get("model"), str) else None


class InspectJsonFormat(JsonFormat):
    name = "inspect_eval"
    description = "Inspect AI eval log (F19), JSON or zipped .eval: one run per sample"

    def sniff(self, path: Path, head: str) -> bool:
        h = head.lstrip("\ufeff \t\r\n")
        return h.startswith("{") and {"version", "eval"} <= set(_KEYS.findall(h[:2048]))

    def sniff_binary(self, path: Path, head: bytes) -> bool:
        """A ``.eval`` zip (``PK`` signature and the ``.eval`` suffix)."""
        return head.startswith(b"PK\x03\x04") and path.suffix == ".eval"

    def match_json(self, data: Any) -> bool:
        return is_log(data)

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        if not is_log(data):
            raise TranscriptError(path, "top level", "not an Inspect log (needs version and eval.task)")
        samples = top_key(path, data, "samples", list)
        model = _model(data)
        return [sample_run(path, s, join_key("samples", i), model, self.name) for i, s in enumerate(samples)]

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        if not zipfile.is_zipfile(path):
            return super().load(path)
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
                if "header.json" not in names:
                    raise TranscriptError(path, "header.json", "missing: not an Inspect .eval log")
                header = _member(path, zf, "header.json")
                runs = [
                    sample_run(path, _member(path, zf, name), name, _model(header), self.name)
                    for name in sorted(n for n in names if n.startswith("samples/") and n.endswith(".json"))
                ]
        except zipfile.BadZipFile as exc:
            raise TranscriptError(path, "", f"damaged .eval zip: {exc}") from exc
        if not runs:
            warn(path, "the .eval log holds no samples")
        return runs


def _member(path: Path, zf: zipfile.ZipFile, name: str) -> Any:
    try:
        return json.loads(zf.read(name).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TranscriptError(path, name, f"invalid JSON in the .eval zip: {exc}") from exc


FORMAT = InspectJsonFormat()
