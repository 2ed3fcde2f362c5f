"""``ctxlab plugins new NAME``: write a plugin package that runs as the strategy ``NAME`` at once.

The package (``ctxlab-NAME/``) holds:

* ``pyproject.toml`` — the distribution ``ctxlab-NAME`` with an entry point of the ``ctxlab``
  group, ``NAME = "ctxlab_NAME.plugin"``;
* ``src/ctxlab_NAME/plugin.py`` — one compression hook, a keep-the-last-6 L2 cutoff rule
  (``ctxlab_select_cutoff``, built on ``ctxlab.sdk``), and the strategy ``NAME`` that applies it
  (``ctxlab_register_strategies``);
* ``tests/test_ctxlab_NAME.py`` — the rule on a small history, then a replay of the bundled sample
  through ``ars`` and ``NAME`` side by side;
* ``README.md`` — how to run it.

It runs before it is installed: ``--plugins-dir ctxlab-NAME/src/ctxlab_NAME`` loads
``plugin.py`` as a folder plugin, and as it registers a strategy, the other strategies keep their
names (``ars`` stays ``ars``, see :mod:`ctxlab.replay.strategies`); ``pip install -e ctxlab-NAME``
makes it an installed plugin.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ctxlab.cli.options import CliError

__all__ = ["NAME_PATTERN", "add_new_parser", "run_new", "write_package"]

#: a strategy name the scaffold accepts: lower-case letters, digits and single hyphens
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "ctxlab-{name}"
version = "0.1.0"
description = "ctxlab plugin: the {name} strategy (L2 keeps the last {keep} messages)."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["ctxlab>=0.1"]

[project.optional-dependencies]
test = ["ctxlab[lab]>=0.1", "pytest>=8"]

[project.entry-points.ctxlab]
{name} = "{module}.plugin"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
"""

_PLUGIN = '''\
"""The {name} strategy: ARS with an L2 cutoff that keeps the last {keep} messages.

One compression hook, ``ctxlab_select_cutoff`` (spec R9): the cutoff goes as late as it can while
keeping at least ``KEEP`` messages after it, and only where ``valid_cut_positions`` allows it (a
tool call is never separated from its results).  ``ctxlab_register_strategies`` names the
strategy; the built-in ``ars`` is left as it is.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from ctxlab.sdk import CompressionSettings, CutoffContext, CutoffDecision, RegisterStrategy, hookimpl, valid_cut_positions

#: messages L2 keeps verbatim after its cutoff (at least)
KEEP = {keep}


class KeepLastCutoff:
    """L2 keeps the last ``keep`` messages, or a few more where a tool call needs its results."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep

    @hookimpl
    def ctxlab_select_cutoff(self, messages: list[BaseMessage], ctx: CutoffContext) -> CutoffDecision:
        ok = valid_cut_positions(messages)
        first = 2 if ctx.has_previous_summary else 1  # the previous summary is summarized again
        for cut in range(len(messages) - self.keep, first - 1, -1):
            if ok[cut]:
                return CutoffDecision(cut, f"{name}: keep the last {{len(messages) - cut}} messages")
        return CutoffDecision(None, f"{name}: no valid cutoff keeps {{self.keep}} messages")


def _strategy(settings: CompressionSettings) -> list[object]:
    return [KeepLastCutoff()]


@hookimpl
def ctxlab_register_strategies(register: RegisterStrategy) -> None:
    register("{name}", _strategy, "ARS, with an L2 cutoff that keeps the last {keep} messages")
'''

_TEST = '''\
"""The {name} strategy: its cutoff rule, and a replay of the bundled sample beside ``ars``."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxlab.replay import make_lab_manager, replay_many
from ctxlab.sdk import CutoffContext
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT
from {module} import plugin


def history(turns: int) -> list:
    messages = [HumanMessage("fix the parser", id="u0")]
    for i in range(turns):
        call = {{"name": "run", "args": {{"cmd": f"step {{i}}"}}, "id": f"c{{i}}", "type": "tool_call"}}
        messages += [AIMessage("", tool_calls=[call], id=f"a{{i}}"), ToolMessage(f"out {{i}}", tool_call_id=f"c{{i}}", id=f"t{{i}}")]
    return messages


def context() -> CutoffContext:
    return CutoffContext(keep_messages=10, has_previous_summary=False, estimate=lambda m: 10, target_tokens=0.0, forced=False)


def test_the_cutoff_keeps_the_last_messages_and_every_tool_pair() -> None:
    messages = history(10)  # 21 messages
    decision = plugin.KeepLastCutoff().ctxlab_select_cutoff(messages, context())
    assert decision.index == len(messages) - plugin.KEEP
    assert isinstance(messages[decision.index], AIMessage)  # the kept part opens with a call
    odd = plugin.KeepLastCutoff(keep=5).ctxlab_select_cutoff(messages, context())
    assert odd.index == len(messages) - 6  # a cut before a tool result moves one earlier
    assert plugin.KeepLastCutoff().ctxlab_select_cutoff(history(2), context()).index is None


def test_the_strategy_replays_beside_ars() -> None:
    pm = make_lab_manager([plugin])
    result = replay_many([SAMPLE_TRANSCRIPT], ["ars", "{name}"], pm=pm, limit_calls=140, progress=False)
    assert not result.errors
    totals = {{r["strategy"]: r for r in result.summary().iter_rows(named=True)}}
    assert set(totals) == {{"ars", "{name}"}}
    assert totals["{name}"]["l2_rounds"] >= 1
    l2 = [r for r in result.rows if r["strategy"] == "{name}" and r["level"] == "L2"]
    assert all(r["state_cutoff_index"] is not None for r in l2)
'''

_README = """\
# ctxlab-{name}

A ctxlab plugin: the `{name}` strategy, ARS with an L2 cutoff that keeps the last {keep} messages
(`src/{module}/plugin.py`, one `ctxlab_select_cutoff` hook built on `ctxlab.sdk`).

Run it at once, without installing, next to the built-in `ars`:

```bash
ctxlab compare PATH --strategies ars,{name} --plugins-dir {folder}/src/{module}
```

Install it (`pip install -e {folder}`) and `--plugins-dir` is no longer needed: the entry point
`{name} = "{module}.plugin"` of the `ctxlab` group registers the strategy. Its test:
`pytest {folder}/tests` (with `PYTHONPATH={folder}/src` before it is installed).
"""


def write_package(name: str, parent: Path, keep: int = 6) -> Path:
    """Write the package ``ctxlab-<name>`` under ``parent`` and return its folder.

    Raises:
        CliError: ``name`` is not a strategy name (:data:`NAME_PATTERN`), or the folder exists.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise CliError(
            f"plugins new {name!r}: a strategy name is lower-case letters, digits and single hyphens, "
            "starting with a letter (e.g. keep-last)"
        )
    module = "ctxlab_" + name.replace("-", "_")
    folder = parent / f"ctxlab-{name}"
    if folder.exists():
        raise CliError(f"plugins new {name}: {folder} already exists; nothing written")
    values = {"name": name, "module": module, "keep": keep, "folder": folder.as_posix()}
    files = {
        "pyproject.toml": _PYPROJECT,
        f"src/{module}/__init__.py": '"""ctxlab-{name}: the plugin is :mod:`{module}.plugin`."""\n',
        f"src/{module}/plugin.py": _PLUGIN,
        f"tests/test_{module}.py": _TEST,
        "README.md": _README,
    }
    for relative, template in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**values), encoding="utf-8")
    return folder


def add_new_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ctxlab plugins new``."""
    p = sub.add_parser(
        "new",
        help="write a plugin package (entry point, one hook, a test) that runs as a named strategy",
        description="Write ctxlab-NAME/: a plugin package whose strategy NAME keeps the last 6 messages in L2.",
    )
    p.add_argument("name", metavar="NAME", help="the strategy name (lower-case letters, digits, hyphens)")
    p.add_argument(
        "--dir", default=".", metavar="DIR", help="where to write ctxlab-NAME/ (default: %(default)s)"
    )


def run_new(args: argparse.Namespace) -> int:
    """Write the package and print how to run it; returns 0."""
    folder = write_package(args.name, Path(args.dir))
    module = "ctxlab_" + args.name.replace("-", "_")
    print(f"written: {folder}/ (pyproject.toml, src/{module}/plugin.py, tests/test_{module}.py, README.md)")
    print(
        f"run it now:  ctxlab compare PATH --strategies ars,{args.name} --plugins-dir {folder}/src/{module}"
    )
    print(f"test it:     PYTHONPATH={folder}/src pytest {folder}/tests")
    print(f"install it:  pip install -e {folder}   (then the entry point registers {args.name})")
    return 0
