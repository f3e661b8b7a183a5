"""Where batches of runs go, one set of options for every command that has such batches:
``--executor local`` (processes) or ``--executor ray`` (``--address`` of a running cluster,
or a local Ray of ``--num-cpus`` CPUs started for the command)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.options import int_opt

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor


class ExecutorName(StrEnum):
    local = "local"
    ray = "ray"


ExecutorOpt = Annotated[
    ExecutorName, typer.Option(help="local processes or Ray (--address, --num-cpus)")
]
AddressOpt = Annotated[
    str | None,
    typer.Option(help="a running Ray cluster (e.g. 127.0.0.1:6379); default: start a local one"),
]
CpusOpt = Annotated[
    int, int_opt("CPUs of the local Ray started for the command (no --address)", 1, 1024)
]


def ray_executor(name: ExecutorName, address: str | None, num_cpus: int) -> Executor | None:
    """The Ray executor the options ask for; None for ``--executor local``."""
    if name is not ExecutorName.ray:
        return None
    from twinsched.experiments.ray_executor import RayExecutor

    return RayExecutor(address, num_cpus)
