"""A publisher to kill (light imports: it starts fast): node samples through the broker.

``python -c "from tests.twin.broker_publisher import main; main()" URL METRIC RATE``
publishes batch k (metric ``METRIC`` = k on nodes n1, n2, g1, at time k) about ``RATE`` times
a second, forever; each message the broker acknowledged is printed as ``SOURCE SEQ``
(flushed), so whoever kills it knows what the broker had.
"""

from __future__ import annotations

import sys
import time

from twinsched.store.history.store import MessageId
from twinsched.twin.broker.publisher import BrokerPublisher

NODES = ("n1", "n2", "g1")


def batch(k: int, metric: str = "k") -> dict[str, object]:
    """Batch k: ``metric`` = k on every node, at time k."""
    deltas = [{"op": "metrics", "node": n, "values": {metric: float(k)}} for n in NODES]
    return {"time": float(k), "deltas": deltas}


def _print(message: MessageId) -> None:
    sys.stdout.write(f"{message.source} {message.seq}\n")
    sys.stdout.flush()


def main() -> None:
    """Publish until killed (see the module's docstring)."""
    url, metric, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with BrokerPublisher(url, max_in_flight=64, on_ack=_print) as publisher:
        k = 0
        while True:
            k += 1
            publisher.publish_samples(batch(k, metric))
            time.sleep(1 / rate)
