"""``POST /nodes``, ``POST /pods`` and ``DELETE /pods/{namespace}/{name}``: what the service
is told about nodes and about pods it did not bind or that ended (a token for each)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from twinsched.serve.convert import pod_row
from twinsched.serve.deps import AUTH, FROM_TWIN, Authorized, service_of
from twinsched.serve.kube import NodeList, Pod
from twinsched.twin.api.problems import error_response

router = APIRouter(dependencies=[Authorized], responses=AUTH)


@router.post("/nodes", responses=FROM_TWIN)
def nodes(body: NodeList, request: Request) -> Response:
    """Set the nodes the service schedules on (what kube-scheduler names in its calls)."""
    service = service_of(request)
    cluster = service.cluster
    if cluster.source is not None:
        return error_response(409, "the nodes come from the twin (serve --twin)")
    rows = [service.reader.read(n, f"items[{k}]") for k, n in enumerate(body.items)]
    cluster.set_nodes(rows, "items")  # a duplicate name or a full label table: 400
    return JSONResponse({"nodes": len(rows), "overcommitted": cluster.overcommitted,
                         "missing": cluster.missing})  # fmt: skip


@router.post("/pods")
def pods(body: Pod, request: Request) -> dict[str, str]:
    """A pod update: one bound elsewhere is placed there, one that ended is released."""
    service = service_of(request)
    cluster = service.cluster
    row = pod_row(body, service.names, "body")
    if not cluster.ready:
        return {"error": "no nodes known: POST /nodes first"}
    if body.status.phase in ("Succeeded", "Failed"):
        cluster.release(row.key)
        return {"error": ""}
    cluster.pod(row)
    error = cluster.bind(row.key, body.spec.node_name) if body.spec.node_name else ""
    return {"error": error}


@router.delete("/pods/{namespace}/{name}")
def delete_pod(namespace: str, name: str, request: Request, uid: str = "") -> dict[str, bool]:
    """The pod was deleted: its resources are free again."""
    return {"released": service_of(request).cluster.release(uid or f"{namespace}/{name}")}
