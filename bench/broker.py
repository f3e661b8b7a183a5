"""Ingestion through NATS JetStream and RabbitMQ vs HTTP PATCH, and the kill -9 checks.

    python bench/broker.py [--nodes 30] [--metrics 10] [--batches 200] [--kills 5] [--rate 30]
                           [--broker nats://127.0.0.1:4222 --broker amqp://guest:guest@...]

For each broker (by default the NATS and the RabbitMQ of the tests), one ``twinsched twin
serve --broker`` in a subprocess (SQLite in a temporary folder) takes the same batches
(every node's metrics at one time), and each way is timed from the first send until the twin
has applied the last batch: PATCH /state (one sender, one batch a request; with the first
broker's twin only), the broker with one message per batch (``publish_deltas``), and the
broker with one message per node (``publish_samples``: a subject per node, what the
collectors send). Then ``tests/twin/broker_load.py``'s scenarios kill the twin, and
separately the publisher, ``--kills`` times under load, and check every acknowledged sample
is stored exactly once. Each stream is deleted afterwards.

    python bench/broker.py --fuzz 1000 [--pg postgresql://postgres@127.0.0.1:5432/test]

instead publishes that many hostile messages (``tests/twin/broker_fuzz.py``: forged and
out-of-range sequence numbers, sources with control, bidi or zero-width characters or 3,000
characters, bodies that are no batch or far in the future) among as many valid ones, into a
consumer on SQLite (and PostgreSQL with ``--pg``), on each broker, and prints the table row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.twin import document
from tests.twin.broker_fuzz import fuzz_broker
from tests.twin.broker_load import kill_the_publisher, kill_the_twin, status, wait
from tests.twin.broker_streams import SERVERS, delete_stream
from tests.twin.conftest import TOKEN, tiny_document
from tests.twin.process import TwinProcess

from twinsched.model.document import TwinDocument
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.client import TwinClient
from twinsched.twin.core.service import TwinService


def bodies(nodes: int, metrics: int, batches: int, start: float) -> list[dict[str, Any]]:
    """``batches`` batches: every node's ``metrics`` values at times start, start + 1, ..."""
    names = [f"m{i}" for i in range(metrics)]
    return [
        {"time": start + k, "deltas": [
            {"op": "metrics", "node": f"node-{n:05d}",
             "values": {m: float(k + n + i) for i, m in enumerate(names)}}
            for n in range(nodes)
        ]}
        for k in range(batches)
    ]  # fmt: skip


def throughput(args: argparse.Namespace, tmp: Path, server: str, http: bool) -> None:
    url = f"{server}/B{uuid.uuid4().hex[:10]}"
    name = "RabbitMQ" if server.startswith("amqp") else "NATS"
    twin = TwinProcess(f"sqlite:///{tmp / 'speed.db'}", TOKEN, tmp / "speed.log", "--broker", url)
    try:
        twin.wait_ready(180)
        with TwinClient(twin.url, TOKEN, timeout=120) as client:
            client.put_state(TwinDocument.model_validate(document(args.nodes, 0)))
            per_batch = args.nodes * args.metrics
            print(f"{args.batches} batches of {args.nodes} nodes x {args.metrics} metrics "
                  f"({per_batch} samples) into twin serve --broker (SQLite):")  # fmt: skip
            start = 1.0
            rows = []
            ways = ["a message per batch", "a message per node"]
            for way in ["HTTP PATCH"] * http + [f"{name}, {w}" for w in ways]:
                batch = bodies(args.nodes, args.metrics, args.batches, start)
                start += args.batches
                seconds, messages = _send(way, batch, client, url)
                rows.append((way, messages, seconds))
            for way, messages, seconds in rows:
                print(f"  {way:30s} {messages:6d} messages  {seconds:6.2f} s  "
                      f"{args.batches / seconds:7.1f} batches/s  "
                      f"{args.batches * per_batch / seconds:9,.0f} samples/s")  # fmt: skip
    finally:
        twin.stop()
        delete_stream(url)


def _send(
    way: str, batches: list[dict[str, Any]], client: TwinClient, url: str
) -> tuple[float, int]:
    started = time.perf_counter()
    if way == "HTTP PATCH":
        for body in batches:
            client.patch_json(json.dumps(body).encode())
        return time.perf_counter() - started, len(batches)
    applied = int(status(client)["applied"])
    started = time.perf_counter()
    with BrokerPublisher(url, max_in_flight=256) as publisher:
        for body in batches:
            if way.endswith("per batch"):
                publisher.publish_deltas(json.dumps(body).encode())
            else:
                publisher.publish_samples(body)
    sent = publisher.published
    wait(lambda: int(status(client)["applied"]) >= applied + sent, 600, way)
    return time.perf_counter() - started, sent


def kills(args: argparse.Namespace, tmp: Path, server: str) -> None:
    url = f"{server}/K{uuid.uuid4().hex[:10]}"
    scheme = server.split(":")[0]
    try:
        outcome = kill_the_twin(tmp, url, args.kills, args.rate)
        print(f"{scheme}: kill -9 the twin {outcome.kills} times under {args.rate * 3:g} msg/s: "
              f"{outcome.acked} messages acknowledged, each stored exactly once "
              f"(the twin restarted after the last kill: {outcome.status['applied']} applied, "
              f"{outcome.status['duplicates']} redelivered and dropped), "
              f"{outcome.seconds:.0f} s")  # fmt: skip
    finally:
        delete_stream(url)
    url = f"{server}/P{uuid.uuid4().hex[:10]}"
    db = f"sqlite:///{tmp / 'publisher.db'}"
    store = HistoryStore(db)
    store.take_lease()
    service = TwinService.restore(store)
    service.replace(tiny_document())
    try:
        outcome = kill_the_publisher(service, url, args.kills, args.rate)
        print(f"{scheme}: kill -9 the publisher {outcome.kills} times: {outcome.acked} messages "
              f"acknowledged, each stored exactly once ({outcome.status}), "
              f"{outcome.seconds:.0f} s")  # fmt: skip
    finally:
        store.close()
        dispose(db)
        delete_stream(url)


def fuzz(examples: int, server: str, db: str, name: str) -> None:
    """One row of the table: ``examples`` hostile messages on ``server`` into ``db``."""
    url = f"{server}/F{uuid.uuid4().hex[:10]}"
    store = HistoryStore(db)
    store.take_lease()
    service = TwinService.restore(store)
    service.replace(tiny_document())
    started = time.perf_counter()
    try:
        BrokerPublisher(url).close()  # the stream
        row = fuzz_broker(service, url, examples, seed=31)
    finally:
        store.close()
        dispose(db)
        delete_stream(url)
    cells = " | ".join(str(c) for c in row.cells())
    print(f"| {server.split(':')[0]}, {name} | {cells} | ({time.perf_counter() - started:.0f} s)")


def pg_schema(base: str) -> tuple[str, str]:
    """A fresh schema on ``base``: its store URL and name (drop it afterwards)."""
    import psycopg

    schema = f"fuzz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = base.replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{url}?options=-csearch_path%3D{schema}", schema


def fuzz_all(args: argparse.Namespace, servers: list[str], tmp: Path) -> None:
    print("| broker, database | tried | dead letters | valid applied | tracebacks | "
          "bad data stored | lost acked | hangs |")  # fmt: skip
    for i, server in enumerate(servers):
        fuzz(args.fuzz, server, f"sqlite:///{tmp / f'fuzz{i}.db'}", "SQLite")
        if args.pg:
            import psycopg

            url, schema = pg_schema(args.pg)
            try:
                fuzz(args.fuzz, server, url, "PostgreSQL")
            finally:
                with psycopg.connect(args.pg, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--rate", type=float, default=30.0, help="batches/s during the kills")
    parser.add_argument("--broker", action="append", help="a broker server, no stream (repeat "
                        "it); the NATS and the RabbitMQ of the tests when left out")  # fmt: skip
    parser.add_argument("--fuzz", type=int, default=0, help="hostile messages (then only that)")
    parser.add_argument("--pg", help="with --fuzz: also into PostgreSQL at this base URL")
    args = parser.parse_args()
    servers = args.broker or list(SERVERS.values())
    if args.fuzz:
        with tempfile.TemporaryDirectory() as tmp:
            fuzz_all(args, servers, Path(tmp))
        return
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        folders = [Path(tmp) / str(i) for i in range(len(servers))]
        for i, (server, folder) in enumerate(zip(servers, folders, strict=True)):
            folder.mkdir()
            throughput(args, folder, server, http=i == 0)
        for server, folder in zip(servers, folders, strict=True) if args.kills > 0 else []:
            kills(args, folder, server)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
