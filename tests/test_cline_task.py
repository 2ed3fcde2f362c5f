"""Cline task folders as one transcript (issue 27): the history with the UI log's per-request
usage, the UI log alone refused with a hint, Cline's own truncation replayed by ``recorded``, and
the over-window calls of its uncompressed history marked infeasible.

The fixture (``tests/data/cline-task``, derived by ``tools/derive_fixtures.py`` from the public
Claude Code session ``coverage-test-fix``: its messages, its recorded usage per request) is
read here independently of the loader (plain ``json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from langchain_core.messages import AIMessage

from ctxlab import CompressionSettings
from ctxlab.replay import replay, replay_many
from ctxlab.replay.provider import ContextWindow
from ctxlab.transcripts import detect_format, load_many, load_transcripts
from ctxlab.transcripts.base import TranscriptError, recorded_truncation_of

TASKS = Path(__file__).resolve().parent / "data" / "cline-task"


@pytest.fixture(scope="module")
def task() -> Path:
    folders = [p for p in TASKS.iterdir() if p.is_dir()]
    assert len(folders) == 1, f"expected one task folder in {TASKS}"
    return folders[0]


def requests_of(folder: Path) -> list[dict]:
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    return [json.loads(m["text"]) for m in ui if m.get("say") == "api_req_started"]


def test_the_task_folder_is_one_transcript_with_its_recorded_usage(task: Path) -> None:
    runs, errors = load_many([TASKS])
    assert not errors and len(runs) == 1  # the UI log and the metadata are read through the history
    [t] = runs
    assert t.format == "cline_task" == detect_format(task / "api_conversation_history.json")
    assert t.source == str(task / "api_conversation_history.json") and t.run_id == task.name
    answers = [m for m in t.messages if isinstance(m, AIMessage)]
    requests = requests_of(task)
    assert len(answers) == len(requests) == 14
    for m, r in zip(answers, requests, strict=True):
        assert m.usage_metadata == {
            "input_tokens": r["tokensIn"] + r["cacheReads"] + r["cacheWrites"],
            "output_tokens": r["tokensOut"],
            "total_tokens": r["tokensIn"] + r["cacheReads"] + r["cacheWrites"] + r["tokensOut"],
            "input_token_details": {"cache_read": r["cacheReads"], "cache_creation": r["cacheWrites"]},
        }
        assert m.response_metadata["recorded_cost_usd"] == pytest.approx(r["cost"])
    meta = json.loads((task / "task_metadata.json").read_text(encoding="utf-8"))
    assert t.model == meta["model_usage"][-1]["model_id"]
    assert t.metadata["recorded_requests"] == 14 and t.metadata["deleted_ranges"] == []
    last = requests[-1]
    assert t.metadata["last_context_tokens"] == sum(
        last[k] for k in ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")
    )


def test_the_first_request_holds_clines_unrecorded_prompt(task: Path) -> None:
    """The history does not hold Cline's system prompt and tools; the recorded usage does: the
    replay's unrecorded prefix measures it, and the corrected raw requests match the usage."""
    result = replay(task / "api_conversation_history.json", "recorded")
    [prefix] = result.prefixes.values()
    assert prefix["source"] == "recorded usage" and prefix["calls"] == 14
    assert prefix["tokens"] > 15_000 and prefix["raw_off_by"] < 0.1
    ratios = sorted(r["raw_tokens"] / r["recorded_input_tokens"] for r in result.rows)
    assert 0.95 < ratios[len(ratios) // 2] < 1.05


def test_the_ui_log_alone_names_the_history_file(task: Path, tmp_path: Path) -> None:
    alone = tmp_path / "task" / "ui_messages.json"
    alone.parent.mkdir()
    shutil.copy(task / "ui_messages.json", alone)
    with pytest.raises(TranscriptError, match=r"api_conversation_history\.json beside it") as err:
        load_transcripts(alone)
    assert err.value.path == str(alone)
    runs, errors = load_many([tmp_path])  # in a batch: reported, not fatal
    assert runs == [] and [e.path for e in errors] == [str(alone)]
    # a history without its UI log is a plain Anthropic list (no usage recorded)
    history = tmp_path / "bare" / "api_conversation_history.json"
    history.parent.mkdir()
    shutil.copy(task / "api_conversation_history.json", history)
    [t] = load_transcripts(history)
    assert t.format == "anthropic_messages"


def truncated_copy(task: Path, tmp_path: Path, at: int, deleted: list[int]) -> Path:
    """The task with Cline's truncation ``deleted`` (history indices, inclusive) from request
    ``at`` on, stamped on the UI messages after that request's ``api_req_started`` as Cline does."""
    folder = tmp_path / task.name
    shutil.copytree(task, folder)
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    starts = [i for i, m in enumerate(ui) if m.get("say") == "api_req_started"]
    for m in ui[starts[at] + 1 :]:
        m["conversationHistoryDeletedRange"] = deleted
    (folder / "ui_messages.json").write_text(json.dumps(ui), encoding="utf-8")
    return folder / "api_conversation_history.json"


def test_recorded_replays_clines_truncation_and_over_window_calls_are_infeasible(
    task: Path, tmp_path: Path
) -> None:
    path = truncated_copy(task, tmp_path, at=8, deleted=[2, 9])
    [t] = load_transcripts(path)
    assert t.metadata["deleted_ranges"] == [{"range": [2, 9], "from_call": 8}]
    history = json.loads(path.read_text(encoding="utf-8"))
    dropped = [
        m.id
        for m in t.messages
        if recorded_truncation_of(m) == {"from_call": 8, "source": "cline conversationHistoryDeletedRange"}
    ]
    assert dropped and len(dropped) >= len(history[2:10])
    # the uncompressed requests as the provider stand-in counts them; a window the last ones outgrow
    raw = replay(
        t, "ars", settings=CompressionSettings(summary_threshold=1000), context_window=None, keep_views=True
    )
    probe = ContextWindow(10**6)
    counts = [probe.request_tokens(v.system, v.tools, v.messages) for v in raw.views.values()]
    window = ContextWindow(counts[10])
    result = replay_many([t], ["recorded"], context_window=window, keep_views=True, progress=False)
    assert not result.errors, result.errors  # Cline's own truncation fits where everything would not
    rows = result.rows
    assert [r["over_window"] for r in rows] == [c > counts[10] for c in counts]
    assert sum(r["over_window"] for r in rows) == 3
    assert [r["level"] for r in rows] == ["none"] * 8 + ["L1"] * 6
    assert [r["trigger_reached"] for r in rows] == [False] * 8 + [True] * 6
    label = rows[0]["transcript"]
    whole = list(raw.views.values())
    for k in range(14):
        view = result.views[(label, "recorded", k)]
        ids = [m.id for m in view.messages]
        if k < 8:  # before the truncation Cline sent everything
            assert ids == [m.id for m in whole[k].messages], k
        else:  # from it on, without the range
            assert not set(ids) & set(dropped) and ids == [
                m.id for m in whole[k].messages if m.id not in dropped
            ]
        assert window.request_tokens(view.system, view.tools, view.messages) <= counts[10]
    summary = result.summary().row(0, named=True)
    assert summary["infeasible_calls"] == 3 and summary["reached_threshold"] is True
    assert summary["infeasible_share"] == pytest.approx(3 / 14)
    # the calls before the truncation measure the prefix, the later ones do not
    assert result.prefixes[label]["calls"] == 8
    assert pl.DataFrame(rows)["unrecorded_prefix_tokens"].n_unique() == 1
