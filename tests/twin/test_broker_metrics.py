"""The broker consumer's counters on the twin's ``/metrics``, fed by the real NATS server."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.twin.broker_load import batch, wait
from tests.twin.conftest import SyncASGI
from tests.twin.test_broker import _raw_publish, service, stream  # noqa: F401  (fixtures)
from twinsched.store.history import MessageId
from twinsched.twin.api.app import create_app
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings


def scrape(client: SyncASGI) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``/metrics`` as {(sample name, sorted labels): value}."""
    answer = client.get("/metrics")
    assert answer.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }


def test_metrics_count_what_the_broker_consumer_received_applied_and_dropped(
    stream: str,  # noqa: F811
    service: TwinService,  # noqa: F811
    settings: TwinSettings,
) -> None:
    app = create_app(settings, service=service)
    client = SyncASGI(app, owner=False)
    before = scrape(client)
    assert before[("twinsched_twin_broker_enabled", ())] == 0.0
    assert not any(name.startswith("twinsched_twin_broker_messages") for name, _ in before)

    BrokerPublisher(stream).close()  # creates the stream
    m1, m2, m3 = (MessageId("p/n1", k) for k in (1, 2, 3))
    unknown_node = {"time": 4.0, "deltas": [{"op": "metrics", "node": "zz", "values": {"k": 4.0}}]}
    _raw_publish(stream, [
        (m2, "", batch(2)),  # before the one it follows: sent back, delivered again
        (m1, "", batch(1)),
        (m1, "-again", batch(1)),  # a duplicate
        (MessageId("p/n1", 4), "", unknown_node),  # rejected
        (m3, "", batch(3)),
    ])  # fmt: skip
    consumer = BrokerConsumer(service, stream, retry_delay_s=0.05)
    consumer.start()
    app.state.broker = consumer
    try:
        wait(lambda: consumer.stats.last.get("p/n1") == 4, 20, "the stream to be applied")
        seen = scrape(client)
        client_status = client.get("/api/v1/broker").json()
    finally:
        consumer.stop()
        client.close()
    stats = consumer.stats

    def messages(event: str) -> float:
        return seen[("twinsched_twin_broker_messages_total", (("event", event),))]

    assert seen[("twinsched_twin_broker_enabled", ())] == 1.0
    assert messages("applied") == 3 and messages("duplicates") == 1
    sent_back = messages("redelivered_later")
    assert sent_back >= 1 and messages("redelivered") >= sent_back  # each came back
    assert messages("received") == 5 + messages("redelivered") == stats.received
    errors = {k: seen[("twinsched_twin_broker_errors_total", (("kind", k),))] for k in
              ("rejected", "write", "fetch")}  # fmt: skip
    assert errors == {"rejected": 1.0, "write": 0.0, "fetch": 0.0}
    assert seen[("twinsched_twin_broker_streams", ())] == 1.0
    status = client_status  # GET /broker: the same counters
    assert (status["received"], status["redelivered"], status["fetch_errors"]) == (
        messages("received"),
        messages("redelivered"),
        0,
    )
