"""environment.yml and pyproject.toml name the same dependencies with the same version bounds.

Every dependency of pyproject.toml (runtime, ``lab``, ``notebooks``, ``ray``, ``inspect`` and ``dev`` extras; the
self-references ``ctxlab[...]`` aside) must appear in environment.yml, in the conda list or in the
pip section, with the same lower bound (compared as versions, so ``1.20`` equals ``1.20.0``) and
the same upper bound when either side has one; and everything environment.yml installs (besides
``python``, ``pip`` and the project itself) must be a dependency of pyproject.toml.  The pip
section must install the project editable with its dev extra, and the conda ``python`` pin must
satisfy ``requires-python``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
ENVIRONMENT = ROOT / "environment.yml"

#: extras whose dependencies environment.yml must carry (runtime deps are always checked)
EXTRAS = ("lab", "notebooks", "ray", "inspect", "dev")
#: conda-forge names that differ from the PyPI name (conda name -> PyPI name)
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib"}
#: entries of environment.yml that are not project dependencies
NOT_DEPENDENCIES = {"python", "pip"}


@dataclass(frozen=True)
class Bounds:
    """The lower and upper bound of one dependency; ``None`` where there is none."""

    lower: Version | None
    upper: Version | None
    where: str

    def same_as(self, other: Bounds) -> bool:
        return self.lower == other.lower and self.upper == other.upper

    def __str__(self) -> str:
        lo = f">={self.lower}" if self.lower is not None else "(no lower bound)"
        hi = f",<{self.upper}" if self.upper is not None else ""
        return f"{lo}{hi} [{self.where}]"


def _bounds(pairs: list[tuple[str, str]], where: str) -> Bounds:
    """Bounds from (operator, version) pairs; ``==``/``~=``/conda ``=`` count as lower bounds."""
    lower: Version | None = None
    upper: Version | None = None
    for op, raw in pairs:
        version = Version(raw.rstrip(".*").rstrip("."))
        if op in (">=", ">", "==", "~=", "="):
            lower = version if lower is None else max(lower, version)
        elif op in ("<", "<="):
            upper = version if upper is None else min(upper, version)
        elif op != "!=":
            raise ValueError(f"{where}: unsupported version operator {op!r}")
    return Bounds(lower, upper, where)


def _pep508_bounds(text: str, where: str) -> tuple[str, Bounds]:
    req = Requirement(text)
    pairs = [(spec.operator, spec.version) for spec in SpecifierSet(str(req.specifier))]
    return canonicalize_name(req.name), _bounds(pairs, where)


_CONDA_SPEC = re.compile(r"^\s*(?:[\w.-]+::)?(?P<name>[A-Za-z0-9_.-]+)\s*(?P<spec>[^#\[]*?)\s*$")
_CONDA_CONSTRAINT = re.compile(r"^(?P<op>>=|<=|==|!=|~=|>|<|=)?\s*(?P<version>[0-9][0-9A-Za-z.*+!-]*)$")


def _conda_bounds(text: str, where: str) -> tuple[str, Bounds]:
    """Parse a conda match spec such as ``langchain>=1.2,<2``, ``python=3.11`` or ``ruff 0.6.*``."""
    m = _CONDA_SPEC.match(text)
    if not m:
        raise ValueError(f"{where}: cannot parse conda spec {text!r}")
    name, spec = m["name"], m["spec"].strip()
    if "|" in spec:
        raise ValueError(f"{where}: 'or' specs are not supported here: {text!r}")
    pairs: list[tuple[str, str]] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        c = _CONDA_CONSTRAINT.match(part)
        if not c:
            raise ValueError(f"{where}: cannot parse constraint {part!r} in {text!r}")
        pairs.append((c["op"] or "=", c["version"]))
    name = CONDA_TO_PYPI.get(name, name)
    return canonicalize_name(name), _bounds(pairs, where)


def pyproject_dependencies(data: dict) -> dict[str, Bounds]:
    """Runtime + extras dependencies of a parsed pyproject, self-references left out."""
    project = data["project"]
    own = canonicalize_name(project["name"])
    groups = {"dependencies": project.get("dependencies", [])}
    for extra in EXTRAS:
        groups[f"optional-dependencies.{extra}"] = project["optional-dependencies"][extra]
    out: dict[str, Bounds] = {}
    for group, reqs in groups.items():
        for text in reqs:
            name, bounds = _pep508_bounds(text, f"pyproject {group}: {text}")
            if name == own:
                continue
            assert name not in out, f"{name} is listed twice in pyproject.toml"
            out[name] = bounds
    return out


def environment_dependencies(data: dict, own_name: str) -> tuple[dict[str, Bounds], list[str]]:
    """(dependencies, pip lines installing the project itself) of a parsed environment.yml."""
    out: dict[str, Bounds] = {}
    self_installs: list[str] = []

    def add(name: str, bounds: Bounds) -> None:
        assert name not in out, f"{name} is listed twice in environment.yml"
        out[name] = bounds

    for entry in data["dependencies"]:
        if isinstance(entry, dict):
            for line in entry.get("pip", []):
                line = line.strip()
                if line.startswith("-"):  # -e .[dev], -r file, --index-url ...
                    self_installs.append(line)
                    continue
                name, bounds = _pep508_bounds(line, f"environment.yml pip: {line}")
                if name == canonicalize_name(own_name):
                    self_installs.append(line)
                    continue
                add(name, bounds)
            continue
        name, bounds = _conda_bounds(str(entry), f"environment.yml conda: {entry}")
        if name in NOT_DEPENDENCIES:
            out.setdefault(f"<{name}>", bounds)
            continue
        add(name, bounds)
    return out, self_installs


def compare(pyproject: dict[str, Bounds], environment: dict[str, Bounds]) -> list[str]:
    """Human-readable differences; empty when the two agree."""
    problems = []
    env = {k: v for k, v in environment.items() if not k.startswith("<")}
    for name in sorted(pyproject.keys() - env.keys()):
        problems.append(f"{name}: in pyproject.toml ({pyproject[name]}) but not in environment.yml")
    for name in sorted(env.keys() - pyproject.keys()):
        problems.append(f"{name}: in environment.yml ({env[name]}) but not in pyproject.toml")
    for name in sorted(pyproject.keys() & env.keys()):
        a, b = pyproject[name], env[name]
        if a.lower is None or b.lower is None:
            problems.append(f"{name}: needs a lower bound on both sides: {a} vs {b}")
        elif not a.same_as(b):
            problems.append(f"{name}: bounds differ: {a} vs {b}")
    return problems


@pytest.fixture(scope="module")
def pyproject_data() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def environment_data() -> dict:
    return yaml.safe_load(ENVIRONMENT.read_text(encoding="utf-8"))


def test_same_dependencies_and_bounds(pyproject_data: dict, environment_data: dict) -> None:
    py = pyproject_dependencies(pyproject_data)
    env, _ = environment_dependencies(environment_data, pyproject_data["project"]["name"])
    assert py, "no dependencies found in pyproject.toml"
    problems = compare(py, env)
    assert not problems, "environment.yml drifted from pyproject.toml:\n" + "\n".join(problems)


def test_environment_installs_project_with_dev_extra(pyproject_data: dict, environment_data: dict) -> None:
    _, self_installs = environment_dependencies(environment_data, pyproject_data["project"]["name"])
    assert any(re.fullmatch(r"-e\s+\.\[dev\]", line) for line in self_installs), self_installs
    assert "conda-forge" in environment_data["channels"]


def test_python_pin_satisfies_requires_python(pyproject_data: dict, environment_data: dict) -> None:
    env, _ = environment_dependencies(environment_data, pyproject_data["project"]["name"])
    python = env.get("<python>")
    assert python is not None and python.lower is not None, "environment.yml must pin python"
    assert python.lower in SpecifierSet(pyproject_data["project"]["requires-python"])


# --- the checker itself must notice drift ---------------------------------------------------


def test_checker_detects_a_drifted_lower_bound(pyproject_data: dict, environment_data: dict) -> None:
    py = pyproject_dependencies(pyproject_data)
    env, _ = environment_dependencies(environment_data, pyproject_data["project"]["name"])
    name = "pluggy"
    assert name in env
    bumped = Version(f"{env[name].lower.major}.{env[name].lower.minor + 1}")
    env[name] = Bounds(bumped, env[name].upper, "drifted")
    assert any(p.startswith(f"{name}: bounds differ") for p in compare(py, env))


def test_checker_detects_missing_and_extra_entries() -> None:
    py = {"a": Bounds(Version("1"), None, "p"), "b": Bounds(Version("2"), None, "p")}
    env = {"a": Bounds(Version("1.0"), None, "e"), "c": Bounds(Version("3"), None, "e")}
    problems = compare(py, env)
    assert any(p.startswith("b: in pyproject.toml") for p in problems)
    assert any(p.startswith("c: in environment.yml") for p in problems)
    assert not any(p.startswith("a:") for p in problems)  # 1 == 1.0 as versions


@pytest.mark.parametrize(
    ("spec", "name", "lower", "upper"),
    [
        ("langchain>=1.2,<2", "langchain", "1.2", "2"),
        ("python=3.11", "python", "3.11", None),
        ("ruff 0.6.*", "ruff", "0.6", None),
        ("conda-forge::matplotlib-base >=3.8", "matplotlib", "3.8", None),
        ("pyyaml", "pyyaml", None, None),
    ],
)
def test_conda_spec_parser(spec: str, name: str, lower: str | None, upper: str | None) -> None:
    got_name, bounds = _conda_bounds(spec, "test")
    assert got_name == name
    assert bounds.lower == (Version(lower) if lower else None)
    assert bounds.upper == (Version(upper) if upper else None)


def test_upper_bound_drift_is_detected() -> None:
    _, a = _pep508_bounds("deepagents>=0.7,<0.8", "p")
    _, b = _conda_bounds("deepagents>=0.7,<0.9", "e")
    assert compare({"deepagents": a}, {"deepagents": b})
