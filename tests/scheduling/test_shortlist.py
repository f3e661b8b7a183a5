"""The look-ahead's shortlist: FGD's best nodes, one per distinct state, within a window."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import scenario, state_with
from twinsched.model.events import Arrive, Bind
from twinsched.scheduling.lookahead.shortlist import shortlist


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
