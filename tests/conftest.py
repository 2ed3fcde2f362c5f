"""Shared test helpers.

Sections are owned by different test areas; append a new section rather than rewriting one.
"""

from __future__ import annotations

# =================================================================================================
# Compression middleware helpers (prefix ``mw_`` / ``Mw``): offline fake chat models, a driver that
# runs ``wrap_model_call`` / ``awrap_model_call`` through ``ctxlab.replay.ModelNodeHarness`` (a real
# ``ModelRequest``, the returned ``Command`` applied as LangGraph's model node does), backends with
# injected failures.
# Tests get them through the session fixture ``mw_kit`` (a namespace), so no test imports conftest.
# =================================================================================================
import asyncio
import copy
import hashlib
import json
import re
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph.message import add_messages
from pydantic import ConfigDict, Field

from ctxlab.replay.harness import ModelNodeHarness, update_items

MW_SENTENCE = (
    "the report lists each step of the build and the test run with its result and the time it took "
    "so that a reader can compare one run against the next values are rounded and every line ends "
    "with a short status word such as done or pending while the final line gives the total count"
)
MW_WORDS = MW_SENTENCE.split()
MW_CJK = "今天的会议记录整理完毕下一步需要核对每一项测试结果并在周五之前提交报告所有数据均已按时间顺序排列"
MW_FACT_RE = re.compile(r"FACT-[A-Z0-9]+")


def mw_fill(chars: int, marker: str = "", seed: int = 0) -> str:
    """Deterministic English filler of exactly ``chars`` characters, ``marker`` first."""
    out = [marker] if marker else []
    total = len(marker)
    i = seed
    while total < chars:
        w = MW_WORDS[i % len(MW_WORDS)]
        out.append(w)
        total += len(w) + 1
        i += 1
    text = " ".join(out)[:chars]
    return text[:-1] + "." if text.endswith(" ") else text


def mw_cjk(n: int) -> str:
    return (MW_CJK * (n // len(MW_CJK) + 1))[:n]


def mw_text(m: Any) -> str:
    """The readable text of a message (str content or text blocks)."""
    c = getattr(m, "content", m)
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(
            b if isinstance(b, str) else str(b.get("text", "")) for b in c if isinstance(b, (str, dict))
        )
    return str(c)


def mw_dump(m: BaseMessage) -> str:
    return json.dumps(m.model_dump(), sort_keys=True, default=repr)


class MwFakeSummarizer(BaseChatModel):
    """Recording summarizer model.  ``mode``: ``echo`` (repeats every ``FACT-xxx`` marker it was
    shown), ``fixed`` or ``raises``; replies without text: ``empty`` (an empty string),
    ``reasoning_only`` (one reasoning block holding ``PRIVATE-REASONING`` and the facts),
    ``tool_call_only`` (an empty text and a tool call); ``verbose`` (``output_chars`` characters
    of text after the facts); ``whitespace`` (a blank reply), ``overflow`` (raises
    ``ContextOverflowError``), ``truncated`` (a partial reply stopped at the output-token cap:
    ``finish_reason="length"``, ``stop_reason="max_tokens"``).  ``sequence``: one mode per call (the last one repeats), instead of
    ``mode``.  ``barrier``: an ``asyncio.Barrier`` awaited in the async path before answering
    (used to prove concurrency)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    mode: str = "echo"
    sequence: list | None = None
    output_chars: int = 0
    calls: list = Field(default_factory=list)
    barrier: Any = None
    barrier_passed: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "mw-fake-summarizer"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _answer(self, messages, run_manager, is_async: bool) -> ChatResult:
        text = "\n".join(mw_text(m) for m in messages)
        self.calls.append(
            {
                "input": text,
                "tags": list(run_manager.tags or []) if run_manager is not None else None,
                "metadata": dict(run_manager.metadata or {}) if run_manager is not None else None,
                "async": is_async,
            }
        )
        n = len(self.calls)
        mode = self.sequence[min(n, len(self.sequence)) - 1] if self.sequence else self.mode
        if mode == "raises":
            raise RuntimeError("injected summarizer failure: upstream returned 429 Too Many Requests")
        if mode == "overflow":
            raise ContextOverflowError("prompt is too long: 300000 tokens > 200000 maximum (injected)")
        facts: list[str] = []
        for f in MW_FACT_RE.findall(text):
            if f not in facts:
                facts.append(f)
        calls: list = []
        out: Any
        if mode == "fixed":
            out = f"SUMMARY-{n}: the earlier part of the conversation was condensed."
        elif mode == "empty":
            out = ""
        elif mode == "whitespace":
            out = " \n\t \n"
        elif mode == "truncated":
            out = f"SUMMARY-{n}: " + " ".join(facts) + " the work so far covered the first two of the"
        elif mode == "reasoning_only":
            out = [
                {"type": "reasoning", "reasoning": f"PRIVATE-REASONING summary {n} plan: " + " ".join(facts)}
            ]
        elif mode == "tool_call_only":
            out = ""
            calls = [
                {"name": "write_todos", "args": {"todos": ["x"]}, "id": f"summ-call-{n}", "type": "tool_call"}
            ]
        elif mode == "verbose":
            out = (
                f"SUMMARY-{n}: condensed notes. " + " ".join(facts) + " " + mw_fill(self.output_chars, seed=n)
            )
        else:
            out = f"SUMMARY-{n}: condensed notes. " + " ".join(facts)
        meta = {"finish_reason": "length", "stop_reason": "max_tokens"} if mode == "truncated" else {}
        reply = AIMessage(content=out, tool_calls=calls, id=f"mw-summ-{n}", response_metadata=meta)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return self._answer(messages, run_manager, False)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if self.barrier is not None:
            await asyncio.wait_for(self.barrier.wait(), timeout=5)
            self.barrier_passed.append(True)
        return self._answer(messages, run_manager, True)


class MwScriptedModel(BaseChatModel):
    """A chat model that answers with scripted ``AIMessage`` s (tool calls included) and records
    every message list it receives; ``bind_tools`` returns itself.  After the script: ``"done"``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: list = Field(default_factory=list)
    received: list = Field(default_factory=list)
    tags_seen: list = Field(default_factory=list)
    answered: int = 0

    @property
    def _llm_type(self) -> str:
        return "mw-scripted"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.received.append([m.model_copy(deep=True) for m in messages])
        self.tags_seen.append(list(run_manager.tags or []) if run_manager is not None else None)
        i = self.answered
        self.answered += 1
        if i < len(self.script):
            msg = self.script[i]
            msg = msg.model_copy(deep=True) if isinstance(msg, BaseMessage) else AIMessage(content=str(msg))
        else:
            msg = AIMessage(content=f"done ({i})")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def mw_backend(root: Path | str):
    from deepagents.backends import FilesystemBackend

    return FilesystemBackend(root_dir=str(root), virtual_mode=True)


def mw_failing_backend(root: Path | str, substring: str = "conversation_history", how: str = "error"):
    """A ``FilesystemBackend`` whose writes to paths containing ``substring`` fail: ``how="error"``
    returns ``WriteResult(error=...)``, ``how="raise"`` raises ``OSError``.  ``.writes`` records
    every attempted path."""
    from deepagents.backends import FilesystemBackend
    from deepagents.backends.protocol import WriteResult

    class MwFailingBackend(FilesystemBackend):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.writes: list[str] = []

        def write(self, file_path, content):
            self.writes.append(file_path)
            if substring in str(file_path):
                if how == "raise":
                    raise OSError(28, "No space left on device (injected)")
                return WriteResult(error="permission_denied (injected write failure)")
            return super().write(file_path, content)

        async def awrite(self, file_path, content):
            return self.write(file_path, content)

    return MwFailingBackend(root_dir=str(root), virtual_mode=True)


def mw_counting_backend(root: Path | str):
    """A ``FilesystemBackend`` that records every ``write`` (path, content)."""
    from deepagents.backends import FilesystemBackend

    class MwCountingBackend(FilesystemBackend):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.writes: list[tuple[str, str]] = []

        def write(self, file_path, content):
            self.writes.append((file_path, content))
            return super().write(file_path, content)

        async def awrite(self, file_path, content):
            return self.write(file_path, content)

    return MwCountingBackend(root_dir=str(root), virtual_mode=True)


def mw_files(root: Path | str) -> dict[str, str]:
    """Every file under ``root``: relative POSIX path -> text."""
    root = Path(root)
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in root.rglob("*")
        if p.is_file()
    }


def mw_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mw_copying_add_messages(left: list, right: Any) -> list:
    """``add_messages`` on deep copies: the state never shares message objects with what the
    middleware was given, so an in-place change by the middleware stays visible (and ids that
    ``add_messages`` assigns land on the copies)."""
    return add_messages([m.model_copy(deep=True) for m in left], copy.deepcopy(right))


def mw_concat(left: list, right: Any) -> list:
    """Appends deep copies without ``add_messages`` (id-less messages stay id-less); an update
    that only replaces messages by id (a ``Command``'s) still goes through ``add_messages``."""
    new = right if isinstance(right, list) else [right]
    known = {m.id for m in left if m.id is not None}
    if new and all(getattr(m, "id", None) in known for m in new):
        return mw_copying_add_messages(left, new)
    return [*(m.model_copy(deep=True) for m in left), *copy.deepcopy(new)]


class MwDriver:
    """Runs a middleware round by round through ``ctxlab.replay.ModelNodeHarness`` (a real
    ``ModelRequest``, results applied the way LangGraph's model node does: the response, then the
    ``Command`` update; ``messages`` through ``add_messages``, other keys assigned) and records
    each round.  The state holds deep copies, never the objects the middleware was given.
    ``reducer="concat"`` appends new messages without ``add_messages`` (which would give every
    message an id), so that id-less messages stay id-less across rounds.

    ``overflow(call_no, view, system)`` decides whether a handler call raises ``overflow_exc``
    (truthy) or returns an exception instance to raise (``call_no`` counts calls within the round
    from 1).  ``rec["timeline"]`` interleaves handler calls and events in the order they happened.
    """

    @property
    def mw(self) -> Any:
        """The middleware under test; assigning another one keeps the state (a rebuilt agent)."""
        return self._mw

    @mw.setter
    def mw(self, mw: Any) -> None:
        self._mw = mw
        if hasattr(self, "harness"):
            self.harness.middleware = mw

    def __init__(
        self,
        mw: Any,
        messages: list[BaseMessage],
        *,
        mode: str = "sync",
        model: Any = None,
        system: SystemMessage | None = None,
        tools: list | None = None,
        max_input_tokens: int | None = None,
        reducer: str = "add_messages",
        overflow_exc: type[BaseException] = ContextOverflowError,
        thread_id: str | None = None,
    ) -> None:
        self._mw = mw
        self.thread_id = thread_id
        self.overflow_exc = overflow_exc
        self.mode = mode
        profile = {"max_input_tokens": max_input_tokens} if max_input_tokens else None
        self.model = model if model is not None else MwScriptedModel(profile=profile)
        self.system = system
        self.tools = list(tools or [])
        self.reducer = reducer
        self.records: list[dict[str, Any]] = []
        self._rec: dict[str, Any] | None = None
        self.harness = ModelNodeHarness(
            mw,
            model=self.model,
            tools=self.tools,
            system_message=system,
            thread_id=thread_id,
            reducer=mw_copying_add_messages if reducer == "add_messages" else mw_concat,
            on_event=self._on_event,
            record=False,
            # the scenarios count exactly the tools they pass; ctxlab's read tool (which
            # create_agent adds) is covered by tests/test_middleware_agents.py
            middleware_tools=False,
        )
        self.harness.state["messages"] = list(messages)  # as given: no ids are added

    @property
    def state(self) -> dict[str, Any]:
        return self.harness.state

    @property
    def event(self) -> dict | None:
        return self.state.get("_summarization_event")

    def append(self, *msgs: BaseMessage) -> None:
        self.harness.add(*msgs)

    def _on_event(self, ev: Any) -> None:
        if self._rec is not None:
            self._rec["events"].append(copy.deepcopy(ev))
            self._rec["timeline"].append(("event", ev.get("phase") if isinstance(ev, dict) else ev))

    def round(
        self,
        *,
        overflow: Callable[[int, list, Any], bool] | None = None,
        response: AIMessage | None = None,
        append_response: bool = True,
    ) -> dict[str, Any]:
        state_msgs = self.state["messages"]
        rec: dict[str, Any] = {
            "calls": [],
            "events": [],
            "exc": None,
            "update": None,
            "state_before": [m.model_copy(deep=True) for m in state_msgs],
            "state_dump_before": [mw_dump(m) for m in state_msgs],
            "event_before": copy.deepcopy(self.event),
            "timeline": [],
        }
        self.records.append(rec)

        def handle(req: ModelRequest) -> ModelResponse:
            call = {
                "messages": [m.model_copy(deep=True) for m in req.messages],
                "system": req.system_message,
                "tools": list(req.tools or []),
                "raised": None,
            }
            rec["calls"].append(call)
            outcome = (
                overflow(len(rec["calls"]), list(req.messages), req.system_message) if overflow else False
            )
            if isinstance(outcome, BaseException):
                call["raised"] = type(outcome).__name__
                rec["timeline"].append(("call", call["raised"]))
                raise outcome
            if outcome:
                call["raised"] = "overflow"
                rec["timeline"].append(("call", "overflow"))
                raise self.overflow_exc("prompt is too long: 212345 tokens > 200000 maximum (injected)")
            rec["timeline"].append(("call", "ok"))
            n = sum(len(r["calls"]) for r in self.records)
            resp = (response or AIMessage(content=f"answer {n}")).model_copy(deep=True)
            if resp.id is None:
                resp.id = f"mw-resp-{n}"
            return ModelResponse(result=[resp])

        self._rec = rec
        try:
            if self.mode == "sync":
                done = self.harness.call(handle, append_response=append_response)
            else:
                done = asyncio.run(self.harness.acall(handle, append_response=append_response))
        except Exception as exc:
            rec["exc"] = exc
            rec["state_dump_after"] = [mw_dump(m) for m in state_msgs]
            return rec
        finally:
            self._rec = None
        rec["state_dump_after"] = [mw_dump(m) for m in state_msgs]
        rec["result"] = done.result
        rec["response"] = done.response
        if done.command is not None:
            rec["update"] = done.command.update
            for key, _ in update_items(done.command):
                if key != "messages":  # the state keeps its own copy
                    self.state[key] = copy.deepcopy(self.state[key])
        rec["event_after"] = copy.deepcopy(self.event)
        return rec


def mw_ctx_events(rec_or_events: Any) -> list[dict]:
    evs = rec_or_events["events"] if isinstance(rec_or_events, dict) else rec_or_events
    return [e for e in evs if isinstance(e, dict) and e.get("type") == "context_compression"]


def mw_message_key(m: BaseMessage) -> Any:
    """What identifies a message across the state and a view: its id, else its type, text and
    tool-call ids (L1 edits neither the text of an AIMessage nor its call ids)."""
    if m.id is not None:
        return m.id
    return (m.type, mw_text(m), tuple(tc.get("id") for tc in getattr(m, "tool_calls", None) or []))


def mw_positional_results(msgs: list[BaseMessage]) -> tuple[dict, list[int]]:
    """Tool pairing as providers check it: each ToolMessage answers the nearest earlier AIMessage
    that issued its ``tool_call_id`` (ids may be reused across turns).  Returns ({(index of the
    calling AIMessage, call id): number of results}, indices of ToolMessages without a call)."""
    issuer: dict = {}
    counts: dict = {}
    orphans: list[int] = []
    for i, m in enumerate(msgs):
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                issuer[tc.get("id")] = i
        elif isinstance(m, ToolMessage):
            owner = issuer.get(m.tool_call_id)
            if owner is None:
                orphans.append(i)
            else:
                counts[(owner, m.tool_call_id)] = counts.get((owner, m.tool_call_id), 0) + 1
    return counts, orphans


def mw_pairing_problems(view: list[BaseMessage], state_msgs: list[BaseMessage]) -> list[str]:
    """R9 in a request view, paired the way providers pair (:func:`mw_positional_results`): no
    ToolMessage without an earlier call in the view; every call in the view has all the results
    that answer it in the state."""
    probs: list[str] = []
    state_counts, _ = mw_positional_results(state_msgs)
    need = {(mw_message_key(state_msgs[o]), cid): n for (o, cid), n in state_counts.items()}
    view_counts, orphans = mw_positional_results(view)
    for i in orphans:
        probs.append(f"ToolMessage #{i} answers {view[i].tool_call_id!r} with no earlier call in the view")
    for i, m in enumerate(view):
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                cid = tc.get("id")
                if view_counts.get((i, cid), 0) < need.get((mw_message_key(m), cid), 0):
                    probs.append(f"call {cid!r} is in the view without all of its results")
    return probs


def mw_same(a: BaseMessage, b: BaseMessage) -> bool:
    """The same message modulo L1 edits: ids when both have one, else type and tool-call ids."""
    if a.id is not None and b.id is not None:
        return a.id == b.id and a.type == b.type
    return (
        a.type == b.type
        and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)
        and [tc.get("id") for tc in getattr(a, "tool_calls", [])]
        == [tc.get("id") for tc in getattr(b, "tool_calls", [])]
    )


def mw_view_matches(view: list[BaseMessage], state_msgs: list[BaseMessage], event: dict | None) -> str | None:
    """``None`` when ``view`` is ``[event.summary_message, *state[cutoff:]]`` (or the state messages
    without an event) modulo L1 edits; else the first difference."""
    if event:
        summary = event["summary_message"]
        if not view or view[0].id != summary.id or mw_text(view[0]) != mw_text(summary):
            return "view does not open with the event's summary message"
        rest, tail = view[1:], state_msgs[event["cutoff_index"] :]
    else:
        rest, tail = view, state_msgs
    if len(rest) != len(tail):
        return f"{len(rest)} view messages vs {len(tail)} state messages"
    for i, (a, b) in enumerate(zip(rest, tail, strict=True)):
        if not mw_same(a, b):
            return f"view message {i} ({a.type} {a.id}) is not state message ({b.type} {b.id})"
    return None


def mw_tool_pair(
    call_id: str,
    name: str,
    result: str,
    *,
    args: dict | None = None,
    ai_id=None,
    tool_id=None,
    status: str = "success",
) -> list[BaseMessage]:
    return [
        AIMessage(
            content="",
            id=ai_id,
            tool_calls=[{"name": name, "args": args or {}, "id": call_id, "type": "tool_call"}],
        ),
        ToolMessage(content=result, tool_call_id=call_id, name=name, id=tool_id, status=status),
    ]


@pytest.fixture(scope="session")
def mw_kit() -> types.SimpleNamespace:
    """The compression-middleware test helpers as one namespace."""
    return types.SimpleNamespace(
        fill=mw_fill,
        cjk=mw_cjk,
        text=mw_text,
        dump=mw_dump,
        sha=mw_sha,
        FakeSummarizer=MwFakeSummarizer,
        ScriptedModel=MwScriptedModel,
        backend=mw_backend,
        failing_backend=mw_failing_backend,
        counting_backend=mw_counting_backend,
        files=mw_files,
        Driver=MwDriver,
        ctx_events=mw_ctx_events,
        pairing_problems=mw_pairing_problems,
        same=mw_same,
        view_matches=mw_view_matches,
        tool_pair=mw_tool_pair,
        AIMessage=AIMessage,
        HumanMessage=HumanMessage,
        SystemMessage=SystemMessage,
        ToolMessage=ToolMessage,
    )


# =================================================================================================
# Offload files in a thread's file scope (prefix ``mw_scope``): a backend object whose file scope
# is the LangGraph thread, and the outputs/ paths a view names.  Tests get them through the
# session fixture ``mw_scope`` (a namespace).
# =================================================================================================

MW_PATH_RE = re.compile(r"outputs/(?:large_tool_results|conversation_history)/[^\s\"'<>()\[\]{}`,;|\\]+")


class MwThreadScopedBackend:
    """One backend object whose file scope is the LangGraph thread (as DeepAgents' ``StateBackend``
    or a ``StoreBackend`` namespaced by thread): thread ``t`` writes under ``root / t``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.scopes: dict[str, Any] = {}

    def scope(self, thread_id: str | None = None) -> Any:
        from deepagents.backends import FilesystemBackend
        from langgraph.config import get_config

        tid = thread_id or str(get_config()["configurable"]["thread_id"])
        if tid not in self.scopes:
            self.scopes[tid] = FilesystemBackend(root_dir=str(self.root / tid), virtual_mode=True)
        return self.scopes[tid]

    def write(self, path: str, content: str) -> Any:
        return self.scope().write(path, content)

    async def awrite(self, path: str, content: str) -> Any:
        return self.scope().write(path, content)

    def ls(self, path: str) -> Any:
        return self.scope().ls(path)

    def read(self, path: str, offset: int = 0, limit: int = 2000) -> Any:
        return self.scope().read(path, offset=offset, limit=limit)


def mw_named_paths(view: list[BaseMessage]) -> list[str]:
    """Every ``outputs/...`` path the messages of a view name (what a model would try to read),
    without the leading slash."""
    found: list[str] = []
    for m in view:
        text = m.content if isinstance(m.content, str) else json.dumps(m.content, ensure_ascii=False)
        found += [p.rstrip(".:") for p in MW_PATH_RE.findall(text)]
    return found


@pytest.fixture(scope="session")
def mw_scope() -> types.SimpleNamespace:
    """Offload-file scope helpers as one namespace."""
    return types.SimpleNamespace(ThreadScopedBackend=MwThreadScopedBackend, named_paths=mw_named_paths)
