"""Reports of runs: aggregation, terminal and Markdown tables, PNG plots, an HTML page, files.

Matplotlib is imported only inside the plotting functions, so importing this package is cheap.
"""

from twinsched.report.aggregate import comparison_rows, mean_curves, mean_samples
from twinsched.report.files import write_outputs
from twinsched.report.html import write_html
from twinsched.report.plots import plot_fillup, plot_fragmentation, plot_replay
from twinsched.report.table import comparison_table, print_comparison, rows_to_markdown

__all__ = [
    "comparison_rows",
    "comparison_table",
    "mean_curves",
    "mean_samples",
    "plot_fillup",
    "plot_fragmentation",
    "plot_replay",
    "print_comparison",
    "rows_to_markdown",
    "write_html",
    "write_outputs",
]
