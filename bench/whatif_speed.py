"""What-if speed: a twin of 1,000 nodes, a 2-hour horizon, two schedulers, five seeds.

    python bench/whatif_speed.py [--nodes 1000] [--pods 10000] [--workers 0,2]

The twin's state is ``synthetic`` ``cluster`` (``--nodes`` nodes, ``--pods`` pods over a day)
replayed with bestfit up to noon: running pods with their start, pending pods, the morning's
arrivals. For each ``--workers`` (``$TWINSCHED_WHATIF_WORKERS``) a ``twinsched twin serve
--snapshot`` process is started and asked, over HTTP, the what-if that
``twinsched twin whatif URL --schedulers fgd,bestfit --horizon 2h --seeds 0-4`` asks: the time
from the POST to the result (wall), the CPU seconds of the runs (every process) and the
twin's own wall; then with seeds 5-9 (not cached; a pool is warm) and the first request again
(the cache). The machine's load average is printed: wall times on a shared machine are
upper bounds.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.twin.process import TwinProcess

from twinsched.traces import synthetic
from twinsched.twin.whatif.replayed import replay_document

NOON = 12 * 3600.0


def ask(url: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """POST the what-if, poll it to the end: (seconds, the finished job)."""
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=30) as client:
        job = client.post("/api/v1/whatif", json=body).json()
        while job["status"] not in ("done", "failed"):
            time.sleep(0.02)
            job = client.get(f"/api/v1/whatif/{job['job']}").json()
    if job["status"] != "done":
        raise RuntimeError(job.get("error"))
    return time.perf_counter() - started, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--workers", default="0,2")
    args = parser.parse_args()
    cpu = time.process_time()
    scenario = synthetic.cluster(0, args.nodes, pods=args.pods, hours=24.0)
    doc = replay_document(scenario, "bestfit", 0, NOON)
    folder = Path(tempfile.mkdtemp(prefix="whatif-speed-"))
    snapshot = folder / "noon.json"
    snapshot.write_text(doc.model_dump_json(), encoding="utf-8")
    phases: dict[str, int] = {}
    for pod in (p for j in doc.jobs for p in j.pods):
        phases[pod.phase] = phases.get(pod.phase, 0) + 1
    print(f"state: {args.nodes} nodes, {phases}; built in {time.process_time() - cpu:.1f} s CPU")
    body = {"schedulers": ["fgd", "bestfit"], "horizon_s": 7200, "seeds": [0, 1, 2, 3, 4]}
    token = secrets.token_hex(16)
    for workers in [int(w) for w in args.workers.split(",")]:
        os.environ["TWINSCHED_WHATIF_WORKERS"] = str(workers)
        db = f"sqlite:///{folder / f'twin-{workers}.db'}"
        twin = TwinProcess(db, token, folder / "twin.log", "--snapshot", str(snapshot))
        try:
            twin.wait_ready()
            for label, seeds in (("first", [0, 1, 2, 3, 4]), ("seeds 5-9", [5, 6, 7, 8, 9]),
                                 ("cached", [0, 1, 2, 3, 4])):  # fmt: skip
                seconds, job = ask(twin.url, {**body, "seeds": seeds})
                result = job["result"]
                print(
                    f"workers {workers}, {label}: answered in {seconds:.2f} s wall; runs "
                    f"{result['runs_cpu_s']:.2f} s CPU, twin wall {result['wall_s']:.2f} s; "
                    f"load average {os.getloadavg()[0]:.1f}"
                )
            for row in result["schedulers"]:
                f = row["figures"]
                print(
                    f"  {row['scheduler']}: GPU alloc {f['gpu_alloc_pct']['mean']:.1f} %, "
                    f"wait {f['queue_wait_s']['mean']:.1f} s, "
                    f"completed {f['completed']['mean']:.0f}, arrivals {f['arrivals']['mean']:.0f}"
                )
        finally:
            twin.stop()


if __name__ == "__main__":
    main()
