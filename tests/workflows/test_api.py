"""The task decorator records a DAG: dependencies from futures, data, constraints, cycles."""

from __future__ import annotations

import pytest

import twinsched.workflows as wf
from twinsched.errors import TwinschedError
from twinsched.workflows import CycleError, Workflow, build_dag, constraint, data, task

calls: list[str] = []


@task(returns=2, runtime_s=3.0, output_bytes=(1e6, 2e6), constraint=constraint(cores=2))
def split(x: object) -> tuple[object, object]:
    calls.append("split")
    return x, x


@task(runtime_s=1.0, output_bytes=5e5, constraint=constraint(gpus=1, tier="hpc"))
def train(a: object, b: object) -> object:
    calls.append("train")
    return (a, b)


@task()
def report(*parts: object) -> str:
    calls.append("report")
    return "done"


def build() -> wf.DAG:
    with Workflow("demo") as w:
        a, b = split(data("sensor", 50e6, location="edge"))
        model = train(a, b)
        report.options(runtime_s=0.5, output_location="edge")([model, a])
    return w.dag()


def test_building_records_a_dag_without_running_anything() -> None:
    calls.clear()
    dag = build()
    assert calls == []
    assert dag.names == ("split-0", "train-0", "report-0")
    assert dag.work_s.tolist() == [3.0, 1.0, 0.5]


def test_dependencies_come_from_futures_and_carry_their_sizes() -> None:
    dag = build()
    edges = {
        (dag.names[p], dag.names[c]): s
        for p, c, s in zip(
            dag.parent.tolist(), dag.child.tolist(), dag.size_bytes.tolist(), strict=True
        )
    }
    # train gets both results of split (1 MB + 2 MB); report gets train's and split's first.
    assert edges == {
        ("split-0", "train-0"): 3e6,
        ("split-0", "report-0"): 1e6,
        ("train-0", "report-0"): 5e5,
    }
    assert dag.level.tolist() == [0, 1, 2]


def test_constraints_inputs_and_outputs_are_recorded() -> None:
    dag = build()
    assert dag.constraints[0].cores == 2
    assert (dag.constraints[1].gpus, dag.constraints[1].tier) == (1, "hpc")
    assert [(d.task, d.size_bytes, d.location) for d in dag.inputs] == [(0, 50e6, "edge")]
    assert [(d.task, d.location) for d in dag.outputs] == [(2, "edge")]


def test_outside_a_workflow_a_task_is_a_plain_call() -> None:
    calls.clear()
    assert split(1) == (1, 1)
    assert calls == ["split"]


def test_explicit_edges_that_close_a_cycle_are_rejected_with_the_cycle() -> None:
    with Workflow("loop") as w:
        a = report()
        b = report(a)
        c = report(b)
        w.add_edge(c, a)
    with pytest.raises(CycleError, match="dependency cycle: report-0 -> report-1 -> report-2 ->"):
        w.dag()


def test_build_dag_rejects_cycles_and_self_loops() -> None:
    with pytest.raises(CycleError) as info:
        build_dag(
            "x", ["a", "b", "c", "d"], [1, 1, 1, 1], [(0, 1, 0), (1, 2, 0), (2, 1, 0), (2, 3, 0)]
        )
    assert info.value.cycle == ["b", "c"]
    assert "b -> c -> b" in str(info.value)
    with pytest.raises(CycleError, match="a -> a"):
        build_dag("x", ["a"], [1.0], [(0, 0, 0.0)])


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(TwinschedError, match="cores"):
        constraint(cores=0)
    with pytest.raises(TwinschedError, match="missing task"):
        build_dag("x", ["a"], [1.0], [(0, 3, 0.0)])
    with pytest.raises(TwinschedError, match="2 output sizes for 1 returns"):
        task(returns=1, output_bytes=(1.0, 2.0))
    with Workflow("one"):
        f = report()
    with Workflow("two"), pytest.raises(TwinschedError, match="another workflow"):
        report(f)


def test_public_api_is_curated() -> None:
    assert sorted(wf.__all__) == sorted(set(wf.__all__))
    for name in wf.__all__:
        assert hasattr(wf, name), name


def test_the_module_example_runs() -> None:
    import doctest

    from twinsched.workflows import api

    assert doctest.testmod(api).failed == 0
