"""Every executor gives the same results as running the specs here, in order."""

from __future__ import annotations

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
