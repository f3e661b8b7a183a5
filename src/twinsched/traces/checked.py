"""The last check of every reader: the scenario it built keeps the ranges of :mod:`model.ranges`.

Readers check each field where they parse it (naming the line); this catches what only the
whole scenario shows (a reference to a missing job or pool, a duplicate name, a derived value
out of range) before the scenario reaches the store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from twinsched.errors import TraceFormatError
from twinsched.model.cluster import Scenario
from twinsched.model.ranges import scenario_problem

LineOf = Callable[[str, int], int]  # (table, 0-based row) -> line of the file


def checked(scenario: Scenario, path: Path | str, line_of: LineOf | None = None) -> Scenario:
    """``scenario`` itself, or :class:`TraceFormatError` naming the first bad value."""
    problem = scenario_problem(scenario)
    if problem is None:
        return scenario
    if line_of is not None:
        line, field = line_of(problem.table, problem.row), problem.field
    else:
        line, field = 0, f"{problem.table}[{problem.row}].{problem.field}"
    raise TraceFormatError(str(path), line, field, problem.problem)
