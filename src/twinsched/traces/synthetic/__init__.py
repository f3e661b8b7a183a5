"""Synthetic device-edge-cloud-HPC scenarios, deterministic per seed.

:func:`continuum` builds three nodepools (``edge``, ``cloud``, ``hpc``) from the node types of
:mod:`twinsched.traces.synthetic.catalogue`, links between them, and a stream of jobs from
its pod kinds: arrivals are a Poisson process with a daily cycle, run times are lognormal.
:func:`cluster` is the same at benchmark scale (5,000 nodes, 50,000 pods by default).

Every pod fits on at least one node of the empty cluster: pod shapes that fit nowhere (say,
8-GPU training when there is no HPC pool) are never drawn. Nodes are sorted by pool and the
pods of a job are contiguous, in arrival order, so the scenario survives a round trip
through the twin format exactly. ``scenario.meta`` holds what :func:`regenerate` needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from twinsched.errors import TraceFormatError, TwinschedError
from twinsched.model.cluster import LabelVocabulary, Scenario
from twinsched.traces.synthetic.nodes import build_nodes, node_rows, pool_links, split
from twinsched.traces.synthetic.pods import build_pods, draw_jobs
from twinsched.traces.synthetic.shapes import shape_fits, shape_table

GENERATOR = "synthetic-continuum"
CLUSTER_POOL_SHARES = (0.10, 0.80, 0.10)  # edge, cloud, hpc of a benchmark cluster


def continuum(
    seed: int = 0,
    *,
    edge_nodes: int = 24,
    cloud_nodes: int = 48,
    hpc_nodes: int = 16,
    pods: int = 2000,
    hours: float = 24.0,
) -> Scenario:
    """A small continuum: edge, cloud and HPC pools and ``pods`` pods over ``hours``."""
    params = {"edge_nodes": edge_nodes, "cloud_nodes": cloud_nodes, "hpc_nodes": hpc_nodes}
    return _generate(
        "synthetic/continuum",
        "continuum",
        seed,
        (edge_nodes, cloud_nodes, hpc_nodes),
        pods,
        hours,
        params,
    )


def cluster(
    seed: int = 0, nodes: int = 5000, *, pods: int = 50_000, hours: float = 24.0
) -> Scenario:
    """A benchmark-scale cluster: mostly cloud nodes (a third with GPUs), some edge and HPC."""
    counts = split(nodes, np.array(CLUSTER_POOL_SHARES))
    return _generate(
        f"synthetic/cluster-{nodes}",
        "cluster",
        seed,
        tuple(counts.tolist()),
        pods,
        hours,
        {"nodes": nodes},
    )


def regenerate(meta: Mapping[str, object]) -> Scenario:
    """The scenario whose ``meta`` is given (as written by :func:`continuum` or :func:`cluster`)."""
    params = meta.get("params")
    if meta.get("generator") != GENERATOR or not isinstance(params, Mapping):
        raise TwinschedError(f"not a {GENERATOR} scenario: {dict(meta)}")
    kwargs = {k: v for k, v in params.items() if k != "function"}
    if params.get("function") == "continuum":
        return continuum(**kwargs)
    if params.get("function") == "cluster":
        return cluster(**kwargs)
    raise TwinschedError(f"unknown {GENERATOR} function {params.get('function')!r}")


def read_params(path: Path) -> dict[str, object]:
    """Generator parameters from ``path``: a function name or a ``.json`` file of them.

    ``continuum`` or ``cluster`` names the function; a ``.json`` file holds
    ``{"function": "continuum", "seed": 3, ...}``.
    """
    if path.suffix != ".json":
        return {"function": str(path)}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceFormatError(
            str(path), 1, "-", f"cannot read generator parameters: {exc}"
        ) from None
    if not isinstance(loaded, dict) or "function" not in loaded:
        raise TraceFormatError(str(path), 1, "function", "expected an object with 'function'")
    return loaded


def _generate(
    name: str,
    function: str,
    seed: int,
    pool_sizes: tuple[int, ...],
    n_pods: int,
    hours: float,
    params: Mapping[str, object],
) -> Scenario:
    if min(pool_sizes) < 0 or sum(pool_sizes) == 0 or n_pods < 0 or not hours > 0:
        raise TwinschedError(
            f"bad generator parameters: pools {pool_sizes}, pods {n_pods}, hours {hours}"
        )
    rng = np.random.default_rng(seed)
    rows = node_rows(rng, pool_sizes)
    links = pool_links()
    shapes = shape_table()
    node_labels = {label for labels in rows.labels for label in labels}
    probe = LabelVocabulary(sorted(node_labels.union(*(s.labels() for s in shapes))))
    fits = shape_fits(shapes, build_nodes(rows, probe), probe, links)
    if not fits.any():
        raise TwinschedError(f"no pod kind fits on any node of pools {pool_sizes}")
    jobs = draw_jobs(rng, shapes, fits, n_pods, hours)
    drawn = [shapes[s] for s in np.unique(jobs.shape).tolist()]
    vocab = LabelVocabulary(sorted(node_labels.union(*(s.labels() for s in drawn))))
    nodes = build_nodes(rows, vocab)
    return Scenario(
        name=name,
        nodes=nodes,
        pods=build_pods(jobs, shapes, vocab, nodes.gpu_models),
        links=links,
        labels=vocab,
        meta={
            "generator": GENERATOR,
            "params": {
                "function": function,
                "seed": seed,
                **params,
                "pods": n_pods,
                "hours": hours,
            },
        },
    )
