"""The call inspector: one self-contained, offline HTML file per run folder (``ctxlab show``).

:func:`write_inspector` reads a run folder written by ``ctxlab replay``/``compare`` (or by
:func:`ctxlab.replay.replay_many` with ``out_dir=`` and ``write_views=True``): ``views/`` (every
call's raw and sent view, :mod:`ctxlab.replay.views`), ``calls.parquet`` (tokens per part,
level), ``summaries.jsonl`` and ``run.json``, and writes ``inspect.html``: no server, no network
asset (the script and the styles are inlined, the data is a JSON block in the page).

The page shows the runs × strategies (calls, saving, L1/L2 rounds; click a cell to open a run),
and per call: the raw view (what an uncompressed agent would send) and the sent view side by
side, each message marked ``kept``, ``offloaded`` (with a link to its file under ``files/``),
``truncated``, ``summarized`` (raw messages behind the cutoff), ``summary`` or ``observation``,
with its tokens (the run's measuring estimate), the tokens per part of the request, the call's
events, every summary text of the run in full, and the sent view of another strategy at the same
call (strategy vs strategy).  A message longer than :data:`MESSAGE_CHARS` characters is shown
cut, with the number of characters left out (the files keep everything).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab.core.messages import message_text
from ctxlab.replay.names import safe_name
from ctxlab.replay.result import ReplayResult
from ctxlab.replay.views import ViewsError, read_views, view_files

__all__ = [
    "INSPECTOR_FILE",
    "MESSAGE_CHARS",
    "InspectorError",
    "inspector_data",
    "raw_view_marks",
    "sent_view_marks",
    "write_inspector",
]

#: the inspector's file name inside a run folder
INSPECTOR_FILE = "inspect.html"
#: characters of one message's text shown in the page (the rest is counted, not shown)
MESSAGE_CHARS = 20_000
#: the per-call columns of calls.parquet the page shows
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
    "summary_error",
)
_ASSETS = Path(__file__).with_name("inspector_assets")


class InspectorError(ValueError):
    """A run folder the inspector cannot show (no such folder, no views): names the folder and
    what to do."""


def _cut(text: str) -> str:
    if len(text) <= MESSAGE_CHARS:
        return text
    return f"{text[:MESSAGE_CHARS]}\n[... {len(text) - MESSAGE_CHARS} more characters not shown here]"


def _message(
    m: BaseMessage, tokens: int, mark: str, path: str | None, files: Path, run_dir: Path
) -> dict[str, Any]:
    """One message as the page needs it: role, id, text, tool calls, tokens, mark, file link."""
    out: dict[str, Any] = {
        "role": m.type,
        "id": m.id,
        "name": getattr(m, "name", None) if isinstance(m, ToolMessage) else None,
        "text": _cut(message_text(m)),
        "tokens": tokens,
        "mark": mark,
    }
    if isinstance(m, AIMessage) and m.tool_calls:
        out["calls"] = [
            {
                "name": tc.get("name"),
                "args": _cut(json.dumps(tc.get("args") or {}, ensure_ascii=False, default=str)),
            }
            for tc in m.tool_calls
        ]
    if isinstance(m, ToolMessage):
        out["status"] = m.status
    if path:
        target = files / path.lstrip("/")
        out["path"] = path
        out["href"] = target.relative_to(run_dir).as_posix() if target.is_file() else None
    return out


def _rows(run_dir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    path = run_dir / "calls.parquet"
    if not path.is_file():
        return {}
    import polars as pl

    frame = pl.read_parquet(path)
    columns = [c for c in ("transcript", "strategy", "call_index", *ROW_COLUMNS) if c in frame.columns]
    return {
        (r["transcript"], r["strategy"], r["call_index"]): {c: r[c] for c in ROW_COLUMNS if c in r}
        for r in frame.select(columns).iter_rows(named=True)
    }


def _summaries(run_dir: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The summaries of summaries.jsonl by run, each with ``href``: its history file's link
    (``None`` when the file is not in the run folder)."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    path = run_dir / "summaries.jsonl"
    if not path.is_file():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            s = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InspectorError(f"{path}: line {n}: not JSON ({exc.msg})") from exc
        record = {k: s.get(k) for k in ("call_index", "cutoff_index", "text", "tokens", "file_path", "error")}
        history = s.get("file_path")
        target = (
            run_dir
            / "files"
            / safe_name(s["transcript"])
            / safe_name(s["strategy"])
            / str(history).lstrip("/")
        )
        record["href"] = target.relative_to(run_dir).as_posix() if history and target.is_file() else None
        out.setdefault((s["transcript"], s["strategy"]), []).append(record)
    return out


def inspector_data(run_dir: str | Path, result: ReplayResult | None = None) -> dict[str, Any]:
    """The page's data: ``{"title", "command", "settings", "runs": [...], "problems": [...]}``.

    Each run: ``transcript``, ``strategy``, ``messages`` (see the module doc), ``raw`` (message
    indices of the raw history), ``calls`` (``call_index``, ``raw_count``, ``sent``, ``system``,
    ``events``, ``row``: the call's columns of calls.parquet), ``summaries``.  A views file that
    cannot be read is listed in ``problems`` (file and line) and the other runs are shown.
    ``result``: the :class:`~ctxlab.replay.ReplayResult` the folder's views came from; its rows
    and summaries are used instead of ``calls.parquet`` and ``summaries.jsonl`` (which a
    replay in Python does not write).

    Raises:
        InspectorError: ``run_dir`` is not a folder, or has no ``views/`` files.
    """
    root = Path(run_dir)
    if not root.is_dir():
        raise InspectorError(f"{root}: no such run folder")
    paths = view_files(root)
    if not paths:
        raise InspectorError(
            f"{root}: no views/ in this run folder (written by ctxlab replay/compare since the call "
            "inspector exists; replay the run again to inspect it)"
        )
    run_json = root / "run.json"
    meta: dict[str, Any] = json.loads(run_json.read_text(encoding="utf-8")) if run_json.is_file() else {}
    if result is None:
        rows, summaries = _rows(root), _summaries(root)
    else:
        rows = {
            (r["transcript"], r["strategy"], r["call_index"]): {c: r.get(c) for c in ROW_COLUMNS}
            for r in result.rows
        }
        summaries = {}
        for s in result.summaries:
            record = {
                k: s.get(k) for k in ("call_index", "cutoff_index", "text", "tokens", "file_path", "error")
            }
            summaries.setdefault((s["transcript"], s["strategy"]), []).append({**record, "href": None})
    runs: list[dict[str, Any]] = []
    problems: list[str] = []
    for path in paths:
        try:
            v = read_views(path)
        except ViewsError as exc:
            problems.append(str(exc))
            continue
        files = root / "files" / safe_name(v.transcript) / safe_name(v.strategy)
        calls = [
            {**c, "row": rows.get((v.transcript, v.strategy, c["call_index"]), {})}
            for c in sorted(v.calls, key=lambda c: int(c["call_index"]))
        ]
        runs.append(
            {
                "transcript": v.transcript,
                "strategy": v.strategy,
                "messages": [
                    _message(m, t, k, p, files, root)
                    for m, t, k, p in zip(v.messages, v.tokens, v.marks, v.paths, strict=True)
                ],
                "raw": v.raw,
                "calls": calls,
                "summaries": summaries.get((v.transcript, v.strategy), []),
            }
        )
    return {
        "title": root.resolve().name,
        "command": meta.get("command"),
        "settings": meta.get("settings") or {},
        "runs": runs,
        "problems": problems,
    }


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no HTML comment opener)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_inspector(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the inspector page of a run folder (default ``<run_dir>/inspect.html``) and return
    its path.  Problems with single views files are printed as ``ctxlab: warning:`` lines and
    listed in the page.

    Raises:
        InspectorError: see :func:`inspector_data`.
    """
    data = inspector_data(run_dir)
    for problem in data["problems"]:
        print(f"ctxlab: warning: {problem}", file=sys.stderr)
    target = Path(out) if out is not None else Path(run_dir) / INSPECTOR_FILE
    page = (
        (_ASSETS / "inspector.html")
        .read_text(encoding="utf-8")
        .replace("/*STYLE*/", (_ASSETS / "inspector.css").read_text(encoding="utf-8"))
        .replace("/*SCRIPT*/", (_ASSETS / "inspector.js").read_text(encoding="utf-8"))
        .replace("/*DATA*/", _script_json(data))
        .replace("<!--TITLE-->", _escape(f"ctxlab inspector: {data['title']}"))
    )
    target.write_text(page, encoding="utf-8")
    return target


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def raw_view_marks(run: dict[str, Any], call: dict[str, Any]) -> list[str]:
    """The mark of each raw message of one call, as the page shows it (``renderRaw`` in
    ``inspector_assets/inspector.js`` applies the same rule): ``kept`` (sent as it is; an
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
    """The mark of each sent message of one call, as the page shows it (``renderSent`` in
    ``inspector.js``): the message's own mark, but ``changed`` for a message with no ctxlab mark
    that is not a raw message (another strategy's masking or rewriting)."""
    messages = run["messages"]
    raw = set(run["raw"][: call["raw_count"]])
    return [
        "changed" if messages[i]["mark"] == "kept" and i not in raw else messages[i]["mark"]
        for i in call["sent"]
    ]
