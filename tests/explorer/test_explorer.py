"""The run explorer (``twinsched ui``): its JSON over a real SQLite store and model registry,
and its page in Debian's Chromium (filter, compare, the plots name the runs asked for, a
model's card, axe, keyboard)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.twin.browser import ARTEFACTS, axe_violations, launch, serve_in_thread
from tests.twin.conftest import SyncASGI
from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import cell_key, load_spec
from twinsched.experiments.sweep_driver import register
from twinsched.explorer.app import create_app
from twinsched.model.run import RunSpec
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.store import record_run
from twinsched.store.db import dispose

SPECS = [
    RunSpec("synthetic-continuum", "fgd", 0, "3"),
    RunSpec("synthetic-continuum", "bestfit", 0, "3"),
    RunSpec("synthetic-continuum", "fgd", 1, "3", mode="replay", sample_every_s=600.0),
]


SWEEP = """name = "tiny"
traces = ["synthetic-continuum/1"]
schedulers = ["random"]
seeds = 2
target_pct = [100.0]
mode = "fillup"
"""


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the spec of a tiny sweep."""
    folder = tmp_path_factory.mktemp("sweeps")
    (folder / "tiny.toml").write_text(SWEEP)
    return folder


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, sweeps: Path) -> Iterator[str]:
    """Runs 1-3 (SPECS), then the tiny sweep's two cells (runs 4 and 5)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('explorer') / 'store.db'}"
    for spec in SPECS:
        record_run(spec, execute(spec), url)
    sweep = load_spec(sweeps / "tiny.toml")
    for cell in sweep.cells():
        record_run(cell, execute(cell), url, key=cell_key(cell))
    register(sweep, url)  # links the stored cells to the sweep, as `sweep run` does
    yield url
    dispose(url)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A registry with one model, and a second whose card is broken."""
    root = tmp_path_factory.mktemp("models")
    registry = ModelRegistry(root)
    registry.register("tiny", "twinsched.policy", {"weights.bin": b"0123"}, {"epochs": 1},
                      "ab" * 32, {"val_alloc_pct": 88.5})  # fmt: skip
    broken = registry.register("broken", "twinsched.policy", {"w.bin": b"1"}, {}, "cd" * 32)
    (broken.path / "card.json").write_text("{not json")
    return root


@pytest.fixture
def api(store: str, models: Path) -> Iterator[SyncASGI]:
    client = SyncASGI(create_app(store, models), owner=False)
    yield client
    client.close()


def test_list_and_filter(api: SyncASGI) -> None:
    rows = api.get("/api/runs").json()
    assert [r["id"] for r in rows] == [5, 4, 3, 2, 1]  # latest first
    assert [(r["scheduler"], r["mode"]) for r in rows[2:]] == [
        ("fgd", "replay"), ("bestfit", "fillup"), ("fgd", "fillup")
    ]  # fmt: skip
    rows = rows[2:]
    assert rows[0]["energy_kwh"] is not None and rows[2]["alloc_pct"] > 0
    assert [r["id"] for r in api.get("/api/runs?scheduler=FGD").json()] == [3, 1]
    assert [r["id"] for r in api.get("/api/runs?mode=fillup&scheduler=best").json()] == [2]
    assert api.get("/api/runs?trace=nothing-like-it").json() == []
    assert api.get("/api/runs?mode=sideways").status_code == 422


def test_compare_and_bad_ids(api: SyncASGI) -> None:
    data = api.get("/api/compare?ids=1&ids=2&ids=3").json()
    assert [r["row"]["id"] for r in data["runs"]] == [1, 2, 3]
    fill = data["runs"][0]["curves"]["gpu_alloc_ratio_pct"]
    assert fill[0][0] == 1.0 and len(fill) == 130  # arrived 1..130 %
    assert {"pending", "power_w"} <= data["runs"][2]["curves"].keys()
    assert {row["scheduler"] for row in data["tables"]["fillup"]} == {"fgd", "bestfit"}
    assert [row["scheduler"] for row in data["tables"]["replay"]] == ["fgd"]
    missing = api.get("/api/compare?ids=1&ids=99")
    assert missing.status_code == 404 and "99" in missing.json()["detail"]
    assert api.get("/api/compare").status_code == 422
    assert api.get("/api/runs/0").status_code == 422
    assert api.get("/api/runs/2").json()["spec"]["scheduler"] == "bestfit"


def test_models_and_their_cards(api: SyncASGI) -> None:
    data = api.get("/api/models").json()
    assert [c["ref"] for c in data["cards"]] == ["tiny@1"]
    assert data["cards"][0]["metrics"] == {"val_alloc_pct": 88.5}
    assert len(data["bad"]) == 1 and "broken" in data["bad"][0] and "card.json" in data["bad"][0]


def test_sweeps_and_a_sweep_report(api: SyncASGI) -> None:
    listed = {w["name"]: w for w in api.get("/api/sweeps").json()}
    assert (listed["tiny"]["cells"], listed["tiny"]["stored"]) == (2, 2)
    assert set(listed) == {"tiny"}
    report = api.get("/api/sweeps/tiny").json()
    assert [(r["trace"], r["scheduler"], r["seeds"]) for r in report["summary"]] == [
        ("synthetic-continuum/1", "random", 2)
    ]
    assert {c["scheduler"] for c in report["curves"]} == {"random"}
    missing = api.get("/api/sweeps/nothing")
    assert missing.status_code == 404 and "tiny" in missing.json()["detail"]
    assert api.get("/api/sweeps/..%2Fsecrets").status_code == 404  # names only, no paths


def test_the_page_compares_the_runs_asked_for(store: str, models: Path) -> None:
    with serve_in_thread(create_app(store, models)) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_context(viewport={"width": 1300, "height": 1000},
                                   bypass_csp=True).new_page()  # fmt: skip
        seen: list[tuple[str, str]] = []
        page.on("request", lambda r: seen.append((r.method, r.url)))
        page.goto(url)
        page.wait_for_function("window.explorerUi.loads > 0")
        assert page.locator("#runs tbody tr").count() == 5
        page.fill("input[name=scheduler]", "fgd")
        page.keyboard.press("Enter")  # submits the filter form
        page.wait_for_function("window.explorerUi.loads > 1")
        assert page.locator("#runs tbody tr").count() == 2
        page.fill("input[name=scheduler]", "")
        page.select_option("select[name=mode]", "fillup")
        page.click("#filters button")
        page.wait_for_function("window.explorerUi.loads > 2")
        page.check("#pick-1")
        page.check("#pick-2")
        page.focus("#compare")
        page.keyboard.press("Enter")  # the button works from the keyboard
        page.wait_for_function("window.explorerUi.compares > 0")
        legend = page.locator("#legend-alloc li")
        assert sorted(legend.evaluate_all("items => items.map(i => i.dataset.run)")) == ["1", "2"]
        assert page.locator("#chart-replay-pending").count() == 0  # no replay was asked for
        page.click("#sweeps button[data-sweep='tiny']")
        page.wait_for_function("window.explorerUi.sweeps > 0")
        assert page.locator("#legend-sweep-0 li").all_inner_texts() == ["random"]
        page.click("#models button[data-card='0']")
        assert '"name": "tiny"' in page.inner_text("#card")
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTEFACTS / "explorer-compare.png", full_page=True)
        browser.close()
    assert serious == [], [(v["id"], v["help"]) for v in serious]
    assert {method for method, _ in seen} == {"GET"}
    assert [u for _, u in seen if not u.startswith(url)] == []
