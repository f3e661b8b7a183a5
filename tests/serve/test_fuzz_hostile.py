"""Hostile requests to the scheduler service (and schemathesis' cases), a bounded budget:
no 5xx, no exception out of the app, no refused bind that changed a binding, invariants held."""

from __future__ import annotations

from tests.serve.fuzzing import fuzz

REQUESTS = 300


def test_hostile_requests_get_4xx_and_leave_the_state_sound() -> None:
    report = fuzz(REQUESTS)
    assert report.bad() == 0, report.examples[:5]
    total = sum(t.tried for t in report.tallies.values())
    assert total >= REQUESTS - 20
    assert report.statuses[400] > 30 and report.statuses[200] > 30, report.statuses
