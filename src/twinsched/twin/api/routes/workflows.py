"""``/workflows``: submit a workflow; its tasks become pods of the twin (``twin/workflow.py``).

``POST /workflows`` checks the submission whole (types and ranges, task names, dependency
cycles, the inputs' nodepool, pod ids already in the twin: 422 naming the field, nothing
stored), then adds its task pods in one batch at the twin's time through the same write path
as ``PATCH /state``. The controller over the twin binds the pending ones; whoever runs the
tasks releases the others (``workflows/twin_run.py``). Submissions are kept in memory.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from twinsched.model.document import Id
from twinsched.twin.api.deps import Service, WriteAccess
from twinsched.twin.api.problems import ERROR_RESPONSES, WRITE_RESPONSES, ErrorBody
from twinsched.twin.api.routes.decisions import SessionQuery
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.workflow import WorkflowSubmission, check_against, check_submission, pod_adds

router = APIRouter(tags=["workflows"])
MAX_KEPT = 1000  # submissions kept in memory at most (the oldest goes first)


class Submitted(BaseModel):
    """What a submission did: its pods, the pending ones, the state's version after it."""

    workflow: str = Field(description="The workflow's name (its pods' job).")
    pods: int = Field(description="Task pods added.")
    pending: int = Field(description="Of which pending now (tasks with no parent).")
    version: int = Field(description="State version after the batch.")
    time: float = Field(description="The time the pods arrived (the state's time).")


def _kept(request: Request) -> dict[str, WorkflowSubmission]:
    kept: dict[str, WorkflowSubmission] = request.app.state.workflows  # set by create_app
    return kept


@router.post(
    "/workflows",
    response_model=Submitted,
    responses=WRITE_RESPONSES,
    dependencies=[WriteAccess],
    summary="Submit a workflow: its tasks become pods",
)
async def submit_workflow(
    request: Request, service: Service, submission: WorkflowSubmission,
    session: SessionQuery = None,
) -> Submitted:  # fmt: skip
    """Check the workflow, then add its task pods (entry tasks Pending, the others
    NotArrived) at the twin's time, all or nothing."""
    doc = service.document()
    check_submission(submission, {p.id for p in doc.nodepools})
    check_against(submission, doc)
    deltas = pod_adds(submission, service.time)
    patch = StatePatch.model_validate({"time": service.time, "deltas": deltas})
    raw = patch.model_dump_json(exclude_none=True).encode()
    result = await run_in_threadpool(
        lambda: service.apply(patch, raw, session=session, source=f"workflow {submission.name}")
    )
    kept = _kept(request)
    kept[submission.name] = submission
    while len(kept) > MAX_KEPT:
        del kept[next(iter(kept))]
    pending = sum(1 for d in deltas if d["pod"]["phase"] == "Pending")
    return Submitted(workflow=submission.name, pods=len(deltas), pending=pending,
                     version=result.version, time=result.time)  # fmt: skip


@router.get(
    "/workflows/{name}",
    response_model=WorkflowSubmission,
    responses={**ERROR_RESPONSES, 404: {"model": ErrorBody, "description": "No such workflow."}},
    summary="A submitted workflow",
)
async def get_workflow(request: Request, name: Annotated[Id, Path()]) -> WorkflowSubmission:
    """The workflow as submitted (kept in memory since the twin started)."""
    found = _kept(request).get(name)
    if found is None:
        raise HTTPException(404, f"no workflow {name!r} was submitted")
    return found
