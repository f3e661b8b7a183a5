"""Run ``twinsched scheduler serve`` as a subprocess on a free loopback port (tests, benches).

``running_service(folder, token, nodes)`` starts one on the node objects ``nodes`` (written to
``folder`` and given as ``--nodes``), waits for ``/healthz`` and stops it on exit; the
process's output goes to ``folder / "service.log"``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.twin.process import TwinProcess, free_port
from twinsched.traces.datadir import data_root

START = "from twinsched.cli import app; app()"
SRC = Path(__file__).resolve().parents[2] / "src"


def command(*args: str) -> list[str]:
    """``twinsched scheduler serve ARGS`` (the public traces from the default data folder)."""
    data = str(data_root().resolve())
    return [sys.executable, "-c", START, "scheduler", "serve", "--data", data, *args]


def environment(token: str) -> dict[str, str]:
    """This checkout's sources first, and the service's token."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "TWINSCHED_SCHEDULER_TOKEN": token}


class ServiceProcess(TwinProcess):
    """``twinsched scheduler serve ARGS`` in a subprocess (the twin's start, probe and stop)."""

    def __init__(self, token: str, log: Path, *args: str) -> None:  # (no super(): no --db)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            command("--port", str(self.port), *args),
            env=environment(token),
            stdout=self._log,
            stderr=self._log,
        )


def refused_start(*args: str, timeout: float = 60) -> str:
    """Run ``scheduler serve ARGS``, which must exit with status 2 and no traceback before
    it serves (a service that starts instead fails on the time limit); its output."""
    done = subprocess.run(
        command("--port", str(free_port()), *args), env=environment("x" * 40),
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in output, output[-3000:]
    return " ".join(output.split())


@contextlib.contextmanager
def running_service(folder: Path, token: str, nodes: list[dict[str, Any]]) -> Iterator[str]:
    """A ready scheduler service on ``nodes`` (v1.Node objects); its URL. Stopped on exit."""
    node_file = folder / "nodes.json"
    node_file.write_text(json.dumps({"items": nodes}), encoding="utf-8")
    process = ServiceProcess(token, folder / "service.log", "--nodes", str(node_file))
    try:
        process.wait_ready()
        yield process.url
    finally:
        process.stop()
