"""50 kube-scheduler-like drivers against one service over real HTTP never over-commit.

Each driver runs its own pods' filter, prioritize and bind cycles at the same time as the
others, so a node chosen for one pod is often taken by another before the bind comes: the
bind is refused in ``Error`` then, never applied. Afterwards every binding the service holds
is checked against the state's invariants and against the GPUs' capacity.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter

import httpx
import uvicorn

from twinsched.model.cluster import MILLI_PER_GPU, Scenario
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive, fillup_objects

DRIVERS = 50


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
