"""``/ui`` for operators and the landing page ``/`` in Chromium (Playwright), under the pages'
own Content-Security-Policy (no ``bypass_csp``; a violation reported by the browser fails):
headline figures equal ``GET /api/v1/summary``, the unschedulable pods listed with their
reasons, staleness from the last state change, the landing page's links, the 390 px layout,
axe-core. Screenshots go to ``test-artefacts/ui/`` (``docs/img`` has copies)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from tests.twin.browser import ARTEFACTS, axe_violations, stuck_document, twin_in_thread

TOKEN = "ui-ops-browser-test-token-012345"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with twin_in_thread(tmp_path_factory.mktemp("twin-ops"), TOKEN) as url:
        answer = httpx.put(f"{url}/api/v1/state", json=stuck_document(60, 40), headers=AUTH)
        assert answer.status_code == 200, answer.text
        yield url


@pytest.fixture
def csp_errors() -> list[str]:
    return []


def open_page(browser: Any, csp_errors: list[str], width: int = 1400) -> Page:
    """A page under the real CSP that records the browser's CSP reports."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    page.on(
        "console", lambda m: csp_errors.append(m.text) if "Content Security" in m.text else None
    )
    return page


def shot(page: Page, name: str, full: bool = True) -> None:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTEFACTS / f"{name}.png", full_page=full)


def shown_figures(page: Page) -> dict[str, dict[str, Any]]:
    """Per headline row (tier id): each figure's value and text as the page shows them."""
    return page.evaluate(  # type: ignore[no-any-return]
        """() => Object.fromEntries([...document.querySelectorAll('#headline tbody tr')].map(
          (tr) => [tr.dataset.tier, Object.fromEntries([...tr.querySelectorAll('td')].map(
            (td) => [td.dataset.figure, [Number(td.dataset.value), td.textContent]]))]))"""
    )


def test_headline_equals_the_api_and_the_unschedulable_pods_are_listed(
    twin: str, browser: Any, csp_errors: list[str]
) -> None:
    page = open_page(browser, csp_errors)
    try:
        page.goto(f"{twin}/ui")
        page.wait_for_selector("#headline tbody tr.total", timeout=8000)
        page.wait_for_selector("#unschedulable tbody tr")
        summary = httpx.get(f"{twin}/api/v1/summary").json()
        shown = shown_figures(page)
        rows = [*summary["tiers"], summary["total"]]
        assert set(shown) == {t["id"] for t in rows}
        for tier in rows:
            figures = shown[tier["id"]]
            for resource in ("cpu", "memory", "gpu"):
                pct = tier[resource]["pct"]
                assert figures[resource] == [pct, f"{pct:.2f}"], (tier["id"], resource)
            assert figures["power"] == [tier["power_w"], f"{tier['power_w'] / 1000:.2f}"]
            carbon = tier["carbon_g_per_h"]
            assert figures["carbon"] == [carbon, f"{carbon / 1000:.2f}"]
            assert figures["nodes"] == [tier["nodes"], f"{tier['up']} / {tier['nodes']}"]
        assert page.inner_text("#pending-total") == str(summary["pending"])
        stuck = summary["unschedulable"]
        assert page.inner_text("#unschedulable-total") == str(stuck["total"]) == "4"
        chips = page.eval_on_selector_all(
            "#unschedulable-reasons li", "li => li.map(x => [x.dataset.reason, x.textContent])"
        )
        assert {r: text for r, text in chips} == {
            r: f"{n} {r}" for r, n in stuck["reasons"].items()
        }
        listed = page.eval_on_selector_all(
            "#unschedulable tbody tr",
            "rows => rows.map(r => [r.dataset.pod, r.cells[3].textContent])",
        )
        assert listed == [[p["id"], p["reason"]] for p in stuck["pods"]]
        assert listed[0] == ["stuck-gpu", "InsufficientGPU"]  # priority 5 first
        assert page.inner_text("#power-source").startswith("Power: 2 of 60 nodes report power_w")
        shot(page, "twin-ops-headline")
    finally:
        page.context.close()
    assert csp_errors == []


def test_stale_when_the_state_stops_changing(
    twin: str, browser: Any, csp_errors: list[str]
) -> None:
    page = open_page(browser, csp_errors)
    clock = [9000.0]

    def change() -> None:
        clock[0] += 1
        body = {"time": clock[0], "deltas": [{"op": "metrics", "node": "node-0005",
                                              "values": {"cpu_util": clock[0] % 1}}]}  # fmt: skip
        assert httpx.patch(f"{twin}/api/v1/state", json=body, headers=AUTH).status_code == 200

    try:
        page.goto(f"{twin}/ui?stale=2")
        page.wait_for_function("() => window.twinUi.frames > 0", timeout=8000)
        change()
        page.wait_for_function("() => document.getElementById('freshness').textContent == 'live'")
        frames = page.evaluate("window.twinUi.frames")
        page.wait_for_function(  # the feed stopped: the page goes stale, the stream still up
            "() => document.getElementById('freshness').textContent.startsWith('stale: no "
            "state change for ')",
            timeout=8000,
        )
        assert page.inner_text("#health") == "ready"
        assert float(page.get_attribute("#freshness", "data-age") or 0) >= 2
        shot(page, "twin-ops-stale", full=False)
        change()
        page.wait_for_function("() => document.getElementById('freshness').textContent == 'live'")
        assert page.evaluate("window.twinUi.frames") > frames  # the change came as a delta
        assert page.evaluate("window.twinUi.fulls") == 1  # one whole frame, then deltas
    finally:
        page.context.close()
    assert csp_errors == []


def test_landing_page_links_the_twin_pages(twin: str, browser: Any, csp_errors: list[str]) -> None:
    page = open_page(browser, csp_errors)
    try:
        page.goto(f"{twin}/")
        links = page.eval_on_selector_all("a", "as => as.map(a => a.getAttribute('href'))")
        assert {"/ui", "/docs", "/redoc", "/openapi.json", "/api/v1/summary"} <= set(links)
        explorer = next(link for link in links if link.endswith(":8383/"))
        assert explorer == "http://127.0.0.1:8383/"
        for link in links:
            if link.startswith("/"):
                assert httpx.get(f"{twin}{link}").status_code == 200, link
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        assert serious == [], [(v["id"], v["help"]) for v in serious]
        shot(page, "twin-landing")
        page.click("text=Live twin")
        page.wait_for_selector("#headline tbody tr.total", timeout=8000)
        page.click("nav >> text=Home")  # and back from the live page
        page.wait_for_selector("#pages-title")
    finally:
        page.context.close()
    assert csp_errors == []


def test_narrow_layout_at_390_px(twin: str, browser: Any, csp_errors: list[str]) -> None:
    page = open_page(browser, csp_errors, width=390)
    try:
        page.goto(f"{twin}/ui")
        page.wait_for_selector("#headline tbody tr.total", timeout=8000)
        page.wait_for_function("() => window.twinUi.cellAt(0) !== null")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        first = page.evaluate("window.twinUi.cellAt(0)")
        assert first["x"] <= 10, first  # no 200 px gutter of tiers
        canvas = page.evaluate("document.getElementById('continuum').clientWidth")
        assert canvas >= 330, canvas
        box = page.locator("#headline thead th").last.bounding_box()  # carbon, in view
        assert box is not None and box["x"] + box["width"] <= 390, box
        assert page.locator("#links li").count() == 3  # the links, as text
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        assert serious == [], [(v["id"], v["help"], len(v["nodes"])) for v in serious]
        shot(page, "twin-ops-390")
    finally:
        page.context.close()
    assert csp_errors == []
