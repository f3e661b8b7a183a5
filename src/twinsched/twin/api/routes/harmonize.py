"""``POST /harmonize``: other formats into the twin format. Pure: it changes no twin state."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body
from fastapi.responses import JSONResponse

from twinsched.model.document import DocumentError, TwinDocument
from twinsched.model.schema import validate_document
from twinsched.traces.conversion import HarmonizeError
from twinsched.twin.api.problems import ERROR_RESPONSES, problem_response
from twinsched.twin.api.schemas import HarmonizeRequest
from twinsched.twin.harmonize.result import HarmonizeResult

router = APIRouter(tags=["harmonize"])


_NODE = {"id": "n1", "hardware": {"cpu_milli": 8000, "memory_mib": 32768}}
EXAMPLES: dict[str, Any] = {
    "decice": {
        "summary": "DECICE digital twin (vertexpools)",
        "value": {
            "source": "auto",
            "step_s": 30,
            "payload": {
                "lastUpdated": 1751875998.5,
                "vertexpools": [
                    {
                        "id": "vp-edge",
                        "vertexpool_labels": {"region": "edge-east"},
                        "nodes": [
                            {
                                "id": "node-a1",
                                "node_info": {"arch": "amd64"},
                                "metrics": {"util": 46.2, "cpu_cores": 8, "mem_total": 32},
                            }
                        ],
                    }
                ],
                "links": [
                    {
                        "vertexpool_a_id": "vp-edge",
                        "vertexpool_b_id": "vp-edge",
                        "network_delay_ms": 0.5,
                    }
                ],
                "jobs": [],
            },
        },
    },
    "tables": {
        "summary": "Job and node tables with MIT SuperCloud fields",
        "value": {
            "source": "tables",
            "payload": {
                "nodes": [
                    {"node": "r1-n1", "node_cores": 40, "node_memory_mib": 385000, "node_gpus": 2}
                ],
                "jobs": [
                    {
                        "id_job": "1605",
                        "nodes_alloc": 1,
                        "nodelist": "['r1-n1']",
                        "cpus_req": 20,
                        "tres_req": "1=20,2=170000,4=1,1002=1",
                        "time_submit": 1609535912,
                        "time_start": 1609535999,
                        "time_end": 1609536306,
                    }
                ],
                "at": 1609536000,
            },
        },
    },
    "prometheus": {
        "summary": "Prometheus query results, with a base document",
        "value": {
            "step_s": 15,
            "payload": {
                "cpu_util": {
                    "status": "success",
                    "data": {
                        "resultType": "matrix",
                        "result": [
                            {
                                "metric": {"node": "n1"},
                                "values": [[1700000000, "0.4"], [1700000030, "0.5"]],
                            }
                        ],
                    },
                }
            },
            "base": {"nodepools": [{"id": "pool", "nodes": [_NODE]}]},
        },
    },
    "twin": {
        "summary": "A twin document (validated as is)",
        "value": {"payload": {"timestamp": 10, "nodepools": [{"id": "pool", "nodes": [_NODE]}]}},
    },
}


@router.post(
    "/harmonize",
    response_model=HarmonizeResult,
    summary="Convert another format into the twin format",
    responses=ERROR_RESPONSES,
)
def post_harmonize(
    request: Annotated[HarmonizeRequest, Body(openapi_examples=EXAMPLES)],
) -> HarmonizeResult | JSONResponse:
    """Convert a DECICE digital twin, SuperCloud-style tables, Prometheus query results or a
    twin document into a valid twin document; align node samples on ``step_s``; list what
    was dropped and why. Nothing is stored. Bad input: 422 naming the field, e.g.
    ``body.payload.vertexpools[0].id``."""
    from twinsched.twin.harmonize.core import harmonize  # every reader: on the first request

    if not isinstance(request.payload, dict | list | str):
        kind = type(request.payload).__name__
        return _unprocessable(
            [("payload", f"must be an object, an array or text, not {kind}")], "body.payload"
        )
    base: TwinDocument | None = None
    try:
        if request.base is not None:
            base = validate_document(request.base)
    except DocumentError as exc:
        return _unprocessable(exc.problems, "body.base")
    try:
        return harmonize(request.payload, source=request.source, step_s=request.step_s, base=base)
    except HarmonizeError as exc:
        where = "body" if exc.argument else "body.payload"
        return _unprocessable([(exc.field, exc.problem)], where)
    except DocumentError as exc:
        return _unprocessable(exc.problems, "body.payload")


def _unprocessable(problems: list[tuple[str, str]], where: str) -> JSONResponse:
    """The service's error body, paths from the request body's root."""
    return problem_response([(_under(where, path), problem) for path, problem in problems])


def _under(where: str, path: str) -> str:
    if path in ("payload", "document"):
        return where
    return f"{where}{path}" if path.startswith("[") else f"{where}.{path}"
