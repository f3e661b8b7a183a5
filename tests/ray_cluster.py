"""A Ray cluster of real ``ray start`` nodes on this machine, for tests: a head node, then more
nodes joining it with their own CPUs and resources, as on a real cluster.

Everything is private to the cluster: its own temp folder and free ports, so it neither meets
nor disturbs another Ray on the machine. It is stopped by process id (every process whose
command line names its temp folder, and their children), never with ``ray stop``, which
kills every Ray process of the machine by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = Path(sys.executable).parent / "ray"  # the ray of this interpreter's environment
START_TIMEOUT_S = 120
HOST = "127.0.0.1"


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _port_range_below_ephemeral(count: int) -> int:
    """The first port of ``count`` consecutive ports, all free now, below the kernel's ephemeral
    range, where :func:`_free_ports` (the kernel's choice) can never land on one of them."""
    low_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        low = rng.randrange(10_000, low_ephemeral - count)
        with contextlib.ExitStack() as stack:
            try:
                for port in range(low, low + count):
                    stack.enter_context(socket.socket()).bind((HOST, port))
            except OSError:
                continue
        return low
    raise RuntimeError(f"no {count} consecutive free ports below {low_ephemeral}")


def _node_ports() -> list[str]:
    """The ports every node listens on, each free now; workers get a free range of 51 below
    the ephemeral range, so that no port picked by the kernel for another component (or
    another node) falls inside it."""
    manager, objects, agent, agent_grpc, metrics, runtime_env = _free_ports(6)
    low = _port_range_below_ephemeral(51)
    return [
        f"--node-manager-port={manager}", f"--object-manager-port={objects}",
        f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
        f"--min-worker-port={low}", f"--max-worker-port={low + 50}",
    ]  # fmt: skip


class RayCluster:
    """``ray start --head`` in a temp folder of its own; :meth:`add_node` joins more nodes."""

    def __init__(self, env: dict[str, str]) -> None:
        # Without RAY_AUTH_MODE, `ray start` turns token authentication on whenever a token
        # is in ~/.ray (any local ray.init() writes one), and a driver joining by address
        # would then be refused: this test cluster runs without, as its drivers do, unless
        # ``env`` says otherwise.
        self.env = {"RAY_AUTH_MODE": "disabled", **env}
        self.temp_dir = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short socket paths
        self.nodes = 1
        gcs, dashboard = _free_ports(2)
        self.address = f"{HOST}:{gcs}"
        self._start(
            "--head", f"--port={gcs}", f"--temp-dir={self.temp_dir}", "--num-cpus=1",
            "--include-dashboard=false", f"--dashboard-port={dashboard}",
        )  # fmt: skip

    def add_node(self, num_cpus: int, resources: dict[str, float]) -> None:
        """A second raylet joining the head, with its own CPUs and custom resources."""
        self._start(
            f"--address={self.address}", f"--num-cpus={num_cpus}",
            f"--resources={json.dumps(resources)}",
        )  # fmt: skip
        self.nodes += 1

    def _start(self, *args: str) -> None:
        command = [
            str(RAY), "start", *args, *_node_ports(), f"--node-ip-address={HOST}",
            "--object-store-memory=80000000", "--disable-usage-stats",
        ]  # fmt: skip
        done = subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=START_TIMEOUT_S
        )
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"ray start failed ({done.returncode}): {done.stderr[-2000:]}")

    def pids(self) -> set[int]:
        """This cluster's processes: those naming its temp folder, and their descendants."""
        parents: dict[int, int] = {}
        ours: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                stat = (entry / "stat").read_text()
            except OSError:  # ended meanwhile
                continue
            pid = int(entry.name)
            state, parent = stat.rsplit(")", 1)[1].split()[:2]
            if state == "Z":  # ended, waiting for its parent to reap it
                continue
            parents[pid] = int(parent)
            if str(self.temp_dir) in cmdline:
                ours.add(pid)
        grown = True
        while grown:
            children = {p for p, parent in parents.items() if parent in ours} - ours
            ours |= children
            grown = bool(children)
        return ours - {os.getpid()}

    def stop(self, grace_s: float = 1.0) -> None:
        """SIGTERM every process of the cluster, SIGKILL what is left after ``grace_s``."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                    os.kill(pid, sig)
            deadline = time.monotonic() + grace_s
            while self.pids() and time.monotonic() < deadline:
                time.sleep(0.1)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
