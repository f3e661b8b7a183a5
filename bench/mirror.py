"""Cost of the live mirror per interval: 5,000 nodes and 50,000 pods (issue 33).

The twin's side of a whole poll, ``KsmMirror.poll_once``: its queries over HTTP (an
in-process Prometheus answering through httpx's mock transport the JSON that
``/api/v1/query`` returns, with kube-state-metrics' labels and the ``instance`` and ``job``
labels Prometheus adds; ``kube_pod_info`` with the labels kube-state-metrics v2 writes),
JSON decoding, reading, comparing with the twin and writing to a
twin with a SQLite history. The first interval (every node and pod new), then steady
intervals with a realistic amount of change: 1 % of the pods change phase, 0.2 % arrive,
0.1 % of the finished ones are deleted, 5 nodes go down or up. CPU seconds
(``time.process_time``) per interval, less the CPU of the stand-in Prometheus (encoding its
answers), which ``--profile`` also leaves out of its table. The garbage collector is tuned
as in ``twin serve`` (``quiet_gc``).

    python bench/mirror.py [--nodes 5000] [--pods 50000] [--intervals 5] [--profile]

It drives whatever ``KsmMirror`` is on the path (the queries are answered by the families
they name), so code from before a change can be timed with the same bench.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import numpy as np
import orjson

from twinsched.cli.servers import quiet_gc
from twinsched.store.history import HistoryStore
from twinsched.twin.collectors.ksm import KsmMirror
from twinsched.twin.core.service import TwinService

GIB = 2**30
REQ = "kube_pod_container_resource_requests"
PROM = {"instance": "10.0.0.7:8080", "job": "kube-state-metrics"}
TAGGED = re.compile(r'"twinsched_family", "(\w+)"')
UIDS = re.compile(r'uid=~"([^"]*)"')
GROUPED = re.compile(r"(group|max) by \(([^)]*)\) \((kube_\w+)")


def s(name: str, labels: dict[str, str], value: float) -> dict[str, Any]:
    return {"metric": {"__name__": name, **labels, **PROM}, "value": [1e9, repr(float(value))]}


class Cluster:
    """A cluster as kube-state-metrics shows it, changed a little every interval."""

    def __init__(self, nodes: int, pods: int, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes = [f"node-{i:05d}" for i in range(nodes)]
        self.ready = [True] * nodes
        self.pods: dict[int, tuple[str, str]] = {}  # pod number -> (phase, node)
        self.next = 0
        for _ in range(pods):
            self.arrive(self.rng.choice(["Running", "Pending", "Succeeded"], p=[0.7, 0.2, 0.1]))

    def arrive(self, phase: str = "Pending") -> None:
        node = self.nodes[int(self.rng.integers(len(self.nodes)))] if phase != "Pending" else ""
        self.pods[self.next] = (str(phase), node)
        self.next += 1

    def change(self) -> None:
        """One interval of change."""
        n = len(self.pods)
        keys = list(self.pods)
        for i in self.rng.choice(keys, n // 100, replace=False).tolist():
            phase, node = self.pods[i]
            if phase == "Pending":
                self.pods[i] = ("Running", self.nodes[int(self.rng.integers(len(self.nodes)))])
            elif phase == "Running":
                self.pods[i] = ("Succeeded", node)
        done = [i for i in keys if self.pods[i][0] == "Succeeded"]
        for i in self.rng.choice(done, min(len(done), n // 1000), replace=False).tolist():
            del self.pods[i]
        for _ in range(n // 500):
            self.arrive()
        for k in self.rng.choice(len(self.nodes), 5, replace=False).tolist():
            self.ready[k] = not self.ready[k]

    def series(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Family -> ``(uid, series)`` (uid "" for node families), as Prometheus holds them."""
        out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        add = out.setdefault
        for i, name in enumerate(self.nodes):
            node = {"node": name}
            add("kube_node_info", []).append(("", s("kube_node_info", node, 1)))
            pool = {**node, "label_twinsched_io_nodepool": f"pool-{i % 10}"}
            add("kube_node_labels", []).append(("", s("kube_node_labels", pool, 1)))
            alloc = [("cpu", "core", 64), ("memory", "byte", 256 * GIB)]
            alloc += [("nvidia_com_gpu", "integer", 8)] if i % 5 == 0 else []
            for resource, unit, v in alloc:
                labels = {**node, "resource": resource, "unit": unit}
                add("kube_node_status_allocatable", []).append(
                    ("", s("kube_node_status_allocatable", labels, v)))  # fmt: skip
            status = {**node, "condition": "Ready", "status": str(self.ready[i]).lower()}
            add("kube_node_status_condition", []).append(
                ("", s("kube_node_status_condition", status, 1)))  # fmt: skip
            add("kube_node_spec_unschedulable", []).append(
                ("", s("kube_node_spec_unschedulable", node, 0)))  # fmt: skip
        for i, (phase, node) in self.pods.items():
            uid = f"0c7e{i:08d}-6d2a-4b5e-9f3a-1b2c3d4e5f60"
            key = {"namespace": "default", "pod": f"pod-{i:06d}", "uid": uid}
            on = node if phase == "Running" else ""
            info = {**key, "node": on, "host_ip": "10.1.0.9", "pod_ip": f"10.2.{i % 250}.{i % 199}",
                    "created_by_kind": "Job", "created_by_name": f"job-{i // 4}",
                    "priority_class": "batch", "host_network": "false"}  # fmt: skip
            add("kube_pod_info", []).append((uid, s("kube_pod_info", info, 1)))
            add("kube_pod_status_phase", []).append(
                (uid, s("kube_pod_status_phase", {**key, "phase": phase}, 1)))  # fmt: skip
            for r, u, v in (("cpu", "core", 0.5), ("memory", "byte", GIB)):
                labels = {**key, "container": "main", "node": on, "resource": r, "unit": u}
                add(REQ, []).append((uid, s(REQ, labels, v)))
            owner = {**key, "owner_kind": "Job", "owner_name": f"job-{i // 4}",
                     "owner_is_controller": "true"}  # fmt: skip
            add("kube_pod_owner", []).append((uid, s("kube_pod_owner", owner, 1)))
            add("kube_pod_created", []).append((uid, s("kube_pod_created", key, 1e9 - 1e5 + i)))
        return out


class FakePrometheus:
    """Answers instant queries from :meth:`Cluster.series`; its own CPU time is counted."""

    def __init__(self) -> None:
        self.held: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.cpu = 0.0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        started = time.process_time()
        form = parse_qs(request.content.decode()) if request.method == "POST" else {}
        query = form.get("query", [request.url.params.get("query", "")])[0]
        tagged = TAGGED.findall(query)
        families = tagged or re.findall(r"kube_\w+", query)[:1]
        uids = UIDS.search(query)
        wanted = set(uids.group(1).split("|")) if uids else None
        grouped = {f: (op, [k.strip() for k in by.split(",")])
                   for op, by, f in GROUPED.findall(query)}  # fmt: skip
        result = []
        for family in families:
            op, keep = grouped.get(family, ("", []))
            for uid, series in self.held.get(family, []):
                if wanted is None or uid in wanted:
                    metric = series["metric"]
                    if op:  # group (the value 1) or max (of one series) by (keep)
                        metric = {k: metric[k] for k in keep if metric.get(k)}
                        value = "1" if op == "group" else series["value"][1]
                        series = {"metric": metric, "value": [1e9, value]}
                    if tagged:
                        series = {**series, "metric": {**metric, "twinsched_family": family}}
                    result.append(series)
        body = orjson.dumps({"status": "success",
                             "data": {"resultType": "vector", "result": result}})  # fmt: skip
        self.cpu += time.process_time() - started
        return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--intervals", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="cProfile (CPU time) each poll")
    args = parser.parse_args()
    cluster, prometheus = Cluster(args.nodes, args.pods), FakePrometheus()
    with tempfile.TemporaryDirectory() as folder:
        store = HistoryStore(f"sqlite:///{Path(folder) / 'twin.db'}")
        mirror = KsmMirror("http://prometheus", TwinService(history=store), usage={},
                           transport=httpx.MockTransport(prometheus))  # fmt: skip
        quiet_gc()  # as twin serve does once started
        for k in range(args.intervals + 1):
            prometheus.held = cluster.series()
            profile = cProfile.Profile(time.process_time) if args.profile else None
            before, started = prometheus.cpu, time.process_time()
            if profile is not None:
                profile.enable()
            done = mirror.poll_once(1e9 + k)
            if profile is not None:
                profile.disable()
            cpu = time.process_time() - started - (prometheus.cpu - before)
            what = "first (all new)" if k == 0 else "steady"
            print(f"interval {k}: {what}: {len(cluster.pods)} pods, {done['deltas']} deltas, "
                  f"{cpu:.3f} s CPU", flush=True)  # fmt: skip
            if profile is not None:
                pstats.Stats(profile).sort_stats("tottime").print_stats(12)
            cluster.change()
        store.close()


if __name__ == "__main__":
    main()
