"""Reports of runs: aggregation, terminal and Markdown tables, PNG plots, an HTML page, files.

Matplotlib is imported only inside the plotting functions, and the names below on first use,
so a run without ``--out`` imports neither the HTML page nor the plots.
"""

import typing

from twinsched import lazy

if typing.TYPE_CHECKING:
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

_LAZY = {
    "comparison_rows": "aggregate", "mean_curves": "aggregate", "mean_samples": "aggregate",
    "write_outputs": "files", "write_html": "html",
    "plot_fillup": "plots", "plot_fragmentation": "plots", "plot_replay": "plots",
    "comparison_table": "table", "print_comparison": "table", "rows_to_markdown": "table",
}  # fmt: skip


__getattr__ = lazy.lazy_names(__name__, _LAZY)
