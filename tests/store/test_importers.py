"""Every importer on the real files in ../shared/data, on SQLite and PostgreSQL.

Each test imports, checks what it read, exports to twin JSON and imports that back: the two
scenarios must be identical (same arrays, same checksum).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twinsched.model.cluster import Scenario
from twinsched.model.columns import same_scenario, scenario_checksum
from twinsched.store import (
    export_scenario,
    import_scenario,
    load_scenario,
    scenario_info,
)
from twinsched.traces import alibaba_gpu_2023
from twinsched.traces.synthetic import regenerate


def _round_trip(db: str, name: str, tmp_path: Path, fmt: str = "twin-json") -> Scenario:
    """Export ``name`` (twin JSON, or CSV tables: faster for big ones), import it back as
    ``name-rt``; both must be identical."""
    original = load_scenario(name, db)
    file = export_scenario(name, tmp_path / f"{name}.{fmt}", fmt, db=db)
    import_scenario("twin-json" if fmt == "twin-json" else "twin-csv", file, f"{name}-rt", db=db)
    again = load_scenario(f"{name}-rt", db)
    assert same_scenario(original, again) == []
    assert scenario_info(name, db).checksum == scenario_info(f"{name}-rt", db).checksum
    assert scenario_checksum(again) == scenario_info(name, db).checksum
    return original


def test_alibaba_default(db: str, data: Path, tmp_path: Path) -> None:
    [info] = import_scenario("alibaba-gpu-2023", data / "alibaba_gpu_v2023", "openb", db=db)
    assert (info.n_nodes, info.n_pods, info.version) == (1213, 8152, 1)
    stored = _round_trip(db, "openb", tmp_path, "csv" if "postgresql" in db else "twin-json")
    assert same_scenario(stored, alibaba_gpu_2023.load("default", data)) == []


def test_alibaba_variants_and_all_nodes(db: str, data: Path) -> None:
    infos = import_scenario(
        "alibaba-gpu-2023",
        data / "alibaba_gpu_v2023" / "csv",
        "ali",
        db=db,
        options={"variants": "cpu050,gpushare40,multigpu20", "nodes": "all"},
    )
    assert [i.name for i in infos] == ["ali/cpu050", "ali/gpushare40", "ali/multigpu20"]
    assert {i.n_nodes for i in infos} == {1523}
    share = load_scenario("ali/gpushare40", db)
    assert share.meta["variant"] == "gpushare40"
    assert (
        same_scenario(share, alibaba_gpu_2023.load("gpushare40", data, gpu_nodes_only=False)) == []
    )


def test_alibaba_all_variants_sqlite(sqlite_url: str, data: Path) -> None:
    infos = import_scenario(
        "alibaba-gpu-2023", data / "alibaba_gpu_v2023", "ali", db=sqlite_url,
        options={"variants": "all"},
    )  # fmt: skip
    assert len(infos) == len(alibaba_gpu_2023.VARIANTS)
    assert load_scenario("ali/gpuspec33", sqlite_url).pods.n == infos[-1].n_pods


def test_synthetic_regenerates_bit_for_bit(db: str, tmp_path: Path) -> None:
    import_scenario("synthetic", "continuum", "syn", db=db, options={"seed": "3", "pods": "700"})
    stored = _round_trip(db, "syn", tmp_path)
    assert stored.meta["params"] == {
        "function": "continuum", "seed": 3, "edge_nodes": 24, "cloud_nodes": 48,
        "hpc_nodes": 16, "pods": 700, "hours": 24.0,
    }  # fmt: skip
    assert same_scenario(regenerate(stored.meta), stored) == []
    assert stored.nodes.pool_names == ("edge", "cloud", "hpc")
    assert (
        np.isinf(stored.links.latency_ms).sum()
        == np.isinf(regenerate(stored.meta).links.latency_ms).sum()
    )


def test_synthetic_from_a_parameter_file(db: str, tmp_path: Path) -> None:
    params = tmp_path / "params.json"
    params.write_text('{"function": "cluster", "nodes": 50, "pods": 300, "seed": 1}')
    [info] = import_scenario("synthetic", params, "cl", db=db)
    assert (info.n_nodes, info.n_pods) == (50, 300)
    assert same_scenario(regenerate(info.meta), load_scenario("cl", db)) == []


def test_swf_nodes_from_header(db: str, data: Path, tmp_path: Path) -> None:
    file = data / "pwa_swf" / "NASA-iPSC-1993-3.1-cln.swf.gz"
    [info] = import_scenario("swf", file, "nasa", db=db, options={"node_cores": "16"})
    scenario = _round_trip(db, "nasa", tmp_path, "csv")
    assert info.n_nodes == 8  # MaxProcs 128 regrouped into nodes of 16 cores
    assert len(scenario.pods.job_names) == 18239
    assert int(scenario.pods.cpu_milli.max()) == 16_000
    # every job asks for its processors in total
    per_job = np.bincount(scenario.pods.job, weights=scenario.pods.cpu_milli) / 1000
    assert per_job.max() == 128 and per_job.min() >= 1


def test_swf_one_node_per_processor_sqlite(sqlite_url: str, data: Path) -> None:
    [info] = import_scenario("swf", data / "pwa_swf" / "lublin_256.swf", "lublin", db=sqlite_url)
    scenario = load_scenario("lublin", sqlite_url)
    assert info.n_nodes == 256 and len(scenario.pods.job_names) == 10_000
    assert info.n_pods == 221_010  # the sum of allocated processors
    header = scenario.meta["header"]
    assert isinstance(header, dict) and header["MaxNodes"] == "256"


def test_supercloud(db: str, data: Path, tmp_path: Path) -> None:
    [info] = import_scenario("supercloud", data / "mit_supercloud_sample", "sc", db=db)
    scenario = _round_trip(db, "sc", tmp_path, "csv")
    assert len(scenario.pods.job_names) == 9628
    assert info.n_nodes == 1119
    table = pd.read_csv(data / "mit_supercloud_sample" / "slurm-log-queueing-clean.csv.gz")
    assert info.n_pods == int(table["nodes_alloc"].sum())
    assert (scenario.pods.duration_s >= 300).all()
    assert scenario.pods.gpu_count.sum() > 0


def test_alibaba_dlrm_2025(db: str, data: Path, tmp_path: Path) -> None:
    [info] = import_scenario(
        "alibaba-gpu-2025-dlrm", data / "alibaba_gpu_v2025_dlrm", "dlrm", db=db
    )
    scenario = _round_trip(db, "dlrm", tmp_path, "csv")
    assert info.n_pods == 23_871
    pods = scenario.pods
    assert int((pods.arrival_s == 0).sum()) >= 7_280
    assert int(np.isinf(pods.duration_s).sum()) == 8_878
    limits = scenario.meta["max_pods_per_node"]
    assert isinstance(limits, dict) and len(limits) == len(pods.job_names)
    assert scenario.labels.names == ["role=CN", "role=HN"]
    assert set(pods.required_labels.tolist()) == {1, 2}


def test_twin_csv_export_round_trip(db: str, tmp_path: Path) -> None:
    import_scenario("synthetic", "continuum", "syn", db=db, options={"pods": "300"})
    folder = export_scenario("syn", tmp_path / "syn-csv", "csv", db=db)
    import_scenario("twin-csv", folder, "syn2", db=db)
    a, b = load_scenario("syn", db), load_scenario("syn2", db)
    assert same_scenario(a, b) == []
    assert b.meta["generator"] == "synthetic-continuum"


def test_unknown_importer_lists_the_known_ones(sqlite_url: str) -> None:
    from twinsched.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match=r"alibaba-gpu-2023.*swf"):
        import_scenario("nope", ".", "x", db=sqlite_url)
