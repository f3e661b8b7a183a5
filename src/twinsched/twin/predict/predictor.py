"""The twin's predictor: trains its models from the twin's own history and answers queries.

:meth:`Predictor.retrain` reads the last ``window_s`` of history (twin time) and fits the
power models and the anomaly forest; the queries then use the latest fitted models, and
:meth:`Predictor.utilisation` fits a forecaster on a pool's recent utilisation on demand.
Thread-safe: a retrain swaps the models in one assignment.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.twin.core.service import TwinService

if TYPE_CHECKING:  # pandas and the models are imported by the methods that use them, not at
    # the twin's start (a twin that is never asked for a prediction never imports pandas)
    import pandas as pd

    from twinsched.twin.predict.anomaly import AnomalyModel
    from twinsched.twin.predict.forecast import ForecasterFactory


class PredictError(TwinschedError):
    """A query the predictor cannot answer; ``field`` names the parameter at fault."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class Trained:
    """The result of one retrain."""

    at: float  # twin time of the newest sample used
    rows: int
    types: dict[str, int]  # training rows per node type with a model
    anomalies: AnomalyModel | None


@dataclass(frozen=True)
class PowerRow:
    node: str
    node_type: str
    predicted_w: float
    measured_w: float | None


class Predictor:
    """Models trained from ``service``'s history; ``forecasters`` for utilisation."""

    def __init__(
        self,
        service: TwinService,
        window_s: float = 86_400.0,
        contamination: float = 0.01,
        forecasters: ForecasterFactory | None = None,
        seed: int = 0,
    ) -> None:
        self.service, self.window_s, self.contamination = service, window_s, contamination
        self.forecasters, self.seed = forecasters, seed
        self.trained: Trained | None = None
        self._lock = threading.Lock()  # one retrain at a time

    def _history(self, start: float | None, end: float | None, metrics: tuple[str, ...],
                 step: float | None = None) -> pd.DataFrame:  # fmt: skip
        from twinsched.twin.dataset import ExportSpec, export_frame

        if self.service.history is None:
            raise PredictError("history", "this twin keeps no history")
        live = self.service.session  # the live session's history, on its time
        spec = ExportSpec(metrics, (), start, end, step, session=live.id if live else None)
        return export_frame(self.service.history, spec)

    def retrain(self) -> Trained:
        """Fit the power models and the anomaly forest on the last ``window_s`` of history."""
        from twinsched.twin.predict.anomaly import fit_anomalies
        from twinsched.twin.predict.features import METRICS, node_types, wide
        from twinsched.twin.predict.power import fit_power

        with self._lock:
            now = self.service.time
            rows = wide(self._history(max(0.0, now - self.window_s), None, METRICS))
            types = node_types(self.service.document())
            power = fit_power(rows, types, self.seed)
            anomalies = None
            if power.models:
                anomalies = fit_anomalies(power, rows, self.contamination, self.seed)
            end = float(rows["time"].max()) if len(rows) else now
            self.trained = Trained(end, len(rows), dict(power.rows), anomalies)
            return self.trained

    def _model(self) -> AnomalyModel:
        if self.trained is None or self.trained.anomalies is None:
            raise PredictError("model", "not trained yet: POST /predict/retrain after samples")
        return self.trained.anomalies

    def power(self, node: str | None = None, pool: str | None = None) -> list[PowerRow]:
        """Predicted watts of a node, or of every node of a pool, at its latest metrics."""
        import pandas as pd

        from twinsched.twin.predict.features import METRICS, POWER, node_types, pools
        from twinsched.twin.predict.power import NotTrainedError

        doc = self.service.document()
        # each node by its type now: one whose hardware changed since training is not answered
        # by its old type's model
        model = replace(self._model().power, types=node_types(doc))
        nodes = {n.id: n for p in doc.nodepools for n in p.nodes}
        if (node is None) == (pool is None):
            raise PredictError("node", "give exactly one of node and pool")
        if pool is not None:
            names = pools(doc).get(pool)
            if names is None:
                raise PredictError("pool", f"no nodepool {pool!r}")
        elif node in nodes:  # the state now: a node trained on may have left it since
            names = [node]
        else:
            raise PredictError("node", f"no node {node!r}")
        frame = pd.DataFrame([{"node": n, **nodes[n].metrics} for n in names])
        frame = frame.reindex(columns=["node", *METRICS])
        out = []
        for i, name in enumerate(names):
            try:
                model.model_for(name)
            except NotTrainedError as exc:
                if node is not None:
                    raise PredictError("node", str(exc)) from None
                continue
            watts = float(model.predict(frame.iloc[[i]])[0])
            measured = frame[POWER].iloc[i]
            out.append(PowerRow(name, model.types[name], round(watts, 3),
                                None if pd.isna(measured) else float(measured)))  # fmt: skip
        return out

    def anomalies(self, start: float | None, end: float | None,
                  node: str | None = None) -> pd.DataFrame:  # fmt: skip
        """The anomalous samples between ``start`` and ``end`` (default: the last window)."""
        from twinsched.twin.predict.features import METRICS, wide

        model = self._model()
        if start is None:
            start = max(0.0, self.service.time - self.window_s)
        if end is not None and end < start:
            raise PredictError("end", f"{end} is before start {start}")
        rows = wide(self._history(start, end, METRICS))
        if node is not None:
            rows = rows[rows["node"] == node]
        return model.flag(rows)

    def utilisation(self, pool: str, horizon: int, step: float, name: str) -> np.ndarray:
        """The next ``horizon`` steps of ``pool``'s mean ``cpu_util``."""
        from twinsched.twin.predict.features import pools
        from twinsched.twin.predict.forecast import forecast, pool_series

        if self.forecasters is None:
            raise PredictError("pool", "this twin was built without forecasters")
        names = pools(self.service.document()).get(pool)
        if names is None:
            raise PredictError("pool", f"no nodepool {pool!r}")
        start = max(0.0, self.service.time - self.window_s)
        long = self._history(start, None, ("cpu_util",), step)
        y = pool_series(long, names).to_numpy(dtype=np.float64)
        if len(y) < 2:
            raise PredictError("pool", f"nodepool {pool!r} has {len(y)} samples, needs 2")
        try:
            return forecast(self.forecasters, name, y, step, horizon, self.seed)
        except (ValueError, KeyError, ArithmeticError, np.linalg.LinAlgError) as exc:
            raise PredictError("forecaster", str(exc)) from None
