"""Every recorded run that is not an openb fill-up (the continuum, the episode) makes exactly
the decisions it made before (``test_fingerprints.py`` holds the openb cases; both check
:func:`~tests.regression.fingerprint.suite_cases`)."""

from __future__ import annotations

import pytest

from tests.regression.fingerprint import cases, run_case
from tests.regression.test_fingerprints import OPENB, RECORDED, SUITE

OTHERS = sorted(set(SUITE) - set(OPENB))


@pytest.mark.parametrize("label", OTHERS)
def test_same_decisions_as_recorded(label: str) -> None:
    assert run_case(cases()[label]) == RECORDED[label]
