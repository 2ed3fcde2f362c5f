"""Figure export for notebooks: PNG files when ``$CTXLAB_FIGURES_DIR`` asks for them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ctxlab.transcripts.locate import repo_root

__all__ = ["figures_dir", "save_figure"]


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
