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


#: what ``ctxlab --help`` must not load: start-up stays a parser and nothing else (issue 12, target 4)
HEAVY_FOR_HELP = (
    "langchain",
    "langchain_core",
    "langgraph",
    "polars",
    "matplotlib",
    "tiktoken",
    "ray",
    "numpy",
)


def _modules_after_cli(args: list[str]) -> list[str]:
    """The heavy top-level packages in ``sys.modules`` after ``ctxlab.cli.main.main(args)``, run
    in a fresh interpreter (the console script's entry point, ``ctxlab.cli.main:main``)."""
    code = (
        "import json, sys\n"
        "from ctxlab.cli.main import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY_FOR_HELP!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ctxlab_help_imports_no_langchain_polars_or_matplotlib() -> None:
    assert _modules_after_cli(["--help"]) == []


def test_subcommand_help_imports_nothing_heavy_either() -> None:
    # the parser of every subcommand (with the sweep options: --jobs, --engine ray) stays light
    for sub in ("replay", "compare", "plugins"):
        assert _modules_after_cli([sub, "--help"]) == [], sub
