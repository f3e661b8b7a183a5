"""Cost of the live mirror per interval: 5,000 nodes and 50,000 pods (issue 33).

Crafted Prometheus answers (the JSON ``/api/v1/query`` returns for the mirror's queries,
``twin/collectors/ksm.py:QUERIES``, with kube-state-metrics' labels) fed to
``KsmMirror.mirror`` on a twin with a SQLite history: the first interval (every node and pod
new), then intervals where 1 % of the pods change phase or node. CPU seconds
(``time.process_time``) per interval of JSON decoding + read + compare + write.

    python bench/mirror.py [--nodes 5000] [--pods 50000] [--intervals 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.store.history import HistoryStore
from twinsched.twin.collectors.ksm import QUERIES, KsmMirror
from twinsched.twin.core.service import TwinService

GIB = 2**30
REQ = "kube_pod_container_resource_requests"


def s(labels: dict[str, str], value: float) -> dict[str, Any]:
    return {"metric": labels, "value": [1.0, repr(float(value))]}


def node_answers(n: int) -> dict[str, list[dict[str, Any]]]:
    names = [f"node-{i:05d}" for i in range(n)]
    alloc = []
    for i, name in enumerate(names):
        alloc += [s({"node": name, "resource": "cpu", "unit": "core"}, 64),
                  s({"node": name, "resource": "memory", "unit": "byte"}, 256 * GIB)]  # fmt: skip
        if i % 5 == 0:
            alloc.append(s({"node": name, "resource": "nvidia_com_gpu", "unit": "integer"}, 8))
    return {
        "kube_node_info": [s({"node": x}, 1) for x in names],
        "kube_node_labels": [
            s({"node": x, "label_twinsched_io_nodepool": f"pool-{i % 10}"}, 1)
            for i, x in enumerate(names)
        ],
        "kube_node_status_allocatable": alloc,
        "kube_node_status_condition": [
            s({"node": x, "condition": "Ready", "status": "true"}, 1) for x in names
        ],
        "kube_node_spec_unschedulable": [s({"node": x}, 0) for x in names],
    }


def pod_answers(nodes: int, where: np.ndarray, phase: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {f: [] for f in ("kube_pod_info", "kube_pod_status_phase", REQ,
                                                 "kube_pod_owner", "kube_pod_created")}  # fmt: skip
    for i, (node, ph) in enumerate(zip(where.tolist(), phase, strict=True)):
        key = {"namespace": "default", "pod": f"pod-{i:06d}", "uid": f"uid-{i}"}
        on = f"node-{node:05d}" if ph == "Running" else ""
        out["kube_pod_info"].append(s({**key, "node": on}, 1))
        out["kube_pod_status_phase"].append(s({**key, "phase": ph}, 1))
        for r, u, v in (("cpu", "core", 0.5), ("memory", "byte", GIB)):
            out[REQ].append(s({**key, "container": "main", "node": on, "resource": r,
                               "unit": u}, v))  # fmt: skip
        out["kube_pod_owner"].append(
            s(
                {
                    **key,
                    "owner_kind": "Job",
                    "owner_name": f"job-{i // 4}",
                    "owner_is_controller": "true",
                },
                1,
            )
        )
        out["kube_pod_created"].append(s(key, 1000 + i * 0.01))
    return out


def encoded(answers: dict[str, list[Any]]) -> dict[str, bytes]:
    """What Prometheus sends, per family (decoded inside the timed part)."""
    return {f: json.dumps({"status": "success", "data": {"resultType": "vector", "result":
            answers.get(f, [])}}).encode() for f in QUERIES}  # fmt: skip


def interval(mirror: KsmMirror, raw: dict[str, bytes], at: float) -> tuple[float, int]:
    started = time.process_time()
    answers = {f: json.loads(b)["data"]["result"] for f, b in raw.items()}
    plan = mirror.mirror(answers, at)
    return time.process_time() - started, len(plan.deltas)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--intervals", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    where = rng.integers(0, args.nodes, args.pods)
    phase = rng.choice(["Running", "Pending", "Succeeded"], args.pods, p=[0.7, 0.2, 0.1]).tolist()
    nodes = node_answers(args.nodes)
    with tempfile.TemporaryDirectory() as folder:
        store = HistoryStore(f"sqlite:///{Path(folder) / 'twin.db'}")
        mirror = KsmMirror("http://127.0.0.1:1", TwinService(history=store), usage={})
        for k in range(args.intervals + 1):
            raw = encoded({**nodes, **pod_answers(args.nodes, where, phase)})
            cpu, deltas = interval(mirror, raw, 1e9 + k)
            what = "first (all new)" if k == 0 else "steady (1 % changed)"
            print(f"interval {k}: {what}: {deltas} deltas, {cpu:.3f} s CPU")
            for i in rng.choice(args.pods, args.pods // 100, replace=False).tolist():
                phase[i] = {"Pending": "Running", "Running": "Succeeded"}.get(phase[i], phase[i])
        store.close()


if __name__ == "__main__":
    main()
