"""The explorer widget (``ctxlab.analysis.widgets``): updates in place, shows errors, no display needed.

The controls are changed programmatically, as a user moving a slider would; every change
replays the run (``ctxlab.replay.engine``) and redraws the one figure.  The run is the longest real
mini-swe-agent transcript of the shared set, cut to its first 60 model calls, with a 32 K-token
entry threshold so that L2 fires inside the slice.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from ipywidgets import HTML, Image, Widget

from ctxlab import CompressionSettings
from ctxlab.analysis.widgets import BudgetExplorer, explore
from ctxlab.core.hookspecs import hookimpl
from ctxlab.replay import make_lab_manager
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.locate import LONG_MINI_SWE_AGENT_RUN, transcript_path

LIMIT = 60


class BrokenStrategy:
    """Registers a strategy whose factory returns something that is not a list of plugins."""

    @hookimpl
    def ctxlab_register_strategies(self, register):
        register("broken", lambda settings: 42, "always fails")


@pytest.fixture(scope="module")
def run():
    return load_transcripts(transcript_path(LONG_MINI_SWE_AGENT_RUN))[0]


@pytest.fixture()
def ex(run) -> BudgetExplorer:
    pm = make_lab_manager([BrokenStrategy()])
    return explore(
        [run],
        ["ars", "broken"],
        settings=CompressionSettings(summary_threshold=32),
        pm=pm,
        limit_calls=LIMIT,
    )


def lines(ex: BudgetExplorer) -> dict[str, list[float]]:
    """The budget panel's lines by label (sent, raw, T, T2)."""
    bottom = ex.fig.axes[1]
    return {line.get_label(): [float(v) for v in line.get_ydata()] for line in bottom.lines}


def line(ex: BudgetExplorer, prefix: str) -> list[float]:
    found = [v for k, v in lines(ex).items() if k.startswith(prefix)]
    assert len(found) == 1, f"no single line labelled {prefix!r}: {list(lines(ex))}"
    return found[0]


def test_explore_returns_a_widget_with_chart_table_and_message(ex: BudgetExplorer) -> None:
    assert isinstance(ex, Widget)
    assert ex.chart in ex.children and ex.table in ex.children and ex.message in ex.children
    assert isinstance(ex.chart, Image) and ex.chart.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert isinstance(ex.table, HTML) and "<table" in ex.table.value
    assert ex.error is None and ex.message.value == ""
    assert ex.updates == 1
    assert ex.calls is not None and ex.calls.height == LIMIT
    assert len(ex.fig.axes) == 2
    assert [c.description for c in ex.controls[2:6]] == [
        "summary_threshold (K tokens)",
        "summary_keep_messages",
        "summary_tool_result_token_limit (tokens)",
        "summary_l2_trigger_ratio (T2/T)",
    ]
    assert list(ex.language.options) == ["auto", "zh", "en"] and ex.language.value == "auto"


def test_ratio_slider_moves_the_t2_line_and_changes_the_table(ex: BudgetExplorer) -> None:
    fig, axes = ex.fig, list(ex.fig.axes)
    t2_before = line(ex, "T2")
    table_before = ex.table.value
    png_before = ex.chart.value
    figures_before = plt.get_fignums()

    ex.ratio.value = 0.2

    assert ex.error is None, ex.error
    assert ex.updates == 2
    assert line(ex, "T2") != t2_before
    assert line(ex, "T2")[0] == pytest.approx(32 * 1024 * 0.2)
    assert ex.table.value != table_before
    assert "T2 = 6,554 tokens" in ex.table.value
    assert ex.chart.value != png_before
    # redrawn in place: same figure, same axes, no new pyplot figure
    assert ex.fig is fig and list(ex.fig.axes) == axes
    assert plt.get_fignums() == figures_before


def test_threshold_slider_changes_the_sent_line(ex: BudgetExplorer) -> None:
    sent_before = line(ex, "sent")
    assert line(ex, "raw") != sent_before  # L2 fired in the slice at 32 K
    ex.threshold.value = 150
    sent_after = line(ex, "sent")
    assert sent_after != sent_before
    assert sent_after == line(ex, "raw")  # T = 150 K is never reached: nothing is compressed
    assert ex.calls is not None and set(ex.calls["level"].to_list()) == {"none"}


def test_keep_and_tool_limit_sliders_replay(ex: BudgetExplorer) -> None:
    before = ex.table.value
    ex.keep.value = 30
    after_keep = ex.table.value
    assert after_keep != before
    ex.tool_limit.value = 1000
    assert ex.table.value != after_keep
    assert ex.settings().summary_tool_result_token_limit == 1000
    assert ex.updates == 3


def test_language_dropdown_switches_the_summary_language(ex: BudgetExplorer) -> None:
    # auto: the sample's user writes English, so the summary is English, labels included
    assert ex.result.summaries and ex.result.summaries[0]["text"].startswith("[Context summary]")
    assert "Files touched:" in ex.result.summaries[0]["text"]
    ex.language.value = "zh"
    assert ex.error is None
    text = ex.result.summaries[0]["text"]
    assert text.startswith("[上下文摘要]") and "涉及的文件：" in text and "Files touched" not in text


def test_invalid_setting_shows_the_error_and_keeps_the_chart(ex: BudgetExplorer) -> None:
    png, table, sent = ex.chart.value, ex.table.value, line(ex, "sent")

    ex.threshold.value = 0  # summary_threshold must be positive

    assert ex.error is not None and "summary_threshold" in ex.error
    assert "error" in ex.message.value and "summary_threshold=0.0 is invalid" in ex.message.value
    assert ex.chart.value == png and ex.table.value == table and line(ex, "sent") == sent
    assert ex.update() is False

    ex.threshold.value = 40  # a valid value clears the error
    assert ex.error is None and ex.message.value == ""
    assert line(ex, "T =")[0] == pytest.approx(40 * 1024)


def test_zero_ratio_is_an_error_and_a_high_ratio_a_warning(ex: BudgetExplorer) -> None:
    ex.ratio.value = 0.0
    assert "summary_l2_trigger_ratio=0.0 is invalid" in ex.message.value
    ex.ratio.value = 1.3
    assert ex.error is None
    assert "warning" in ex.message.value and "outside the recommended range" in ex.message.value


def test_a_failing_strategy_shows_its_error(ex: BudgetExplorer) -> None:
    ex.strategy.value = "broken"
    assert ex.error is not None and "broken" in ex.error and "TypeError" in ex.error
    assert "TypeError" in ex.message.value
    ex.strategy.value = "ars"
    assert ex.error is None


def test_replays_are_cached(ex: BudgetExplorer) -> None:
    first = ex.result
    ex.ratio.value = 0.3
    ex.ratio.value = 0.4
    assert ex.result is first  # back to the first settings: the cached replay


def test_unknown_strategy_is_refused(run) -> None:
    with pytest.raises(KeyError, match="unknown strategy 'nope'"):
        explore([run], ["nope"], auto_update=False)


def test_default_transcripts_include_the_sample_and_the_long_run() -> None:
    ex = explore(strategies=["ars"], auto_update=False)
    labels = list(ex.transcript.options)
    assert labels[0] == "sample_run.json"
    assert any("pytest-dev__pytest-6197" in label for label in labels)
    assert ex.updates == 0 and ex.calls is None
