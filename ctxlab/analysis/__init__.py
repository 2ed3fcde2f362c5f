"""Floor 4, analysis: frames, plots, reports and widgets over replay results (what notebooks import).

Imports polars and matplotlib; nothing below this floor does.
"""
