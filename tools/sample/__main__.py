"""``python -m tools.sample record OUT.json``: see :func:`tools.sample.main`."""

from tools.sample import main

if __name__ == "__main__":
    raise SystemExit(main())
