"""Power per node from its utilisation, one regression per node type (scikit-learn).

:func:`fit_power` learns, for each node type with enough samples, a gradient-boosted
regression of ``power_w`` on the utilisations (:data:`features.INPUTS`) from the rows where
the node is up and draws power; :meth:`PowerModels.predict` answers for any rows of known
types; :func:`mape_by_type` scores a held-out segment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from twinsched.errors import TwinschedError
from twinsched.extras import needs
from twinsched.twin.predict.features import POWER, inputs

MIN_ROWS = 20  # fewer samples of a type: no model for it


class NotTrainedError(TwinschedError):
    """No model answers for this node (type unseen in the history, or no training yet)."""


def one_thread() -> Any:
    """A block where scikit-learn's OpenMP pools use one thread: on a shared machine, idle
    threads spinning for work made a small fit 40 times slower."""
    with needs("predict", "power prediction needs scikit-learn"):
        from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=1)


def _regressor(seed: int) -> Any:
    with needs("predict", "power prediction needs scikit-learn"):
        from sklearn.ensemble import HistGradientBoostingRegressor
    return HistGradientBoostingRegressor(max_iter=150, learning_rate=0.1, random_state=seed)


def drawing(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows a power model learns from or is scored on: node up, watts > 0."""
    up = rows["up"].fillna(1.0).to_numpy() > 0
    power = rows[POWER].to_numpy(dtype=np.float64)
    out: pd.DataFrame = rows[up & np.isfinite(power) & (power > 0)]
    return out


@dataclass
class PowerModels:
    """One fitted regression per node type, and each node's type."""

    types: dict[str, str]
    models: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # training rows per type

    def predict(self, rows: pd.DataFrame) -> np.ndarray:
        """Predicted watts of ``rows`` (NaN where the node's type has no model)."""
        out = np.full(len(rows), np.nan)
        kinds = rows["node"].map(self.types).to_numpy()
        with one_thread():
            for kind, model in self.models.items():
                at = kinds == kind
                if at.any():
                    out[at] = model.predict(inputs(rows[at]))
        return out

    def model_for(self, node: str) -> Any:
        """The fitted model of ``node``'s type, or :class:`NotTrainedError`."""
        kind = self.types.get(node)
        if kind is None or kind not in self.models:
            raise NotTrainedError(f"node {node!r}: no power model for its type {kind!r}")
        return self.models[kind]


def fit_power(rows: pd.DataFrame, types: Mapping[str, str], seed: int = 0) -> PowerModels:
    """Power models per node type from ``rows`` (:func:`features.wide`)."""
    out = PowerModels(dict(types))
    train = drawing(rows)
    kinds = train["node"].map(out.types).to_numpy()
    for kind in sorted({k for k in kinds if isinstance(k, str)}):
        part = train[kinds == kind]
        if len(part) < MIN_ROWS:
            continue
        model = _regressor(seed)
        with one_thread():
            model.fit(inputs(part), part[POWER].to_numpy(dtype=np.float64))
        out.models[kind], out.rows[kind] = model, len(part)
    return out


def mape_by_type(models: PowerModels, rows: pd.DataFrame) -> dict[str, float]:
    """Mean absolute percentage error (%) per node type on ``rows`` where the node draws
    power and its type has a model."""
    test = drawing(rows)
    pred = models.predict(test)
    actual = test[POWER].to_numpy(dtype=np.float64)
    kinds = test["node"].map(models.types).to_numpy()
    err = np.abs(pred - actual) / actual * 100.0
    return {
        kind: float(np.mean(err[(kinds == kind) & np.isfinite(pred)]))
        for kind in sorted(models.models)
        if ((kinds == kind) & np.isfinite(pred)).any()
    }
