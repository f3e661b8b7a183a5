"""Applications on an in-process twin: bad input answered 4xx naming the field with nothing
stored; a deploy that cannot fit reported per pod, nothing half-applied; revisions kept in
the history on SQLite and PostgreSQL and read back by a restarted twin; the page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client, tiny_document
from twinsched.store.db import dispose
from twinsched.twin.api.app import create_app
from twinsched.twin.core.settings import TwinSettings

APPS = "/api/v1/apps"
SMALL = {"cpu_milli": 500, "memory_mib": 512}


def spec(**changes: Any) -> dict[str, Any]:
    """Three templates, the last two depending on the one before."""
    base: dict[str, Any] = {
        "name": "shop",
        "templates": [
            {"name": "db", "requests": SMALL},
            {"name": "api", "replicas": 2, "requests": SMALL, "depends_on": ["db"]},
            {"name": "web", "replicas": 2, "requests": SMALL, "depends_on": ["api"]},
        ],
    }
    return {**base, **changes}


def template(k: int, **changes: Any) -> dict[str, Any]:
    templates = [dict(t) for t in spec()["templates"]]
    templates[k].update(changes)
    return spec(templates=templates)


@pytest.fixture
def twin(settings: TwinSettings) -> Iterator[SyncASGI]:
    client = make_client(settings, tiny_document())
    yield client
    client.close()


BAD_SPECS = [
    ("negative replicas", template(1, replicas=-1), "templates[1].replicas",
     "greater than or equal to 0"),
    ("unknown tier", template(0, tier="moon"), "templates[0].tier", "'edge', 'fog'"),
    ("beyond every node", template(2, requests={"cpu_milli": 64000, "memory_mib": 1}),
     "templates[2].requests.cpu_milli", "largest: 8000"),
    ("beyond every node's GPUs", template(0, requests={**SMALL, "gpu_count": 3,
     "gpu_milli": 1000}), "templates[0].requests.gpu_count", "largest: 2"),
    ("no node of the tier", template(0, tier="hpc"), "templates[0].tier", "tier=hpc"),
    ("cyclic dependencies", template(0, depends_on=["web"]), "templates[0].depends_on",
     "cycle db -> web -> api -> db"),
    ("unknown dependency", template(0, depends_on=["cache"]), "templates[0].depends_on[0]",
     "unknown template 'cache'"),
    ("name too long", spec(name="s" * 64), "name", "at most 63"),
    ("name not a DNS label", spec(name="Shop_1"), "name", "pattern"),
    ("namespace empty", spec(namespace=""), "namespace", "at least 1"),
    ("template name too long", template(0, name="d" * 64), "templates[0].name", "at most 63"),
    ("no templates", spec(templates=[]), "templates", "at least 1"),
    ("duplicate template", template(1, name="db", depends_on=[]), "templates[1].name",
     "duplicate"),
    ("unknown field", spec(replica=3), "replica", "Extra inputs"),
    ("max_unavailable 0", spec(strategy={"max_unavailable": 0}), "strategy.max_unavailable",
     "greater than or equal to 1"),
]  # fmt: skip


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncASGI]:
    """One twin for the refusals (they store nothing)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('apps') / 'twin.db'}"
    client = make_client(TwinSettings(token=TOKEN, db=url), tiny_document())
    yield client
    client.close()
    dispose(url)


@pytest.mark.parametrize(("case", "body", "path", "words"), BAD_SPECS,
                         ids=[c[0] for c in BAD_SPECS])  # fmt: skip
def test_a_bad_spec_is_a_422_naming_the_field(
    shared: SyncASGI, case: str, body: dict[str, Any], path: str, words: str
) -> None:
    answer = shared.post(APPS, json=body, headers=AUTH)
    assert answer.status_code == 422, answer.text
    first = answer.json()["errors"][0]
    assert first["path"] == path and words in first["problem"], first
    assert shared.get(APPS).json() == []  # nothing stored


def test_bad_changes_are_4xx_naming_the_field_and_change_nothing(twin: SyncASGI) -> None:
    assert twin.post(APPS, json=spec(), headers=AUTH).status_code == 201
    base = f"{APPS}/default/shop"
    cases = [
        ("POST", f"{base}/scale", {"replicas": {"api": -1}}, 422, "replicas.api"),
        ("POST", f"{base}/scale", {"replicas": {"cache": 2}}, 422, "replicas.cache"),
        ("POST", f"{base}/scale", {"replicas": {}}, 422, "replicas"),
        ("POST", f"{base}/rollback", {"revision": 9}, 404, "revision"),
        ("POST", f"{base}/rollback", {"revision": 0}, 422, "revision"),
        ("POST", f"{base}/rollback", {}, 409, "revision"),  # no other spec yet
        ("PUT", base, spec(name="other"), 422, "name"),
        ("PUT", base, template(1, replicas=-2), 422, "templates[1].replicas"),
        ("POST", APPS, spec(), 409, "name"),  # registered already
        ("POST", f"{APPS}/default/nope/deploy", None, 404, "name"),
    ]
    for method, url, body, status, path in cases:
        answer = twin.request(method, url, json=body, headers=AUTH)
        assert answer.status_code == status, (url, body, answer.text)
        assert answer.json()["errors"][0]["path"] == path, answer.text
    bad_path = twin.post(f"{APPS}/Default/shop/deploy", headers=AUTH)
    assert bad_path.status_code == 422 and "namespace" in bad_path.text
    assert twin.post(f"{APPS}/default/shop/deploy").status_code == 401  # no token
    not_json = twin.post(APPS, content=b"{", headers=AUTH)
    assert not_json.status_code == 422 and not_json.json()["errors"][0]["path"] == "body"
    assert [r["action"] for r in twin.get(f"{base}/revisions").json()] == ["register"]


def test_a_deploy_that_cannot_fit_is_reported_per_pod_and_nothing_applied(
    twin: SyncASGI,
) -> None:
    """Each template fits a node, but not all pods together: 409 with every pod that does
    not fit and why; no revision, no pod in the twin, the twin's version unchanged."""
    big = {"cpu_milli": 6000, "memory_mib": 1024}
    body = template(1, replicas=4, requests=big)  # 4 x 6000m on three nodes of 8000m
    assert twin.post(APPS, json=body, headers=AUTH).status_code == 201
    version = twin.get("/api/v1/state").headers["etag"]
    answer = twin.post(f"{APPS}/default/shop/deploy", headers=AUTH)
    assert answer.status_code == 409, answer.text
    unplaced = answer.json()["unplaced"]
    assert [u["template"] for u in unplaced] == ["api"]  # three fit, the fourth does not
    assert (
        unplaced[0]["reason"] == "InsufficientCPU" and "3 InsufficientCPU" in unplaced[0]["detail"]
    )
    assert answer.json()["errors"][0]["path"] == "pods[0]"
    assert twin.get("/api/v1/state").headers["etag"] == version  # nothing half-applied
    assert not any(j["id"].startswith("app/") for j in twin.get("/api/v1/jobs").json())
    revisions = twin.get(f"{APPS}/default/shop/revisions").json()
    assert [r["action"] for r in revisions] == ["register"]
    assert twin.get(f"{APPS}/default/shop").json()["status"] == "registered"
    scaled = twin.post(f"{APPS}/default/shop/scale", json={"replicas": {"api": 3}}, headers=AUTH)
    assert scaled.status_code == 200
    assert twin.post(f"{APPS}/default/shop/deploy", headers=AUTH).status_code == 200


def test_a_twin_without_nodes_refuses_a_deploy_and_answers_every_route(
    settings: TwinSettings,
) -> None:
    twin = make_client(settings)
    try:
        assert twin.post(APPS, json=spec(), headers=AUTH).status_code == 201
        answer = twin.post(f"{APPS}/default/shop/deploy", headers=AUTH)
        assert answer.status_code == 409 and "the twin has no node" in answer.text
        unplaced = answer.json()["unplaced"]  # every pod of the deployed app, none fits
        assert [u["template"] for u in unplaced] == ["db", "api", "api", "web", "web"]
        assert unplaced[0]["pod"].startswith("default/shop/db-")  # the id it would have
        for route in ("", "/spec", "/revisions", "/pods", "/events", "/usage", "/manifests"):
            assert twin.get(f"{APPS}/default/shop{route}").status_code == 200, route
        not_object = twin.post(f"{APPS}/default/shop/scale", json=[1], headers=AUTH)
        assert not_object.status_code == 422 and not_object.json()["errors"][0]["path"] == "body"
        assert twin.post(f"{APPS}/default/shop/terminate", headers=AUTH).status_code == 200
    finally:
        twin.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request: pytest.FixtureRequest) -> Iterator[str]:
    url = request.getfixturevalue("history_url" if request.param == "sqlite" else "pg_url")
    yield url
    dispose(url)


def test_revisions_are_kept_in_the_history_and_read_back_after_a_restart(history: str) -> None:
    settings = TwinSettings(token=TOKEN, db=history)
    first = make_client(settings, tiny_document())
    try:
        assert (
            first.post(APPS, json=spec(), headers=AUTH, params={"author": "ana"}).status_code == 201
        )
        first.post(f"{APPS}/default/shop/deploy", headers=AUTH, params={"author": "ben"})
        first.put(f"{APPS}/default/shop", json=template(0, tier=None, priority=5), headers=AUTH)
        pods = first.get(f"{APPS}/default/shop/pods").json()
        before = first.get(f"{APPS}/default/shop/revisions").json()
    finally:
        first.close()
    again = SyncASGI(create_app(settings))
    try:
        after = again.get(f"{APPS}/default/shop/revisions").json()
        shown = again.get(f"{APPS}/default/shop").json()
        events = again.get(f"{APPS}/default/shop/events").json()
    finally:
        again.close()
    assert after == before and [r["author"] for r in after] == ["ana", "ben", "anonymous"]
    assert [r["action"] for r in after] == ["register", "deploy", "update"]
    assert shown["revision"] == 3 and shown["spec"]["templates"][0]["priority"] == 5
    assert shown["deployed"] and {p["pod"] for p in pods} <= {e["pod"] for e in events}


def test_the_page_is_served_with_the_dashboards_policy(twin: SyncASGI) -> None:
    page = twin.get("/ui/apps")
    assert (
        page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    )
    assert "/ui/static/apps.js" in page.text
    assert twin.get("/ui/static/apps.js").status_code == 200
