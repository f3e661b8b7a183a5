"""Harmonisation: each format into a valid twin document, auto-detection, drops and errors."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from twinsched.model.document import DocumentError, TwinDocument
from twinsched.model.schema import validate_document
from twinsched.twin.harmonize import HarmonizeError, HarmonizeResult, harmonize

Doc = dict[str, Any]
SUPERCLOUD = Path(__file__).parents[3] / "shared" / "data" / "mit_supercloud_sample"


def decice_doc() -> Doc:
    """A DECICE digital twin with the fields of its JSON Schema (DT_json_schema.json)."""
    return {
        "lastUpdated": 1000.0,
        "vertexpools": [
            {
                "id": "vp-edge",
                "vertexpool_labels": {"region": "edge-east"},
                "nodes": [
                    {
                        "id": "node-a1",
                        "name": "node-a1",
                        "system": None,
                        "node_info": {
                            "arch": "amd64",
                            "rack": 1,
                            "gpu_count": 1,
                            "gpu_model": "T4",
                        },
                        "metrics": {
                            "util": 50.0,
                            "mem_util": 25.0,
                            "cpu_cores": 8.0,
                            "mem_total": 32.0,
                            "power_watts": None,
                        },
                    }
                ],
                "devices": [],
                "lastUpdated": None,
            },
            {
                "id": "vp-cloud",
                "vertexpool_labels": None,
                "nodes": [
                    {"id": "node-b1", "metrics": {"util": 10, "cpu_cores": 32, "mem_total": 262144}}
                ],
                "devices": [{"id": "cam", "name": "cam1", "labels": {"type": "camera"}}],
            },
        ],
        "links": [
            {"vertexpool_a_id": "vp-edge", "vertexpool_b_id": "vp-cloud", "network_delay_ms": 12.5},
            {"vertexpool_a_id": "vp-edge", "vertexpool_b_id": "vp-moon", "network_delay_ms": 1},
        ],
        "jobs": [
            {
                "id": "job-1",
                "profile": {"name": "p", "weights": [{"models_name": "fgd", "models_weight": 2}]},
                "pods": [
                    {
                        "id": "pod-1",
                        "status": "Running",
                        "node_id": "node-a1",
                        "running_since": "1970-01-01T00:15:00Z",
                        "info": {"required_cpu": 2, "required_memory": 512, "required_gpu": 1},
                        "policies": [{"required_labels": ["region:edge-east"]}],
                    },
                    {"id": "pod-2", "status": "Pending", "policies": []},
                ],
            }
        ],
    }


def node_of(result: HarmonizeResult, name: str) -> Any:
    return next(n for p in result.document.nodepools for n in p.nodes if n.id == name)


def reasons(result: HarmonizeResult) -> dict[str, str]:
    return {d.path: d.reason for d in result.dropped}


# -- DECICE -------------------------------------------------------------------------------------
def test_decice_snapshot_becomes_a_valid_twin_document() -> None:
    result = harmonize(decice_doc())
    assert result.source == "decice"
    doc = result.document
    assert [p.id for p in doc.nodepools] == ["vp-edge", "vp-cloud"]
    assert doc.nodepools[0].labels == {"region": "edge-east"}
    a1 = node_of(result, "node-a1")
    assert a1.labels == {"arch": "amd64", "rack": "1"}
    assert a1.metrics == {"cpu_util": 0.5, "memory_util": 0.25}  # % -> [0, 1]; null skipped
    assert (a1.hardware.cpu_milli, a1.hardware.memory_mib) == (8000, 32 * 1024)  # GiB
    assert (a1.hardware.gpu_count, a1.hardware.gpu_model) == (1, "T4")
    assert a1.hardware.gpu_milli_free == [0]  # taken by the running pod
    assert node_of(result, "node-b1").hardware.memory_mib == 262144  # MiB
    assert [(x.source, x.target, x.latency_ms) for x in doc.networks] == [
        ("vp-edge", "vp-cloud", 12.5)
    ]
    pod1, pod2 = doc.jobs[0].pods
    assert (pod1.phase, pod1.node, pod1.gpus, pod1.timestamps.start_s) == (
        "Running",
        "node-a1",
        [0],
        900.0,
    )
    assert (pod1.requests.cpu_milli, pod1.requests.memory_mib) == (2000, 512)
    assert pod1.policies.required == ["region=edge-east"]
    assert pod2.phase == "Pending"
    assert doc.jobs[0].profile is not None
    assert doc.jobs[0].profile.weights[0].model_name == "fgd"
    dropped = reasons(result)
    assert "device" in dropped["vertexpools[1].devices[0]"]
    assert "unknown vertexpool 'vp-moon'" in dropped["links[1].vertexpool_b_id"]
    assert any("1000 Mbit/s" in note for note in result.notes)
    validate_document(doc.model_dump(mode="json"))


def test_decice_node_without_capacity_needs_the_base_document() -> None:
    data = decice_doc()
    del data["vertexpools"][1]["nodes"][0]["metrics"]["cpu_cores"]
    alone = harmonize(data)
    assert "capacity unknown" in reasons(alone)["vertexpools[1].nodes[0]"]
    assert [n.id for p in alone.document.nodepools for n in p.nodes] == ["node-a1"]
    base = validate_document(
        {
            "nodepools": [
                {
                    "id": "old",
                    "nodes": [{"id": "node-b1", "hardware": {"cpu_milli": 4000, "memory_mib": 1}}],
                }
            ],
            "networks": [
                {"source": "old", "target": "old", "latency_ms": 0, "bandwidth_mbps": 1},
            ],
        }
    )
    merged = harmonize(data, base=base)
    assert node_of(merged, "node-b1").hardware.cpu_milli == 4000
    assert node_of(merged, "node-b1").hardware.memory_mib == 262144  # the payload's own figure


def test_decice_bad_values_are_dropped_with_their_path() -> None:
    data = decice_doc()
    metrics = data["vertexpools"][0]["nodes"][0]["metrics"]
    metrics.update(util=130.0, mem_util="high", free_disk_gb=3)
    data["vertexpools"][1]["nodes"].append(
        {"id": "node-a1", "metrics": {"cpu_cores": 1, "mem_total": 1}}
    )
    data["jobs"][0]["pods"][1]["policies"] = [{"rejected_labels": ["nolabel"]}]
    result = harmonize(data)
    dropped = reasons(result)
    assert "outside [0, 100]" in dropped["vertexpools[0].nodes[0].metrics.util"]
    assert "non-numeric value 'high'" in dropped["vertexpools[0].nodes[0].metrics.mem_util"]
    assert "duplicate node id 'node-a1'" in dropped["vertexpools[1].nodes[1].id"]
    assert (
        "neither key=value nor key:value"
        in dropped["jobs[0].pods[1].policies[0].rejected_labels[0]"]
    )
    assert node_of(result, "node-a1").metrics == {"free_disk_gb": 3.0}


def test_decice_running_pod_on_unknown_node_is_pending() -> None:
    data = decice_doc()
    data["jobs"][0]["pods"][0]["node_id"] = "ghost"
    result = harmonize(data)
    assert result.document.jobs[0].pods[0].phase == "Pending"
    assert "unknown node 'ghost'" in reasons(result)["jobs[0].pods[0].node_id"]


def test_decice_history_and_scheduler_request() -> None:
    old, new = decice_doc(), decice_doc()
    old["lastUpdated"], new["lastUpdated"] = 900.0, 1000.0
    new["vertexpools"][0]["nodes"][0]["metrics"]["util"] = 70.0
    result = harmonize([new, old], step_s=50)
    series = next(s for s in result.samples if (s.node, s.metric) == ("node-a1", "cpu_util"))
    assert (series.times, series.values) == ([900.0, 1000.0], [0.5, 0.7])
    assert node_of(result, "node-a1").metrics["cpu_util"] == 0.7
    request = {
        "workloads": [{"id": "w1", "requirements": {"required_cpu": 1, "required_memory": 512}}],
        "cluster": decice_doc(),
    }
    wrapped = harmonize(request)
    assert wrapped.source == "decice"
    assert wrapped.document.jobs[-1].id == "workloads"
    assert wrapped.document.jobs[-1].pods[0].requests.cpu_milli == 1000


def test_decice_structural_errors_name_the_field() -> None:
    with pytest.raises(HarmonizeError, match=r"^vertexpools: must be a list"):
        harmonize({"vertexpools": "none"})
    with pytest.raises(HarmonizeError, match=r"^\[1\]: must be a DECICE digital twin object"):
        harmonize([decice_doc(), 3], source="decice")


# -- tables -------------------------------------------------------------------------------------
def job_row(job: str, nodes: list[str], **extra: Any) -> Doc:
    row = {
        "id_job": job,
        "nodes_alloc": len(nodes),
        "nodelist": str(nodes),
        "cpus_req": 8 * len(nodes),
        "tres_req": f"1={8 * len(nodes)},2={4000 * len(nodes)},4={len(nodes)}",
        "time_submit": 100,
        "time_start": 110,
        "time_end": 200,
    }
    return {**row, **extra}


def test_tables_jobs_and_nodes_become_pods_with_phases_at_the_given_time() -> None:
    payload = {
        "nodes": [
            {"node": "r1", "node_cores": 40, "node_memory_mib": 64000, "node_gpus": 2, "rack": "a"},
            {"node": "r2", "node_cores": 40, "node_memory_mib": 64000},
        ],
        "jobs": [
            job_row("16051200000000.0", ["r1", "r2"], tres_req="1=16,2=8000,1002=2"),
            job_row("2", ["r2"], time_submit=140, time_start=None, time_end=None),
            job_row("3", ["r1"], time_end=120),
            job_row("4", ["r1"], time_submit=500, time_start=600, time_end=700),
            job_row("5", ["r9"]),
            job_row("3", ["r1"]),
            job_row("6", ["r1"], tres_req="1=oops"),
        ],
        "at": 150,
    }
    result = harmonize(payload)
    assert result.source == "tables"
    doc = result.document
    assert doc.timestamp == 150
    assert [n.id for n in doc.nodepools[0].nodes] == ["r1", "r2"]
    assert doc.nodepools[0].nodes[0].labels == {"rack": "a"}
    pods = {p.id: p for j in doc.jobs for p in j.pods}
    assert sorted(pods) == ["16051200000000-0", "16051200000000-1", "2-0", "3-0", "4-0"]
    first = pods["16051200000000-0"]
    assert (first.phase, first.node, first.gpus, first.requests.gpu_count) == (
        "Running",
        "r1",
        [0],
        1,
    )
    assert (first.requests.cpu_milli, first.requests.memory_mib) == (8000, 4000)
    assert pods["16051200000000-1"].phase == "Pending"  # r2 has no GPU
    assert pods["2-0"].phase == "Pending"
    assert (pods["3-0"].phase, pods["3-0"].node) == ("Succeeded", "r1")
    assert pods["4-0"].phase == "NotArrived"
    assert pods["4-0"].timestamps.duration_s == 100
    dropped = reasons(result)
    assert "unknown node 'r9'" in dropped["jobs[4].nodelist"]
    assert "duplicate id_job '3'" in dropped["jobs[5].id_job"]
    assert "too few free GPUs" in dropped["jobs[0].nodelist"]
    assert dropped["jobs[6].tres_req"].startswith("job row dropped: non-numeric value 'oops'")


def test_tables_from_the_supercloud_sample_as_csv_text() -> None:
    with gzip.open(SUPERCLOUD / "slurm-log-queueing-clean.csv.gz", "rt") as f:
        jobs = "".join(f.readline() for _ in range(301))
    with gzip.open(SUPERCLOUD / "cpu-timeseries-one-job.csv.gz", "rt") as f:
        series = "".join(f.readline() for _ in range(201))
    node = series.splitlines()[1].split(",")[1]
    jobs += jobs.splitlines()[1].replace("['r9189566-n911952']", f"['{node}']") + "\n"
    result = harmonize({"jobs": jobs, "samples": series}, step_s=60)
    assert result.source == "tables"
    assert sum(len(j.pods) for j in result.document.jobs) >= 300
    assert any("nodes come from nodelist" in note for note in result.notes)
    utilisation = next(s for s in result.samples if s.metric == "CPUUtilization")
    assert utilisation.node == node
    assert all(t % 60 == 0 for t in utilisation.times)
    assert "CPUUtilization" in node_of(result, node).metrics


def test_tables_detected_from_a_bare_array_or_csv_text() -> None:
    rows = [job_row("1", ["r1"])]
    assert harmonize(rows).source == "tables"
    text = "node,node_cores,node_memory_mib\nr1,4,1000\nr2,x,1000\n"
    result = harmonize(text)
    assert [n.id for n in result.document.nodepools[0].nodes] == ["r1"]
    assert "non-numeric value 'x'" in reasons(result)["[1].node_cores"]
    with pytest.raises(HarmonizeError, match="unknown table"):
        harmonize({"jobs": rows, "queues": []}, source="tables")


# -- Prometheus ---------------------------------------------------------------------------------
def prom(kind: str, result: list[Doc]) -> Doc:
    return {"status": "success", "data": {"resultType": kind, "result": result}}


def base_doc(timestamp: float = 0.0) -> TwinDocument:
    hardware = {"cpu_milli": 8000, "memory_mib": 1024}
    return validate_document(
        {
            "timestamp": timestamp,
            "nodepools": [
                {
                    "id": "p",
                    "nodes": [
                        {"id": "n1", "hardware": hardware},
                        {"id": "n2", "hardware": hardware},
                    ],
                }
            ],
        }
    )


def test_prometheus_vector_and_matrix_update_node_metrics() -> None:
    payload = {
        "cpu_util": prom(
            "matrix",
            [
                {"metric": {"node": "n1"}, "values": [[100, "0.2"], [130, "0.4"]]},
                {"metric": {"instance": "n2:9100"}, "values": [[110, "0.9"]]},
                {"metric": {"node": "n3"}, "values": [[110, "0.1"]]},
            ],
        ),
        "power_w": prom("vector", [{"metric": {"node": "n1"}, "value": [130, "NaN"]}]),
    }
    result = harmonize(payload, base=base_doc(50))
    assert result.source == "prometheus"
    assert node_of(result, "n1").metrics == {"cpu_util": 0.4}
    assert node_of(result, "n2").metrics == {"cpu_util": 0.9}
    assert result.document.timestamp == 130
    dropped = reasons(result)
    assert dropped["cpu_util.data.result[2].values[0]"] == "unknown node 'n3'"
    assert "non-finite value 'NaN'" in dropped["power_w.data.result[0].value"]


def test_prometheus_stale_duplicate_and_unlabelled_samples_are_dropped() -> None:
    payload = prom(
        "vector",
        [
            {"metric": {"__name__": "up", "node": "n1"}, "value": [40, "1"]},
            {"metric": {"__name__": "load", "node": "n1"}, "value": [60, "2"]},
            {"metric": {"__name__": "load", "nodename": "n1"}, "value": [60, "3"]},
            {"metric": {"__name__": "load"}, "value": [60, "3"]},
            {"metric": {"node": "n1"}, "value": [60, "3"]},
            {"metric": {"__name__": "load", "node": "n2"}, "value": [60, "abc"]},
        ],
    )
    result = harmonize(payload, base=base_doc(50))
    dropped = reasons(result)
    assert dropped["data.result[0].value"].startswith("stale: sampled at t=40")
    assert dropped["data.result[2].value"] == "duplicate sample of n1/load at t=60"
    assert "no node label" in dropped["data.result[3].metric"]
    assert "no metric name" in dropped["data.result[4].metric"]
    assert "non-numeric value 'abc'" in dropped["data.result[5].value"]
    assert node_of(result, "n1").metrics == {"load": 2.0}


def test_prometheus_failed_query_is_dropped_and_without_base_nothing_is_applied() -> None:
    failed = {"status": "error", "errorType": "bad_data", "error": "parse error"}
    ok = prom("vector", [{"metric": {"__name__": "up", "node": "x"}, "value": [1, "1"]}])
    result = harmonize([failed, ok])
    assert "bad_data: parse error" in reasons(result)["[0]"]
    assert result.document.nodepools == []
    assert [(s.node, s.metric) for s in result.samples] == [("x", "up")]
    with pytest.raises(HarmonizeError, match=r"^data.resultType: must be one of"):
        harmonize({"status": "success", "data": {"resultType": "table", "result": []}})


# -- twin ---------------------------------------------------------------------------------------
def test_twin_document_passes_through_validated() -> None:
    data = base_doc(5).model_dump(mode="json")
    data["nodepools"][0]["nodes"][0]["metrics"] = {"cpu_util": 0.5}
    result = harmonize(json.dumps(data))
    assert result.source == "twin"
    assert result.document.model_dump(mode="json") == data
    assert [(s.node, s.metric, s.times) for s in result.samples] == [("n1", "cpu_util", [5.0])]
    bad = copy.deepcopy(data)
    bad["nodepools"][0]["nodes"][1]["hardware"]["cpu_milli"] = 0
    with pytest.raises(DocumentError, match=r"nodepools\[0\]\.nodes\[1\]\.hardware\.cpu_milli"):
        harmonize(bad)


# -- detection and errors -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "source"),
    [
        (decice_doc(), "decice"),
        ([decice_doc()], "decice"),
        ({"cluster": decice_doc()}, "decice"),
        (prom("vector", []), "prometheus"),
        ({"q": prom("vector", [])}, "prometheus"),
        ([prom("vector", [])], "prometheus"),
        ({"jobs": [job_row("1", ["r1"])]}, "tables"),
        ([{"Node": "r1", "EpochTime": 1, "RSS": 2}], "tables"),
        ({"nodepools": []}, "twin"),
        ({"jobs": [{"id": "j", "pods": []}]}, "twin"),
        (json.dumps(decice_doc()), "decice"),
    ],
)
def test_auto_detection(payload: Any, source: str) -> None:
    assert harmonize(payload).source == source


@pytest.mark.parametrize(
    ("payload", "kwargs", "field"),
    [
        ({"hello": 1}, {}, "payload"),
        ([], {}, "payload"),
        ([1, 2], {}, "payload"),
        ("just words", {}, "payload"),
        ("{not json", {}, "payload"),
        ({}, {}, "payload"),
        ({"nodepools": []}, {"step_s": 0.0}, "step_s"),
        ({"nodepools": []}, {"source": "yaml"}, "source"),
        (decice_doc(), {"source": "prometheus"}, "lastUpdated"),
        ({"vertexpools": []}, {"source": "tables"}, "vertexpools"),
    ],
)
def test_bad_payloads_raise_naming_the_field(payload: Any, kwargs: Doc, field: str) -> None:
    with pytest.raises(HarmonizeError) as info:
        harmonize(payload, **kwargs)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")


def test_dropped_list_is_capped_and_counts_the_rest() -> None:
    result = [
        {"metric": {"node": f"x{i}", "__name__": "m"}, "value": [1, "1"]} for i in range(1100)
    ]
    out = harmonize(prom("vector", result), base=base_doc())
    assert len(out.dropped) == 1001
    assert out.dropped[-1].reason.startswith("100 more dropped")
