"""Floor 4, analysis: frames, plots, reports and widgets over replay results (what notebooks import).

Imports polars and matplotlib; nothing below this floor does.  Importing it under IPython makes
matplotlib figures display inline as PNG whatever the backend (:mod:`ctxlab.analysis.display`).
"""

from ctxlab.analysis.display import enable_inline_figures as _enable_inline_figures

_enable_inline_figures()
