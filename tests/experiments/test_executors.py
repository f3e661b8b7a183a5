"""Every executor gives the same results as running the specs here, in order."""

from __future__ import annotations

import pytest

from tests.ray_cluster import RayCluster
from twinsched.experiments.executors import ProcessExecutor, SerialExecutor, local
from twinsched.experiments.runner import execute_many
from twinsched.model.run import RunSpec


def _square(x: int) -> int:
    return x * x


def test_map_keeps_input_order_and_as_completed_names_each_index() -> None:
    items = list(range(7))
    for executor in (SerialExecutor(), ProcessExecutor(2)):
        with executor as ex:
            assert ex.map(_square, items) == [x * x for x in items]
            got = dict(ex.as_completed(_square, items))
        assert got == {i: i * i for i in items}


def test_local_picks_serial_for_one_worker_or_one_item() -> None:
    assert isinstance(local(1, 10), SerialExecutor)
    assert isinstance(local(4, 1), SerialExecutor)


def test_runs_are_identical_on_every_executor() -> None:
    specs = [
        RunSpec("synthetic-continuum", name, seed, mode="replay")
        for name in ("fgd", "random")
        for seed in (0, 1)
    ]

    def results(executor: object) -> list[dict[str, object]]:
        out = dict(execute_many(specs, executor=executor))  # type: ignore[arg-type]
        return [
            {k: v for k, v in out[i].to_dict().items() if k not in ("wall_seconds", "timings")}
            for i in range(len(specs))
        ]

    assert results(SerialExecutor()) == results(ProcessExecutor(2))


def test_ray_blocks_nest_on_one_connection_and_count_tasks_per_node(
    ray_cluster: RayCluster,
) -> None:
    import ray

    from twinsched.experiments.ray_executor import RayExecutor

    executor = RayExecutor(ray_cluster.address)
    with executor:
        with executor:  # e.g. a training phase inside the command's block
            assert executor.map(abs, [-1, 2]) == [1, 2]
        assert ray.is_initialized()  # the inner block left the connection open
        assert list(executor.as_completed(abs, [-3])) == [(0, 3)]
    assert not ray.is_initialized()  # the outer block, which connected, closed it
    assert sum(executor.tasks_per_node.values()) == 3
    with pytest.raises(RuntimeError, match="with-block"):
        executor.map(abs, [1])
