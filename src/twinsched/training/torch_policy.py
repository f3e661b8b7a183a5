"""The policy as a PyTorch module, for training; exported to :class:`Policy` for serving.

Only training imports this module (serving is NumPy), so PyTorch stays an optional extra.
"""

from __future__ import annotations

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.extras import install_hint, needs
from twinsched.scheduling.ai.features import F32, FEATURE_NAMES, N_FEATURES
from twinsched.scheduling.ai.policy import Policy

WHY = "training needs PyTorch"
EXTRA_HINT = install_hint(WHY, "ai")

with needs("ai", WHY):
    import torch
    from torch import nn


def device() -> str:
    """``cuda`` when a GPU is there, else ``cpu``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


class NodeScorer(nn.Module):
    """Scores rows ``(..., N_FEATURES)`` -> ``(...)``: scaling, then an MLP."""

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        if policy.per_kind:
            raise TwinschedError(
                "this policy's prior has one column per pod kind (tuned by evolution "
                "strategies); gradient training (cloning, PPO) takes a one-column prior"
            )
        self.register_buffer("mean", torch.tensor(policy.mean))
        self.register_buffer("std", torch.tensor(policy.std))
        prior = policy.prior if policy.prior is not None else np.zeros(N_FEATURES, np.float32)
        self.register_buffer("prior", torch.tensor(prior))
        self.has_prior = policy.prior is not None
        self.linears = nn.ModuleList()
        for w, b in zip(policy.weights, policy.biases, strict=True):
            linear = nn.Linear(w.shape[0], w.shape[1])
            with torch.no_grad():
                linear.weight.copy_(torch.tensor(w.T))
                linear.bias.copy_(torch.tensor(b))
            self.linears.append(linear)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        x = (rows - self.get_buffer("mean")) / self.get_buffer("std")
        for i, linear in enumerate(self.linears):
            x = linear(x)
            if i < len(self.linears) - 1:
                x = torch.relu(x)
        return x.squeeze(-1) + rows @ self.get_buffer("prior")

    def to_policy(self, meta: dict[str, object] | None = None) -> Policy:
        """The trained weights as a NumPy :class:`Policy`."""

        def numpy(t: torch.Tensor) -> F32:
            return t.detach().cpu().numpy().astype(np.float32).copy()

        linears = [m for m in self.linears if isinstance(m, nn.Linear)]
        weights = tuple(numpy(m.weight).T.copy() for m in linears)
        biases = tuple(numpy(m.bias) for m in linears)
        mean, std = numpy(self.get_buffer("mean")), numpy(self.get_buffer("std"))
        prior = numpy(self.get_buffer("prior")) if self.has_prior else None
        return Policy(weights, biases, mean, std, FEATURE_NAMES, dict(meta or {}), prior)


def feature_scaling(rows: np.ndarray, valid: np.ndarray) -> tuple[F32, F32]:
    """Mean and std of the real rows (std floored so constant features stay finite)."""
    real = rows[valid].astype(np.float64).reshape(-1, N_FEATURES)
    mean = real.mean(axis=0) if real.size else np.zeros(N_FEATURES)
    std = np.maximum(real.std(axis=0) if real.size else np.ones(N_FEATURES), 1e-3)
    return mean.astype(np.float32), std.astype(np.float32)
