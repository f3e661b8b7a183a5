"""Align samples taken at different times onto one grid of step ``step_s``.

Grid points are the multiples ``k * step_s`` from the first window holding a sample to the
last one, shared by every series. The value at ``g`` is the latest sample in ``(g - step_s,
g]`` (last observation carried forward, at most one step), so every aligned value is a real
sample no older than one step, and nothing is placed after the window of a series' last
sample. Windows of a series without a sample are reported, as runs, in ``dropped``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from twinsched.traces.conversion import HarmonizeError, Path, Sample
from twinsched.twin.harmonize.result import Series

MAX_WINDOWS = 100_000


def window(t: float, step_s: float) -> int:
    """The index ``k`` of the window ``(k*step - step, k*step]`` holding time ``t``."""
    q = t / step_s
    nearest = round(q)
    return nearest if abs(q - nearest) <= 1e-9 * max(1.0, abs(q)) else math.ceil(q)


def to_series(samples: Iterable[Sample]) -> list[Series]:
    """Group samples by node and metric, each series in time order (stable for ties)."""
    groups: dict[tuple[str, str], list[Sample]] = {}
    for sample in samples:
        groups.setdefault((sample.node, sample.metric), []).append(sample)
    out = []
    for (node, metric), group in sorted(groups.items()):
        group.sort(key=lambda s: s.t)
        out.append(
            Series(
                node=node,
                metric=metric,
                times=[s.t for s in group],
                values=[s.value for s in group],
            )
        )
    return out


def align(series: list[Series], step_s: float) -> tuple[list[Series], list[tuple[Path, str]]]:
    """Every series on the common grid, and the runs of windows without a sample."""
    if not series:
        return [], []
    start, end = min(s.times[0] for s in series), max(s.times[-1] for s in series)
    span = max(abs(start), abs(end)) / step_s  # in floats first: a tiny step overflows ints
    if not math.isfinite(span):
        problem = f"{step_s:g} is too small for sample times up to {time_text(end)}"
        raise HarmonizeError(("step_s",), problem, argument=True)
    first, last = window(start, step_s), window(end, step_s)
    if last - first + 1 > MAX_WINDOWS:
        problem = f"makes {last - first + 1} windows; at most {MAX_WINDOWS} (choose a larger step)"
        raise HarmonizeError(("step_s",), problem, argument=True)
    aligned, missing = [], []
    for s in series:
        latest: dict[int, float] = {}
        for t, value in zip(s.times, s.values, strict=True):
            latest[window(t, step_s)] = value  # times are sorted: the last one wins
        ks = sorted(latest)
        aligned.append(
            Series(
                node=s.node,
                metric=s.metric,
                times=[k * step_s for k in ks],
                values=[latest[k] for k in ks],
            )
        )
        where: Path = ("samples", s.node, s.metric)
        missing += [(where, _gap_reason(a, b, step_s)) for a, b in _gaps(ks, first, last)]
    return aligned, missing


def _gaps(ks: list[int], first: int, last: int) -> Iterator[tuple[int, int]]:
    """Runs ``(a, b)`` of window indices in ``[first, last]`` that are not in sorted ``ks``."""
    expected = first
    for k in [*ks, last + 1]:
        if k > expected:
            yield expected, k - 1
        expected = k + 1


def _gap_reason(a: int, b: int, step_s: float) -> str:
    n = b - a + 1
    span = (
        f"t={time_text(a * step_s)}"
        if n == 1
        else f"t={time_text(a * step_s)}..{time_text(b * step_s)}"
    )
    plural = "window" if n == 1 else f"{n} windows"
    return f"missing: no sample in the {plural} of {step_s:g} s ending at {span}"


def time_text(t: float) -> str:
    """A time in seconds, written without exponent (epoch times stay readable)."""
    return str(int(t)) if t == int(t) else f"{t:.3f}"
