"""The explorer's decisions and their explanations (issue 42): ``GET /api/runs/{id}/decisions``
lists a run's decisions in the order they were made, ``GET /api/runs/{id}/explain/{pod}``
explains one (``?to=NODE``: and what binding it there would change).

A run's explainer (its tape: the event log, recorded once by making the run again, then
kept in the cache folder) is kept in memory for the last :data:`KEPT` runs asked about, so
each further decision of those runs is explained from its log in well under a second.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool

from twinsched.errors import TwinschedError
from twinsched.experiments.explain import RunExplainer, stored_run_explainer
from twinsched.store import StoreError

KEPT = 4  # runs whose explainer (tape, names) stays in memory


class Explainers:
    """The explainers of the last :data:`KEPT` runs asked about (made once each)."""

    def __init__(self, db: str | None) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, RunExplainer] = OrderedDict()

    def get(self, run_id: int) -> RunExplainer:
        with self._lock:  # one recording per run, even when the page asks twice at once
            found = self._kept.get(run_id)
            if found is None:
                try:
                    found = stored_run_explainer(run_id, self.db)
                except StoreError as exc:
                    raise HTTPException(404, str(exc)) from None
                except TwinschedError as exc:
                    raise HTTPException(422, str(exc)) from None
                self._kept[run_id] = found
                while len(self._kept) > KEPT:
                    self._kept.popitem(last=False)
            self._kept.move_to_end(run_id)
            return found


RunId = Annotated[int, PathParam(ge=1, lt=2**63)]


def router(db: str | None) -> APIRouter:
    """The explorer's explanation routes over the store at ``db``."""
    explainers = Explainers(db)
    api = APIRouter()

    @api.get("/api/runs/{run_id}/decisions", summary="A run's decisions, in order")
    async def decisions(
        run_id: RunId,
        offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> dict[str, Any]:
        """Pod, node (None: not placed, with the reason), who bound it, the fallback flag."""
        explainer = await run_in_threadpool(explainers.get, run_id)
        rows = await run_in_threadpool(explainer.decisions, offset, limit)
        return {"run": run_id, "offset": offset, "decisions": rows,
                "total": len(explainer.tape.bound) + explainer.rejects}  # fmt: skip

    @api.get("/api/runs/{run_id}/explain/{pod}", summary="Why this pod went where it went")
    async def explain(
        run_id: RunId,
        pod: Annotated[str, PathParam(max_length=256, description="Name or #INDEX.")],
        top: Annotated[int, Query(ge=1, le=100)] = 5,
        to: Annotated[str | None, Query(max_length=256, description="What if here?")] = None,
    ) -> dict[str, Any]:
        """Filters, ranked candidates with their score terms, runner-up and margin, the
        tie-break, the fallback, a composite's part; with ``to``, the counterfactual."""
        explainer = await run_in_threadpool(explainers.get, run_id)

        def answer() -> dict[str, Any]:
            try:
                return explainer.explain(pod, top=top, to=to).to_dict()
            except TwinschedError as exc:
                raise HTTPException(404, str(exc)) from None

        return await run_in_threadpool(answer)

    return api
