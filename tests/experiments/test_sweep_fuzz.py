"""Hostile sweep names and variants (Hypothesis, a bounded budget): refused by key or valid."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.experiments.sweep_fuzzing import (
    TRACES,
    Tally,
    check_name,
    check_report,
    check_trace,
    names,
    variants,
)

EXAMPLES = 45
SETTINGS = settings(
    max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
    suppress_health_check=list(HealthCheck),
)  # fmt: skip


def test_hostile_sweep_names_and_variants_are_refused_by_key(tmp_path: Path) -> None:
    tally = Tally()
    work = tmp_path / "work"
    work.mkdir()

    @SETTINGS
    @given(name=names, trace=st.sampled_from(TRACES), variant=variants)
    def run(name: str, trace: str, variant: str) -> None:
        check_name(name, tally)
        check_trace(f"{trace}/{variant}", tally)
        check_report(name, work, tally)

    run()
    assert tally.wrongly == 0 and tally.tracebacks == 0, tally.failures
    assert tally.clear > EXAMPLES and tally.accepted > 0
