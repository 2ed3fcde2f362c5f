"""The recorder of the bundled sample transcript (``ctxlab/data/sample_run.json``): a long
scripted agent run with real tools.  A developer tool: it lives in the repository's ``tools/``,
outside the installed package.

``record_sample(out_path)`` runs a LangChain v1 agent (``langchain.agents.create_agent``) whose
chat model is scripted (:class:`ScriptedChatModel`: it replays a fixed plan of assistant turns
and tool calls, no API key, no network) while the tools are real and do real work:

* ``read_file`` reads source files of the installed ``langchain``/``langgraph``/``deepagents``
  packages (paths relative to site-packages) or of the agent's temporary workspace;
* ``run_command`` runs a small whitelist of programs (``ls``, ``grep``, ``wc``, ``head``,
  ``tail``, ``python -c``) without a shell;
* ``write_file`` and ``edit_file`` write into the temporary workspace.

The plan surveys how LangChain's middleware hooks are implemented and writes a report, over four
user turns: about 230 tool calls, some of them parallel, mostly small results plus ~25 large file
reads, and several ``write_file``/``edit_file`` calls with arguments over 2,000 characters. With
ARS's default settings the run crosses the entry threshold, then L1 trims the large results, and
the small messages that remain still exceed the L2 trigger, so both levels happen on replay.

The recording is in the OpenAI chat-completions message format, wrapped as
``{"messages": [...], "model": "scripted-fake", "generator": "tools.sample", ...}`` (the bundled
sample, recorded before the recorder left the package, names :data:`FORMER_GENERATORS`). Host paths
never appear in it: site-packages paths are shown relative, the workspace as ``workspace/``.
The structure (messages, tool-call names and ids) is fixed by the plan; tool outputs are
deterministic for the same installed package versions.

The package, by job (each module imports only the ones listed before it):

* :mod:`~tools.sample.sandbox`: path mapping, output cleaning and the four real tools;
* :mod:`~tools.sample.calls`: the builders of calls to those tools;
* :mod:`~tools.sample.script`: the plan's vocabulary (scripted turns, tables of turns,
  readers of grep output, the surveyed paths and module lists);
* :mod:`~tools.sample.probes`: the ``python -c`` snippets the agent runs;
* :mod:`~tools.sample.sections`: the notes and report texts the agent writes;
* :mod:`~tools.sample.plan_survey`, :mod:`~tools.sample.plan_followups`: the four turns;
* :mod:`~tools.sample.plan`: the system prompt, the user turns and the whole plan;
* :mod:`~tools.sample.recorder`: :func:`record_sample` and :func:`to_openai_messages`.

Besides LangChain/LangGraph and the standard library it uses only
:class:`ctxlab.replay.models.ScriptedChatModel` and :data:`ctxlab.transcripts.locate.SAMPLE_TRANSCRIPT`.

CLI, from the repository root (``OUT`` defaults to the bundled sample)::

    .venv/bin/python -m tools.sample record [OUT.json]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT
from tools.sample.recorder import FORMER_GENERATORS, GENERATOR, MODEL_NAME, record_sample, to_openai_messages

__all__ = [
    "FORMER_GENERATORS",
    "GENERATOR",
    "MODEL_NAME",
    "SAMPLE_TRANSCRIPT",
    "main",
    "record_sample",
    "to_openai_messages",
]


def _iter_lines(doc: dict[str, Any]) -> Iterator[str]:
    msgs = doc["messages"]
    calls = sum(len(m.get("tool_calls", [])) for m in msgs)
    chars = sum(len(m.get("content") or "") for m in msgs)
    yield f"{len(msgs)} messages, {calls} tool calls, {chars} content characters"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.sample record OUT``: record the sample transcript."""
    parser = argparse.ArgumentParser(prog="python -m tools.sample", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the scripted agent and write the transcript JSON")
    rec.add_argument("out", type=Path, nargs="?", default=SAMPLE_TRANSCRIPT, help="output file")
    args = parser.parse_args(argv)
    if args.command == "record":
        doc = record_sample(args.out, progress=lambda line: print(line, file=sys.stderr))
        for line in _iter_lines(doc):
            print(line)
        print(f"wrote {args.out}")
    return 0
