"""What a seed varies in a workflow's run on the continuum: a real run's chance, drawn once.

Held-out seeds are a test only when a seed changes the run. :func:`draw_run` draws, from one
seed and the workflow's name (so every method meets the same draw, and two workflows on one
seed differ), a copy of the workflow and of the cluster with:

* **where its inputs start**: one node of the inputs' nodepool (the edge in
  ``bench/workflows_controller.py``) holds all the workflow's external inputs, as a sensor
  or a gateway would; its neighbours read them over the pool's own network
  (``model/datasets.py``'s node replicas);
* **background load on the links**: each link (a pair of nodepools, both directions, and
  each pool's own network) keeps a share of its bandwidth drawn uniformly in
  [:data:`LINK_SHARE_MIN`, 1] for the whole run;
* **runtime noise**: each task's work is multiplied by ``exp(N(0, RUNTIME_SIGMA))``
  (WfCommons instances record one run per task, so the spread is an assumption).

Every planner sees the drawn values (no estimation error): the seed changes the instance,
not what the planners know of it. Pure: the same workflow, cluster and seed give the same
draw.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np

from twinsched.model.cluster import Links, Scenario
from twinsched.workflows.dag import DAG

LINK_SHARE_MIN = 0.5  # background load takes up to half of a link
RUNTIME_SIGMA = 0.1  # log-normal noise on each task's work


def rng_for(name: str, seed: int) -> np.random.Generator:
    """A generator for ``seed`` and the workflow ``name`` (stable across processes)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def draw_links(links: Links, rng: np.random.Generator) -> Links:
    """``links`` with each undirected link's bandwidth scaled by a share drawn in
    [LINK_SHARE_MIN, 1] (symmetric: one share per pair)."""
    p = links.bandwidth_mbps.shape[0]
    share = rng.uniform(LINK_SHARE_MIN, 1.0, size=(p, p))
    share = np.triu(share) + np.triu(share, 1).T
    bandwidth = np.asarray(links.bandwidth_mbps, dtype=np.float64) * share
    return Links(latency_ms=np.asarray(links.latency_ms).copy(), bandwidth_mbps=bandwidth)


def draw_inputs(dag: DAG, scenario: Scenario, rng: np.random.Generator) -> DAG:
    """``dag`` with its external inputs on one node drawn among those of their nodepool."""
    nodes = scenario.nodes
    inputs = []
    chosen: dict[str, str] = {}
    for placement in dag.inputs:
        if placement.location not in chosen:
            pool = nodes.pool_names.index(placement.location)
            members = np.flatnonzero(nodes.pool == pool)
            chosen[placement.location] = nodes.names[int(rng.choice(members))]
        inputs.append(replace(placement, node=chosen[placement.location]))
    return replace(dag, inputs=tuple(inputs))


def draw_run(dag: DAG, scenario: Scenario, seed: int, on_node: bool = True) -> tuple[DAG, Scenario]:
    """The workflow and the cluster as seed ``seed`` has them (module docstring);
    ``on_node=False`` leaves the inputs in their nodepool's storage (links and runtimes
    drawn alike)."""
    rng = rng_for(dag.name, seed)
    links = draw_links(scenario.links, rng)
    work = dag.work_s * np.exp(rng.normal(0.0, RUNTIME_SIGMA, size=dag.n))
    drawn = draw_inputs(replace(dag, work_s=work), scenario, rng)
    return (drawn if on_node else replace(dag, work_s=work)), replace(scenario, links=links)
