"""Faults under the controller over the twin, with real processes (``twinsched twin serve`` on
SQLite, ``twinsched scheduler run``): the controller killed with SIGKILL during a fill-up and
started again binds no pod twice, loses none, and ends with the placements of an
uninterrupted run; the twin killed and started again under a running controller: it
reconnects and goes on binding.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from tests.twin.process import TwinProcess, running_twin
from tests.twin.test_controller import TOKEN, in_process, pending_document, placements, wait_for
from twinsched.twin.client import TwinClient
from twinsched.twin.controller.run import Settings, TwinController

START = "from twinsched.cli import app; app()"
# How often the twin is asked: each look reads a whole state or change list, and a tighter
# loop takes the CPU that the twin and the controller under test need
POLL_S = 0.1


def controller(url: str, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TWINSCHED_TWIN_TOKEN": TOKEN}
    args = ["scheduler", "run", "--twin", url, "--scheduler", "fgd", "--port", "0", *extra]
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", START, *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT)  # fmt: skip


def running(client: TwinClient) -> int:
    """The pods bound in the twin (polled: one client, not a new one per look)."""
    return len(placements(client.get_state()))


def test_a_controller_killed_mid_fill_up_resumes_without_binding_twice(tmp_path: Path) -> None:
    doc = pending_document(1500)
    expected = in_process(doc, "fgd", 2)
    with running_twin(tmp_path, TOKEN) as twin, TwinClient(twin.url, TOKEN) as client:
        version = client.put_state(doc)
        first = controller(twin.url, tmp_path / "c1.log", "--batch", "2", "--lease-ttl", "2")
        wait_for(lambda: len(client.changes(version, limit=100_000)["changes"]) >= 20, 60, POLL_S)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        at_kill = running(client)
        assert 40 <= at_kill < len(expected), "the kill must fall inside the fill-up"
        second = controller(twin.url, tmp_path / "c2.log", "--batch", "2", "--lease-ttl", "2",
                            "--until-idle")  # fmt: skip
        assert second.wait(120) == 0, (tmp_path / "c2.log").read_text()
        final = client.get_state()
        binds = [d["pod"] for c in client.changes(version, limit=100_000)["changes"]
                 for d in c["deltas"] if d["phase"] == "Running"]  # fmt: skip
    assert placements(final) == expected  # none lost, same placements as uninterrupted
    assert len(binds) == len(set(binds)) == len(expected)  # none bound twice
    assert "pods bound" in (tmp_path / "c2.log").read_text()


def test_the_twin_restarted_under_the_controller(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'twin.db'}"
    twin = TwinProcess(db, TOKEN, tmp_path / "twin.log")
    twin.wait_ready()
    client = TwinClient(twin.url, TOKEN)
    doc = pending_document(60)
    client.put_state(doc)
    ctl = TwinController(TwinClient(twin.url, TOKEN, timeout=2.0),
                         Settings(scheduler="fgd", retry_s=0.1, lease_ttl_s=3))  # fmt: skip
    thread = threading.Thread(target=ctl.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: running(client) == 60, 20, POLL_S)
        twin.kill()
        wait_for(lambda: not ctl.stats.connected, 10, POLL_S)
        twin = TwinProcess(db, TOKEN, tmp_path / "twin.log", port=twin.port)
        twin.wait_ready()
        pod = next(p for j in doc.jobs for p in j.pods).model_dump(mode="json")
        late = [{"op": "pod_add", "job": "late", "pod": pod | {"id": f"late-{k}"}}
                for k in range(3)]  # fmt: skip
        client.patch(client.get_state().timestamp, late)
        wait_for(lambda: running(client) == 63, 20, POLL_S)
        assert ctl.stats.connected and ctl.stats.lease and ctl.stats.errors["unreachable"] > 0
        health = httpx.get(f"{twin.url}/healthz", timeout=5).status_code
        assert health == 200
    finally:
        ctl.stop.set()
        thread.join(10)
        ctl.client.close()
        client.close()
        twin.stop()
