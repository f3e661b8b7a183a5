"""Data sets for the synthetic continuum: each job reads one input, some write an output.

An input starts where it was produced: at the edge for half the jobs (sensors), in the
cloud or at the HPC centre for the rest; half the inputs sit on one node of their pool (only
that node reads them locally), the others on the pool's shared storage. Sizes are
log-normal around ``median_gb``. A third of the jobs write an output a tenth of their
input's size, kept in the cloud. Drawn from the seed's own stream: the same seed gives the
same data sets, and the workload's draws are not shifted.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.model.data import DataSpec
from twinsched.model.datasets import with_data

DATA_STREAM = 0xDA7A  # mixed into the seed: these draws never shift the workload's
HOME_POOL_SHARES = {"edge": 0.5, "cloud": 0.3, "hpc": 0.2}
OUTPUT_POOL = "cloud"
MIN_BYTES = 10**6


def continuum_data(
    scenario: Scenario, seed: int, *, median_gb: float = 2.0, sigma: float = 1.0
) -> Scenario:
    """``scenario`` (a synthetic continuum) with an input data set per job, outputs for some."""
    rng = np.random.default_rng([seed, DATA_STREAM])
    nodes, pods = scenario.nodes, scenario.pods
    homes = [p for p in HOME_POOL_SHARES if p in nodes.pool_names]
    shares = np.array([HOME_POOL_SHARES[p] for p in homes])
    jobs = len(pods.job_names)
    home = rng.choice(len(homes), size=jobs, p=shares / shares.sum())
    on_node = rng.random(jobs) < 0.5
    size = np.maximum(MIN_BYTES, median_gb * 1e9 * rng.lognormal(0.0, sigma, jobs)).astype(int)
    writes = rng.random(jobs) < 1 / 3
    node_pick = rng.random(jobs)
    datasets: list[dict[str, object]] = []
    access: dict[str, dict[str, list[str]]] = {}
    for j, job in enumerate(pods.job_names):
        pool = homes[int(home[j])]
        members = np.flatnonzero(nodes.pool == nodes.pool_names.index(pool))
        replica: dict[str, str] = {"pool": pool}
        if on_node[j] and members.size:
            replica = {"node": nodes.names[int(members[int(node_pick[j] * members.size)])]}
        datasets.append({"id": f"{job}-in", "size_bytes": int(size[j]), "replicas": [replica]})
        if writes[j] and OUTPUT_POOL in nodes.pool_names:
            out = {"id": f"{job}-out", "size_bytes": max(MIN_BYTES, int(size[j]) // 10)}
            datasets.append(out | {"replicas": [{"pool": OUTPUT_POOL}]})
    written = {str(d["id"]) for d in datasets if str(d["id"]).endswith("-out")}
    for i, name in enumerate(pods.names):
        job = pods.job_names[int(pods.job[i])]
        acc = {"reads": [f"{job}-in"]}
        if f"{job}-out" in written:
            acc["writes"] = [f"{job}-out"]
        access[name] = acc
    spec = DataSpec.model_validate({"datasets": datasets, "access": access})
    return with_data(scenario, spec)
