"""Alignment on a common step: values are real samples, never invented; gaps are reported."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from twinsched.errors import TwinschedError
from twinsched.traces.conversion import Sample
from twinsched.twin.harmonize import HarmonizeError, harmonize
from twinsched.twin.harmonize.align import align, to_series, window


def samples(points: list[tuple[str, float, float]]) -> list[Sample]:
    return [Sample(node, "m", t, v, ()) for node, t, v in points]


def test_last_sample_of_each_window_is_carried_to_the_window_end() -> None:
    raw = samples([("a", 1, 1.0), ("a", 9, 2.0), ("a", 12, 3.0), ("a", 35, 4.0), ("b", 20, 9.0)])
    aligned, missing = align(to_series(raw), 10.0)
    a, b = aligned
    assert (a.times, a.values) == ([10.0, 20.0, 40.0], [2.0, 3.0, 4.0])
    assert (b.times, b.values) == ([20.0], [9.0])
    assert missing == [
        (("samples", "a", "m"), "missing: no sample in the window of 10 s ending at t=30"),
        (("samples", "b", "m"), "missing: no sample in the window of 10 s ending at t=10"),
        (("samples", "b", "m"), "missing: no sample in the 2 windows of 10 s ending at t=30..40"),
    ]


def test_a_sample_on_a_grid_point_belongs_to_the_window_ending_there() -> None:
    assert [window(t, 0.1) for t in (0.3, 0.30000000000000004, 30.0)] == [3, 3, 300]
    assert window(0.31, 0.1) == 4


def test_step_too_small_for_the_time_span_is_refused() -> None:
    raw = samples([("a", 0, 1.0), ("a", 1e9, 1.0)])
    try:
        align(to_series(raw), 1.0)
    except HarmonizeError as exc:
        assert exc.field == "step_s" and exc.argument
    else:
        raise AssertionError("expected HarmonizeError")


points = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.floats(0, 10_000, allow_nan=False),
        st.floats(-1e6, 1e6, allow_nan=False),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(points, st.sampled_from([0.5, 1.0, 7.0, 60.0, 1000.0]))
def test_alignment_never_invents_samples(raw: list[tuple[str, float, float]], step: float) -> None:
    series = to_series(samples(raw))
    aligned, missing = align(series, step)
    windows = [window(t, step) for _, t, _ in raw]
    grid = max(windows) - min(windows) + 1
    for before, after in zip(series, aligned, strict=True):
        assert (before.node, before.metric) == (after.node, after.metric)
        assert after.times == sorted(set(after.times))
        assert len(after.times) <= min(len(before.times), grid)
        for g, v in zip(after.times, after.values, strict=True):
            # a real sample of this series, in (g - step, g]: carried at most one step
            assert any(
                v == value and g - step - 1e-6 < t <= g + 1e-6
                for t, value in zip(before.times, before.values, strict=True)
            )
        # never past the window of the series' last sample
        assert not after.times or after.times[-1] < before.times[-1] + step + 1e-6
        # aligned points and missing windows cover the grid exactly
        gaps = [r for w, r in missing if w == ("samples", after.node, after.metric)]
        missing_windows = sum(_windows(r) for r in gaps)
        assert len(after.times) + missing_windows == grid


def _windows(reason: str) -> int:
    return 1 if "the window" in reason else int(reason.split("the ")[1].split(" windows")[0])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "vertexpools",
                    "nodes",
                    "id",
                    "metrics",
                    "util",
                    "cpu_cores",
                    "mem_total",
                    "links",
                    "jobs",
                    "pods",
                    "status",
                    "data",
                    "result",
                    "resultType",
                    "metric",
                    "value",
                    "values",
                    "node",
                    "id_job",
                    "nodelist",
                    "tres_req",
                    "time_submit",
                    "Node",
                    "EpochTime",
                    "nodepools",
                    "node_info",
                    "info",
                    "policies",
                    "cluster",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["auto", "decice", "tables", "prometheus", "twin"]))
def test_any_json_gives_a_result_or_a_named_error(payload: Any, source: Any) -> None:
    if not isinstance(payload, dict | list | str):
        payload = [payload]
    try:
        result = harmonize(payload, source=source, step_s=1.0)
    except TwinschedError as exc:
        assert str(exc).split(":")[0]  # names a field
        return
    assert all(math.isfinite(v) for s in result.samples for v in s.values)
