"""The replay's shortcuts (issue 31) give the numbers of the full computation when their
assumption breaks.

* :class:`~ctxlab.replay.provider.RunRefusals` assumes a request extends the run's previous one;
  requests with messages edited, removed, reordered, other tools or another system message get
  the byte bound and the refusals of :meth:`ContextWindow.refuse` on the whole request.
* :class:`~ctxlab.replay.tracking.SharedView` (a run takes another run's measures of a call whose
  requests are the very same objects) and the shared pricing: strategies that edit and remove
  messages mid-run, two of them alike except at some calls (a run that takes another's measures,
  then measures itself), and ``recorded`` across the agent's own compaction, replayed in one
  batch, give the rows of each strategy replayed alone (no other run to share with).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import replay_many
from ctxlab.replay.provider import ContextWindow
from ctxlab.transcripts import load_transcripts
from ctxlab.transcripts.base import Transcript, recorded_compaction_of

SHARED = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
FILES = (
    SHARED / "incoming" / "claude-code-compaction" / "entire-cli_ca-fca7ea73ac_0_full.jsonl",
    SHARED
    / "raw/swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source"
    / "marshmallow-code__marshmallow-1867.traj",
)


def _messages(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        if i % 3 == 0:
            out.append(HumanMessage(f"question {i} about módulo_{i}.py " * (i % 5 + 1), id=f"h{i}"))
        elif i % 3 == 1:
            call = {"name": "read", "args": {"path": f"src/m{i}.py"}, "id": f"c{i}", "type": "tool_call"}
            out.append(AIMessage(f"reading {i}", tool_calls=[call], id=f"a{i}"))
        else:
            out.append(ToolMessage("line\n" * (i * 7), tool_call_id=f"c{i - 1}", id=f"t{i}"))
    return out


def test_run_refusals_count_edited_removed_and_rewritten_requests_in_full() -> None:
    system, other_system = SystemMessage("you are an agent"), SystemMessage("you are another agent")
    tools: list[Any] = [{"name": "read", "description": "read a file", "parameters": {"type": "object"}}]
    ms = _messages(24)
    edited = [*ms[:5], ms[5].model_copy(update={"content": "an edited answer " * 40}), *ms[6:20]]
    requests: list[tuple[SystemMessage, list[Any], list[BaseMessage]]] = [
        (system, tools, ms[:4]),
        (system, tools, ms[:8]),  # extends the previous request (the shortcut)
        (system, tools, ms[:12]),
        (system, tools, edited),  # a message edited mid-run (a new object in the middle)
        (system, tools, [*edited[:3], *edited[6:]]),  # messages removed
        (system, tools, ms[:2]),  # shorter than the previous one
        (system, tools, list(reversed(ms[:10]))),  # reordered
        (system, [], ms[:10]),  # other tools
        (other_system, [*tools, *tools], ms[:10]),  # another system message, more tools
        (other_system, [*tools, *tools], []),  # no messages
        (system, tools, ms),  # the whole history again
    ]
    whole = ContextWindow(10**9)
    sizes = sorted({whole._bound.request_tokens(s, t, m) for s, t, m in requests})  # type: ignore[union-attr]
    # windows between the bounds: some requests are let through on the bound, others are counted
    # exactly, and some are refused
    for max_tokens in (sizes[0], sizes[len(sizes) // 2], sizes[-1] - 1, 10**9):
        window = ContextWindow(max_tokens)
        run = window.run_refusals()
        for s, t, m in requests:
            assert run.bound(s, t, m) == window._bound.request_tokens(s, t, m)  # type: ignore[union-attr]
            assert _outcome(run.refuse, s, t, m) == _outcome(window.refuse, s, t, m)


def _outcome(refuse: Callable[..., None], *request: Any) -> str | None:
    """The refusal's message, ``None`` when the request is let through."""
    try:
        refuse(*request)
    except ContextOverflowError as exc:
        return str(exc)
    return None


#: copies made by the editing middlewares, shared by both: the same edited object for both runs
_EDITED: dict[int, tuple[BaseMessage, BaseMessage]] = {}


class _Editing(AgentMiddleware):  # type: ignore[type-arg]
    """Edits and removes history messages from the 6th message on; ``skip`` calls (by request
    length) are sent as they are."""

    skip: frozenset[int] = frozenset()

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        messages = list(request.messages)
        if len(messages) >= 6 and len(messages) not in self.skip:
            original = messages[1]
            kept = _EDITED.get(id(original))
            if kept is None or kept[0] is not original:
                kept = _EDITED[id(original)] = (original, original.model_copy(update={"content": "(edited)"}))
            messages[1] = kept[1]
            if len(messages) >= 9:
                del messages[3]
        return handler(request.override(messages=messages))


class EditingA(_Editing):
    pass


class EditingB(_Editing):
    skip = frozenset({7, 10, 11, 15})  # as A except at these calls: takes A's measures, then not


@pytest.fixture(scope="module")
def transcripts() -> list[Transcript]:
    assert all(f.is_file() for f in FILES), "the shared transcripts (../shared/transcripts) are missing"
    out = [t for f in FILES for t in load_transcripts(f)]
    assert any(recorded_compaction_of(m) is not None for t in out for m in t.messages)
    return out


def _rows(result: Any) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in result.rows:
        out.setdefault((r["transcript"], r["strategy"]), []).append(
            {k: v for k, v in r.items() if k != "overhead_ms"}  # wall time aside
        )
    return out


def test_a_batch_of_editing_strategies_and_recorded_gives_the_rows_of_each_alone(
    transcripts: list[Transcript], tmp_path: Path
) -> None:
    options: dict[str, Any] = {
        "settings": CompressionSettings(summary_threshold=4),
        "progress": False,
        "context_window": 60_000,
        "unrecorded_prefix": "off",
    }

    def strategies() -> list[Any]:
        return ["ars", EditingA(), EditingB(), "recorded", "masking"]

    together = replay_many(transcripts, strategies(), out_dir=tmp_path / "together", **options)
    rows = _rows(together)
    names = {key[1] for key in rows}
    assert {"ars", "recorded", "masking"} < names and len(names) == 5
    # the assumptions break: edited views, views that shrink, the agent's own compaction
    assert any(r["level"] == "L2" for r in together.rows if r["strategy"] == "recorded")
    edited = [r for r in together.rows if r["strategy"] not in {"ars", "recorded", "masking"}]
    assert any(r["view_tokens"] != r["raw_tokens"] for r in edited)
    for i, strategy in enumerate(strategies()):
        alone = replay_many(transcripts, [strategy], out_dir=tmp_path / f"alone{i}", **options)
        assert {(e.transcript, e.strategy) for e in alone.errors} == {
            (e.transcript, e.strategy) for e in together.errors if e.strategy == alone.strategies[0]
        }
        assert len(alone.rows) > 0
        for key, expected in _rows(alone).items():
            assert rows[key] == expected, key


def test_runs_that_sent_the_same_requests_are_priced_once_with_the_same_costs(
    transcripts: list[Transcript], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ctxlab.replay.run_measures as run_measures_module

    priced: list[int] = []
    price_run = run_measures_module.price_run

    def counted(calls: Any, *args: Any, **kwargs: Any) -> Any:
        if any(c.segments for c in calls):  # a run's own requests, not the uncompressed ones
            priced.append(len(calls))
        return price_run(calls, *args, **kwargs)

    monkeypatch.setattr(run_measures_module, "price_run", counted)
    options: dict[str, Any] = {"progress": False, "unrecorded_prefix": "off"}  # below every trigger
    two = ["ars", "langchain-summarization"]
    together = replay_many(transcripts, two, out_dir=tmp_path / "together", **options)
    rows = _rows(together)
    assert not together.errors and all(r["view_tokens"] == r["raw_tokens"] for r in together.rows)
    assert len(priced) == len(transcripts)  # once per transcript, not once per strategy
    for strategy in two:  # the same costs (and every other column) as each run priced alone
        alone = replay_many(transcripts, [strategy], out_dir=tmp_path / strategy, **options)
        for key, expected in _rows(alone).items():
            assert rows[key] == expected, key
    assert len(priced) == len(transcripts) + 2 * len(transcripts)  # alone: each run priced itself
