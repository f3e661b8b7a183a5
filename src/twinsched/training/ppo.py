"""PPO with action masking on ``ClusterPlacement-v0``, starting from a (cloned) policy.

The actor is the node scorer itself: the logits of a step are its scores of the eligible
nodes, so a behaviour-cloned policy is a ready initial actor and the result is served by
the same NumPy :class:`Policy`. The critic reads masked mean and max of the node rows.
One file, one typed spec, in the manner of CleanRL; rollouts keep only eligible rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from twinsched.envs import ClusterPlacementEnv, EnvConfig
from twinsched.scheduling.ai.features import N_FEATURES
from twinsched.scheduling.ai.policy import Policy
from twinsched.training.torch_policy import NodeScorer


@dataclass(frozen=True)
class PpoSpec:
    """Budget and hyper-parameters of a PPO fine-tuning run."""

    env: EnvConfig = field(default_factory=EnvConfig)
    updates: int = 20
    steps: int = 512  # environment steps per update
    epochs: int = 4
    minibatch: int = 128
    lr: float = 5e-5
    gamma: float = 0.999
    lam: float = 0.95
    clip: float = 0.2
    entropy: float = 0.0
    value_coef: float = 0.5
    seed: int = 0
    threads: int = 1  # small tensors: more threads mostly wait on each other


class Critic(nn.Module):
    """State value from masked mean and max of the eligible rows."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * N_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, rows: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        w = valid.unsqueeze(-1).float()
        mean = (rows * w).sum(1) / w.sum(1).clamp(min=1.0)
        top = rows.masked_fill(~valid.unsqueeze(-1), -1e4).max(1).values
        top = torch.where(valid.any(1, keepdim=True), top, torch.zeros_like(top))
        value: torch.Tensor = self.net(torch.cat([mean, top], dim=-1)).squeeze(-1)
        return value


@dataclass
class _Rollout:
    rows: list[npt.NDArray[np.float16]] = field(default_factory=list)  # eligible rows per step
    action: list[int] = field(default_factory=list)  # index into that step's rows
    logp: list[float] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    done: list[bool] = field(default_factory=list)  # episode ended after this step
    bootstrap: list[float] = field(default_factory=list)  # value after a truncation, else 0


def _pad(rows: list[npt.NDArray[np.float16]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(1, *(r.shape[0] for r in rows))  # a state may have no eligible node
    out = np.zeros((len(rows), width, N_FEATURES), dtype=np.float32)
    valid = np.zeros((len(rows), width), dtype=bool)
    for i, r in enumerate(rows):
        out[i, : r.shape[0]] = r
        valid[i, : r.shape[0]] = True
    return torch.from_numpy(out), torch.from_numpy(valid)


def _normalised(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = p / p.sum()
    return out


def _values(critic: Critic, rows: list[npt.NDArray[np.float16]]) -> list[float]:
    out: list[float] = []
    with torch.no_grad():
        for start in range(0, len(rows), 256):
            padded, valid = _pad(rows[start : start + 256])
            out.extend(critic(padded, valid).tolist())
    return out


def _logits(actor: NodeScorer, rows: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    logits: torch.Tensor = actor(rows).masked_fill(~valid, -1e9)
    return logits


def _advantages(ro: _Rollout, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    n = len(ro.reward)
    adv = np.zeros(n)
    last = 0.0
    for t in reversed(range(n)):
        if ro.done[t]:
            next_value, carry = ro.bootstrap[t], 0.0
        else:
            next_value, carry = ro.value[t + 1] if t + 1 < n else ro.value[t], last
        delta = ro.reward[t] + gamma * next_value - ro.value[t]
        last = delta + gamma * lam * carry
        adv[t] = last
    return adv, adv + np.array(ro.value)


def fine_tune(
    policy: Policy,
    spec: PpoSpec,
    on_update: Callable[[dict[str, float], Policy], bool] | None = None,
) -> Policy:
    """PPO updates of ``policy`` on the environment; returns the final actor as a Policy.

    ``on_update(stats, actor)`` is called after every update; returning False stops early.
    """
    torch.manual_seed(spec.seed)
    torch.set_num_threads(spec.threads)
    rng = np.random.default_rng(spec.seed)
    env = ClusterPlacementEnv(spec.env)
    actor, critic = NodeScorer(policy), Critic()
    optimiser = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=spec.lr)
    obs, _ = env.reset(seed=spec.seed)
    episode_return, returns = 0.0, []
    for update in range(spec.updates):
        ro = _Rollout()
        scorer = actor.to_policy()  # NumPy scoring: per-step torch calls cost more than they do
        tails: dict[int, npt.NDArray[np.float16]] = {}  # rows after a truncation, by step
        for _ in range(spec.steps):
            eligible = np.flatnonzero(obs["action_mask"])
            rows = obs["nodes"][eligible]
            logits = scorer.scores(rows).astype(np.float64)
            logp = logits - logits.max()
            logp -= np.log(np.exp(logp).sum())
            choice = int(rng.choice(logp.size, p=_normalised(np.exp(logp))))
            ro.rows.append(rows.astype(np.float16))
            ro.action.append(choice)
            ro.logp.append(float(logp[choice]))
            obs, reward, terminated, truncated, _ = env.step(int(eligible[choice]))
            episode_return += reward
            ro.reward.append(reward)
            ro.done.append(terminated or truncated)
            if truncated:
                tails[len(ro.reward) - 1] = obs["nodes"][obs["action_mask"] == 1].astype(np.float16)
            if terminated or truncated:
                returns.append(episode_return)
                episode_return = 0.0
                obs, _ = env.reset(seed=int(rng.integers(2**31)))
        ro.value = _values(critic, ro.rows)
        ro.bootstrap = [0.0] * len(ro.reward)
        if tails:
            for step, value in zip(tails, _values(critic, list(tails.values())), strict=True):
                ro.bootstrap[step] = value
        adv, target = _advantages(ro, spec.gamma, spec.lam)
        stats = _update(actor, critic, optimiser, ro, adv, target, spec, rng)
        if on_update is not None:
            recent = returns[-10:]
            row = {"update": update, "mean_return": float(np.mean(recent)) if recent else 0.0}
            if not on_update(row | stats, actor.to_policy(policy.meta)):
                break
    return actor.to_policy(policy.meta)


def _update(
    actor: NodeScorer,
    critic: Critic,
    optimiser: torch.optim.Optimizer,
    ro: _Rollout,
    adv: np.ndarray,
    target: np.ndarray,
    spec: PpoSpec,
    rng: np.random.Generator,
) -> dict[str, float]:
    n = len(ro.action)
    adv_t = torch.tensor((adv - adv.mean()) / (adv.std() + 1e-8), dtype=torch.float32)
    target_t = torch.tensor(target, dtype=torch.float32)
    old_logp = torch.tensor(ro.logp, dtype=torch.float32)
    actions = torch.tensor(ro.action, dtype=torch.long)
    losses: list[float] = []
    clipped: list[float] = []
    for _ in range(spec.epochs):
        order = rng.permutation(n)
        for start in range(0, n, spec.minibatch):
            idx = order[start : start + spec.minibatch]
            rows, valid = _pad([ro.rows[i] for i in idx])
            logp_all = torch.log_softmax(_logits(actor, rows, valid), dim=1)
            logp = logp_all.gather(1, actions[idx].unsqueeze(1)).squeeze(1)
            ratio = torch.exp(logp - old_logp[idx])
            a = adv_t[idx]
            policy_loss = -torch.min(
                ratio * a, ratio.clamp(1 - spec.clip, 1 + spec.clip) * a
            ).mean()
            probs = logp_all.exp()
            entropy = -(probs * logp_all.masked_fill(~valid, 0.0)).sum(1).mean()
            value_loss = (critic(rows, valid) - target_t[idx]).pow(2).mean()
            loss = policy_loss + spec.value_coef * value_loss - spec.entropy * entropy
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_([*actor.parameters(), *critic.parameters()], 0.5)
            optimiser.step()
            losses.append(float(loss.detach()))
            clipped.append(float(((ratio - 1).abs() > spec.clip).float().mean()))
    return {"loss": float(np.mean(losses)), "clip_fraction": float(np.mean(clipped))}
