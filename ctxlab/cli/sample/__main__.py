"""``python -m ctxlab.cli.sample record OUT.json``: see :func:`ctxlab.cli.sample.main`."""

from ctxlab.cli.sample import main

if __name__ == "__main__":
    raise SystemExit(main())
