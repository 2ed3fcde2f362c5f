"""``python -m ctxlab.replay.columns``: print the column tables of ``docs/columns.md``."""

from __future__ import annotations

from ctxlab.replay.columns import columns_markdown

print(columns_markdown(), end="")
