"""The services of the access matrix, side by side on one token database: the twin (its
history database holds the tokens), the scheduler service, the run explorer and the agent
service, each knowing the twin's legacy token and the issued tokens."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twinsched.learning.agents.service import AgentService
from twinsched.model.document import TwinDocument
from twinsched.store.db import engine_for
from twinsched.store.history import TokenStore
from twinsched.twin.auth import Role, TokenVerifier, new_token

NAMESPACES = {"own": "team-a", "other": "team-b"}
ISSUED = [(role, space) for role in ("read", "write", "admin") for space in ("team-a", "*")]
PODS = {"team-a": ["team-a/p1", "team-a/p2"], "team-b": ["team-b/p1"], "default": ["p0"]}


def document() -> dict[str, Any]:
    """One node; pods in team-a, team-b and default, each namespace its own job."""
    jobs = [
        {"id": f"{space}/job" if space != "default" else "job",
         "pods": [{"id": pod, "requests": {"cpu_milli": 1000, "memory_mib": 1024},
                   "timestamps": {"arrival_s": 0}} for pod in pods]}
        for space, pods in PODS.items()
    ]  # fmt: skip
    node = {"id": "n1", "hardware": {"cpu_milli": 64000, "memory_mib": 262144}}
    return {"schema_version": "twinsched/twin-v1", "timestamp": 0.0,
            "nodepools": [{"id": "pool", "nodes": [node]}], "jobs": jobs}  # fmt: skip


@dataclass
class World:
    """The apps, the legacy token and the issued ones (``(role, namespace) -> token``)."""

    legacy: str
    tokens: dict[tuple[str, str], str]
    twin: Any
    serve: Any
    explorer: Any
    agent: AgentService
    secrets_seen: list[str] = field(default_factory=list)

    def close(self) -> None:
        from twinsched.twin.api.app import close_app

        self.agent.shutdown()
        close_app(self.twin)


def make_world(folder: Path, read_required: bool) -> World:
    """The four services on fresh SQLite stores in ``folder``."""
    from twinsched.explorer.app import create_app as explorer_app
    from twinsched.serve.app import create_app as serve_app
    from twinsched.serve.cluster import ServiceCluster
    from twinsched.twin.api.app import create_app as twin_app
    from twinsched.twin.core.settings import TwinSettings

    legacy = secrets.token_urlsafe(24)
    db = f"sqlite:///{folder / 'twin.db'}"
    settings = TwinSettings(token=legacy, db=db, read_token_required=read_required)
    twin = twin_app(settings)
    store = TokenStore(engine_for(db))
    tokens = {}
    for role, space in ISSUED:
        token, row = new_token(f"{role}@{space}", Role(role), [space], "test")
        store.insert(row)
        tokens[(role, space)] = token
    twin.state.service.replace(TwinDocument.model_validate(document()), source="test")

    shared = TokenVerifier([legacy], store)  # one cache for the three (the twin has its own)

    def verifier() -> TokenVerifier:
        return shared

    cluster = ServiceCluster("fgd", capacity=64)
    serve = serve_app(cluster, token=legacy, verifier=verifier(), read_required=read_required)
    explorer = explorer_app(f"sqlite:///{folder / 'store.db'}", folder / "models",
                            verifier(), read_required)  # fmt: skip
    agent = AgentService([], verifier=verifier(), read_required=read_required)
    agent.running = True  # /healthz: 200 (no agents to run)
    return World(legacy, tokens, twin, serve, explorer, agent)
