"""``context_recall``: a small offline Inspect task whose answer depends on context a strategy may drop.

Each sample asks for the access code of a project.  The first user message names the project,
the first document to fetch and a constraint on the answer (a prefix: ``submit the code prefixed
with 'QX-'``); every document's first line names the next one (``NEXT: fetch("doc-3")``), the
last one says ``END of documents``; the code is stated once, in one document.  Three kinds of
sample, :data:`SAMPLES_PER_KIND` each:

* ``early`` — the code is in a small early result (document 1), followed by fifteen larger ones;
* ``readback`` — the code is near the end of a large early result (document 1, line 55 of 64),
  past what any preview shows: a strategy that offloads it keeps it readable through
  ``read_saved_output``, one that drops or masks it loses it;
* ``recent`` — the code is in the last document (a control: every strategy keeps it).

The agent is Inspect's ``react()`` with the strategy as its ``compaction``
(:func:`ctxlab.integrations.inspect.compaction.compaction_strategy`), the tools ``fetch`` and
``read_saved_output`` (offered under every strategy, so every request carries the same tool
schemas) and ``submit``; the model is whatever the eval gives (offline:
``ctxlab/reader``, :func:`ctxlab.integrations.inspect.models.reader_policy`).  Scorer: ``exact()``.

With T = 5 × 1,024 tokens, a tool-result limit of 200 tokens and T2 = T (the task's settings),
the design predicts, for the ``ctxlab/reader`` model: ``none`` and ``ars`` solve all nine samples
(ARS offloads the large results, keeps the small early one, and the reader reads the offloaded
one back); ``masking`` (keep the last 10 results, no files) and Inspect's ``CompactionEdit`` (keep
the last 3 results) solve only the three ``recent`` samples.  ``tests/test_inspect_eval.py``
checks exactly that.
"""

from __future__ import annotations

import random
from typing import Any

from inspect_ai import Task, task
from inspect_ai.agent import AgentSubmit, react
from inspect_ai.dataset import Sample
from inspect_ai.scorer import exact
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, tool
from inspect_ai.util import store

from ctxlab.core.settings import CompressionSettings
from ctxlab.integrations.inspect.compaction import CtxlabCompaction, compaction_strategy, read_saved_output

__all__ = ["KINDS", "SAMPLES_PER_KIND", "context_recall", "documents", "fetch", "task_settings"]

KINDS = ("early", "readback", "recent")
SAMPLES_PER_KIND = 3
#: documents per sample (the first, fourteen fillers, the last)
DOCUMENTS = 16
#: lines of a filler document (about 300 tokens: over the 200-token limit, so ARS offloads it)
FILLER_LINES = 24
_WORDS = ("alpha", "delta", "gamma", "sigma", "omega", "kappa", "theta", "lambda")


def task_settings(summary_threshold: float = 5.0, summary_keep_messages: int = 10) -> CompressionSettings:
    """The task's compression settings: T = ``summary_threshold`` × 1,024 tokens, results over 200
    tokens offloaded (200-token previews, which show a document's first line), T2 = T, L2 keeps
    ``summary_keep_messages`` messages."""
    return CompressionSettings(
        summary_threshold=summary_threshold,
        summary_keep_messages=summary_keep_messages,
        summary_tool_result_token_limit=200,
        summary_l2_trigger_ratio=1.0,
    )


def _filler(rng: random.Random, n: int, head: str) -> str:
    lines = [head] + [
        f"log {n}.{k}: {rng.choice(_WORDS)} {rng.randint(1000, 9999)} {rng.choice(_WORDS)} ok"
        for k in range(FILLER_LINES)
    ]
    return "\n".join(lines)


def documents(kind: str, index: int) -> tuple[dict[str, str], str, str, str]:
    """The documents of one sample, its project, prefix and code (deterministic in ``kind`` and
    ``index``).

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid: allowed one of {KINDS}")
    rng = random.Random(f"{kind}-{index}")
    project = f"{rng.choice(_WORDS).capitalize()}{rng.randint(10, 99)}"
    prefix = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
    code = f"{rng.randint(1000, 9999)}{rng.choice('ABCDEFGHJK')}{rng.randint(10, 99)}"
    fact = f"The access code of project {project} is {code}."
    docs: dict[str, str] = {}
    for n in range(1, DOCUMENTS + 1):
        head = "END of documents" if n == DOCUMENTS else f'NEXT: fetch("doc-{n + 1}")'
        docs[f"doc-{n}"] = _filler(rng, n, head)
    if kind == "early":
        docs["doc-1"] = f'NEXT: fetch("doc-2")\nNote for the team: {fact}'
    elif kind == "readback":
        lines = ['NEXT: fetch("doc-2")'] + [
            f"row {k}: {rng.choice(_WORDS)} {rng.randint(10, 99)}" for k in range(63)
        ]
        lines[55] = fact
        docs["doc-1"] = "\n".join(lines)
    else:
        docs[f"doc-{DOCUMENTS}"] = f"END of documents\nNote for the team: {fact}"
    return docs, project, prefix, code


@tool
def fetch() -> Tool:
    """Fetch one of the sample's documents (they are in the sample's store)."""

    async def execute(name: str) -> str:
        """Fetch a document by name.

        Args:
            name: the document's name, e.g. doc-1.
        """
        docs: dict[str, str] = store().get("documents", {})
        return docs.get(name, f"Error: no document {name!r}")

    return execute


@solver
def _load_documents() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        store().set("documents", dict(state.metadata["documents"]))
        return state

    return solve


def _samples() -> list[Sample]:
    out: list[Sample] = []
    for kind in KINDS:
        for i in range(SAMPLES_PER_KIND):
            docs, project, prefix, code = documents(kind, i)
            prompt = (
                f"Find the access code of project {project}. "
                'Start with fetch("doc-1"); every document names the next one; read them all until one '
                f"says END of documents. Constraint: submit the code prefixed with '{prefix}-' "
                f"(for example {prefix}-1234X56)."
            )
            out.append(
                Sample(
                    id=f"{kind}-{i}",
                    input=prompt,
                    target=f"{prefix}-{code}",
                    metadata={"kind": kind, "documents": docs},
                )
            )
    return out


@task
def context_recall(
    strategy: str = "none",
    summarizer: str | None = "ctxlab/offline",
    summary_threshold: float = 5.0,
    summary_keep_messages: int = 10,
    files_dir: str | None = None,
) -> Task:
    """The offline task (module doc) under one compaction strategy.

    Args:
        strategy: ``none`` or a ctxlab strategy name (``ars``, ``masking``, ``inspect-edit``, ...).
        summarizer: the model that writes summaries (``None``: the task's model).
        summary_threshold: T in K tokens (the threshold of every strategy).
        summary_keep_messages: messages an L2 summary keeps (ctxlab strategies).
        files_dir: where a ctxlab strategy's saved outputs go (``None``: a temporary folder).
    """
    settings = task_settings(summary_threshold, summary_keep_messages)
    compaction = compaction_strategy(strategy, settings, summarizer=summarizer, files_dir=files_dir)
    root = (
        str(compaction.files_root)
        if isinstance(compaction, CtxlabCompaction)
        else (files_dir or "/nonexistent")
    )
    tools: list[Any] = [fetch(), read_saved_output(root)]
    agent = react(
        prompt="You answer from the documents you fetch.",
        tools=tools,
        compaction=compaction,
        submit=AgentSubmit(answer_only=True),
    )
    return Task(
        dataset=_samples(),
        setup=_load_documents(),
        solver=agent,
        scorer=exact(),
        message_limit=120,
        metadata={"ctxlab_strategy": strategy, "summary_threshold": summary_threshold},
    )
