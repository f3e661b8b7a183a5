"""The what-if panel of ``/ui`` in a real browser (Debian's Chromium driven by Playwright):
run a comparison, read the chart and the table, switch the figure, see a refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, sync_playwright

from tests.twin.browser import ARTEFACTS, axe_violations, launch, twin_in_thread
from tests.twin.conftest import TOKEN
from twinsched.model.document import TwinDocument
from twinsched.twin.client import TwinClient


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def twin(tmp_path: Path, noon: TwinDocument) -> Iterator[str]:
    with twin_in_thread(tmp_path, TOKEN) as url:
        with TwinClient(url, TOKEN) as client:
            client.put_state(noon)
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1800}, bypass_csp=True)
    yield context.new_page()
    context.close()


def run(page: Page, schedulers: str, seeds: str = "0-1") -> None:
    page.fill("#whatif-schedulers", schedulers)
    page.fill("#whatif-seeds", seeds)
    page.click("#whatif-run")


def test_the_panel_compares_schedulers(twin: str, page: Page) -> None:
    page.goto(f"{twin}/ui")
    page.select_option("#whatif-horizon", "3600")
    page.select_option("#whatif-figure", "gpu_alloc_pct")
    run(page, "bestfit,random")
    page.wait_for_function("window.twinWhatif.result !== null", timeout=60_000)
    bars = page.evaluate("window.twinWhatif.bars")
    assert [b["scheduler"] for b in bars] == ["bestfit", "random"]
    assert all(0 < b["mean"] <= 100 and b["height"] > 0 for b in bars), bars
    assert all(b["min"] <= b["mean"] <= b["max"] for b in bars)
    assert page.evaluate("window.twinWhatif.polls") >= 1  # progress was polled
    status = page.inner_text("#whatif-status")
    assert status.startswith("Done: version 1, 88 nodes,") and "2 seeds" in status
    assert page.locator("#whatif-table tbody tr").count() == 2
    assert page.inner_text("#whatif-table tbody tr th") == "bestfit"
    caption = page.inner_text("#whatif-caption")
    assert caption.startswith("GPU allocated (%): bestfit ") and "; random " in caption
    page.select_option("#whatif-figure", "queue_wait_s")
    assert page.inner_text("#whatif-caption").startswith("Queue wait (s): bestfit ")
    assert page.get_attribute("#whatif-chart", "aria-label") == page.inner_text("#whatif-caption")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#whatif-section").screenshot(path=ARTEFACTS / "twin-whatif.png")
    inside = [v for v in axe_violations(page)
              if any("whatif" in " ".join(n["target"]) for n in v["nodes"])]  # fmt: skip
    assert inside == [], inside


def test_a_refusal_is_shown(twin: str, page: Page) -> None:
    page.goto(f"{twin}/ui")
    run(page, "bestfit,nope")
    page.wait_for_function(
        "document.getElementById('whatif-status').textContent.startsWith('What-if failed')",
        timeout=10_000,
    )
    status = page.inner_text("#whatif-status")
    assert "schedulers[1]: unknown scheduler 'nope'" in status
    assert page.evaluate("window.twinWhatif.result") is None
    assert page.is_enabled("#whatif-run")
