"""``ctxlab plugins new NAME``: the package it writes passes its own test and runs as the strategy
NAME beside ``ars`` in ``ctxlab compare`` at once; a folder plugin that registers a strategy
renames no other strategy; unknown names get a did-you-mean."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab.core.settings import CompressionSettings
from ctxlab.replay import make_lab_manager
from ctxlab.replay.building import strategy_records
from ctxlab.replay.names import did_you_mean
from ctxlab.replay.strategies import strategy_label
from ctxlab.transcripts.locate import SAMPLE_TRANSCRIPT

CTXLAB = [sys.executable, "-m", "ctxlab"]


def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("scaffold")
    made = run(*CTXLAB, "plugins", "new", "keep6", "--dir", str(parent))
    assert made.returncode == 0, made.stderr
    folder = parent / "ctxlab-keep6"
    assert f"--plugins-dir {folder}/src/ctxlab_keep6" in made.stdout
    return folder


def test_the_package_has_an_entry_point_one_hook_and_a_test(package: Path) -> None:
    pyproject = (package / "pyproject.toml").read_text()
    assert '[project.entry-points.ctxlab]\nkeep6 = "ctxlab_keep6.plugin"' in pyproject
    plugin = (package / "src/ctxlab_keep6/plugin.py").read_text()
    assert "from ctxlab.sdk import" in plugin and plugin.count("@hookimpl") == 2  # the cutoff, the strategy
    assert "def ctxlab_select_cutoff" in plugin and "def ctxlab_register_strategies" in plugin
    assert (package / "tests/test_ctxlab_keep6.py").is_file() and (package / "README.md").is_file()


def test_the_package_passes_its_own_test(package: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(package / "src")}
    tested = run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:asyncio",
        str(package / "tests"),
        cwd=package,
        env=env,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout


def test_it_runs_in_compare_next_to_ars_at_once(package: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    cmd = [*CTXLAB, "compare", str(SAMPLE_TRANSCRIPT), "--strategies", "ars,keep6", "--limit-calls", "140"]
    compared = run(
        *cmd, "--plugins-dir", str(package / "src/ctxlab_keep6"), "--out", str(out), "--no-figures"
    )
    assert compared.returncode == 0, compared.stderr
    with (out / "summary.csv").open() as f:
        rows = {r["strategy"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"ars", "keep6"}  # ars is the built-in ars: no ars+plugin label
    assert rows["keep6"]["l2_rounds"] == "1" and rows["ars"]["l2_rounds"] == "1"
    assert rows["keep6"]["sent_tokens_total"] != rows["ars"]["sent_tokens_total"]  # another cutoff


def test_bad_names_and_an_existing_folder_are_refused(package: Path) -> None:
    bad = run(*CTXLAB, "plugins", "new", "Keep_6", "--dir", str(package.parent))
    assert bad.returncode == 2 and "lower-case letters, digits and single hyphens" in bad.stderr
    again = run(*CTXLAB, "plugins", "new", "keep6", "--dir", str(package.parent))
    assert again.returncode == 2 and "already exists; nothing written" in again.stderr


FOLDER_PLUGIN_WITH_STRATEGY = """
from ctxlab.sdk import CutoffDecision, hookimpl

@hookimpl
def ctxlab_select_cutoff(messages, ctx):
    return CutoffDecision(None, "never")

class _Never:
    @hookimpl
    def ctxlab_select_cutoff(self, messages, ctx):
        return CutoffDecision(None, "never")

@hookimpl
def ctxlab_register_strategies(register):
    register("never", lambda settings: [_Never()], "no L2")
"""

FOLDER_PLUGIN_HOOK_ONLY = """
from ctxlab.sdk import CutoffDecision, hookimpl

@hookimpl
def ctxlab_select_cutoff(messages, ctx):
    return CutoffDecision(None, "never")
"""


def test_a_folder_plugin_that_registers_a_strategy_leaves_other_names_alone(tmp_path: Path) -> None:
    (tmp_path / "never.py").write_text(FOLDER_PLUGIN_WITH_STRATEGY)
    pm = make_lab_manager(plugins_dir=tmp_path)
    assert strategy_label("ars", pm) == "ars"
    assert set(strategy_records(["ars", "never"], pm, CompressionSettings())) == {"ars", "never"}
    # a folder plugin with a compression hook and no strategy of its own still renames (ars+plugin)
    other = tmp_path / "other"
    other.mkdir()
    (other / "no_l2.py").write_text(FOLDER_PLUGIN_HOOK_ONLY)
    assert strategy_label("ars", make_lab_manager(plugins_dir=other)) == "ars+no_l2"


def test_unknown_names_get_a_did_you_mean(tmp_path: Path) -> None:
    assert did_you_mean("maskin", ["ars", "masking", "hybrid"]) == " (did you mean 'masking'?)"
    assert did_you_mean("zzz", ["ars", "masking"]) == ""
    strategy = run(
        *CTXLAB, "compare", str(SAMPLE_TRANSCRIPT), "--strategies", "ars,maskin", "--out", str(tmp_path / "a")
    )
    assert (
        strategy.returncode == 2 and "unknown strategy 'maskin' (did you mean 'masking'?)" in strategy.stderr
    )
    fmt = run(*CTXLAB, "replay", "--format", "swe-agnt", "--out", str(tmp_path / "b"))
    assert fmt.returncode == 2 and "did you mean 'swe_agent'" in fmt.stderr
    price = run(
        *CTXLAB, "replay", "--price-model", "anthropic:claude-sonet-4-5", "--out", str(tmp_path / "c")
    )
    assert price.returncode == 2 and "did you mean 'anthropic:claude-sonnet-4-5'" in price.stderr
    assert not any((tmp_path / d).exists() for d in "abc")  # usage errors write nothing
