"""The column registry (ctxlab.replay.columns): every column of calls.parquet, summary.csv and
the strategy totals is declared once, and the frames, report.md, the typed row, the plots' labels
and docs/columns.md read it."""

from __future__ import annotations

import types
import typing
from pathlib import Path

import polars as pl
import pytest

from ctxlab.analysis.report import write_report
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.replay.columns import (
    CALL_REGISTRY,
    MEASURE_TYPES,
    REPORT_DEFINITIONS,
    RUN_REGISTRY,
    CallColumn,
    CallRow,
    axis_label,
    column,
    columns_markdown,
    measure_columns,
    report_definitions,
    unit,
)
from ctxlab.replay.table import calls_frame, strategy_totals, summary_frame

REPO = Path(__file__).resolve().parents[1]
KATY = (
    REPO.parent / "shared" / "transcripts" / "raw" / "swe-agent" / "trajectories" / "demonstrations" / "ctf"
)
KATY = KATY / "crypto" / "katy.traj"
SETTINGS = CompressionSettings(summary_threshold=2, summary_keep_messages=2)
PYTHON_TYPE = {pl.String: str, pl.Int64: int, pl.Float64: float, pl.Boolean: bool}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory):
    assert KATY.is_file(), f"shared transcript missing: {KATY} (the tests need ../shared/transcripts/raw)"
    out = tmp_path_factory.mktemp("columns")
    result = replay_many([KATY], ["ars", "langchain-summarization"], settings=SETTINGS, progress=False)
    assert not result.errors, result.errors
    return result, out


def test_the_per_call_frame_of_a_real_replay_has_exactly_the_registry_columns(replayed) -> None:
    result, _ = replayed
    calls = calls_frame(result.rows)
    assert calls.height == 2 * 18
    assert calls.schema == pl.Schema({c.name: c.dtype for c in CALL_REGISTRY})  # names, order, dtypes
    # every row the runner built has exactly the registry's keys: none the registry lacks, none missing
    registry = [c.name for c in CALL_REGISTRY]
    for row in result.rows:
        assert sorted(row) == sorted(registry), set(row) ^ set(registry)
    # a non-nullable column is never empty
    for c in CALL_REGISTRY:
        if not c.nullable:
            assert calls[c.name].null_count() == 0, c.name
    assert "L2" in calls["level"].to_list()  # the run compressed: the rows are not trivial


def test_summary_and_totals_have_the_registry_run_columns_and_dtypes(replayed) -> None:
    result, _ = replayed
    calls = calls_frame(result.rows)
    for frame, scope in ((summary_frame(calls), "summary"), (strategy_totals(calls), "totals")):
        expected = {r.name: r.dtype for r in RUN_REGISTRY if r.scope in ("both", scope)}
        assert frame.schema == pl.Schema(expected), scope
        empty = summary_frame(calls.clear()) if scope == "summary" else strategy_totals(calls.clear())
        assert empty.schema == pl.Schema(expected) and empty.height == 0
    summary = summary_frame(calls)
    ars = summary.row(0, named=True)
    # the registry's aggregation, recomputed by hand from the per-call column
    one = calls.filter(pl.col("strategy") == "ars")
    assert ars["raw_tokens_total"] == sum(one["raw_tokens"])
    assert ars["saving_pct"] == pytest.approx(100 * (1 - sum(one["view_tokens"]) / sum(one["raw_tokens"])))
    assert ars["l2_rounds"] == one["level"].to_list().count("L2") > 0


def test_a_column_in_the_frame_but_not_in_the_registry_fails(replayed) -> None:
    result, _ = replayed
    row = {**result.rows[0], "made_up_tokens": 1}
    with pytest.raises(
        ValueError, match=r"row 1 has column\(s\) \['made_up_tokens'\] that are not in the column"
    ):
        calls_frame([result.rows[0], row])


def test_call_row_is_the_registry_typed_one_typed_dict_per_measure() -> None:
    hints = typing.get_type_hints(CallRow)
    assert sorted(hints) == sorted(c.name for c in CALL_REGISTRY)  # the frame's order is the registry's
    for c in CALL_REGISTRY:
        allowed = set(typing.get_args(hints[c.name])) or {hints[c.name]}
        expected = {PYTHON_TYPE[c.dtype], type(None)} if c.nullable else {PYTHON_TYPE[c.dtype]}
        assert allowed == expected, (c.name, c.dtype, c.nullable, hints[c.name])
    # each measure's TypedDict (what its measure() returns) holds exactly its registry columns
    assert set(MEASURE_TYPES) == {c.measure for c in CALL_REGISTRY}
    for measure, typed in MEASURE_TYPES.items():
        assert tuple(typing.get_type_hints(typed)) == measure_columns(measure), measure


def test_every_run_column_reads_registered_call_columns_and_has_an_aggregation() -> None:
    names = {c.name for c in CALL_REGISTRY}
    for r in RUN_REGISTRY:
        assert set(r.source) <= names, (r.name, set(r.source) - names)
        assert (r.expr is None) == (r.how == "group key"), r.name
    assert len({r.name for r in RUN_REGISTRY}) == len(RUN_REGISTRY)
    assert len(names) == len(CALL_REGISTRY)


def test_report_definitions_come_from_the_registry(replayed) -> None:
    result, out = replayed
    write_report(result, out, figures="none")
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Metric definitions", 1)[1].split("\n## ", 1)[0]
    bullets = [line for line in section.splitlines() if line.startswith("- **")]
    expected = [f"- **{heading}**: {text.rstrip('.')}." for heading, text in report_definitions().items()]
    assert bullets == expected
    assert len(bullets) == len(REPORT_DEFINITIONS)
    assert "- **saving %**: 1 - sum(view_tokens) / sum(raw_tokens)" in section  # under its heading
    # the three groups split the same definitions, no more
    parts = {**report_definitions("metric"), **report_definitions("cost"), **report_definitions("fidelity")}
    assert parts == report_definitions()
    assert list(report_definitions("cost")) == [
        "cost_usd",
        "summarizer_cost_usd",
        "raw_cost_usd",
        "cost breakdown",
        "output_tokens",
    ]


def test_every_column_with_a_detail_is_printed_in_the_report() -> None:
    with_detail = {c.name for c in (*CALL_REGISTRY, *RUN_REGISTRY) if c.detail is not None}
    assert with_detail == set(REPORT_DEFINITIONS)


def test_axis_labels_and_units_read_the_registry() -> None:
    assert axis_label("saving_pct") == "tokens saved (% of raw)"
    assert axis_label("view_tokens") == "view_tokens (tokens)"
    assert axis_label("cost_usd") == "cost_usd (US dollars)"
    assert axis_label("level") == "level"
    assert unit("overhead_ms") == "ms" and unit("retention") == "share"
    with pytest.raises(KeyError, match="no column 'nope'"):
        axis_label("nope")


def test_an_invalid_unit_is_refused_naming_the_column() -> None:
    with pytest.raises(ValueError, match="column 'x': unit='furlongs'"):
        CallColumn("x", pl.Int64, "furlongs", "x", "view")


def test_measure_columns_partition_the_per_call_columns() -> None:
    measures = {c.measure for c in CALL_REGISTRY}
    together = [name for m in measures for name in measure_columns(m)]
    assert sorted(together) == sorted(c.name for c in CALL_REGISTRY)
    assert measure_columns("fidelity") == (
        "span_identifiers",
        "span_carried",
        "needed_identifiers",
        "needed_carried",
        "probes",
        "probes_passed",
        "dump_probes_passed",
        "recent_probes_passed",
        "summary_tokens",
    )


def test_the_docs_column_table_is_the_registry() -> None:
    doc = (REPO / "docs" / "columns.md").read_text(encoding="utf-8")
    begin, end = "<!-- columns:begin -->\n", "<!-- columns:end -->"
    assert begin in doc and end in doc, "docs/columns.md lost its generated-table markers"
    table = doc.split(begin, 1)[1].split(end, 1)[0]
    assert table == columns_markdown(), (
        "docs/columns.md is out of date: regenerate the table between the markers with "
        "`.venv/bin/python -m ctxlab.replay.columns`"
    )
    assert column("summarizer_calls").measure == "compression"


def test_every_registry_measure_has_one_measure_and_build_row_refuses_a_foreign_column(replayed) -> None:
    from ctxlab.core.estimation import EstimateCache
    from ctxlab.replay.measures import RunLabels, build_row, default_measures
    from ctxlab.replay.metrics import IdentifierIndex, make_measure
    from ctxlab.replay.prices import DEFAULT_PRICE_MODEL, load_prices

    meter: EstimateCache = make_measure()
    price = load_prices().get(DEFAULT_PRICE_MODEL)
    measures = default_measures(meter, IdentifierIndex(), base_tokens=0, price=price, system=None)
    covered = [name for m in measures for name in m.names]
    assert sorted(covered) == sorted({c.measure for c in CALL_REGISTRY})  # each exactly once

    class Stray(RunLabels):
        def measure(self, obs, row):
            return {**super().measure(obs, row), "view_tokens": 1}  # a column of "view", not "run"

    obs = types.SimpleNamespace(transcript="t", strategy="s", call_index=0, message_index=3)
    assert build_row(obs, [RunLabels()])["message_index"] == 3  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"measure Stray returned \['view_tokens'\]: not columns of measure\(s\)"
    ):
        build_row(obs, [Stray()])  # type: ignore[arg-type]
