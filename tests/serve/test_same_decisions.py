"""Same decisions as in process: a fill-up driven through the service, pod by pod, binds
every pod where ``FillupRun`` binds it (node and GPUs), in both ``nodeCacheCapable`` modes."""

from __future__ import annotations

import pytest

from tests.twin.conftest import SyncASGI
from twinsched.model.cluster import Scenario
from twinsched.model.events import Phase
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive
from twinsched.serve.objects import node_objects, pod_name, pod_objects
from twinsched.sim.fillup import FillupRun


def in_process(scenario: Scenario, scheduler: str) -> tuple[FillupRun, list[str | None]]:
    run = FillupRun(scenario, scheduler, 0, track=False)
    while run.cursor < run.pods.n:
        run.step(1)
    state = run.state
    names = scenario.nodes.names
    placed = [names[int(state.pod_node[i])] if state.phase[i] == Phase.RUNNING else None
              for i in range(run.pods.n)]  # fmt: skip
    return run, placed


def gpus_of(mask: int) -> tuple[int, ...]:
    return tuple(g for g in range(mask.bit_length()) if mask >> g & 1)


@pytest.mark.parametrize("cache_capable", [True, False], ids=["nodeCacheCapable", "full-nodes"])
@pytest.mark.parametrize("scheduler", ["fgd", "bestfit"])
def test_same_placements_as_fillup(
    openb_slice: Scenario, scheduler: str, cache_capable: bool
) -> None:
    run, expected = in_process(openb_slice, scheduler)
    names = Names()
    nodes = node_objects(openb_slice.nodes, openb_slice.labels, names)
    pods = pod_objects(run.pods, openb_slice.labels, openb_slice.nodes.gpu_models, names)
    cluster = ServiceCluster(scheduler, seed=0, workload=openb_slice.pods)
    client = SyncASGI(create_app(cluster, names))
    try:
        got = drive(client, nodes, pods, cache_capable=cache_capable)
    finally:
        client.close()
    assert not got.errors
    assert sum(p is not None for p in expected) > 100  # the slice fills up: a real test
    assert got.placements == expected
    bound = cluster.bindings()
    state = run.state
    for i, pod in enumerate(run.pods.names):
        if expected[i] is not None:
            assert bound[f"uid-{pod_name(pod)}"][1] == gpus_of(int(state.pod_gpus[i]))
