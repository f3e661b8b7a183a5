"""PNG time lines of replays with faults or energy, per tier (nodepool): allocation, energy,
carbon and disruptions, from the tier columns of the samples (``sim/timeline.py``).

Each line is a scheduler's mean over seeds (:func:`mean_samples`). Matplotlib is imported
lazily; figures are drawn on an Agg canvas, as in :mod:`twinsched.report.plots`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from twinsched.model.run import RunResult
from twinsched.report.aggregate import TIME, mean_samples
from twinsched.report.plots import about, save, style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Means = dict[str, list[dict[str, float]]]
TIERS = "."  # as sim/timeline.py: ``<figure>.<nodepool>``
TIER_COLOURS = ("black", "tab:olive", "tab:cyan", "tab:gray")  # apart from the schedulers' C0-C5


def has_tiers(runs: list[RunResult]) -> bool:
    """Whether the runs' samples carry the tier columns (runs with faults or energy)."""
    return any("nodes_down" in p for run in runs for p in run.samples)


def tiers_of(means: Means, figure: str) -> list[str]:
    """The nodepools that have column ``figure``, in first-seen order."""
    out: list[str] = []
    for points in means.values():
        for point in points[:1]:
            prefix = f"{figure}{TIERS}"
            out += [c[len(prefix) :] for c in point if c.startswith(prefix)]
    return list(dict.fromkeys(out))


def plot_tiers(runs: list[RunResult], path: str | Path) -> Path:
    """Allocation per tier over time: GPU allocation where the tier has GPUs, CPU
    allocation otherwise; one panel per tier, one line per scheduler."""
    means = _means(runs)
    tiers = tiers_of(means, "cpu_alloc_pct")
    fig, axes = _grid(1, len(tiers), (4.2 * len(tiers), 4.2))
    gpu_tiers = set(tiers_of(means, "gpu_alloc_pct"))
    for ax, tier in zip(axes[0], tiers, strict=True):
        what = "gpu" if tier in gpu_tiers else "cpu"
        _lines(ax, means, f"{what}_alloc_pct{TIERS}{tier}")
        ax.set_title(f"{tier}: {what.upper()} allocated (%)", fontsize="medium")
        ax.set_ylim(0.0, 101.0)
    _finish(fig, axes, f"Allocation per tier over time{about(runs)}")
    return save(fig, path)


def plot_energy(runs: list[RunResult], path: str | Path) -> Path:
    """Per tier (columns): energy used so far (kWh), carbon emitted so far (kg CO2), and
    the tier's carbon intensity (g CO2/kWh, the same for every scheduler)."""
    means = _means(runs)
    tiers = tiers_of(means, "energy_kwh")
    fig, axes = _grid(3, len(tiers), (4.2 * len(tiers), 8.4))
    first = dict([next(iter(means.items()))])
    for k, tier in enumerate(tiers):
        _lines(axes[0][k], means, f"energy_kwh{TIERS}{tier}")
        _lines(axes[1][k], means, f"carbon_g{TIERS}{tier}", scale=1e-3)
        _lines(axes[2][k], first, f"g_per_kwh{TIERS}{tier}", color="0.3")
        axes[0][k].set_title(tier, fontsize="medium")
    for row, label in enumerate(("energy so far (kWh)", "carbon so far (kg CO2)", "g CO2/kWh")):
        axes[row][0].set_ylabel(label)
    _finish(fig, axes, f"Energy and carbon per tier over time{about(runs)}")
    return save(fig, path)


def plot_disruptions(runs: list[RunResult], path: str | Path) -> Path:
    """Pods evicted so far per scheduler (node and link faults), and nodes down per tier."""
    means = _means(runs)
    fig, axes = _grid(2, 1, (8.0, 6.0))
    evicted, down = axes[0][0], axes[1][0]
    if any("disruptions" in p for pts in means.values() for p in pts[:1]):
        _lines(evicted, means, "disruptions")
    evicted.set_ylabel("pods evicted so far")
    first = next(iter(means.values()))
    for k, tier in enumerate(tiers_of(means, "nodes_down")):
        hours = [p[TIME] / 3600.0 for p in first]
        down.step(
            hours,
            [p[f"nodes_down{TIERS}{tier}"] for p in first],
            where="post",
            label=tier,
            color=TIER_COLOURS[k % len(TIER_COLOURS)],
        )
    down.set_ylabel("nodes down (mean of seeds)")
    down.legend(loc="upper right", fontsize="small", title="tier")
    _finish(fig, axes, f"Disruptions over time{about(runs)}")
    return save(fig, path)


def _means(runs: list[RunResult]) -> Means:
    means = {name: pts for name, pts in mean_samples(runs).items() if pts}
    if not means or not has_tiers(runs):
        raise ValueError("no replay samples with tier columns to plot")
    return means


def _lines(
    ax: Axes, means: Means, column: str, scale: float = 1.0, color: str | None = None
) -> None:
    for i, (name, points) in enumerate(means.items()):
        if not all(column in p for p in points):
            continue
        line = style(i) | ({"color": color} if color else {})
        hours = [p[TIME] / 3600.0 for p in points]
        ax.plot(hours, [p[column] * scale for p in points], label=name, **line)
    ax.set_ylim(bottom=0.0)


def _grid(rows: int, cols: int, size: tuple[float, float]) -> tuple[Figure, list[list[Axes]]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    for ax in axes.flat:
        ax.grid(True, alpha=0.3)
    return fig, [list(row) for row in axes]


def _finish(fig: Figure, axes: list[list[Axes]], title: str) -> None:
    handles, labels = axes[0][0].get_legend_handles_labels()
    if labels:
        fig.legend(
            handles, labels, loc="outside lower center", ncols=min(6, len(labels)), fontsize="small"
        )
    fig.suptitle(title.replace("\n", " — "), fontsize="medium")
    for ax in axes[-1]:
        ax.set_xlabel("Trace time (h)")
