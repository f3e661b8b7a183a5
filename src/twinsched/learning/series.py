"""Load series for the learning plane: requests per minute, with gaps as NaN.

Two public traces stand in for the private hospital trace: ``nasa-http-1995`` (one value per
minute, daily and weekly cycles, a hole and an outage) and ``bank-calls-2003`` (5-minute counts
on weekdays 07:00-21:00, spread evenly over their five minutes). Both are in requests per
minute, so forecasters and the autoscaler see the same unit. A *day* and a *week* are
counted in steps of the series (a bank day has 845 minutes, a bank week five such days).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twinsched.errors import TraceFormatError, UnknownNameError
from twinsched.traces.datadir import trace_dir

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LoadSeries:
    """A load series: ``values[i]`` requests/min in step ``i`` (NaN where nothing was logged)."""

    name: str
    values: FloatArray
    step_minutes: int
    day: int
    week: int
    times: npt.NDArray[np.datetime64]

    def __len__(self) -> int:
        return len(self.values)

    def split(self, at: int) -> tuple[LoadSeries, LoadSeries]:
        """The series cut at step ``at``: (first ``at`` steps, the rest)."""
        return self.slice(0, at), self.slice(at, len(self))

    def slice(self, start: int, stop: int) -> LoadSeries:
        return LoadSeries(
            self.name,
            self.values[start:stop],
            self.step_minutes,
            self.day,
            self.week,
            self.times[start:stop],
        )


def resample(series: LoadSeries, factor: int, how: str = "mean") -> LoadSeries:
    """Means (or maxima, ``how="max"``) over blocks of ``factor`` steps.

    A block is NaN only when all of it is missing.
    """
    if factor == 1:
        return series
    if series.day % factor or len(series) % factor:
        raise ValueError(f"factor {factor} must divide the day ({series.day}) and the length")
    blocks = series.values.reshape(-1, factor)
    present = np.isfinite(blocks).sum(axis=1)
    if how == "max":
        filled = np.where(np.isfinite(blocks), blocks, -np.inf).max(axis=1)
        means = np.where(present > 0, filled, np.nan)
    elif how == "mean":
        sums = np.nansum(blocks, axis=1)
        means = np.divide(sums, present, out=np.full(len(sums), np.nan), where=present > 0)
    else:
        raise ValueError(f"how is 'mean' or 'max', got {how!r}")
    return LoadSeries(
        series.name,
        means,
        series.step_minutes * factor,
        series.day // factor,
        series.week // factor,
        series.times[::factor],
    )


def fill_gaps(values: FloatArray, season: int) -> FloatArray:
    """NaN replaced by the value one season earlier (repeatedly), then by the mean."""
    out = np.array(values, dtype=np.float64)
    for i in np.flatnonzero(~np.isfinite(out)):
        if i >= season and np.isfinite(out[i - season]):
            out[i] = out[i - season]
    rest = ~np.isfinite(out)
    if rest.any():
        mean = float(np.nanmean(out)) if np.isfinite(out).any() else 0.0
        out[rest] = mean
    return out


def load_nasa(data: str | Path | None = None) -> LoadSeries:
    """NASA KSC HTTP requests per minute, 1995-07-01 to 08-31 (EDT); empty minutes are NaN."""
    import pandas as pd

    path = trace_dir("nasa_http_1995", data) / "nasa_http_requests_per_minute.csv"
    frame = pd.read_csv(path)
    _check_columns(path, frame.columns, ("minute_start", "requests"))
    times = pd.to_datetime(frame["minute_start"].str.slice(0, 19)).to_numpy()
    values = frame["requests"].to_numpy(dtype=np.float64)
    return LoadSeries("nasa-http-1995", values, 1, 1440, 7 * 1440, times)


def load_bank(data: str | Path | None = None) -> LoadSeries:
    """Bank call arrivals per minute, weekdays 07:00-21:05, each 5-minute count spread evenly."""
    import pandas as pd

    path = trace_dir("bank_calls_2003", data) / "bank_calls_5min.csv"
    frame = pd.read_csv(path)
    _check_columns(path, frame.columns, ("interval_start", "calls"))
    starts = pd.to_datetime(frame["interval_start"]).to_numpy()
    per_minute = np.repeat(frame["calls"].to_numpy(dtype=np.float64) / 5.0, 5)
    offsets = np.tile(np.arange(5) * np.timedelta64(1, "m"), len(starts))
    times = np.repeat(starts, 5) + offsets
    day = 169 * 5
    return LoadSeries("bank-calls-2003", per_minute, 1, day, 5 * day, times)


def _check_columns(path: Path, found: object, wanted: tuple[str, ...]) -> None:
    names = list(found)  # type: ignore[call-overload]
    for name in wanted:
        if name not in names:
            raise TraceFormatError(str(path), 1, name, f"missing column; found {names}")


def load_dataset(path: Path, metric: str, node: str | None = None) -> LoadSeries:
    """One node's ``metric`` from a twin dataset (``twinsched twin export``) as a load series.

    The samples must lie on a grid of whole minutes that divides a day (export with
    ``--step``, e.g. 300); missing buckets become NaN. A day and a week are 1440 and 10080
    minutes in steps of the series. Errors name the file and what to change.
    """
    from twinsched.traces.twin_dataset import read_dataset

    frame = read_dataset(path)
    rows = frame[frame["metric"] == metric]
    if rows.empty:
        known = sorted(frame["metric"].unique())
        raise TraceFormatError(str(path), 0, "metric", f"no {metric!r} samples; found {known}")
    nodes = sorted(rows["node"].unique())
    if node is None and len(nodes) > 1:
        raise TraceFormatError(str(path), 0, "node", f"{len(nodes)} nodes, choose one: {nodes}")
    rows = rows[rows["node"] == (node if node is not None else nodes[0])]
    if rows.empty:
        raise TraceFormatError(str(path), 0, "node", f"no {metric!r} samples of {node!r}: {nodes}")
    times = rows["time"].to_numpy(dtype=np.float64)
    values = rows["value"].to_numpy(dtype=np.float64)
    steps = np.diff(np.unique(times))
    step = float(steps.min()) if len(steps) else 60.0
    if step % 60 or (1440 * 60) % step:
        problem = f"samples {step:g} s apart: not whole minutes dividing a day; export with --step"
        raise TraceFormatError(str(path), 0, "time", problem)
    index = np.rint((times - times[0]) / step).astype(np.int64)
    if not np.allclose(times[0] + index * step, times) or len(np.unique(index)) < len(index):
        problem = f"samples off a {step:g} s grid, or two in one step; export with --step"
        raise TraceFormatError(str(path), 0, "time", problem)
    grid = np.full(int(index[-1]) + 1, np.nan)
    grid[index] = values
    minutes = int(step // 60)
    stamps = (times[0] + np.arange(len(grid)) * step) * 1e9
    day = 1440 // minutes
    return LoadSeries(
        f"{path.name}:{metric}", grid, minutes, day, 7 * day, stamps.astype("datetime64[ns]")
    )


SERIES: dict[str, tuple[Callable[[str | Path | None], LoadSeries], str]] = {
    "nasa-http-1995": (load_nasa, "NASA KSC web server, requests/min, July-August 1995"),
    "bank-calls-2003": (load_bank, "bank call centre arrivals/min, weekdays, March-Oct 2003"),
}


def load_series(name: str, data: str | Path | None = None) -> LoadSeries:
    """A load series by trace name; unknown names list the known ones."""
    if name not in SERIES:
        raise UnknownNameError("load trace", name, list(SERIES))
    return SERIES[name][0](data)
