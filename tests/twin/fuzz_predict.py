"""Fuzz the predictive twin once it is trained: a twin whose history holds three days of node
samples (so the power models, the anomaly forest and both forecasters can fit), then the
``predict`` operations of its OpenAPI, each schemathesis case followed by the requests of
:func:`predict_queries` (names the twin knows, values at the edges of each range, and the
state replaced by another cluster before a query).

Without the training, nearly every answer is "not trained yet" (422) and the code behind the
routes is never reached; ``tests/twin/fuzzing.py`` counts the answers the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import schemathesis
from hypothesis import given

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, tiny_document
from tests.twin.fuzzing import Hostile, Report, _one, fuzz_settings, openapi_cases
from twinsched.learning.forecasters import make_forecaster
from twinsched.twin.api.app import create_app
from twinsched.twin.core.settings import TwinSettings

STEP_S = 1800.0  # seconds between samples: 144 samples span three days
SAMPLES = 144
WINDOW_S = 3 * 86_400  # the predictor reads the whole history
NODE_NAMES = ("n1", "n2", "n3", "g1", "nope")  # the tiny document's nodes, n3 and one more
POOL_NAMES = ("edge", "cloud", "nope")
NODES, POOLS = st.sampled_from(NODE_NAMES), st.sampled_from(POOL_NAMES)
TIMES = st.sampled_from([0.0, STEP_S, 86_400, SAMPLES * STEP_S, 1e9, 1e12]) | st.floats(0, 3e5)
DAY_S = 86_400.0
STEPS = st.sampled_from([1.0, 59.9, 60.0, STEP_S, 3600.0, 43_200.0, DAY_S]) | st.floats(1, DAY_S)


def trained_twin(folder: Path) -> SyncASGI:
    """A twin (SQLite in ``folder``) with three days of samples: small nodes n1, n2 and the GPU
    node g1 draw watts from their cpu_util; n2 misses its power sample now and then, g1 is down
    for a while, and n2 spikes once. Trained before it is returned."""
    config = TwinSettings(token=TOKEN, db=str(folder / "h.db"), predict_window_s=WINDOW_S)
    client = SyncASGI(create_app(config, forecasters=make_forecaster))
    answer = client.put("/api/v1/state", content=tiny_document().model_dump_json(), headers=AUTH)
    assert answer.status_code == 200, answer.text
    rng = np.random.default_rng(0)
    for step in range(1, SAMPLES + 1):
        deltas = []
        for node, big in (("n1", False), ("n2", False), ("g1", True)):
            u = float(rng.uniform(0, 1))
            up = 0.0 if big and 40 <= step < 50 else 1.0
            watts = (200 + 400 * u if big else 50 + 100 * u**2) * up
            values = {"cpu_util": u * up, "power_w": watts * (3 if step == 100 else 1), "up": up}
            if node == "n2" and step % 7 == 0:
                del values["power_w"]
            deltas.append({"op": "metrics", "node": node, "values": values})
        batch = {"time": step * STEP_S, "deltas": deltas}
        answer = client.patch("/api/v1/state", json=batch, headers=AUTH)
        assert answer.status_code == 200, answer.text
    trained = client.post("/api/v1/predict/retrain", headers=AUTH)
    assert trained.status_code == 200 and len(trained.json()["types"]) == 2, trained.text
    return client


def changed_state(change: str) -> bytes:
    """The tiny document at the last sample's time, with one change: the cloud pool (and g1,
    its node) gone, n2 gone, n1 eight times larger (another type), a new node n3, or none."""
    doc = json.loads(tiny_document().model_dump_json()) | {"timestamp": SAMPLES * STEP_S}
    edge = doc["nodepools"][0]["nodes"]
    if change == "no-cloud":
        doc["nodepools"], doc["networks"] = doc["nodepools"][:1], []
    elif change == "no-n2":
        del edge[1]
    elif change == "n1-larger":
        edge[0]["hardware"]["cpu_milli"] *= 8
    elif change == "n3":
        edge.append({"id": "n3", "hardware": edge[0]["hardware"]})
    return json.dumps(doc).encode()


@st.composite
def _query(draw: st.DrawFn) -> Hostile:
    """A query of a trained predictor on names it knows, at the edges of each range."""
    kind = draw(st.sampled_from(["power", "utilisation", "anomalies", "retrain"]))
    params: dict[str, Any] = {}
    if kind == "power":
        params = draw(st.sampled_from([{"node": draw(NODES)}, {"pool": draw(POOLS)}]))
        return Hostile("GET", "/predict/power", params=params)
    if kind == "utilisation":
        forecaster = draw(st.sampled_from(["seasonal-naive", "ets"]))
        horizon = draw(st.sampled_from([1, 2, 12, 10_000]) | st.integers(1, 10_000))
        params = {"pool": draw(POOLS), "forecaster": forecaster, "horizon": horizon}
        params["step"] = draw(STEPS)
        return Hostile("GET", "/predict/utilisation", params=params)
    if kind == "anomalies":
        for name, value in (("start", TIMES), ("end", TIMES), ("node", NODES)):
            if draw(st.booleans()):
                params[name] = draw(value)
        params["limit"] = draw(st.sampled_from([1, 2, 1000, 100_000]))
        return Hostile("GET", "/anomalies", params=params)
    return Hostile("POST", "/predict/retrain")


@st.composite
def predict_queries(draw: st.DrawFn) -> list[Hostile]:
    """A query (:func:`_query`), or, one time in four, the state replaced by another cluster
    (nodes the models were trained on gone, of another type, or new), then the power of each
    node and pool named above and a query: models trained on a cluster that is no longer there
    meet the cluster that is."""
    if draw(st.integers(0, 3)):
        return [draw(_query())]
    change = draw(st.sampled_from(["no-cloud", "no-n2", "n1-larger", "n3", "same"]))
    names = [("node", n) for n in NODE_NAMES] + [("pool", p) for p in POOL_NAMES]
    sweep = [Hostile("GET", "/predict/power", params={k: v}) for k, v in names]
    return [
        Hostile("PUT", "/state", params={"resume": "true"}, body=changed_state(change)),
        *sweep,
        draw(_query()),
    ]


def fuzz_predict(client: SyncASGI, examples: int) -> Report:
    """``examples`` times: a schemathesis case (valid or not) of a ``predict`` operation, then
    the requests of :func:`predict_queries`; a fixed Hypothesis seed, no shrinking."""
    report = Report()
    app = client.app
    raw = SyncASGI(app, owner=False)

    @fuzz_settings(examples)
    @given(case=openapi_cases(app, tag="predict"), query=predict_queries())
    def run(case: schemathesis.Case[Any], query: list[Hostile]) -> None:
        for request in (case, *query):
            _one(report, app.state.service, raw, request)

    try:
        run()
    finally:
        raw.close()
    return report
