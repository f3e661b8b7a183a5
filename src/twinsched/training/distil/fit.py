"""Fit the reranker's MLP to rollout values centred per decision (PyTorch on CPU, seeded).

Only differences between the candidates of one decision matter, so the loss compares the
model's scores and the values after removing each decision's mean from both:
``mean((s_i - mean_d s) - (v_i - mean_d v))^2``. The fitted network becomes a NumPy
:class:`Policy` (inputs standardised with the training rows' mean and spread).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.extras import needs
from twinsched.model.cluster import F64, I64
from twinsched.scheduling.ai.features import F32
from twinsched.scheduling.ai.policy import Policy
from twinsched.training.distil.margins import DistilSpec, Margins

with needs("ai", "training a reranker needs PyTorch"):
    import torch
    from torch import nn


def centred(values: F64, group: I64) -> F64:
    """``values`` minus the mean of their group."""
    sums = np.bincount(group, weights=values)
    counts = np.maximum(np.bincount(group), 1)
    out: F64 = values - (sums / counts)[group]
    return out


def decision_agreement(
    scores: F64, values: F64, group: I64, margin: float = 0.0
) -> dict[str, float]:
    """Per decision: how often the model's choice is a best by value, and the mean value (in
    GPUs) of its choice over FGD's first candidate's (the first row of each group). The
    choice is the best score, or FGD's first unless the best beats it by over ``margin``."""
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], group.size]
    hits, gain = 0, 0.0
    for s, e in zip(starts, ends, strict=True):
        pick = s + int(np.argmax(scores[s:e]))
        pick = pick if scores[pick] - scores[s] > margin else s
        hits += bool(values[pick] >= values[s:e].max())
        gain += float(values[pick] - values[s])
    n = max(starts.size, 1)
    return {"agreement": hits / n, "value_over_first": gain / n}


def fit(
    data: Margins,
    spec: DistilSpec,
    on_epoch: Callable[[int, float], None] | None = None,
) -> Policy:
    """The MLP of ``spec.hidden`` fitted to ``data``'s centred values, as a NumPy policy."""
    if data.decisions < 2:
        raise TwinschedError("distillation needs at least two compared decisions")
    torch.manual_seed(spec.seed)
    rng = np.random.default_rng(spec.seed)
    rows = data.columns(spec.features).astype(np.float32)
    mean = rows.mean(axis=0).astype(np.float32)
    std = (rows.std(axis=0) + 1e-6).astype(np.float32)
    x = torch.from_numpy((rows - mean) / std)
    y = torch.from_numpy(centred(data.values(spec.frag_weight), data.group).astype(np.float32))
    starts = np.flatnonzero(np.r_[True, data.group[1:] != data.group[:-1]])
    ends = np.r_[starts[1:], data.group.size]
    net = _network(rows.shape[1], spec.hidden)
    optimiser = torch.optim.Adam(net.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)
    order = np.arange(starts.size)
    for epoch in range(spec.epochs):
        rng.shuffle(order)
        total, count = 0.0, 0
        for at in range(0, order.size, spec.batch):
            chosen = order[at : at + spec.batch]
            sizes = ends[chosen] - starts[chosen]
            index, local = _rows_of(starts[chosen], sizes)
            out = net(x[index])[:, 0]
            means = torch.zeros(chosen.size).index_add_(0, local, out) / torch.from_numpy(
                sizes.astype(np.float32)
            )
            loss = ((out - means[local] - y[index]) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total, count = total + float(loss.detach()) * chosen.size, count + chosen.size
        if on_epoch is not None:
            on_epoch(epoch + 1, total / max(count, 1))
    weights, biases = [], []
    for layer in net:
        if isinstance(layer, nn.Linear):
            weights.append(layer.weight.detach().numpy().T.astype(np.float32).copy())
            biases.append(layer.bias.detach().numpy().astype(np.float32).copy())
    return Policy(tuple(weights), tuple(biases), mean, std, spec.features)


def _rows_of(starts: I64, sizes: I64) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of decisions starting at ``starts`` with ``sizes`` candidates, and each
    row's decision number within the batch."""
    local = np.repeat(np.arange(sizes.size), sizes)
    offset = np.arange(local.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return torch.from_numpy(starts[local] + offset), torch.from_numpy(local)


def _network(inputs: int, hidden: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = inputs
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def scores_of(policy: Policy, data: Margins) -> F32:
    """The policy's score of every recorded candidate."""
    return policy.scores(data.columns(policy.features))
