"""The applications page (``/ui/apps``) in Debian's Chromium, under its own content security
policy: the list, the revisions with their authors, the pods with their events (scheduled,
migrated, evicted, failed, as the twin's changes say) and the usage, from a live twin; and
the events recorded from batches other writers PATCH."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.twin.browser import ARTEFACTS, twin_in_thread
from tests.twin.conftest import tiny_document
from tests.twin.test_controller import wait_for
from twinsched.twin.apps.client import AppsClient

TOKEN = "apps-page-test-token-0123456789ab"
SMALL = {"cpu_milli": 500, "memory_mib": 512}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with twin_in_thread(tmp_path_factory.mktemp("apps-page"), TOKEN) as found:
        yield found


def pods_of(client: AppsClient) -> list[dict[str, Any]]:
    return list(client.read("default", "shop", "pods"))


def by_template(pods: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [p for p in pods if p["template"] == name]


def test_events_from_other_writers_and_the_page(url: str, browser: Any, tmp_path: Path) -> None:
    spec = {"name": "shop", "templates": [
        {"name": "db", "requests": SMALL},
        {"name": "api", "replicas": 2, "requests": SMALL, "depends_on": ["db"]},
        {"name": "web", "requests": SMALL, "depends_on": ["api"]},
    ]}  # fmt: skip
    with AppsClient(url, TOKEN) as client:
        client.put_state(tiny_document())
        client.register(spec, author="alice")
        client.action("default", "shop", "deploy", author="bob")
        assert [p["template"] for p in pods_of(client)] == ["db"]  # api waits for db
        for template in ("db", "api", "web"):  # a controller's binds, by hand
            wait_for(lambda t=template: by_template(pods_of(client), t) != [], 10)  # type: ignore[misc]
            pending = by_template(pods_of(client), template)
            client.patch(0.0, [{"op": "pod", "pod": p["pod"], "phase": "Running", "node": "n1",
                                "scheduler": "by-hand"} for p in pending])  # fmt: skip
        api = by_template(pods_of(client), "api")
        client.patch(0.0, [
            {"op": "pod", "pod": api[0]["pod"], "phase": "Running", "node": "n2"},
            {"op": "pod", "pod": api[1]["pod"], "phase": "Pending"},
        ])  # fmt: skip
        web = by_template(pods_of(client), "web")[0]["pod"]
        client.patch(0.0, [{"op": "pod", "pod": web, "phase": "Unschedulable"}])
        kinds = {p["pod"]: [e["kind"] for e in p["events"]] for p in pods_of(client)}
        assert kinds[api[0]["pod"]] == ["added", "scheduled", "migrated"]
        assert kinds[api[1]["pod"]][:3] == ["added", "scheduled", "evicted"]
        assert kinds[web][:3] == ["added", "scheduled", "failed"]
        usage = client.read("default", "shop", "usage")
        assert usage["total"]["pods"] >= 2 and usage["total"]["cpu_milli"] >= 1000

    page = browser.new_page()  # the page's own Content-Security-Policy applies
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(f"{url}/ui/apps")
    page.wait_for_selector("#pods-table tbody tr")
    page.wait_for_function("document.querySelector('#pods-table').textContent.includes('evicted')")
    apps = page.inner_text("#apps-table")
    revisions = page.inner_text("#revisions-table")
    pods = page.inner_text("#pods-table")
    assert "default/shop" in apps and "alice" in revisions and "bob" in revisions
    assert "register" in revisions and "deploy" in revisions
    for word in ("scheduled", "migrated on n2", "evicted", "failed", api[0]["pod"]):
        assert word in pods, word
    assert "running pods hold" in page.inner_text("#usage-total")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTEFACTS / "apps.png", full_page=True)
    page.close()
    assert problems == []
