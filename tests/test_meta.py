"""Tests of the project itself: hooks documented and exercised, requirements traced to tests.

* every hook specification (found by introspecting every ``hookspecs`` module of ``ctxlab``, so
  a hook added later is picked up) has a section in ``docs/plugins.md`` that shows its exact
  signature, names each argument and states its firstresult semantics; and some test implements
  or calls it;
* the examples in ``docs/plugins.md`` run;
* every requirement R1..Rn of the spec (``../shared/spec/ars-summary.md``) is named by a test
  (in its name, docstring or a comment such as ``# spec: R9``), and ``docs/architecture.md`` has a
  row for it whose code imports and whose tests exist and name it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ctxlab
from ctxlab.core.hookspecs import PROJECT
from ctxlab.core.plugins import HOOKSPEC_MODULES, _hooks_in_source
from ctxlab.transcripts.locate import shared_dir

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(ctxlab.__file__).resolve().parent
PLUGINS_DOC = ROOT / "docs" / "plugins.md"
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
THIS = Path(__file__).resolve()


# --- what exists --------------------------------------------------------------------------------


def hookspec_modules() -> list[ModuleType]:
    """Every ``hookspecs.py`` module of the package, imported."""
    names = sorted(
        ".".join(("ctxlab", *path.relative_to(PACKAGE).with_suffix("").parts))
        for path in PACKAGE.rglob("hookspecs.py")
    )
    return [importlib.import_module(name) for name in names]


@cache
def hookspecs() -> dict[str, Callable[..., Any]]:
    """Every hook specification by name: functions named ``ctxlab_*`` marked ``@hookspec``."""
    found: dict[str, Callable[..., Any]] = {}
    for module in hookspec_modules():
        for name, value in vars(module).items():
            if name.startswith("ctxlab_") and hasattr(value, f"{PROJECT}_spec"):
                assert name not in found, f"{name} is specified twice"
                found[name] = value
    return found


def spec_arguments(name: str) -> list[str]:
    return list(inspect.signature(hookspecs()[name]).parameters)


def is_firstresult(name: str) -> bool:
    return bool(getattr(hookspecs()[name], f"{PROJECT}_spec")["firstresult"])


def test_hookspecs_are_found_and_known_to_the_plugin_manager() -> None:
    modules = [m.__name__ for m in hookspec_modules()]
    assert sorted(modules) == sorted(HOOKSPEC_MODULES), (
        "ctxlab.core.plugins.HOOKSPEC_MODULES must list every hookspecs module "
        "(it tells misspelt hooks from hooks of another floor)"
    )
    assert {"ctxlab_estimate_message", "ctxlab_l1_trim", "ctxlab_register_strategies"} <= set(hookspecs())
    for module in hookspec_modules():
        declared = {n for n in hookspecs() if hookspecs()[n].__module__ == module.__name__}
        # the plugin manager reads the floors above the core from source: it must agree
        assert _hooks_in_source(inspect.getsource(module)) == declared, module.__name__


# --- docs/plugins.md ------------------------------------------------------------------------------


def doc_sections(text: str) -> dict[str, str]:
    """``## ctxlab_x`` (any level) heading -> the text up to the next heading of that level or
    above."""
    heads = list(re.finditer(r"^(#{2,4}) +`?(ctxlab_\w+)`? *$", text, re.M))
    sections: dict[str, str] = {}
    for head in heads:
        level = len(head.group(1))
        end = re.compile(rf"^#{{1,{level}}} ", re.M).search(text, head.end())
        sections[head.group(2)] = text[head.end() : end.start() if end else len(text)]
    return sections


@cache
def plugins_doc() -> str:
    return PLUGINS_DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(hookspecs()))
def test_every_hook_is_documented_with_its_arguments_and_firstresult(name: str) -> None:
    sections = doc_sections(plugins_doc())
    assert name in sections, f"docs/plugins.md has no '## {name}' section"
    section = sections[name]
    args = spec_arguments(name)
    signature = re.search(rf"^{name}\((.*)\)", section, re.M)
    assert signature, f"the {name} section shows no signature line '{name}(...)'"
    shown = [part.split(":")[0].strip() for part in signature.group(1).split(",") if ":" in part]
    assert shown == args, f"{name}: the documented signature has {shown}, the spec {args}"
    for arg in args:
        assert f"`{arg}`" in section, f"{name}: the section does not explain `{arg}`"
    semantics = re.search(r"firstresult: (yes|no)", section)
    assert semantics, f"{name}: the section does not say 'firstresult: yes' or 'firstresult: no'"
    assert (semantics.group(1) == "yes") == is_firstresult(name)
    assert "```python" in section, f"{name}: the section has no worked example"


def test_documented_hooks_exist() -> None:
    stale = set(doc_sections(plugins_doc())) - set(hookspecs())
    assert not stale, f"docs/plugins.md documents hooks that do not exist: {sorted(stale)}"


def doc_examples() -> list[tuple[int, str]]:
    """(line of the first code line, code) of every python block in docs/plugins.md."""
    text = PLUGINS_DOC.read_text(encoding="utf-8")
    blocks = re.finditer(r"```python\n(.*?)```", text, re.S)
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in blocks]


EXAMPLES = doc_examples()


@pytest.mark.parametrize(("line", "code"), EXAMPLES, ids=[f"line{line}" for line, _ in EXAMPLES])
def test_docs_examples_run(line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTXLAB_PLUGINS_DIR", raising=False)
    # each example runs as a module of its own, as it would from a file (a plugin may be a module)
    module = ModuleType(f"plugins_md_{line}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, f"docs/plugins.md:{line}", "exec"), module.__dict__)


# --- exercised by a test ----------------------------------------------------------------------------


@cache
def sources_of_tests() -> dict[Path, str]:
    """Text of every test module (tests/ and plugins/*/tests), this one left out."""
    files = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("plugins/*/tests/**/*.py")]
    return {p: p.read_text(encoding="utf-8") for p in sorted(files) if p.resolve() != THIS}


@pytest.mark.parametrize("name", sorted(hookspecs()))
def test_every_hook_is_exercised_by_a_test(name: str) -> None:
    # implemented (def ctxlab_x) or called (hook.ctxlab_x(...)) somewhere in the tests
    pattern = re.compile(rf"(\bdef |\.){name}\(")
    users = [p.relative_to(ROOT) for p, text in sources_of_tests().items() if pattern.search(text)]
    assert users, f"no test implements or calls {name}"


# --- requirements ------------------------------------------------------------------------------------


@cache
def spec_requirements() -> list[int]:
    spec = shared_dir(ROOT) / "spec" / "ars-summary.md"
    return [int(n) for n in re.findall(r"^R(\d+)\.", spec.read_text(encoding="utf-8"), re.M)]


@cache
def requirements_named_by_tests() -> dict[str, set[int]]:
    """``path::test_name`` -> the R-numbers its definition names (decorators, name, docstring,
    body comments)."""
    out: dict[str, set[int]] = {}
    for path, text in sources_of_tests().items():
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                body = "\n".join(lines[start - 1 : node.end_lineno])
                key = f"{path.relative_to(ROOT).as_posix()}::{node.name}"
                out[key] = {int(n) for n in re.findall(r"\bR(\d+)\b", body)}
    return out


@pytest.mark.parametrize("number", range(1, 18))
def test_every_requirement_is_named_by_a_test(number: int) -> None:
    naming = [t for t, named in requirements_named_by_tests().items() if number in named]
    assert naming, f"no test names R{number} (add '# spec: R{number}' to a test that checks it)"


def architecture_rows() -> dict[int, tuple[list[str], list[str]]]:
    """R-number -> (code names, test node ids) from the table in docs/architecture.md."""
    rows: dict[int, tuple[list[str], list[str]]] = {}
    for line in ARCHITECTURE_DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| R(\d+) \|[^|]*\|([^|]*)\|([^|]*)\|$", line)
        if m:
            code, tests = (re.findall(r"`([^`]+)`", cell) for cell in (m.group(2), m.group(3)))
            rows[int(m.group(1))] = (code, tests)
    return rows


def resolve(dotted: str) -> object:
    """Import the longest module prefix of ``dotted`` and get the rest as attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_spec_has_the_requirements_checked_here() -> None:
    # a requirement added to the spec must be added to the parametrizations of this module
    assert spec_requirements() == list(range(1, 18))


def test_architecture_table_has_a_row_per_requirement() -> None:
    assert sorted(architecture_rows()) == spec_requirements()


@pytest.mark.parametrize("number", range(1, 18))
def test_architecture_table_points_at_real_code_and_tests_that_name_the_requirement(number: int) -> None:
    code, tests = architecture_rows()[number]
    assert code and tests, f"R{number}: the row names no code or no test"
    for name in code:
        assert name.startswith("ctxlab."), name
        resolve(name)  # AttributeError / ModuleNotFoundError: the doc names code that moved
    named = requirements_named_by_tests()
    for node_id in tests:
        assert node_id in named, f"R{number}: {node_id} is not a test"
        assert number in named[node_id], f"R{number}: {node_id} does not name R{number}"


#: issue 8: no module in the package over about 500 lines (one module per concern, no god-module)
MODULE_LINE_LIMIT = 500


def test_no_module_of_the_package_is_over_the_line_limit() -> None:
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((ROOT / "ctxlab").rglob("*.py"))
    }
    assert len(sizes) > 50  # the whole package was read
    over = {name: n for name, n in sizes.items() if n > MODULE_LINE_LIMIT}
    assert over == {}, f"modules over {MODULE_LINE_LIMIT} lines: {over}"
