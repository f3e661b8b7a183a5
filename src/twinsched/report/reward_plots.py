"""PNG learning curves of an online meta-scheduler (bandit) from its runs' reward tables.

Left: the mean reward over a moving window of decisions, the bandit's and each member's on
the same decisions (the first seed). Right: the share of the member gap captured against how
often the decision's context had been seen (:func:`twinsched.report.rewards.learning_curve`),
one thin line per seed and the pool of all seeds. Matplotlib is imported lazily, figures are
drawn on an Agg canvas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.report.rewards import VISIT_EDGES, learning_curve, pooled_curve, reward_arrays

DPI = 120


def plot_learning_curves(
    tables: Sequence[Mapping[str, Any]],
    path: str | Path,
    labels: Sequence[str] = (),
    title: str = "",
    window: int = 200,
) -> Path:
    """The two panels above for ``tables`` (one reward table per seed, named by ``labels``);
    raises ValueError without decisions."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not tables or not tables[0]["regret"]:
        raise ValueError("no reward table with decisions to plot")
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    names = list(labels) or [f"run {i}" for i in range(len(tables))]
    chosen, members = reward_arrays(tables[0])
    width = max(1, min(window, chosen.size))
    kernel = np.ones(width) / width
    x = np.arange(width, chosen.size + 1)
    for name, row in zip(tables[0]["members"], members, strict=True):
        left.plot(x, np.convolve(row, kernel, mode="valid"), linewidth=1.0, label=str(name))
    left.plot(x, np.convolve(chosen, kernel, mode="valid"), "k", linewidth=1.6, label="bandit")
    left.set_xlabel("decision")
    left.set_ylabel(f"mean reward, last {width} decisions")
    left.set_title(f"reward on the same decisions ({names[0]})")
    left.legend(fontsize="small")
    for name, table in zip(names, tables, strict=True):
        rows = learning_curve(table, VISIT_EDGES)
        xs, ys = [r["from_visit"] + 1 for r in rows], [r["captured"] for r in rows]
        right.plot(xs, ys, linewidth=0.8, alpha=0.6, label=name)
    pooled = pooled_curve(tables, VISIT_EDGES)
    xs, ys = [r["from_visit"] + 1 for r in pooled], [r["captured"] for r in pooled]
    right.plot(xs, ys, "k", marker="o", linewidth=1.8, label="all runs")
    right.axhline(0.5, color="0.5", linestyle="--", linewidth=1.0)
    right.set_xscale("log")
    right.set_ylim(0.0, 1.05)
    right.set_xlabel("decisions of the same context before it, +1 (band start)")
    right.set_ylabel("share of best-minus-worst member gap captured")
    right.set_title("learning per context")
    right.legend(fontsize="small")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, format="png")
    return out
