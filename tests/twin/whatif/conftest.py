"""The what-if's fixtures: the continuum replay stopped at noon, as a twin document."""

from __future__ import annotations

import pytest

from twinsched.model.cluster import Scenario
from twinsched.model.document import TwinDocument
from twinsched.traces import registry as traces
from twinsched.twin.whatif.replayed import replay_document

NOON = 12 * 3600.0


@pytest.fixture(scope="session")
def continuum() -> Scenario:
    return traces.load("synthetic-continuum", "")


@pytest.fixture(scope="session")
def replayed_noon(continuum: Scenario) -> TwinDocument:
    return replay_document(continuum, "bestfit", 0, NOON)


@pytest.fixture
def noon(replayed_noon: TwinDocument) -> TwinDocument:
    """``synthetic-continuum`` replayed with bestfit up to 12:00 (a fresh copy per test)."""
    return replayed_noon.model_copy(deep=True)
