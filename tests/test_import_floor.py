"""`import ctxlab` (what a prototype imports for the middleware) must not load the lab floor."""

from __future__ import annotations

import json
import subprocess
import sys

# ``rich`` is not listed: httpx (under langgraph_sdk, under langchain.agents) imports it by itself
# whenever it is installed, so its presence says nothing about ctxlab's floors.
LAB_MODULES = (
    "polars",
    "matplotlib",
    "ipywidgets",
    "IPython",
    "jupyterlab",
    "tqdm",
    "tiktoken",
    "ctxlab.transcripts",
    "ctxlab.replay",
    "ctxlab.analysis",
    "ctxlab.cli",
)


def test_import_ctxlab_does_not_load_lab_packages() -> None:
    code = (
        "import json, sys; import ctxlab; "
        "from ctxlab import CompressionMiddleware, CompressionSettings; "
        "CompressionMiddleware(settings=CompressionSettings()); "
        f"print(json.dumps(sorted(m for m in {LAB_MODULES!r} if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == [], f"import ctxlab pulled in lab packages: {loaded}"


def test_public_surface_names() -> None:
    import ctxlab
    from ctxlab.core.events import to_sse

    assert ctxlab.CompressionMiddleware.__name__ == "CompressionMiddleware"
    assert ctxlab.CompressionSettings.__name__ == "CompressionSettings"
    assert ctxlab.to_sse is to_sse


def test_import_ctxlab_alone_defers_langchain() -> None:
    """``import ctxlab`` loads no LangChain until a middleware name is used (PEP 562 exports)."""
    code = "import json, sys; import ctxlab; print(json.dumps(sorted(m for m in sys.modules if m.startswith(('langchain', 'langgraph')))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
