"""The notebooks in ``notebooks/``: paired, stripped, and runnable top to bottom.

* every ``NN_*.py`` (jupytext ``py:percent``, the source of truth) has an ``.ipynb`` twin with
  the same cells (type, source, tags) — ``jupytext --sync`` keeps them in step;
* the stored ``.ipynb`` carries no outputs, execution counts or widget state;
* the first cell is tagged ``parameters`` and reads ``CI``;
* each notebook executes without error in a fresh kernel (nbclient) with ``CI=true`` (the small
  size) and ``MPLBACKEND=Agg``, within a few minutes; the time is recorded: ``record_property``
  ``duration_s`` (JUnit XML), printed (``-rA`` / ``-s``), and kept in the pytest cache
  (``pytest --cache-show 'ctxlab/*/*'``);
* the executed notebook stays small (:data:`MAX_EXECUTED_BYTES`, outputs and widget state
  included): no progress bar is stored (no progress widget, no ``tqdm`` text), the only widgets
  are the notebooks' own (the explorer), a loader's warning names its transcript file (never a
  line of ctxlab's source), and notebook 02 prints costs per call with enough digits to tell
  the strategies apart;
* every figure it shows is an ``image/png`` output (``Agg`` has no inline display of its own:
  ``ctxlab.analysis`` registers the PNG formatter), decoded and checked to be a real picture
  (large enough, many colours, not blank), and no output is a bare ``<Figure ...>`` text; the
  explorer's output carries its chart as PNG next to the widget view.

Figures are exported during the run (``CTXLAB_FIGURES_DIR`` points at a temporary folder) so
that the export path is exercised too.  These tests never skip: missing shared data is a failure.
"""

from __future__ import annotations

import base64
import io
import os
import re
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.py"))
#: "within a few minutes on a 2-core machine" under CI=true
MAX_SECONDS = 300
#: notebooks that must export at least these figures when CTXLAB_FIGURES_DIR is set
EXPECTED_FIGURES = {
    "01_token_budget": ["nb01_budget_defaults", "nb01_budget", "nb01_budget_sample"],
    "02_strategies": ["nb02_savings", "nb02_strategies", "nb02_cost", "nb02_sweep", "nb02_frontier"],
    "03_write_a_plugin": ["nb03_plugin", "nb03_savings"],
    "05_findings": ["nb05_findings"],
}
#: figures each notebook shows inline (image/png outputs; 01's last one is the explorer)
SHOWN_FIGURES = {
    "01_token_budget": 4,
    "02_strategies": 8,  # savings per run, heatmap, strategies, cost per call, saving and cost vs recall, sweep, frontier
    "03_write_a_plugin": 2,
    "04_agent_prototype": 0,
    "05_findings": 1,
}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: the bound on an executed notebook (outputs, figures and widget state), under CI=true
MAX_EXECUTED_BYTES = 1_000_000
#: the widgets a notebook may show (its text/plain repr starts so); anything else is a stray one
OWN_WIDGETS = ("BudgetExplorer(", "CallInspector(")
#: a tqdm progress bar's text ("  40%|####      | 2/5 [00:01<00:01, ...]")
PROGRESS_TEXT = re.compile(r"\d+%\|.*\| *\d+/\d+ \[")
pytestmark = pytest.mark.slow


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.cell_type, c.source.strip(), tuple(c.get("metadata", {}).get("tags", []))) for c in nb.cells]


def test_the_notebooks_exist() -> None:
    assert [p.stem for p in NOTEBOOKS] == list(SHOWN_FIGURES)
    assert (NB_DIR / "jupytext.toml").is_file(), "pairing is configured in notebooks/jupytext.toml"
    config = (NB_DIR / "jupytext.toml").read_text(encoding="utf-8")
    assert "py:percent" in config and "ipynb" in config


@pytest.mark.parametrize("py", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_pair_in_sync(py: Path) -> None:
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.is_file(), f"{ipynb.name} is missing: run `.venv/bin/jupytext --sync notebooks/{py.name}`"
    from_py = jupytext.read(py)
    stored = nbformat.read(ipynb, as_version=4)
    assert _cells(from_py) == _cells(stored), (
        f"{py.name} and {ipynb.name} differ: run `.venv/bin/jupytext --sync notebooks/{py.name}`"
    )
    assert stored.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("py", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_ipynb_outputs_stripped(py: Path) -> None:
    stored = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    nbformat.validate(stored)
    for i, cell in enumerate(stored.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {i} of {py.stem}.ipynb has stored outputs"
            assert cell.execution_count is None, f"cell {i} of {py.stem}.ipynb has an execution count"
    assert "widgets" not in stored.metadata, f"{py.stem}.ipynb stores widget state"


@pytest.mark.parametrize("py", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_first_cell_is_parameters(py: Path) -> None:
    nb = jupytext.read(py)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert nb.cells.index(first) == 0, "the parameters cell comes first"
    assert "parameters" in first.metadata.get("tags", [])
    assert 'os.environ.get("CI") == "true"' in first.source


@pytest.mark.parametrize("py", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes(
    py: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    record_property: pytest.RecordProperty,
    request: pytest.FixtureRequest,
) -> None:
    figures = tmp_path / "figures"
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("CTXLAB_FIGURES_DIR", str(figures))
    monkeypatch.setenv("CTXLAB_FILES_DIR", str(tmp_path / "files"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = jupytext.read(py)
    client = NotebookClient(
        nb,
        timeout=MAX_SECONDS,
        kernel_name="python3",
        resources={"metadata": {"path": str(NB_DIR)}},
    )
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError with the cell and traceback on any error
    seconds = time.perf_counter() - start
    record_property("duration_s", round(seconds, 1))
    print(f"{py.stem}: {seconds:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert seconds < MAX_SECONDS, f"{py.stem} took {seconds:.0f} s under CI=true (limit {MAX_SECONDS} s)"
    _check_hygiene(nb, py.stem, record_property)
    shown = _shown_figures(nb, py.stem)
    assert len(shown) == SHOWN_FIGURES[py.stem], f"{py.stem} shows {len(shown)} figures: {shown}"
    for name in EXPECTED_FIGURES.get(py.stem, []):
        png = figures / f"{name}.png"
        assert png.is_file() and png.stat().st_size > 5_000, f"{py.stem} did not export {png.name}"
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    if cache is not None:  # `pytest --cache-show "ctxlab/*/*"` lists the last timings
        cache.set(f"ctxlab/notebook_seconds/{py.stem}", round(seconds, 1))


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _check_hygiene(nb: nbformat.NotebookNode, stem: str, record_property: pytest.RecordProperty) -> None:
    """Size, widgets, progress bars, warnings and cost digits of an executed notebook (module doc)."""
    size = len(nbformat.writes(nb).encode("utf-8"))
    record_property("executed_bytes", size)
    print(f"{stem}: executed notebook {size:,} bytes")
    assert size < MAX_EXECUTED_BYTES, f"{stem}: the executed notebook is {size:,} bytes"
    state = (
        nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    )
    progress = [k for k, m in state.items() if m.get("model_name") == "FloatProgressModel"]
    assert not progress, f"{stem} stores {len(progress)} progress widgets"
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_MIME in data:
                shown = _text(data.get("text/plain"))
                assert shown.startswith(OWN_WIDGETS), f"{stem} cell {i} shows a stray widget: {shown[:80]!r}"
            text = _text(out.get("text"))
            assert not PROGRESS_TEXT.search(text), f"{stem} cell {i} stores a progress bar: {text[:80]!r}"
            if "Warning" in text:  # a loader's warning is located at its transcript, not in ctxlab
                assert "ctxlab/transcripts/" not in text, f"{stem} cell {i}: {text[:200]!r}"
    if stem == "02_strategies":
        per_call = _cost_per_call(nb)
        assert len(per_call) >= 3 and len(set(per_call)) > 1, per_call
        assert all(re.fullmatch(r"0\.\d{4}", v) for v in per_call), per_call


def _cost_per_call(nb: nbformat.NotebookNode) -> list[str]:
    """The ``cost_per_call_usd`` cells of notebook 02's cost table, as printed (text/plain).

    A wide table wraps its column names over several header lines ("cost_pe", "r_call_", "usd"
    above the ``---`` under each name) and long cells over several lines: a column's name is its
    header fragments joined, and a row's value is on its first line (the others hold the rest of
    a wrapped label)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            lines = _text(out.get("data", {}).get("text/plain")).splitlines()
            top = next((i for i, line in enumerate(lines) if line.startswith("┌")), None)
            sep = next((i for i, line in enumerate(lines) if line.startswith("╞")), None)
            if top is None or sep is None:
                continue
            header = [[c.strip() for c in re.split(r"[│┆]", line)[1:-1]] for line in lines[top + 1 : sep]]
            names = []
            for j in range(len(header[0])):
                parts = [row[j] for row in header]
                names.append("".join(parts[: parts.index("---")] if "---" in parts else parts))
            if "cost_per_call_usd" not in names:
                continue
            col = names.index("cost_per_call_usd")
            rows = [[c.strip() for c in re.split(r"[│┆]", line)[1:-1]] for line in lines[sep + 1 :]]
            return [r[col] for r in rows if len(r) == len(names) and r[col]]
    raise AssertionError("notebook 02 shows no cost table")


def check_png(data: str, where: str) -> tuple[int, int]:
    """Decode a base64 ``image/png`` output and check it is a real chart; returns its size in pixels.

    A chart is at least 300 x 200 pixels, has more than 16 distinct colours (lines, fills and
    anti-aliased text) and at least 2 % of its pixels are not near-white.
    """
    img = Image.open(io.BytesIO(base64.b64decode(data)))
    assert img.format == "PNG", f"{where}: not a PNG"
    w, h = img.size
    assert w >= 300 and h >= 200, f"{where}: {w}x{h} pixels is too small for a chart"
    rgb = img.convert("RGB")
    colours = rgb.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 16, f"{where}: only {len(colours or [])} colours"
    grey = rgb.convert("L").histogram()
    inked = sum(grey[:240]) / (w * h)
    assert inked > 0.02, f"{where}: blank ({inked:.1%} of the pixels are not white)"
    return w, h


def _shown_figures(nb: nbformat.NotebookNode, stem: str) -> list[str]:
    """Check every figure output of an executed notebook; returns ``cell <i>: <w>x<h>`` per PNG."""
    shown = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            data = out.get("data", {})
            text = data.get("text/plain", "")
            if isinstance(text, list):
                text = "".join(text)
            if text.startswith("<Figure size") or "BudgetExplorer(" in text:
                assert "image/png" in data, f"{stem} cell {i} shows a figure as text only: {text[:60]!r}"
            if "BudgetExplorer(" in text:
                assert WIDGET_MIME in data, f"{stem} cell {i}: the explorer has no widget view"
            if "image/png" in data:
                w, h = check_png(data["image/png"], f"{stem} cell {i}")
                shown.append(f"cell {i}: {w}x{h}")
    return shown


def test_check_png_rejects_blank_and_tiny_images() -> None:
    """The PNG check can fail: a white image and a tiny one are refused."""

    def png(size: tuple[int, int], colour: str) -> str:
        buf = io.BytesIO()
        Image.new("RGB", size, colour).save(buf, format="PNG")
        return base64.b64encode(buf.getvalue()).decode("ascii")

    with pytest.raises(AssertionError, match="colours"):
        check_png(png((800, 600), "white"), "white")
    with pytest.raises(AssertionError, match="too small"):
        check_png(png((40, 30), "black"), "tiny")


def test_notebooks_do_not_set_up_their_own_env() -> None:
    """Notebooks find their data from their working directory (``notebooks/`` in the checkout,
    through ``ctxlab.transcripts.locate``), never from a hard-coded host path."""
    for py in NOTEBOOKS:
        text = py.read_text(encoding="utf-8")
        assert "/work/" not in text and "/home/" not in text, f"{py.name} hard-codes a host path"
        assert os.sep + "tmp" + os.sep not in text.replace("tempfile", ""), f"{py.name} hard-codes /tmp"
