"""The pages of ``ctxlab show``: a small index page and one data file per run, opened from disk.

:func:`write_site` writes, for a run folder (``out`` default: the run folder itself)::

    inspect.html                  the index: one row per transcript x strategy run, sortable and
                                  filterable (transcript, source, format, strategy, calls, tokens,
                                  saving, cost, failures, trigger fired), search over run names
    inspect/run.html              the run page: opens the run named in its URL (#run=ID&call=K)
    inspect/data/<t>/<s>.js       one run's data (see :mod:`ctxlab.analysis.inspector`), loaded
                                  by the run page with a <script> element when it is opened
    inspect/fonts/*.woff          the CJK glyphs the pages show (:mod:`ctxlab.analysis.inspector_fonts`)

Nothing is fetched: a page loaded from ``file://`` may run a ``<script src>`` and load a font below
its own folder in Chromium and Firefox, so the pages need no server and no network.

**Page size.** A run's data file is at most :data:`DATA_BYTES` (4 MB): when a run's data is
larger, its message texts are cut shorter (20,000, then 5,000, 2,000, 1,000, 500, 200 characters;
the page says so), then the events' statistics are left out.  The run page itself is about
40 KB, so a run page with its run and one compared run loads at most about 8.1 MB; the index
page holds one row of about 300 bytes per run (about 1.6 MB for 5,460 runs) plus 40 KB.  Every
file written is in :attr:`Site.sizes`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ctxlab.analysis.inspector import INSPECTOR_FILE, MESSAGE_CHARS, RunFolder, cut_run
from ctxlab.analysis.inspector_fonts import cjk_characters, cjk_font_face
from ctxlab.replay.names import safe_name
from ctxlab.replay.views import ViewsError, read_views, read_views_head

__all__ = ["DATA_BYTES", "RUN_PAGE", "SITE_DIR", "Site", "index_rows", "write_inspector", "write_site"]

#: the bound on one run's data file, in bytes
DATA_BYTES = 4_000_000
#: the folder of the run page, the data files and the fonts, beside the index page
SITE_DIR = "inspect"
#: the run page inside :data:`SITE_DIR`
RUN_PAGE = "run.html"
#: the text limits tried, in characters, when a run's data is over the bound
TEXT_LIMITS = (MESSAGE_CHARS, 5_000, 2_000, 1_000, 500, 200)
_ASSETS = Path(__file__).with_name("inspector_assets")
#: the index's columns: (key, header, kind); kind "text", "int", "float", "bool"
INDEX_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("transcript", "transcript", "text"),
    ("strategy", "strategy", "text"),
    ("failed", "failed", "int"),
    ("fallback", "fallback", "int"),
    ("declined", "declined", "int"),
    ("rejected", "rejected", "int"),
    ("reached", "trigger fired", "bool"),
    ("saving_pct", "saving %", "float"),
    ("cost_usd", "cost $", "float"),
    ("cost_saving_pct", "cost saving %", "float"),
    ("calls", "calls", "int"),
    ("l1", "L1", "int"),
    ("l2", "L2", "int"),
    ("raw_tokens", "raw tokens", "int"),
    ("sent_tokens", "sent tokens", "int"),
    ("source", "source", "text"),
    ("format", "format", "text"),
)


@dataclass
class Site:
    """What :func:`write_site` wrote.

    Attributes:
        index: the index page; ``folder``: the folder of the run page and the data files.
        runs: the runs written.  sizes: every file written -> its size in bytes.
        cut: run id -> the text limit its data needed to fit :data:`DATA_BYTES` (runs that fit
            with :data:`MESSAGE_CHARS` are not listed).
        over: runs still over the bound (their data file is written anyway).
        problems: views files that could not be read (the other runs are written).
        font: the CJK font file (``None``: no CJK character, or no font).
    """

    index: Path
    folder: Path
    runs: int = 0
    sizes: dict[Path, int] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    over: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    font: Path | None = None

    @property
    def largest(self) -> tuple[Path, int]:
        """The biggest file written and its size."""
        return max(self.sizes.items(), key=lambda kv: kv[1])


def run_id(transcript: str, strategy: str) -> str:
    """A run's id in the pages' URLs and its data file's path under ``data/`` (without ``.js``):
    ASCII (:func:`safe_name` with ``ascii_only``), so that no URL needs percent-encoding."""
    return f"{safe_name(transcript, ascii_only=True)}/{safe_name(strategy, ascii_only=True)}"


def _source_group(source: str | None, root: str | None) -> str:
    """The folder a transcript file comes from, relative to ``root`` (the common folder of all
    sources), at most two levels (``raw/mini-swe-agent``)."""
    if not source:
        return ""
    parent = os.path.dirname(os.path.abspath(source))
    rel = os.path.relpath(parent, root) if root else parent
    parts = [p for p in PurePosixPath(Path(rel).as_posix()).parts if p not in (".", "")]
    return "/".join(parts[:2]) if parts else "."


def index_rows(
    folder: RunFolder, runs: list[tuple[str, str, str | None, str | None]]
) -> list[dict[str, Any]]:
    """One index row per run (:data:`INDEX_COLUMNS`, plus ``id`` and ``provenance``) from the
    folder's ``calls.parquet`` (its per-run aggregation, :func:`ctxlab.replay.table.summary_frame`).

    Args:
        folder: the run folder.
        runs: ``(transcript, strategy, source file, format)`` of every run, in order.
    """

    from ctxlab.replay.table import read_calls, summary_frame

    path = folder.root / "calls.parquet"
    per_run: dict[tuple[str, str], dict[str, Any]] = {}
    if path.is_file():
        for r in summary_frame(read_calls(path)).iter_rows(named=True):
            per_run[(r["transcript"], r["strategy"])] = r
    sources = [os.path.dirname(os.path.abspath(s)) for _, _, s, _ in runs if s]
    root = os.path.commonpath(sources) if sources else None
    order = {key: n for n, key in enumerate(per_run)}  # the replay's order (transcript, then strategy)
    runs = sorted(runs, key=lambda r: order.get((r[0], r[1]), len(order)))
    rows = []
    for transcript, strategy, source, fmt in runs:
        r = per_run.get((transcript, strategy), {})
        errors, fallback = r.get("summary_errors"), r.get("fallback_summaries")
        rows.append(
            {
                "id": run_id(transcript, strategy),
                "transcript": transcript,
                "source": _source_group(source, root),
                "file": source or "",
                "format": fmt or "",
                "strategy": strategy,
                "provenance": r.get("data_provenance"),
                "calls": r.get("calls"),
                "raw_tokens": r.get("raw_tokens_total"),
                "sent_tokens": r.get("sent_tokens_total"),
                "saving_pct": _round(r.get("saving_pct"), 2),
                "cost_usd": _round(r.get("cost_usd"), 6),
                "cost_saving_pct": _round(r.get("cost_saving_pct"), 2),
                "failed": (errors or 0) - (fallback or 0) if errors is not None else None,
                "fallback": fallback,
                "declined": r.get("declined_summaries"),
                "rejected": r.get("rejected_summaries"),
                "reached": r.get("reached_threshold"),
                "l1": r.get("l1_rounds"),
                "l2": r.get("l2_rounds"),
            }
        )
    return rows


#: the index's text columns sent once per distinct value (a row holds the value's position)
_TABLED = ("id_transcript", "id_strategy", "transcript", "source", "file", "format", "strategy", "provenance")


def _encode(rows: list[dict[str, Any]]) -> tuple[list[str], dict[str, list[Any]], list[list[Any]]]:
    """``(keys, tables, rows)``: every row as a list in ``keys``' order, the :data:`_TABLED`
    columns as positions in ``tables[key]`` (a corpus repeats a file's path and names once per
    strategy: 2.5 times smaller for 5,460 runs); the run id is ``id_transcript/id_strategy``."""
    if not rows:
        return ["id"], {}, []
    wide = [
        {"id_transcript": r["id"].split("/")[0], "id_strategy": r["id"].split("/")[1]}
        | {k: v for k, v in r.items() if k != "id"}
        for r in rows
    ]
    keys = list(wide[0])
    tables: dict[str, list[Any]] = {k: [] for k in _TABLED}
    where: dict[str, dict[Any, int]] = {k: {} for k in _TABLED}
    out = []
    for r in wide:
        row = []
        for k in keys:
            v = r[k]
            if k in where:
                if v not in where[k]:
                    where[k][v] = len(tables[k])
                    tables[k].append(v)
                v = where[k][v]
            row.append(v)
        out.append(row)
    return keys, tables, out


def _round(v: Any, digits: int) -> Any:
    return None if v is None else round(float(v), digits)


def _ranges(indices: list[int]) -> list[int]:
    """``[start, count, start, count, ...]`` of runs of consecutive indices (the sent views are
    mostly stretches of the raw history)."""
    out: list[int] = []
    for i in indices:
        if out and out[-2] + out[-1] == i:
            out[-1] += 1
        else:
            out += [i, 1]
    return out


def _slim_event(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e.get(k) for k in ("phase", "level", "cutoff_index", "error") if e.get(k) is not None}


def _payload(
    run: dict[str, Any], *, base: str, siblings: list[dict[str, str]], limit: int, slim: bool
) -> dict[str, Any]:
    cut = cut_run(run, limit)
    return {
        **cut,
        "id": run_id(run["transcript"], run["strategy"]),
        "base": base,
        "siblings": siblings,
        "limit": limit,
        "calls": [
            {
                **{k: v for k, v in c.items() if k not in ("sent", "row", "events")},
                "sent": _ranges(c["sent"]),
                "row": {k: v for k, v in c["row"].items() if v is not None},
                "events": [_slim_event(e) for e in c["events"]] if slim else c["events"],
            }
            for c in cut["calls"]
        ],
    }


def _fit(
    run: dict[str, Any], *, base: str, siblings: list[dict[str, str]], limit_bytes: int
) -> tuple[bytes, int, bool]:
    """The run's data file (``ctxlabRun({...});``) within ``limit_bytes`` when it can be: the
    text limit used and whether it fits."""
    body = b""
    for slim in (False, True):
        for limit in TEXT_LIMITS:
            data = _payload(run, base=base, siblings=siblings, limit=limit, slim=slim)
            data["slim"] = slim
            body = f"ctxlabRun({json.dumps(data, ensure_ascii=False, default=str)});\n".encode()
            if len(body) <= limit_bytes:
                return body, limit, True
    return body, TEXT_LIMITS[-1], False


def _page(template: str, *, title: str, font_css: str, data: Any = None, index: str = "") -> str:
    text = (
        (_ASSETS / template)
        .read_text(encoding="utf-8")
        .replace("/*STYLE*/", font_css + "\n" + (_ASSETS / "inspector.css").read_text(encoding="utf-8"))
        .replace("/*SCRIPT*/", (_ASSETS / template.replace(".html", ".js")).read_text(encoding="utf-8"))
        .replace("<!--TITLE-->", _escape(title))
        .replace("<!--INDEX-->", _escape(index))
    )
    if data is not None:
        text = text.replace("/*DATA*/", _script_json(data))
    return text


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no HTML comment opener)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _targets(run_dir: Path, out: str | Path | None) -> tuple[Path, Path]:
    if out is None:
        return run_dir / INSPECTOR_FILE, run_dir / SITE_DIR
    target = Path(out)
    if target.suffix == ".html":
        return target, target.with_name(f"{target.stem}_{SITE_DIR}")
    return target / INSPECTOR_FILE, target / SITE_DIR


def write_site(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    data_bytes: int = DATA_BYTES,
    quiet: bool = False,
) -> Site:
    """Write the index page, the run page and every run's data file (module doc).

    Args:
        run_dir: a run folder with ``views/``.
        out: a folder for ``inspect.html`` and ``inspect/`` (default: ``run_dir``), or the index
            page's path (``*.html``; the run pages go to ``<stem>_inspect/`` beside it).
        data_bytes: the bound on one run's data file (default :data:`DATA_BYTES`).
        quiet: no ``ctxlab: warning:`` lines on stderr for unreadable views files, runs over the
            bound or a missing font.

    Raises:
        InspectorError: no such folder, no views (:class:`~ctxlab.analysis.inspector.RunFolder`).
    """
    folder = RunFolder(run_dir)
    index_path, site_dir = _targets(folder.root, out)
    site = Site(index=index_path, folder=site_dir)
    data_dir = site_dir / "data"
    if data_dir.is_dir():
        shutil.rmtree(data_dir)  # no stale run survives a new show
    data_dir.mkdir(parents=True)
    heads: list[tuple[Path, Any]] = []
    for path in folder.paths:
        try:
            heads.append((path, read_views_head(path)))
        except ViewsError as exc:
            site.problems.append(str(exc))
    siblings: dict[str, list[dict[str, str]]] = {}
    for _, v in heads:
        siblings.setdefault(v.transcript, []).append(
            {"strategy": v.strategy, "id": run_id(v.transcript, v.strategy)}
        )
    base = Path(os.path.relpath(folder.root, site_dir)).as_posix()
    chars: set[str] = set()
    unreadable: set[str] = set()
    for path, head in heads:
        try:
            v = read_views(path)
        except ViewsError as exc:
            site.problems.append(str(exc))
            unreadable.add(run_id(head.transcript, head.strategy))
            continue
        run = folder.record(v)
        rid = run_id(v.transcript, v.strategy)
        body, limit, fits = _fit(run, base=base, siblings=siblings[v.transcript], limit_bytes=data_bytes)
        target = data_dir / f"{rid}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        site.sizes[target] = len(body)
        site.runs += 1
        chars |= cjk_characters(body.decode("utf-8"))
        if limit != MESSAGE_CHARS:
            site.cut[rid] = limit
        if not fits:
            site.over.append(rid)
    rows = [
        r
        for r in index_rows(folder, [(v.transcript, v.strategy, v.source, v.format) for _, v in heads])
        if r["id"] not in unreadable
    ]
    for row in rows:
        chars |= cjk_characters(row["transcript"] + row["file"])
    font_css, index_font = "", ""
    try:
        face = cjk_font_face(chars, site_dir / "fonts")
    except FileNotFoundError as exc:
        face = None
        site.problems.append(str(exc))
    if face is not None:
        site.font = face.path
        site.sizes[face.path] = face.path.stat().st_size
        font_css = face.css(f"fonts/{face.path.name}")
        index_font = face.css(f"{site_dir.name}/fonts/{face.path.name}")
    title = folder.root.resolve().name
    run_page = site_dir / RUN_PAGE
    back = Path(os.path.relpath(index_path, site_dir)).as_posix()
    run_page.write_text(
        _page(RUN_PAGE, title=f"ctxlab run: {title}", font_css=font_css, index=back), encoding="utf-8"
    )
    site.sizes[run_page] = run_page.stat().st_size
    keys, table, encoded = _encode(rows)
    index = {
        "title": title,
        "command": folder.meta.get("command"),
        "settings": folder.meta.get("settings") or {},
        "site": site_dir.name,
        "columns": [list(c) for c in INDEX_COLUMNS],
        "keys": keys,
        "tables": table,
        "runs": encoded,
        "problems": site.problems,
        "cut": len(site.cut),
        "limit_bytes": data_bytes,
    }
    index_path.parent.mkdir(parents=True, exist_ok=True)
    index_path.write_text(
        _page("index.html", title=f"ctxlab inspector: {title}", font_css=index_font, data=index), "utf-8"
    )
    site.sizes[index_path] = index_path.stat().st_size
    if not quiet:
        for problem in site.problems:
            print(f"ctxlab: warning: {problem}", file=sys.stderr)
        for rid in site.over:
            print(
                f"ctxlab: warning: {rid}: data over {data_bytes:,} bytes even with 200-character texts",
                file=sys.stderr,
            )
    return site


def write_inspector(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """:func:`write_site` (problems printed as ``ctxlab: warning:`` lines) and return the index page.

    Raises:
        InspectorError: see :class:`~ctxlab.analysis.inspector.RunFolder`.
    """
    return write_site(run_dir, out).index
