"""``synthetic``: the continuum generator; its parameters are stored so the scenario regenerates.

PATH is ``continuum`` or ``cluster`` (the generator function) or a JSON file
``{"function": "continuum", "seed": 3, ...}``; options override parameters (``seed=3``,
``pods=500``). The stored ``meta`` holds ``generator`` and ``params``, and
``twinsched.traces.synthetic.regenerate(meta)`` rebuilds the same arrays bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from twinsched.errors import UnknownNameError
from twinsched.model.cluster import Scenario
from twinsched.traces.synthetic import GENERATOR, read_params, regenerate

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
        params[key] = float(value) if key == "hours" else int(value)
    scenario = regenerate({"generator": GENERATOR, "params": params})
    return [replace(scenario, name=name)]
