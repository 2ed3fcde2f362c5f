"""Summarizer replies cached on disk (``ctxlab.replay.summary_cache``): the same ``ctxlab replay``
command run twice asks the summarizer model nothing the second time; ``--summary-cache off`` asks
again; the hits and misses are in run.json.  The command runs in-process with
``init_chat_model`` answering a counting fake model (the only fake: the replay, the middleware
and the files are real)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ctxlab.cli.main import main
from ctxlab.replay.summary_cache import CACHE_DIR, CACHE_FILE, SummaryCache

CALLS = "140"  # the sample's first 140 calls hold its first L2 round


class CountingSummarizer(BaseChatModel):
    """Answers every call with a numbered summary; counts the calls across instances."""

    calls: ClassVar[list[str]] = []
    model: str = "counting-1"

    @property
    def _llm_type(self) -> str:
        return "counting-summarizer"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model}

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        type(self).calls.append(str(messages[-1].content))
        text = f"SUMMARY {len(self.calls)} by {self.model}: the agent surveyed langchain/agents/middleware."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


@pytest.fixture(autouse=True)
def fake_provider(monkeypatch: pytest.MonkeyPatch):
    import langchain.chat_models

    CountingSummarizer.calls.clear()
    monkeypatch.setattr(langchain.chat_models, "init_chat_model", lambda name: CountingSummarizer(model=name))


def replay(out: Path, *more: str) -> dict[str, Any]:
    code = main(
        [
            "replay",
            "--limit-calls",
            CALLS,
            "--summarizer-model",
            "fake:counting-1",
            "--out",
            str(out),
            "--no-figures",
            "--no-progress",
            *more,
        ]
    )
    assert code == 0
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def summaries(out: Path) -> list[str]:
    return [json.loads(line)["text"] for line in (out / "summaries.jsonl").read_text().splitlines()]


def test_a_second_run_of_the_same_command_makes_no_summarizer_call(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = replay(out)
    asked = len(CountingSummarizer.calls)
    assert asked >= 1
    assert first["summary_cache"] == {"path": str(out / CACHE_DIR / CACHE_FILE), "hits": 0, "misses": asked}
    texts = summaries(out)
    assert texts and "SUMMARY 1 by fake:counting-1" in texts[0]

    second = replay(out)
    assert len(CountingSummarizer.calls) == asked  # zero calls the second time
    assert second["summary_cache"]["hits"] == asked and second["summary_cache"]["misses"] == 0
    assert summaries(out) == texts  # the same summaries, from the cache


def test_off_asks_the_model_again_and_records_no_cache(tmp_path: Path) -> None:
    replay(tmp_path / "a")
    asked = len(CountingSummarizer.calls)
    record = replay(tmp_path / "a", "--summary-cache", "off")
    assert len(CountingSummarizer.calls) == 2 * asked
    assert "summary_cache" not in record


def test_a_cache_folder_is_shared_by_runs_and_keyed_by_the_model(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    replay(tmp_path / "a", "--summary-cache", str(cache))
    asked = len(CountingSummarizer.calls)
    assert (cache / CACHE_FILE).is_file()
    record = replay(tmp_path / "b", "--summary-cache", str(cache))  # another output folder, same cache
    assert len(CountingSummarizer.calls) == asked and record["summary_cache"]["hits"] == asked
    main(
        [
            "replay",
            "--limit-calls",
            CALLS,
            "--summarizer-model",
            "fake:counting-2",
            "--out",
            str(tmp_path / "c"),
            "--summary-cache",
            str(cache),
            "--no-figures",
            "--no-progress",
        ]
    )
    assert len(CountingSummarizer.calls) == 2 * asked  # another model: its own entries


def test_a_file_given_as_the_cache_folder_is_a_usage_error(tmp_path: Path, capsys) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    code = main(
        [
            "replay",
            "--summarizer-model",
            "fake:counting-1",
            "--summary-cache",
            str(not_a_folder),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == 2 and "--summary-cache" in capsys.readouterr().err
    assert CountingSummarizer.calls == []


def test_the_cache_round_trips_a_reply(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path / "c.sqlite")
    model = CountingSummarizer(cache=cache)
    first = model.invoke("summarize this")
    again = CountingSummarizer(cache=SummaryCache(tmp_path / "c.sqlite")).invoke("summarize this")
    assert again.content == first.content and len(CountingSummarizer.calls) == 1
    assert (cache.hits, cache.misses) == (0, 1)
