"""The controller over the twin (``scheduler run --twin URL``) on a real twin (uvicorn in a
thread, SQLite history): the twin's own pending pods bound through the validated write path,
with provenance, the same placements as the same cycle in process, new pods taken from the
changes, one controller per session.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.twin.browser import twin_in_thread
from twinsched.model.convert import scenario_to_document
from twinsched.model.document import TwinDocument
from twinsched.model.events import Arrive
from twinsched.model.mirror import Mirror
from twinsched.model.state import ClusterState
from twinsched.sim.fillup import fillup_order
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.controller.replica import Replica
from twinsched.twin.controller.run import ControllerError, Settings, TwinController

TOKEN = "controller-test-token-0123456789ab"
SEEDS = Path(__file__).parent / "seeds"


def pending_document(pods: int, seed: int = 0) -> TwinDocument:
    """``pods`` pods of synthetic-continuum 3 (fill-up order of ``seed``), all Pending."""
    scenario = traces.load("synthetic-continuum", "3")
    order = fillup_order(scenario.pods, scenario.nodes.total_gpu_milli, seed)[:pods]
    from dataclasses import replace

    scenario = replace(scenario, pods=scenario.pods.take(order))
    state = ClusterState(scenario.nodes, scenario.pods, scenario.links)
    for i in range(scenario.pods.n):
        state.apply(Arrive(i))
    return scenario_to_document(scenario, state)


def placements(doc: TwinDocument) -> dict[str, tuple[str | None, tuple[int, ...]]]:
    """Where each running pod is (node, GPUs)."""
    return {p.id: (p.node, tuple(p.gpus)) for j in doc.jobs for p in j.pods if p.phase == "Running"}


def in_process(doc: TwinDocument, scheduler: str, batch: int) -> dict[str, Any]:
    """The same cycles, in process, on a replica of ``doc``: the placements to expect."""
    replica = Replica(doc, 0, scheduler)
    names, nodes = replica.pod_names, replica.mirror.node_names
    out: dict[str, Any] = {}
    while replica.dirty:
        for b in replica.cycle(batch):
            out[names[b.pod]] = (nodes[b.node], tuple(b.gpus))
    return out


@pytest.fixture(scope="module")
def twin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with twin_in_thread(tmp_path_factory.mktemp("twin-controller"), TOKEN) as url:
        yield url


class Running:
    """A controller on a thread; stopped (and its lease released) on exit."""

    def __init__(self, url: str, **settings: Any) -> None:
        self.client = TwinClient(url, TOKEN)
        self.controller = TwinController(self.client, Settings(**settings))
        self.thread = threading.Thread(target=self.controller.run, daemon=True)

    def __enter__(self) -> TwinController:
        self.thread.start()
        return self.controller

    def __exit__(self, *_: object) -> None:
        self.controller.stop.set()
        self.thread.join(10)
        self.client.close()


def wait_for(check: Any, timeout: float, every: float = 0.01) -> float:
    """Seconds until ``check()`` is true, looked at every ``every`` s (fails after
    ``timeout``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(every)
    return time.monotonic() - started


@pytest.mark.timing
def test_the_appendix_a_document_is_scheduled_within_a_second(twin_url: str) -> None:
    """D2.2 Appendix A (its pod asks for a label no node has: it stays Pending), with more
    pods that fit, harmonized and PUT: every schedulable pod is bound within 1 s, validly."""
    import httpx

    payload = json.loads((SEEDS / "d22.json").read_text())
    job = payload["jobs"][0]["job"]
    job["pods"] += [{"pod": {"policies": []}} for _ in range(6)]
    with httpx.Client(base_url=twin_url, timeout=10) as http:
        answer = http.post("/api/v1/harmonize", json={"source": "auto", "payload": payload})
        assert answer.status_code == 200, answer.text
        doc = TwinDocument.model_validate(answer.json()["document"])
    for pod in doc.jobs[0].pods:
        pod.phase = "Pending"
    expected = in_process(doc, "bestfit", 500)
    assert 0 < len(expected) < 7  # some pods fit, the Appendix A one does not
    with TwinClient(twin_url, TOKEN) as client, Running(twin_url, scheduler="bestfit") as ctl:
        wait_for(lambda: ctl.stats.lease and ctl.replica is not None, 10)
        client.put_state(doc)
        took = wait_for(lambda: placements(client.get_state()) == expected, 5)
        final = client.get_state()
    assert took < 1.0, f"bound {took:.2f} s after the PUT"
    mirror = Mirror.from_document(final, validate=True)
    assert mirror.disagreements.total() == 0  # every binding fits its node's books
    bound = [p for p in final.jobs[0].pods if p.phase == "Running"]
    assert {p.scheduler for p in bound} == {"bestfit"} and not any(p.fallback for p in bound)
    assert all(p.timestamps.start_s is not None for p in bound)
    with TwinClient(twin_url, TOKEN) as client:
        kept = client.decisions()["decisions"]  # provenance, kept by the twin's session
    assert {(d["pod"], d["node"]) for d in kept} == {(p, n) for p, (n, _) in expected.items()}
    assert {(d["scheduler"], d["fallback"]) for d in kept} == {("bestfit", False)}


def test_a_fill_up_in_batches_equals_the_cycle_in_process(twin_url: str) -> None:
    doc = pending_document(400)
    expected = in_process(doc, "fgd", 64)
    with TwinClient(twin_url, TOKEN) as client:
        version = client.put_state(doc)
        with Running(twin_url, scheduler="fgd", batch=64) as ctl:
            wait_for(lambda: ctl.stats.binds >= len(expected) and not ctl.replica.dirty, 60)
            assert ctl.stats.reads == 1  # one whole state, then only changes
            assert ctl.stats.batches == -(-len(expected) // 64)
        final = client.get_state()
        assert placements(final) == expected
        binds = [d["pod"] for c in client.changes(version, limit=100_000)["changes"]
                 for d in c["deltas"] if d["phase"] == "Running"]  # fmt: skip
    assert len(binds) == len(set(binds)) == len(expected)  # each pod bound once


def test_new_pods_are_taken_from_the_changes(twin_url: str) -> None:
    doc = pending_document(20)
    with TwinClient(twin_url, TOKEN) as client:
        client.put_state(doc)
        with Running(twin_url, scheduler="fgd") as ctl:
            wait_for(lambda: len(placements(client.get_state())) == 20, 10)
            first = next(p for j in doc.jobs for p in j.pods)
            pod = first.model_dump(mode="json") | {"id": "late-pod"}
            client.patch(client.get_state().timestamp,
                         [{"op": "pod_add", "job": "late-job", "pod": pod}])  # fmt: skip
            wait_for(lambda: "late-pod" in placements(client.get_state()), 5)
            assert ctl.stats.reads == 1 and ctl.replica is not None and ctl.replica.grown == 1


def test_a_controller_of_the_live_session(twin_url: str) -> None:
    with TwinClient(twin_url, TOKEN) as client:
        client.put_state(pending_document(10), source="controller test")
        live = int(client.sessions()["live"])
        with Running(twin_url, scheduler="fgd", session=live) as ctl:
            wait_for(lambda: len(placements(client.get_state())) == 10, 10)
            assert ctl.stats.lease
        client.put_state(pending_document(10), source="another run")  # a new live session
        with TwinClient(twin_url, TOKEN, session=live) as old:
            ctl = TwinController(old, Settings(scheduler="fgd", session=live, retry_s=0.01))
            with pytest.raises(ControllerError, match=f"--session {live}: not the live"):
                ctl.run()


def test_one_controller_per_session(twin_url: str) -> None:
    with TwinClient(twin_url, TOKEN) as client:
        client.put_state(pending_document(5))
        with Running(twin_url, scheduler="fgd", holder="first") as first:
            wait_for(lambda: first.stats.lease, 10)
            with Running(twin_url, scheduler="fgd", holder="second", retry_s=0.05) as second:
                time.sleep(0.3)
                assert not second.stats.lease and "'first'" in second.stats.last_error
                assert second.stats.binds == 0
        # the first released its lease on exit: the next one takes it at once
        with Running(twin_url, scheduler="fgd", holder="third") as third:
            wait_for(lambda: third.stats.lease, 5)


def test_bad_input_is_a_clear_cli_error(twin_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from twinsched.cli import app

    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    run = ["scheduler", "run", "--twin", twin_url, "--port", "0"]
    unknown = CliRunner().invoke(app, [*run, "--scheduler", "no-such-scheduler"])
    assert unknown.exit_code == 2 and "no-such-scheduler" in unknown.output
    assert "fgd" in unknown.output  # the known names are listed
    session = CliRunner().invoke(app, [*run, "--session", "7"])
    assert session.exit_code == 2 and "--session 7: no such session" in session.output
    for bad in (["--batch", "0"], ["--lease-ttl", "0.5"], ["--session", "0"], ["--wait", "99"]):
        answer = CliRunner().invoke(app, [*run, *bad])
        assert answer.exit_code == 2 and bad[0] in answer.output, answer.output
    gone = CliRunner().invoke(app, ["scheduler", "run", "--twin", "http://127.0.0.1:9",
                                    "--session", "1", "--port", "0"])  # fmt: skip
    assert gone.exit_code == 2 and "twin answered 0" in gone.output


def test_healthz_and_metrics(twin_url: str) -> None:
    import httpx

    from twinsched.twin.controller.service import serve

    with TwinClient(twin_url, TOKEN) as client:
        client.put_state(pending_document(30))
        with Running(twin_url, scheduler="fgd", holder="health") as ctl:
            server = serve(ctl)
            try:
                base = f"http://127.0.0.1:{server.server_address[1]}"
                wait_for(lambda: ctl.stats.binds > 0 and not ctl.replica.dirty, 10)
                health = httpx.get(f"{base}/healthz", timeout=5)
                metrics = httpx.get(f"{base}/metrics", timeout=5).text
                missing = httpx.get(f"{base}/nope", timeout=5)
            finally:
                server.shutdown()
                server.server_close()
    body = health.json()
    assert health.status_code == 200 and body["ok"] and body["holder"] == "health"
    assert body["binds"] == ctl.stats.binds > 0 and body["pending"] is not None
    assert f"twinsched_controller_binds_total {float(ctl.stats.binds)}" in metrics
    assert "twinsched_controller_lease 1.0" in metrics
    assert missing.status_code == 404 and "/healthz" in missing.json()["detail"]
    ctl.stats.lease = False  # a controller without its lease is not healthy
    assert ctl.health()["ok"] is False


def test_a_collector_moving_the_twins_time_on_does_not_make_it_read_again(twin_url: str) -> None:
    """Samples written on the twin between the controller's reads and its writes make a
    batch 'older than the twin': it is written again at the twin's newer time, nothing read
    again, the same placements."""
    doc = pending_document(300)
    expected = in_process(doc, "fgd", 10)
    stop = threading.Event()
    with TwinClient(twin_url, TOKEN) as client:
        client.put_state(doc)
        node = doc.nodepools[0].nodes[0].id

        def samples() -> None:
            with TwinClient(twin_url, TOKEN) as feeder:
                k = 0
                while not stop.is_set():
                    k += 1
                    feeder.patch(float(k), [{"op": "metrics", "node": node,
                                             "values": {"cpu_util": 0.5}}])  # fmt: skip
                    time.sleep(0.02)  # 50 samples a second

        feeder = threading.Thread(target=samples, daemon=True)
        feeder.start()
        try:
            wait_for(lambda: client.get_state().timestamp > 3, 10)
            with Running(twin_url, scheduler="fgd", batch=10) as ctl:
                wait_for(lambda: ctl.stats.binds >= len(expected) and not ctl.replica.dirty, 60)
        finally:
            stop.set()
            feeder.join(10)
        assert placements(client.get_state()) == expected
    assert ctl.stats.reads == 1 and ctl.stats.errors["late_batch"] > 0
    assert set(ctl.stats.errors) == {"late_batch"}


def test_an_out_of_step_write_stands_over_an_earlier_change_of_another_writer() -> None:
    """The twin put another writer's delta (a feeder's: pod Pending) before this controller's
    bind of the same pod. Following the changes in the twin's order, the replica ends with the
    pod bound, as the twin has it, not pending to be bound a second time (seen under load)."""
    replica = Replica(pending_document(4), 0, "fgd")
    (bound, *_) = replica.cycle(1)
    name = replica.pod_names[bound.pod]
    ours = replica.deltas([bound], replica.time)
    theirs = [{"op": "pod", "pod": name, "phase": "Pending", "node": None, "gpus": []}]
    answer = {"version": 2, "time": replica.time, "changes": [
        {"version": 1, "deltas": theirs}, {"version": 2, "deltas": ours},
    ]}  # fmt: skip
    replica.follow(answer)
    assert replica.version == 2
    running = replica.mirror.state.pod_node[bound.pod]
    assert replica.mirror.node_names[int(running)] == replica.mirror.node_names[bound.node]
    assert bound.pod not in {b.pod for b in replica.cycle(4)}  # not bound a second time
