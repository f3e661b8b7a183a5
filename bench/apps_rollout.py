"""Applications on a real twin and controller: how long a deploy takes until every pod runs,
and how long a rolling update takes for several ``max_unavailable``, with the worst
unavailability seen in the twin's changes (never above the bound).

    python bench/apps_rollout.py [--replicas 40] [--bounds 1,4,10] [--pg URL]

``twinsched twin serve`` (SQLite, or PostgreSQL with ``--pg``) and ``twinsched scheduler run
--twin URL --scheduler bestfit`` run as subprocesses, as in ``tests/twin/test_apps_e2e.py``;
the cluster is 3 tiers of ``--nodes`` nodes. A small app runs first (the controller's start
is not counted). Prints one row per bound. Not part of the suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.twin.process import TwinProcess
from tests.twin.test_apps_e2e import worst_unavailability
from tests.twin.test_controller import TOKEN, wait_for
from tests.twin.test_controller_faults import controller

from twinsched.model.schema import parse_document
from twinsched.twin.apps.client import AppsClient


def cluster(nodes: int) -> dict[str, Any]:
    hw = {"cpu_milli": 32000, "memory_mib": 131072}
    pools = [{"id": t, "labels": {"tier": t},
              "nodes": [{"id": f"{t}-{k}", "hardware": hw} for k in range(nodes)]}
             for t in ("edge", "cloud", "hpc")]  # fmt: skip
    return {"timestamp": 0.0, "nodepools": pools, "networks": [], "jobs": []}


def spec(name: str, replicas: int, cpu: int, bound: int) -> dict[str, Any]:
    req = {"cpu_milli": cpu, "memory_mib": 512}
    return {"name": name, "strategy": {"max_unavailable": bound}, "templates": [
        {"name": "db", "tier": "cloud", "requests": req},
        {"name": "api", "replicas": replicas, "requests": req, "depends_on": ["db"]},
        {"name": "web", "replicas": replicas // 2, "tier": "edge", "requests": req,
         "depends_on": ["api"]},
    ]}  # fmt: skip


def settled(client: AppsClient, name: str, wanted: int) -> bool:
    app = client.read("default", name)
    return bool(app["status"] == "deployed" and app["updated"] == wanted)


def one(client: AppsClient, name: str, replicas: int, bound: int) -> dict[str, float]:
    wanted = 1 + replicas + replicas // 2
    client.register(spec(name, replicas, 500, bound), author="bench")
    started = time.perf_counter()
    client.action("default", name, "deploy", author="bench")
    wait_for(lambda: settled(client, name, wanted), 600)
    deploy_s = time.perf_counter() - started
    version, doc = client.get_versioned_state()
    running = {p.id for j in doc.jobs if j.id == f"app/default/{name}" for p in j.pods
               if p.phase == "Running"}  # fmt: skip
    started = time.perf_counter()
    client.update("default", name, spec(name, replicas, 700, bound), author="bench")
    wait_for(lambda: settled(client, name, wanted), 600)
    update_s = time.perf_counter() - started
    worst = worst_unavailability(client, version, running, wanted)
    client.action("default", name, "terminate", author="bench")
    wait_for(lambda: client.read("default", name)["status"] == "terminated", 600)
    return {"pods": wanted, "deploy_s": deploy_s, "update_s": update_s, "worst": worst}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=40)
    parser.add_argument("--bounds", default="1,4,10")
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--pg", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = args.pg or f"sqlite:///{folder}/twin.db"
        twin = TwinProcess(db, TOKEN, Path(folder) / "twin.log")
        twin.wait_ready()
        ctl = controller(twin.url, Path(folder) / "controller.log", "--scheduler", "bestfit")
        try:
            with AppsClient(twin.url, TOKEN) as client:
                client.put_state(parse_document(cluster(args.nodes)))
                run = uuid.uuid4().hex[:8]  # names of their own on a reused database
                one(client, f"warm-up-{run}", 2, 1)  # the controller's first read and imports
                print(f"backend {'postgresql' if args.pg else 'sqlite'}, replicas {args.replicas}")
                print("max_unavailable  pods  deploy_s  update_s  worst_unavailable")
                for k, bound in enumerate(int(b) for b in args.bounds.split(",")):
                    row = one(client, f"bench-{k}-{run}", args.replicas, bound)
                    print(f"{bound:>15}  {row['pods']:>4}  {row['deploy_s']:8.2f}  "
                          f"{row['update_s']:8.2f}  {row['worst']:>17}")  # fmt: skip
        finally:
            ctl.terminate()
            ctl.wait(10)
            twin.stop()


if __name__ == "__main__":
    main()
