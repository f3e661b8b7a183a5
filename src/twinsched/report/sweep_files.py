"""Files of a sweep report: the summary table (CSV and Markdown), the curves (CSV) and the
multi-panel allocation figure (PNG), all from the pure values of :mod:`twinsched.report.sweep`.
"""

from __future__ import annotations

from pathlib import Path

from twinsched.model.run import RunResult
from twinsched.report.files import write_csv
from twinsched.report.plots import plot_sweep_fillup
from twinsched.report.sweep import curve_rows, summary_rows
from twinsched.report.table import rows_to_markdown


def write_sweep_report(groups: dict[str, list[RunResult]], out_dir: str | Path) -> dict[str, Path]:
    """Write ``summary.csv``, ``summary.md``, ``curves.csv`` and (fill-up runs)
    ``fillup.png`` under ``out_dir``; the paths written by name. ValueError without runs."""
    if not any(groups.values()):
        raise ValueError("no stored runs to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = summary_rows(groups)
    paths = {"summary_csv": out / "summary.csv", "summary_md": out / "summary.md"}
    write_csv(paths["summary_csv"], rows)
    paths["summary_md"].write_text(rows_to_markdown(rows), encoding="utf-8")
    curves = curve_rows(groups)
    if curves:
        paths["curves_csv"] = out / "curves.csv"
        write_csv(paths["curves_csv"], curves)
        paths["fillup_png"] = plot_sweep_fillup(groups, out / "fillup.png")
    return paths
