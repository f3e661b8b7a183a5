from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tests.envs.conftest import SMALL, masked_random
from twinsched.envs import ENV_ID, ClusterPlacementEnv, EnvConfig, RewardWeights
from twinsched.envs.episode import IneligibleActionError, load_variant
from twinsched.envs.rewards import gpu_pct
from twinsched.errors import TwinschedError
from twinsched.model.events import Phase
from twinsched.scheduling import filters
from twinsched.scheduling.ai.features import N_FEATURES, node_features
from twinsched.scheduling.framework import Placement
from twinsched.sim import run_fillup


def run_episode(
    env: ClusterPlacementEnv, seed: int, policy_seed: int = 0
) -> tuple[list[dict[str, Any]], list[float], dict[str, Any], dict[str, Any]]:
    """Observations, rewards, first and last info of one episode under masked random actions."""
    act = masked_random(policy_seed)
    obs, first = env.reset(seed=seed)
    observations, rewards, info = [obs], [], first
    while True:
        obs, r, terminated, truncated, info = env.step(act(env))
        observations.append(obs)
        rewards.append(r)
        if terminated or truncated:
            return observations, rewards, first, info


def test_registered_env_passes_the_checker() -> None:
    env = gym.make(ENV_ID, config=replace(SMALL, invalid_action="fallback"))
    check_env(env.unwrapped)


def test_checker_on_an_openb_variant() -> None:
    config = EnvConfig(variants=("default",), max_start_offset=0.1, invalid_action="fallback")
    env = gym.make(ENV_ID, config=config)
    check_env(env.unwrapped)
    assert env.unwrapped.observation_space["nodes"].shape == (1213, N_FEATURES)


def test_same_seed_same_episode() -> None:
    a = run_episode(ClusterPlacementEnv(SMALL), seed=7)
    b = run_episode(ClusterPlacementEnv(SMALL), seed=7)
    assert a[1] == b[1] and a[3] == b[3]
    for x, y in zip(a[0], b[0], strict=True):
        assert np.array_equal(x["nodes"], y["nodes"])
        assert np.array_equal(x["action_mask"], y["action_mask"])


def test_reset_seed_draws_the_start_and_order() -> None:
    env = ClusterPlacementEnv(SMALL)
    starts = {env.reset(seed=s)[1]["start"] for s in range(6)}
    assert len(starts) > 1


def test_masking_never_yields_an_ineligible_node() -> None:
    """Random masked actions over whole episodes, invariants checked after every event."""
    env = ClusterPlacementEnv(replace(SMALL, max_start_offset=0.0))
    for seed in range(3):
        act = masked_random(seed)
        env.reset(seed=seed)
        done, steps = False, 0
        while not done:
            state, pod = env.episode.state, env.episode.views[env.episode.cursor]
            fresh = filters.eligible(state, pod, np.arange(state.nodes.n))[0]
            assert np.array_equal(env.action_masks(), fresh)
            node = act(env)
            _, _, terminated, truncated, _ = env.step(node)
            assert state.pod_node[pod.index] == node
            done, steps = terminated or truncated, steps + 1
        assert terminated and steps > 50
        assert not np.any(env.episode.state.phase == Phase.PENDING)


def test_observation_is_the_feature_rows_of_every_node() -> None:
    env = ClusterPlacementEnv(SMALL)
    act = masked_random(1)
    env.reset(seed=3)
    ep = env.episode
    for _ in range(40):
        obs, *_ = env.step(act(env))
        if ep.done:
            break
        nodes = np.arange(ep.state.nodes.n)
        rows, _ = node_features(
            ep.state, ep.views[ep.cursor], nodes, ep.features.typical, ep.features.scales
        )
        assert np.array_equal(obs["nodes"], rows)


def test_share_pods_take_the_gpu_of_the_features() -> None:
    env = ClusterPlacementEnv(SMALL)
    act = masked_random(2)
    env.reset(seed=0)
    ep, shares = env.episode, 0
    while not ep.done:
        pod = ep.views[ep.cursor]
        _, share_gpu = ep.features.get(pod)
        node = act(env)
        expected = 1 << int(share_gpu[node]) if pod.is_share else None
        env.step(node)
        if expected is not None:
            shares += 1
            assert ep.state.pod_gpus[pod.index] == expected
    assert shares > 5


@pytest.mark.parametrize("offset", [0.0, 0.6])
def test_return_is_the_allocation_gained(offset: float) -> None:
    env = ClusterPlacementEnv(replace(SMALL, max_start_offset=offset))
    _, rewards, first, last = run_episode(env, seed=4)
    gained = last["gpu_alloc_ratio_pct"] - first["gpu_alloc_ratio_pct"]
    assert sum(rewards) == pytest.approx(gained)
    if offset == 0.0:
        assert first["gpu_alloc_ratio_pct"] == 0.0
        assert sum(rewards) == pytest.approx(last["gpu_alloc_ratio_pct"]) and gained > 30


def test_unscheduled_pods_are_charged() -> None:
    weights = RewardWeights(allocation=0.0, unscheduled=1.0)
    env = ClusterPlacementEnv(replace(SMALL, rewards=weights, target_pct=130.0))
    _, rewards, first, last = run_episode(env, seed=5)
    ep = env.episode
    rejected = np.flatnonzero(ep.state.phase == Phase.UNSCHEDULABLE)
    in_segment = rejected[rejected >= ep.start]
    assert in_segment.size == last["rejected"] - first["rejected"] > 0
    lost = gpu_pct(float(ep.pods.gpu_request[in_segment].sum()), ep.total_gpu)
    assert -sum(rewards) == pytest.approx(lost) and lost > 0


def test_segments_truncate() -> None:
    env = ClusterPlacementEnv(replace(SMALL, segment_length=20))
    _, rewards, first, last = run_episode(env, seed=1)
    assert len(rewards) <= 20 and last["pod"] - first["start"] == 20


def test_pinned_episode_for_evaluation() -> None:
    env = ClusterPlacementEnv(SMALL)
    _, info = env.reset(seed=9, options={"variant": "0", "start_offset": 0.0, "fill_seed": 3})
    assert info["start"] == 0 and info["gpu_alloc_ratio_pct"] == 0.0
    with pytest.raises(TwinschedError, match="not in"):
        env.reset(options={"variant": "nope"})


def test_ineligible_action_raises_or_falls_back() -> None:
    env = ClusterPlacementEnv(replace(SMALL, max_start_offset=0.9))
    env.reset(seed=2)
    while env.action_masks().all():
        env.step(masked_random(0)(env))
    bad = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(IneligibleActionError, match="action_masks"):
        env.step(bad)
    fallback = ClusterPlacementEnv(replace(SMALL, max_start_offset=0.9, invalid_action="fallback"))
    fallback.reset(seed=2)
    while fallback.action_masks().all():
        fallback.step(masked_random(0)(fallback))
    *_, info = fallback.step(int(np.flatnonzero(~fallback.action_masks())[0]))
    assert info["fallbacks"] == 1


def test_step_before_reset_is_an_error(small: ClusterPlacementEnv) -> None:
    with pytest.raises(TwinschedError, match="reset"):
        small.step(0)


def test_variants_must_share_the_node_list() -> None:
    with pytest.raises(TwinschedError, match="different node list"):
        ClusterPlacementEnv(replace(SMALL, variants=("0", "1")))


@pytest.mark.parametrize(
    "bad",
    [{"variants": ()}, {"variants": "0"}, {"max_start_offset": 1.0}, {"segment_length": 0}],
)
def test_bad_config_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(TwinschedError, match="EnvConfig"):
        EnvConfig(**bad)


@pytest.mark.parametrize("target", [100.0, 130.0])
def test_fgd_as_the_agent_reproduces_the_fillup_run(target: float) -> None:
    """Through the env, FGD's choices end where ``run_fillup`` with FGD ends."""
    env = ClusterPlacementEnv(replace(SMALL, target_pct=target))
    env.reset(options={"start_offset": 0.0, "fill_seed": 11})
    ep, done, info = env.episode, False, {}
    fgd = ep.control.scheduler
    while not done:
        decision = fgd.place(ep.state, ep.views[ep.cursor], env.action_masks())
        assert isinstance(decision, Placement)
        _, _, terminated, truncated, info = env.step(decision.node)
        done = terminated or truncated
    result = run_fillup(
        load_variant("synthetic-continuum", "0", None).scenario, "fgd", 11, target_pct=target
    )
    assert info["gpu_alloc_ratio_pct"] == pytest.approx(
        result.summary["gpu_alloc_ratio_pct"], abs=1e-3
    )
    assert info["rejected"] == result.summary["unscheduled"] > 0


def test_public_api() -> None:
    import twinsched.envs as envs

    assert all(getattr(envs, name) is not None for name in envs.__all__)
    assert gym.spec(ENV_ID).entry_point == "twinsched.envs.placement:ClusterPlacementEnv"
    with pytest.raises(AttributeError, match="no attribute"):
        _ = envs.Nope


def test_bytes_moved_is_charged_as_the_share_of_the_pods_inputs_that_cross_the_links() -> None:
    from twinsched.model.datasets import data_model, read_costs

    config = EnvConfig(trace="synthetic-continuum-data", variants=("0",), segment_length=40,
                       rewards=RewardWeights(allocation=0.0, bytes_moved=1.0))  # fmt: skip
    env = ClusterPlacementEnv(config)
    act = masked_random(3)
    env.reset(seed=2)
    ep = env.episode
    model = data_model(ep.run.scenario, ep.pods)
    assert model is not None
    charged = []
    while True:
        pod = ep.current
        assert pod is not None
        _, r, terminated, truncated, info = env.step(act(env))
        node = int(ep.state.pod_node[pod])
        reads = model.reads(pod)
        _, moved = read_costs(model, reads, np.array([node]))
        expected = 100.0 * moved[0] / model.size_bytes[reads].sum()
        assert info["reward_terms"]["bytes_moved"] == pytest.approx(expected)
        assert r == pytest.approx(-expected)
        charged.append(expected)
        if terminated or truncated:
            break
    assert min(charged) == 0.0 and max(charged) == 100.0  # local inputs free, remote ones all
