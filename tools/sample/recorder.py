"""Recording: run the scripted agent over the real tools and write the transcript JSON in the
OpenAI chat-completions message format."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

from ctxlab.replay.models import ScriptedChatModel
from tools.sample.plan import SYSTEM_PROMPT, USER_TURNS, scripted_plan
from tools.sample.sandbox import Sandbox, make_tools
from tools.sample.script import Turns

__all__ = [
    "FORMER_GENERATORS",
    "GENERATOR",
    "MODEL_NAME",
    "PACKAGES",
    "package_versions",
    "record_sample",
    "to_openai_messages",
]

MODEL_NAME = "scripted-fake"
#: the ``generator`` a recording names: this recorder, run as ``python -m tools.sample``
GENERATOR = "tools.sample"
#: the names the recorder wrote before it moved out of the package (``ctxlab.cli.sample``, issue
#: 18); the bundled sample, recorded then, still names it and is kept byte for byte
FORMER_GENERATORS = ("ctxlab.cli.sample",)
PACKAGES = ("langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "deepagents")


def _content_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return message.text


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat-completions messages (text content only), one dict per message.

    Raises:
        TypeError: a message is not a system, human, AI or tool message.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": _content_text(m)})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": _content_text(m)})
        elif isinstance(m, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": _content_text(m)}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": tc["id"],
                        "type": "function",
                        "function": {
                            "name": tc["name"],
                            "arguments": json.dumps(tc["args"], ensure_ascii=False),
                        },
                    }
                    for tc in m.tool_calls
                ]
            out.append(entry)
        elif isinstance(m, ToolMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": m.tool_call_id,
                    "name": m.name or "",
                    "content": _content_text(m),
                }
            )
        else:  # pragma: no cover - the agent produces only the four kinds above
            raise TypeError(f"unexpected message type {type(m).__name__}")
    return out


def package_versions() -> dict[str, str]:
    """The installed version of each of :data:`PACKAGES` (``"not installed"`` when missing)."""
    got = {}
    for name in PACKAGES:
        try:
            got[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            got[name] = "not installed"
    return got


def record_sample(out_path: str | Path, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the scripted agent and write the transcript JSON to ``out_path``.

    Args:
        out_path: where to write the JSON (parent folders are created).
        progress: optional callback receiving one line per finished user turn.

    Returns:
        The recorded document (``{"messages": [...], "model": ..., "generator": ..., "tools": [...],
        "metadata": {...}}``), as written.

    Raises:
        RuntimeError: the plan has assistant turns left after the last user turn (a bug in the plan).
    """
    out_path = Path(out_path)
    turns = Turns()
    plan = scripted_plan(turns)
    model = ScriptedChatModel(plan=plan)
    with tempfile.TemporaryDirectory(prefix="ctxlab-sample-") as tmp:
        box = Sandbox(Path(tmp))
        tools = make_tools(box)
        agent = create_agent(model, tools, system_prompt=SYSTEM_PROMPT)
        messages: list[AnyMessage] = []
        for i, text in enumerate(USER_TURNS, 1):
            state = agent.invoke(
                {"messages": [*messages, HumanMessage(text)]},
                config={"recursion_limit": 2_000},
            )
            messages = list(state["messages"])
            if progress:
                progress(f"turn {i}: {len(messages)} messages, {turns.n} tool calls so far")
    try:
        next(plan)
    except StopIteration:
        pass
    else:  # pragma: no cover - a plan/turn mismatch is a bug in this module
        raise RuntimeError("the scripted plan has assistant turns left after the last user turn")

    doc = {
        "messages": to_openai_messages([SystemMessage(SYSTEM_PROMPT), *messages]),
        "model": MODEL_NAME,
        "generator": GENERATOR,
        "tools": [convert_to_openai_tool(tool) for tool in tools],
        "metadata": {
            "description": "Scripted survey of LangChain/DeepAgents middleware with real tool outputs.",
            "packages": package_versions(),
            "python": platform.python_version(),
        },
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return doc
