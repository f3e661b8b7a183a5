"""``twinsched flow run``: the training flow over services, each piece its own process.

:func:`run_flow` starts, on free loopback ports, with one log per process in ``out``:

1. the twin (``twinsched twin serve``, its history in ``out/twin.sqlite``);
2. the aggregator (``twinsched flow aggregate``): learner and evaluator;
3. the controller over the twin (``twinsched flow control``), its members in process,
   asking the aggregator per pod;
4. the VTE's feeder (``twinsched vte feed``), which PUTs the scenario and feeds its pods.

It waits for the feeder to finish (every pod arrived, bound and done, or nothing bound for
``idle`` seconds), prints progress every second, then reads each service's ``/healthz``,
stops them with SIGTERM (SIGKILL after 10 s) and writes ``out/summary.json``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.twin.flow.learner import bandit_name

READY_S = 60.0  # seconds a service may take to answer /healthz
STOP_S = 10.0


@dataclass
class FlowSpec:
    """What ``twinsched flow run`` was asked: the workload, the members, the pace."""

    out: Path
    schedulers: list[str]
    source: list[str]  # the feeder's workload options (--trace T --variant V --pods N ...)
    speed: float = 1e6
    idle_s: float = 3.0
    batch: int = 50
    seed: int = 0
    keep: KeptKey | None = None  # the learner's kept posterior (flow aggregate --keep)
    extra_env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KeptKey:
    """Where the aggregator's learner starts from and writes back to (store table
    ``bandit_states``): the scenario key, the mode, the store (None: the default one)."""

    scenario: str
    mode: str = "twin"
    db: str | None = None

    def args(self) -> list[str]:
        db = ["--db", self.db] if self.db else []
        return ["--keep", self.scenario, "--keep-mode", self.mode, *db]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def get_json(url: str, timeout: float = 2.0) -> dict[str, Any]:
    """``GET url`` as JSON (a 503's body too: the controller answers it while it waits)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()
    answer: dict[str, Any] = json.loads(body)
    return answer


class Processes:
    """The flow's processes, each with its log; :meth:`stop_all` ends them in reverse."""

    def __init__(self, out: Path, env: dict[str, str]) -> None:
        self.out, self.env = out, env
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.out / f"{name}.log").open("wb")
        command = [sys.executable, "-m", "twinsched.cli", *args]
        process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.running[name] = process
        return process

    def wait_ready(self, name: str, url: str) -> None:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.running[name].poll() is not None:
                raise TwinschedError(f"{name} exited early; see {self.out / name}.log")
            try:
                get_json(url, timeout=1.0)
                return
            except (OSError, ValueError):
                time.sleep(0.1)
        raise TwinschedError(f"{name} did not answer {url} in {READY_S:g} s")

    def stop_all(self) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for name, process in reversed(self.running.items()):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(STOP_S)
            codes[name] = process.returncode
        return codes


def run_flow(spec: FlowSpec, echo: Callable[[str], Any] = print) -> dict[str, Any]:
    """Run the flow of ``spec`` to its end; the summary (also in ``out/summary.json``)."""
    spec.out.mkdir(parents=True, exist_ok=True)
    (spec.out / "twin.sqlite").unlink(missing_ok=True)  # a fresh history per run
    env = {**os.environ, **spec.extra_env, "TWINSCHED_TWIN_TOKEN": secrets.token_hex(16)}
    ports = {name: free_port() for name in ("twin", "aggregator", "controller")}
    twin = f"http://127.0.0.1:{ports['twin']}"
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    members = ",".join(spec.schedulers)
    procs = Processes(spec.out, env)
    try:
        procs.start("twin", "twin", "serve", "--port", str(ports["twin"]), "--db",
                    str(spec.out / "twin.sqlite"), "--log-level", "warning")  # fmt: skip
        procs.start("aggregator", "flow", "aggregate", "--twin", twin, "--schedulers", members,
                    "--port", str(ports["aggregator"]), "--seed", str(spec.seed),
                    *(spec.keep.args() if spec.keep else []))  # fmt: skip
        procs.start("controller", "flow", "control", "--twin", twin, "--aggregator",
                    urls["aggregator"], "--schedulers", members, "--port",
                    str(ports["controller"]), "--batch", str(spec.batch))  # fmt: skip
        for name in ("twin", "aggregator", "controller"):
            procs.wait_ready(name, f"{urls[name]}/healthz")
        echo(f"flow: twin {twin}, aggregator {urls['aggregator']}, controller "
             f"{urls['controller']}; logs in {spec.out}")  # fmt: skip
        started = time.monotonic()
        pace = ["--speed", f"{spec.speed:g}", "--idle", f"{spec.idle_s:g}"]
        feeder = procs.start("feeder", "vte", "feed", "--twin", twin, *spec.source, *pace)
        while feeder.poll() is None:
            time.sleep(1.0)
            echo(_progress(urls, time.monotonic() - started))
        wall = time.monotonic() - started
        if feeder.returncode != 0:
            said = (spec.out / "feeder.log").read_text(errors="replace").strip().splitlines()
            last = said[-1] if said else f"exit code {feeder.returncode}"
            raise TwinschedError(f"the feeder failed: {last} (log: {spec.out / 'feeder.log'})")
        summary = _summary(spec, urls, wall)
    finally:
        codes = procs.stop_all()
    summary["exit_codes"] = codes
    if spec.keep is not None:  # written by the aggregator as it stopped
        summary["kept"] = _kept(spec.keep, bandit_name(spec.schedulers))
    (spec.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _progress(urls: dict[str, str], elapsed: float) -> str:
    try:
        ctl = get_json(f"{urls['controller']}/healthz")
        agg = get_json(f"{urls['aggregator']}/healthz")["learner"]
    except (OSError, ValueError) as exc:
        return f"flow: {elapsed:5.1f} s: a service did not answer ({exc})"
    pending = "?" if ctl["pending"] is None else ctl["pending"]  # None: reading the twin
    return (f"flow: {elapsed:5.1f} s: {ctl['binds']} bound, {pending} pending; "
            f"rewards {agg['rewarded']}, arms {agg['arm_counts']}")  # fmt: skip


def _summary(spec: FlowSpec, urls: dict[str, str], wall: float) -> dict[str, Any]:
    lines = (spec.out / "feeder.log").read_text().strip().splitlines()
    fed = json.loads(lines[-1])
    time.sleep(0.5)  # the evaluator's last rewards (it follows the twin every 0.2 s)
    ctl = get_json(f"{urls['controller']}/healthz")
    agg = get_json(f"{urls['aggregator']}/healthz")
    if not agg["ok"]:
        raise TwinschedError(f"the evaluator stopped: {agg['failed']} (log: aggregator.log)")
    return {
        "schedulers": spec.schedulers, "wall_s": round(wall, 3), "feeder": fed,
        "binds": ctl["binds"], "binds_per_s": agg["evaluator"]["binds_per_s"],
        "controller": {k: ctl[k] for k in ("binds", "batches", "reads", "follows", "errors")},
        "learner": agg["learner"], "evaluator": agg["evaluator"],
    }  # fmt: skip


def _kept(key: KeptKey, name: str) -> dict[str, Any]:
    """The kept posterior after the session: rewards per member, in all, and writes."""
    from twinsched.store.bandits import kept_runs, load_posterior

    posterior = load_posterior(name, key.scenario, key.mode, key.db)
    if posterior is None:
        raise TwinschedError(f"the aggregator kept nothing for {key.scenario} (aggregator.log)")
    per_member = np.asarray(posterior.count).sum(axis=0).tolist()
    writes = kept_runs(name, key.scenario, key.mode, key.db)
    return {"scenario": key.scenario, "mode": key.mode, "rewards": int(sum(per_member)),
            "writes": writes,
            "per_member": dict(zip(posterior.members, per_member, strict=True))}  # fmt: skip
