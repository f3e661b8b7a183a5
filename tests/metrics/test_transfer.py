"""Bytes, seconds and energy a placement moves (metrics/transfer.py, issue 40)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.data_builders import GB, one_set, three_pools
from twinsched.metrics.transfer import moved_summary, placement_moved
from twinsched.model.datasets import data_model


def test_placement_moved_counts_remote_reads_and_writes_away_from_home() -> None:
    data = one_set(access={"p0": {"reads": ["d"]}, "p1": {"writes": ["d"]}, "p2": {"reads": ["d"]}})
    model = data_model(three_pools(3, data))
    assert model is not None
    # p0 on nb (pool b) reads from a: 80 s; p1 on nc writes to a: 160 s; p2 on na: local
    moved = placement_moved(model, np.array([1, 2, 0]))
    assert moved.bytes == 2 * GB
    assert moved.seconds == pytest.approx(240.0)
    assert moved.kwh == pytest.approx(2 * 20_000.0 / 3.6e6)
    assert placement_moved(model, np.array([-1, -1, 1])).bytes == GB  # only what ran
    assert moved_summary(moved) == {"bytes_moved": 2 * GB, "transfer_s": 240.0,
                                    "transfer_kwh": round(40_000.0 / 3.6e6, 6)}  # fmt: skip


def test_a_read_with_no_path_takes_forever() -> None:
    model = data_model(three_pools(1, one_set(access={"p0": {"reads": ["d"]}})))
    assert model is not None
    cut = model.base_bandwidth_mbps.copy()
    cut[0, 1] = cut[1, 0] = 0.0
    assert placement_moved(model, np.array([1]), cut).seconds == np.inf
