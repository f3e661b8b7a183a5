"""FGD: typical pods, node fragmentation and the choice of GPU, checked by hand."""

from __future__ import annotations

import numpy as np

from tests.builders import context, scenario, state_with, view
from twinsched.metrics.fragmentation import fragmentation, row_fragmentation, typical_pods
from twinsched.scheduling.heuristics.fgd import FragmentationGradient, fgd_score, one_fgd_score
from twinsched.traces import synthetic


def test_typical_pods_cover_95_percent_by_frequency() -> None:
    pods = [(1000, 0, 1, 500)] * 60 + [(2000, 0, 1, 1000)] * 30 + [(500, 0, 0, 0)] * 6
    pods += [(8000, 0, 8, 1000)] * 4
    sc = scenario([(64000, 65536, 8, "T4")], pods)
    t = typical_pods(sc.pods)
    # 60% + 30% + 6% = 96% >= 95%: the 8-GPU shape (4%) is left out
    assert t.gpu_milli.tolist() == [500, 1000, 0]
    np.testing.assert_allclose(t.weight, [60 / 96, 30 / 96, 6 / 96])


def test_fragmentation_by_hand() -> None:
    sc = scenario([(64000, 65536, 4, "T4")], [(1000, 0, 1, 500)] * 3 + [(1000, 0, 2, 1000)])
    t = typical_pods(sc.pods)  # 75% half-GPU pods, 25% 2-GPU pods
    left = np.array([[1000, 300, 600, 0]])
    # half-GPU pod fits (GPUs 0 and 2): fragment = GPUs below 500 = 300
    # 2-GPU pod needs 2 free GPUs, only 1: all idle (1900) is fragment
    expected = 0.75 * 300 + 0.25 * 1900
    got = fragmentation(np.array([64000]), left, np.array([0]), t)
    np.testing.assert_allclose(got, [expected])
    # a node without the CPU for any typical pod: everything idle is fragment
    got = fragmentation(np.array([500]), left, np.array([0]), t)
    np.testing.assert_allclose(got, [1900.0])


def test_fgd_takes_the_gpu_that_adds_least_fragmentation() -> None:
    # workload: half-GPU pods only. Node 0 GPUs left [700, 1000].
    sc = scenario([(64000, 65536, 2, "T4")], [(1000, 0, 1, 300), (1000, 0, 1, 500)])
    st = state_with(sc, [(0, 0, (0,))])
    plugin = FragmentationGradient()
    ctx = context(sc)
    ctx.workload = sc.pods.take(np.array([1, 1, 1]))  # typical pod: 500 milli
    plugin.prepare(st, ctx)
    scores = plugin.score(st, view(sc, 1), np.array([0]))
    # GPU 0: 700 -> 200 makes 200 fragment: int(100 sigmoid(-0.2)) = 45
    # GPU 1: 1000 -> 500 keeps a usable half: int(100 sigmoid(0)) = 50  <- chosen
    assert scores.values.tolist() == [50]
    assert scores.share_gpu is not None and scores.share_gpu.tolist() == [1]


def test_a_nodes_fragmentation_is_exact_whatever_rows_it_is_computed_with() -> None:
    """Weights are integer pod counts, so a row's value does not depend on the batch: a
    CPU pod that changes no GPU scores exactly 50 (a float product's last bit would move
    with the batch and could make it 49 on some nodes, and FGD's ties with it)."""
    rng = np.random.default_rng(0)
    shapes = [(c, 0, g, m) for c in (500, 2000, 4000) for g, m in ((0, 0), (1, 300), (1, 500),
              (1, 1000), (2, 1000))]  # fmt: skip
    counts = rng.integers(5, 60, size=len(shapes))
    pods = [shape for shape, n in zip(shapes, counts, strict=True) for _ in range(n)]
    t = typical_pods(scenario([(64000, 65536, 4, "T4")], pods).pods, coverage=1.0)
    left = rng.choice([0, 150, 333, 500, 700, 1000], size=(517, 4))
    cpu = rng.choice([0, 900, 1500, 3000, 64000], size=517)
    model = np.zeros(517, dtype=np.int64)
    batch = fragmentation(cpu, left, model, t)
    for i in rng.choice(517, size=40, replace=False):
        alone = fragmentation(cpu[i : i + 1], left[i : i + 1], model[:1], t)
        assert alone[0] == batch[i]  # bit for bit
    order = rng.permutation(517)
    assert np.array_equal(fragmentation(cpu[order], left[order], model, t), batch[order])


def test_one_rows_fragmentation_in_python_equals_the_arrays_bit_for_bit() -> None:
    """What FGD's single-node path computes (:func:`row_fragmentation`) is the float the
    arrays give, on every GPU model (and none), GPUs full or empty, CPU short or not."""
    sc = synthetic.cluster(seed=2, nodes=300)
    t = typical_pods(sc.pods)
    rng = np.random.default_rng(1)
    k, g = 600, sc.nodes.gpu_count.max()
    left = rng.choice([0, 100, 250, 500, 750, 1000], size=(k, g))
    left[:30] = 0  # nothing free
    cpu = rng.choice([0, 500, 4000, 16000, 96000], size=k)
    model = rng.choice(np.append(np.unique(sc.nodes.gpu_model), -1), size=k)
    want = fragmentation(cpu, left, model, t).tolist()
    rows = zip(cpu.tolist(), left.tolist(), model.tolist(), strict=True)
    assert [row_fragmentation(c, row, m, t) for c, row, m in rows] == want
    assert len(set(want)) > 50  # varied rows, not one value


def test_one_pairs_score_in_python_equals_the_arrays() -> None:
    """:func:`one_fgd_score` (``math.exp``) against :func:`fgd_score` (NumPy), whole and
    fractional differences alike, with 0 (exactly 50)."""
    before = np.linspace(-30000.0, 30000.0, 24001)
    after = np.append(np.full(24000, 1234.5), before[-1])
    want = fgd_score(before, after).tolist()
    got = [one_fgd_score(b, a) for b, a in zip(before.tolist(), after.tolist(), strict=True)]
    assert got == want and got[-1] == 50
