"""The shared regression cases (``../shared/cases``) pass, sync and async.

``run_cases.py`` drives CompressionMiddleware through its public surface with cases distilled from
other frameworks' public bug reports (see ``../shared/cases/README.md``).  A missing runner is a
failure, never a skip: the shared folder must sit beside the repository.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO.parent / "shared" / "cases" / "run_cases.py"
CASES = RUNNER.parent / "cases"


def _all_pass(args: list[str], n_files: int) -> None:
    """Run ``run_cases.py`` with ``args`` and assert that each of its ``n_files`` cases passed."""
    proc = subprocess.run(
        [sys.executable, str(RUNNER), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    m = re.search(r"bugcases: (\d+) passed, (\d+) failed, (\d+) errors of (\d+)", out)
    assert m, f"no summary line in the runner output:\n{out[-3000:]}"
    passed, failed, errors, total = map(int, m.groups())
    bad = [line for line in out.splitlines() if line.startswith(("FAIL ", "ERROR "))]
    assert (failed, errors) == (0, 0), "\n".join(bad)
    assert passed == total == n_files, out[-3000:]
    assert f"{total} passed" in out
    assert proc.returncode == 0, out[-3000:]


def test_shared_regression_cases_all_pass():
    assert RUNNER.is_file(), f"regression runner missing: {RUNNER} (../shared/cases must sit beside the repo)"
    n_files = len(list(CASES.glob("*.json")))
    assert n_files >= 24, f"expected at least 24 case files in {CASES}, found {n_files}"
    _all_pass([], n_files)


@pytest.mark.parametrize("folder", ["new", "next"])
def test_newer_case_folders_all_pass(folder):
    # spec: R3, R10, R12, R13 — cases/new (44, 48, 57) and cases/next (53 one atomic tool unit fills
    # the view, 68 a summary cut at its output cap, 71 invalid tool calls pair: issue 24); both
    # folders also run in `make test`
    cases = RUNNER.parent / folder
    n_files = len(list(cases.glob("*.json")))
    assert n_files >= 3, f"expected at least 3 case files in {cases}, found {n_files}"
    _all_pass(["--cases", str(cases)], n_files)
