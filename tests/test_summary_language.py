"""The summary follows the conversation's language (``summary_language="auto"``, a deliberate
deviation from the seed's Chinese default, docs/middleware.md), in a real ``create_agent`` loop
with a SQLite checkpointer and a real ``FilesystemBackend``; ``zh``/``en`` force a language; the
offline structured summarizer writes one language throughout."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from ctxlab import SUMMARY_PROMPT_EN, SUMMARY_PROMPT_ZH, CompressionMiddleware, CompressionSettings
from ctxlab.core.builtin.summarizers import ForceStructuredSummarizer
from ctxlab.core.marks import summary_kwargs
from ctxlab.core.prompts import conversation_language, text_language

TASK_EN = "Please inspect the build logs of the parser project and tell me which step failed."
TASK_ZH = "请检查解析器项目的构建日志，告诉我哪一步失败了，并给出修复建议。"


@tool
def read_log(step: int) -> str:
    """Read the build log of one step."""
    lines = [f"step {step} line {i:04d}: compiling src/parser/module_{i % 9}.py ok" for i in range(120)]
    if step == 3:
        lines.append("ValueError: unexpected token in src/parser/grammar.py")
    return "\n".join(lines)


def script() -> list[AIMessage]:
    turns = [
        AIMessage(
            content=f"Reading step {i}.",
            tool_calls=[{"name": "read_log", "args": {"step": i}, "id": f"call-{i}", "type": "tool_call"}],
        )
        for i in range(1, 7)
    ]
    return [*turns, AIMessage(content="Step 3 failed.")]


SETTINGS = CompressionSettings(
    summary_threshold=2,
    summary_keep_messages=2,
    summary_tool_result_token_limit=4000,
    summary_l2_trigger_ratio=0.4,
)


def run_agent(mw_kit, tmp_path, task: str, *, settings=SETTINGS, summarizer=None, plugins=()):
    model = mw_kit.ScriptedModel(script=script(), profile={"max_input_tokens": 200_000})
    mw = CompressionMiddleware(
        settings=settings,
        backend=mw_kit.backend(tmp_path / "files"),
        summarizer=summarizer,
        plugins=list(plugins),
    )
    conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        agent = create_agent(model=model, tools=[read_log], middleware=[mw], checkpointer=SqliteSaver(conn))
        config = {"configurable": {"thread_id": "lang"}}
        agent.invoke({"messages": [HumanMessage(task)]}, config)
        values = agent.get_state(config).values
    finally:
        conn.close()
    event = values.get("_summarization_event")
    assert event is not None, "the run never summarized: the test does not test anything"
    return event["summary_message"].content


@pytest.mark.parametrize(
    ("task", "header", "template", "other_header"),
    [
        (TASK_EN, "[Context summary]", SUMMARY_PROMPT_EN, "[上下文摘要]"),
        (TASK_ZH, "[上下文摘要]", SUMMARY_PROMPT_ZH, "[Context summary]"),
    ],
)
def test_the_summary_follows_the_users_language_by_default(
    mw_kit, tmp_path, task, header, template, other_header
):
    # spec: R2/R10 — the default (auto) template and framing are the language of the user's messages
    summ = mw_kit.FakeSummarizer()
    summary = run_agent(mw_kit, tmp_path, task, summarizer=summ)
    assert summary.startswith(header) and other_header not in summary
    assert summ.calls and summ.calls[0]["input"].startswith(template.split("{messages}")[0].strip()[:40])
    latest = next(line for line in summary.splitlines() if "verbatim" in line or "原文" in line)
    assert latest in ("The user's latest request (verbatim):", "用户最近的请求（原文）：")
    assert (latest.startswith("The")) == (header == "[Context summary]")


@pytest.mark.parametrize(
    ("task", "labels", "foreign"),
    [
        (
            TASK_EN,
            ["Task:", "Files touched:", "Commands run:", "Errors seen:", "Current state:"],
            ["任务", "（无）"],
        ),
        (
            TASK_ZH,
            ["任务：", "涉及的文件：", "执行的命令：", "遇到的错误：", "当前状态："],
            ["Task:", "Files touched", "(none)"],
        ),
    ],
)
def test_the_offline_summary_is_in_one_language(mw_kit, tmp_path, task, labels, foreign):
    summary = run_agent(mw_kit, tmp_path, task, plugins=[ForceStructuredSummarizer()])
    for label in labels:
        assert f"\n{label}\n" in summary, (label, summary[:400])
    for word in foreign:
        assert word not in summary
    assert "ValueError: unexpected token in src/parser/grammar.py" in summary or "src/parser" in summary


@pytest.mark.parametrize(("language", "header"), [("zh", "[上下文摘要]"), ("en", "[Context summary]")])
def test_an_explicit_language_wins_over_the_conversation(mw_kit, tmp_path, language, header):
    summ = mw_kit.FakeSummarizer()
    task = TASK_EN if language == "zh" else TASK_ZH
    summary = run_agent(
        mw_kit, tmp_path, task, settings=SETTINGS.replace(summary_language=language), summarizer=summ
    )
    assert summary.startswith(header)
    template = SUMMARY_PROMPT_ZH if language == "zh" else SUMMARY_PROMPT_EN
    assert summ.calls[0]["input"].startswith(template.split("{messages}")[0].strip()[:40])


def test_conversation_language_reads_user_requests_only():
    # tool output and observations do not decide the language; a summary's carried request does
    english_tool_noise = AIMessage("I will now read a very long English log " * 20)
    assert conversation_language([HumanMessage(TASK_ZH), english_tool_noise]) == "zh"
    assert conversation_language([HumanMessage(TASK_EN)]) == "en"
    assert conversation_language([]) == "en"
    summary = HumanMessage("[上下文摘要] ...", additional_kwargs=summary_kwargs("body", TASK_ZH))
    assert conversation_language([summary, AIMessage("ok")]) == "zh"
    # code and paths around a Chinese sentence: still Chinese; a few CJK words in English: English
    assert text_language("修复 src/parser/grammar.py 里的 bug，然后运行测试") == "zh"
    assert text_language("Translate 你好 into English, please, and explain the grammar") == "en"


def test_text_language_without_a_cjk_character_is_english_as_the_character_loop_decides() -> None:
    # issue 31: a text without a CJK character is answered without the loop per character; the
    # answers equal the loop's on texts around the edges of the four CJK ranges
    import random

    from ctxlab.core.prompts import _is_cjk

    def by_loop(text: str) -> str:
        cjk = words = 0
        in_word = False
        for ch in text:
            if _is_cjk(ch):
                cjk, in_word = cjk + 1, False
            elif ch.isalpha():
                words, in_word = words + (0 if in_word else 1), True
            else:
                in_word = False
        return "zh" if cjk > words else "en"

    edges = [
        chr(c)
        for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x3000, 0x303F), (0xFF00, 0xFFEF))
        for c in (lo - 1, lo, hi, hi + 1)
    ]
    alphabet = [*edges, "a", "Z", " ", "1", "_", "é", "я", "한", "\n", "/"]
    rng = random.Random(31)
    texts = ["", "plain ascii words", "café résumé", "한국어 문장", *edges]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    for text in texts:
        assert text_language(text) == by_loop(text), repr(text)
    assert {by_loop(t) for t in texts} == {"zh", "en"}  # both answers occur


def _language_by_every_message(messages: list[Any]) -> str:
    """The reading of every message, as before issue 31's skip of unmarked non-user messages."""
    from ctxlab.core.marks import is_summary_message, is_user_request, latest_request_of
    from ctxlab.core.messages import message_text
    from ctxlab.core.prompts import LANGUAGE_SAMPLE_CHARS

    parts: list[str] = []
    size = 0
    for m in messages:
        text = None
        if is_user_request(m):
            text = message_text(m)
        elif is_summary_message(m):
            text = latest_request_of(m)
        if text:
            parts.append(text)
            size += len(text)
            if size >= LANGUAGE_SAMPLE_CHARS:
                break
    return text_language("\n".join(parts)[:LANGUAGE_SAMPLE_CHARS])


def test_conversation_language_skips_only_what_cannot_count() -> None:
    """Messages that are neither a user request nor marked as a summary are skipped at once
    (issue 31); a summary mark on any kind of message, observations, result blocks, a long
    English prefix before Chinese requests and objects that are not messages decide as before."""
    rng = random.Random(7)
    summary_ai = AIMessage(content="s", additional_kwargs=summary_kwargs("s", latest_request=TASK_ZH * 3))
    kinds: list[Any] = [
        HumanMessage(TASK_EN),
        HumanMessage(TASK_ZH),
        HumanMessage("obs " * 50, additional_kwargs={"ctxlab_observation": True}),
        HumanMessage(content=[{"type": "tool_result", "tool_use_id": "c1", "content": TASK_ZH}]),
        HumanMessage(TASK_EN * 400),  # 30k characters: reaches the sample on its own
        AIMessage(content=TASK_ZH),
        AIMessage(content="", additional_kwargs={"reasoning_content": TASK_ZH}),
        summary_ai,
        ToolMessage(content=TASK_ZH, tool_call_id="c1"),
        SystemMessage(content=TASK_ZH),
        {"role": "user", "content": TASK_ZH},
    ]
    answers = set()
    for _ in range(400):
        messages = rng.choices(kinds, k=rng.randint(0, 12))
        expected = _language_by_every_message(messages)
        assert conversation_language(messages) == expected
        answers.add(expected)
    assert answers == {"en", "zh"}
