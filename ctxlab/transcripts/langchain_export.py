"""LangGraph / LangSmith exports (``langchain_messages``): messages serialized by
``langchain_core.load`` (``dumpd``), decoded with ``langchain_core.load.load``.

Shape: LangChain's serialized form of a message, ``{"lc": 1, "type": "constructor", "id":
["langchain", "schema", "messages", "AIMessage"], "kwargs": {content, tool_calls, tool_call_id,
usage_metadata, ...}}``, wherever it sits in a JSON document or in each line of a JSON-lines
file:

* a LangGraph state or checkpoint: a list of them under ``messages`` (``{"values": {"messages":
  [...]}}`` from ``graph.get_state``, ``{"channel_values": {"messages": [...]}}`` of a
  checkpoint), or a bare list;
* a LangSmith run export (one run per line or a list of runs): a chat-model run's prompt in
  ``inputs.messages`` (a list of message lists) and its answer in
  ``outputs.generations[0][0].message`` -- the conversation of that call is the prompt plus the
  answer.

Conversion: every message list found (a run's prompt + answer counts as one) is decoded with
``langchain_core.load.load(..., allowed_objects="messages")`` (only message classes are built);
lists that repeat the start of another (each LangSmith call repeats the conversation so far,
compared by message type, tool-call ids and text) and lists whose messages all appear, in order,
in a longer one (a LangGraph node's output, a node's input state) are parts of that
conversation and left out (counted in ``metadata["repeats_left_out"]``), so each conversation is
one run (``run_id`` the file name, or the JSON path of its list when there are several).

**LangSmith traces** (runs with ``run_type`` and ``trace_id``/``parent_run_id``, one per line, a
list, or nested in ``child_runs``): one run per trace (``run_id`` ``trace-<trace_id>`` when the
file holds several), its longest conversation (the root ``LangGraph`` run's output, else the
longest model call); repeats and parts are looked for within a trace only.  A conversation of the
trace that is not a part of it -- a sub-agent with its own model calls -- is a run of its own,
``<main run>.<run name><k>``, with ``metadata["parent_run"]``, listed in the main run's
``metadata["sub_agent_runs"]``.  The model is the AIMessages' ``model_name``, else the
``llm_output.model_name`` of a model call of the trace.  Message ids the
file records are replaced by ``f"{run_id}-{i}"`` (kept in ``additional_kwargs["source_id"]``);
a ToolMessage without ``name`` gets the name of the call it answers; ``usage_metadata``,
``response_metadata`` and everything else the serialized message holds are kept as they are.

Errors: ``key <path>`` for a serialized message ``load`` refuses (not a message class, bad
kwargs); nothing serialized found: the file is not of this format.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.transcripts._util import iter_jsonl, json_decode_error, read_text
from ctxlab.transcripts.base import Transcript, TranscriptError
from ctxlab.transcripts.generic import MessageKey, not_repeated

_MARK = re.compile(r'"lc"\s*:\s*1\s*,\s*"type"\s*:\s*"constructor"')
#: the serialized ids of message classes: ``[..., "messages", <Class>]`` (``langchain`` or
#: ``langchain_core`` namespaces)
_MESSAGE_ID = re.compile(r"\A[A-Z][A-Za-z]*Message(Chunk)?\Z")


def is_serialized_message(value: Any) -> bool:
    """A ``dumpd`` of a LangChain message: ``{lc: 1, type: constructor, id: [..., "messages", X]}``."""
    ident = value.get("id") if isinstance(value, dict) else None
    return (
        isinstance(value, dict)
        and value.get("lc") == 1
        and value.get("type") == "constructor"
        and isinstance(ident, list)
        and len(ident) >= 2
        and "messages" in ident[:-1]
        and isinstance(ident[-1], str)
        and bool(_MESSAGE_ID.match(ident[-1]))
    )


@dataclass
class Conversation:
    """One list of serialized messages and where it is (``$.values.messages``); for a LangSmith
    run, the trace it belongs to and the name of the run (``"agent"``, ``"ChatOpenAI"``)."""

    json_path: str
    messages: list[Any]
    trace: str | None = None
    run: str | None = None
    model: str | None = None


def is_run(value: Any) -> bool:
    """A LangSmith run: an object with ``run_type`` and an ``id``/``trace_id``/``parent_run_id``."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("run_type"), str)
        and any(k in value for k in ("trace_id", "parent_run_id", "id"))
    )


def trace_conversations(data: Any, root: str = "$") -> list[Conversation] | None:
    """The message lists of a LangSmith export (a run, a list of runs, each possibly holding its
    ``child_runs``), each with its run's trace (``trace_id``, else the id of its root run) and
    name; ``None`` when ``data`` holds no runs."""
    stack: list[tuple[Any, str, str | None]] = []
    if is_run(data):
        stack.append((data, root, None))
    elif isinstance(data, list) and data and all(is_run(r) for r in data):
        stack.extend((r, f"{root}[{i}]", None) for i, r in reversed(list(enumerate(data))))
    else:
        return None
    found: list[Conversation] = []
    while stack:
        run, at, inherited = stack.pop()
        explicit = run.get("trace_id") or inherited
        trace = str(explicit) if explicit else None  # runs without one: one group
        children = run.get("child_runs") if isinstance(run.get("child_runs"), list) else []
        shallow = {k: v for k, v in run.items() if k != "child_runs"}
        for conv in find_conversations(shallow, at):
            conv.trace, conv.run = trace, str(run.get("name") or run.get("run_type"))
            found.append(conv)
        stack.extend(
            (c, f"{at}.child_runs[{i}]", trace or run.get("id"))
            for i, c in reversed(list(enumerate(children)))
            if is_run(c)
        )
    return found


def _answer(run: dict[str, Any]) -> Any:
    gens = run.get("outputs", {}).get("generations") if isinstance(run.get("outputs"), dict) else None
    first = gens[0] if isinstance(gens, list) and gens and isinstance(gens[0], list) and gens[0] else None
    msg = first[0].get("message") if first and isinstance(first[0], dict) else None
    return msg if is_serialized_message(msg) else None


def find_conversations(data: Any, root: str = "$") -> list[Conversation]:
    """Every list of serialized messages in ``data``, depth first in document order; a LangSmith
    chat-model run gives its prompt plus its answer."""
    found: list[Conversation] = []
    stack: list[tuple[Any, str]] = [(data, root)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, list) and value and all(is_serialized_message(m) for m in value):
            found.append(Conversation(at, value))
        elif isinstance(value, dict):
            inputs = value.get("inputs")
            prompts = inputs.get("messages") if isinstance(inputs, dict) else None
            answer = _answer(value)
            if isinstance(prompts, list) and prompts and isinstance(prompts[0], list) and answer is not None:
                conv = Conversation(f"{at}.inputs.messages[0]", [*prompts[0], answer])
                llm_output = value["outputs"].get("llm_output")
                name = llm_output.get("model_name") if isinstance(llm_output, dict) else None
                conv.model = name if isinstance(name, str) else None
                found.append(conv)
                continue
            stack.extend((v, f"{at}.{k}") for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(value))))
    return found


def _key(m: BaseMessage) -> MessageKey:
    ids: tuple[str, ...] = ()
    if isinstance(m, AIMessage):
        ids = tuple(str(c.get("id")) for c in m.tool_calls)
    elif isinstance(m, ToolMessage):
        ids = (m.tool_call_id,)
    return m.type, ids, m.text.strip()


def _decode(path: Path, conv: Conversation) -> list[BaseMessage]:
    from langchain_core._api.beta_decorator import LangChainBetaWarning
    from langchain_core.load import load

    out = []
    for i, raw in enumerate(conv.messages):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LangChainBetaWarning)
                msg = load(raw, allowed_objects="messages")
        except Exception as exc:  # langchain's refusal of a class or of bad kwargs
            raise TranscriptError(
                path, f"key {conv.json_path}[{i}]", f"not a loadable message: {exc}"
            ) from exc
        if not isinstance(msg, BaseMessage):
            raise TranscriptError(path, f"key {conv.json_path}[{i}]", f"decodes to {type(msg).__name__}")
        out.append(msg)
    return out


def _contained(short: list[MessageKey], long: list[MessageKey]) -> bool:
    """Every message of ``short`` is in ``long``, in the same order (a node's output, a model
    call's prompt: a part of the conversation ``long``)."""
    it = iter(long)
    return len(short) <= len(long) and all(any(k == x for x in it) for k in short)


def _runs(path: Path, convs: list[Conversation], fmt: str) -> list[Transcript]:
    """One run per conversation that is not a part of another of its trace (a node's output, a
    model call's prompt, a repeat); within a LangSmith trace the longest conversation is the run
    and a conversation that is not part of it (a sub-agent's own model calls) is a run of its own
    linked to it."""
    decoded = [(c, _decode(path, c)) for c in convs]
    keys = [[_key(m) for m in msgs] for _, msgs in decoded]
    kept_idx = []
    for trace in dict.fromkeys(c.trace for c, _ in decoded):  # repeats and parts within a trace
        group = [j for j, (c, _) in enumerate(decoded) if c.trace == trace]
        for i in (group[n] for n in not_repeated([keys[j] for j in group])):
            if not any(
                j != i and len(keys[j]) > len(keys[i]) and _contained(keys[i], keys[j]) for j in group
            ):
                kept_idx.append(i)
    kept_idx.sort()
    kept = [decoded[i] for i in kept_idx]
    mains: dict[str | None, int] = {}  # trace -> index in kept of its longest conversation
    for k, (conv, msgs) in enumerate(kept):
        best = mains.get(conv.trace)
        if best is None or len(msgs) > len(kept[best][1]):
            mains[conv.trace] = k
    single = len(mains) == 1
    ids: dict[int, str] = {}
    for trace, k in mains.items():
        conv = kept[k][0]
        ids[k] = path.name if single else (f"trace-{trace}" if conv.trace is not None else conv.json_path)
    subs: dict[str | None, list[str]] = {}
    for k, (conv, _) in enumerate(kept):
        if k not in ids:  # a sub-agent of its trace's main run
            main_id = ids[mains[conv.trace]]
            n = len(subs.setdefault(conv.trace, [])) + 1
            ids[k] = f"{main_id}.{conv.run or 'subagent'}{n}"
            subs[conv.trace].append(ids[k])
    left_out = len(decoded) - len(kept)
    out = []
    for k, (conv, msgs) in enumerate(kept):
        run_id = ids[k]
        messages: list[BaseMessage] = []
        names: dict[str, str] = {}
        for i, m in enumerate(msgs):
            update: dict[str, Any] = {"id": f"{run_id}-{i}"}
            if m.id:
                update["additional_kwargs"] = {**m.additional_kwargs, "source_id": m.id}
            if isinstance(m, AIMessage):
                names.update({str(c.get("id")): c["name"] for c in m.tool_calls})
            elif isinstance(m, ToolMessage) and not m.name and m.tool_call_id in names:
                update["name"] = names[m.tool_call_id]  # the name of the call it answers
            messages.append(m.model_copy(update=update))
        meta: dict[str, Any] = {"json_path": conv.json_path, "repeats_left_out": left_out}
        if conv.trace is not None:
            meta["trace_id"] = conv.trace
        main_k = mains[conv.trace]
        if k != main_k:
            meta.update(parent_run=ids[main_k], run_name=conv.run)
        elif subs.get(conv.trace):
            meta["sub_agent_runs"] = subs[conv.trace]
        out.append(
            Transcript(
                messages=messages,
                source=str(path),
                run_id=run_id,
                format=fmt,
                model=_model(msgs)
                or next((c.model for c in convs if c.trace == conv.trace and c.model), None),
                metadata=meta,
            )
        )
    return out


def _model(msgs: list[BaseMessage]) -> str | None:
    names = [m.response_metadata.get("model_name") for m in msgs if isinstance(m, AIMessage)]
    named = [n for n in names if isinstance(n, str)]
    return named[-1] if named else None


class LangChainMessagesFormat:
    name = "langchain_messages"
    description = (
        "LangGraph state/checkpoint or LangSmith run export: langchain_core.load serialized messages"
    )

    def sniff(self, path: Path, head: str) -> bool:
        return bool(_MARK.search(head)) and '"messages"' in head

    def match_json(self, data: Any) -> bool:
        return bool(find_conversations(data))

    def match_line(self, obj: Any) -> bool:
        return bool(find_conversations(obj))

    def load_json(self, data: Any, path: Path) -> list[Transcript]:
        convs = trace_conversations(data)
        if convs is None:
            convs = find_conversations(data)
        if not convs:
            raise TranscriptError(path, "top level", "no serialized LangChain message list found")
        return _runs(path, convs, self.name)

    def load(self, path: Path) -> list[Transcript]:
        path = Path(path)
        text = read_text(path)
        try:
            return self.load_json(json.loads(text), path)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise json_decode_error(path, text, exc) from exc
        convs = []
        for n, obj in iter_jsonl(path, text):
            traced = trace_conversations(obj, f"line {n}: $")
            convs += traced if traced is not None else find_conversations(obj, f"line {n}: $")
        if not convs:
            raise TranscriptError(path, "line 1", "no serialized LangChain message list found")
        return _runs(path, convs, self.name)

    def __repr__(self) -> str:
        return f"<transcript format {self.name}>"


FORMAT = LangChainMessagesFormat()
