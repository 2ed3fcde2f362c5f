"""What a notebook keeps of a replay: no progress widget (bars are text on stderr, and only on a
terminal), and a loader's warning located at its transcript file, not at a line of ctxlab.
(``tests/test_notebooks.py`` checks the executed notebooks themselves.)"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ctxlab.replay import replay_many
from ctxlab.replay.engine import _progress
from ctxlab.transcripts import TranscriptWarning, load_transcripts
from ctxlab.transcripts.locate import shared_dir

#: a SWE-agent history that lacks its final step: its loader warns about it
TRUNCATED = next(
    (shared_dir() / "transcripts" / "raw" / "swe-agent").rglob("6e44b9__sweagenttestrepo-1c2844.traj")
)
SMALL = shared_dir() / "transcripts" / "raw" / "openhands" / "tests" / "runtime" / "trajs" / "basic.json"


def test_a_loader_warning_is_located_at_its_transcript() -> None:
    with pytest.warns(TranscriptWarning) as caught:
        load_transcripts(TRUNCATED)
    w = caught[0]
    assert w.filename == str(TRUNCATED) and w.lineno == 0
    shown = warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
    assert shown.startswith(f"{TRUNCATED}:0: TranscriptWarning: {TRUNCATED}: history lacks")
    assert "ctxlab/transcripts" not in shown and "warnings.warn" not in shown


def test_no_progress_bar_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    replay_many([SMALL], ["ars", "masking"])  # default: a bar only when stderr is a terminal
    err = capsys.readouterr().err
    assert "%|" not in err and "replay" not in err
    replay_many([SMALL], ["ars"], progress=True)  # asked for: text on stderr
    assert "replay: 100%|" in capsys.readouterr().err


def test_a_progress_bar_is_text_never_a_notebook_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm.auto
    import tqdm.notebook

    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm)  # what tqdm.auto picks in Jupyter
    bar = _progress(3, "replay", True)
    try:
        assert type(bar).__module__ == "tqdm.std"
    finally:
        bar.close()


def test_the_figures_font_is_the_pages_font(tmp_path: Path) -> None:
    """The pages' CJK subset comes from the collection the figures register (one font)."""
    from fontTools.ttLib import TTFont

    from ctxlab.analysis.inspector_fonts import CJK_FAMILY, cjk_font_face
    from ctxlab.analysis.plotting.style import packaged_cjk_font

    assert packaged_cjk_font() is not None
    face = cjk_font_face("上下文压缩", tmp_path)
    assert face is not None and face.family == CJK_FAMILY and face.characters == 5
    with TTFont(face.path) as font:
        assert font.flavor == "woff" and "Noto Sans CJK" in font["name"].getDebugName(1)
        assert {ord(c) for c in "上下文压缩"} <= set(font.getBestCmap())
    assert face.unicode_range == "U+4E0A-4E0B, U+538B, U+6587, U+7F29"
    assert cjk_font_face("plain ASCII text", tmp_path / "none") is None
