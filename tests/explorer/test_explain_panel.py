"""The explorer's decisions and explanations (issue 42): the JSON over a real SQLite store,
and the panel in Debian's Chromium (a run's decisions, "Why?" on one, the ranking with the
chosen node marked, a what-if), with axe and the screenshot of docs/explain.md (written to
test-artefacts/ui/explain-panel.png, copied to docs/img)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.twin.browser import ARTEFACTS, axe_violations, launch, serve_in_thread
from tests.twin.conftest import SyncASGI
from twinsched.experiments.runner import execute
from twinsched.explorer.app import create_app
from twinsched.model.run import RunSpec
from twinsched.store import record_run
from twinsched.store.db import dispose

SPECS = [
    RunSpec("synthetic-continuum", "bestfit*3+labels", 0, "2", target_pct=80.0),
    RunSpec("synthetic-continuum", "aggregate:fgd|bestfit", 0, "2", target_pct=80.0),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('explain') / 'store.db'}"
    for spec in SPECS:
        record_run(spec, execute(spec), url)
    yield url
    dispose(url)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINSCHED_CACHE", str(tmp_path / "cache"))


def test_decisions_and_explanations(store: str, tmp_path: Path) -> None:
    api = SyncASGI(create_app(store), owner=False)
    listed = api.get("/api/runs/1/decisions?limit=50").json()
    assert listed["total"] >= 50 and [d["seq"] for d in listed["decisions"]] == list(range(50))
    placed = next(d for d in listed["decisions"][20:] if d["node"] is not None)
    started = time.process_time()
    e = api.get(f"/api/runs/1/explain/%23{placed['pod']}?top=3").json()
    assert time.process_time() - started < 2.0
    assert e["chosen_name"] == placed["node"] and e["ranking"][0]["name"] == placed["node"]
    assert set(e["ranking"][0]["terms"]) == {"bestfit*3", "labels"}
    other = e["ranking"][1]["name"]
    what_if = api.get(f"/api/runs/1/explain/%23{placed['pod']}?to={other}").json()
    assert what_if["counterfactual"]["node"] == other and what_if["counterfactual"]["delta"]
    assert (tmp_path / "cache" / "explain").is_dir()  # the tape is kept for the next process
    vote = api.get(f"/api/runs/2/explain/%23{placed['pod']}").json()
    assert {m["member"] for m in vote["parts"]["members"]} == {"fgd", "bestfit"}
    assert api.get("/api/runs/9/decisions").status_code == 404
    missing = api.get("/api/runs/1/explain/nobody")
    assert missing.status_code == 404 and "nobody" in missing.json()["detail"]
    assert api.get("/api/runs/1/explain/%231?to=nowhere").status_code == 404
    assert api.get("/api/runs/1/decisions?limit=0").status_code == 422
    api.close()


def test_the_panel_explains_a_clicked_decision(store: str) -> None:
    with serve_in_thread(create_app(store)) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_context(viewport={"width": 1300, "height": 1100},
                                   bypass_csp=True).new_page()  # fmt: skip
        page.goto(url)
        page.wait_for_function("window.explorerUi.loads > 0")
        page.click("#runs button[data-decisions='1']")
        page.wait_for_function("window.explorerUi.decisions > 0", timeout=60_000)
        rows = page.locator("#decisions tbody tr")
        assert rows.count() == 100
        row = rows.nth(30)
        node = row.locator("td").nth(2).inner_text()
        row.locator("button").focus()
        page.keyboard.press("Enter")  # works from the keyboard
        page.wait_for_function("window.explorerUi.explains > 0", timeout=60_000)
        assert node in page.inner_text("#explain-title")
        chosen = page.locator("#explain-ranking tr.chosen td").nth(1).inner_text()
        first = page.locator("#explain-ranking tbody tr").first.locator("td").nth(1).inner_text()
        assert chosen == node == first  # a sum of scores places on its top node
        assert "bestfit*3" in page.inner_text("#explain-ranking thead")
        other = page.locator("#explain-ranking tbody tr").nth(1).locator("td").nth(1).inner_text()
        page.fill("#whatif input[name=to]", other)
        page.click("#whatif button")
        page.wait_for_function("window.explorerUi.explains > 1", timeout=60_000)
        assert "frag_amount_pct" in page.inner_text("#whatif-result")
        assert f"What if {other}" in page.inner_text("#whatif-result")
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        ARTEFACTS.mkdir(parents=True, exist_ok=True)  # docs/img/explain-panel.png is a copy
        page.locator("#decisions-section").screenshot(path=ARTEFACTS / "explain-panel.png")
        page.screenshot(path=ARTEFACTS / "explorer-explain.png", full_page=True)
        browser.close()
    assert serious == [], [(v["id"], v["help"]) for v in serious]
