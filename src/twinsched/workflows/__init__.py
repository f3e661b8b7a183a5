"""Task workflows across the continuum: a COMPSs-style DAG API, WfCommons import, list
schedulers (COMPSs priorities, HEFT, CPOP, portfolio), simulation on edge/cloud/HPC nodes.

Importing this package is cheap: matplotlib, Typer and Ray are imported where they are used.
"""

from twinsched.workflows.api import Data, Future, Task, Workflow, data, task
from twinsched.workflows.bounds import Costs, LowerBounds, costs, lower_bounds
from twinsched.workflows.dag import (
    DAG,
    Constraint,
    CycleError,
    DataPlacement,
    build_dag,
    constraint,
)
from twinsched.workflows.placement import Schedule, place
from twinsched.workflows.platform import Platform, from_scenario, three_tier
from twinsched.workflows.registry import create, describe, names, register
from twinsched.workflows.wfcommons import find_instance, instance_paths, load_instance

__all__ = [
    "DAG",
    "Constraint",
    "Costs",
    "CycleError",
    "Data",
    "DataPlacement",
    "Future",
    "LowerBounds",
    "Platform",
    "Schedule",
    "Task",
    "Workflow",
    "build_dag",
    "constraint",
    "costs",
    "create",
    "data",
    "describe",
    "find_instance",
    "from_scenario",
    "instance_paths",
    "load_instance",
    "lower_bounds",
    "names",
    "place",
    "register",
    "task",
    "three_tier",
]
