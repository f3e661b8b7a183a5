"""Test-wide settings: runs recorded by the CLI go to a throwaway store, never the user's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    before = os.environ.get("TWINSCHED_DB")
    os.environ["TWINSCHED_DB"] = f"sqlite:///{tmp_path_factory.mktemp('store') / 'runs.db'}"
    yield
    if before is None:
        os.environ.pop("TWINSCHED_DB", None)
    else:
        os.environ["TWINSCHED_DB"] = before
