"""Test-wide settings: runs recorded by the CLI go to a throwaway store, never the user's,
and parsed traces to a cache of the session (shared by its CLI subprocesses)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ray_cluster import RayCluster

SRC = Path(__file__).resolve().parents[1] / "src"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``make test``'s second phase (``-m timing``) opens only the test files that name the
    word ``timing``: collecting all of them costs about 17 s of CPU on the build machine, in
    a phase that runs alone. A file that marks a test ``timing`` names it; any other mark
    expression collects everything."""
    if config.getoption("markexpr", "") != "timing" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    text = collection_path.read_text(encoding="utf-8")
    return re.search(r"\btiming\b", text, re.IGNORECASE) is None


@pytest.fixture(autouse=True, scope="session")
def _private_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in ("TWINSCHED_DB", "TWINSCHED_CACHE")}
    os.environ["TWINSCHED_DB"] = f"sqlite:///{tmp_path_factory.mktemp('store') / 'runs.db'}"
    os.environ["TWINSCHED_CACHE"] = str(tmp_path_factory.mktemp("trace-cache"))
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session", autouse=True)
def _one_command_tree_per_app() -> Iterator[None]:
    """typer's ``CliRunner().invoke(app, ...)`` converts the whole app into click commands at
    every call (about 170 of them, 0.2 s of CPU for ``twinsched``); the tree depends only on
    the app's declarations, so each app's is built once per session and reused
    (``tests/cli_runner.py`` holds the cache)."""
    import typer.testing

    from tests.cli_runner import command_of

    made = typer.testing._get_command
    typer.testing._get_command = command_of  # type: ignore[assignment]
    yield
    typer.testing._get_command = made


@pytest.fixture(scope="session", autouse=True)
def _one_default_tls_context() -> Iterator[None]:
    """httpx clients made with the default TLS settings share one SSL context: making one
    loads the CA bundle, about 50 ms of CPU, and tests make clients per call (``httpx.get``) and per
    poll of live servers (a client given its own ``verify`` or ``cert`` still makes its own)."""
    from httpx._transports import default

    made = default.create_ssl_context
    shared = made()

    def create(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is True and cert is None and trust_env:
            return shared
        return made(verify=verify, cert=cert, trust_env=trust_env)

    default.create_ssl_context = create
    yield
    default.create_ssl_context = made


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """One Ray cluster of real ``ray start`` nodes for the session, started when a test first
    asks (its start takes seconds): a head node of 1 CPU, to which a test may join more
    nodes. Stopped by process id at the end, whatever happens."""
    pytest.importorskip("ray")
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    cluster = RayCluster({**os.environ, "PYTHONPATH": path})  # workers import this checkout
    try:
        yield cluster
    finally:
        cluster.stop()
