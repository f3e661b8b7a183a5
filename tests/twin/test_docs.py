"""Swagger UI and ReDoc of the twin and of the scheduler service load nothing from the internet.

Every URL a docs page names (src, href, url(...) and string literals alike) must be a path on
the same server, and every asset it names must be served by the app itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app as create_service
from twinsched.serve.cluster import ServiceCluster
from twinsched.twin.api.docs import ASSETS_URL

EXTERNAL = re.compile(r"""(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}""", re.IGNORECASE)
LOCAL_ASSET = re.compile(r"""["'](/[^"'\s]+\.(?:js|css|png))["']""")
PAGES = ("/docs", "/redoc")


@pytest.fixture(params=["twin", "scheduler"])
def app_client(request: pytest.FixtureRequest, client: SyncASGI) -> Iterator[SyncASGI]:
    if request.param == "twin":
        yield client
        return
    service = SyncASGI(create_service(ServiceCluster("fgd")), owner=False)
    yield service
    service.close()


@pytest.mark.parametrize("page", PAGES)
def test_docs_pages_name_no_external_url(app_client: SyncASGI, page: str) -> None:
    answer = app_client.get(page)
    assert answer.status_code == 200
    html = answer.text
    assert EXTERNAL.findall(html) == [], f"{page} loads from the internet"
    assets = LOCAL_ASSET.findall(html)
    assert assets, f"{page} names no script"
    for asset in assets:
        assert asset.startswith(ASSETS_URL), asset
        served = app_client.get(asset)
        assert served.status_code == 200, asset
        assert len(served.content) > 1000, asset
    assert app_client.get("/openapi.json").status_code == 200
