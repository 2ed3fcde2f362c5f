"""The frontier of strategies (issue 23): cost saving against identifier recall, per run and pooled,
for several price rows — values equal the column registry's, and the figure draws them."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ctxlab import CompressionSettings
from ctxlab.analysis.frontier import FRONTIER_COLUMNS, frontier_frame, frontier_table
from ctxlab.analysis.plotting import plot_frontier, write_frontier_figure
from ctxlab.replay import replay_many
from ctxlab.replay.table import strategy_totals, summary_frame

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "ctxlab" / "data" / "sample_run.json"
MINI = ROOT.parent / "shared" / "transcripts" / "raw" / "mini-swe-agent"
ROWS = ("anthropic:claude-sonnet-4-5", "openai:gpt-4.1")


@pytest.fixture(scope="module")
def frames() -> dict[str, pl.DataFrame]:
    public = sorted(MINI.rglob("*.traj.json"))[:3]
    assert len(public) == 3, f"the shared mini-swe-agent runs are missing under {MINI}"
    runs = [SAMPLE, *public]
    out = {}
    for row in ROWS:
        result = replay_many(
            runs,
            ["ars", "ars-extractive", "masking"],
            settings=CompressionSettings(summary_threshold=16),
            price_model=row,
        )
        out[row] = result.frame()
    return out


def test_frontier_values_are_the_registry_columns(frames):
    frame = frontier_frame(frames)
    assert frame.columns == list(FRONTIER_COLUMNS)
    for row, calls in frames.items():
        part = frame.filter(pl.col("price_row") == row)
        runs = summary_frame(calls)
        got = part.filter(~pl.col("pooled")).select(
            "strategy", "transcript", "cost_saving_pct", "needed_recall"
        )
        assert got.equals(runs.select("strategy", "transcript", "cost_saving_pct", "needed_recall"))
        pooled = part.filter(pl.col("pooled")).select("strategy", "cost_saving_pct", "needed_recall")
        assert pooled.equals(strategy_totals(calls).select("strategy", "cost_saving_pct", "needed_recall"))
    # the prices change the saving, not what the summaries carried
    table = frontier_table(frames)
    assert table["strategy"].to_list() == ["ars", "ars-extractive", "masking"]
    a, o = (f"cost saving % ({r})" for r in ROWS)
    assert table[a].to_list() != table[o].to_list()
    assert (
        table[f"identifier recall ({ROWS[0]})"].to_list() == table[f"identifier recall ({ROWS[1]})"].to_list()
    )
    masking = table.filter(pl.col("strategy") == "masking")
    assert masking[f"identifier recall ({ROWS[0]})"][0] is None  # no summary, no recall
    ars, ext = (
        table.filter(pl.col("strategy") == s)[f"identifier recall ({ROWS[0]})"][0]
        for s in ("ars", "ars-extractive")
    )
    assert ext > ars


def test_frontier_figure_has_a_panel_per_price_row_and_draws_every_value(frames, tmp_path):
    from matplotlib.collections import LineCollection

    fig = plot_frontier(frames)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == list(ROWS)
    frame = frontier_frame(frames)
    for ax, row in zip(axes, ROWS, strict=True):
        drawn = sorted(
            round(float(y), 6)
            for coll in ax.collections
            if not isinstance(coll, LineCollection)  # the error bars are checked below
            for _x, y in coll.get_offsets()
            if coll.get_offsets().size
        )
        part = frame.filter((pl.col("price_row") == row) & pl.col("cost_saving_pct").is_not_null())
        assert drawn == sorted(round(v, 6) for v in part["cost_saving_pct"].to_list())
    [legend] = fig.legends  # one for the panels, under them
    assert [t.get_text() for t in legend.get_texts()] == ["ars", "ars-extractive", "masking"]
    path = write_frontier_figure(frames[ROWS[0]], tmp_path, price_key=ROWS[0])
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_frontier_refuses_what_it_cannot_draw(frames):
    with pytest.raises(ValueError, match="calls_by_price is empty"):
        frontier_frame({})
    with pytest.raises(ValueError, match=r"price row 'x:y' lacks the columns \['cost_usd'"):
        frontier_frame({"x:y": frames[ROWS[0]].drop("cost_usd")})
    with pytest.raises(TypeError, match="titel"):
        plot_frontier(frames, titel="typo")


def test_frontier_tells_apart_more_strategies_than_colours(frames):
    from ctxlab.analysis.plotting.style import STRATEGY_COLORS

    calls = frames[ROWS[0]]
    many = pl.concat(
        [calls.with_columns(pl.col("strategy") + f"-{i}") for i in range(4)]  # 12 strategies
    )
    assert many["strategy"].n_unique() > len(STRATEGY_COLORS)
    fig = plot_frontier({ROWS[0]: many})
    [legend] = fig.legends
    styles = {
        (tuple(h.get_facecolor()[0]), h.get_paths()[0].vertices.tobytes()) for h in legend.legend_handles
    }
    assert len(styles) == many["strategy"].n_unique()


def test_frontier_intervals_are_the_summary_source_balanced_means(frames):
    """The hollow marker is the figure the executive summary states: the mean of the sources'
    mean per-run values (a trial saw the figure's plain mean, 16 %, beside the summary's 24.3 %),
    with the stratified bootstrap interval of ctxlab.replay.stratified."""
    from ctxlab.analysis.frontier import INTERVAL_COLUMNS, frontier_intervals
    from ctxlab.replay.stratified import balanced_mean

    intervals = frontier_intervals(frames)
    assert intervals.columns == list(INTERVAL_COLUMNS)
    table = frontier_table(frames)
    for row, calls in frames.items():
        runs = summary_frame(calls)
        assert runs["transcript_format"].n_unique() > 1  # the balanced and the plain mean differ here
        for name in ("ars", "ars-extractive", "masking"):
            mine = runs.filter(pl.col("strategy") == name)
            got = intervals.filter((pl.col("price_row") == row) & (pl.col("strategy") == name)).row(
                0, named=True
            )
            for column, prefix in (("cost_saving_pct", "cost_saving"), ("needed_recall", "needed_recall")):
                have = mine.filter(pl.col(column).is_not_null())
                if not have.height:
                    assert name == "masking" and column == "needed_recall" and got[f"{prefix}_mean"] is None
                    continue
                by_source = have.group_by("transcript_format").agg(pl.col(column).mean())[column].to_list()
                assert got[f"{prefix}_mean"] == pytest.approx(sum(by_source) / len(by_source), rel=1e-12)
                values = dict(have.select("transcript", column).iter_rows())
                sources = dict(have.select("transcript", "transcript_format").iter_rows())
                est = balanced_mean(values, sources)
                assert (got[f"{prefix}_low"], got[f"{prefix}_high"]) == (est.low, est.high)
                assert got[f"{prefix}_low"] <= got[f"{prefix}_mean"] <= got[f"{prefix}_high"]
            assert got["runs"] == 4
            assert got["qualified"] == (
                0 if name == "masking" else 3
            )  # recall only where a span was summarized
            text = table.filter(pl.col("strategy") == name)[f"cost saving % per run, 95 % CI ({row})"][0]
            assert text == (
                f"{round(got['cost_saving_mean'], 1)} [{round(got['cost_saving_low'], 1)}, "
                f"{round(got['cost_saving_high'], 1)}]"
            )
            assert table.filter(pl.col("strategy") == name)[f"qualified runs ({row})"][0] == got["qualified"]


def test_frontier_figure_draws_the_intervals_as_error_bars(frames):
    from matplotlib.collections import LineCollection

    from ctxlab.analysis.frontier import frontier_intervals

    fig = plot_frontier(frames)
    intervals = frontier_intervals(frames)
    for ax, row in zip(fig.axes, ROWS, strict=True):
        part = intervals.filter(pl.col("price_row") == row)
        spans = sorted(
            (round(float(seg[0][1]), 6), round(float(seg[1][1]), 6))
            for coll in ax.collections
            if isinstance(coll, LineCollection)
            for seg in coll.get_segments()
            if seg[0][0] == seg[1][0]  # vertical: the cost saving's interval
        )
        want = sorted(
            (round(lo, 6), round(hi, 6))
            for lo, hi in part.select("cost_saving_low", "cost_saving_high").iter_rows()
        )
        assert spans == want


def test_the_legend_covers_no_point_or_interval(frames):
    """A trial saw the legend (fixed in the lower right) over the lower end of a strategy's
    interval, and the next (matplotlib's "best") over another in notebook 02's second panel: on
    the figure ctxlab makes it sits right of the panels, outside every axes; on a caller's own axes
    without a layout engine it sits right of the axes, outside them too."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.figure import Figure

    fig = plot_frontier(frames)
    FigureCanvasAgg(fig).draw()
    [legend] = fig.legends
    box = legend.get_window_extent()
    assert all(not box.overlaps(ax.get_window_extent()) for ax in fig.axes)
    assert box.x0 > max(ax.get_window_extent().x1 for ax in fig.axes)  # right of the panels

    own = Figure(figsize=(6, 4.8))  # no layout engine: the caller placed the axes
    ax = own.add_subplot()
    plot_frontier({ROWS[0]: frames[ROWS[0]]}, ax=ax)
    FigureCanvasAgg(own).draw()
    box = ax.get_legend().get_window_extent()
    assert not box.overlaps(ax.get_window_extent()) and box.x0 > ax.get_window_extent().x1
    points = []
    for coll in ax.collections:
        if isinstance(coll, PathCollection):
            points += [tuple(p) for p in ax.transData.transform(coll.get_offsets())]
        elif isinstance(coll, LineCollection):
            points += [tuple(p) for seg in coll.get_segments() for p in ax.transData.transform(seg)]
    for line in ax.lines:
        points += [tuple(p) for p in ax.transData.transform(line.get_xydata())]
    assert points
    inside = [p for p in points if box.contains(*p)]
    assert not inside, f"the legend covers {len(inside)} drawn point(s)"
