"""``python -m ctxlab``: the same as the ``ctxlab`` command."""

from ctxlab.cli.main import main

raise SystemExit(main())
