"""The predictive twin: power models with a known answer, anomalies found in an injected run,
and the /predict and /anomalies routes on a real twin app trained from its own history."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, tiny_document
from twinsched.learning.forecasters import make_forecaster
from twinsched.sim.anomalies import AnomalyInjector, AnomalySpec
from twinsched.twin.api.app import create_app
from twinsched.twin.core.settings import TwinSettings
from twinsched.twin.predict.anomaly import fit_anomalies
from twinsched.twin.predict.features import stuck_runs, wide
from twinsched.twin.predict.power import fit_power, mape_by_type

TYPES = {"a": "small", "b": "small", "c": "big"}


def _watts(node: str, cpu: np.ndarray) -> np.ndarray:
    """The known answer: small nodes 50 + 100 u^2 W, big ones 200 + 400 u W."""
    return 200 + 400 * cpu if TYPES[node] == "big" else 50 + 100 * cpu**2


def _long(samples: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for node in TYPES:
        cpu = rng.uniform(0, 1, samples)
        values = {"cpu_util": cpu, "power_w": _watts(node, cpu), "up": np.ones(samples)}
        for metric, v in values.items():
            parts.append(pd.DataFrame({"time": np.arange(samples) * 60.0, "node": node,
                                       "metric": metric, "value": v}))  # fmt: skip
    return pd.concat(parts, ignore_index=True)


def test_power_models_learn_each_type_curve() -> None:
    models = fit_power(wide(_long(300, 0)), TYPES)
    assert sorted(models.models) == ["big", "small"]
    mape = mape_by_type(models, wide(_long(100, 1)))
    assert mape["small"] < 2.0 and mape["big"] < 2.0, mape
    # one model per type: a small node at full load is not predicted as a big one
    row = pd.DataFrame({"node": ["a", "c"], "cpu_util": [1.0, 1.0], "up": [1.0, 1.0]})
    row = row.reindex(columns=["node", "cpu_util", "memory_util", "gpu_util", "gpu_allocated"])
    pred = models.predict(row)
    assert abs(pred[0] - 150) < 10 and abs(pred[1] - 600) < 20, pred


def test_stuck_runs_count_frozen_watts_per_node() -> None:
    rows = pd.DataFrame({"node": ["a"] * 4 + ["b"] * 2, "power_w": [5, 5, 5, 6, 6, 6.0]})
    assert stuck_runs(rows).tolist() == [0, 1, 2, 0, 0, 1]


def test_injected_anomalies_are_found() -> None:
    long = _long(300, 2)
    rows = wide(long)
    names = list(TYPES)
    injector = AnomalyInjector(None, AnomalySpec(noise=0.01, rate=0.01, length=4, seed=3))  # type: ignore[arg-type]
    altered = []
    for t, at in rows.groupby("time", sort=True):
        at = at.set_index("node").loc[names]
        metrics = {k: at[k].to_numpy() for k in ("cpu_util", "power_w", "up")}
        out = injector.alter(names, float(t), metrics)
        altered.append(pd.DataFrame({"node": names, "time": t, **out}))
    noisy = pd.concat(altered).sort_values(["node", "time"], ignore_index=True)
    noisy = noisy.reindex(columns=["node", "time", "cpu_util", "memory_util", "gpu_util",
                                   "gpu_allocated", "power_w", "up"])  # fmt: skip
    labels = {(t, n) for t, n, _ in injector.labels}
    assert {k for _, _, k in injector.labels} == {"stuck", "spike", "slow"}
    again = AnomalyInjector(None, AnomalySpec(noise=0.01, rate=0.01, length=4, seed=3))  # type: ignore[arg-type]
    for t, at in rows.groupby("time", sort=True):
        at = at.set_index("node").loc[names]
        again.alter(names, float(t), {k: at[k].to_numpy() for k in ("cpu_util", "power_w", "up")})
    assert again.labels == injector.labels  # deterministic per seed
    power = fit_power(noisy, TYPES)
    flagged = fit_anomalies(power, noisy, contamination=len(labels) / len(noisy)).flag(noisy)
    found = set(zip(flagged["time"], flagged["node"], strict=True))
    recall = len(found & labels) / len(labels)
    precision = len(found & labels) / max(len(found), 1)
    assert recall > 0.6 and precision > 0.6, (precision, recall)


def _app(folder: Path) -> SyncASGI:
    settings = TwinSettings(token=TOKEN, db=str(folder / "h.db"))
    client = SyncASGI(create_app(settings, forecasters=make_forecaster))
    assert client.put("/api/v1/state", json=tiny_document().model_dump(mode="json"),
                      headers=AUTH).status_code == 200  # fmt: skip
    rng = np.random.default_rng(0)
    for step in range(1, 121):
        deltas = []
        for node, big in (("n1", False), ("n2", False), ("g1", True)):
            u = float(rng.uniform(0, 1))
            watts = 200 + 400 * u if big else 50 + 100 * u**2
            if node == "n2" and step == 100:
                watts *= 3  # one spike
            deltas.append({"op": "metrics", "node": node,
                           "values": {"cpu_util": u, "power_w": watts, "up": 1.0}})  # fmt: skip
        r = client.patch("/api/v1/state", json={"time": step * 60.0, "deltas": deltas},
                         headers=AUTH)  # fmt: skip
        assert r.status_code == 200, r.text
    return client


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncASGI]:
    client = _app(tmp_path_factory.mktemp("predict"))
    yield client
    client.close()


def test_queries_before_training_are_422(tmp_path: Path) -> None:
    client = SyncASGI(create_app(TwinSettings(token=TOKEN, db=str(tmp_path / "h.db"))))
    try:
        before = client.get("/api/v1/predict/power", params={"node": "n1"})
        assert before.status_code == 422 and "retrain" in before.json()["detail"]
        empty = client.post("/api/v1/predict/retrain", headers=AUTH)  # no samples: no model
        assert empty.status_code == 200 and empty.json()["types"] == {}
        assert client.get("/api/v1/anomalies").status_code == 422
    finally:
        client.close()


def test_routes_train_from_history_and_answer(twin: SyncASGI) -> None:
    assert twin.post("/api/v1/predict/retrain").status_code == 401
    trained = twin.post("/api/v1/predict/retrain", headers=AUTH)
    assert trained.status_code == 200, trained.text
    assert sum(trained.json()["types"].values()) == 360 and len(trained.json()["types"]) == 2
    pool = twin.get("/api/v1/predict/power", params={"pool": "edge"}).json()["nodes"]
    assert [p["node"] for p in pool] == ["n1", "n2"]
    for p in pool:
        assert p["measured_w"] is not None
    g1 = twin.get("/api/v1/predict/power", params={"node": "g1"}).json()["nodes"][0]
    assert g1["node_type"] != pool[0]["node_type"]
    anomalies = twin.get("/api/v1/anomalies", params={"start": 0}).json()["anomalies"]
    assert anomalies[0]["node"] == "n2" and anomalies[0]["time"] == 6000.0
    assert anomalies[0]["kind"] == "spike"
    forecast = twin.get("/api/v1/predict/utilisation",
                        params={"pool": "edge", "horizon": 5, "step": 600}).json()  # fmt: skip
    assert len(forecast["values"]) == 5 and all(0 <= v <= 1 for v in forecast["values"])
    for forecaster in ("ets", "seasonal-naive"):  # a fitted learning-plane forecaster, or 4xx
        for step in (60, 86_400):
            params = {"pool": "cloud", "step": step, "forecaster": forecaster}
            r = twin.get("/api/v1/predict/utilisation", params=params)
            assert r.status_code in (200, 422), r.text


@pytest.mark.parametrize(
    ("url", "params", "field"),
    [
        ("/api/v1/predict/power", {"node": "nope"}, "node"),
        ("/api/v1/predict/power", {"pool": "nope"}, "pool"),
        ("/api/v1/predict/power", {}, "node"),
        ("/api/v1/predict/utilisation", {"pool": "nope"}, "pool"),
        ("/api/v1/predict/utilisation", {"pool": "edge", "horizon": 0}, "horizon"),
        ("/api/v1/anomalies", {"start": 100, "end": 10}, "end"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    twin: SyncASGI, url: str, params: dict[str, object], field: str
) -> None:
    assert twin.post("/api/v1/predict/retrain", headers=AUTH).status_code == 200
    r = twin.get(url, params=params)
    assert r.status_code == 422 and field in r.json()["detail"], r.text


def test_the_server_retrains_on_its_period(tmp_path: Path) -> None:
    client = _app(tmp_path)
    try:
        app = client.app
        app.state.settings = TwinSettings(token=TOKEN, db=str(tmp_path / "h.db"),
                                          predict_retrain_s=0.05)  # fmt: skip

        async def serve_a_while() -> None:
            async with app.router.lifespan_context(app):
                await asyncio.sleep(1.0)

        assert app.state.predictor.trained is None
        asyncio.run(serve_a_while())
        trained = app.state.predictor.trained
        assert trained is not None and sum(trained.types.values()) == 360
    finally:
        client.close()


def test_retrain_without_scikit_learn_is_503_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = _app(tmp_path)
    try:
        for name in ("sklearn", "sklearn.ensemble", "threadpoolctl"):
            monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
        answer = client.post("/api/v1/predict/retrain", headers=AUTH)
        assert answer.status_code == 503, answer.text
        assert "twinsched[predict]" in answer.json()["detail"]
    finally:
        client.close()
