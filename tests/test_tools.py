"""Developer tooling stays out of the shipped package (issue 18, part 5): ``tools/`` is not in the
wheel and nothing in ``ctxlab/`` imports it, and ``ctxlab/cli/`` holds only what the ``ctxlab``
command runs."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

import ctxlab

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(ctxlab.__file__).resolve().parent
TOOLS = ROOT / "tools"


def imported_names(path: Path) -> set[str]:
    """Every module name an ``import`` or ``from ... import`` of ``path`` names (top level or not)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_wheel_ships_ctxlab_only_and_ctxlab_never_imports_tools() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["ctxlab"]
    assert (TOOLS / "__init__.py").is_file() and (TOOLS / "sample" / "recorder.py").is_file()
    offenders = {
        path.relative_to(ROOT).as_posix(): sorted(
            n for n in imported_names(path) if n.split(".")[0] == "tools"
        )
        for path in PACKAGE.rglob("*.py")
    }
    assert {p: n for p, n in offenders.items() if n} == {}


def test_cli_holds_only_what_the_ctxlab_command_runs() -> None:
    """Every module of ``ctxlab.cli`` is imported, directly or not, by the ``ctxlab`` command
    (``ctxlab.cli.main``), by ``ctxlab bench`` (which ``main`` imports by name), or is the baseline
    command that the bench runs in a subprocess."""
    main_source = (PACKAGE / "cli" / "main.py").read_text(encoding="utf-8")
    assert 'importlib.import_module("ctxlab.cli.bench")' in main_source
    throughput = (PACKAGE / "cli" / "bench" / "throughput.py").read_text(encoding="utf-8")
    assert '"-m", "ctxlab.cli.bench.tiktoken_pass"' in throughput
    roots = {"ctxlab.cli.main", "ctxlab.cli.bench", "ctxlab.cli.bench.tiktoken_pass"}
    graph = grimp.build_graph("ctxlab")
    reached = set(roots)
    for root in roots:
        reached |= graph.find_upstream_modules(root)
    cli = {m for m in graph.modules if m.startswith("ctxlab.cli.")}
    assert sorted(cli - reached) == []


def test_the_recorder_runs_as_a_module_from_the_repository_root() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tools.sample", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m tools.sample") and "record" in done.stdout
