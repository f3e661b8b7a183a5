"""The one door for state changes, and its invariant checks."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import scenario, state_with
from twinsched.errors import InvariantError, TwinschedError
from twinsched.model.events import Arrive, Bind, Phase, Reject, Release
from twinsched.model.state import ClusterState


def sc2():
    return scenario([(8000, 8192, 2, "T4")], [(2000, 1024, 1, 300), (2000, 1024, 2, 1000)])


def test_bind_and_release_conserve_resources() -> None:
    sc = sc2()
    st = state_with(sc, [(0, 0, (1,))])
    assert st.cpu_free.tolist() == [6000] and st.gpu_left.tolist() == [[1000, 700]]
    assert st.allocated_gpu_milli == 300 and st.gpu_tags[0, 0] == 1
    st.apply(Release(0))
    assert st.cpu_free.tolist() == [8000] and st.gpu_left.tolist() == [[1000, 1000]]
    assert st.phase[0] == Phase.SUCCEEDED and st.gpu_tags[0].sum() == 0


def test_overcommit_is_caught_by_validate() -> None:
    sc = sc2()
    st = state_with(sc, [(0, 0, (0,))])
    st.apply(Arrive(1))
    with pytest.raises(InvariantError, match="over-committed"):
        st.apply(Bind(1, 0, (0, 1)))  # GPU 0 already holds 300 milli


def test_phase_rules() -> None:
    sc = sc2()
    st = state_with(sc)
    with pytest.raises(TwinschedError, match="expected PENDING"):
        st.apply(Bind(0, 0, (0,)))
    st.apply(Arrive(0))
    st.apply(Reject(0, "InsufficientGPU"))
    assert st.reasons == {0: "InsufficientGPU"}
    with pytest.raises(TwinschedError, match="needs 2 GPUs"):
        st.apply(Arrive(1))
        st.apply(Bind(1, 0, (0,)))


def test_changes_log_every_node_change() -> None:
    sc = sc2()
    st = state_with(sc, [(0, 0, (0,))])
    st.apply(Release(0))
    assert st.changes == [0, 0] and st.version.tolist() == [2]
    np.testing.assert_array_equal(st.gpu_idle, [2000])


def test_pod_dtypes_cover_every_pod_column() -> None:
    """The one table of pod column dtypes (used by the twin converter and the store)."""
    import dataclasses

    from twinsched.model.cluster import POD_DTYPES, Pods

    fields = {f.name for f in dataclasses.fields(Pods)} - {"names", "job_names"}
    assert set(POD_DTYPES) == fields
    sc = scenario([(8000, 8192, 2, "T4")], [(1, 0, 0, 0)])
    for column, dtype in POD_DTYPES.items():
        assert getattr(sc.pods, column).dtype == dtype, column


def test_a_copy_is_independent_and_equal() -> None:
    from twinsched.model.events import Arrive, Bind
    from twinsched.traces import synthetic

    sc = synthetic.continuum()
    live = ClusterState(sc.nodes, sc.pods, sc.links, validate=True)
    live.apply(Arrive(0))
    live.apply(Bind(0, 0, tuple(range(int(sc.pods.gpu_count[0])))))
    copy = live.copy()
    copy.check_invariants()
    for name in ("free", "gpu_left", "phase", "pod_node", "pod_gpus", "gpu_tags", "up"):
        assert (getattr(copy, name) == getattr(live, name)).all(), name
    copy.apply(Arrive(1))
    assert int(live.phase[1]) != int(copy.phase[1])  # nothing is shared but the inputs
    assert copy.cpu_free.base is copy.free  # the named columns are views of its own matrix


def test_the_event_log_is_kept_from_the_first_ask() -> None:
    from twinsched.model.events import Arrive
    from twinsched.traces import synthetic

    sc = synthetic.continuum()
    state = ClusterState(sc.nodes, sc.pods, sc.links)
    state.apply(Arrive(0))
    assert state.events is None  # nobody watches: no log
    log = state.log_events()
    state.apply(Arrive(1))
    assert log == [Arrive(1)] and state.log_events() is log
