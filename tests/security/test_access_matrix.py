"""The access matrix (issue 39): every role x every route of every service x its own and
another namespace, over HTTP and over mutual TLS, reads open and reads behind a token.

The routes come from the apps' own route tables (``app.routes``, routers and mounts
included; the agent service's ``AGENT_RULES``), and each must be in the written table
below: a new route without an entry fails ``test_every_route_is_in_the_table``. Each cell's
expected answer comes from that table and the role semantics (``expected``), written here
independently of ``twin/auth/policy.py``. A cell that may go on gets the route's own answer:
never 401 or 403, and no 5xx unless the legacy admin token gets it too (a probe's 503).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from starlette.routing import Mount

from tests.security.certs import Certs, make_certs
from tests.security.servers import serving
from tests.security.world import NAMESPACES, PODS, World, make_world
from twinsched.learning.agents.service import AGENT_RULES
from twinsched.twin.auth.tls import TlsFiles

OK = 200
RANK = {"read": 1, "write": 2, "admin": 3}
# One route a line: METHOD PATH ACTION SCOPE [token]. ACTION: open | read | write | admin;
# SCOPE: any (no tenant data) | cluster (only '*' tokens) | namespace (the path's
# {namespace}); "token": a read that needs a token even when reads are open.
DOCS = """
GET /openapi.json read any
GET /docs read any
GET /docs/oauth2-redirect read any
GET /redoc read any
GET /docs-assets read any
"""
TABLES = {
    "twin": DOCS
    + """
GET /healthz open any
GET /readyz open any
GET /api/v1/healthz open any
GET /api/v1/readyz open any
GET /api/v1/state read cluster
GET /api/v1/nodepools read cluster
GET /api/v1/links read cluster
GET /api/v1/jobs read cluster
GET /api/v1/nodes read cluster
GET /api/v1/pods read cluster
GET /api/v1/history read cluster
GET /api/v1/sessions read cluster
GET /api/v1/decisions read cluster
GET /api/v1/decisions/{seq}/explain read cluster
GET /api/v1/broker read cluster
GET /api/v1/predict/power read cluster
GET /api/v1/anomalies read cluster
GET /api/v1/predict/utilisation read cluster
GET /api/v1/metrics read cluster
GET /api/v1/changes read cluster
GET /api/v1/whatif/{job} read cluster
GET /api/v1/namespaces read cluster
GET /metrics read cluster
GET /ui/events read cluster
GET /ui read any
GET /ui/static read any
PUT /api/v1/state write cluster
PATCH /api/v1/state write cluster
POST /api/v1/predict/retrain write cluster
PUT /api/v1/leases/controller write cluster
DELETE /api/v1/leases/controller write cluster
POST /api/v1/whatif read cluster
POST /api/v1/harmonize read any
POST /api/v1/admin/compact admin cluster
GET /api/v1/audit admin cluster
GET / read any
GET /ui/apps read any
GET /api/v1/summary read cluster
GET /api/v1/apps read cluster
POST /api/v1/apps write any
GET /api/v1/apps/{namespace}/{name} read namespace
GET /api/v1/apps/{namespace}/{name}/spec read namespace
GET /api/v1/apps/{namespace}/{name}/events read namespace
GET /api/v1/apps/{namespace}/{name}/manifests read namespace
GET /api/v1/apps/{namespace}/{name}/pods read namespace
GET /api/v1/apps/{namespace}/{name}/revisions read namespace
GET /api/v1/apps/{namespace}/{name}/usage read namespace
PUT /api/v1/apps/{namespace}/{name} write namespace
POST /api/v1/apps/{namespace}/{name}/deploy write namespace
POST /api/v1/apps/{namespace}/{name}/rollback write namespace
POST /api/v1/apps/{namespace}/{name}/scale write namespace
POST /api/v1/apps/{namespace}/{name}/terminate write namespace
GET /api/v1/namespaces/{namespace}/pods read namespace
POST /api/v1/namespaces/{namespace}/pods write namespace
GET /api/v1/workflows/{name} read cluster
POST /api/v1/workflows write cluster
""",
    "serve": DOCS
    + """
GET /healthz open any
GET /readyz open any
GET /metrics read cluster
POST /filter read cluster
POST /prioritize read cluster
GET /explain read cluster token
GET /explain/{pod:path} read cluster token
POST /bind write cluster
POST /nodes write cluster
POST /pods write cluster
DELETE /pods/{namespace}/{name} write namespace
""",
    "explorer": DOCS
    + """
GET / read any
GET /static read any
GET /api/runs read cluster
GET /api/runs/{run_id} read cluster
GET /api/compare read cluster
GET /runs/{run_id}/report read cluster
GET /api/models read cluster
GET /api/sweeps read cluster
GET /api/sweeps/{name} read cluster
GET /api/runs/{run_id}/explain/{pod} read cluster
GET /api/runs/{run_id}/decisions read cluster
""",
    "agent": """
GET /healthz open any
GET /metrics read cluster
""",
}


def _parse(table: str) -> dict[tuple[str, str], tuple[str, str, bool]]:
    rows = {}
    for line in filter(None, table.splitlines()):
        method, path, action, scope, *token = line.split()
        assert (method, path) not in rows, f"{method} {path} twice in the table"
        rows[(method, path)] = (action, scope, token == ["token"])
    return rows


SPEC = {service: _parse(table) for service, table in TABLES.items()}


@dataclass(frozen=True)
class Who:
    """A caller: its Authorization header, and the role and namespaces it really has."""

    label: str
    header: str | None
    role: str | None = None
    spaces: frozenset[str] = frozenset()


def callers(world: World) -> list[Who]:
    bad = "tws_000000000000_" + "A" * 43
    found = [Who("anonymous", None), Who("invalid", f"Bearer {bad}"),
             Who("not bearer", f"Basic {world.legacy}"),
             Who("legacy", f"Bearer {world.legacy}", "admin", frozenset("*"))]  # fmt: skip
    for (role, space), token in world.tokens.items():
        found.append(Who(f"{role}@{space}", f"Bearer {token}", role, frozenset({space})))
    return found


def expected(spec: tuple[str, str, bool], who: Who, space: str | None, reads_need: bool) -> int:
    """The answer the table and the role semantics give (OK: the route's own answer)."""
    action, scope, always = spec
    if action == "open":
        return OK
    if who.header is not None and who.role is None:
        return 401  # a presented token that is not valid, even where reads are open
    if action == "read" and not (reads_need or always):
        return OK
    if who.role is None:
        return 401
    if RANK[who.role] < RANK[action]:
        return 403
    everywhere = "*" in who.spaces
    if scope == "cluster" and not everywhere:
        return 403
    if scope == "namespace" and not (everywhere or space in who.spaces):
        return 403
    return OK


def routes_of(service: str, app: Any) -> set[tuple[str, str]]:
    """``(method, path)`` of every route the app serves (mounts: GET)."""
    if service == "agent":
        return {("GET", path) for path in AGENT_RULES}
    found = set()
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, Mount):
            found.add(("GET", context.path))
        for method in context.methods or ():
            if method != "HEAD":
                found.add((method, context.path))
    return found


def concrete(template: str, space: str | None, mount: bool) -> str:
    """A path of ``template`` (parameters filled in, a file under a mount)."""
    path = template.replace("{namespace}", space or "default")
    path = re.sub(r"\{[a-z_]+:path\}", "team-a/p1", path)
    path = re.sub(r"\{[a-z_]+\}", "1", path)
    return path + "/none.css" if mount else path


def call(client: httpx.Client, method: str, url: str, header: str | None) -> tuple[int, bytes]:
    """Status and the start of the body; streams (``/ui/events``) are not read to the end."""
    headers = {"Authorization": header} if header else {}
    with client.stream(method, url, headers=headers) as answer:
        body = b""
        if "text/event-stream" not in answer.headers.get("content-type", ""):
            body = answer.read()
        return answer.status_code, body + repr(answer.headers).encode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module", params=[False, True], ids=["reads-open", "reads-need-token"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    made = make_world(tmp_path_factory.mktemp("world"), read_required=request.param)
    made.read_required = request.param  # type: ignore[attr-defined]
    yield made
    made.close()


def test_every_route_is_in_the_table(world: World) -> None:
    """A route missing from the table (or an entry without a route) fails here."""
    apps = {"twin": world.twin, "serve": world.serve, "explorer": world.explorer, "agent": None}
    for service, app in apps.items():
        served = routes_of(service, app)
        assert served - set(SPEC[service]) == set(), f"{service}: routes missing from the table"
        assert set(SPEC[service]) - served == set(), f"{service}: table entries without a route"


@pytest.mark.parametrize("tls", [False, True], ids=["http", "mutual-tls"])
def test_access_matrix(
    world: World, certs: Certs, tls: bool, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("", "twinsched", "uvicorn", "uvicorn.error", "fastapi", "starlette"):
        caplog.set_level("DEBUG", logger=name)
    caplog.set_level("WARNING", logger="httpcore")  # its traces show headers of every call
    files = TlsFiles(certs.server_cert, certs.server_key, certs.ca) if tls else None
    verify: Any = True
    if tls:
        verify = ssl.create_default_context(cafile=certs.ca)
        verify.load_cert_chain(certs.client_cert, certs.client_key)
    who = callers(world)
    seen: list[bytes] = []
    cells = 0
    apps = {"twin": world.twin, "serve": world.serve, "explorer": world.explorer}
    for service, app in [*apps.items(), ("agent", None)]:
        with (
            _base(service, app, world, files) as base,
            httpx.Client(base_url=base, verify=verify, timeout=30) as client,
        ):
            for (method, template), spec in sorted(SPEC[service].items()):
                mount = service != "agent" and _is_mount(app, template)
                spaces = NAMESPACES.values() if "{namespace}" in template else [None]
                for space in spaces:
                    url = concrete(template, space, mount)
                    reference, _ = call(client, method, url, f"Bearer {world.legacy}")
                    assert reference not in (401, 403), (service, url, reference)
                    for caller in who:
                        status, body = call(client, method, url, caller.header)
                        seen.append(body)
                        want = expected(spec, caller, space, world.read_required)  # type: ignore[attr-defined]
                        cell = f"{service} {method} {url} as {caller.label}: got {status}"
                        if want == OK:  # the route's own answer (a lease may be taken now)
                            assert status not in (401, 403), cell
                            assert status < 500 or status == reference, cell
                        else:
                            assert status == want, cell
                        cells += 1
    assert cells > 500
    secrets = [world.legacy, *world.tokens.values()]
    secrets += [t.split("_", 2)[2] for t in world.tokens.values()]  # the secret may hold "_"
    text = b"\n".join(seen) + caplog.text.encode()
    for secret in secrets:
        assert secret.encode() not in text, "a token appears in an answer or a log line"


def _is_mount(app: Any, template: str) -> bool:
    return any(isinstance(c.original_route, Mount) and c.path == template
               for c in iter_route_contexts(app.routes))  # fmt: skip


class _AgentBase:
    """The agent service on its own threading server (TLS through its context)."""

    def __init__(self, world: World, files: TlsFiles | None) -> None:
        self.world, self.files = world, files

    def __enter__(self) -> str:
        self.world.agent.tls = self.files
        port = self.world.agent.serve("127.0.0.1", 0)
        return f"{'https' if self.files else 'http'}://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.world.agent.shutdown()


def _base(service: str, app: Any, world: World, files: TlsFiles | None) -> Any:
    return _AgentBase(world, files) if service == "agent" else serving(app, files)


def test_tenants_see_and_write_only_their_namespace(world: World) -> None:
    """Own namespace: its pods only; other namespace: 403 and nothing added there."""
    write_a = {"Authorization": f"Bearer {world.tokens[('write', 'team-a')]}"}
    admin = {"Authorization": f"Bearer {world.legacy}"}
    with serving(world.twin) as base, httpx.Client(base_url=base, timeout=30) as client:
        own = client.get("/api/v1/namespaces/team-a/pods", headers=write_a)
        assert own.status_code == 200
        assert sorted(p["id"] for p in own.json()) == PODS["team-a"]
        pod = {"id": "team-b/intruder", "requests": {"cpu_milli": 1, "memory_mib": 1},
               "timestamps": {"arrival_s": 0}}  # fmt: skip
        other = client.post("/api/v1/namespaces/team-b/pods", headers=write_a,
                            json={"job": "team-b/job", "pod": pod})  # fmt: skip
        assert other.status_code == 403
        smuggled = client.post("/api/v1/namespaces/team-a/pods", headers=write_a,
                               json={"job": "team-a/job", "pod": pod})  # fmt: skip
        assert smuggled.status_code == 422 and "pod.id" in smuggled.text
        mine = {**pod, "id": "team-a/p3"}
        added = client.post("/api/v1/namespaces/team-a/pods", headers=write_a,
                            json={"job": "team-a/job", "pod": mine})  # fmt: skip
        assert added.status_code == 200, added.text
        app = {"name": "shop", "templates": [{"name": "web", "requests": {"cpu_milli": 100,
               "memory_mib": 64}}]}  # fmt: skip
        theirs = client.post("/api/v1/apps", headers=write_a, json={**app, "namespace": "team-b"})
        assert theirs.status_code == 403, theirs.text
        ours = client.post("/api/v1/apps", headers=write_a, json={**app, "namespace": "team-a"})
        assert ours.status_code == 201, ours.text
        assert ours.json()["revision"]["author"] == "write@team-a"
        assert client.get("/api/v1/apps/team-b/shop", headers=admin).status_code == 404
        everything = client.get("/api/v1/pods", headers=admin).json()
        ids = {p["id"] for p in everything}
        assert "team-a/p3" in ids and "team-b/intruder" not in ids
        mine_rows, after = [], 0
        while page := client.get("/api/v1/audit", headers=admin,
                                 params={"after": after, "limit": 1000}).json():  # fmt: skip
            mine_rows += [a for a in page if a["who"] == "write@team-a"]
            after = page[-1]["id"]
        assert {(a["path"], a["status"]) for a in mine_rows} >= {
            ("/api/v1/namespaces/team-b/pods", 403),
            ("/api/v1/namespaces/team-a/pods", 200),
        }
