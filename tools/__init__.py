"""Developer tooling of the ctxlab repository, outside the installed package (the wheel ships
``ctxlab/`` only; ``pyproject.toml``'s hatch config).  Run from the repository root, e.g.
``.venv/bin/python -m tools.sample record``; ``tools/README.md`` lists each tool and what it
rewrites.  Nothing in ``ctxlab/`` imports this package (``tests/test_tools.py``).
"""
