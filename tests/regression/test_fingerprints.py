"""Every recorded run makes exactly the decisions it made before the redesign (issue 15).

The openb cases are here, the others in ``test_fingerprints_continuum.py``: two files of
about equal time, so that ``pytest -n 2 --dist loadfile`` runs them on both workers.
"""

from __future__ import annotations

import json

import pytest

from tests.regression.fingerprint import (
    FULL_ONLY_KINDS,
    STORE,
    case_kind,
    cases,
    run_case,
    suite_cases,
)

RECORDED = json.loads(STORE.read_text())
SUITE = suite_cases()
OPENB = sorted(label for label in SUITE if label.startswith("openb/"))


def test_every_case_was_recorded() -> None:
    assert sorted(cases()) == sorted(RECORDED)


def test_the_suite_checks_every_scheduler_and_mode() -> None:
    """Only other seeds, longer cuts and three ILP objectives are left to the full check."""
    every = {case_kind(label) for label in RECORDED}
    assert {case_kind(label) for label in SUITE} == every - FULL_ONLY_KINDS
    assert every > FULL_ONLY_KINDS  # each names a recorded kind
    assert len(SUITE) >= 38


@pytest.mark.parametrize("label", OPENB)
def test_same_decisions_as_recorded(label: str) -> None:
    assert run_case(cases()[label]) == RECORDED[label]


def test_a_changed_decision_changes_the_fingerprint() -> None:
    """The fingerprint is not blind: one moved bind gives another hash."""
    from tests.regression.fingerprint import fingerprint
    from twinsched.experiments.runner import RunSpec, execute
    from twinsched.model.events import Bind
    from twinsched.model.state import ClusterState

    fields = cases()["continuum/replay/fgd/0"]
    original = ClusterState.apply

    def moved(self: ClusterState, event: object) -> None:
        if isinstance(event, Bind) and event.pod == 7:
            alternatives = [n for n in range(self.nodes.n) if n != event.node]
            for node in alternatives:
                try:
                    return original(self, Bind(event.pod, node, event.gpus))
                except Exception:
                    continue
        return original(self, event)  # type: ignore[arg-type]

    ClusterState.apply = moved  # type: ignore[method-assign]
    try:
        got = fingerprint(lambda: execute(RunSpec(**fields)))
    finally:
        ClusterState.apply = original  # type: ignore[method-assign]
    assert got["decisions_sha"] != RECORDED["continuum/replay/fgd/0"]["decisions_sha"]
