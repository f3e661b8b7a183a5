"""The Ray executor, for real, on a local Ray cluster started by the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.workflows.helpers import platform
from twinsched.workflows import Workflow, constraint, create, data, task
from twinsched.workflows.ray_executor import TIER_RESOURCE, run_on_ray


@task(returns=2, runtime_s=1.0, output_bytes=(1e3, 1e3), constraint=constraint(tier="edge"))
def split(raw: object, n: int) -> tuple[list[int], list[int]]:
    values = list(range(n))
    return values[::2], values[1::2]


@task(runtime_s=5.0, constraint=constraint(tier="hpc"))
def total(part: list[int]) -> int:
    return sum(part)


@task(runtime_s=1.0, output_location="edge")
def combine(parts: list[int], offset: int = 0) -> int:
    return sum(parts) + offset


def test_a_small_dag_runs_on_ray_with_correct_results_and_placement() -> None:
    with Workflow("ray-demo") as wf:
        evens, odds = split(data("raw", 1e6, location="edge"), 10)
        a, b = total(evens), total(odds)
        combine([a, b], offset=b)
    dag = wf.dag()
    plat = platform([2, 2, 2], speed=[0.5, 1.0, 2.0], tiers=[0, 1, 2],
                    tier_names=("edge", "cloud", "hpc"))  # fmt: skip
    schedule = create("heft").schedule(dag, plat)
    run = run_on_ray(dag, schedule, plat, wf.calls)
    assert run.results == {
        "split-0": ([0, 2, 4, 6, 8], [1, 3, 5, 7, 9]),
        "total-0": 20,
        "total-1": 25,
        "combine-0": 45 + 25,
    }
    tiers = {r.name: (r.tier, r.assigned_tier) for r in run.records}
    assert tiers["split-0"] == ("edge", "edge")
    assert tiers["total-0"] == ("hpc", "hpc") and tiers["total-1"] == ("hpc", "hpc")
    assert all(planned == granted for planned, granted in tiers.values())
    by_name = {r.name: r for r in run.records}
    assert by_name["total-0"].started_s >= by_name["split-0"].ended_s
    assert by_name["combine-0"].simulated_start_s == pytest.approx(schedule.start[3])
    assert run.measured_makespan_s > 0


@pytest.fixture(scope="module")
def shared_ray() -> Iterator[None]:
    """One local cluster for the tests below (the first test starts its own, as users do)."""
    import ray

    tiers = {TIER_RESOURCE.format(t): 1.0 for t in ("edge", "cloud", "hpc")}
    ray.init(num_cpus=2, resources=tiers, include_dashboard=False, log_to_driver=False,
             configure_logging=False)  # fmt: skip
    yield
    ray.shutdown()


@pytest.mark.usefixtures("shared_ray")
def test_an_imported_dag_runs_as_sleeping_tasks_in_dependency_order() -> None:
    from twinsched.workflows.synthetic import layered_dag

    dag = layered_dag(12, seed=1, width=4)
    plat = platform([2, 2], tiers=[0, 1], tier_names=("edge", "cloud"))
    schedule = create("lpt").schedule(dag, plat)
    run = run_on_ray(dag, schedule, plat, time_scale=1e-4)
    by_name = {r.name: r for r in run.records}
    for p, c in zip(dag.parent.tolist(), dag.child.tolist(), strict=True):
        assert by_name[dag.names[c]].started_s >= by_name[dag.names[p]].ended_s
    assert all(r.tier == r.assigned_tier for r in run.records)
    assert set(run.results.values()) == {None}


@pytest.mark.usefixtures("shared_ray")
def test_the_command_runs_an_instance_on_ray() -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from twinsched.cli.workflows import app

    data = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    args = ["run", "srasearch", "--schedulers", "heft", "--data", str(data)]
    result = CliRunner().invoke(app, [*args, "--executor", "ray", "--time-scale", "1e-5"])
    assert result.exit_code == 0, result.output
    assert "heft on Ray" in result.output and "22/22" in result.output


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from twinsched.errors import TwinschedError
    from twinsched.workflows import ray_executor

    def missing(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(TwinschedError, match=r"pip install 'twinsched\[workflows\]'"):
        ray_executor._import_ray()
