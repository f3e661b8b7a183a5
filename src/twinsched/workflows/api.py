"""The COMPSs-style task API: ``@task`` functions called inside a :class:`Workflow` record a DAG.

Calling a task inside ``with Workflow(name) as wf:`` runs nothing: it records a task and
returns :class:`Future` objects (one per declared return). Passing a future to another task
is a dependency; passing :func:`data` declares an external input with a size and location.
``wf.dag()`` freezes what was recorded into a :class:`~twinsched.workflows.dag.DAG` (cycles,
possible only through explicit :meth:`Workflow.add_edge`, are rejected there). Outside a
workflow a task is an ordinary function call, so the same code runs sequentially too.

>>> @task(returns=1, runtime_s=2.0, output_bytes=1e6)
... def double(x):
...     return 2 * x
>>> with Workflow("demo") as wf:
...     a = double(data("raw", 5e6, location="edge"))
...     b = double(a)
>>> wf.dag().names, wf.dag().parent.tolist(), wf.dag().child.tolist()
(('double-0', 'double-1'), [0], [1])
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Generic, ParamSpec, TypeVar

from twinsched.errors import TwinschedError
from twinsched.workflows.dag import DAG, Constraint, DataPlacement, build_dag

P = ParamSpec("P")
R = TypeVar("R")

_CURRENT: ContextVar[Workflow | None] = ContextVar("twinsched_workflow", default=None)


@dataclass(frozen=True)
class Data:
    """An external input: a named piece of data of ``size_bytes`` living in one tier."""

    name: str
    size_bytes: float
    location: str


def data(name: str, size_bytes: float, location: str) -> Data:
    """External input data (a file, a stream) of ``size_bytes``, held in tier ``location``."""
    if not size_bytes >= 0:
        raise TwinschedError(f"data {name!r}: size must be >= 0, got {size_bytes}")
    return Data(name, float(size_bytes), location)


@dataclass(frozen=True)
class Future:
    """The not-yet-computed ``index``-th result of a recorded task call."""

    workflow: Workflow = field(repr=False, compare=False)
    task: int
    index: int
    size_bytes: float


@dataclass(frozen=True)
class TaskOptions:
    """Per-task settings; ``Task.options(...)`` overrides them for one call."""

    returns: int = 1
    runtime_s: float = 1.0
    constraint: Constraint = field(default_factory=Constraint)
    output_bytes: float | tuple[float, ...] = 0.0
    output_location: str = ""  # tier the outputs must be delivered to; empty: nowhere

    def sizes(self) -> tuple[float, ...]:
        sizes = self.output_bytes
        if isinstance(sizes, tuple):
            if len(sizes) != self.returns:
                raise TwinschedError(f"{len(sizes)} output sizes for {self.returns} returns")
            return tuple(float(s) for s in sizes)
        return (float(sizes),) * self.returns


@dataclass
class TaskCall:
    """One recorded call: the function, its arguments (futures left in place) and options."""

    name: str
    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    options: TaskOptions


class Task(Generic[P, R]):
    """A function turned into a workflow task by :func:`task`."""

    def __init__(self, function: Callable[P, R], options: TaskOptions) -> None:
        self.function = function
        self.default_options = options
        functools.update_wrapper(self, function)

    def options(self, **overrides: Any) -> Task[P, R]:
        """The same task with some options changed for the calls made through it."""
        return Task(self.function, replace(self.default_options, **overrides))

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        workflow = _CURRENT.get()
        if workflow is None:
            return self.function(*args, **kwargs)
        return workflow.record(self.function, args, dict(kwargs), self.default_options)


def task(
    returns: int = 1,
    *,
    runtime_s: float = 1.0,
    constraint: Constraint | None = None,
    output_bytes: float | tuple[float, ...] = 0.0,
    output_location: str = "",
) -> Callable[[Callable[P, R]], Task[P, R]]:
    """Decorator: a workflow task with ``returns`` results, an estimated runtime (seconds on a
    speed-1.0 node), a resource :func:`~twinsched.workflows.dag.constraint`, output sizes
    (bytes, one number or one per return) and an optional tier the outputs must reach.
    """
    if returns < 1:
        raise TwinschedError(f"a task returns at least one value, got returns={returns}")
    options = TaskOptions(
        returns, float(runtime_s), constraint or Constraint(), output_bytes, output_location
    )
    options.sizes()  # checks the number of sizes

    def wrap(function: Callable[P, R]) -> Task[P, R]:
        return Task(function, options)

    return wrap


class Workflow:
    """Records task calls made inside ``with Workflow(name):``; :meth:`dag` freezes them."""

    def __init__(self, name: str = "workflow") -> None:
        self.name = name
        self.calls: list[TaskCall] = []
        self._extra_edges: list[tuple[int, int]] = []
        self._counts: dict[str, int] = {}
        self._token: Any = None

    def __enter__(self) -> Workflow:
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)

    def record(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        options: TaskOptions,
    ) -> Future | tuple[Future, ...]:
        base = getattr(function, "__name__", "task")
        k = self._counts.get(base, 0)
        self._counts[base] = k + 1
        for arg in _flatten([*args, *kwargs.values()]):
            if isinstance(arg, Future) and arg.workflow is not self:
                raise TwinschedError(f"{base}: a future from another workflow was passed in")
        index = len(self.calls)
        self.calls.append(TaskCall(f"{base}-{k}", function, args, kwargs, options))
        futures = tuple(Future(self, index, i, size) for i, size in enumerate(options.sizes()))
        return futures[0] if options.returns == 1 else futures

    def add_edge(self, before: Future, after: Future) -> None:
        """An explicit ordering: ``after``'s task waits for ``before``'s (no data moves)."""
        self._extra_edges.append((before.task, after.task))

    def dag(self) -> DAG:
        """The recorded DAG; raises :class:`~twinsched.workflows.dag.CycleError` on a cycle."""
        edges: list[tuple[int, int, float]] = [(a, b, 0.0) for a, b in self._extra_edges]
        inputs: list[DataPlacement] = []
        outputs: list[DataPlacement] = []
        for t, call in enumerate(self.calls):
            seen: set[tuple[int, int]] = set()
            for arg in _flatten([*call.args, *call.kwargs.values()]):
                if isinstance(arg, Future) and (arg.task, arg.index) not in seen:
                    seen.add((arg.task, arg.index))
                    edges.append((arg.task, t, arg.size_bytes))
                elif isinstance(arg, Data):
                    inputs.append(DataPlacement(t, arg.size_bytes, arg.location))
            if call.options.output_location:
                total = sum(call.options.sizes())
                outputs.append(DataPlacement(t, total, call.options.output_location))
        return build_dag(
            self.name,
            [c.name for c in self.calls],
            [c.options.runtime_s for c in self.calls],
            edges,
            [c.options.constraint for c in self.calls],
            inputs,
            outputs,
        )


def _flatten(values: Sequence[Any]) -> Iterator[Any]:
    """Arguments, looking one level into lists, tuples and dict values (COMPSs collections)."""
    for value in values:
        if isinstance(value, list | tuple):
            yield from value
        elif isinstance(value, dict):
            yield from value.values()
        else:
            yield value
