"""The mirror's read, comparison and writes over a whole replay, in process (fast).

Prometheus' query API is stood in for at the HTTP boundary (httpx's mock transport) by the
answers a Prometheus scraping the VTE in its kube-state-metrics format would give
(``tests/twin/ksm_answers.py``); ``test_ksm_chain.py`` runs the real processes. Every 60
event batches of a replay with node failures: the twin shows the simulator's pods and down
nodes, the mirror's cached summary of the twin equals a fresh one, a second poll writes
nothing, and neither does a new mirror on the same twin (a restart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from tests.twin.ksm_answers import answers
from tests.twin.test_ksm_chain import expected, scenario
from twinsched.model.events import Event
from twinsched.model.faults import FaultSpec
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.framework import RunContext
from twinsched.sim import run_replay
from twinsched.twin.collectors.ksm import (
    FAMILY_LABEL,
    STATE_QUERY,
    FetchError,
    KsmMirror,
    by_family,
    details_query,
    redacted,
)
from twinsched.twin.collectors.ksm_diff import summarize
from twinsched.twin.core.service import TwinService


class Checker:
    """A run observer that mirrors the run's state into a twin and checks it."""

    def __init__(self) -> None:
        self.state: ClusterState | None = None
        self.queries: list[str] = []
        self.service = TwinService()
        self.mirror = self.new_mirror()
        self.batches = self.polls = 0
        self.downs: set[str] = set()

    def new_mirror(self) -> KsmMirror:
        return KsmMirror("http://prometheus", self.service, usage={},
                         transport=httpx.MockTransport(self.answer))  # fmt: skip

    def answer(self, request: httpx.Request) -> httpx.Response:
        assert self.state is not None
        query = parse_qs(request.content.decode())["query"][0]
        self.queries.append(query)
        wanted = set(re.findall(r'"twinsched_family", "(\w+)"', query))
        result = [{**s, "metric": {**s["metric"], FAMILY_LABEL: family}}
                  for family, found in answers(self.state, 1.0).items() if family in wanted
                  for s in found]  # fmt: skip
        data = {"resultType": "vector", "result": result}
        return httpx.Response(200, json={"status": "success", "data": data})

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.state = state

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        self.batches += 1
        if self.batches % 60 == 0:
            self.check(state)

    def on_end(self, state: ClusterState) -> None:
        self.check(state)

    def check(self, state: ClusterState) -> None:
        self.polls += 1
        at = 1e9 + self.polls
        self.mirror.poll_once(at)
        doc = self.service.document()
        pods = {p.id: (p.phase, p.node) for j in doc.jobs for p in j.pods}
        down = frozenset(n.id for p in doc.nodepools for n in p.nodes if n.status == "NotReady")
        assert (pods, down) == expected(state), at
        self.downs |= down
        assert self.mirror._known is not None and self.mirror._known[0] == summarize(doc)
        assert self.mirror.poll_once(at)["deltas"] == 0  # nothing twice
        assert self.new_mirror().poll_once(at)["deltas"] == 0  # nor after a restart


def test_the_mirror_follows_a_replay_with_failures_and_writes_nothing_twice() -> None:
    checker = Checker()
    faults = FaultSpec(rate_per_day=3.0, mttr_s=3600.0)
    run_replay(scenario(), registry.create("fgd"), 0, observers=[checker], faults=faults)
    assert checker.polls >= 10 and checker.downs
    assert checker.mirror.stats.rejected == {}  # no series refused
    pods = [q for q in checker.queries if "kube_pod_owner" in q]
    assert pods and all('uid=~"' in q for q in pods)  # details only for new pods, by uid


def test_the_state_query_tags_every_family_and_filters_the_current_phase() -> None:
    families = re.findall(r'"twinsched_family", "(\w+)"', STATE_QUERY)
    assert len(families) == len(set(families)) == 7
    assert "kube_pod_status_phase == 1" in STATE_QUERY
    assert 'kube_node_status_condition{condition="Ready"} == 1' in STATE_QUERY
    assert 'uid=~"a-1|b-2"' in details_query(["b-2", "a-1"])
    assert "uid=~" not in details_query(['x"|.*'])  # not a uid: read every pod
    assert "uid=~" not in details_query([f"u{i}" for i in range(5000)])  # too many


def test_series_are_sorted_by_their_family_tag() -> None:
    result: list[Any] = [{"metric": {FAMILY_LABEL: "kube_node_info", "node": "n1"}},
                         {"metric": {FAMILY_LABEL: "nope"}}, "junk", {"metric": 3}]  # fmt: skip
    out = by_family(result)
    assert out["kube_node_info"] == result[:1] and sum(map(len, out.values())) == 1


def test_credentials_in_the_prometheus_url_are_used_never_shown() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        return httpx.Response(500)

    url = "https://mirror:s3cret-pass@prometheus.example:9090/"
    assert redacted(url) == "https://***@prometheus.example:9090/"
    mirror = KsmMirror(url, TwinService(), usage={}, transport=httpx.MockTransport(answer))
    with pytest.raises(FetchError) as failed:
        mirror.fetch(STATE_QUERY, 1.0)
    assert "s3cret" not in str(failed.value) and "***@prometheus.example" in str(failed.value)
    assert seen and seen[0].startswith("Basic ")  # basic authentication from the URL
