"""The fast paths give the same scenario: column cache, grouped binary COPY, revision 0003."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import psycopg
import pytest
import sqlalchemy as sa

from twinsched.model.cluster import Scenario
from twinsched.model.columns import same_scenario, scenario_checksum
from twinsched.store import StoreError, list_scenarios, load_scenario, pgcopy, save_scenarios
from twinsched.store import scenarios as store_scenarios
from twinsched.store.db import engine_for
from twinsched.store.migrate import downgrade, upgrade
from twinsched.traces import synthetic


def _scenario(name: str = "s", pods: int = 300) -> Scenario:
    base = synthetic.continuum(pods=pods, seed=5)
    names = tuple(f"p{i}-{'ü' * (i % 3)}{'x' * (i % 11)}" for i in range(base.pods.n))
    return replace(base, name=name, pods=replace(base.pods, names=names))


def _same(stored: Scenario, original: Scenario) -> None:
    assert same_scenario(stored, original) == []
    assert scenario_checksum(stored) == scenario_checksum(original)


def _scalar(db: str, sql: str) -> Any:
    with engine_for(db).connect() as conn:
        return conn.execute(sa.text(sql)).scalar_one()


def test_sqlite_loads_from_the_cache_without_reading_rows(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = _scenario()
    save_scenarios([scenario], source="test", db=sqlite_url)
    assert _scalar(sqlite_url, "SELECT count(*) FROM scenario_columns") > 0

    def no_rows(*_args: object) -> dict[str, Any]:
        raise AssertionError("read the rows although the cache is there")

    monkeypatch.setattr(store_scenarios, "read_rows", no_rows)
    _same(load_scenario("s", sqlite_url), scenario)


@pytest.mark.parametrize("damage", ["stale", "short", "missing"])
def test_a_bad_cache_falls_back_to_the_rows(sqlite_url: str, damage: str) -> None:
    scenario = _scenario()
    save_scenarios([scenario], source="test", db=sqlite_url)
    other = (scenario.pods.cpu_milli + 1).astype("<i8").tobytes()
    sql = {
        "stale": "UPDATE scenario_columns SET data = :blob WHERE name = 'pods.cpu_milli'",
        "short": "UPDATE scenario_columns SET data = substr(data, 9) WHERE name = 'pods.arrival_s'",
        "missing": "DELETE FROM scenario_columns WHERE name = 'nodes.name'",
    }[damage]
    with engine_for(sqlite_url).begin() as conn:
        conn.execute(sa.text(sql), {"blob": other} if damage == "stale" else {})
    _same(load_scenario("s", sqlite_url), scenario)


def test_postgresql_writes_no_cache_and_replace_leaves_no_orphans(pg_url: str) -> None:
    scenario = _scenario()
    save_scenarios([scenario], source="test", db=pg_url)
    save_scenarios([scenario], source="test", db=pg_url, replace=True)
    assert _scalar(pg_url, "SELECT count(*) FROM scenario_columns") == 0
    assert _scalar(pg_url, "SELECT count(*) FROM jobs") == len(scenario.pods.job_names)
    assert _scalar(pg_url, "SELECT count(*) FROM pods") == scenario.pods.n
    _same(load_scenario("s", pg_url), scenario)


def test_a_nul_in_a_name_is_refused_and_names_row_and_field(db: str) -> None:
    scenario = _scenario()
    names = list(scenario.pods.names)
    names[17] = "bad\x00"
    bad = replace(scenario, name="bad", pods=replace(scenario.pods, names=tuple(names)))
    with pytest.raises(StoreError, match=r"'bad': pods row 17, field 'name'"):
        save_scenarios([replace(scenario, name="good"), bad], source="test", db=db)
    assert list_scenarios(db) == []


def test_copy_in_across_chunks_and_length_groups(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows of many text lengths, two text columns, chunks of 7 rows: every value lands."""
    monkeypatch.setattr(pgcopy, "CHUNK_ROWS", 7)
    n = 100
    rng = np.random.default_rng(1)
    columns: dict[str, Any] = {
        "a": np.arange(n),
        "t": ["é" * (i % 5) + str(i) for i in range(n)],
        "x": rng.normal(size=n),
        "u": ["" if i % 4 == 0 else "v" * (i % 9) for i in range(n)],
        "b": rng.integers(-(2**63), 2**63 - 1, size=n),
    }
    types = {"a": ">i4", "t": "text", "x": ">f8", "u": "text", "b": ">i8"}
    url = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE copy_test (a integer, t text, x float8, u text, b bigint)")
        assert pgcopy.copy_in(cur, "copy_test", columns, types) == n
        cur.execute("SELECT a, t, x, u, b FROM copy_test ORDER BY a")
        rows = cur.fetchall()
    assert [r[0] for r in rows] == list(range(n))
    assert [r[1] for r in rows] == columns["t"]
    assert [r[3] for r in rows] == columns["u"]
    assert np.array_equal([r[2] for r in rows], columns["x"])
    assert np.array_equal([r[4] for r in rows], columns["b"])


def test_revision_0003_keeps_the_data_both_ways(db: str) -> None:
    scenario = _scenario()
    save_scenarios([scenario], source="test", db=db)
    engine = engine_for(db)
    downgrade(engine, "0002")
    keys = sa.inspect(engine).get_pk_constraint("jobs")["constrained_columns"]
    assert keys == ["scenario_id", "idx"]
    assert _scalar(db, "SELECT count(*) FROM jobs") == len(scenario.pods.job_names)
    upgrade(engine)
    assert sa.inspect(engine).get_pk_constraint("jobs")["constrained_columns"] == []
    _same(load_scenario("s", db), scenario)  # from the rows: the cache went with 0002
