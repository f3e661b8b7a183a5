"""Tables (Rich, Markdown) and PNG plots of autoscaling runs and forecaster backtests.

Plots use ``matplotlib.figure.Figure`` on an Agg canvas, never pyplot (see
``twinsched.report.plots`` for why); matplotlib is imported lazily.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.table import Table

    from twinsched.learning.autoscale.experiment import PolicyRun

AUTOSCALE_COLUMNS = (
    ("policy", "policy"),
    ("window_min", "window min"),
    ("scaling_events", "scaling events"),
    ("events_per_week", "events/week"),
    ("slo_violation_pct", "SLO violations %"),
    ("instance_minutes", "instance-min"),
    ("mean_instances", "mean inst."),
    ("latency_p50_ms", "p50 ms"),
    ("latency_p95_ms", "p95 ms"),
    ("latency_p99_ms", "p99 ms"),
    ("latency_p99_9_ms", "p99.9 ms"),
    ("latency_max_ms", "max ms"),
)
BACKTEST_COLUMNS = (
    ("series", "trace"),
    ("forecaster", "forecaster"),
    ("mae", "MAE"),
    ("rmse", "RMSE"),
    ("mape_pct", "MAPE %"),
    ("under_rate_pct", "under-prov. %"),
    ("under_mean_pct", "shortfall mean %"),
    ("under_max_pct", "shortfall max %"),
    ("open_loop_mae", "open-loop MAE"),
    ("fit_seconds", "fit s"),
    ("windows", "windows"),
)


def cell(value: Any) -> str:
    """Integers as they are, floats with two decimals, missing values as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    return f"{float(value):,.2f}"


def rich_table(
    rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...], title: str
) -> Table:
    from rich.table import Table

    table = Table(title=title)
    for key, header in columns:
        table.add_column(
            header, justify="left" if key in ("policy", "series", "forecaster") else "right"
        )
    for row in rows:
        table.add_row(*(cell(row.get(key)) for key, _ in columns))
    return table


def markdown_table(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> str:
    head = "| " + " | ".join(h for _, h in columns) + " |"
    rule = (
        "|"
        + "|".join("---" if k in ("policy", "series", "forecaster") else "---:" for k, _ in columns)
        + "|"
    )
    body = ["| " + " | ".join(cell(r.get(k)) for k, _ in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


def plot_timeline(runs: list[PolicyRun], path: str | Path, days: float = 7.0) -> Path:
    """Load (top) and instances per policy (bottom) over the first ``days`` of evaluation."""
    fig = _figure(2, (11.0, 6.5))
    top, bottom = fig.axes
    first = runs[0].result
    minutes = min(len(first.load), int(days * 1440))
    hours = np.arange(minutes) / 60.0
    top.plot(hours, first.load[:minutes], linewidth=0.5, color="0.3")
    top.set_ylabel("load (requests/min)")
    top.set_title(f"{runs[0].spec.trace}: load and instances, first {days:g} days of evaluation")
    for run in runs:
        label = run.result.policy
        if run.row.get("window_min"):
            label += f" (w={run.row['window_min']} min)"
        bottom.step(hours, run.result.instances[:minutes], where="post", linewidth=0.9, label=label)
    bottom.set_xlabel("hours since the start of evaluation")
    bottom.set_ylabel("instances")
    bottom.legend(fontsize="x-small", loc="upper right")
    return _save(fig, path)


def plot_summary(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Bars per policy: scaling events per week, SLO violation rate, p99 latency."""
    fig = _figure(3, (11.0, 8.0))
    names = [
        str(r["policy"]) + (f" w={r['window_min']}" if r.get("window_min") else "") for r in rows
    ]
    panels = (
        ("events_per_week", "scaling events / week"),
        ("slo_violation_pct", "SLO violations (% of minutes)"),
        ("latency_p99_ms", "p99 latency (ms)"),
    )
    for ax, (key, label) in zip(fig.axes, panels, strict=True):
        ax.barh(names, [float(r[key]) for r in rows], color="C0")
        ax.set_xlabel(label)
        ax.tick_params(axis="y", labelsize="x-small")
        ax.invert_yaxis()
    return _save(fig, path)


def plot_sweep(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Events per week and violation rate against the window, one line per policy."""
    fig = _figure(2, (9.0, 7.0))
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_policy.setdefault(str(row["policy"]), []).append(row)
    for name, group in by_policy.items():
        if not any(r.get("window_min") for r in group):
            # Window-free policies (reactive): one horizontal line each.
            for ax, key in zip(fig.axes, ("events_per_week", "slo_violation_pct"), strict=True):
                ax.axhline(float(group[0][key]), linestyle="--", linewidth=1.0, label=name)
            continue
        group = sorted(group, key=lambda r: int(r["window_min"]))
        x = [int(r["window_min"]) for r in group]
        style = "o-" if len(group) > 1 else "s"
        fig.axes[0].plot(x, [r["events_per_week"] for r in group], style, label=name)
        fig.axes[1].plot(x, [r["slo_violation_pct"] for r in group], style, label=name)
    fig.axes[0].set_yscale("log")
    fig.axes[0].set_ylabel("scaling events / week (log)")
    fig.axes[1].set_ylabel("SLO violations (% of minutes)")
    fig.axes[1].set_xlabel("window w (minutes)")
    fig.axes[0].legend(fontsize="x-small")
    return _save(fig, path)


def _figure(panels: int, size: tuple[float, float]) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    fig.subplots(panels, 1)
    return fig


def _save(fig: Figure, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out
