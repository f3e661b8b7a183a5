"""Each FGD-study policy's scores, worked out by hand on tiny clusters."""

from __future__ import annotations

import numpy as np

from tests.builders import context, scenario, state_with, view
from twinsched.scheduling.framework import min_max_normalize
from twinsched.scheduling.heuristics.fgd_study import BestFit, DotProd, GpuClustering, GpuPacking

ALL = np.arange(2)


def two_nodes() -> tuple:
    # node 0: 32 cores, 2 GPUs; node 1: 64 cores, 8 GPUs. Pod: 4 cores, half a GPU.
    sc = scenario([(32000, 65536, 2, "T4"), (64000, 65536, 8, "T4")], [(4000, 1024, 1, 500)])
    return sc, state_with(sc), view(sc, 0)


def test_bestfit_raw_and_normalised() -> None:
    _, st, pod = two_nodes()
    raw = BestFit().score(st, pod, ALL).values
    # s0 = .5*28000/128000 + .5*1500/8000 = .203125 -> int(79.6875) = 79
    # s1 = .5*60000/128000 + .5*7500/8000 = .703125 -> int(29.6875) = 29
    assert raw.tolist() == [79, 29]
    assert min_max_normalize(raw).tolist() == [100, 0]
    assert min_max_normalize(np.array([7, 7])).tolist() == [0, 0]


def test_dotprod() -> None:
    _, st, pod = two_nodes()
    # v0=(.25,.25), r=(.03125,.0625): dot=.0234375 -> 100(1-.01171875)=98.8 -> 98
    # v1=(.5,1):                       dot=.078125  -> 100(1-.0390625)=96.1 -> 96
    assert DotProd().score(st, pod, ALL).values.tolist() == [98, 96]


def test_gpupacking_three_cases() -> None:
    nodes = [(64000, 65536, 2, "T4"), (64000, 65536, 4, "T4")]
    pods = [(1000, 0, 1, 400), (1000, 0, 1, 500), (1000, 0, 2, 1000), (1000, 0, 0, 0)]
    sc = scenario(nodes, pods)
    st = state_with(sc, [(0, 1, (2,))])  # node 1 GPUs left: [1000, 1000, 600, 1000]
    share, multi, cpu_only = view(sc, 1), view(sc, 2), view(sc, 3)
    # empty node with 2 free GPUs: max(33 - 2, 2) = 31; node 1 shares GPU 2 (600 left):
    # 100 - (600*100/1000)/10 = 94
    assert GpuPacking().score(st, share, ALL).values.tolist() == [31, 94]
    # 2 whole GPUs on used node 1: max(50 - 2, 33) = 48
    assert GpuPacking().score(st, multi, ALL).values.tolist() == [31, 48]
    assert GpuPacking().score(st, cpu_only, ALL).values.tolist() == [0, 0]


def test_gpuclustering_tags() -> None:
    nodes = [(64000, 65536, 2, "T4"), (64000, 65536, 2, "T4"), (64000, 65536, 2, "T4")]
    pods = [(1000, 0, 1, 300), (1000, 0, 1, 1000), (1000, 0, 1, 300), (1000, 0, 1, 200)]
    sc = scenario(nodes, pods)
    # node 0 holds a share pod; node 1 a 1-GPU pod and a share pod; node 2 is empty
    st = state_with(sc, [(0, 0, (0,)), (1, 1, (0,)), (2, 1, (1,))])
    share = view(sc, 3)
    # base = 25*(8000-idle)//8000: idle 1700 -> 19, 700 -> 22, 2000 -> 18
    assert GpuClustering().score(st, share, np.arange(3)).values.tolist() == [
        19 + 75,
        22 + 50,
        18 + 25,
    ]


def test_bestfit_picks_tightest_node_and_gpu() -> None:
    from twinsched.scheduling.plugin_scheduler import PluginScheduler

    sc = scenario(
        [(32000, 65536, 2, "T4"), (64000, 65536, 8, "T4")], [(1000, 0, 1, 200), (4000, 0, 1, 500)]
    )
    st = state_with(sc, [(0, 0, (1,))])  # node 0: GPU 1 has 800 left
    sched = PluginScheduler("bestfit", [(BestFit(), 1)])
    sched.reset(st, context(sc))
    from twinsched.model.events import Arrive

    st.apply(Arrive(1))
    decision = sched.place(st, view(sc, 1), np.array([True, True]))
    assert (decision.node, decision.gpus) == (0, (1,))  # the GPU with the least share that fits
