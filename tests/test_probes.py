"""The probe fidelity measure (issue 28): probes drawn from the later turns of a hand-built run, a
summary that only names things failing them where one that states what happened passes, the
reference floors, and the probe columns of a replay of a real transcript."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.builtin.floors import identifier_dump, recent_messages
from ctxlab.core.settings import CompressionSettings
from ctxlab.replay.actions import outcome_of, shell_actions
from ctxlab.replay.probes import check_probes, round_probes, statements

MINI = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "raw" / "mini-swe-agent"


def call(command: str, cid: str, text: str = "") -> AIMessage:
    return AIMessage(
        content=text,
        tool_calls=[{"name": "bash", "args": {"command": command}, "id": cid, "type": "tool_call"}],
    )


def result(text: str, cid: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=cid, name="bash")


def span() -> list:
    """An agent that writes a script, runs it (it fails), edits the code, and notes a port."""
    return [
        HumanMessage("Make the server start. Never edit the vendored folder third_party/ directly."),
        call("cat > repro_server.py <<'EOF'\nimport app\napp.start()\nEOF", "c1"),
        result("<returncode>0</returncode>", "c1"),
        call("python repro_server.py", "c2"),
        result(
            "<returncode>1</returncode>\nTraceback (most recent call last):\n"
            "ConfigError: missing setting listen_port",
            "c2",
        ),
        call("sed -i 's/PORT = None/PORT = 8731/' app/settings.py", "c3", text="Setting listen_port: 8731."),
        result("<returncode>0</returncode>", "c3"),
        call("nl -ba app/routes.py | sed -n '1,40p'", "c4"),
        result("<returncode>0</returncode>\n     1\tdef index(): ...", "c4"),
    ]


def later() -> list:
    """What the agent does after the round: every subject of the span comes back."""
    return [
        call("python repro_server.py", "l1", text="The ConfigError should be gone now."),
        result("<returncode>0</returncode>\nserver up", "l1"),
        call("cat app/settings.py app/routes.py && curl localhost:8731", "l2"),
        result("<returncode>0</returncode>", "l2"),
        AIMessage("I kept the vendored third_party folder untouched and did not edit it directly."),
    ]


def probes_of(kept: list | None = None) -> list:
    return round_probes(span(), later(), kept=kept or [], system=SystemMessage("You are a coding agent."))


def by_kind(probes: list) -> dict[str, tuple[str, str]]:
    return {f"{p.kind}:{p.subject}": p.attribute for p in probes}


def test_probes_come_from_what_the_later_turns_use_with_the_attribute_of_the_span():
    found = by_kind(probes_of())
    assert found == {
        "file:repro_server.py": "changed",  # created, then run: the change is what counts
        "file:app/settings.py": "changed",
        "file:app/routes.py": "read",
        "command:python repro_server.py": "failed",  # its last outcome in the span
        "error:ConfigError": "open",  # no later run in the span passed without it
        "constraint:Never edit the vendored folder third_party/ directly.": "never",
        "value:8731": "PORT",  # the name it was last given in the span (sed ... PORT = 8731)
    }


def test_a_name_only_summary_fails_every_probe_that_a_stating_summary_passes():
    probes = probes_of()
    names_only = (
        "Files: repro_server.py, app/settings.py, app/routes.py\n"
        "Commands: python repro_server.py\nErrors: ConfigError\nValues: 8731, listen_port, app.settings\n"
        "Constraints: third_party vendored folder"
    )
    stating = (
        "- repro_server.py: created, ran\n- app/settings.py: edited (PORT set)\n- app/routes.py: read\n"
        "- python repro_server.py (ConfigError: missing setting listen_port): failed\n"
        "- ConfigError: missing setting listen_port: still open\n"
        "- PORT: 8731\n"
        "- Never edit the vendored folder third_party/ directly."
    )
    assert check_probes(probes, names_only) == [False] * len(probes)
    assert check_probes(probes, stating) == [True] * len(probes)
    # the floors at the same size: the dump names everything and states nothing
    budget = 400
    assert sum(check_probes(probes, identifier_dump(span(), budget))) == 0
    assert sum(check_probes(probes, recent_messages(span(), 60))) < len(probes)


def test_a_wrong_attribute_or_a_list_of_every_attribute_states_nothing():
    probes = [p for p in probes_of() if p.kind in ("command", "error")]
    wrong = "- python repro_server.py: passed\n- ConfigError: fixed"
    assert check_probes(probes, wrong) == [False, False]
    every = "- python repro_server.py: failed, passed\n- ConfigError: open, fixed"
    assert check_probes(probes, every) == [False, False]  # both sides named: the last one counts
    negated = "- python repro_server.py: did not pass\n- ConfigError: not fixed"
    assert check_probes(probes, negated) == [True, True]  # a negated word counts for the other side
    # an identifier is not prose: test_failed.py states no outcome
    assert check_probes(probes[:1], "- python repro_server.py, test_failed.py") == [False]


def test_what_the_kept_window_shows_is_not_probed():
    kept = [call("python repro_server.py", "k1"), result("<returncode>1</returncode>", "k1")]
    found = by_kind(probes_of(kept))
    assert "command:python repro_server.py" not in found  # the kept window runs it
    assert "file:repro_server.py" not in found  # and touches the file
    assert "file:app/settings.py" in found


def test_statements_cut_long_lines_at_sentences_then_commas():
    dump = ", ".join(f"name_{i}" for i in range(80))
    assert statements(dump) == [f"name_{i}" for i in range(80)]
    assert statements("short line\n\n  second ") == ["short line", "second"]


def test_shell_actions_and_outcomes():
    touches, runs = shell_actions(
        "cd /repo && timeout 60 python -m pytest tests/test_x.py::test_a -q 2>&1 | tail -5"
    )
    assert [r.key for r in runs] == ["pytest test_x.py"]
    assert [(t.path, t.category) for t in touches] == [("tests/test_x.py", "ran")]
    touches, runs = shell_actions("sed -i 's/a;b|c/d/' src/x.py && rm -f old.py && ls")
    assert [(t.path, t.category) for t in touches] == [("src/x.py", "changed"), ("old.py", "deleted")]
    assert runs == ()
    assert outcome_of("<returncode>0</returncode>\nok") == "passed"
    assert outcome_of("[The command completed with exit code 2.]") == "failed"
    assert outcome_of("E   ValueError: bad value") == "failed"
    assert outcome_of("    except ValueError: pass") == "passed"  # code naming an error is no error


def test_replay_fills_the_probe_columns_and_the_extractive_summary_beats_both_floors():
    from ctxlab.replay import replay_many

    path = MINI / "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13297"
    result = replay_many(
        [path], ["ars-extractive"], settings=CompressionSettings(summary_threshold=16), progress=False
    )
    rows = [r for r in result.rows if r["level"] == "L2"]
    assert rows and all(r["probes"] is not None and r["summary_tokens"] > 0 for r in rows)
    total = sum(r["probes"] for r in rows)
    passed = sum(r["probes_passed"] for r in rows)
    dump = sum(r["dump_probes_passed"] for r in rows)
    recent = sum(r["recent_probes_passed"] for r in rows)
    assert total > 0 and passed > max(dump, recent)
    summary = result.summary().row(0, named=True)
    assert summary["probe_pass_rate"] == pytest.approx(passed / total)
    record = result.summaries[0]
    assert {"kind", "subject", "attribute", "passed"} <= set(record["probe_details"][0])


def test_the_executive_summary_says_when_a_strategy_does_not_beat_the_floors() -> None:
    import polars as pl

    from ctxlab.analysis.fidelity_verdicts import fidelity_line, fidelity_warnings

    totals = pl.DataFrame(
        {
            "strategy": ["good", "names-only", "floor-identifiers", "dropper"],
            "probe_pass_rate": [0.9, 0.1, 0.0, None],
            "dump_probe_pass_rate": [0.0, 0.0, 0.0, None],
            "recent_probe_pass_rate": [0.1, 0.2, 0.1, None],
            "probes": [20, 1, 20, None],
            "rejected_calls": [0, 0, 0, 3],
            "cost_saving_pct_without_failed": [20.0, 10.0, 5.0, 4.5],
        }
    )
    line = fidelity_line(totals)
    assert line is not None and "good 0.900 over 20 probes (identifier dump 0.000, keep-recent 0.100)" in line
    assert "names-only 0.100 over 1 probe (" in line  # a rate over one probe says so
    assert "floor-identifiers" not in line  # a floor is not judged against itself
    warnings = fidelity_warnings(totals)
    assert warnings == [
        "names-only does not beat the reference floors on its own rounds (probe pass 0.100; identifier "
        "dump 0.000, keep-recent 0.200): no claim to summary fidelity.",
        "dropper: 3 request(s) a provider would reject (unmatched tool calls/results), left out of its "
        "savings; its dollar saving over the valid calls is 4.5 %.",
    ]
