"""``synthetic``: the continuum generator; its parameters are stored so the scenario regenerates.

PATH is ``continuum`` or ``cluster`` (the generator function) or a JSON file
``{"function": "continuum", "seed": 3, ...}``; options override parameters (``seed=3``,
``pods=500``). The stored ``meta`` holds ``generator`` and ``params``, and
``twinsched.traces.synthetic.regenerate(meta)`` rebuilds the same arrays bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from twinsched.errors import TraceFormatError, UnknownNameError
from twinsched.model.cluster import Scenario
from twinsched.store.importers import whole_option
from twinsched.traces.synthetic import GENERATOR, read_params, regenerate

LIMITS = {"seed": (0, 2**32 - 1), "pods": (1, 10**6)}  # the rest: node counts in [0, 10^5]
OPTIONS = {
    "seed": "random seed (default 0)",
    "pods": "number of pods",
    "hours": "length of the arrival window",
    "edge_nodes": "continuum: edge nodes",
    "cloud_nodes": "continuum: cloud nodes",
    "hpc_nodes": "continuum: HPC nodes",
    "nodes": "cluster: total nodes",
}


def import_synthetic(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    """The generator's scenario as ``name``; options override its parameters."""
    params = read_params(path)
    for key, value in options.items():
        if key not in OPTIONS:
            raise UnknownNameError("synthetic option", key, list(OPTIONS))
        if key == "hours":
            params[key] = _hours(path, value)
        else:
            params[key] = whole_option(options, key, path, *LIMITS.get(key, (0, 100_000)))
    scenario = regenerate({"generator": GENERATOR, "params": params})
    return [replace(scenario, name=name)]


def _hours(path: Path, text: str) -> float:
    try:
        hours = float(text)
    except ValueError:
        hours = math.nan
    if not 0 < hours <= 100_000:
        problem = f"expected a number of hours in (0, 100000], got {text!r}"
        raise TraceFormatError(str(path), 0, "option hours", problem)
    return hours
