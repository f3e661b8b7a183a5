"""The run explorer's page in Debian's Chromium under its own Content-Security-Policy (issue
38): facets and sorting from the server, 13 runs compared (a 10-seed group drawn as a mean ±
std band), hover, zoom, autoscaled axes, CSV of what is shown and PNG downloads, report links,
a readable 4xx, the multi-target sweep, shipped and user model cards, the 390 px layout, axe.
Screenshots go to test-artefacts/ui (docs/img/explorer-*.png are copies)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from playwright.sync_api import Page, sync_playwright

from tests.twin.browser import ARTEFACTS, axe_violations, launch, serve_in_thread
from twinsched.explorer.app import create_app
from twinsched.scheduling.ai.shipped import SHIPPED_DIGESTS
from twinsched.store import get_run

GROUP = "random on synthetic/continuum/1"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, one for the module (a launch takes seconds); each test opens a
    context of its own."""
    with sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


def _chart(page: Page, chart: str, what: str) -> Any:
    """``what`` of the uPlot instance ``u`` drawing ``#figure-CHART``."""
    return page.evaluate(
        f"(() => {{ const u = document.getElementById('figure-{chart}').uplot; return {what}; }})()"
    )


def _filter_and_sort(page: Page) -> None:
    page.wait_for_function("() => window.explorerUi.loads > 0")
    assert page.locator("#runs tbody tr").count() == 23
    assert "Energy (kWh)" in page.inner_text("#runs thead")
    page.select_option("#facet-scheduler", "fgd")  # a facet applies at once
    page.wait_for_function("() => window.explorerUi.loads > 1")
    assert page.locator("#runs tbody tr").count() == 2
    assert "fgd (2)" in page.inner_text("#facet-scheduler")
    page.select_option("#facet-scheduler", "")
    page.wait_for_function("() => window.explorerUi.loads > 2")
    page.click("#runs button[data-sort='id']")  # id ascending now
    page.wait_for_function("() => window.explorerUi.loads > 3")
    assert page.locator("#runs tbody tr").first.get_attribute("data-run") == "1"


def _hover_and_zoom(page: Page) -> list[float]:
    box = page.locator("#chart-alloc .u-over").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    idx = _chart(page, "alloc", "u.cursor.idx")
    shown = page.locator("#chart-alloc .u-legend .u-value").nth(1).inner_text()
    expected = _chart(page, "alloc", f"u.data[1][{idx}]")
    assert idx is not None and float(shown) == pytest.approx(expected, abs=1e-3)
    before = _chart(page, "alloc", "[u.scales.x.min, u.scales.x.max]")
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + 40)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40, steps=5)
    page.mouse.up()  # a drag zooms on x
    after: list[float] = _chart(page, "alloc", "[u.scales.x.min, u.scales.x.max]")
    assert before[0] < after[0] < after[1] < before[1]
    assert _chart(page, "alloc", "u.scales.y.min") > 10.0  # y follows the shown data, not 0
    return after


def _downloads(page: Page, shown_x: list[float], labels: list[str]) -> None:
    with page.expect_download() as got:
        page.click("#figure-alloc button[data-csv]")
    lines = Path(got.value.path()).read_text().splitlines()
    assert lines[0].startswith('"GPU workload arrived (% of capacity)",')
    assert f'"{GROUP}: mean of 10"' in lines[0]
    assert len(lines[0].split('","')) == len(labels)  # every shown series
    xs = [float(line.split(",")[0]) for line in lines[1:]]
    assert xs and shown_x[0] <= min(xs) and max(xs) <= shown_x[1]  # what is shown, only
    with page.expect_download() as got:
        page.click("#figure-alloc button[data-png]")
    assert Path(got.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with page.expect_download() as got:
        page.click("#figure-alloc button[data-svg]")
    drawn = ElementTree.parse(got.value.path()).getroot()  # well-formed SVG
    svg = "{http://www.w3.org/2000/svg}"
    assert [t.text for t in drawn.iter(f"{svg}title")] == labels[1:]  # one line per series
    assert len(list(drawn.iter(f"{svg}polygon"))) == 1  # the band


def _compare(page: Page, ids: list[int]) -> None:
    for run_id in ids:
        page.check(f"#pick-{run_id}")
    page.focus("#compare")
    page.keyboard.press("Enter")  # the button works from the keyboard
    page.wait_for_function("() => window.explorerUi.compares > 0")
    assert page.inner_text("#compare-error") == ""
    labels: list[str] = _chart(page, "alloc", "u.series.map(s => s.label)")
    assert f"{GROUP}: mean of 10" in labels
    assert _chart(page, "alloc", "u.bands.length") == 1  # the 10-seed group's band
    hi, lo = labels.index(f"{GROUP}: mean + std"), labels.index(f"{GROUP}: mean \u2212 std")
    widths = _chart(page, "alloc", f"u.data[{hi}].map((v, k) => v - u.data[{lo}][k])")
    assert max(w for w in widths if w is not None) > 0  # the band has a width
    ARTEFACTS.mkdir(parents=True, exist_ok=True)  # before the zoom below
    page.locator("#comparison").screenshot(path=ARTEFACTS / "explorer-compare.png")
    _downloads(page, _hover_and_zoom(page), labels)
    assert page.locator("#compared-runs a[href='/runs/1/report']").count() == 1
    page.uncheck("#group-by")  # one line per run, no band
    assert len(_chart(page, "alloc", "u.series")) == 1 + 12  # run 3 is a replay
    assert _chart(page, "alloc", "u.bands.length") == 0
    message = page.evaluate(
        "fetch('/api/compare?' + Array.from({length: 61}, (_, k) => 'ids=' + (k % 23 + 1))"
        ".join('&')).then(r => r.json().then(b => window.explorerUi.problem(r.status, b)))"
    )
    assert message.startswith("422: ids:") and "60" in message and "object" not in message


def test_the_page_compares_the_runs_asked_for(store: str, models: Path, browser: Any) -> None:
    runs = [get_run(i, store, decisions=False) for i in range(4, 24)]
    ids_100 = [r.id for r in runs if r.spec["target_pct"] == 100.0]
    with serve_in_thread(create_app(store, models)) as url:
        page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
        seen: list[tuple[str, str]] = []
        page.on("request", lambda r: seen.append((r.method, r.url)))
        page.goto(url)
        _filter_and_sort(page)
        _compare(page, [1, 2, 3, *ids_100])  # 13 runs, one group of 10 seeds
        page.click("#sweeps button[data-sweep='tiny']")
        page.wait_for_function("() => window.explorerUi.sweeps > 0")
        assert "20 of 20 cells stored" in page.inner_text("#sweep-title")
        assert "undefined" not in page.inner_text("#sweeps-section")
        assert "10 seeds" in page.inner_text("#sweeps tbody")
        page.click("#models button[data-card='0']")
        shipped = len(SHIPPED_DIGESTS)  # the shipped models, and the one trained above
        assert page.inner_text("#model-count") == f"({shipped + 1}: {shipped} shipped, 1 yours)"
        assert '"name": "tiny"' in page.inner_text("#card")
        assert "val_alloc_pct" in page.inner_text("#card-figures")
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        page.screenshot(path=ARTEFACTS / "explorer.png", full_page=True)
        page.context.close()
    assert serious == [], [(v["id"], v["help"]) for v in serious]
    assert {method for method, _ in seen} == {"GET"}
    assert [u for _, u in seen if not u.startswith((url, "blob:", "data:"))] == []


def test_the_page_at_390_px_keeps_the_scheduler(store: str, models: Path, browser: Any) -> None:
    with serve_in_thread(create_app(store, models)) as url:
        page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
        page.goto(url)
        page.wait_for_function("() => window.explorerUi.loads > 0")
        heads = page.locator("#runs thead th")
        seen = {}
        for k in range(heads.count()):
            if heads.nth(k).is_visible():
                seen[heads.nth(k).inner_text().strip(" \u25bc")] = heads.nth(k).bounding_box()
        for name in ("Compare", "Run", "Trace or scenario", "Scheduler"):  # seed and on: scrolled
            assert name in seen and seen[name]["x"] + seen[name]["width"] <= 390, (name, seen)
        wide = page.evaluate(
            "[...document.querySelectorAll('body *')].filter(e => !e.closest('.scroll') &&"
            " e.getBoundingClientRect().right > 391).map(e => e.tagName + '#' + e.id)"
        )
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, wide
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTEFACTS / "explorer-390.png")
        page.context.close()
    assert serious == [], [(v["id"], v["help"]) for v in serious]
