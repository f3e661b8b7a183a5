"""Placement environment steps per second with random masked actions.

    python bench/env.py [--variant default] [--episodes 3] [--offset 0.0] [--asynchronous N]

Whole fill-up episodes on the openb trace (1,213 GPU nodes); reset time (warmup by FGD) is
reported apart from step time. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from twinsched.envs import ClusterPlacementEnv, EnvConfig, make_vector_env


def single(config: EnvConfig, episodes: int) -> None:
    env = ClusterPlacementEnv(config)
    rng = np.random.default_rng(0)
    steps, step_s, reset_s = 0, 0.0, 0.0
    for seed in range(episodes):
        started = time.perf_counter()
        env.reset(seed=seed)
        reset_s += time.perf_counter() - started
        started = time.perf_counter()
        done, info = False, {}
        while not done:
            action = rng.choice(np.flatnonzero(env.action_masks()))
            _, _, terminated, truncated, info = env.step(action)
            steps, done = steps + 1, terminated or truncated
        step_s += time.perf_counter() - started
        print(
            f"episode {seed}: start pod {info['start']}, alloc {info['gpu_alloc_ratio_pct']:.2f}%"
        )
    print(
        f"{env.n_nodes} nodes: {steps} steps in {step_s:.2f} s = {steps / step_s:.0f} steps/s; "
        f"reset {reset_s / episodes:.2f} s per episode"
    )


def vector(config: EnvConfig, n: int, steps: int) -> None:
    envs = make_vector_env(n, config, asynchronous=True)
    rng = np.random.default_rng(0)
    obs, _ = envs.reset(seed=0)
    started = time.perf_counter()
    for _ in range(steps):
        masks = obs["action_mask"].astype(bool)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, *_ = envs.step(actions)
    elapsed = time.perf_counter() - started
    envs.close()
    print(f"{n} async copies: {n * steps / elapsed:.0f} steps/s (resets included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variant", default="default")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--offset", type=float, default=0.0, help="max start offset fraction")
    parser.add_argument("--asynchronous", type=int, default=0, help="copies in subprocesses")
    args = parser.parse_args()
    config = EnvConfig(variants=(args.variant,), max_start_offset=args.offset)
    if args.asynchronous:
        vector(config, args.asynchronous, 2000)
    else:
        single(config, args.episodes)


if __name__ == "__main__":
    main()
