"""Issue 16: a rejected import leaves the store exactly as it was, on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.builders import scenario as tiny_scenario
from tests.traces.fuzz_targets import OPENB_NODES, OPENB_PODS
from tests.traces.fuzzing import render
from twinsched.errors import TraceFormatError
from twinsched.store import import_scenario, list_scenarios, load_scenario, save_scenarios
from twinsched.store.db import StoreError


def _snapshot(db: str) -> list[tuple[str, int, str]]:
    return [(i.name, i.version, i.checksum) for i in list_scenarios(db)]


def _openb(folder: Path, cpu: str) -> Path:
    folder.mkdir()
    pods = [list(r) for r in OPENB_PODS]
    pods[2][1] = cpu
    (folder / "openb_node_list_gpu_node.csv").write_text(render(OPENB_NODES))
    (folder / "openb_pod_list_default.csv").write_text(render(pods))
    return folder


@pytest.mark.parametrize("cpu", ["inf", "1e30", "99999999999999999999"])
def test_out_of_range_rows_are_refused_and_the_store_is_unchanged(
    db: str, tmp_path: Path, cpu: str
) -> None:
    import_scenario("alibaba-gpu-2023", _openb(tmp_path / "good", "1000"), "s", db=db)
    before, stored = _snapshot(db), load_scenario("s", db)
    with pytest.raises(TraceFormatError, match=r"openb_pod_list_default.csv:3: field 'cpu_milli'"):
        import_scenario("alibaba-gpu-2023", _openb(tmp_path / "bad", cpu), "s", db=db, replace=True)
    assert _snapshot(db) == before
    assert np.array_equal(load_scenario("s", db).pods.cpu_milli, stored.pods.cpu_milli)


def test_the_store_refuses_a_scenario_out_of_range_from_any_importer(db: str) -> None:
    good = tiny_scenario([(8000, 1024, 1, "T4")], [(1000, 512, 1, 500)])
    save_scenarios([replace(good, name="good")], source="test", db=db)
    before = _snapshot(db)
    pods = replace(good.pods, gpu_milli=np.array([5000]))
    bad = [replace(good, name="a"), replace(good, name="b", pods=pods)]
    with pytest.raises(StoreError, match=r"'b': pods row 0, field 'gpu_milli'.*\[0, 1000\]"):
        save_scenarios(bad, source="test", db=db)
    assert _snapshot(db) == before
