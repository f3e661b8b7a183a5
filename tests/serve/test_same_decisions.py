"""Same decisions as in process: a fill-up driven through the service, pod by pod, binds
every pod where ``FillupRun`` binds it (node and GPUs), in both ``nodeCacheCapable`` modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serve.conftest import slice_of_openb
from tests.twin.conftest import SyncASGI
from twinsched.model.cluster import Scenario
from twinsched.scheduling import registry
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.driver import drive, fillup_objects, fillup_placements, placements_of
from twinsched.serve.objects import pod_name


def gpus_of(mask: int) -> tuple[int, ...]:
    return tuple(g for g in range(mask.bit_length()) if mask >> g & 1)


@pytest.fixture(scope="module")
def half_slice() -> Scenario:
    """40 nodes of openb: the fill-up drives about 290 pods (about 220 bound, the rest
    refused once the slice is full), enough for every path of the extender calls (bound,
    refused, multi-GPU, shared GPU) at a third of the 80-node slice's HTTP round trips."""
    return slice_of_openb(40)


# every scheduler in nodeCacheCapable mode; full node lists (the other transport, the same
# cluster code behind it) for a heuristic and a shipped model
@pytest.mark.parametrize(
    ("scheduler", "cache_capable"),
    [
        *((name, True) for name in ("fgd", "bestfit", "ai:openb-gates", "ai:openb-rerank")),
        ("fgd", False),
        ("ai:openb-rerank", False),
    ],
    ids=lambda value: {True: "nodeCacheCapable", False: "full-nodes"}.get(value, str(value)),
)
def test_same_placements_as_fillup(
    half_slice: Scenario,
    scheduler: str,
    cache_capable: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path))  # no user model hides the shipped one
    run = fillup_placements(half_slice, scheduler, 0)
    expected = placements_of(run)
    names = Names()
    nodes, pods = fillup_objects(half_slice, 0, names)
    cluster = ServiceCluster(scheduler, seed=0, workload=half_slice.pods)
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


@pytest.fixture(scope="module")
def tiny() -> Scenario:
    return slice_of_openb(20)


@pytest.mark.parametrize("scheduler", [*registry.names(), "bestfit+leastallocated"])
def test_every_registered_scheduler_behind_the_service(tiny: Scenario, scheduler: str) -> None:
    """Any scheduler the registry knows (ILP ones decide pod by pod here, as in the run)."""
    expected = placements_of(fillup_placements(tiny, scheduler, 0))
    nodes, pods = fillup_objects(tiny, 0, Names())
    client = SyncASGI(create_app(ServiceCluster(scheduler, workload=tiny.pods)))
    try:
        got = drive(client, nodes, pods)
    finally:
        client.close()
    assert got.placements == expected and any(expected)


@pytest.mark.parametrize(
    ("scheduler", "named"),
    [("ai:no-such-model", "unknown model 'no-such-model'"), ("fgx", "unknown scheduler 'fgx'")],
)
def test_serve_refuses_a_scheduler_it_cannot_make_before_it_starts(
    scheduler: str, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from twinsched.cli import app

    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path))
    args = ["scheduler", "serve", "--scheduler", scheduler, "--insecure-local"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0  # it never reaches uvicorn
    assert named in result.output, result.output
