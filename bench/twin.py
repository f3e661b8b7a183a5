"""Twin service speed: GET /state latency, PATCH ingestion, server memory over a soak.

    python bench/twin.py [--nodes 1000] [--pods 10000] [--clients 50] [--gets 2000]
                         [--batch-samples 10000] [--batches 100] [--soak-seconds 120] [--db URL]

The server is ``twinsched twin serve`` in a subprocess on 127.0.0.1 (SQLite in a temporary
folder unless ``--db``); the clients are async httpx in this process. Every loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

# the server launcher lives with the tests; run from anywhere, it is found from the repo root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.twin.process import TwinProcess

METRICS = ("cpu_util", "mem_util", "gpu_util", "power_w", "net_rx", "net_tx", "disk_io",
           "temp_c", "load1", "pods")  # fmt: skip


def document(nodes: int, pods: int) -> dict[str, Any]:
    """``nodes`` nodes in 10 pools (a quarter with 8 GPUs), ``pods`` pods in jobs of 10."""
    pools = []
    for p in range(10):
        members = []
        for n in range(p, nodes, 10):
            gpus = 8 if n % 4 == 0 else 0
            hardware: dict[str, Any] = {"cpu_milli": 64000, "memory_mib": 262144, "gpu_count": gpus}
            if gpus:
                hardware["gpu_model"] = "A100"
            members.append({"id": f"node-{n:05d}", "labels": {"zone": f"z{p}"},
                            "metrics": {"cpu_util": 0.0}, "hardware": hardware})  # fmt: skip
        pools.append({"id": f"pool-{p}", "nodes": members})
    jobs = []
    for j in range(0, pods, 10):
        members = []
        for k in range(j, min(j + 10, pods)):
            pod: dict[str, Any] = {
                "id": f"pod-{k:06d}",
                "requests": {"cpu_milli": 1000, "memory_mib": 2048},
                "timestamps": {"arrival_s": float(k % 100)},
            }
            if k % 2:
                pod.update(phase="Running", node=f"node-{k % nodes:05d}")
            members.append(pod)
        jobs.append({"id": f"job-{j // 10:05d}", "pods": members})
    return {"timestamp": 0.0, "nodepools": pools, "networks": [], "jobs": jobs}


def patch_bodies(nodes: int, samples: int, count: int, start: float) -> list[bytes]:
    """``count`` PATCH bodies of ``samples`` samples (10 metrics per node delta)."""
    deltas_per_batch = max(1, samples // len(METRICS))
    bodies = []
    for b in range(count):
        t = start + b
        deltas = [
            {"op": "metrics", "node": f"node-{(b * deltas_per_batch + i) % nodes:05d}",
             "values": {m: (i + b) % 100 / 100 for m in METRICS}}
            for i in range(deltas_per_batch)
        ]  # fmt: skip
        bodies.append(json.dumps({"time": t, "deltas": deltas}).encode())
    return bodies


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def get_load(url: str, clients: int, total: int) -> tuple[list[float], int]:
    """``total`` GET /state spread over ``clients`` concurrent connections."""
    latencies: list[float] = []
    size = 0
    remaining = total
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as http:

        async def worker() -> None:
            nonlocal remaining, size
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                response = await http.get("/api/v1/state")
                latencies.append(time.perf_counter() - started)
                size = len(response.content)

        await asyncio.gather(*(worker() for _ in range(clients)))
    return latencies, size


async def raw_get_load(port: int, clients: int, total: int, gzip: bool = False) -> list[float]:
    """Like :func:`get_load` with a minimal keep-alive HTTP/1.1 client on asyncio streams.

    httpx parses a 3.5 MiB answer in Python (about 10 ms of client CPU each), which on a
    2-core machine measures the client; this reads ``Content-Length`` bytes in one call.
    """
    latencies: list[float] = []
    remaining = total
    accept = "Accept-Encoding: gzip\r\n" if gzip else ""
    request = f"GET /api/v1/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{accept}\r\n".encode()

    async def worker() -> None:
        nonlocal remaining
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**22)
        try:
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(clients)))
    return latencies


async def ingest(url: str, token: str, bodies: list[bytes], clients: int) -> float:
    """Send every body with ``clients`` concurrent senders; the wall seconds taken."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    queue = list(reversed(bodies))
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:

        async def worker() -> None:
            while queue:
                body = queue.pop()
                response = await http.patch("/api/v1/state", content=body)
                response.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return time.perf_counter() - started


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def soak(twin: TwinProcess, token: str, args: argparse.Namespace) -> list[float]:
    """Mixed load (PATCH batches of 1,000 samples and GET /state) for ``soak_seconds``."""
    pid = twin.process.pid
    readings = [rss_mib(pid)]
    deadline = time.monotonic() + args.soak_seconds
    next_reading = time.monotonic() + 10
    t = 1e6
    while time.monotonic() < deadline:
        bodies = patch_bodies(args.nodes, 1000, 20, t)
        t += len(bodies)
        await ingest(twin.url, token, bodies, 2)
        await get_load(twin.url, 4, 8)
        if time.monotonic() >= next_reading:
            readings.append(rss_mib(pid))
            next_reading += 10
    readings.append(rss_mib(pid))
    return readings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--batch-samples", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--soak-seconds", type=float, default=120.0)
    parser.add_argument("--db", default=None, help="history database (default: temp SQLite)")
    args = parser.parse_args()
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{tmp}/twin.db"
        twin = TwinProcess(db, token, Path(tmp) / "twin.log")
        try:
            twin.wait_ready()
            run(twin, token, args)
        finally:
            twin.stop()


def run(twin: TwinProcess, token: str, args: argparse.Namespace) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    body = json.dumps(document(args.nodes, args.pods)).encode()
    started = time.perf_counter()
    httpx.put(f"{twin.url}/api/v1/state", content=body, headers=headers, timeout=120)
    print(f"PUT /state ({len(body) / 2**20:.1f} MiB): {time.perf_counter() - started:.2f} s")
    print(f"server RSS at start: {rss_mib(twin.process.pid):.0f} MiB")

    asyncio.run(get_load(twin.url, args.clients, 100))  # warm-up
    latencies, size = asyncio.run(get_load(twin.url, args.clients, args.gets))
    raw = asyncio.run(raw_get_load(twin.port, args.clients, args.gets))
    packed = asyncio.run(raw_get_load(twin.port, args.clients, args.gets, gzip=True))
    variants = (("httpx", latencies), ("raw asyncio", raw), ("raw asyncio gzip", packed))
    for client, measured in variants:
        ms = [x * 1000 for x in measured]
        print(f"GET /state, {args.nodes} nodes, {args.pods} pods ({size / 2**20:.1f} MiB), "
              f"{args.clients} {client} clients, {len(ms)} requests: "
              f"p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms")  # fmt: skip

    bodies = patch_bodies(args.nodes, args.batch_samples, args.batches, 1.0)
    samples = (args.batch_samples // len(METRICS)) * len(METRICS) * len(bodies)
    for clients in (1, 4):
        seconds = asyncio.run(ingest(twin.url, token, bodies, clients))
        print(f"PATCH /state, {len(bodies)} batches of {samples // len(bodies)} samples, "
              f"{clients} sender(s): {samples / seconds:,.0f} samples/s")  # fmt: skip
        bodies = patch_bodies(args.nodes, args.batch_samples, args.batches, 1e5 * clients)

    if args.soak_seconds > 0:
        readings = asyncio.run(soak(twin, token, args))
        print(f"soak {args.soak_seconds:.0f} s: server RSS start {readings[0]:.0f} MiB, "
              f"end {readings[-1]:.0f} MiB, max {max(readings):.0f} MiB "
              f"(every 10 s: {', '.join(f'{r:.0f}' for r in readings)})")  # fmt: skip


if __name__ == "__main__":
    main()
