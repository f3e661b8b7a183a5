"""Anomalies on node metrics: an Isolation Forest (scikit-learn) over two features per
sample: the relative residual of the node's watts against its type's power model (spikes,
slow or throttled nodes) and how many samples in a row its watts have not moved (stuck
metrics). The forest is fitted, unsupervised, on the same history as the power models; a
run of :data:`STUCK_RUN` frozen samples is flagged whatever the forest says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from twinsched.extras import needs
from twinsched.twin.predict.features import POWER, stuck_runs
from twinsched.twin.predict.power import PowerModels, drawing, one_thread

Kind = Literal["stuck", "spike", "slow"]
MAX_RUN = 10.0  # a run of frozen samples counts at most this much
# Watts repeated exactly this many times in a row are stuck, whatever the forest says: a
# forest isolates a rare discrete value poorly (bench/predict.py: stuck recall 0.2 without
# this). A meter that reports whole watts repeats honestly: raise it for such a cluster.
STUCK_RUN = 1.0


def residuals(models: PowerModels, rows: pd.DataFrame) -> np.ndarray:
    """Relative residual of each row's watts against its type's model (0 where no model)."""
    power = rows[POWER].to_numpy(dtype=np.float64)
    pred = models.predict(rows)
    out: np.ndarray = np.nan_to_num((power - pred) / np.maximum(pred, 1.0))
    return out


def residual_scales(models: PowerModels, rows: pd.DataFrame) -> dict[str, float]:
    """Per node type, a robust spread of the relative residuals (1.4826 x median absolute
    deviation: a few anomalies in the training data barely move it)."""
    resid, kinds = residuals(models, rows), rows["node"].map(models.types).to_numpy()
    out = {}
    for kind in models.models:
        r = resid[kinds == kind]
        if len(r):
            out[kind] = max(1.4826 * float(np.median(np.abs(r - np.median(r)))), 1e-3)
    return out


def features(models: PowerModels, scales: dict[str, float], rows: pd.DataFrame) -> np.ndarray:
    """``(residual in units of its type's spread, stuck run)`` per row (rows where the node
    draws power, sorted by node and time)."""
    scale = rows["node"].map(models.types).map(scales).fillna(1.0).to_numpy(dtype=np.float64)
    resid = residuals(models, rows) / scale
    return np.column_stack([resid, np.minimum(stuck_runs(rows), MAX_RUN)])


@dataclass
class AnomalyModel:
    """A fitted forest and the power models its residuals come from."""

    power: PowerModels
    scales: dict[str, float]
    forest: Any

    def flag(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The anomalous samples of ``rows``: node, time, score (higher = stranger) and the
        likely kind (stuck watts, more watts than predicted: spike, fewer: slow)."""
        rows = drawing(rows)
        if rows.empty:
            return pd.DataFrame(columns=["node", "time", "score", "kind"])
        x = features(self.power, self.scales, rows)
        with one_thread():
            hit = (self.forest.predict(x) < 0) | (x[:, 1] >= STUCK_RUN)
            score = -self.forest.score_samples(x)
        kind = np.where(x[:, 1] > 0, "stuck", np.where(x[:, 0] > 0, "spike", "slow"))
        out = pd.DataFrame({"node": rows["node"].to_numpy(), "time": rows["time"].to_numpy(),
                            "score": score, "kind": kind})  # fmt: skip
        flagged: pd.DataFrame = out[hit].reset_index(drop=True)
        return flagged


def fit_anomalies(
    power: PowerModels, rows: pd.DataFrame, contamination: float = 0.01, seed: int = 0
) -> AnomalyModel:
    """An Isolation Forest on ``rows``' features, expecting ``contamination`` of them odd."""
    with needs("predict", "anomaly detection needs scikit-learn"):
        from sklearn.ensemble import IsolationForest
    forest = IsolationForest(n_estimators=100, contamination=contamination, random_state=seed)
    rows = drawing(rows)
    scales = residual_scales(power, rows)
    with one_thread():
        forest.fit(features(power, scales, rows))
    return AnomalyModel(power, scales, forest)
