"""The call inspector in a notebook: an ipywidgets view of one call's raw and sent views.

:func:`inspect_calls` takes a :class:`~ctxlab.replay.ReplayResult` made with
``out_dir=...`` and ``write_views=True`` (or the run folder itself) and returns a
:class:`CallInspector` widget: pick a transcript, a strategy, a strategy to compare with, and move
the call slider; the raw view (what an uncompressed agent would send) and the sent view appear
side by side, each message with its mark (kept, offloaded, truncated, summarized, summary,
observation, changed) and tokens, above the tokens per part, the call's events and the summary
in effect.  It reads what ``ctxlab show`` reads (:func:`ctxlab.analysis.inspector.inspector_data`),
so the page and the widget show the same data and the same marks.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from ctxlab.analysis.inspector import InspectorError, inspector_data, raw_view_marks, sent_view_marks
from ctxlab.replay.result import ReplayResult
from ctxlab.replay.views import VIEWS_DIR

__all__ = ["CallInspector", "inspect_calls", "run_folder_of"]

#: characters of one message shown in the widget (the page ``ctxlab show`` writes shows more)
WIDGET_CHARS = 1500
#: colours of the marks (left border of a message box)
MARK_COLOURS = {
    "kept": "#3a9d5d",
    "offloaded": "#e08a00",
    "truncated": "#c0392b",
    "summarized": "#7b5cd6",
    "summary": "#5b2fd0",
    "observation": "#1c7ed6",
    "changed": "#868e96",
    "dropped": "#868e96",
}


def run_folder_of(run: ReplayResult | str | Path) -> Path:
    """The run folder holding ``views/`` of a result (the nearest folder above its ``files_dir``
    with a ``views/``), or the folder given.

    Raises:
        InspectorError: a result replayed without ``out_dir`` and ``write_views=True``.
    """
    if not isinstance(run, ReplayResult):
        return Path(run)
    start = run.files_dir
    for folder in [start, *start.parents] if start is not None else []:
        if (folder / VIEWS_DIR).is_dir():
            return folder
    raise InspectorError(
        "this result has no views: replay with out_dir=... and write_views=True "
        "(ctxlab.replay.replay_many / replay) to inspect its calls"
    )


def _message_html(m: dict[str, Any], mark: str) -> str:
    text = (
        m["text"]
        if len(m["text"]) <= WIDGET_CHARS
        else m["text"][:WIDGET_CHARS] + f" [... {len(m['text']) - WIDGET_CHARS} more]"
    )
    calls = "".join(
        f"<div style='color:#364fc7;font-family:monospace;font-size:0.8em'>→ {html.escape(c['name'] or '')}"
        f"({html.escape(c['args'][:300])})</div>"
        for c in m.get("calls") or []
    )
    path = f" · <code>{html.escape(m['path'])}</code>" if m.get("path") else ""
    return (
        f"<div class='ctxlab-msg' data-mark='{mark}' style='border:1px solid #d5dae0;border-left:5px solid "
        f"{MARK_COLOURS.get(mark, '#9aa5b1')};margin:0 0 4px;padding:2px 6px;background:#fff'>"
        f"<div style='font-size:0.8em'><b>{html.escape(m['role'])}{' ' + html.escape(m['name']) if m.get('name') else ''}"
        f"</b> · <span>{mark}</span> · {m['tokens']:,} tokens{path}</div>"
        f"<pre style='white-space:pre-wrap;margin:2px 0;font-size:0.75em;max-height:10em;overflow:auto'>"
        f"{html.escape(text)}</pre>{calls}</div>"
    )


def _column(title: str, body: str) -> str:
    return (
        f"<div style='flex:1 1 0;min-width:0'><h4 style='margin:4px 0'>{html.escape(title)}</h4>{body}</div>"
    )


class CallInspector(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no types
    """Controls (transcript, strategy, compare with, call slider) above the views of one call.

    Args:
        run_dir: a run folder with ``views/`` (see :func:`run_folder_of`).
        result: the result the views came from (its rows and summaries; ``None``: the folder's
            ``calls.parquet`` and ``summaries.jsonl``).

    Attributes:
        transcript, strategy, compare, call: the controls (``compare`` "(none)" shows no third
            column; ``call`` ranges over the run's call indices).
        view: the HTML widget with the views, the tokens per part, the events and the summary.
        data: :func:`~ctxlab.analysis.inspector.inspector_data` of the folder.

    Raises:
        InspectorError: the folder has no views.
    """

    def __init__(self, run_dir: str | Path, result: ReplayResult | None = None) -> None:
        self.data = inspector_data(run_dir, result)
        self._runs = {(r["transcript"], r["strategy"]): r for r in self.data["runs"]}
        transcripts = list(dict.fromkeys(r["transcript"] for r in self.data["runs"]))
        self.transcript = widgets.Dropdown(options=transcripts, description="transcript")
        self.strategy = widgets.Dropdown(description="strategy")
        self.compare = widgets.Dropdown(description="compare with")
        self.call = widgets.IntSlider(description="call", min=0, continuous_update=False)
        self.view = widgets.HTML()
        self._quiet = False
        self._strategies()
        super().__init__([widgets.HBox([self.transcript, self.strategy, self.compare]), self.call, self.view])
        self.transcript.observe(self._on_transcript, names="value")
        for control in (self.strategy, self.compare, self.call):
            control.observe(self._on_change, names="value")
        self.render()

    def _on_transcript(self, change: Any) -> None:
        self._strategies()
        self.render()

    def _on_change(self, change: Any) -> None:
        if not self._quiet:
            self.render()

    def _strategies(self) -> None:
        """The strategy, compare and call controls for the selected transcript (no redraw)."""
        names = [s for (t, s) in self._runs if t == self.transcript.value]
        self._quiet = True
        try:
            self.strategy.options = names
            self.strategy.value = names[0]
            self.compare.options = ["(none)", *names]
            self.compare.value = "(none)"
            calls = self._runs[(self.transcript.value, names[0])]["calls"]
            self.call.max = max(c["call_index"] for c in calls) if calls else 0
        finally:
            self._quiet = False

    def run(self) -> dict[str, Any]:
        """The run on show (one run of :attr:`data`)."""
        run: dict[str, Any] = self._runs[(self.transcript.value, self.strategy.value)]
        return run

    def record(self, strategy: str | None = None) -> dict[str, Any] | None:
        """The call on show of ``strategy`` (default: the selected one); ``None``: no such call."""
        run = self._runs.get((self.transcript.value, strategy or self.strategy.value))
        if run is None:
            return None
        return next((c for c in run["calls"] if c["call_index"] == self.call.value), None)

    def render(self) -> None:
        """Redraw :attr:`view` for the current controls."""
        run, rec = self.run(), self.record()
        if rec is None:
            self.view.value = f"<i>{html.escape(run['strategy'])} has no call {self.call.value}</i>"
            return
        messages = run["messages"]
        system = [messages[rec["system"]]] if rec.get("system") is not None else []
        raw = "".join(_message_html(m, "kept") for m in system) + "".join(
            _message_html(messages[i], mark)
            for i, mark in zip(run["raw"][: rec["raw_count"]], raw_view_marks(run, rec), strict=True)
        )
        row = rec["row"]
        columns = [
            _column(f"raw view: {row.get('raw_tokens', 0):,} tokens, {rec['raw_count']} messages", raw),
            _column(
                f"sent view ({run['strategy']}): {row.get('view_tokens', 0):,} tokens, level {row.get('level')}",
                self._sent(run, rec),
            ),
        ]
        if self.compare.value not in (None, "(none)"):
            other, orec = self._runs[(run["transcript"], self.compare.value)], self.record(self.compare.value)
            body = self._sent(other, orec) if orec is not None else "<i>no such call</i>"
            columns.append(_column(f"sent view ({self.compare.value})", body))
        parts = " · ".join(
            f"{name} {row.get(f'view_{name}_tokens') or 0:,}"
            for name in ("system", "user", "assistant", "tool", "summary")
        )
        in_effect = [s for s in run["summaries"] if s["call_index"] <= self.call.value]
        summary = (
            f"<details><summary>summary in effect (call {in_effect[-1]['call_index']})</summary>"
            f"<pre class='ctxlab-summary' style='white-space:pre-wrap;font-size:0.75em'>"
            f"{html.escape(in_effect[-1]['text'])}</pre></details>"
            if in_effect
            else "<i>no summary yet at this call</i>"
        )
        events = html.escape(json.dumps(rec["events"], indent=1, default=str)) if rec["events"] else "(none)"
        self.view.value = (
            f"<div class='ctxlab-call-inspector'><div>sent tokens per part: {parts}</div>{summary}"
            f"<div style='display:flex;gap:8px;align-items:flex-start'>{''.join(columns)}</div>"
            f"<details><summary>events of this call</summary><pre style='font-size:0.75em'>{events}</pre></details></div>"
        )

    @staticmethod
    def _sent(run: dict[str, Any], rec: dict[str, Any]) -> str:
        messages = run["messages"]
        system = [messages[rec["system"]]] if rec.get("system") is not None else []
        return "".join(_message_html(m, "kept") for m in system) + "".join(
            _message_html(messages[i], mark)
            for i, mark in zip(rec["sent"], sent_view_marks(run, rec), strict=True)
        )


def inspect_calls(run: ReplayResult | str | Path, *, call: int | None = None) -> CallInspector:
    """A :class:`CallInspector` over a result replayed with ``out_dir=`` and ``write_views=True``,
    or over a run folder (``ctxlab replay``/``compare`` output); ``call``: the call to show first.

    Raises:
        InspectorError: no views to show (see :func:`run_folder_of`).
    """
    inspector = CallInspector(run_folder_of(run), run if isinstance(run, ReplayResult) else None)
    if call is not None:
        inspector.call.value = call
    return inspector
