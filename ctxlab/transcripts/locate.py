"""Where transcripts are: the bundled sample, the checkout and the shared transcript set.

The notebooks in ``notebooks/`` run from their own folder; these helpers find the checkout and
the shared transcript set from there.

Paths:

* :func:`repo_root` — the ctxlab checkout (found from the current directory upwards, else from
  the installed package);
* :func:`shared_dir` — the shared data folder beside the checkout (``../shared``, or
  ``$CTXLAB_SHARED``), holding ``transcripts/`` and ``cases/``;
* :data:`SAMPLE_TRANSCRIPT` — the bundled sample run (``ctxlab/data/sample_run.json``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "LONG_MINI_SWE_AGENT_RUN",
    "SAMPLE_TRANSCRIPT",
    "repo_root",
    "shared_dir",
    "transcript_path",
]

#: the bundled sample transcript, recorded by ``python -m tools.sample record`` (the repository's ``tools/``) (488 messages)
SAMPLE_TRANSCRIPT: Path = Path(__file__).resolve().parent.parent / "data" / "sample_run.json"

#: the longest real mini-swe-agent run in tokens (SOURCES.md #21: pytest-dev__pytest-6197, 186
#: messages, 92 model calls, its last request ~78k tokens by the default estimator)
LONG_MINI_SWE_AGENT_RUN = (
    "raw/mini-swe-agent/swebench_results/20251118_gemini-3-pro-74pct/trajs/"
    "pytest-dev__pytest-6197/pytest-dev__pytest-6197.traj.json"
)


def _is_repo(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "ctxlab" / "__init__.py").is_file()


def repo_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The ctxlab repository root: the first folder from ``start`` (default: the current
    directory) upwards holding ``pyproject.toml`` and ``ctxlab/``; else the folder above the
    imported package (editable installs).

    Raises:
        FileNotFoundError: no checkout was found (ctxlab installed as a wheel, run elsewhere).
    """
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _is_repo(folder):
            return folder
    import ctxlab

    candidate = Path(ctxlab.__file__).resolve().parents[1]
    if _is_repo(candidate):
        return candidate
    raise FileNotFoundError(f"no ctxlab checkout above {here} (looked for pyproject.toml and ctxlab/)")


def shared_dir(start: str | os.PathLike[str] | None = None) -> Path:
    """The shared data folder: ``$CTXLAB_SHARED`` if set, else ``<repo root>/../shared``.

    Raises:
        FileNotFoundError: the folder or its ``transcripts/`` subfolder is missing.
    """
    env = os.environ.get("CTXLAB_SHARED")
    folder = Path(env).resolve() if env else (repo_root(start).parent / "shared").resolve()
    if not (folder / "transcripts").is_dir():
        raise FileNotFoundError(
            f"shared data not found at {folder}: ctxlab's notebooks expect the shared folder beside "
            "the repository (../shared with transcripts/), or $CTXLAB_SHARED"
        )
    return folder


def transcript_path(relative: str, start: str | os.PathLike[str] | None = None) -> Path:
    """A file of the shared transcript set, ``relative`` to ``<shared>/transcripts``.

    Raises:
        FileNotFoundError: the file does not exist.
    """
    path = shared_dir(start) / "transcripts" / relative
    if not path.is_file():
        raise FileNotFoundError(f"transcript not found: {path}")
    return path
