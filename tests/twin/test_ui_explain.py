"""The explanation panel of the twin's ``/ui`` (issue 42) in Debian's Chromium: a real twin
(its app under uvicorn in a thread, a SQLite history) fed by a fill-up run through its
``TwinPublisher`` (what ``run --twin`` does), a decision clicked and one activated from the
keyboard, each explained by ``GET /api/v1/decisions/{seq}/explain``; a decision written
without its scheduler shows the twin's 404 message; axe with the panel open; the panel at
390 px. The screenshot of docs/explain.md and docs/ui.md is written to
``test-artefacts/ui/ui-explain.png`` (docs/img/ui-explain.png is a copy)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from tests.twin.browser import ARTEFACTS, axe_violations, twin_in_thread
from twinsched.sim.fillup import FillupRun
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.publisher import TwinPublisher

TOKEN = "ui-explain-test-token-0123456789"
SCHEDULER = "bestfit*3+labels"
ENSEMBLE = "aggregate:fgd|bestfit"
STEPS = 12


@pytest.fixture(scope="module")
def fed_twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The twin's URL after a small run (its decisions named ``SCHEDULER``), one binding
    written as the ensemble's (on the node of the run's first decision) and one written
    without a scheduler: (url, the pod of the last)."""
    scenario = traces.load("synthetic-continuum", "3")
    with twin_in_thread(tmp_path_factory.mktemp("twin-explain"), TOKEN) as url:
        with TwinClient(url, TOKEN) as client:
            run = FillupRun(scenario, SCHEDULER, 0, target_pct=30,
                            observers=[TwinPublisher(client)])  # fmt: skip
            for _ in range(STEPS):
                run.step()
            free = [p["id"] for p in client.pods()
                    if p["phase"] != "Running" and not p["requests"]["gpu_count"]]  # fmt: skip
            node = httpx.get(f"{url}/api/v1/decisions").json()["decisions"][-1]["node"]
            bind = {"op": "pod", "phase": "Running", "node": node}
            client.patch(1e6, [bind | {"pod": free[0], "scheduler": ENSEMBLE}])
            client.patch(1e6 + 1, [bind | {"pod": free[1]}])
        yield url, free[1]


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1300, "height": 1000}, bypass_csp=True)
    yield context.new_page()
    context.close()


def _open(page: Page, url: str) -> list[dict[str, Any]]:
    """The page with its decisions drawn; the decisions as the twin lists them."""
    kept = httpx.get(f"{url}/api/v1/decisions").json()["decisions"]
    page.goto(f"{url}/ui")  # waits by locators: no string evaluated in the page (its CSP)
    page.locator(f"#decisions tbody tr[data-seq='{kept[-1]['seq']}']").wait_for()
    assert page.locator("#decisions tbody tr").count() == len(kept)
    return list(kept)


def _explained(page: Page, count: int) -> dict[str, Any]:
    page.locator(f"#explain-body[data-explains='{count}']").wait_for(timeout=30_000)
    return page.evaluate("() => window.twinExplain.last")  # type: ignore[no-any-return]


def _check_panel(page: Page, decision: dict[str, Any], e: dict[str, Any]) -> None:
    """The panel shows the explanation of ``decision``, and it agrees with the decision."""
    assert e["chosen_name"] == decision["node"] and e["pod_name"] == decision["pod"]
    ranking = page.locator("#explain-ranking tbody tr")
    assert ranking.count() == len(e["ranking"])
    chosen = page.locator("#explain-ranking tr.chosen th").inner_text()
    assert chosen == decision["node"]
    first = ranking.first.locator("th").inner_text()
    moved = page.locator("#explain-facts dt:text-is('Moved by') + dd").inner_text()
    assert first == e["ranking"][0]["name"]
    if first == decision["node"]:  # the top of the ranking, or the panel says what moved it
        assert moved.startswith("nothing"), moved
    else:
        assert e["moved_by"] and moved == e["moved_by"], (first, moved)
    assert f"decided by {e['decided_by']}" in page.inner_text("#explain-title")
    head = page.inner_text("#explain-ranking thead")
    assert all(term in head for term in [*e["ranking"][0]["terms"], "Total", "Tie rank"])
    total = ranking.first.locator("td").nth(-2).inner_text()
    assert total == str(e["ranking"][0]["total"])
    filters = page.inner_text("#explain-filters")
    assert filters.startswith(f"{e['filters']['eligible']} of {e['filters']['nodes']} nodes")
    removed = page.locator("#explain-removed tbody tr")
    assert removed.count() == len(e["filters"]["removed"])
    facts = page.inner_text("#explain-facts")
    runner = e["runner_up"]
    assert runner is None or f"{runner['name']} (total {runner['total']})" in facts
    assert f"Margin\n{'-' if e['margin'] is None else e['margin']}" in facts
    caveats = page.inner_text("#explain-caveats")
    assert "seed" in caveats and e["parts"]["twin"]["seed"] in caveats
    selected = page.locator("#decisions tbody tr.selected")
    assert selected.count() == 1 and selected.get_attribute("data-seq") == str(decision["seq"])


def test_a_clicked_decision_is_explained(fed_twin: tuple[str, str], page: Page) -> None:
    url, _ = fed_twin
    kept = _open(page, url)
    ran = [d for d in kept if d["scheduler"] == SCHEDULER]
    assert len(ran) >= 5, kept
    clicked = ran[len(ran) // 2]
    page.click(f"#decisions tbody tr[data-seq='{clicked['seq']}'] td:nth-child(2)")  # the row
    e = _explained(page, 1)
    _check_panel(page, clicked, e)
    assert set(e["ranking"][0]["terms"]) == {"bestfit*3", "labels"}
    assert page.locator("#explain-parts").inner_text() == ""  # a sum has no part of its own
    direct = httpx.get(f"{url}/api/v1/decisions/{clicked['seq']}/explain").json()
    assert direct["ranking"] == e["ranking"] and direct["moved_by"] == e["moved_by"]
    page.locator("#explain-section").screenshot(path=_artefact("ui-explain.png"))
    serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
    assert serious == [], [(v["id"], v["help"], len(v["nodes"])) for v in serious]


def test_an_ensembles_part_and_what_moved_its_choice(fed_twin: tuple[str, str], page: Page) -> None:
    url, _ = fed_twin
    kept = _open(page, url)
    decision = next(d for d in kept if d["scheduler"] == ENSEMBLE)
    page.click(f"#decisions button[data-seq='{decision['seq']}']")
    e = _explained(page, 1)
    _check_panel(page, decision, e)
    members = page.locator("#explain-parts table tbody tr")
    shown = {members.nth(k).locator("td").first.inner_text() for k in range(members.count())}
    assert shown == {m["member"] for m in e["parts"]["members"]} == {"fgd", "bestfit"}
    votes = page.locator("#explain-parts dt:text-is('votes') + dd").inner_text()
    assert all(f"{node}: " in votes for node in e["parts"]["votes"]), votes
    # bound on the run's (bestfit's) node, which FGD does not rank first: the vote moved it
    assert e["ranking"][0]["name"] != decision["node"]
    assert page.locator("#explain-facts dt:text-is('Moved by') + dd").inner_text() == e["moved_by"]
    assert e["moved_by"] == "the members' weighted vote"
    page.locator("#explain-section").screenshot(path=_artefact("ui-explain-ensemble.png"))


def test_keyboard_activation_and_the_focus_kept(fed_twin: tuple[str, str], page: Page) -> None:
    url, _ = fed_twin
    kept = _open(page, url)
    chosen, other = [d for d in kept if d["scheduler"] == SCHEDULER][:2]
    button = f"#decisions button[data-seq='{chosen['seq']}']"
    page.focus(button)
    page.keyboard.press("Enter")
    _check_panel(page, chosen, _explained(page, 1))
    frames = page.evaluate("window.twinUi.frames")
    node = page.evaluate("window.twinUiState().frame.nodes.id[0]")
    with TwinClient(url, TOKEN) as client:  # two changes: two deltas drawn (none when idle)
        for k, value in enumerate((0.25, 0.5)):
            sample = {"op": "metrics", "node": node, "values": {"cpu_util": value}}
            client.patch(2e6 + value, [sample])
            page.wait_for_function(f"window.twinUi.frames > {frames + k}", timeout=5000)
    assert page.evaluate("document.activeElement.dataset.seq") == str(chosen["seq"])
    page.focus(f"#decisions button[data-seq='{other['seq']}']")
    page.keyboard.press("Space")
    _check_panel(page, other, _explained(page, 2))


def test_what_the_twin_cannot_explain_shows_its_message(
    fed_twin: tuple[str, str], page: Page
) -> None:
    url, pod = fed_twin
    kept = _open(page, url)
    unnamed = next(d for d in kept if d["pod"] == pod and d["scheduler"] is None)
    answer = httpx.get(f"{url}/api/v1/decisions/{unnamed['seq']}/explain")
    assert answer.status_code == 404
    page.click(f"#decisions button[data-seq='{unnamed['seq']}']")
    page.wait_for_function("window.twinExplain.errors > 0", timeout=30_000)
    shown = page.inner_text("#explain-error")
    assert "HTTP 404" in shown and answer.json()["detail"] in shown, shown
    assert page.locator("#explain-body").is_hidden()
    ran = next(d for d in kept if d["scheduler"] == SCHEDULER)
    page.click(f"#decisions button[data-seq='{ran['seq']}']")  # the next one clears it
    _check_panel(page, ran, _explained(page, 1))
    assert page.locator("#explain-error").is_hidden()


def test_the_panel_at_390_px(fed_twin: tuple[str, str], browser: Any) -> None:
    url, _ = fed_twin
    context = browser.new_context(viewport={"width": 390, "height": 844})  # the page's own CSP
    page = context.new_page()
    try:
        kept = _open(page, url)
        decision = next(d for d in kept if d["scheduler"] == SCHEDULER)
        page.click(f"#decisions button[data-seq='{decision['seq']}']")
        _check_panel(page, decision, _explained(page, 1))
        box = page.locator("#explain-section").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        wide = page.evaluate(
            """() => [...document.querySelectorAll('#explain-section *')]
                .filter((el) => !el.closest('.scroll') && el.getBoundingClientRect().right > 390.5)
                .map((el) => el.tagName + '#' + el.id)"""
        )
        assert wide == [], wide  # only the scrolling tables may be wider than the screen
        page.locator("#explain-section").screenshot(path=_artefact("ui-explain-390.png"))
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        assert serious == [], [(v["id"], v["help"], len(v["nodes"])) for v in serious]
    finally:
        context.close()


def _artefact(name: str) -> str:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    return str(ARTEFACTS / name)


def test_a_past_sessions_decision(tmp_path: Path, page: Page) -> None:
    """Two runs, two sessions: a decision of the first, picked in the session chooser, is
    explained in its own session (``?session=1``), on the state of the first run."""
    scenario = traces.load("synthetic-continuum", "3")
    with twin_in_thread(tmp_path, TOKEN) as url:
        with TwinClient(url, TOKEN) as client:
            for scheduler in (SCHEDULER, "leastallocated+labels"):  # a run: a session
                run = FillupRun(scenario, scheduler, 0, target_pct=30,
                                observers=[TwinPublisher(client)])  # fmt: skip
                for _ in range(6):
                    run.step()
        past = httpx.get(f"{url}/api/v1/decisions", params={"session": 1}).json()
        assert past["session"] == 1 and past["decisions"], past
        asked = requests_made(page)
        page.goto(f"{url}/ui")
        page.locator("#session option[value='1']").wait_for(state="attached")
        page.select_option("#session", "1")
        decision = past["decisions"][1]
        page.click(f"#decisions tr[data-session='1'] button[data-seq='{decision['seq']}']")
        e = _explained(page, 1)
        assert e["scheduler"] == SCHEDULER and e["chosen_name"] == decision["node"]
        assert e["source"].endswith("(session 1)"), e["source"]
        assert f"/api/v1/decisions/{decision['seq']}/explain?session=1" in " ".join(asked)
        _check_panel(page, decision, e)


def requests_made(page: Page) -> list[str]:
    """The URLs the page requests from now on."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    return seen
