"""Notebook conveniences: where the shared data is, and figure export.

The notebooks in ``notebooks/`` run from their own folder; these helpers find the checkout and
the shared transcript set from there, and save figures when ``$CTXLAB_FIGURES_DIR`` asks for
it.  Everything else a notebook calls lives in the package: replays and sweeps in
:mod:`ctxlab.replay`, tables in :mod:`ctxlab.report`, figures in :mod:`ctxlab.plotting`, the
scripted tool-calling model in :mod:`ctxlab.sample`.

Paths:

* :func:`repo_root` — the ctxlab checkout (found from the current directory upwards, else from
  the installed package);
* :func:`shared_dir` — the shared data folder beside the checkout (``../shared``, or
  ``$CTXLAB_SHARED``), holding ``transcripts/`` and ``cases/``;
* :func:`figures_dir` / :func:`save_figure` — PNG export when ``$CTXLAB_FIGURES_DIR`` is set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = [
    "LONG_MINI_SWE_AGENT_RUN",
    "figures_dir",
    "repo_root",
    "save_figure",
    "shared_dir",
    "transcript_path",
]

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


# --- figures -----------------------------------------------------------------------------------


def figures_dir() -> Path | None:
    """``$CTXLAB_FIGURES_DIR`` as a path (created), or ``None`` when figure export is off.

    A relative value is relative to the repository root (so ``docs/figures`` works from a
    notebook, whose working directory is ``notebooks/``).
    """
    env = os.environ.get("CTXLAB_FIGURES_DIR")
    if not env:
        return None
    folder = Path(env)
    if not folder.is_absolute():
        folder = repo_root() / folder
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save_figure(fig: Any, name: str, *, dpi: int = 110) -> Path | None:
    """Save ``fig`` as ``<$CTXLAB_FIGURES_DIR>/<name>.png`` when export is on; else do nothing.

    Returns:
        The PNG path, or ``None`` when ``$CTXLAB_FIGURES_DIR`` is not set.
    """
    folder = figures_dir()
    if folder is None:
        return None
    path = folder / f"{name}.png"
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path
