"""The call inspector's data: what ``ctxlab show`` and the notebook widget show of a run folder.

:class:`RunFolder` reads a run folder written by ``ctxlab replay``/``compare`` (or by
:func:`ctxlab.replay.replay_many` with ``out_dir=`` and ``write_views=True``): ``views/`` (every
call's raw and sent view, :mod:`ctxlab.replay.views`), ``calls.parquet`` (tokens per part, level,
the failure columns), ``summaries.jsonl`` and ``run.json``, one run at a time (a corpus folder
holds thousands of runs; none is read before it is asked for).  :func:`inspector_data` gathers
every run (the notebook widget, :mod:`ctxlab.analysis.call_inspector`); the pages ``ctxlab show``
writes are :mod:`ctxlab.analysis.inspector_site` (:func:`~ctxlab.analysis.inspector_site.write_inspector`).

Per run: every distinct message once (role, id, text, tool calls, tokens — the run's measuring
estimate —, mark: ``kept``, ``offloaded`` with a link to its file under ``files/``,
``truncated``, ``summary`` or ``observation``), the raw history, per call the sent message
indices, the system message, the events and the call's columns of ``calls.parquet``; every
summary of the run in full; the tool schemas with their tokens; and the run's **failures**: per
call what the failure columns of :mod:`ctxlab.replay.columns` say (``summary_error``: a failed
summary; ``summary_fallback``: a fallback text such as LangChain's "Previous conversation was too
long to summarize."; ``summary_declined``; ``summary_rejected``; ``rejected_reason``: a request a
provider would refuse) — the rules deciding them live in :mod:`ctxlab.replay.failures`, the page
only reads the columns.  A message longer than :data:`MESSAGE_CHARS` characters is cut, with the
number of characters left out (the files keep everything).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.core.messages import message_text
from ctxlab.replay.failures import is_counted_decline
from ctxlab.replay.names import safe_name
from ctxlab.replay.result import ReplayResult
from ctxlab.replay.views import RunViews, ViewsError, read_views, view_files

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FAILURE_COLUMNS",
    "INSPECTOR_FILE",
    "MESSAGE_CHARS",
    "InspectorError",
    "RunFolder",
    "call_failures",
    "cut_run",
    "cut_text",
    "inspector_data",
    "raw_view_marks",
    "sent_view_marks",
]

#: the inspector's index page inside a run folder (its runs are under ``inspect/``)
INSPECTOR_FILE = "inspect.html"
#: characters of one message's text shown in the page (the rest is counted, not shown)
MESSAGE_CHARS = 20_000
#: the per-call columns of calls.parquet the page shows (those a folder has)
ROW_COLUMNS = (
    "raw_tokens",
    "view_tokens",
    "view_system_tokens",
    "view_user_tokens",
    "view_assistant_tokens",
    "view_tool_tokens",
    "view_summary_tokens",
    "view_messages",
    "level",
    "cutoff_index",
    "offloaded",
    "truncated_args",
    "summarizer_calls",
    "cost_usd",
    "raw_cost_usd",
    "after_failed_summary",
    "summary_error",
    "summary_fallback",
    "summary_declined",
    "summary_rejected",
    "rejected_reason",
)
#: failure column of a call -> the badge the page gives it (:func:`call_failures`)
FAILURE_COLUMNS = {
    "summary_fallback": "fallback",
    "summary_error": "failed",
    "summary_declined": "declined",
    "summary_rejected": "rejected",
    "rejected_reason": "rejected request",
}
_SUMMARY_KEYS = ("call_index", "cutoff_index", "text", "tokens", "file_path", "error", "fallback")


class InspectorError(ValueError):
    """A run folder the inspector cannot show (no such folder, no views): names the folder and
    what to do."""


def cut_text(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with the number of characters left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters not shown here]"


def call_failures(row: dict[str, Any]) -> list[dict[str, str]]:
    """The failures of one call as the page badges them: ``[{"kind", "reason"}]``, one per
    non-empty failure column of the row (:data:`FAILURE_COLUMNS`; a failed summary that is a
    fallback is one ``fallback``; a designed decline, :func:`~ctxlab.replay.failures.is_counted_decline`,
    is none).  The columns are filled by the rules of
    :mod:`ctxlab.replay.failures`; nothing is decided here."""
    out = []
    for column, kind in FAILURE_COLUMNS.items():
        reason = row.get(column)
        if not reason or (kind == "failed" and row.get("summary_fallback")):
            continue
        if kind == "declined" and not is_counted_decline(reason):  # the strategy's design
            continue
        out.append({"kind": kind, "reason": str(reason)})
    return out


def cut_run(run: dict[str, Any], limit: int = MESSAGE_CHARS) -> dict[str, Any]:
    """A copy of one run's data (:meth:`RunFolder.run`) with every message text, tool-call
    argument and summary text cut to ``limit`` characters (:func:`cut_text`)."""
    messages = []
    for m in run["messages"]:
        m = {**m, "text": cut_text(m["text"], limit)}
        if "calls" in m:
            m["calls"] = [{**c, "args": cut_text(c["args"], limit)} for c in m["calls"]]
        messages.append(m)
    summaries = [{**s, "text": cut_text(s["text"] or "", limit)} for s in run["summaries"]]
    return {**run, "messages": messages, "summaries": summaries}


def _message(
    m: BaseMessage, tokens: int, mark: str, path: str | None, files: Path, root: Path
) -> dict[str, Any]:
    """One message as the page needs it: role, id, text (whole: :func:`cut_run` cuts it), tool
    calls, tokens, mark, file link (``href``: relative to the run folder ``root``; ``None`` when
    the file is not there)."""
    out: dict[str, Any] = {
        "role": m.type,
        "id": m.id,
        "name": getattr(m, "name", None) if isinstance(m, ToolMessage) else None,
        "text": message_text(m),
        "tokens": tokens,
        "mark": mark,
    }
    if isinstance(m, AIMessage) and m.tool_calls:
        out["calls"] = [
            {
                "name": tc.get("name"),
                "args": json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str),
            }
            for tc in m.tool_calls
        ]
    if isinstance(m, ToolMessage):
        out["status"] = m.status
    if path:
        target = files / path.lstrip("/")
        out["path"] = path
        out["href"] = _relative(target, root) if target.is_file() else None
    return out


def _relative(target: Path, root: Path) -> str:
    return Path(os.path.relpath(target, root)).as_posix()


class RunFolder:
    """A run folder read for the inspector, one run at a time.

    Args:
        run_dir: a folder with ``views/`` (``ctxlab replay``/``compare`` output).
        result: the :class:`~ctxlab.replay.ReplayResult` the folder's views came from; its rows
            and summaries are used instead of ``calls.parquet`` and ``summaries.jsonl`` (which a
            replay in Python does not write).

    Attributes:
        root: the folder; ``meta``: its ``run.json`` (empty when absent); ``paths``: its views
        files (sorted).

    Raises:
        InspectorError: ``run_dir`` is not a folder, has no ``views/`` files, or its
            ``summaries.jsonl`` has a line that is not JSON.
    """

    def __init__(self, run_dir: str | Path, result: ReplayResult | None = None) -> None:
        root = Path(run_dir)
        if not root.is_dir():
            raise InspectorError(f"{root}: no such run folder")
        self.root = root
        self.paths = view_files(root)
        if not self.paths:
            raise InspectorError(
                f"{root}: no views/ in this run folder (written by ctxlab replay/compare since the call "
                "inspector exists; replay the run again to inspect it)"
            )
        run_json = root / "run.json"
        self.meta: dict[str, Any] = (
            json.loads(run_json.read_text(encoding="utf-8")) if run_json.is_file() else {}
        )
        self._frames: dict[tuple[str, str], pl.DataFrame] = {}
        self._rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        if result is None:
            self._frames = self._read_frames()
            self._summaries = self._read_summaries()
        else:
            for r in result.rows:
                key = (r["transcript"], r["strategy"])
                self._rows.setdefault(key, []).append({"call_index": r["call_index"], **r})
            self._summaries = {}
            for s in result.summaries:
                record = {k: s.get(k) for k in _SUMMARY_KEYS}
                self._summaries.setdefault((s["transcript"], s["strategy"]), []).append(
                    {**record, "href": None}
                )

    def _read_frames(self) -> dict[tuple[str, str], pl.DataFrame]:
        path = self.root / "calls.parquet"
        if not path.is_file():
            return {}
        from ctxlab.replay.table import read_calls

        frame = read_calls(path)
        keep = [c for c in ("transcript", "strategy", "call_index", *ROW_COLUMNS) if c in frame.columns]
        parts = frame.select(keep).partition_by(["transcript", "strategy"], as_dict=True)
        return {(str(k[0]), str(k[1])): v for k, v in parts.items()}

    def _read_summaries(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        path = self.root / "summaries.jsonl"
        if not path.is_file():
            return out
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                s = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InspectorError(f"{path}: line {n}: not JSON ({exc.msg})") from exc
            record = {k: s.get(k) for k in _SUMMARY_KEYS}
            history = s.get("file_path")
            target = self.files(s["transcript"], s["strategy"]) / str(history).lstrip("/")
            record["href"] = _relative(target, self.root) if history and target.is_file() else None
            out.setdefault((s["transcript"], s["strategy"]), []).append(record)
        return out

    def files(self, transcript: str, strategy: str) -> Path:
        """The folder of one run's files (offloads, histories)."""
        return self.root / "files" / safe_name(transcript) / safe_name(strategy)

    def rows(self, transcript: str, strategy: str) -> dict[int, dict[str, Any]]:
        """Call index -> the call's :data:`ROW_COLUMNS` (those the folder has)."""
        key = (transcript, strategy)
        if key in self._frames:
            rows = list(self._frames[key].iter_rows(named=True))
        else:
            rows = self._rows.get(key, [])
        return {int(r["call_index"]): {c: r[c] for c in ROW_COLUMNS if c in r} for r in rows}

    def run(self, path: Path) -> dict[str, Any]:
        """One run's data (see the module doc): ``transcript``, ``strategy``, ``source``,
        ``format``, ``messages``, ``raw``, ``calls`` (``call_index``, ``raw_count``, ``sent``,
        ``system``, ``events``, ``row``, ``failures``), ``summaries`` (each with ``href`` to its
        history file and ``failure``), ``tools`` (``name``, ``tokens``, ``schema``),
        ``tools_tokens`` and ``failures`` (every failed call: ``call_index``, ``kind``, ``reason``).

        Raises:
            ViewsError: the views file cannot be read.
        """
        v = read_views(path)
        return self.record(v)

    def record(self, v: RunViews) -> dict[str, Any]:
        """:meth:`run` of views already read."""
        files = self.files(v.transcript, v.strategy)
        rows = self.rows(v.transcript, v.strategy)
        messages = [
            _message(m, t, k, p, files, self.root)
            for m, t, k, p in zip(v.messages, v.tokens, v.marks, v.paths, strict=True)
        ]
        calls: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        for c in sorted(v.calls, key=lambda c: int(c["call_index"])):
            row = rows.get(int(c["call_index"]), {})
            found = call_failures(row)
            failures.extend({"call_index": c["call_index"], **f} for f in found)
            calls.append({**c, "row": row, "failures": found})
            for f in found:  # the summary this call committed carries its failure from here on
                if f["kind"] in ("fallback", "failed"):
                    for i in c["sent"]:
                        if messages[i]["mark"] == "summary" and "failure" not in messages[i]:
                            messages[i]["failure"] = f"{f['kind']}: {f['reason']}"
        summaries = [
            {**s, "failure": _summary_failure(s)} for s in self._summaries.get((v.transcript, v.strategy), [])
        ]
        return {
            "transcript": v.transcript,
            "strategy": v.strategy,
            "source": v.source,
            "format": v.format,
            "messages": messages,
            "raw": v.raw,
            "calls": calls,
            "summaries": summaries,
            "tools": [
                {
                    "name": t.get("name"),
                    "tokens": t.get("tokens"),
                    "schema": json.dumps(t.get("schema"), ensure_ascii=False, indent=1, default=str),
                }
                for t in v.tools
            ],
            "tools_tokens": v.tools_tokens,
            "failures": failures,
        }

    def runs(self) -> Iterator[tuple[Path, dict[str, Any] | None, str | None]]:
        """``(views file, run data or None, problem or None)`` for every views file in order; a
        file that cannot be read is a problem (file and line), not an exception."""
        for path in self.paths:
            try:
                yield path, self.run(path), None
            except ViewsError as exc:
                yield path, None, str(exc)


def _summary_failure(s: dict[str, Any]) -> str | None:
    """``"fallback: <text>"`` or ``"failed: <error>"`` of one summary record (``None``: a summary)."""
    if s.get("fallback"):
        return f"fallback: {s['fallback']}"
    if s.get("error"):
        return f"failed: {s['error']}"
    return None


def inspector_data(run_dir: str | Path, result: ReplayResult | None = None) -> dict[str, Any]:
    """Every run of a folder: ``{"title", "command", "settings", "runs": [...], "problems": [...]}``
    (each run as :meth:`RunFolder.run`; a views file that cannot be read is listed in
    ``problems`` and the other runs are kept).  For the notebook widget; ``ctxlab show`` writes
    one run at a time (:mod:`ctxlab.analysis.inspector_site`).

    Raises:
        InspectorError: see :class:`RunFolder`.
    """
    folder = RunFolder(run_dir, result)
    runs, problems = [], []
    for _, run, problem in folder.runs():
        if run is not None:
            runs.append(cut_run(run))
        if problem is not None:
            problems.append(problem)
    return {
        "title": folder.root.resolve().name,
        "command": folder.meta.get("command"),
        "settings": folder.meta.get("settings") or {},
        "runs": runs,
        "problems": problems,
    }


def raw_view_marks(run: dict[str, Any], call: dict[str, Any]) -> list[str]:
    """The mark of each raw message of one call, as the page shows it (``rawMarks`` in
    ``inspector_assets/run.js`` applies the same rule): ``kept`` (sent as it is; an
    ``observation`` stays one), the sent copy's mark when the message went out changed
    (``offloaded``, ``truncated``; ``changed`` when the copy has no ctxlab mark), ``summarized``
    when it was not sent and the view holds a summary, else ``dropped``.

    Args:
        run: one run of :func:`inspector_data`; ``call``: one of its calls.
    """
    messages = run["messages"]
    sent = set(call["sent"])
    by_id = {messages[i]["id"]: i for i in call["sent"] if messages[i]["id"]}
    summarized = any(messages[i]["mark"] == "summary" for i in call["sent"])
    marks = []
    for i in run["raw"][: call["raw_count"]]:
        m = messages[i]
        if i in sent:
            marks.append("observation" if m["mark"] == "observation" else "kept")
        elif m["id"] and m["id"] in by_id:
            other = messages[by_id[m["id"]]]["mark"]
            marks.append("changed" if other == "kept" else other)
        else:
            marks.append("summarized" if summarized else "dropped")
    return marks


def sent_view_marks(run: dict[str, Any], call: dict[str, Any]) -> list[str]:
    """The mark of each sent message of one call, as the page shows it (``sentMarks`` in
    ``run.js``): the message's own mark, but ``changed`` for a message with no ctxlab mark that
    is not a raw message (another strategy's masking or rewriting)."""
    messages = run["messages"]
    raw = set(run["raw"][: call["raw_count"]])
    return [
        "changed" if messages[i]["mark"] == "kept" and i not in raw else messages[i]["mark"]
        for i in call["sent"]
    ]
