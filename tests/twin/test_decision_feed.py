"""Who made each decision, from the controller through ``twinsched run --twin`` to ``/ui``.

A fill-up run feeds a real twin (uvicorn in a thread) through its :class:`TwinPublisher`; the
dashboard's event stream must name the scheduler of each new binding and mark the ones the
fallback made. The run's scheduler refuses every other pod ("no decision"), so the injected
fallback (``fgd``) binds those.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.twin.browser import twin_in_thread, ui_frames
from twinsched.model.cluster import BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import Binding
from twinsched.scheduling.framework import Decision, PodView, Reason, RunContext, Unschedulable
from twinsched.sim.fillup import FillupRun
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.publisher import TwinPublisher

TOKEN = "decision-feed-test-token-0123456789"


class EveryOther:
    """``firstfit`` on even pod indices, "no decision" on odd ones (forces the fallback)."""

    name = "every-other"

    def __init__(self) -> None:
        self.inner = registry.create("firstfit")
        self.refused: set[int] = set()

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        self.inner.reset(state, ctx)

    def place(self, state: ClusterState, pod: PodView, eligible: BoolA) -> Decision:
        if pod.index % 2:
            self.refused.add(pod.index)
            return Unschedulable(Reason.NO_DECISION, "refused on purpose")
        return self.inner.place(state, pod, eligible)


def frames(stream: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The frames of a ``/ui/events`` stream (the first, then each delta applied)."""
    return ui_frames(stream)


@pytest.fixture(scope="module")
def twin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with twin_in_thread(tmp_path_factory.mktemp("twin-decisions"), TOKEN) as url:
        yield url


def test_run_feeds_scheduler_and_fallback_to_the_dashboard(twin_url: str) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    scheduler = EveryOther()
    with TwinClient(twin_url, TOKEN) as client, httpx.Client(timeout=10) as http:
        publisher = TwinPublisher(client)
        run = FillupRun(scenario, scheduler, 0, target_pct=30, fallback="fgd",
                        observers=[publisher])  # fmt: skip
        with http.stream("GET", f"{twin_url}/ui/events") as response:
            stream = frames(response.iter_lines())
            next(stream)  # the dashboard's first look: what is bound then is no decision
            outcomes = [o for _ in range(8) for o in run.step()]
            run.control.finish()  # pushes the last step's binding too
            bound = {publisher.names[i]: b for i, b in outcomes if isinstance(b, Binding)}
            deadline, seen = time.monotonic() + 5, {}
            for picture in stream:
                seen = {d["pod"]: d for d in picture["decisions"]}
                if set(bound) <= set(seen) or time.monotonic() > deadline:
                    break
        pods = {p["id"]: p for p in client.pods()}
    assert len(bound) >= 6 and scheduler.refused, (bound, scheduler.refused)
    fell_back = {publisher.names[i] for i in scheduler.refused}
    assert set(bound) <= set(seen), "the dashboard missed bindings of the run"
    for pod, binding in bound.items():
        shown = seen[pod]
        assert shown["node"] == scenario.nodes.names[binding.node]
        by_fallback = pod in fell_back
        assert (shown["scheduler"], shown["fallback"]) == (
            ("fgd", True) if by_fallback else ("every-other", False)
        ), shown
        assert (binding.scheduler, binding.fallback) == (shown["scheduler"], by_fallback)
        assert (pods[pod]["scheduler"], pods[pod]["fallback"]) == (shown["scheduler"], by_fallback)
    flags = {d["fallback"] for d in seen.values()}
    assert flags == {True, False}, "the run should show both kinds of decision"
