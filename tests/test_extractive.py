"""The offline extractive summarizer (issue 23): its salience rules on hand-built spans, its
budget, and the ``ars-extractive`` strategy in a real ``create_agent`` loop and a replay."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from ctxlab import CompressionMiddleware, CompressionSettings
from ctxlab.core.builtin.extractive import (
    ExtractiveSummarizer,
    ForceExtractiveSummarizer,
    covered_by,
    identifiers,
    salience,
    shell_blocks,
)
from ctxlab.core.estimation import estimate_text_tokens
from ctxlab.core.summarize import SummaryJob

SAMPLE = Path(__file__).resolve().parents[1] / "ctxlab" / "data" / "sample_run.json"


def call(name: str, args: dict, cid: str, text: str = "") -> AIMessage:
    return AIMessage(content=text, tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def span() -> list:
    script = "import sys\n\ndef check_lazy_wrapped(obj):\n    return obj\n\nclass LazyProbe:\n    pass\n"
    return [
        HumanMessage("Fix the slug validation in django/core/validators.py. You must not modify the tests."),
        call("bash", {"command": "grep -rn validate_slug django/core/validators.py"}, "c1"),
        ToolMessage(
            "django/core/validators.py:240:def validate_slug(value):", tool_call_id="c1", name="bash"
        ),
        call("bash", {"command": f"cat > /testbed/check_lazy.py <<'EOF'\n{script}EOF"}, "c2"),
        ToolMessage("", tool_call_id="c2", name="bash"),
        call("bash", {"command": "python /testbed/check_lazy.py"}, "c3"),
        ToolMessage(
            'Traceback (most recent call last):\n  File "/testbed/check_lazy.py", line 3\n'
            "AttributeError: 'LazyObject' object has no attribute '_wrapped_value'",
            tool_call_id="c3",
            name="bash",
        ),
        HumanMessage("Use the existing SlugValidator instead of a new regex."),
        AIMessage(
            "The probe fails on _wrapped_value. Next: patch SlugValidator.__call__ and rerun check_lazy.py."
        ),
    ]


def summary_of(messages: list, **kw) -> str:
    job = SummaryJob(messages=messages, prompt="{messages}", budget_tokens=100_000, **kw)
    result = ExtractiveSummarizer().summarize(job)
    assert result.error is None and result.calls == 0 and result.input_tokens == 0  # no model call
    return result.text


def section(text: str, header: str) -> str:
    body = text.split(f"{header}:\n", 1)[1]
    return body.split("\n\n", 1)[0]


def test_sections_state_what_happened_to_files_commands_and_errors():
    text = summary_of(span())
    assert section(text, "Task").startswith("Fix the slug validation in django/core/validators.py")
    constraints = section(text, "User constraints and decisions")
    assert constraints == "- You must not modify the tests."  # a constraint sentence of the first request
    # the latest request is carried verbatim by the round (R10 framing): not repeated, its
    # identifiers spend no budget
    assert "Use the existing SlugValidator" not in text
    assert "SlugValidator.__call__" in text  # the agent's own mention stays
    # a later user message that is not the latest request is a constraint
    later = [*span(), HumanMessage("Also keep the old error message.")]
    assert "- Use the existing SlugValidator instead of a new regex." in section(
        summary_of(later), "User constraints and decisions"
    )
    only = summary_of(span()[:3])  # the first request is the latest: named, not repeated
    assert section(only, "Task") == "(the latest user request, carried verbatim with this summary)"
    files = section(text, "Files").splitlines()
    # each file with what was done to it, the change last, and what a written script defines
    assert files[0] == "- /testbed/check_lazy.py: ran; created; defines LazyProbe, check_lazy_wrapped"
    assert "- django/core/validators.py: read" in files
    commands = section(text, "Commands").splitlines()
    # each command with its last outcome (the error line of a failed one before it)
    assert commands == [
        "- python /testbed/check_lazy.py (AttributeError: 'LazyObject' object has no attribute "
        "'_wrapped_value'): failed"
    ]
    errors = section(text, "Errors")
    assert errors == "- AttributeError: 'LazyObject' object has no attribute '_wrapped_value': still open"
    assert "Next: patch SlugValidator.__call__" in section(text, "Open tasks")


def test_a_clean_rerun_marks_the_error_fixed_and_the_command_passed():
    fixed = [
        *span(),
        call("bash", {"command": "cd /testbed && python check_lazy.py"}, "c4"),
        ToolMessage("<returncode>0</returncode>\nall good", tool_call_id="c4", name="bash"),
    ]
    text = summary_of(fixed)
    assert section(text, "Commands").splitlines()[0] == "- python check_lazy.py: passed, 2 runs"
    assert section(text, "Errors").endswith("'_wrapped_value': fixed")


def test_calls_of_other_tools_are_stated_with_their_outcome():
    # a tool that is neither a shell nor a file tool (tau-bench's, a run_tests tool) is a command
    # the summary states, with its first argument and what its result said
    msgs = [
        HumanMessage("Book the cheapest flight for user mia_li_3668."),
        call("get_user_details", {"user_id": "mia_li_3668"}, "t1"),
        ToolMessage('{"name": "Mia Li", "membership": "gold"}', tool_call_id="t1", name="get_user_details"),
        call("run_tests", {"path": "src/app/module_4.py"}, "t2"),
        ToolMessage("Traceback ...\nKeyError: 'seat'", tool_call_id="t2", name="run_tests"),
        call("run_tests", {"path": "src/app/module_5.py"}, "t3"),
    ]
    lines = section(summary_of(msgs), "Commands").splitlines()
    assert "- get_user_details: mia_li_3668: done" in lines
    assert "- run_tests: src/app/module_4.py (KeyError: 'seat'): failed" in lines
    assert "- run_tests: src/app/module_5.py: no result yet" in lines


def test_salience_weighs_the_agents_own_calls_and_recent_messages_most():
    # the same identifier count in a tool result, the user's text and the agent's call
    ranked = dict(
        salience([("tool", "tool_only_name"), ("user", "user_name_here"), ("call", "agent_call_name")])
    )
    assert ranked["agent_call_name"] > ranked["user_name_here"] > ranked["tool_only_name"]
    # recency: the same source kind later in the span weighs more
    late = dict(salience([("tool", "early_name"), ("tool", "other_thing"), ("tool", "late_name")]))
    assert late["late_name"] > late["early_name"]
    # a path weighs 1.5 x a name at the same place; a number 0.5 x
    kinds = dict(salience([("tool", "pkg/mod.py some_name 123456")]))
    assert kinds["pkg/mod.py"] == pytest.approx(1.5 * kinds["some_name"])
    assert kinds["123456"] == pytest.approx(0.5 * kinds["some_name"])
    # frequency: two mentions outweigh one at the same places
    freq = dict(salience([("tool", "twice_name once_name"), ("tool", "twice_name")]))
    assert freq["twice_name"] > freq["once_name"]


def test_identifiers_and_what_a_name_covers():
    found = identifiers("see src/_pytest/main.py: self.config.getini raised KeyError at 12345; hello word")
    assert {"src/_pytest/main.py", "self.config.getini", "KeyError", "12345"} <= set(found)
    assert "hello" not in found and "word" not in found
    cov = covered_by(["/testbed/src/_pytest/main.py", "self.config.getini"])
    assert {"src/_pytest/main.py", "_pytest/main.py", "main.py", "config.getini", "self.config"} <= cov


def test_kept_window_identifiers_are_not_repeated():
    kept = [call("bash", {"command": "sed -n 1,20p django/core/validators.py"}, "k1")]
    text = summary_of(span(), kept=kept)
    without = summary_of(span())
    assert "django/core/validators.py" in section(without, "Task")
    assert "validators.py: read" in section(without, "Files")
    files_kept = section(text, "Files") if "Files:\n" in text else ""
    assert "validators.py" not in files_kept  # the kept window's actions touch it
    assert "_wrapped_value" in text  # what only the span holds stays


def test_budget_bounds_a_huge_span_and_output_is_deterministic():
    big = []
    for i in range(400):
        big.append(call("bash", {"command": f"python probe_{i:04d}.py --case case_name_{i}"}, f"c{i}"))
        big.append(
            ToolMessage(f"module_{i}.function_{i} ValueError_{i}Error at line {i:05d}", tool_call_id=f"c{i}")
        )
    summarizer = ExtractiveSummarizer(max_tokens=600)
    text = summarizer.build(big, 600)
    assert estimate_text_tokens(text) <= 600
    assert text == summarizer.build(list(big), 600)
    assert "probe_0399.py" in text  # the latest, most salient survive the budget
    with pytest.raises(ValueError, match="max_tokens=10 is invalid"):
        ExtractiveSummarizer(max_tokens=10)


def test_previous_summary_is_merged_not_nested():
    first = summary_of(span())
    previous = HumanMessage(first, additional_kwargs={"lc_source": "summarization"})
    later = [call("bash", {"command": "python -m pytest tests/validators"}, "c9")]
    second = summary_of([previous, *later], previous_summary=first)
    assert second.count("Task:") == 1
    assert section(second, "Task").startswith("Fix the slug validation")
    # the earlier facts survive under the new ones, each once
    files = section(second, "Files")
    assert "- /testbed/check_lazy.py: ran; created; defines LazyProbe, check_lazy_wrapped" in files
    assert second.count("check_lazy.py: ran") == 1
    assert "'_wrapped_value': still open" in section(second, "Errors")


@tool
def write_script(path: str, content: str) -> str:
    """Write a script file (relative to the work folder)."""
    return f"wrote {len(content)} characters to {path}"


@tool
def run(command: str) -> str:
    """Run a command and return its (long) output."""
    return "\n".join(f"step {i}: ok, probe_value_{i} = {i * 7}" for i in range(300))


def test_ars_extractive_in_a_create_agent_loop_makes_no_model_call(mw_kit, tmp_path):
    script = [
        call(
            "write_script",
            {"path": "tools/repro_bug.py", "content": "def reproduce_slug():\n    pass\n"},
            "a1",
        ),
        call("run", {"command": "python tools/repro_bug.py"}, "a2"),
        call("run", {"command": "python tools/repro_bug.py --again"}, "a3"),
        *(call("run", {"command": f"python tools/repro_bug.py --round {i}"}, f"a{i}") for i in range(3, 8)),
        AIMessage("done"),
    ]
    model = mw_kit.ScriptedModel(script=script)
    mw = CompressionMiddleware(
        settings=CompressionSettings(
            summary_threshold=2, summary_keep_messages=2, summary_l2_trigger_ratio=0.2
        ),
        backend=mw_kit.backend(tmp_path),
        plugins=[ForceExtractiveSummarizer()],
    )
    agent = create_agent(
        model=model, tools=[write_script, run], middleware=[mw], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "extractive"}}
    agent.invoke({"messages": [HumanMessage("Reproduce the slug bug; do not touch tests.")]}, config)
    values = agent.get_state(config).values
    event = values["_summarization_event"]
    summary = event["summary_message"].content
    # the kept window runs the script; that the span created it, and what it defines, stays
    assert "- tools/repro_bug.py: ran; created; defines reproduce_slug" in summary
    assert "Reproduce the slug bug; do not touch tests." in summary
    # the agent's model answered only its own turns: the summary cost no model call
    assert model.answered == len(script)
    assert any(m.additional_kwargs.get("lc_source") == "summarization" for m in model.received[-1])


def test_ars_extractive_strategy_replays_with_no_summarizer_tokens():
    from ctxlab.replay import replay

    settings = CompressionSettings(summary_threshold=16)
    result = replay(SAMPLE, "ars-extractive", settings=settings)
    rows = result.rows
    assert sum(r["level"] == "L2" for r in rows) == len(result.summaries) > 0
    assert all(int(r["summarizer_input_tokens"] or 0) == 0 for r in rows)
    texts = [s["text"] for s in result.summaries]
    assert texts and all("Files:\n" in t and "Identifiers:\n" in t for t in texts)


def test_text_action_commands_and_scripts_come_from_shell_fences():
    text = (
        "THOUGHT: write a probe.\n```bash\ncat > probe_slug.py <<'EOF'\ndef probe_slug():\n    pass\nEOF\n```\n"
        "prose (not a command)\n```python\nprint('not shell')\n```\nthen\n```\npython probe_slug.py\n```"
    )
    assert shell_blocks(text) == [
        "cat > probe_slug.py <<'EOF'\ndef probe_slug():\n    pass\nEOF\n",
        "python probe_slug.py\n",
    ]
    assert shell_blocks("```bash\nunclosed") == []
    summary = summary_of([HumanMessage("Fix it."), AIMessage(text)])
    # the heredoc creates the script, the bare fence runs it; the python block is code, not a command
    assert section(summary, "Files") == "- probe_slug.py: ran; created; defines probe_slug"
    assert section(summary, "Commands").splitlines() == ["- python probe_slug.py: no result yet"]


def test_budget_goes_to_salience_per_token():
    # one long offload path and many short names, all mentioned once in the same message
    long_path = "/outputs/large_tool_results/observation-" + "ab12" * 16 + ".txt"
    names = [f"name_{i:03d}" for i in range(60)]
    text = ExtractiveSummarizer(max_tokens=200).build(
        [ToolMessage(" ".join([long_path, *names]), tool_call_id="t")], 200
    )
    assert long_path not in text  # ~40 tokens for one identifier: the short ones go first
    assert sum(n in text for n in names) > 20


def test_summarizer_model_extractive_selects_it_for_ars_from_the_cli(tmp_path):
    import json

    from ctxlab.cli.main import main

    out = tmp_path / "out"
    args = ["compare", str(SAMPLE), "--strategies", "ars,ars-extractive", "--summary-threshold", "16"]
    assert main([*args, "--summarizer-model", "extractive", "--out", str(out), "--figures", "none"]) == 0
    rounds = [json.loads(line) for line in (out / "summaries.jsonl").read_text(encoding="utf-8").splitlines()]
    by = {s: [r["text"] for r in rounds if r["strategy"] == s] for s in ("ars", "ars-extractive")}
    assert by["ars"] and by["ars"] == by["ars-extractive"]  # the same summarizer, the same summaries
    assert all("Identifiers:\n" in t for t in by["ars"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "offline extractive summarizer (ctxlab.core.builtin.ExtractiveSummarizer)" in report


def test_values_keep_the_name_they_were_given_the_agents_first():
    messages = [
        HumanMessage("Book the cheapest flight; my user id is mia_li_3668."),
        call("get_reservation", {"reservation_id": "JG7FMM"}, "r1"),
        ToolMessage(
            '{"reservation_id": "JG7FMM", "flight_number": "HAT028", "price": 1859, "note": "ok"}',
            tool_call_id="r1",
        ),
        AIMessage("Setting listen_port: 8731 for the server."),
    ]
    values = section(summary_of(messages), "Values").splitlines()
    # what the agent wrote first (the latest first), then what only a tool result named
    assert values == [
        "- listen_port: 8731",
        "- reservation_id: JG7FMM",
        "- price: 1859",
        "- flight_number: HAT028",
    ]
