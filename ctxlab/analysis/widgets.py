"""An ipywidgets explorer of one run's token budget under a strategy and its settings.

::

    from ctxlab.analysis.widgets import explore
    explore()                      # the bundled sample and a long real run, every strategy

:func:`explore` returns a :class:`BudgetExplorer`, itself a widget (a ``VBox``): pick a
transcript and a strategy, move the sliders of the settings (``summary_threshold``,
``summary_keep_messages``, ``summary_tool_result_token_limit``, ``summary_l2_trigger_ratio``)
and the summary language (auto/zh/en), and the run is replayed (:func:`ctxlab.replay.engine.replay`) and
redrawn **in place**:

* one matplotlib figure is created once (:func:`ctxlab.analysis.plotting.budget_figure`); each update clears
  its axes, redraws them and calls ``fig.canvas.draw_idle()``.  With the ``ipympl`` backend
  (``%matplotlib widget``) the figure's canvas is the chart widget; otherwise the chart is an
  ``ipywidgets.Image`` holding the same figure rendered as PNG;
* the tables (the run's totals and its compression rounds) are polars frames rendered as HTML in
  an ``HTML`` widget;
* an error of an update (an invalid setting, a strategy that fails) is shown in the ``message``
  widget, in red, and the previous chart and tables stay; warnings (a trigger ratio outside the
  recommended 0.1–1.0) are shown there in amber.

Displayed, the explorer's output carries the chart as an ``image/png`` too (next to the widget
view): JupyterLab draws the live widget, and a front-end without the widget (a static render of
the saved notebook, an untrusted notebook, nbconvert) still shows the last chart.

Replays are cached per (transcript, strategy, settings), so going back to a previous position
is instant.  Everything is testable without a display: :meth:`BudgetExplorer.update` runs one
update synchronously, and the controls can be changed programmatically (``ex.ratio.value = 0.2``).
"""

from __future__ import annotations

import base64
import html
import io
import os
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets  # type: ignore[import-untyped,unused-ignore]
import polars as pl

from ctxlab.analysis.plotting import budget_figure
from ctxlab.analysis.report import rounds_frame, summary_frame
from ctxlab.core.prompts import SUMMARY_LANGUAGES
from ctxlab.core.settings import CompressionSettings

__all__ = ["BudgetExplorer", "default_transcripts", "explore"]

#: replays kept in the cache
CACHE_SIZE = 16


def default_transcripts() -> list[Any]:
    """The bundled sample, plus the long real mini-swe-agent run when the shared data is there."""
    from ctxlab.transcripts import load_transcripts
    from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

    out = list(load_transcripts(SAMPLE_TRANSCRIPT))
    try:
        from ctxlab.transcripts.locate import LONG_MINI_SWE_AGENT_RUN, transcript_path

        out += load_transcripts(transcript_path(LONG_MINI_SWE_AGENT_RUN))
    except FileNotFoundError:
        pass
    return out


def _as_transcripts(items: Any) -> dict[str, Any]:
    """``{label: Transcript}`` from transcripts, paths (files holding one or more runs) or a
    mapping of labels to transcripts."""
    from ctxlab.replay import transcript_labels
    from ctxlab.transcripts import Transcript, load_transcripts

    if isinstance(items, Mapping):
        return dict(items)
    if isinstance(items, (str, os.PathLike, Transcript)):
        items = [items]
    loaded: list[Transcript] = []
    for item in items:
        loaded.extend([item] if isinstance(item, Transcript) else load_transcripts(Path(item)))
    if not loaded:
        raise ValueError("explore() needs at least one transcript")
    return dict(zip(transcript_labels(loaded), loaded, strict=True))


def _interactive_canvas() -> bool:
    import matplotlib

    backend = matplotlib.get_backend().lower()
    return "ipympl" in backend or backend == "widget"


class BudgetExplorer(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no types
    """The explorer widget (see the module docstring).

    Args:
        transcripts: transcripts, transcript files, or ``{label: Transcript}``; default:
            :func:`default_transcripts`.
        strategies: strategy names; default: every registered strategy (``ars`` first).
        settings: the starting settings (default: the ARS defaults).
        pm: the plugin manager strategies are looked up in (default: with entry points).
        limit_calls: replay at most this many model calls of each transcript.
        auto_update: replay and draw once at construction (``False`` leaves the chart empty
            until :meth:`update` is called).

    Attributes:
        transcript, strategy, threshold, keep, tool_limit, ratio, language: the controls.
        fig: the one matplotlib figure; ``chart``: the widget showing it.
        table: the HTML widget with the totals and the compression rounds.
        message: the HTML widget showing the last error or warnings (empty when all is well).
        calls: the per-call frame of the run on show (``None`` before the first update).
        error: the text of the last error, or ``None``.
        updates: how many updates drew a new chart.
    """

    def __init__(
        self,
        transcripts: Any = None,
        strategies: Sequence[str] | None = None,
        *,
        settings: CompressionSettings | None = None,
        pm: Any = None,
        limit_calls: int | None = None,
        auto_update: bool = True,
    ) -> None:
        from ctxlab.replay import make_lab_manager
        from ctxlab.replay import strategies as registered

        self._pm = pm if pm is not None else make_lab_manager(load_entrypoints=True)
        self._transcripts = _as_transcripts(transcripts if transcripts is not None else default_transcripts())
        known = list(registered(self._pm))
        names = list(strategies) if strategies is not None else sorted(known, key=lambda n: (n != "ars", n))
        unknown = [n for n in names if n not in known]
        if unknown:
            raise KeyError(f"unknown strategy {unknown[0]!r}; known: {', '.join(sorted(known))}")
        s = settings or CompressionSettings()
        self._limit_calls = limit_calls
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._files = tempfile.TemporaryDirectory(prefix="ctxlab-explore-")
        self.calls: pl.DataFrame | None = None
        self.result: Any = None
        self.error: str | None = None
        self.updates = 0

        style = {"description_width": "initial"}
        wide = widgets.Layout(width="460px")
        self.transcript = widgets.Dropdown(
            options=list(self._transcripts), description="transcript", style=style, layout=wide
        )
        self.strategy = widgets.Dropdown(options=names, description="strategy", style=style)
        self.threshold = widgets.FloatSlider(
            value=float(s.summary_threshold), min=0.0, max=200.0, step=1.0,
            description="summary_threshold (K tokens)", style=style, layout=wide,
            continuous_update=False, readout_format=".0f",
        )  # fmt: skip
        self.keep = widgets.IntSlider(
            value=s.summary_keep_messages, min=0, max=60, step=1,
            description="summary_keep_messages", style=style, layout=wide, continuous_update=False,
        )  # fmt: skip
        self.tool_limit = widgets.IntSlider(
            value=s.summary_tool_result_token_limit, min=0, max=4000, step=50,
            description="summary_tool_result_token_limit (tokens)", style=style, layout=wide,
            continuous_update=False,
        )  # fmt: skip
        self.ratio = widgets.FloatSlider(
            value=float(s.summary_l2_trigger_ratio), min=0.0, max=1.5, step=0.05,
            description="summary_l2_trigger_ratio (T2/T)", style=style, layout=wide,
            continuous_update=False, readout_format=".2f",
        )  # fmt: skip
        self.summary_prompt = s.summary_prompt  # a custom prompt is kept; the language picks the rest
        self.language = widgets.Dropdown(
            options=list(SUMMARY_LANGUAGES), value=s.summary_language, description="summary_language"
        )
        self.message = widgets.HTML(value="")
        self.table = widgets.HTML(value="")

        if _interactive_canvas():  # %matplotlib widget: the canvas is a live widget
            import matplotlib.pyplot as plt

            with plt.ioff():
                self.fig = plt.figure(figsize=(10, 7.6), layout="constrained")
            self.chart: widgets.Widget = self.fig.canvas
        else:
            from matplotlib.figure import Figure

            self.fig = Figure(figsize=(10, 7.6), dpi=100, layout="constrained")
            self.chart = widgets.Image(format="png", layout=widgets.Layout(width="100%", max_width="1000px"))

        controls = widgets.VBox(
            [
                widgets.HBox([self.transcript, self.strategy, self.language]),
                widgets.HBox([self.threshold, self.keep]),
                widgets.HBox([self.tool_limit, self.ratio]),
            ]
        )
        super().__init__([controls, self.message, self.chart, self.table])
        for control in self.controls:
            control.observe(self._on_change, names="value")
        if auto_update:
            self.update()

    # --- the controls ---------------------------------------------------------------------------

    @property
    def controls(self) -> list[widgets.ValueWidget]:
        """The widgets whose change triggers an update."""
        return [
            self.transcript,
            self.strategy,
            self.threshold,
            self.keep,
            self.tool_limit,
            self.ratio,
            self.language,
        ]

    def settings(self) -> CompressionSettings:
        """The settings the controls describe (validated).

        Raises:
            SettingsError: a value is invalid (e.g. a threshold of 0).
        """
        return CompressionSettings(
            summary_threshold=self.threshold.value,
            summary_keep_messages=self.keep.value,
            summary_prompt=self.summary_prompt,
            summary_language=self.language.value,
            summary_tool_result_token_limit=self.tool_limit.value,
            summary_l2_trigger_ratio=round(self.ratio.value, 4),
        )

    def _on_change(self, change: Mapping[str, Any]) -> None:
        self.update()

    def chart_png(self) -> bytes | None:
        """The chart on show as PNG bytes (90 dpi), or ``None`` before the first update."""
        if self.updates == 0:
            return None
        if isinstance(self.chart, widgets.Image) and self.chart.value:
            return bytes(self.chart.value)
        buf = io.BytesIO()
        self.fig.savefig(buf, format="png", dpi=90)
        return buf.getvalue()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget view plus the current chart as ``image/png`` (the static fallback)."""
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        png = self.chart_png()
        if data is not None and png:
            data["image/png"] = base64.b64encode(png).decode("ascii")
        return data

    # --- one update -----------------------------------------------------------------------------

    def update(self) -> bool:
        """Replay the chosen run with the chosen settings and redraw the chart and tables.

        Never raises: an error is shown in :attr:`message` (and kept in :attr:`error`), and the
        previous chart and tables stay.

        Returns:
            ``True`` when the chart was redrawn, ``False`` after an error.
        """
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                settings = self.settings()
                result = self._replay(self.transcript.value, self.strategy.value, settings)
            calls = result.frame()
            if calls.is_empty():
                raise ValueError(f"{self.transcript.value} has no model call to replay")
            self._draw(calls, settings)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self.message.value = (
                '<div style="color:#b00020;white-space:pre-wrap"><b>error</b>: '
                f"{html.escape(self.error)}<br>(the chart and tables still show the previous run)</div>"
            )
            return False
        self.error = None
        self.result, self.calls = result, calls
        notes = sorted({str(w.message) for w in caught})
        self.message.value = (
            '<div style="color:#8a6d00;white-space:pre-wrap"><b>warning</b>: '
            + "<br>".join(html.escape(n) for n in notes)
            + "</div>"
            if notes
            else ""
        )
        self.updates += 1
        return True

    def _replay(self, label: str, strategy: str, settings: CompressionSettings) -> Any:
        from ctxlab.replay import replay

        key = (label, strategy, tuple(sorted(settings.to_dict().items())), self._limit_calls)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        result = replay(
            self._transcripts[label],
            strategy,
            settings=settings,
            pm=self._pm,
            out_dir=self._files.name,
            limit_calls=self._limit_calls,
            label=label,
        )
        self._cache[key] = result
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return result

    def _draw(self, calls: pl.DataFrame, settings: CompressionSettings) -> None:
        budget_figure(calls, fig=self.fig)
        self.fig.canvas.draw_idle()
        if isinstance(self.chart, widgets.Image):
            buf = io.BytesIO()
            self.fig.savefig(buf, format="png", dpi=90)
            self.chart.value = buf.getvalue()
        self.table.value = _tables_html(calls, settings)


def _tables_html(calls: pl.DataFrame, settings: CompressionSettings) -> str:
    totals = summary_frame(calls).select(
        "calls",
        "raw_tokens_total",
        "sent_tokens_total",
        pl.col("saving_pct").round(1),
        "l1_rounds",
        "l2_rounds",
        pl.lit(int(calls["offloaded"].sum() or 0)).alias("offloads"),
        "summarizer_calls",
        "summarizer_input_tokens",
        "summarizer_output_tokens",
        "max_view_tokens",
    )
    rounds = rounds_frame(calls).drop("transcript", "strategy")
    head = (
        f"<p>T = {settings.entry_threshold_tokens:,} tokens, T2 = {settings.l2_threshold_tokens:,.0f} tokens; "
        f"compression rounds: {rounds.height} (first 12 below)</p>"
    )
    return (
        "<div style='font-size:90%'>" + totals._repr_html_() + head + rounds.head(12)._repr_html_() + "</div>"
    )


def explore(
    transcripts: Any = None,
    strategies: Iterable[str] | None = None,
    **kwargs: Any,
) -> BudgetExplorer:
    """An interactive explorer of one run's token budget (see the module docstring).

    Args:
        transcripts: transcripts, transcript files, or ``{label: Transcript}``; default: the
            bundled sample and the long mini-swe-agent run of the shared set.
        strategies: strategy names; default: every registered strategy.
        **kwargs: ``settings``, ``pm``, ``limit_calls``, ``auto_update`` of
            :class:`BudgetExplorer`.

    Returns:
        The widget; display it as the last expression of a cell.
    """
    return BudgetExplorer(transcripts, list(strategies) if strategies is not None else None, **kwargs)
