"""Sweeps: the spec's errors name the key, every executor gives the same stored results, a
sweep killed midway resumes without recomputing or duplicating a cell, one failed cell does
not stop the others."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Table, func, select
from typer.testing import CliRunner

from tests.ray_cluster import RayCluster
from twinsched.cli import app
from twinsched.experiments.executors import Executor, ProcessExecutor, SerialExecutor
from twinsched.experiments.sweep import SweepSpecError, cell_key, load_spec, parse_spec
from twinsched.experiments.sweep_driver import register, run_spec, run_sweep
from twinsched.model.run import RunSpec
from twinsched.store import get_run, record_run, recorded_keys, sweep_info, sweep_run_ids
from twinsched.store.db import dispose, engine_for
from twinsched.store.schema import RunRow, SweepRunRow

SRC = Path(__file__).resolve().parents[2] / "src"
SMALL = {
    "name": "small",
    "traces": ["synthetic-continuum", "synthetic-continuum/1"],
    "schedulers": ["fgd", "random"],
    "seeds": 2,
    "target_pct": [100.0, 130.0],
}


def _stored(url: str, cells: list[RunSpec]) -> dict[str, dict[str, Any]]:
    """Each cell's stored result (curve, metrics, samples; no timings), by key."""
    out: dict[str, dict[str, Any]] = {}
    for key, run_id in recorded_keys([cell_key(c) for c in cells], url).items():
        info = get_run(run_id, url, decisions=False)
        assert info.result is not None
        result = info.result.to_dict()
        out[key] = {k: v for k, v in result.items() if k not in ("wall_seconds", "timings")}
        out[key]["spec"] = info.spec
    return out


def _count_runs(url: str, table: Table = RunRow) -> int:
    with engine_for(url).connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def _count_links(url: str) -> int:
    return _count_runs(url, SweepRunRow)


# --- the spec -------------------------------------------------------------------------


def test_grid_is_the_product_in_order_with_one_key_per_cell() -> None:
    cells = parse_spec(SMALL).cells()
    assert len(cells) == 2 * 2 * 2 * 2
    assert [(c.trace, c.variant, c.scheduler, c.seed, c.target_pct) for c in cells[:3]] == [
        ("synthetic-continuum", "", "fgd", 0, 100.0),
        ("synthetic-continuum", "", "fgd", 0, 130.0),
        ("synthetic-continuum", "", "fgd", 1, 100.0),
    ]
    assert len({cell_key(c) for c in cells}) == len(cells)
    assert cell_key(cells[0]) == cell_key(parse_spec(SMALL).cells()[0])
    replay = parse_spec({**SMALL, "mode": "replay"}).cells()
    assert len(replay) == 8  # replay has no fill-up target: one cell per seed


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"seedz": 3}, "key 'seedz': unknown key; known: data, decisions, mode, name"),
        ({"seeds": [0, -1]}, "key 'seeds': seeds must be in [0, 2147483647], got -1"),
        ({"seeds": 0}, "key 'seeds': a seed count must be in [1, 10000], got 0"),
        ({"target_pct": [0.0]}, "key 'target_pct': fill-up targets must be in (0, 1000]"),
        ({"schedulers": ["fgd", "nope"]}, "key 'schedulers': unknown scheduler 'nope'; known:"),
        ({"traces": ["nope/1"]}, "key 'traces': unknown trace 'nope'; known: alibaba-gpu-2023"),
        ({"schedulers": ["fgd", "fgd"]}, "key 'schedulers': 'fgd' is listed twice"),
        ({"mode": "fast"}, "key 'mode': Input should be 'fillup' or 'replay'"),
        ({"traces": []}, "key 'traces': List should have at least 1 item"),
    ],
)
def test_a_bad_spec_names_the_file_the_key_and_the_range(
    change: dict[str, object], words: str
) -> None:
    with pytest.raises(SweepSpecError) as caught:
        parse_spec({**SMALL, **change}, "grid.toml")
    assert str(caught.value).startswith("grid.toml: ")
    assert words in str(caught.value)


def test_the_cli_prints_one_error_line_for_a_bad_file(tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "x"\nseeds = = 3\n')
    result = CliRunner().invoke(app, ["sweep", "run", str(spec), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 2
    assert f"{spec}: not valid TOML" in result.output and "(at line 2, column 9)" in result.output
    assert "Traceback" not in result.output
    with pytest.raises(SweepSpecError, match="cannot read"):
        load_spec(tmp_path / "missing.toml")


def test_dry_run_prints_the_grid_size_and_runs_nothing(tmp_path: Path) -> None:
    spec = Path(__file__).resolve().parents[2] / "sweeps" / "example.toml"
    url = f"sqlite:///{tmp_path / 's.db'}"
    result = CliRunner().invoke(app, ["sweep", "run", str(spec), "--db", url, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "36 cells (2 traces x 3 schedulers x 3 seeds x 2 targets), 0 stored" in result.output
    assert _count_runs(url) == 0
    dispose(url)


# --- executors ------------------------------------------------------------------------


def _toml(spec: dict[str, Any]) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec.items())


def test_every_executor_stores_the_same_results(tmp_path: Path, ray_cluster: RayCluster) -> None:
    """--jobs 1, --jobs 2, a one-node Ray, and a two-node Ray cluster (``ray start --head``
    plus ``ray start --address`` with its own resources) store byte-identical results."""
    from twinsched.experiments.ray_executor import RayExecutor

    cells = parse_spec(SMALL).cells()
    stored: dict[str, bytes] = {}

    def canonical(url: str) -> bytes:
        found = _stored(url, cells)
        dispose(url)
        assert len(found) == len(cells)
        return json.dumps(found, sort_keys=True).encode()

    one_node = RayExecutor(ray_cluster.address)  # the head alone: a local one-node Ray
    executors: dict[str, Executor] = {
        "jobs1": SerialExecutor(), "jobs2": ProcessExecutor(2), "ray-one-node": one_node
    }  # fmt: skip
    for name, executor in executors.items():
        url = f"sqlite:///{tmp_path / name}.db"
        outcome = run_sweep(cells, url, executor)
        assert (len(outcome.ran), outcome.failed) == (len(cells), {})
        stored[name] = canonical(url)
    assert sum(one_node.tasks_per_node.values()) == len(cells)
    assert len(one_node.tasks_per_node) == 1

    assert ray_cluster.nodes == 1, "the one-node case needs the head alone"
    ray_cluster.add_node(num_cpus=1, resources={"second": 1})
    spec, url = tmp_path / "small.toml", f"sqlite:///{tmp_path / 'two-nodes.db'}"
    spec.write_text(_toml(SMALL), encoding="utf-8")
    args = ["--executor", "ray", "--address", ray_cluster.address, "--db", url]
    result = CliRunner().invoke(app, ["sweep", "run", str(spec), *args])
    assert result.exit_code == 0, result.output
    assert f"{len(cells)} cells run and stored" in result.output
    assert "ran on 2 Ray node(s)" in result.output  # both nodes took cells (1 CPU each)
    assert sweep_info("small", url).stored == len(cells)  # each run linked to the sweep
    stored["ray-two-nodes"] = canonical(url)
    assert len(set(stored.values())) == 1, "results differ between executors"


def test_a_failed_cell_is_reported_and_the_others_are_stored(sqlite_url: str) -> None:
    good = parse_spec(SMALL).cells()[:3]
    bad = RunSpec("synthetic-continuum", "no-such-scheduler", 0)
    outcome = run_sweep([good[0], bad, *good[1:]], sqlite_url, SerialExecutor())
    assert sorted(outcome.ran) == sorted(cell_key(c) for c in good)
    assert list(outcome.failed) == ["synthetic-continuum no-such-scheduler seed 0 target 130%"]
    assert "unknown scheduler 'no-such-scheduler'" in outcome.failed[next(iter(outcome.failed))]
    again = run_sweep([*good, bad], sqlite_url, SerialExecutor())
    assert (again.skipped, again.ran, len(again.failed)) == (3, [], 1)  # only the failure again


def test_a_key_is_stored_once_and_linked_once_per_sweep(db: str) -> None:
    from twinsched.experiments.runner import execute

    cell = parse_spec(SMALL).cells()[0]
    result = run_sweep([cell], db, SerialExecutor())
    first = recorded_keys([cell_key(cell)], db)[cell_key(cell)]
    assert record_run(cell, execute(cell), db, key=cell_key(cell)) == first
    assert _count_runs(db) == 1 and result.ran == [cell_key(cell)] and _count_links(db) == 0
    register(parse_spec(SMALL), db)  # links the stored cell
    again = record_run(cell, execute(cell), db, key=cell_key(cell), sweep="small")
    assert again == first and _count_runs(db) == 1 and _count_links(db) == 1
    register(parse_spec({**SMALL, "name": "other"}), db)  # a second sweep shares the run
    assert sweep_run_ids("other", db) == sweep_run_ids("small", db) == [first]
    assert _count_runs(db) == 1 and _count_links(db) == 2


# --- resume ---------------------------------------------------------------------------


def test_a_sweep_killed_midway_resumes_without_recomputing(db: str, tmp_path: Path) -> None:
    spec = tmp_path / "resume.toml"
    spec.write_text(
        'name = "resume"\ntraces = ["synthetic-continuum"]\nmode = "replay"\n'
        'schedulers = ["fgd", "bestfit", "random"]\nseeds = 4\n'
    )
    cells = load_spec(spec).cells()
    keys = [cell_key(c) for c in cells]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-m", "twinsched.cli", "sweep", "run", str(spec), "--db", db]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while len(recorded_keys(keys, db)) < 3 and time.monotonic() < deadline:
            assert proc.poll() is None, "the sweep ended before it was killed"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = recorded_keys(keys, db)
    assert 3 <= len(before) < len(cells), "not killed midway"
    assert _count_runs(db) == len(before)  # whole cells only, each once

    assert set(sweep_run_ids("resume", db)) == set(before.values())  # linked with each run

    outcome = run_spec(load_spec(spec), db, SerialExecutor())
    assert outcome.skipped == len(before)
    assert not set(outcome.ran) & set(before)  # no finished cell recomputed
    assert sorted(outcome.ran) == sorted(set(keys) - set(before))
    after = recorded_keys(keys, db)
    assert {k: after[k] for k in before} == before  # the earlier rows stay as they were
    assert set(after) == set(keys) and _count_runs(db) == len(cells)  # nothing lost or doubled
    assert _count_links(db) == len(cells) and sweep_info("resume", db).stored == len(cells)
    assert sorted(sweep_run_ids("resume", db)) == sorted(after.values())
