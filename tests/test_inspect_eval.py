"""ctxlab inside Inspect AI: the strategy mapping, the reader, the read-back tool, and ``ctxlab eval``
on the offline task, whose success rates must match the task's design
(:mod:`ctxlab.integrations.inspect.task`)."""

from __future__ import annotations

import asyncio
import csv
import re
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")
from inspect_ai.event import InfoEvent, ModelEvent
from inspect_ai.log import read_eval_log
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    CompactionEdit,
    CompactionSummary,
)
from inspect_ai.tool import ToolCall

from ctxlab.cli.main import main
from ctxlab.integrations.inspect.compaction import CtxlabCompaction, compaction_strategy, read_saved_output
from ctxlab.integrations.inspect.models import PAGE_LINES, reader_policy
from ctxlab.integrations.inspect.task import KINDS, SAMPLES_PER_KIND, documents, task_settings

TASK = (
    'Find the access code of project Omega12. Start with fetch("doc-1"); every document names the next one. '
    "Constraint: submit the code prefixed with 'QX-'."
)


def _call(msgs: list, fn: str, args: dict, n: int, result: str) -> None:
    msgs.append(
        ChatMessageAssistant(content="", tool_calls=[ToolCall(id=f"c{n}", function=fn, arguments=args)])
    )
    msgs.append(ChatMessageTool(content=result, tool_call_id=f"c{n}", function=fn))


def test_strategy_names_map_to_what_react_takes():
    settings = task_settings(5.0)
    assert compaction_strategy("none", settings) is None
    edit = compaction_strategy("inspect-edit", settings)
    assert isinstance(edit, CompactionEdit) and edit.threshold == 5 * 1024  # Inspect's own class, at T
    summary = compaction_strategy("inspect-summary", settings, summarizer="ctxlab/offline")
    assert isinstance(summary, CompactionSummary)
    ars = compaction_strategy("ars", settings)
    assert isinstance(ars, CtxlabCompaction) and ars.threshold == 5 * 1024 and ars.strategy == "ars"
    with pytest.raises(KeyError, match="unknown strategy 'arz'"):
        compaction_strategy("arz", settings)


def test_the_docs_snippet_builds_a_react_agent_with_ars(tmp_path, monkeypatch):
    import re

    doc = (Path(__file__).resolve().parents[1] / "docs" / "inspect.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "docs/inspect.md", "exec"), namespace)  # our own docs
    assert (
        isinstance(namespace["compaction"], CtxlabCompaction)
        and namespace["compaction"].threshold == 64 * 1024
    )
    assert callable(namespace["agent"])


def test_the_reader_answers_only_from_what_it_was_sent():
    msgs: list = [ChatMessageUser(content=TASK)]
    assert reader_policy(msgs, ["fetch"]).message.tool_calls[0].arguments == {"name": "doc-1"}
    _call(
        msgs,
        "fetch",
        {"name": "doc-1"},
        1,
        'NEXT: fetch("doc-2")\nThe access code of project Omega12 is 42AB7.',
    )
    assert reader_policy(msgs, ["fetch"]).message.tool_calls[0].arguments == {"name": "doc-2"}
    _call(msgs, "fetch", {"name": "doc-2"}, 2, "END of documents")
    answer = reader_policy(msgs, ["fetch"]).message.tool_calls[0]
    assert (answer.function, answer.arguments) == ("submit", {"answer": "QX-42AB7"})
    # the fact cleared: nothing saved to read back -> "unknown"
    cleared = [
        m
        if m.text.startswith("END") or m.role != "tool"
        else m.model_copy(update={"content": "(Tool result removed)"})
        for m in msgs
    ]
    assert reader_policy(cleared, ["fetch", "read_saved_output"]).message.tool_calls[0].arguments == {
        "answer": "unknown"
    }
    # the fact offloaded: read the saved file back, page by page
    path = "/outputs/large_tool_results/fetch-abc123.txt"
    saved = [
        m
        if m.text.startswith("END") or m.role != "tool"
        else m.model_copy(update={"content": f"[offloaded] saved at {path} Preview:"})
        for m in msgs
    ]
    call = reader_policy(saved, ["fetch", "read_saved_output"]).message.tool_calls[0]
    assert (call.function, call.arguments) == (
        "read_saved_output",
        {"path": path, "offset": 0, "limit": PAGE_LINES},
    )
    _call(saved, "read_saved_output", call.arguments, 3, "row 1\nrow 2")
    assert (
        reader_policy(saved, ["fetch", "read_saved_output"]).message.tool_calls[0].arguments["offset"]
        == PAGE_LINES
    )
    # without the task message nothing can be answered
    assert reader_policy(msgs[1:], ["fetch"]).message.tool_calls[0].arguments == {"answer": "unknown"}


def test_read_saved_output_reads_only_saved_outputs(tmp_path):
    folder = tmp_path / "outputs" / "large_tool_results"
    folder.mkdir(parents=True)
    (folder / "fetch-1.txt").write_text("\n".join(f"line {i}" for i in range(30)))
    tool = read_saved_output(str(tmp_path))
    assert (
        asyncio.run(tool(path="/outputs/large_tool_results/fetch-1.txt", offset=10, limit=3))
        == "line 10\nline 11\nline 12"
    )
    assert asyncio.run(tool(path="/etc/passwd")).startswith("Error:")
    assert asyncio.run(tool(path="/outputs/large_tool_results/../../x.txt")).startswith("Error:")
    assert asyncio.run(tool(path="/outputs/large_tool_results/missing.txt")).startswith("Error:")


def test_documents_are_deterministic_and_state_the_code_once():
    for kind in KINDS:
        docs, project, _, code = documents(kind, 0)
        assert documents(kind, 0)[0] == docs
        holders = [n for n, text in docs.items() if f"project {project} is {code}" in text]
        assert holders == (["doc-16"] if kind == "recent" else ["doc-1"])


# Inspect's eval leaves one anyio memory-object receive stream per sample to the garbage collector
# (inspect_ai 0.3.285, with or without compaction: `none` runs no ctxlab code in the agent loop);
# anyio warns in its __del__, which pytest turns into this warning. Nothing of ctxlab's is unclosed.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__:pytest.PytestUnraisableExceptionWarning"
)
def test_ctxlab_eval_success_matches_the_design(tmp_path, capsys):
    out = tmp_path / "eval"
    code = main(["eval", "--strategies", "none,ars,masking,inspect-edit", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    with (out / "samples.csv").open() as f:
        rows = list(csv.DictReader(f))
    got = {(r["strategy"], r["transcript"].split("-")[0]): 0.0 for r in rows}
    for r in rows:
        got[(r["strategy"], r["transcript"].split("-")[0])] += float(r["success"])
    n = SAMPLES_PER_KIND
    expected = {
        **{("none", k): n for k in KINDS},
        **{("ars", k): n for k in KINDS},  # ARS offloads the large results and the reader reads back
        **{(s, k): (n if k == "recent" else 0) for s in ("masking", "inspect-edit") for k in KINDS},
    }
    assert got == expected
    report = (out / "report.md").read_text()
    assert "masking vs none: -66.7 points of success" in report and "ars vs none: +0.0 points" in report
    # s39 trial, finding 6: who answered comes first; no best beside a tie (none and ars solve 9 of
    # 9, no sample differs); 9 of 9 has a Wilson interval, not a point; the tables' cells formatted
    summary = report.split("## Executive summary\n\n")[1].splitlines()
    assert summary[0].startswith(
        "- Answers written by an offline stand-in (ctxlab/reader), not a model: 9 samples"
    )
    assert "Best success rate" not in report
    assert summary[1].startswith(
        "- No best success rate: none 100.0 % (9 of 9, 95 % CI 70.1 % to 100.0 %) is not told apart from ars"
    )
    assert (
        "ars vs none: +0.0 points of success (no interval: 0 of 9 differ, < 6, 9 paired samples): identical"
        in report
    )
    table = report.split("## Success per strategy\n\n")[1].splitlines()
    assert table[0].startswith(
        "| strategy | samples | solved | success % | 95 % CI (Wilson) | tokens / solved |"
    )
    none_row = table[2].split(" | ")
    assert none_row[:5] == ["| none", "9", "9", "100.0", "70.1 to 100.0"]
    assert re.fullmatch(r"\d{1,3}(,\d{3})+", none_row[5]) and re.fullmatch(r"0\.\d{4}", none_row[6])
    paired = report.split("## Paired with none")[1]
    assert "| masking | none | 9 | 6 | 33.3 | 100.0 | -66.7 | -100.0 to -33.3 | worse |" in paired
    assert "0.3333333333333333" not in report and "9.0 |" not in report
    assert (out / "figures" / "success.png").stat().st_size > 0
    logs = {p: read_eval_log(str(p), resolve_attachments=True) for p in (out / "logs").glob("*.eval")}
    assert len(logs) == 4
    by_strategy = {log.eval.metadata["ctxlab"]["strategy"]: log for log in logs.values()}
    ars = by_strategy["ars"]
    for sample in ars.samples:
        m = sample.metadata["ctxlab"]
        calls = [e for e in sample.events if isinstance(e, ModelEvent) and e.model == "ctxlab/reader"]
        assert m["calls"] == len(calls) and len(m["per_call"]) >= len(calls)
        assert all(r["tokens"] > 0 and r["cost_usd"] > 0 for r in m["per_call"])
        events = [e.data for e in sample.events if isinstance(e, InfoEvent) and e.source == "ctxlab"]
        assert any(e["phase"] == "completed" and e["level"] == "L1" for e in events)
        read_back = [
            tc
            for e in calls
            for tc in e.output.message.tool_calls or []
            if tc.function == "read_saved_output"
        ]
        assert bool(read_back) == sample.id.startswith("readback")
    none = by_strategy["none"]
    assert sum(s.metadata["ctxlab"]["tokens"] for s in none.samples) > 0
    assert all(not s.metadata["ctxlab"]["compression_events"] for s in none.samples)


def test_eval_refuses_an_unknown_strategy(tmp_path, capsys):
    assert main(["eval", "--strategies", "none,arz", "--out", str(tmp_path)]) == 2
    assert "unknown strategy 'arz'" in capsys.readouterr().err
    assert not Path(tmp_path / "report.md").exists()


@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__:pytest.PytestUnraisableExceptionWarning"
)
def test_inspect_view_serves_the_log_with_ctxlabs_measures(tmp_path):
    # `inspect view` (a server on the loopback address, stopped at the end) opens the annotated log
    import json
    import socket
    import subprocess
    import sys
    import time
    import urllib.parse
    import urllib.request

    from ctxlab.integrations.inspect.evaluate import run_eval

    result = run_eval(["ars"], model="ctxlab/reader", out=tmp_path, limit=1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inspect_cli = Path(sys.executable).parent / "inspect"
    cmd = [
        str(inspect_cli),
        "view",
        "--log-dir",
        str(tmp_path / "logs"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as server:
        try:
            base = f"http://127.0.0.1:{port}/api/logs"
            listing = None
            for _ in range(120):
                try:
                    with urllib.request.urlopen(base, timeout=2) as r:
                        listing = json.load(r)
                    break
                except OSError:
                    time.sleep(0.25)
            assert listing is not None, "inspect view did not answer"
            (entry,) = listing["files"]
            assert entry["name"].endswith(Path(result.logs["ars"]).name)
            with urllib.request.urlopen(
                f"{base}/{urllib.parse.quote(entry['name'], safe='')}", timeout=10
            ) as r:
                log = json.load(r)
        finally:
            server.terminate()
            server.wait(timeout=20)
    assert log["eval"]["metadata"]["ctxlab"]["strategy"] == "ars"
    (sample,) = log["samples"]
    measures = sample["metadata"]["ctxlab"]
    assert measures["per_call"] and all(r["tokens"] > 0 for r in measures["per_call"])
    assert measures["compression_events"], "the ars run compressed: its events are in the log"


@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__:pytest.PytestUnraisableExceptionWarning"
)
def test_eval_runs_a_task_file_that_takes_the_strategy(tmp_path, capsys):
    # TASK is any Inspect task reference whose task takes a `strategy` argument (docs/inspect.md)
    file = tmp_path / "my_tasks.py"
    file.write_text(
        "from inspect_ai import task\n"
        "from ctxlab.integrations.inspect.task import context_recall\n\n\n"
        "@task\n"
        "def recall_two(strategy: str = 'none', summary_threshold: float = 5.0):\n"
        "    return context_recall(strategy=strategy, summary_threshold=summary_threshold)\n"
    )
    out = tmp_path / "out"
    argv = [
        "eval",
        f"{file}@recall_two",
        "--strategies",
        "none,inspect-edit",
        "--limit",
        "2",
        "-T",
        "summary_threshold=5",
    ]
    assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    with (out / "samples.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["strategy"], r["transcript"], r["success"]) for r in rows] == [
        ("none", "early-0#1", "1.0"),
        ("none", "early-1#1", "1.0"),
        ("inspect-edit", "early-0#1", "0.0"),
        ("inspect-edit", "early-1#1", "0.0"),
    ]
    logs = [read_eval_log(str(p), header_only=True) for p in (out / "logs").glob("*.eval")]
    assert sorted(log.eval.task_args["strategy"] for log in logs) == ["inspect-edit", "none"]


@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function MemoryObjectReceiveStream.__del__:pytest.PytestUnraisableExceptionWarning"
)
def test_ars_summarizes_inside_inspect_through_the_given_model(tmp_path):
    # T = T2 = 2,048 tokens and L2 keeping 2 messages: once the previews of the offline task pass T2,
    # ARS summarizes (L2) with the `summarizer` model; the summary call is a model call in the log
    from ctxlab.integrations.inspect.evaluate import run_eval

    result = run_eval(
        ["ars"],
        model="ctxlab/reader",
        out=tmp_path,
        limit=1,
        task_args={"summary_threshold": 2.0, "summary_keep_messages": 2},
    )
    log = read_eval_log(result.logs["ars"], resolve_attachments=True)
    (sample,) = log.samples
    events = [e.data for e in sample.events if isinstance(e, InfoEvent) and e.source == "ctxlab"]
    l2 = [e for e in events if e["phase"] == "completed" and e["level"] == "L2"]
    assert l2 and all(e["stats"]["summarizer"]["calls"] >= 1 for e in l2)
    summarizer_calls = [e for e in sample.events if isinstance(e, ModelEvent) and e.model == "ctxlab/offline"]
    assert len(summarizer_calls) == sum(e["stats"]["summarizer"]["calls"] for e in l2)
    kinds = [r["kind"] for r in sample.metadata["ctxlab"]["per_call"]]
    assert kinds.count("summarizer") == len(summarizer_calls) and "main" in kinds
    # the reader was then sent the summary (a ctxlab summary message) in place of the early messages
    later = [e for e in sample.events if isinstance(e, ModelEvent) and e.model == "ctxlab/reader"][-1]
    assert any("summary" in m.text.lower() for m in later.input if m.role == "user")
