"""50 kube-scheduler-like drivers against one service over real HTTP never over-commit.

Each driver runs its own pods' filter, prioritize and bind cycles at the same time as the
others, so a node chosen for one pod is often taken by another before the bind comes: the
bind is refused in ``Error`` then, never applied. Afterwards every binding the service holds
is checked against the state's invariants and against the GPUs' capacity.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import uvicorn

from tests.serve.test_protocol import AUTH, TOKEN
from twinsched.model.cluster import MILLI_PER_GPU, Scenario
from twinsched.serve import invariants
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive, fillup_objects

DRIVERS = 50


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(cluster: ServiceCluster) -> Iterator[str]:
    """A real uvicorn server over ``cluster`` (token :data:`TOKEN`); its URL."""
    port = free_port()
    app = create_app(cluster, Names(), TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()


def test_concurrent_binds_never_double_book(openb_slice: Scenario) -> None:
    small = openb_slice
    nodes, pods = fillup_objects(small, 0, Names())
    nodes = nodes[:12]  # few nodes, many pods: drivers compete for the same GPUs
    cluster = ServiceCluster("fgd", workload=small.pods)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(cluster), port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    placements: list[str | None] = []
    errors: list[str] = []
    lock = threading.Lock()

    def one(k: int) -> None:
        mine = pods[k::DRIVERS][:4]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            got = drive(client, nodes, mine)
        with lock:
            placements.extend(got.placements)
            errors.extend(got.errors)

    workers = [threading.Thread(target=one, args=(k,)) for k in range(DRIVERS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    server.should_exit = True
    thread.join()

    state = cluster.control.state  # type: ignore[union-attr]
    state.check_invariants()  # no over-commit of CPU, memory or any GPU; conservation
    bound = cluster.bindings()
    assert len(bound) == sum(p is not None for p in placements) > 30
    used: Counter[tuple[str, int]] = Counter()
    table = cluster.table
    assert table is not None
    for key, (node, gpus) in bound.items():
        row = table.rows_of_pods[cluster.slot[key]]
        for g in gpus:
            used[node, g] += row.gpu_milli
    assert max(used.values()) <= MILLI_PER_GPU
    assert all("cannot go there" in e or "already bound" in e for e in errors), errors[:3]
    assert errors  # the drivers did race (about 150 refused binds in a run)


def _used(cluster: ServiceCluster) -> dict[str, tuple[int, int]]:
    """Per node: CPU milli and GPUs its running pods use (read from the bindings)."""
    assert cluster.table is not None
    out: dict[str, tuple[int, int]] = {}
    for key, (node, gpus) in cluster.bindings().items():
        row = cluster.table.rows_of_pods[cluster.slot[key]]
        cpu, n = out.get(node, (0, 0))
        out[node] = (cpu + row.cpu_milli, max(n, max(gpus, default=-1) + 1))
    return out


def _within_capacity(cluster: ServiceCluster) -> list[str]:
    """Nodes whose running pods exceed the node as declared, and are not reported so."""
    with cluster.lock:
        invariants.check(cluster)
        declared = {r.name: r for r in cluster.declared}
        bad = []
        for node, (cpu, gpus) in _used(cluster).items():
            row = declared.get(node)
            if row is None and node not in cluster.missing:
                bad.append(f"{node}: runs pods, neither declared nor reported missing")
            elif (
                row is not None
                and (cpu > row.cpu_milli or gpus > row.gpu_count)
                and node not in cluster.overcommitted
            ):
                bad.append(f"{node}: {cpu} milli-CPU, {gpus} GPUs > {row} unreported")
        return bad


def _variants(nodes: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Node updates: some nodes tainted, shrunk (half their GPUs and CPU), removed; all back."""
    taint = {"taints": [{"key": "maint", "value": "x", "effect": "NoSchedule"}]}

    def shrunk(n: dict[str, Any]) -> dict[str, Any]:
        alloc = dict(n["status"]["allocatable"])
        alloc["cpu"] = f"{int(alloc['cpu'][:-1]) // 2}m"
        if "nvidia.com/gpu" in alloc:
            alloc["nvidia.com/gpu"] = str(int(alloc["nvidia.com/gpu"]) // 2)
        return {**n, "status": {**n["status"], "allocatable": alloc}}

    return [
        [{**n, "spec": taint} if k % 2 else n for k, n in enumerate(nodes)],
        nodes,
        [shrunk(n) if k % 3 == 0 else n for k, n in enumerate(nodes)],
        [n for k, n in enumerate(nodes) if k % 4 != 1],  # a quarter removed
        nodes,  # they return
    ]


def test_binders_with_node_updates_never_exceed_capacity(openb_slice: Scenario) -> None:
    """50 drivers bind while node updates come (taints, shrinks, removals, returns): after
    every update and at the end, what runs on a node never exceeds it as declared, except
    a shrink's over-commit, reported (and the service checks it after every change)."""
    nodes, pods = fillup_objects(openb_slice, 0, Names())
    nodes = nodes[:12]
    cluster = ServiceCluster("fgd", workload=openb_slice.pods, validate=True)
    with serving(cluster) as url:
        httpx.post(f"{url}/nodes", json={"items": nodes}, headers=AUTH).raise_for_status()
        failures: list[str] = []
        reported: set[str] = set()
        acknowledged: dict[str, str] = {}  # pod uid -> node of every bind answered ""

        def one(k: int) -> None:
            mine = pods[k::DRIVERS][:6]
            with httpx.Client(base_url=url, timeout=60) as client:
                try:
                    got = drive(client, nodes, mine, token=TOKEN, post_nodes=False)
                except Exception as exc:  # a 5xx (an invariant broke in the service)
                    failures.append(repr(exc)[:300])
                    return
            for p, node in zip(mine, got.placements, strict=True):
                if node is not None:
                    acknowledged[p["metadata"]["uid"]] = node

        workers = [threading.Thread(target=one, args=(k,)) for k in range(DRIVERS)]
        for w in workers:
            w.start()
        updates = 0
        while any(w.is_alive() for w in workers) or updates < 10:
            items = _variants(nodes)[updates % 5]
            answer = httpx.post(f"{url}/nodes", json={"items": items}, headers=AUTH, timeout=60)
            assert answer.status_code == 200, answer.text
            reported |= set(answer.json()["overcommitted"]) | set(answer.json()["missing"])
            failures += _within_capacity(cluster)
            updates += 1
        for w in workers:
            w.join()
        httpx.post(f"{url}/nodes", json={"items": nodes}, headers=AUTH).raise_for_status()
    failures += _within_capacity(cluster)
    assert not failures, failures[:5]
    held = {key: node for key, (node, _) in cluster.bindings().items()}
    assert held == acknowledged  # no acknowledged bind dropped by an update
    assert not cluster.overcommitted and not cluster.missing  # all back, nothing exceeds
    assert len(cluster.bindings()) > 30 and updates >= 10 and reported
