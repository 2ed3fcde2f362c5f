"""Summary prompt templates and the framing text of summary messages (spec R2).

Both templates must contain the ``{messages}`` placeholder; the summarizer fills it with the
cleaned history (a plain-text transcript, see :func:`ctxlab.core.summarize.history_text`).
The Chinese template is the seed's default (seed page: "内置中文模板"); the English one ships
beside it (R2).  ctxlab picks the template of the conversation's language by default
(``summary_language="auto"``, :func:`summary_language_of`): a deliberate deviation, so that an
English agent does not get a Chinese summary (``docs/middleware.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage

from ctxlab.core.marks import is_summary_message, is_user_request, latest_request_of
from ctxlab.core.messages import message_text

SUMMARY_PROMPT_ZH = """你是一名负责压缩智能体对话上下文的助手。下面是一段较早的对话历史（可能包含此前的摘要、\
用户请求、助手的回复、工具调用及其结果）。请写一份简洁但完整的摘要，使智能体仅凭这份摘要就能继续工作。

请按以下小节组织，保留所有具体的标识符（文件路径、函数名、类名、命令、错误信息、数字、URL）：
1. 任务：用户要求做什么（尽量保留原话）。
2. 已完成的工作与关键发现。
3. 涉及的文件与修改。
4. 执行过的命令及其结果、遇到的错误。
5. 当前状态与下一步计划。

如果历史中包含此前的摘要，请把其中的事实合并进新摘要，不要丢失。只输出摘要本身。

对话历史：
{messages}
"""

SUMMARY_PROMPT_EN = """You compress the context of an AI agent. Below is an earlier part of the \
conversation (it may contain a previous summary, user requests, assistant replies, tool calls and \
their results). Write a concise but complete summary from which the agent can continue the work \
without the original messages.

Organise it in these sections and keep every concrete identifier (file paths, function and class \
names, commands, error messages, numbers, URLs):
1. Task: what the user asked for (quote it where possible).
2. Work done and key findings.
3. Files touched and changes made.
4. Commands run, their results, errors seen.
5. Current state and next steps.

If the history contains a previous summary, carry its facts into the new summary; do not drop them.
Output only the summary.

Conversation history:
{messages}
"""


@dataclass(frozen=True)
class SummaryFraming:
    """Words around the summarizer's output in the summary message (a ``HumanMessage``)."""

    header: str
    saved_at: str
    latest_request: str
    failed: str
    previous: str
    earlier_request: str
    earlier_history: str
    request_continues: str


#: each framing text as (Chinese, English), side by side so that the two stay in step
_FRAMING_TEXTS = {
    "header": (
        "[上下文摘要] 以下是此前对话的摘要（较早的消息已被压缩）：",
        "[Context summary] The earlier part of this conversation was compressed into this summary:",
    ),
    "saved_at": ("完整的历史记录已保存到 {path} \n", "The full history is saved at {path} \n"),
    "latest_request": ("用户最近的请求（原文）：", "The user's latest request (verbatim):"),
    "failed": (
        "[摘要生成失败] 摘要模型出错：{error}",
        "[Summary failed] The summarizer raised an error: {error}",
    ),
    "previous": (
        "此前的摘要（本轮摘要失败，原样保留）：",
        "The previous summary, kept as it was because this round's summary failed:",
    ),
    "earlier_request": (
        "此前摘要保留的用户请求（原文）：",
        "An earlier user request (verbatim), kept from the previous summary:",
    ),
    "earlier_history": ("更早的历史记录保存在 {path} \n", "The earlier history is saved at {path} \n"),
    "request_continues": (
        "[…… 该请求还有 {chars} 个字符；完整原文见 {path} ]",
        "[... {chars} more characters of this request; the whole request is in {path} ]",
    ),
}
FRAMING_ZH = SummaryFraming(**{field: zh for field, (zh, _en) in _FRAMING_TEXTS.items()})
FRAMING_EN = SummaryFraming(**{field: en for field, (_zh, en) in _FRAMING_TEXTS.items()})


#: the values of ``CompressionSettings.summary_language``
SUMMARY_LANGUAGES = ("auto", "zh", "en")


def template_for(language: str) -> str:
    """The built-in summarizer template of a resolved language: ``"zh"`` or anything else (English).

    Raises:
        ValueError: ``language`` is not ``"zh"`` or ``"en"`` (``"auto"`` must be resolved first).
    """
    if language not in ("zh", "en"):
        raise ValueError(f"language={language!r} is invalid: allowed 'zh' or 'en' (resolve 'auto' first)")
    return SUMMARY_PROMPT_ZH if language == "zh" else SUMMARY_PROMPT_EN


#: one character :func:`_is_cjk` accepts (the same four ranges)
_CJK_CHAR = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\u3000-\u303f\uff00-\uffef]")


def _is_cjk(ch: str) -> bool:
    return (
        "\u4e00" <= ch <= "\u9fff"  # CJK unified ideographs
        or "\u3400" <= ch <= "\u4dbf"  # extension A
        or "\u3000" <= ch <= "\u303f"  # CJK punctuation
        or "\uff00" <= ch <= "\uffef"  # full-width forms
    )


def text_language(text: str) -> str:
    """``"zh"`` when most of the words of ``text`` are CJK, else ``"en"``.

    A CJK character counts as one word (it is about one, in Chinese), and so does each run of
    letters of another script (a Latin word, a path segment such as ``grammar``); digits,
    spaces and punctuation do not count.  So "修复 src/parser/grammar.py 里的 bug" is Chinese and
    an English sentence quoting 你好 is English.  An empty text is ``"en"``.
    """
    if text.isascii() or _CJK_CHAR.search(text) is None:
        return "en"  # no CJK character: 0 is never more than the words (issue 31: no loop per character)
    cjk = words = 0
    in_word = False
    for ch in text:
        if _is_cjk(ch):
            cjk += 1
            in_word = False
        elif ch.isalpha():
            words += 0 if in_word else 1
            in_word = True
        else:
            in_word = False
    return "zh" if cjk > words else "en"


#: characters of the user's messages read to decide their language (the first ones)
LANGUAGE_SAMPLE_CHARS = 20_000


def conversation_language(messages: Sequence[BaseMessage]) -> str:
    """The language of the user's requests in ``messages`` (:func:`text_language` of their text).

    User requests are ``HumanMessage`` s that are neither a summary nor a text observation
    (tool output pasted as a user turn says nothing of the user's language).  When there is none
    (all of them summarized), the latest request a summary message carries decides; with no user
    text at all, ``"en"``.  At most :data:`LANGUAGE_SAMPLE_CHARS` characters are read.
    """
    parts: list[str] = []
    size = 0
    for m in messages:
        if not isinstance(m, HumanMessage) and not (isinstance(m, BaseMessage) and m.additional_kwargs):
            continue  # neither a request nor marked as a summary: skipped at once (issue 31)
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


def summary_language_of(setting: str, prompt: str | None, messages: Sequence[BaseMessage]) -> str:
    """The resolved summary language (``"zh"`` or ``"en"``) of one L2 round.

    Args:
        setting: ``CompressionSettings.summary_language`` (``"auto"``, ``"zh"``, ``"en"``).
        prompt: ``CompressionSettings.summary_prompt`` (``None``: the built-in template).
        messages: the effective messages of the round.

    ``"zh"``/``"en"`` are returned as they are; ``"auto"`` is the language of a custom prompt
    (which decides what the summarizer writes), else :func:`conversation_language`.
    """
    if setting in ("zh", "en"):
        return setting
    if prompt is not None:
        return text_language(prompt.replace("{messages}", ""))
    return conversation_language(messages)


def framing_for(template: str) -> SummaryFraming:
    """The framing of a language code (``"zh"``, ``"en"``) or of a template: Chinese for a
    template that is mostly CJK, English otherwise."""
    if template in ("zh", "en"):
        return FRAMING_ZH if template == "zh" else FRAMING_EN
    cjk = sum(1 for ch in template if "\u4e00" <= ch <= "\u9fff")
    return FRAMING_ZH if cjk * 4 > len(template) * 0.5 else FRAMING_EN
