"""Hostile broker messages among valid ones, on a real broker into a twin (the issue-31 classes).

:func:`fuzz_broker` publishes ``examples`` hostile messages, each with at least one bad part
(a forged or out-of-range ``Twinsched-Seq``, a source with NUL, C1, bidi, zero-width or
separator characters or 513 to 3,000 characters, a body that is not a batch, a batch in the
far future or on an unknown node), interleaved with as many valid batches of one stream,
then consumes them and counts, as the reliability table does: clean errors (dead letters),
accepted (valid messages applied), tracebacks (log records with one), bad data stored (an id
other than the valid stream's, or a value that is not a valid batch's), lost acknowledged
writes (a valid message confirmed by the broker and not stored) and hangs (a valid message
not applied in time, or a delivery after the stream went quiet: a redelivery loop).
``tests/twin/test_broker_hostile.py`` runs a small budget; ``bench/broker.py --fuzz`` more.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

from tests.fuzz_table import Tally
from tests.twin.broker_load import batch, stored
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.messages import MSG_ID, SEQ, SOURCE
from twinsched.twin.broker.transport import connect
from twinsched.twin.broker.url import parse_broker_url
from twinsched.twin.core.service import TwinService

VALID = "valid/n1"
BAD_SOURCES = ["n\x00ul", "c1\x85", "bidi\u202e", "zw\u200b", "ls\u2028", "x" * 513, "é" * 3000]
# nats-py cuts a header value at NEL and U+2028 (line breaks to Python): the twin receives a
# valid source ("c1"), so these two travel on RabbitMQ only
NOT_ON_NATS = {"c1\x85", "ls\u2028"}
BAD_SEQS = [str(2**63), str(10**30), "-1", "0", "1e3", "0x1f", "1_0", "\u0663", "9" * 4000, ""]
BAD_BODIES: list[Any] = [
    b"{not json",
    {"time": "soon", "deltas": []},
    {"time": 1e12, "deltas": []},  # far in the future
    {"time": 1.0, "deltas": [{"op": "metrics", "node": "zz", "values": {"u": 1.0}}]},
    {"time": 1.0, "deltas": [{"op": "metrics", "node": "n1", "values": {"u\x00": 1.0}}]},
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
]


@dataclass
class BrokerRow(Tally):
    """One row of the reliability table for broker ingestion: ``clear`` counts dead letters,
    ``accepted`` valid messages applied; and two columns of its own."""

    lost: int = 0  # valid messages the broker confirmed and the twin did not store
    hangs: int = 0  # valid messages not applied in time, and deliveries after the quiet

    def cells(self) -> list[int]:
        """tried, dead letters, valid applied, tracebacks, bad data stored, lost, hangs."""
        return [self.tried, self.clear, self.accepted, self.tracebacks, self.wrongly,
                self.lost, self.hangs]  # fmt: skip


def hostile(rng: random.Random, k: int, nats: bool) -> tuple[dict[str, str], bytes]:
    """Hostile message ``k``: headers and body, at least one part of them bad (``nats``:
    only what a NATS header can carry)."""
    kind = rng.choice(["forged", "seq", "source", "body"])
    marked = {"time": 1.0, "deltas": [{"op": "metrics", "node": "n1", "values": {"k": -1.0}}]}
    source, seq, body = f"h{k}/n1", "1", json.dumps(marked).encode()  # -1: found if stored
    if kind == "forged":  # the valid stream, numbered beyond the window
        source, seq = VALID, str(rng.choice([10**9, 2**62, 10**6 + rng.randrange(10**12)]))
    elif kind == "seq":
        seq = rng.choice(BAD_SEQS)
    elif kind == "source":
        source = rng.choice([s for s in BAD_SOURCES if not (nats and s in NOT_ON_NATS)])
    else:
        bad = rng.choice(BAD_BODIES)
        body = bad if isinstance(bad, bytes) else json.dumps(bad).encode()
    return {SOURCE: source, SEQ: seq, MSG_ID: f"fuzz#{k}"}, body


def fuzz_broker(service: TwinService, url: str, examples: int, seed: int = 0) -> BrokerRow:
    """Publish ``examples`` hostile and as many valid messages, consume, count."""
    rng = random.Random(seed)
    conn = connect(parse_broker_url(url))
    nats = conn.url.scheme == "nats"
    try:
        subject = f"{conn.url.prefix}.fuzz"
        for k in range(1, examples + 1):
            valid = {SOURCE: VALID, SEQ: str(k), MSG_ID: f"{VALID}#{k}"}
            for headers, body in ((valid, json.dumps(batch(k)).encode()), hostile(rng, k, nats)):
                conn.call(conn.publish(subject, body, headers, 5), 10)  # confirmed
    finally:
        conn.close()
    return _consume(service, url, examples)


def _consume(service: TwinService, url: str, examples: int) -> BrokerRow:
    records: list[logging.LogRecord] = []
    handler = _Collect(records)
    logger = logging.getLogger("twinsched")
    logger.addHandler(handler)
    consumer = BrokerConsumer(service, url)
    consumer.start()
    row = BrokerRow(tried=examples)
    try:
        deadline = time.monotonic() + 10 + examples / 20
        while consumer.stats.applied < examples and time.monotonic() < deadline:
            time.sleep(0.05)
        received = consumer.stats.received
        time.sleep(2.0)  # quiet: nothing may come back
        row.hangs = examples - consumer.stats.applied + consumer.stats.received - received
    finally:
        consumer.stop()
        logger.removeHandler(handler)
    row.clear, row.accepted = consumer.stats.rejected, consumer.stats.applied
    row.tracebacks = sum(r.exc_info is not None for r in records)
    assert service.history is not None
    ids = service.history.applied_messages()
    row.wrongly = len(set(ids) - {VALID}) + int(ids.get(VALID, 0) > examples)
    values = stored(str(service.history.engine.url)).get("n1", [])
    row.lost = len({float(k) for k in range(1, examples + 1)} - set(values))
    row.wrongly += sum(not (v.is_integer() and 1 <= v <= examples) for v in values)
    row.wrongly += len(values) - len(set(values))  # a valid batch stored twice
    return row


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
