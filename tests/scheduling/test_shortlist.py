"""The look-ahead's shortlist: FGD's best nodes, one per distinct state, within a window."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import scenario, state_with
from twinsched.model.events import Arrive, Bind, Release
from twinsched.scheduling.lookahead.shortlist import SCAN, Shortlister, shortlist


def _reference(state, key, count, window):  # type: ignore[no-untyped-def]
    n1 = state.nodes.n + 1
    order = [int(i) for i in np.argsort(-key, kind="stable") if key[i] >= 0]
    if not order:
        return []
    best = key[order[0]] // n1
    seen, out = set(), []
    for i in order[: 16 * count]:
        if key[i] // n1 < best - window:
            continue
        row = (int(state.cpu_free[i]), int(state.mem_free[i]), int(state.nodes.gpu_model[i]),
               *map(int, state.gpu_left[i]))  # fmt: skip
        if row not in seen:
            seen.add(row)
            out.append(i)
    return out[:count]


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.integers(-1, 5), min_size=1, max_size=40),
    used=st.lists(st.booleans(), min_size=40, max_size=40),
    count=st.integers(1, 5),
    window=st.integers(0, 3),
    seed=st.integers(0, 99),
    narrower=st.lists(st.booleans(), min_size=40, max_size=40) | st.none(),
)
def test_shortlist_is_the_first_node_of_each_distinct_state_best_first(
    scores: list[int],
    used: list[bool],
    count: int,
    window: int,
    seed: int,
    narrower: list[bool] | None,
) -> None:
    n = len(scores)
    sc = scenario([(4000, 8000, 2, "A")] * n, [(1000, 1000, 1, 500)] * n)
    state = state_with(sc)
    for i in range(n):  # some nodes hold a pod: two distinct states among the nodes
        if used[i]:
            state.apply(Arrive(i))
            state.apply(Bind(i, i, (0,)))
    tiebreak = np.random.default_rng(seed).permutation(n)
    key = np.where(np.array(scores) >= 0, np.array(scores) * (n + 1) + tiebreak, -1)
    if narrower is None:  # the keys alone say which nodes are eligible
        got = shortlist(state, key.astype(np.int64), count, window).tolist()
    else:  # a caller's narrower mask counts as -1 keys
        eligible = np.array(narrower[:n])
        got = shortlist(state, key.astype(np.int64), count, window, eligible).tolist()
        key = np.where(eligible, key, -1)
    assert got == _reference(state, key, count, window)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), count=st.integers(2, 3), window=st.sampled_from([5, 100]))
def test_a_shortlister_kept_over_a_run_picks_as_a_fresh_one_would(
    seed: int, count: int, window: int
) -> None:
    # Many nodes of few kinds (so that equal states repeat), keys drifting a little from one
    # decision to the next and sometimes a lot, nodes binding and releasing pods, a few pod
    # classes: what the shortlister remembers (state numbers, each class's scan floor)
    # must never change a pick.
    rng = np.random.default_rng(seed)
    n = 120
    kinds = [(4000, 8000, 2, "A"), (8000, 16000, 4, "B"), (2000, 4000, 0, "")]
    sc = scenario([kinds[i % 3] for i in range(n)], [(1000, 1000, 1, 500)] * 400)
    state = state_with(sc)
    keep = Shortlister()
    keys = {cls: rng.integers(-1, 60, n) for cls in range(3)}
    bound: list[int] = []
    floors_used = 0
    for pod in range(400):
        cls = int(rng.integers(3))
        key = keys[cls]
        moved = rng.integers(n, size=1 if rng.random() < 0.8 else 40)  # drift, or a jump
        key[moved] = rng.integers(-1, 60, moved.size)
        if rng.random() < 0.05:  # a collapse: all but two keys fall below the class's floor
            high = key[rng.integers(n, size=2)].copy()
            key[:] = np.minimum(key, 2)
            key[rng.integers(n, size=2)] = np.maximum(high, 30)
        ranked = np.where(key >= 0, key * (n + 1) + np.arange(n), -1).astype(np.int64)
        eligible = rng.random(n) < 0.9 if rng.random() < 0.3 else None
        floors_used += keep._floor.get(cls, -1) >= 0
        got = keep.pick(state, ranked, count, window, eligible, cls).tolist()
        masked = ranked if eligible is None else np.where(eligible, ranked, -1)
        assert got == _reference(state, masked, count, window)
        node = int(rng.integers(n))  # change some node's state, as binds and releases do
        if state.nodes.gpu_count[node] and state.gpu_left[node][0] >= 500:
            state.apply(Arrive(pod))
            state.apply(Bind(pod, node, (0,)))
            bound.append(pod)
        elif bound:
            state.apply(Release(bound.pop(0)))
    assert floors_used > 100 and SCAN * count < n
