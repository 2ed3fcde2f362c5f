"""Summary fidelity on hand-built rounds whose recalls are known by construction."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.replay.fidelity import FIDELITY_DEFINITIONS, RoundFidelity, fidelity_totals, summary_fidelity

# the span holds 5 identifiers: src/app/models.py, compute_total, ValueError, /etc/app/config.yaml,
# unused_helper; port 8080 is in the kept window
SPAN = [
    HumanMessage("Fix the bug in src/app/models.py", id="h1"),
    AIMessage("def compute_total(items): raise ValueError", id="a1"),
    HumanMessage("read /etc/app/config.yaml", id="h2"),
    HumanMessage("unused_helper is dead code", id="h3"),
]
KEPT = [HumanMessage("the service listens on port 8080", id="k1")]
# later turns use models.py, compute_total, ValueError, config.yaml (4 needed) and 8080 (kept)
LATER = [
    AIMessage("I will edit src/app/models.py so compute_total stops raising ValueError", id="a2"),
    ToolMessage("done", tool_call_id="t1", id="t1"),
    AIMessage("config at /etc/app/config.yaml, port 8080", id="a3"),
]
# carries everything but /etc/app/config.yaml
SUMMARY = "Task: fix src/app/models.py; compute_total raises ValueError; unused_helper is unused."


def test_a_summary_that_drops_one_of_four_needed_identifiers_has_needed_recall_075() -> None:
    r = summary_fidelity(SPAN, HumanMessage(SUMMARY), kept=KEPT, later=LATER)
    assert (r.needed_identifiers, r.needed_carried) == (4, 3)
    assert r.needed_recall == 0.75
    assert r.dropped == ("/etc/app/config.yaml",)
    assert (r.span_identifiers, r.span_carried) == (5, 4)
    assert r.span_recall == pytest.approx(0.8)


def test_the_summary_may_be_given_as_text() -> None:
    as_text = summary_fidelity(SPAN, SUMMARY, kept=KEPT, later=LATER)
    as_message = summary_fidelity(SPAN, HumanMessage(SUMMARY), kept=KEPT, later=LATER)
    assert as_text == as_message


def test_an_identifier_in_the_kept_window_or_system_is_not_needed_from_the_summary() -> None:
    system = SystemMessage("Config lives in /etc/app/config.yaml")
    r = summary_fidelity(SPAN, SUMMARY, kept=KEPT, later=LATER, system=system)
    assert (r.needed_identifiers, r.needed_carried, r.needed_recall) == (3, 3, 1.0)
    kept = [*KEPT, HumanMessage("see /etc/app/config.yaml")]
    assert summary_fidelity(SPAN, SUMMARY, kept=kept, later=LATER).needed_recall == 1.0


def test_a_later_message_before_the_use_makes_the_identifier_available_again() -> None:
    # the agent re-read the config before using its path: not needed from the summary
    later = [LATER[0], ToolMessage("cat /etc/app/config.yaml: debug=true", tool_call_id="t2"), LATER[2]]
    r = summary_fidelity(SPAN, SUMMARY, kept=KEPT, later=later)
    assert (r.needed_identifiers, r.needed_recall, r.dropped) == (3, 1.0, ())


def test_only_assistant_turns_count_as_uses() -> None:
    later = [HumanMessage("what about /etc/app/config.yaml?")]
    r = summary_fidelity(SPAN, SUMMARY, kept=KEPT, later=later)
    assert r.needed_identifiers == 0
    assert r.needed_recall is None


def test_a_path_suffix_in_the_summary_carries_the_suffix_used_later() -> None:
    span = [HumanMessage("edit /repo/pkg/core/settings.py")]
    later = [AIMessage("patching core/settings.py now")]
    assert summary_fidelity(span, "fixing pkg/core/settings.py", later=later).needed_recall == 1.0
    assert summary_fidelity(span, "fixing the settings module", later=later).needed_recall == 0.0


def test_an_empty_span_has_no_recall() -> None:
    r = summary_fidelity([HumanMessage("hello there")], "nothing", later=[AIMessage("ok")])
    assert (r.span_identifiers, r.span_recall, r.needed_recall) == (0, None, None)


def test_totals_pool_the_rounds_and_average_their_recalls() -> None:
    a = summary_fidelity(SPAN, SUMMARY, kept=KEPT, later=LATER)  # needed 3/4, span 4/5
    b = RoundFidelity(span_identifiers=5, span_carried=5, needed_identifiers=1, needed_carried=1)
    empty = RoundFidelity(span_identifiers=0, span_carried=0, needed_identifiers=0, needed_carried=0)
    t = fidelity_totals([a, b.as_dict(), empty])
    assert t.rounds == 3
    assert t.needed_recall == pytest.approx(4 / 5)
    assert t.mean_needed_recall == pytest.approx((0.75 + 1.0) / 2)
    assert t.span_recall == pytest.approx(9 / 10)
    assert t.mean_span_recall == pytest.approx((0.8 + 1.0) / 2)
    assert fidelity_totals([{"text": "a summary record without counts"}]).rounds == 0
    assert fidelity_totals([]).needed_recall is None


def test_definitions_say_what_is_not_captured() -> None:
    assert "paraphrase" in FIDELITY_DEFINITIONS["needed_recall"]
