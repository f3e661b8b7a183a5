"""Pure aggregation of run records: mean curves and one comparison row per scheduler.

Nothing here draws or writes; tables, plots and files are built from these values.
Spread over seeds is the sample standard deviation (``ddof=1``), reported as 0.0 for a
single seed.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from twinsched.model.run import RunResult

ARRIVED = "arrived_gpu_pct"
TIME = "time_s"
ALLOC_TIME_MEAN = "gpu_alloc_time_mean_pct"
ALLOC = "gpu_alloc_ratio_pct"
DEFAULT_AT: tuple[float, ...] = (90.0, 100.0, 130.0)
#: Summary fields averaged over seeds for replay runs, in table order.
REPLAY_FIELDS: tuple[str, ...] = (
    "gpu_alloc_ratio_pct",
    "queue_wait_mean_s",
    "queue_wait_p95_s",
    "completion_mean_s",
    "energy_kwh",
    "carbon_g",  # only in runs with energy accounting (else the column is hidden)
    "unscheduled",
    "started",
)


def by_scheduler(runs: Iterable[RunResult]) -> dict[str, list[RunResult]]:
    """Runs grouped by scheduler name, groups in first-seen order, seeds sorted within."""
    groups: dict[str, list[RunResult]] = {}
    for run in runs:
        groups.setdefault(run.scheduler, []).append(run)
    return {name: sorted(group, key=lambda r: r.seed) for name, group in groups.items()}


def run_mode(runs: Sequence[RunResult]) -> str:
    """The one mode shared by all runs; mixing fill-up and replay runs is bad input."""
    modes = sorted({run.mode for run in runs})
    if len(modes) != 1:
        raise ValueError(
            f"expected runs of one mode, got {modes or 'no runs'}; report each mode separately"
        )
    return modes[0]


def pct_label(arrived_pct: float) -> str:
    """``90.0`` -> ``"90"``, ``97.5`` -> ``"97.5"``: the arrived % as used in row keys."""
    return f"{arrived_pct:g}"


def curve_stats(runs: Sequence[RunResult], column: str) -> dict[str, list[dict[str, float]]]:
    """Per scheduler: ``arrived_gpu_pct``, ``mean``, ``min``, ``max`` of one curve column.

    Only arrived points where every seed of that scheduler has the column are kept; a
    scheduler without any such point (e.g. replay runs) maps to an empty list.
    """
    out: dict[str, list[dict[str, float]]] = {}
    for name, group in by_scheduler(runs).items():
        points = []
        for x, values in _aligned([r.curve for r in group], ARRIVED, [column]):
            col = values[column]
            points.append({ARRIVED: x, "mean": _mean(col), "min": min(col), "max": max(col)})
        out[name] = points
    return out


def mean_curves(runs: list[RunResult]) -> dict[str, list[dict[str, float]]]:
    """Per scheduler, every curve column averaged over seeds at each ``arrived_gpu_pct``.

    Only points present in all seeds are kept, and only columns every seed has at them.
    """
    return _mean_series(runs, lambda run: run.curve, ARRIVED)


def mean_samples(runs: list[RunResult]) -> dict[str, list[dict[str, float]]]:
    """Per scheduler, every replay sample column averaged over seeds at each ``time_s``.

    Only sample times present in all seeds are kept (seeds of one trace share them).
    """
    return _mean_series(runs, lambda run: run.samples, TIME)


def _mean_series(
    runs: list[RunResult], pick: Callable[[RunResult], list[dict[str, float]]], key: str
) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {}
    for name, group in by_scheduler(runs).items():
        series = [pick(run) for run in group]
        columns = _shared_columns(series, key)
        out[name] = [
            {key: x, **{c: _mean(v) for c, v in values.items()}}
            for x, values in _aligned(series, key, columns)
        ]
    return out


def comparison_rows(
    runs: list[RunResult],
    at: Sequence[float] = DEFAULT_AT,
    reference: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """One row per scheduler comparing the runs; keys are stable, snake_case.

    Fill-up rows: ``scheduler``, ``seeds``, ``alloc_<at>_mean`` / ``alloc_<at>_std`` for each
    arrived % in ``at`` present in every seed (missing points are left out of the row),
    ``final_frag_amount_pct``, ``unscheduled``, ``wall_seconds`` (means over seeds). Sorted by
    allocation at 100% arrived, descending.

    Replay rows (empty curves): ``scheduler``, ``seeds``, the means of :data:`REPLAY_FIELDS`
    from the summaries (``gpu_alloc_ratio_pct`` there is the allocation at the end), plus
    ``gpu_alloc_time_mean_pct`` (the allocation averaged over the samples, None without
    samples) and ``wall_seconds``; sorted by the time mean (else the end value) descending.

    ``reference`` maps scheduler names to a published allocation % at 100% arrived (for
    replay: compared with the sort value); schedulers found there get ``published`` and
    ``delta`` (ours minus published).
    """
    if not runs:
        return []
    replay = run_mode(runs) == "replay"
    rows: list[tuple[float, dict[str, Any]]] = []
    for name, group in by_scheduler(runs).items():
        row, headline = (_replay_row if replay else _fillup_row)(name, group, at)
        if reference is not None and name in reference and headline is not None:
            row["published"] = float(reference[name])
            row["delta"] = headline - float(reference[name])
        rows.append((headline if headline is not None else float("-inf"), row))
    rows.sort(key=lambda item: (-item[0], item[1]["scheduler"]))
    return [row for _, row in rows]


def _fillup_row(
    name: str, group: list[RunResult], at: Sequence[float]
) -> tuple[dict[str, Any], float | None]:
    row: dict[str, Any] = {"scheduler": name, "seeds": len(group)}
    for x in at:
        values = _values_at(group, x)
        if values is not None:
            row[f"alloc_{pct_label(x)}_mean"] = _mean(values)
            row[f"alloc_{pct_label(x)}_std"] = _std(values)
    for key in ("final_frag_amount_pct", "unscheduled"):
        row[key] = _summary_mean(group, key)
    _data_keys(row, group)
    row["wall_seconds"] = _mean([r.wall_seconds for r in group])
    at_100 = _values_at(group, 100.0)
    return row, _mean(at_100) if at_100 is not None else None


def _replay_row(
    name: str, group: list[RunResult], at: Sequence[float]
) -> tuple[dict[str, Any], float | None]:
    row: dict[str, Any] = {"scheduler": name, "seeds": len(group)}
    for key in REPLAY_FIELDS:
        row[key] = _summary_mean(group, key)
        if key == ALLOC:
            row[ALLOC_TIME_MEAN] = _time_mean_alloc(group)
    _data_keys(row, group)
    row["wall_seconds"] = _mean([r.wall_seconds for r in group])
    # The summary's allocation is the end state (often 0 once every pod has left), so the
    # time average over the samples is the better headline when there are samples.
    headline = row[ALLOC_TIME_MEAN] if row[ALLOC_TIME_MEAN] is not None else row[ALLOC]
    return row, headline if isinstance(headline, float) else None


DATA_FIELDS = ("bytes_moved", "transfer_kwh")  # runs of scenarios with data sets (docs/data.md)


def _data_keys(row: dict[str, Any], group: list[RunResult]) -> None:
    """The data moved, when every run of the group has it (a scenario with data sets)."""
    for key in DATA_FIELDS:
        if all(key in r.summary for r in group):
            row[key] = _summary_mean(group, key)


def _time_mean_alloc(group: list[RunResult]) -> float | None:
    """Mean over seeds of each seed's mean sampled allocation; None if a seed has no samples."""
    per_seed = []
    for run in group:
        values = [float(p[ALLOC]) for p in run.samples if ALLOC in p]
        if not values:
            return None
        per_seed.append(_mean(values))
    return _mean(per_seed)


def _values_at(group: list[RunResult], x: float) -> list[float] | None:
    """The allocation at ``x`` arrived in every seed, or None if any seed lacks it."""
    values = []
    for run in group:
        try:
            values.append(float(run.at(x, ALLOC)))
        except KeyError:
            return None
    return values


def _aligned(
    series: list[list[dict[str, float]]], key: str, columns: list[str]
) -> list[tuple[float, dict[str, list[float]]]]:
    """(``key`` value, column -> one value per seed) at the keys every seed has, ascending."""
    per_seed = [
        {float(p[key]): p for p in points if key in p and all(c in p for c in columns)}
        for points in series
    ]
    if not per_seed:
        return []
    common = set(per_seed[0]).intersection(*per_seed[1:])
    return [
        (x, {c: [float(seed[x][c]) for seed in per_seed] for c in columns}) for x in sorted(common)
    ]


def _shared_columns(series: list[list[dict[str, float]]], key: str) -> list[str]:
    """Columns (besides ``key``) found in every point of every seed, in first-seen order."""
    points = [p for run in series for p in run]
    if not points:
        return []
    return [c for c in points[0] if c != key and all(c in p for p in points)]


def _summary_mean(group: list[RunResult], key: str) -> float | None:
    values = [float(r.summary[key]) for r in group if isinstance(r.summary.get(key), int | float)]
    return _mean(values) if len(values) == len(group) else None


def _mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values))


def _std(values: Sequence[float]) -> float:
    return float(statistics.stdev(values)) if len(values) > 1 else 0.0
