"""Summary prompt templates and the framing text of summary messages (spec R2).

Both templates must contain the ``{messages}`` placeholder; the summarizer fills it with the
cleaned history (a plain-text transcript, see :func:`ctxlab.core.summarize.history_text`).
The Chinese template is the ARS default (seed page: "内置中文模板"); the English one ships
beside it (R2).
"""

from __future__ import annotations

from dataclasses import dataclass

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
}
FRAMING_ZH = SummaryFraming(**{field: zh for field, (zh, _en) in _FRAMING_TEXTS.items()})
FRAMING_EN = SummaryFraming(**{field: en for field, (_zh, en) in _FRAMING_TEXTS.items()})


def framing_for(template: str) -> SummaryFraming:
    """Chinese framing for a template that is mostly CJK, English framing otherwise."""
    cjk = sum(1 for ch in template if "\u4e00" <= ch <= "\u9fff")
    return FRAMING_ZH if cjk * 4 > len(template) * 0.5 else FRAMING_EN
