"""Metric families of a hand-checked state: one sample per node, values in base units."""

from __future__ import annotations

import numpy as np

from tests import builders
from twinsched.metrics import exposition as ex
from twinsched.model.events import Arrive, NodeDown
from twinsched.traces import synthetic

# n0: 4 cores, 8 GiB, 2 GPUs; n1: 2 cores, 1 GiB, no GPU.
NODES = [(4000, 8192, 2, "V100"), (2000, 1024, 0, "")]
PODS = [(1000, 2048, 1, 500), (500, 512, 1, 1000), (250, 256, 0, 0), (100, 100, 0, 0)]


def _state() -> tuple[ex.Family, ...]:
    sc = builders.scenario(NODES, PODS)
    st = builders.state_with(sc, [(0, 0, (0,)), (1, 0, (1,)), (2, 1, ())])
    return tuple(ex.families(st))


def _by_name(fams: tuple[ex.Family, ...]) -> dict[str, dict[str, float]]:
    return {f.name: {labels.get("node", labels.get("phase", "")): v for labels, v in f.samples()}
            for f in fams}  # fmt: skip


def test_node_values_in_base_units() -> None:
    got = _by_name(_state())
    assert got[ex.CPU_CAPACITY] == {"n0": 4.0, "n1": 2.0}
    assert got[ex.CPU_ALLOCATED] == {"n0": 1.5, "n1": 0.25}
    assert got[ex.MEMORY_CAPACITY] == {"n0": 8192 * 2**20, "n1": 1024 * 2**20}
    assert got[ex.MEMORY_ALLOCATED] == {"n0": 2560 * 2**20, "n1": 256 * 2**20}
    assert got[ex.GPU_CAPACITY] == {"n0": 2.0, "n1": 0.0}
    assert got[ex.GPU_ALLOCATED] == {"n0": 2.0, "n1": 0.0}  # GPU 0 half, GPU 1 whole
    assert got[ex.GPU_MILLI_ALLOCATED] == {"n0": 1500.0, "n1": 0.0}
    assert got[ex.PODS_RUNNING] == {"n0": 2.0, "n1": 1.0}
    assert got[ex.NODE_UP] == {"n0": 1.0, "n1": 1.0}


def test_pods_by_phase_counts_every_pod() -> None:
    phases = _by_name(_state())[ex.PODS_BY_PHASE]
    assert phases["running"] == 3 and phases["not_arrived"] == 1
    assert sum(phases.values()) == len(PODS)


def test_node_down_and_pending_pod() -> None:
    sc = builders.scenario(NODES, PODS)
    st = builders.state_with(sc)
    st.apply(NodeDown(1))
    st.apply(Arrive(3))
    got = _by_name(tuple(ex.families(st)))
    assert got[ex.NODE_UP] == {"n0": 1.0, "n1": 0.0}
    assert got[ex.PODS_BY_PHASE]["pending"] == 1
    assert got[ex.GPU_ALLOCATED] == {"n0": 0.0, "n1": 0.0}


def test_labels_name_node_and_nodepool_of_every_node() -> None:
    sc = synthetic.continuum()
    from twinsched.model.state import ClusterState

    fams = ex.node_families(ClusterState(sc.nodes, sc.pods, sc.links))
    assert {f.name for f in fams} == set(ex.NODE_HELP)
    for fam in fams:
        assert fam.label_names == ("node", "nodepool")
        assert [r[0] for r in fam.rows] == list(sc.nodes.names)
        pools = [sc.nodes.pool_names[p] for p in sc.nodes.pool.tolist()]
        assert [r[1] for r in fam.rows] == pools
        assert fam.values.shape == (sc.nodes.n,) and np.all(np.isfinite(fam.values))


def test_clock_family_has_no_labels() -> None:
    fam = ex.clock_family(12.5)
    assert fam.name == ex.SIM_TIME and fam.samples() == [({}, 12.5)]
