"""The run explorer (``twinsched ui``): its JSON over a real SQLite store and model registry
(stores in conftest.py; the page in Chromium is test_explorer_page.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.twin.conftest import SyncASGI
from twinsched.explorer.app import create_app


@pytest.fixture
def api(store: str, models: Path) -> Iterator[SyncASGI]:
    client = SyncASGI(create_app(store, models), owner=False)
    yield client
    client.close()


def test_list_and_filter(api: SyncASGI) -> None:
    page = api.get("/api/runs").json()
    rows = page["rows"]
    assert page["total"] == 23 and [r["id"] for r in rows] == list(range(23, 0, -1))
    assert [(r["scheduler"], r["mode"]) for r in rows[-3:]] == [
        ("fgd", "replay"), ("bestfit", "fillup"), ("fgd", "fillup")
    ]  # fmt: skip
    assert rows[-3]["energy_kwh"] is not None and rows[-1]["alloc_pct"] > 0
    assert page["headers"]["energy_kwh"] == "Energy (kWh)"
    assert {f["value"]: f["count"] for f in page["facets"]["sweep"]} == {"tiny": 20}
    ids = lambda q: [r["id"] for r in api.get(f"/api/runs?{q}").json()["rows"]]  # noqa: E731
    assert ids("scheduler=fgd") == [3, 1]
    assert ids("mode=fillup&scheduler=bestfit") == [2]
    assert ids("q=BEST") == [2]
    assert len(ids("sweep=tiny")) == 20
    assert ids("q=nothing-like-it") == []
    assert api.get("/api/runs?mode=sideways").status_code == 422


def test_compare_and_bad_ids(api: SyncASGI) -> None:
    data = api.get("/api/compare?ids=1&ids=2&ids=3").json()
    assert [r["row"]["id"] for r in data["runs"]] == [1, 2, 3]
    fill = data["runs"][0]["curves"]["gpu_alloc_ratio_pct"]
    assert fill[0][0] == 1.0 and len(fill) == 130  # arrived 1..130 %
    assert {"pending", "power_w"} <= data["runs"][2]["curves"].keys()
    assert {row["scheduler"] for row in data["tables"]["fillup"]} == {"fgd", "bestfit"}
    assert [row["scheduler"] for row in data["tables"]["replay"]] == ["fgd"]
    assert (
        data["headers"]["alloc_100_mean"] == "GPU allocated at 100 % arrived, mean over seeds (%)"
    )
    thirteen = api.get("/api/compare?" + "&".join(f"ids={i}" for i in range(1, 14)))
    assert thirteen.status_code == 200 and len(thirteen.json()["runs"]) == 13
    too_many = api.get("/api/compare?" + "&".join(f"ids={i % 23 + 1}" for i in range(61)))
    assert too_many.status_code == 422
    missing = api.get("/api/compare?ids=1&ids=99")
    assert missing.status_code == 404 and "99" in missing.json()["detail"]
    assert api.get("/api/compare").status_code == 422
    assert api.get("/api/runs/0").status_code == 422
    assert api.get("/api/runs/2").json()["spec"]["scheduler"] == "bestfit"
    report = api.get("/runs/2/report")
    assert report.status_code == 200 and "Run 2: bestfit" in report.text
    assert api.get("/runs/99/report").status_code == 404


def test_models_and_their_cards(api: SyncASGI) -> None:
    data = api.get("/api/models").json()
    cards = {c["ref"]: c for c in data["cards"]}
    shipped = ["continuum-wait-carbon@1", "continuum-wait-carbon@2", "continuum-wait-energy@1",
               "continuum-wait-energy@2", "openb-gates@1", "openb-rerank@1",
               "openb-rerank-dagger@1"]  # fmt: skip
    assert set(cards) == {"tiny@1", *shipped}  # the user's and shipped
    assert [r for r, c in cards.items() if c["shipped"]] == shipped
    assert cards["tiny@1"]["metrics"] == {"val_alloc_pct": 88.5}
    assert len(data["bad"]) == 1 and "broken" in data["bad"][0] and "card.json" in data["bad"][0]


def test_sweeps_and_a_sweep_report(api: SyncASGI) -> None:
    listed = {w["name"]: w for w in api.get("/api/sweeps").json()}
    assert (listed["tiny"]["cells"], listed["tiny"]["stored"]) == (20, 20)
    times = " \N{MULTIPLICATION SIGN} "
    assert listed["tiny"]["grid"] == times.join(["1 trace", "1 scheduler", "10 seeds", "2 targets"])
    assert set(listed) == {"tiny"}
    report = api.get("/api/sweeps/tiny").json()
    # two fill-up targets: one row per target, each over its 10 seeds (not 20)
    assert [(r["trace"], r["scheduler"], r["seeds"]) for r in report["summary"]] == [
        ("synthetic-continuum/1 to 80.0 %", "random", 10),
        ("synthetic-continuum/1 to 100.0 %", "random", 10),
    ]
    assert {c["scheduler"] for c in report["curves"]} == {"random"}
    missing = api.get("/api/sweeps/nothing")
    assert missing.status_code == 404 and "tiny" in missing.json()["detail"]
    assert api.get("/api/sweeps/..%2Fsecrets").status_code == 404  # names only, no paths
