"""The per-call views of a replay, written into the run folder for the call inspector.

For each transcript × strategy run, ``<run folder>/views/<transcript>/<strategy>.jsonl.gz``
(names made safe by :func:`ctxlab.replay.names.safe_name`) holds, as gzip-compressed JSON lines:

* one ``{"kind": "run", "transcript", "strategy", "version": 1, "source", "format"}`` line first
  (``source``: the transcript's file, ``format``: its format name; absent in older files);
* one ``{"kind": "tools", "tools": [{"name", "schema", "tokens"}], "tokens": n}`` line when the
  transcript records tool schemas: each schema as the provider received it with its tokens (the
  run's measuring estimate of that schema alone), and ``tokens`` the estimate of the whole list
  (what a request counts, R16);
* one ``{"kind": "message", "index": i, "message": <message_to_dict>, "tokens": n, "mark": m,
  "path": p}`` line the first time a message (by content) appears, raw or sent: ``index`` counts
  from 0 in order of appearance, ``tokens`` is the run's measuring estimate, ``mark`` what the
  strategy made of it in a view (:func:`view_mark`), ``path`` the offload file (``None`` unless
  ``mark == "offloaded"``);
* one ``{"kind": "raw", "index": i}`` line per transcript message, in the order they join the
  history (the raw history is these indices);
* one ``{"kind": "call", "call_index": k, "raw_count": r, "sent": [...], "system": s,
  "events": [...]}`` line per model call: the raw view is the first ``raw_count`` raw messages
  (what an uncompressed agent would send), ``sent`` the indices of the messages the model
  received, ``system`` the index of its system message (``None``: none), ``events`` the call's
  ``context_compression`` events (JSON-ready).

Messages are stored once per run, so the file grows with the run's distinct messages plus one
index per sent message per call.  :func:`read_views` reads one file back; the inspector
(:mod:`ctxlab.analysis.inspector`) reads every file of a run folder.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict

from ctxlab.core.marks import OFFLOADED_KEY, is_observation, is_summary_message
from ctxlab.replay.names import safe_name

__all__ = [
    "MARKS",
    "VIEWS_DIR",
    "RunViews",
    "ViewLog",
    "ViewsError",
    "read_views",
    "read_views_head",
    "tool_name",
    "view_file",
    "view_files",
    "view_mark",
]

#: the folder of a run folder holding the views
VIEWS_DIR = "views"
#: what a message of a sent view can be (:func:`view_mark`)
MARKS = ("kept", "offloaded", "truncated", "summary", "observation")
_TRUNCATED = "argument truncated in this request view"


class ViewsError(ValueError):
    """A views file that cannot be read: names the file and the line."""


def view_file(run_dir: str | Path, transcript: str, strategy: str) -> Path:
    """The views file of one run in a run folder."""
    return Path(run_dir) / VIEWS_DIR / safe_name(transcript) / f"{safe_name(strategy)}.jsonl.gz"


def view_files(run_dir: str | Path) -> list[Path]:
    """Every views file under ``run_dir/views`` (sorted; empty when the folder has none)."""
    return sorted((Path(run_dir) / VIEWS_DIR).glob("*/*.jsonl.gz"))


def view_mark(message: BaseMessage) -> tuple[str, str | None]:
    """``(mark, offload path)`` of a message as a strategy sent it: ``"summary"`` (a summary
    message), ``"offloaded"`` (L1 wrote its text to a file: the path, R6), ``"truncated"`` (an
    argument of one of its tool calls was cut, R5), ``"observation"`` (a tool result recorded as
    a user turn), else ``"kept"``."""
    if is_summary_message(message):
        return "summary", None
    saved = message.additional_kwargs.get(OFFLOADED_KEY)  # {"path", "chars"} (offload_kwargs)
    path = saved.get("path") if isinstance(saved, dict) else saved
    if isinstance(path, str) and path:
        return "offloaded", path
    if isinstance(message, AIMessage) and any(
        isinstance(v, str) and _TRUNCATED in v
        for tc in message.tool_calls
        for v in (tc.get("args") or {}).values()
    ):
        return "truncated", None
    if is_observation(message):
        return "observation", None
    return "kept", None


class ViewLog:
    """Writes one run's views (see the module doc) as the replay goes; :meth:`close` when done.

    Args:
        path: the file to write (its folder is made).
        transcript, strategy: the run's labels.
        tokens: the measuring estimator's ``message -> tokens``.
    """

    def __init__(
        self,
        path: Path,
        transcript: str,
        strategy: str,
        tokens: Any,
        *,
        source: str | None = None,
        format: str | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._tokens = tokens
        self._out: IO[str] = gzip.open(path, "wt", encoding="utf-8", compresslevel=1)  # noqa: SIM115 - closed by close()
        self._by_object: dict[int, tuple[BaseMessage, int]] = {}  # id(obj) -> (obj kept alive, index)
        self._by_content: dict[str, int] = {}
        self._raw: list[int] = []
        run: dict[str, Any] = {"kind": "run", "transcript": transcript, "strategy": strategy, "version": 1}
        if source is not None:
            run["source"] = source
        if format is not None:
            run["format"] = format
        self._line(run)

    def _line(self, record: dict[str, Any]) -> None:
        self._out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    def _index(self, message: BaseMessage) -> int:
        known = self._by_object.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        data = message_to_dict(message)
        text = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        index = self._by_content.get(key)
        if index is None:
            index = len(self._by_content)
            self._by_content[key] = index
            mark, path = view_mark(message)
            self._line(
                {
                    "kind": "message",
                    "index": index,
                    "message": data,
                    "tokens": int(self._tokens(message)),
                    "mark": mark,
                    "path": path,
                }
            )
        self._by_object[id(message)] = (message, index)
        return index

    def tools(self, tools: Sequence[Any], tokens: Any) -> None:
        """The run's tool schemas (none: nothing written), each with ``tokens([schema])`` and the
        whole list with ``tokens(tools)`` (``tokens``: the measuring estimator's
        ``tools -> tokens``)."""
        if not tools:
            return
        self._line(
            {
                "kind": "tools",
                "tools": [{"name": tool_name(t), "schema": t, "tokens": int(tokens([t]))} for t in tools],
                "tokens": int(tokens(list(tools))),
            }
        )

    def arrive(self, message: BaseMessage) -> None:
        """A transcript message joined the history (in order)."""
        index = self._index(message)
        self._raw.append(index)
        self._line({"kind": "raw", "index": index})

    def call(
        self, call_index: int, system: BaseMessage | None, sent: Sequence[BaseMessage], events: Sequence[Any]
    ) -> None:
        """One model call: the request the model answered and the call's events."""
        self._line(
            {
                "kind": "call",
                "call_index": call_index,
                "raw_count": len(self._raw),
                "sent": [self._index(m) for m in sent],
                "system": self._index(system) if system is not None else None,
                "events": [e for e in events if isinstance(e, dict)],
            }
        )

    def close(self) -> None:
        self._out.close()
        self._by_object.clear()


def tool_name(schema: Any) -> str:
    """The name of a tool schema as a provider receives it: ``{"name": ...}`` (Anthropic, a
    LangChain tool dict), ``{"function": {"name": ...}}`` (OpenAI), a tool object's ``.name``;
    ``"?"`` when it has none."""
    if isinstance(schema, dict):
        inner = schema.get("function")
        name = inner.get("name") if isinstance(inner, dict) else schema.get("name")
    else:
        name = getattr(schema, "name", None)
    return str(name) if name else "?"


@dataclass
class RunViews:
    """One run's views read back: ``messages[i]`` with ``tokens[i]``, ``marks[i]``,
    ``paths[i]``; ``raw`` the raw history (message indices); ``calls`` the call records in order;
    ``source`` and ``format`` of the transcript (``None``: not recorded); ``tools`` the tool
    schemas with their tokens and ``tools_tokens`` the whole list's (see the module doc)."""

    transcript: str
    strategy: str
    source: str | None = None
    format: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    tools_tokens: int = 0
    messages: list[BaseMessage] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    paths: list[str | None] = field(default_factory=list)
    raw: list[int] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def call(self, call_index: int) -> dict[str, Any]:
        """The record of one call.

        Raises:
            KeyError: the run has no such call (the message says which calls it has).
        """
        for c in self.calls:
            if c["call_index"] == call_index:
                return c
        last = self.calls[-1]["call_index"] if self.calls else None
        raise KeyError(f"{self.transcript} [{self.strategy}] has no call {call_index} (calls 0..{last})")


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ViewsError(f"{path}: line {n}: not JSON ({exc.msg})") from exc
    except (OSError, EOFError) as exc:
        raise ViewsError(f"{path}: cannot read ({exc})") from exc


def read_views_head(path: str | Path) -> RunViews:
    """The run line of one views file only (``transcript``, ``strategy``, ``source``,
    ``format``; no message, no call): what a listing of many runs needs.

    Raises:
        ViewsError: the file does not start with a run line.
    """
    p = Path(path)
    for n, rec in _records(p):
        if rec.get("kind") != "run":
            raise ViewsError(f"{p}: line {n}: expected the run line first, got {rec.get('kind')!r}")
        return RunViews(
            transcript=str(rec["transcript"]),
            strategy=str(rec["strategy"]),
            source=rec.get("source"),
            format=rec.get("format"),
        )
    raise ViewsError(f"{p}: empty views file")


def read_views(path: str | Path) -> RunViews:
    """Read one views file (:class:`RunViews`).

    Raises:
        ViewsError: the file is not gzip JSON lines of this format (names the file and line).
    """
    p = Path(path)
    views: RunViews | None = None
    for n, rec in _records(p):
        kind = rec.get("kind")
        if kind == "run":
            views = RunViews(
                transcript=str(rec["transcript"]),
                strategy=str(rec["strategy"]),
                source=rec.get("source"),
                format=rec.get("format"),
            )
        elif views is None:
            raise ViewsError(f"{p}: line {n}: expected the run line first, got {kind!r}")
        elif kind == "message":
            if rec.get("index") != len(views.messages):
                raise ViewsError(f"{p}: line {n}: message index {rec.get('index')} out of order")
            views.messages.append(messages_from_dict([rec["message"]])[0])
            views.tokens.append(int(rec.get("tokens") or 0))
            views.marks.append(str(rec.get("mark") or "kept"))
            views.paths.append(rec.get("path"))
        elif kind == "tools":
            views.tools = list(rec.get("tools") or [])
            views.tools_tokens = int(rec.get("tokens") or 0)
        elif kind == "raw":
            views.raw.append(int(rec["index"]))
        elif kind == "call":
            views.calls.append(rec)
        else:
            raise ViewsError(f"{p}: line {n}: unknown record kind {kind!r}")
    if views is None:
        raise ViewsError(f"{p}: empty views file")
    return views
