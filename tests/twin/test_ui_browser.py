"""The live dashboard in a real browser (Debian's Chromium driven by Playwright).

The twin's app runs under uvicorn in a thread of the test process (``twin_in_thread``:
a subprocess would spend seconds of the suite importing; ``bench/ui_soak.py`` runs
``twinsched twin serve`` itself); a VTE fill-up run feeds it through its
``TwinPublisher`` (what ``twinsched run --twin URL`` does), one step at a time. Screenshots go
to ``test-artefacts/ui/`` (git-ignored). The soak length is ``TWINSCHED_UI_SOAK_S`` (seconds,
default 2 here; ``bench/ui_soak.py`` runs 2 minutes and prints the figures).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.twin.browser import (
    ARTEFACTS,
    axe_violations,
    big_document,
    soak,
    twin_in_thread,
)
from twinsched.model.document import TwinDocument
from twinsched.sim.fillup import FillupRun
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.publisher import TwinPublisher

TOKEN = "ui-browser-test-token-0123456789"
SOAK_S = float(os.environ.get("TWINSCHED_UI_SOAK_S", "2"))


@dataclass(frozen=True)
class Twin:
    url: str


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    with twin_in_thread(tmp_path_factory.mktemp("twin-ui"), TOKEN) as url:
        yield Twin(url)


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
    yield context.new_page()
    context.close()


def requests_of(page: Page) -> list[tuple[str, str]]:
    """Every request the page makes, as (method, url), recorded from now on."""
    seen: list[tuple[str, str]] = []
    page.on("request", lambda request: seen.append((request.method, request.url)))
    return seen


def shot(page: Page, name: str) -> None:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTEFACTS / f"{name}.png", full_page=True)


@pytest.mark.timing  # "a bound pod shows within 2 s" is wall time: run alone
def test_fed_by_a_run_counts_and_live_binding(twin: Twin, page: Page) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    seen = requests_of(page)
    with TwinClient(twin.url, TOKEN) as client:
        publisher = TwinPublisher(client)
        run = FillupRun(scenario, "fgd", 0, target_pct=30, observers=[publisher])
        page.goto(f"{twin.url}/ui")
        run.step()  # the publisher PUT the cluster at the start; this decides the first pod
        page.wait_for_function(f"window.twinUi.frames > 0 && "
                               f"document.getElementById('pod-count').textContent == "
                               f"'{len(publisher.names)}'", timeout=5000)  # fmt: skip
        assert page.inner_text("#node-count") == str(scenario.nodes.n)
        for _ in range(5):  # each decision PATCHes the previous step's binding first
            run.step()
        bound = [publisher.names[i] for i in range(5) if run.state.pod_node[i] >= 0]
        assert bound, "the run bound none of its first pods"
        row = f"#decisions tr[data-pod='{bound[-2] if len(bound) > 1 else bound[0]}']"
        started = time.monotonic()
        page.wait_for_selector(row, timeout=2000)  # a pod bound by the run: within 2 s
        assert time.monotonic() - started < 2.0
        running = sum(1 for p in client.pods() if p["phase"] == "Running")
        names = scenario.nodes.names
        client.patch(1e6, [{"op": "node", "node": names[0], "unschedulable": True},
                           {"op": "node", "node": names[1], "status": "NotReady"}])  # fmt: skip
    page.wait_for_function(
        f"document.getElementById('phase-Running').textContent == '{running}'", timeout=2000
    )
    page.wait_for_function("document.getElementById('cordoned-count').textContent == '1'")
    assert page.inner_text("#down-count") == "1"
    assert page.locator("#decisions tbody tr td:nth-child(5)").first.inner_text() == "fgd"
    assert page.get_attribute("#continuum", "aria-label").endswith("1 down, 1 cordoned")
    pools = len(scenario.nodes.pool_names)  # each pair of tiers listed once, no tier with itself
    assert page.locator("#links li").count() == pools * (pools - 1) // 2
    cordoned, down = (cell_colour(page, n) for n in (0, 1))
    assert cordoned == [255, 140, 0], cordoned  # the dashed orange frame, not the down cross
    assert down == [255, 77, 77], down  # the red cross of a down node
    shot(page, "twin-live")
    methods = {method for method, _ in seen}
    assert methods == {"GET"}, f"the dashboard must only read, made {methods}"
    foreign = [url for _, url in seen if not url.startswith(twin.url)]
    assert foreign == [], f"the dashboard loaded from elsewhere: {foreign}"


def cell_colour(page: Page, node: int) -> list[int]:
    """The RGB of the canvas pixel just inside the top-left corner of ``node``'s cell."""
    return page.evaluate(  # type: ignore[no-any-return]
        """(node) => {
          const p = window.twinUi.cellAt(node), dpr = window.devicePixelRatio || 1;
          const ctx = document.getElementById('continuum').getContext('2d');
          return Array.from(ctx.getImageData((p.x + 1) * dpr, (p.y + 1) * dpr, 1, 1).data)
            .slice(0, 3);
        }""",
        node,
    )


def test_keyboard_and_accessibility(twin: Twin, page: Page) -> None:
    with TwinClient(twin.url, TOKEN) as client:  # nodes to move between, whatever ran before
        client.put_state(TwinDocument.model_validate(big_document(nodes=40, pods=200)))
    page.goto(f"{twin.url}/ui")
    page.wait_for_function("window.twinUi.frames > 0", timeout=5000)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    for link in ("/", "/docs"):  # the pages of the twin
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.getAttribute('href')") == link
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "session"  # the session picker
    page.keyboard.press("Tab")  # the headline table (it scrolls sideways on a narrow screen)
    assert page.evaluate("document.activeElement.getAttribute('aria-labelledby')") == (
        "headline-title"
    )
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "find-node"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "continuum"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    summary = page.inner_text("#node-summary")
    second = page.evaluate("window.twinUiState().frame.nodes.id[1]")
    assert summary.startswith(f"{second} in "), summary
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "metric"
    serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
    assert serious == [], [(v["id"], v["help"], len(v["nodes"])) for v in serious]


@pytest.mark.parametrize(("path", "rendered"), [("/docs", ".opblock"), ("/redoc", "h1")])
def test_docs_render_offline(twin: Twin, browser: Any, path: str, rendered: str) -> None:
    page = browser.new_page()  # the page's own Content-Security-Policy applies here
    foreign: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(twin.url):
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(f"{twin.url}{path}")
    page.wait_for_selector(rendered, timeout=8000)
    page.close()
    assert foreign == []


@pytest.mark.timing
def test_large_cluster_fast_and_no_memory_growth(twin: Twin, browser: Any) -> None:
    doc = big_document(nodes=1000, pods=10_000)
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(TwinDocument.model_validate(doc))
    pending = [p["id"] for job in doc["jobs"] for p in job["pods"]
               if p["phase"] == "Pending" and not p["requests"]["gpu_count"]]  # fmt: skip
    nodes = [n["id"] for pool in doc["nodepools"] for n in pool["nodes"]]
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
    page = context.new_page()
    try:
        figures = soak(page, twin.url, TOKEN, pending, nodes, SOAK_S)
        page.fill("#find-node", nodes[0])  # the feeder wrote cpu_util samples for it
        page.dispatch_event("#find-node", "change")
        page.wait_for_function(
            "/: \\d+ samples, last/.test(document.getElementById('node-chart-caption').textContent)"
        )
        pool_caption = page.inner_text("#pool-chart-caption")
        shot(page, "twin-1000-nodes")
        print("dashboard figures:", figures)
    finally:
        context.close()
    assert figures["nodes"] == "1000" and figures["pods"] == "10000"
    assert figures["interactive_s"] < 1.0, figures  # a timing test: it runs alone
    # deltas come as the twin changes (several changes between two looks make one delta):
    # at least one during the soak, whatever the machine's load
    assert 1 <= figures["frames"] <= figures["patches"] + 1, figures
    assert figures["heap_growth_mb"] < 2.0, figures
    assert pool_caption.startswith("pool-0 mean: cpu_util: "), pool_caption
    assert "no samples" not in pool_caption


def test_decisions_after_the_run_and_the_session_picker(twin: Twin, page: Page) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    with TwinClient(twin.url, TOKEN) as client:
        publisher = TwinPublisher(client)
        run = FillupRun(scenario, "fgd", 0, target_pct=10, observers=[publisher])
        for _ in range(6):
            run.step()
        run.control.finish()
        made = {d["pod"] for d in client.decisions()["decisions"]}
        ran = client.sessions()["live"]
        page.goto(f"{twin.url}/ui")  # opened after the run: its decisions are there
        row = "#decisions tbody tr"
        page.wait_for_function(f"document.querySelectorAll('{row}').length == {len(made)}")
        assert made and page.locator(f"{row} td:nth-child(5)").first.inner_text() == "fgd"
        doc = TwinDocument.model_validate(
            {"nodepools": [{"id": "p", "nodes": [{"id": "solo", "hardware": {
                "cpu_milli": 1000, "memory_mib": 1024}}]}]}
        )  # fmt: skip
        client.put_state(doc, source="another feed")  # a new live session
    page.wait_for_function("document.getElementById('node-count').textContent == '1'")
    page.wait_for_function(f"document.querySelector('#session option[value=\"{ran}\"]')")
    assert page.locator(row).count() == 0  # the new session has no decisions yet
    page.select_option("#session", str(ran))  # the picker: the run's session, after it ended
    page.wait_for_function(
        f"document.getElementById('node-count').textContent == '{scenario.nodes.n}'"
    )
    page.wait_for_function(f"document.querySelectorAll('{row}').length == {len(made)}")
    shown = set(page.eval_on_selector_all(row, "rows => rows.map(r => r.dataset.pod)"))
    assert shown == made
    shot(page, "twin-session-picker")
