"""``/predict/...`` and ``/anomalies``: the predictive twin (``twin/predict/``).

Models are trained from the twin's own history by ``POST /predict/retrain`` or every
``predict_retrain_s`` seconds (settings); a query before the first training is a 422.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from twinsched.errors import MissingExtraError
from twinsched.model.ids import ID_PATTERN, MAX_ID_LENGTH
from twinsched.twin.api.deps import WriteAccess
from twinsched.twin.api.problems import ERROR_RESPONSES, WRITE_RESPONSES
from twinsched.twin.core.deltas import MAX_TIME
from twinsched.twin.predict.predictor import PredictError, Predictor

router = APIRouter(tags=["predict"])
IdQuery = Query(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN)
TimeQuery = Query(ge=0, le=MAX_TIME, allow_inf_nan=False)


class PowerEntry(BaseModel):
    node: str
    node_type: str = Field(description="The node's hardware; one power model per type.")
    predicted_w: float = Field(description="Predicted watts at the node's latest metrics.")
    measured_w: float | None = Field(description="The node's latest power_w sample, if any.")


class PowerView(BaseModel):
    trained_at: float = Field(description="Twin time of the newest sample trained on.")
    nodes: list[PowerEntry]


class AnomalyEntry(BaseModel):
    node: str
    time: float
    score: float = Field(description="Isolation Forest score; higher is stranger.")
    kind: str = Field(description="Likely kind: stuck, spike (too many watts) or slow.")


class AnomaliesView(BaseModel):
    truncated: bool
    anomalies: list[AnomalyEntry]


class TrainView(BaseModel):
    at: float = Field(description="Twin time of the newest sample trained on.")
    rows: int = Field(description="Samples (node, time) read.")
    types: dict[str, int] = Field(description="Training samples per node type with a model.")


class UtilisationView(BaseModel):
    pool: str
    step: float
    forecaster: str
    values: list[float] = Field(description="Mean cpu_util of the pool, one per future step.")


def get_predictor(request: Request) -> Predictor:
    predictor = request.app.state.predictor
    assert isinstance(predictor, Predictor)
    return predictor


async def _call(fn: Any, *args: Any) -> Any:
    try:
        return await run_in_threadpool(fn, *args)
    except PredictError as exc:
        raise HTTPException(422, str(exc)) from None
    except MissingExtraError as exc:  # the server lacks scikit-learn: not the request's fault
        raise HTTPException(503, str(exc)) from None


@router.get("/predict/power", response_model=PowerView, responses=ERROR_RESPONSES,
            summary="Predicted power of a node or of a nodepool's nodes")  # fmt: skip
async def get_power(
    request: Request,
    node: Annotated[str | None, IdQuery] = None,
    pool: Annotated[str | None, IdQuery] = None,
) -> PowerView:
    """Watts each node should draw at its latest utilisation, from its type's model."""
    predictor = get_predictor(request)
    rows = await _call(predictor.power, node, pool)
    trained = predictor.trained
    assert trained is not None
    return PowerView(trained_at=trained.at, nodes=[PowerEntry(**vars(r)) for r in rows])


@router.get("/anomalies", response_model=AnomaliesView, responses=ERROR_RESPONSES,
            summary="Anomalous node samples")  # fmt: skip
async def get_anomalies(
    request: Request,
    start: Annotated[float | None, TimeQuery] = None,
    end: Annotated[float | None, TimeQuery] = None,
    node: Annotated[str | None, IdQuery] = None,
    limit: Annotated[int, Query(ge=1, le=100_000, description="Most rows returned.")] = 1000,
) -> AnomaliesView:
    """Samples the Isolation Forest finds odd between ``start`` (default: the training window
    before now) and ``end``, most anomalous first."""
    frame = await _call(get_predictor(request).anomalies, start, end, node)
    frame = frame.sort_values("score", ascending=False, kind="stable")
    rows = frame.head(limit).to_dict("records")
    return AnomaliesView(truncated=len(frame) > limit,
                         anomalies=[AnomalyEntry(**r) for r in rows])  # fmt: skip


@router.post("/predict/retrain", response_model=TrainView, dependencies=[WriteAccess],
             responses=WRITE_RESPONSES, summary="Train the predictive models now")  # fmt: skip
async def post_retrain(request: Request) -> TrainView:
    """Fit the power models and the anomaly forest on the last ``predict_window_s``."""
    trained = await _call(get_predictor(request).retrain)
    return TrainView(at=trained.at, rows=trained.rows, types=trained.types)


@router.get("/predict/utilisation", response_model=UtilisationView, responses=ERROR_RESPONSES,
            summary="Utilisation forecast of a nodepool")  # fmt: skip
async def get_utilisation(
    request: Request,
    pool: Annotated[str, IdQuery],
    horizon: Annotated[int, Query(ge=1, le=10_000, description="Steps ahead.")] = 12,
    step: Annotated[
        float, Query(ge=1, le=86_400, allow_inf_nan=False, description="Step (s).")
    ] = 300.0,
    forecaster: Annotated[str, Query(pattern="^(seasonal-naive|ets)$")] = "seasonal-naive",
) -> UtilisationView:
    """The next ``horizon`` steps of the pool's mean ``cpu_util`` (learning-plane forecaster
    fitted on the pool's history, one day of steps as its season)."""
    predictor = get_predictor(request)
    values = await _call(predictor.utilisation, pool, horizon, step, forecaster)
    return UtilisationView(pool=pool, step=step, forecaster=forecaster,
                           values=[round(float(v), 6) for v in values])  # fmt: skip
