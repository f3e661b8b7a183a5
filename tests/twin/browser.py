"""Debian's Chromium driven by Playwright, for the dashboard's tests and ``bench/ui_soak.py``.

Playwright's own browser download does not work offline, so the browser is the system one
(``.ci/test-deps`` installs it with apt). ``big_document`` builds a cluster of any size and
``Feeder`` keeps a twin changing (pods bound and released) at a given rate.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.twin.process import free_port

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-precise-memory-info",
]
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artefacts" / "ui"


def chromium_path() -> str:
    """The system Chromium; a clear error when it is missing (never a silent skip)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("the browser tests need Debian's chromium: run .ci/test-deps (apt)")


def launch(playwright: Any) -> Any:
    """A headless Chromium browser."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)


def heap_mb(page: Any) -> float:
    """The page's used JS heap after a full garbage collection, in MB."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("HeapProfiler.collectGarbage")
        used = cdp.send("Runtime.getHeapUsage")["usedSize"]
    finally:
        cdp.detach()
    return float(used) / 2**20


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations on the page (axe.min.js from the axe-playwright-python wheel)."""
    import axe_playwright_python

    script = Path(axe_playwright_python.__file__).parent / "axe.min.js"
    page.add_script_tag(content=script.read_text(encoding="utf-8"))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return list(result["violations"])


def big_document(nodes: int, pods: int, pools: int = 4) -> dict[str, Any]:
    """A twin document: ``nodes`` nodes over ``pools`` tiers (every 4th node with 8 GPUs),
    ``pods`` pods in jobs of 10, the first half running (round robin), the rest pending."""
    per_pool = -(-nodes // pools)
    names = [f"pool-{p}" for p in range(pools)]
    node_docs: list[list[dict[str, Any]]] = [[] for _ in range(pools)]
    for n in range(nodes):
        hardware: dict[str, Any] = {"cpu_milli": 64000, "memory_mib": 262144}
        if n % 4 == 0:
            hardware |= {"gpu_count": 8, "gpu_model": "A100"}
        node_docs[n // per_pool].append({"id": f"node-{n:04d}", "hardware": hardware})
    jobs = []
    for j in range(-(-pods // 10)):
        job_pods = []
        for k in range(j * 10, min(pods, (j + 1) * 10)):
            gpu = k % 3 == 0
            pod: dict[str, Any] = {
                "id": f"pod-{k:05d}",
                "requests": {"cpu_milli": 1000, "memory_mib": 2048,
                             "gpu_count": 1 if gpu else 0, "gpu_milli": 250 if gpu else 0},
                "timestamps": {"arrival_s": float(k % 100)},
                "phase": "Pending",
            }  # fmt: skip
            if k < pods // 2:
                node = (k * 4) % nodes if gpu else k % nodes
                gpus = [k % 8] if gpu else []
                pod |= {"phase": "Running", "node": f"node-{node:04d}", "gpus": gpus}
            job_pods.append(pod)
        jobs.append({"id": f"job-{j:04d}", "pods": job_pods})
    links = [{"source": names[p], "target": names[p + 1], "latency_ms": 5.0 * (p + 1),
              "bandwidth_mbps": 1000.0} for p in range(pools - 1)]  # fmt: skip
    return {
        "timestamp": 100.0,
        "nodepools": [{"id": names[p], "nodes": node_docs[p]} for p in range(pools)],
        "networks": links,
        "jobs": jobs,
    }


@contextlib.contextmanager
def serve_in_thread(app: Any, **tls: Any) -> Iterator[str]:
    """An ASGI app under uvicorn in a thread of this process: its URL. Starts in well under
    a second where a subprocess spends seconds importing (the suite's budget). ``tls``:
    uvicorn's ``ssl_*`` settings (the URL is then ``https``)."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error",
                            timeout_graceful_shutdown=1, **tls)  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def twin_in_thread(folder: Path, token: str) -> contextlib.AbstractContextManager[str]:
    """The twin's app (``create_app``, as ``twinsched twin serve`` builds it) on a fresh
    SQLite history in ``folder``, served by :func:`serve_in_thread`."""
    from twinsched.twin.api.app import create_app
    from twinsched.twin.core.settings import TwinSettings

    settings = TwinSettings(token=token, db=f"sqlite:///{folder / 'twin.db'}")
    return serve_in_thread(create_app(settings))


@dataclass
class Feeder:
    """A thread PATCHing the twin ``rate`` times a second: one pending pod of ``pods`` is
    bound to a node, the previous one released, and one metric sample is written."""

    url: str
    token: str
    pods: list[str]
    nodes: list[str]
    rate: float = 2.0
    patches: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Feeder:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        clock, k = 1000.0, 0
        with httpx.Client(base_url=self.url, headers=headers, timeout=10) as client:
            while not self._stop.wait(1.0 / self.rate):
                pod, node = self.pods[k % len(self.pods)], self.nodes[k % len(self.nodes)]
                before = self.pods[(k - 1) % len(self.pods)]
                deltas: list[dict[str, Any]] = [
                    {"op": "pod", "pod": before, "phase": "Pending"},
                    {"op": "pod", "pod": pod, "phase": "Running", "node": node},
                    {"op": "metrics", "node": node, "values": {"cpu_util": (k % 10) / 10}},
                ]
                if k == 0:
                    deltas = deltas[1:]
                clock += 1.0
                answer = client.patch("/api/v1/state", json={"time": clock, "deltas": deltas})
                if answer.status_code != 200:
                    self.errors.append(answer.text)
                self.patches += 1
                k += 1


def soak(
    page: Any,
    url: str,
    token: str,
    pending: list[str],
    nodes: list[str],
    seconds: float,
    rate: float = 2.0,
) -> dict[str, Any]:
    """Open the dashboard, then feed the twin for ``seconds``; the figures measured."""
    page.goto(f"{url}/ui")
    page.wait_for_function("window.twinUi.frames > 0", timeout=10_000)
    interactive = page.evaluate("window.twinUi.firstRenderMs") / 1000
    counts = {"nodes": page.inner_text("#node-count"), "pods": page.inner_text("#pod-count")}
    with Feeder(url, token, pending, nodes, rate=rate) as feeder:
        time.sleep(0.5)  # warm up
        frames0, heap0 = page.evaluate("window.twinUi.frames"), heap_mb(page)
        time.sleep(seconds)
        frames1, heap1 = page.evaluate("window.twinUi.frames"), heap_mb(page)
    assert feeder.errors == [], feeder.errors[:3]
    return counts | {
        "interactive_s": round(interactive, 3),
        "frames": frames1 - frames0,
        "patches": feeder.patches,
        "heap_start_mb": round(heap0, 2),
        "heap_end_mb": round(heap1, 2),
        "heap_growth_mb": round(heap1 - heap0, 2),
    }


def stuck_document(nodes: int = 40, pods: int = 300, pools: int = 4) -> dict[str, Any]:
    """:func:`big_document` plus pods that cannot be placed, one per reason: 9 GPUs (no node
    has so many), a label no node has, a GPU model no node has, one marked ``Unschedulable``
    by its feed though it fits; and ``power_w`` reported by the first two nodes."""
    doc = big_document(nodes, pods, pools)
    at = {"arrival_s": 1.0}
    small = {"cpu_milli": 100, "memory_mib": 64}
    doc["jobs"].append({"id": "job-stuck", "pods": [
        {"id": "stuck-gpu", "requests": {**small, "gpu_count": 9, "gpu_milli": 1000},
         "timestamps": at, "priority": 5},
        {"id": "stuck-label", "requests": small, "policies": {"required": ["zone=mars"]},
         "timestamps": at},
        {"id": "stuck-model", "requests": {**small, "gpu_count": 1, "gpu_milli": 100,
                                           "gpu_models": ["H100"]}, "timestamps": at},
        {"id": "stuck-rejected", "requests": small, "timestamps": at, "phase": "Unschedulable"},
    ]})  # fmt: skip
    first = doc["nodepools"][0]["nodes"]
    first[0]["metrics"] = {"power_w": 812.5}
    first[1]["metrics"] = {"power_w": 96.25, "cpu_util": 0.5}
    return doc


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(event, data, id)`` of each event of a ``text/event-stream`` read line by line."""
    import json

    kind, data, ident = "message", "", ""
    for line in lines:
        if line == "":
            if data:
                yield kind, json.loads(data), ident
            kind, data = "message", ""
        elif line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            data = line[len("data: ") :]
        elif line.startswith("id: "):
            ident = line[len("id: ") :]


def ui_frames(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The whole frames of a ``/ui/events`` stream: its first frame, then that frame with
    each delta applied (as the page does)."""
    from twinsched.twin.api.routes.ui_delta import apply

    picture: dict[str, Any] | None = None
    for kind, data, _ in sse_events(lines):
        if kind == "frame":
            picture = data
        elif kind == "delta" and picture is not None:
            picture = apply(picture, data)
        else:
            continue
        yield picture


@contextlib.contextmanager
def continuum_twin(folder: Path, token: str, source: str) -> Iterator[str]:
    """A twin in a thread holding the nodes of synthetic-continuum seed 3 (no pod): the
    cluster the workflow tests submit to."""
    from twinsched.model.convert import scenario_to_document
    from twinsched.traces.synthetic import continuum
    from twinsched.twin.client import TwinClient

    with twin_in_thread(folder, token) as url:
        with TwinClient(url, token) as client:
            client.put_state(scenario_to_document(continuum(3, pods=0)), source=source)
        yield url
