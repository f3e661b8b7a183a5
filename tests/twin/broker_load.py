"""Load through the broker, and the two kill scenarios (the tests run one kill, the bench five).

The publisher killed is ``tests/twin/broker_publisher.py`` in a process of its own.
:func:`kill_the_twin` and :func:`kill_the_publisher` run a scenario and check that every
message the broker acknowledged is in the twin's history exactly once (AssertionError
otherwise); they return what they saw.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.twin.broker_publisher import NODES, batch
from tests.twin.conftest import TOKEN, tiny_document
from tests.twin.process import TwinProcess
from twinsched.store.history import HistoryStore, MessageId, Window, read_window
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.client import TwinClient
from twinsched.twin.core.service import TwinService

LOAD = "from tests.twin.broker_publisher import main; main()"


@dataclass(frozen=True)
class Outcome:
    """What a kill scenario saw: kills, messages acknowledged, and the consumer's counters."""

    kills: int
    acked: int
    status: dict[str, Any]
    seconds: float


def stored(db: str, metric: str = "k") -> dict[str, list[float]]:
    """The stored values of ``metric`` per node, in time order."""
    series, cut = read_window(HistoryStore(db).engine, Window(metric, limit=10_000_000))
    assert not cut
    return {s.node: s.values for s in series}


def wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate`` until true; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def status(client: TwinClient) -> dict[str, Any]:
    """The twin's ``GET /broker`` (one client per twin: a new one costs tens of ms of CPU)."""
    answer: dict[str, Any] = client._send("GET", "/broker").json()
    return answer


def _publish_at(
    url: str, rate: float, stop: threading.Event, acked: list[MessageId]
) -> tuple[Any, threading.Thread]:
    """A publisher sending ``rate`` batches a second from a thread until ``stop``; join the
    thread before closing the publisher (a send after the close finds its loop closed)."""
    publisher = BrokerPublisher(url, "load", max_in_flight=64, on_ack=acked.append)

    def loop() -> None:
        k = 0
        while not stop.wait(1 / rate):
            k += 1
            publisher.publish_samples(batch(k))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return publisher, thread


def kill_the_twin(tmp: Path, url: str, kills: int, rate: float) -> Outcome:
    """``twin serve --broker`` SIGKILLed ``kills`` times while a publisher sends ``rate``
    batches a second (3 messages each), restarted after each kill but the last; after the
    last, the publisher stops and a twin in this process (the same service and consumer,
    without HTTP: no process start) drains the backlog; then the history is checked."""
    started = time.monotonic()
    db, log = f"sqlite:///{tmp / 'twin.db'}", tmp / "twin.log"
    twin = TwinProcess(db, TOKEN, log, "--broker", url)
    twin.wait_ready()
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(tiny_document())
    stop, acked = threading.Event(), []
    publisher, sender = _publish_at(url, rate, stop, acked)
    try:
        for kill in range(1, kills + 1):
            with TwinClient(twin.url, TOKEN) as client:
                applied = int(status(client)["applied"])
                wait(lambda: int(status(client)["applied"]) > applied + rate, 30, "progress")  # noqa: B023
            twin.kill()  # mid-batch: fetched messages are neither committed nor acked
            if kill < kills:
                twin = TwinProcess(db, TOKEN, log, "--broker", url)
                twin.wait_ready()
    finally:
        stop.set()
        twin.stop()
    sender.join(timeout=60)
    assert not sender.is_alive(), "the publisher's thread did not stop"
    publisher.close()  # every message published is acknowledged, or this raises
    sent = {f"load/{n}": publisher._seq[f"load/{n}"] for n in NODES}
    store = HistoryStore(db)
    store.take_lease()
    consumer = BrokerConsumer(TwinService.restore(store), url)
    consumer.start()
    try:
        wait(lambda: consumer.stats.last == sent, 120, "the backlog")
    finally:
        consumer.stop()
        store.close()
    assert len(acked) == publisher.published == 3 * max(sent.values())
    values = stored(db)
    for node in NODES:  # each acknowledged sample once, in order
        assert values[node] == [float(k) for k in range(1, sent[f"load/{node}"] + 1)]
    stats = consumer.stats
    assert stats.rejected == stats.gaps == 0
    final = {"applied": stats.applied, "duplicates": stats.duplicates}
    return Outcome(kills, len(acked), final, time.monotonic() - started)


def _acked_until_killed(url: str, metric: str, count: int, rate: float) -> list[MessageId]:
    """Start a publisher process, SIGKILL it once the broker acknowledged ``count``
    messages; what it had printed by then."""
    acked = []
    with subprocess.Popen(
        [sys.executable, "-c", LOAD, url, metric, str(rate)], stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            source, _, seq = line.strip().rpartition(" ")
            acked.append(MessageId(source, int(seq)))
            if len(acked) >= count:
                break
        process.kill()  # SIGKILL: messages in flight are lost to it
        process.wait(10)
        for line in process.stdout.read().splitlines():  # printed before the kill
            source, _, seq = line.strip().rpartition(" ")
            if seq.isdigit():
                acked.append(MessageId(source, int(seq)))
    return acked


def kill_the_publisher(service: TwinService, url: str, kills: int, rate: float) -> Outcome:
    """``kills`` publisher processes, each SIGKILLed after 100 acknowledged messages, into a
    twin consuming in this process; then every acknowledged message is checked."""
    started = time.monotonic()
    BrokerPublisher(url).close()  # the stream exists before the first publisher dies
    consumer = BrokerConsumer(service, url)
    consumer.start()
    try:
        runs = [_acked_until_killed(url, f"k{run}", 100, rate) for run in range(kills)]
        last: dict[str, int] = {}
        for message in (m for run in runs for m in run):
            last[message.source] = max(message.seq, last.get(message.source, 0))
        done = lambda: all(consumer.stats.last.get(s, 0) >= q for s, q in last.items())  # noqa: E731
        wait(done, 60, "every acknowledged message")
    finally:
        consumer.stop()
    assert service.history is not None
    for run, acked in enumerate(runs):
        values = stored(str(service.history.engine.url), f"k{run}")
        for node in NODES:
            got = values[node]
            assert len(got) == len(set(got)), f"{node}: a sample twice"
            mine = {float(m.seq) for m in acked if m.source.endswith(f"/{node}")}
            assert mine <= set(got), f"{node}: acknowledged samples missing"
            assert len(mine) >= 30
    assert consumer.stats.rejected == 0
    stats = consumer.stats
    counters = {"applied": stats.applied, "duplicates": stats.duplicates, "gaps": stats.gaps}
    return Outcome(kills, sum(len(r) for r in runs), counters, time.monotonic() - started)
