"""Kill -9 the service during ingestion, restart it: every acknowledged write is there."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.twin.conftest import TOKEN, tiny_document
from tests.twin.process import TwinProcess
from twinsched.twin.client import TwinClient, TwinClientError

NODES = ("n1", "n2", "g1")


def _batch(k: int) -> list[dict[str, object]]:
    """Batch k at time k: 300 metrics deltas of 4 values, the pod p1 toggled."""
    deltas: list[dict[str, object]] = [
        {"op": "metrics", "node": NODES[i % 3], "time": k + i / 1000,
         "values": {"a": k, "b": i, "c": 1.0, "d": -1.0}}
        for i in range(300)
    ]  # fmt: skip
    phase: dict[str, object] = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}
    deltas.append(phase if k % 2 else {"op": "pod", "pod": "p1", "phase": "Pending"})
    return deltas


def test_kill_during_ingestion_loses_no_acknowledged_write(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'twin.db'}"
    twin = TwinProcess(db, TOKEN, tmp_path / "twin.log")
    acked: list[int] = []
    try:
        twin.wait_ready()
        with TwinClient(twin.url, TOKEN) as client:
            assert client.put_state(tiny_document()) == 1
        enough, stop = threading.Event(), threading.Event()

        def ingest() -> None:
            with TwinClient(twin.url, TOKEN, timeout=10) as client:
                for k in range(1, 10_000):
                    if stop.is_set():
                        return
                    try:
                        result = client.patch(float(k), _batch(k))
                    except TwinClientError:
                        return  # the server died under us
                    assert result.version == k + 1
                    acked.append(k)
                    if k == 25:
                        enough.set()

        sender = threading.Thread(target=ingest)
        sender.start()
        assert enough.wait(60)
        twin.kill()  # mid-ingestion: the sender has a batch in flight
        stop.set()
        sender.join(30)
    finally:
        twin.stop()
    last = acked[-1]
    assert last >= 25

    again = TwinProcess(db, TOKEN, tmp_path / "twin.log")
    try:
        again.wait_ready()
        with TwinClient(again.url, TOKEN) as client:
            state = client.get_state()
            assert state.timestamp >= last  # the batch in flight may have committed too
            committed = int(state.timestamp)
            nodes = {n.id: n for p in state.nodepools for n in p.nodes}
            assert nodes["n1"].metrics["a"] == committed
            pod = state.jobs[0].pods[0]
            assert pod.phase == ("Running" if committed % 2 else "Pending")
            history = client.history("a", node="n2", step=1.0, agg="last")
            assert history["series"][0]["times"] == [float(k) for k in range(1, committed + 1)]
            samples = client.history("b", start=0.0, end=last + 0.5)["series"]
            assert sum(len(s["times"]) for s in samples) == 300 * last
            past = client.get_state(at=float(last - 1))
            assert past.timestamp == last - 1
            result = client.patch(committed + 1.0, _batch(committed + 1))
            assert result.version == committed + 2  # versions continue where they were
    finally:
        again.stop()
