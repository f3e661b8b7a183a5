"""The bandit's posterior as plain data: what a run leaves and the next run starts from.

Per (context, arm): the number of rewards learned, their sum and their sum of squares
(:class:`~twinsched.scheduling.fanout.bandit.Thompson`'s arrays). :func:`checked` refuses
anything out of range (a negative or fractional count, a non-finite sum, a sum of squares
below what the sum implies, a reward outside the evaluator's range), so a stored posterior
is one that some runs could have produced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError

MAX_COUNT = 10**9
MIN_REWARD = -1e4  # no reward to go below: a pod misses at most a node's GPUs per decision


@dataclass(frozen=True)
class Posterior:
    """Counts, sums and sums of squares of the rewards, ``contexts x arms``."""

    members: tuple[str, ...]
    count: list[list[int]]
    total: list[list[float]]
    squares: list[list[float]]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.count), len(self.members)

    def as_dict(self) -> dict[str, Any]:
        return {
            "members": list(self.members),
            "count": self.count,
            "total": self.total,
            "squares": self.squares,
        }


def of_arrays(members: list[str], count: Any, total: Any, squares: Any) -> Posterior:
    """A posterior from the bandit's arrays (checked)."""
    return checked(
        {
            "members": members,
            "count": np.asarray(count).tolist(),
            "total": np.asarray(total, dtype=np.float64).tolist(),
            "squares": np.asarray(squares, dtype=np.float64).tolist(),
        }
    )


def checked(data: dict[str, Any]) -> Posterior:
    """A :class:`Posterior` from ``data``, or an error saying what is out of range."""
    members = data.get("members")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise TwinschedError("posterior: 'members' must be a non-empty list of names")
    arrays = []
    for key in ("count", "total", "squares"):
        try:
            arrays.append(np.asarray(data.get(key), dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise TwinschedError(f"posterior: '{key}' is not a table of numbers") from exc
    count, total, squares = arrays
    if any(a.ndim != 2 or a.shape != (count.shape[0], len(members)) for a in arrays):
        raise TwinschedError(f"posterior: tables must be contexts x {len(members)} arms")
    if not all(np.isfinite(a).all() for a in arrays):
        raise TwinschedError("posterior: a value is not finite")
    if (count < 0).any() or (count > MAX_COUNT).any() or (count != np.round(count)).any():
        raise TwinschedError(f"posterior: counts must be whole, 0..{MAX_COUNT}")
    if (total > 0).any() or (total < MIN_REWARD * count).any():
        raise TwinschedError(f"posterior: rewards must lie in {MIN_REWARD:g}..0")
    # Cauchy-Schwarz: sum of squares >= sum^2 / n (and 0 when nothing was learned)
    floor = np.where(count > 0, total**2 / np.maximum(count, 1), 0.0)
    if (squares < floor * (1 - 1e-9) - 1e-12).any() or (
        (count == 0) & ((squares != 0) | (total != 0))
    ).any():
        raise TwinschedError("posterior: sums of squares below what the sums imply")
    return Posterior(
        tuple(members), count.astype(np.int64).tolist(), total.tolist(), squares.tolist()
    )
