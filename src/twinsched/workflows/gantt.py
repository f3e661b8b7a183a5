"""Per-task Gantt chart of a schedule as a PNG (matplotlib Figure + Agg canvas, no pyplot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform
from twinsched.workflows.wfcommons import task_type

DPI = 120
MAX_LEGEND = 10


def plot_gantt(dag: DAG, platform: Platform, schedule: Schedule, path: str | Path) -> Path:
    """One row per node that runs a task, one bar per task, coloured by task type.

    Tasks sharing a node's cores overlap in time; they are drawn as thin stacked lanes so
    that every bar stays visible. Raises ValueError for an unschedulable schedule.
    """
    if not schedule.ok:
        raise ValueError(f"nothing to draw: {schedule.reason}")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    used = np.unique(schedule.node).tolist()
    row_of = {n: i for i, n in enumerate(used)}
    types = task_types(dag)
    by_count = sorted(set(types), key=lambda k: (-types.count(k), k))
    colour = {k: (f"C{i}" if i < MAX_LEGEND else "0.6") for i, k in enumerate(by_count)}
    lanes = _lanes(schedule, used)
    fig = Figure(figsize=(10.0, 1.0 + 0.45 * len(used)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for t in range(dag.n):
        n = int(schedule.node[t])
        lane, count = lanes[t]
        height = 0.8 / count
        bottom = row_of[n] - 0.4 + lane * height
        width = float(schedule.finish[t] - schedule.start[t])
        ax.broken_barh(
            [(float(schedule.start[t]), max(width, 1e-9))],
            (bottom, height),
            facecolors=colour[types[t]],
            edgecolors="0.2",
            linewidth=0.2,
        )
    ax.set_yticks(range(len(used)))
    ax.set_yticklabels(
        [f"{platform.node_names[n]} ({platform.tier_names[platform.tier[n]]})" for n in used],
        fontsize="small",
    )
    ax.invert_yaxis()
    ax.set_xlabel("Time (s)")
    ax.set_xlim(0.0, max(schedule.makespan, 1e-9) * 1.01)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(f"{dag.name} · {schedule.scheduler} · makespan {schedule.makespan:.1f} s")
    from matplotlib.patches import Patch

    shown = by_count[:MAX_LEGEND]
    handles = [Patch(facecolor=colour[k], label=k) for k in shown]
    if len(by_count) > MAX_LEGEND:
        handles.append(Patch(facecolor="0.6", label="other"))
    ax.legend(handles=handles, fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, format="png")
    return out


def task_types(dag: DAG) -> list[str]:
    """Per task, what kind of task it is: recorded by the importer, else from its name."""
    recorded = dag.meta.get("task_types")
    if isinstance(recorded, list) and len(recorded) == dag.n:
        return [str(k) for k in recorded]
    return [task_type(name) for name in dag.names]


def _lanes(schedule: Schedule, used: list[int]) -> dict[int, tuple[int, int]]:
    """(lane, lanes on that node) per task: greedy interval colouring by start time."""
    out: dict[int, tuple[int, int]] = {}
    for n in used:
        tasks = np.flatnonzero(schedule.node == n)
        tasks = tasks[np.lexsort((tasks, schedule.start[tasks]))]
        lane_end: list[float] = []
        assigned: list[tuple[int, int]] = []
        for t in tasks.tolist():
            begin = float(schedule.start[t])
            free = [i for i, end in enumerate(lane_end) if end <= begin]
            lane = free[0] if free else len(lane_end)
            if free:
                lane_end[lane] = float(schedule.finish[t])
            else:
                lane_end.append(float(schedule.finish[t]))
            assigned.append((t, lane))
        for t, lane in assigned:
            out[t] = (lane, len(lane_end))
    return out
