"""Hostile model weights (Hypothesis, a bounded budget): every one refused at load, clearly."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scheduling.ai.weights_fuzzing import Tally, check, hostile_models

EXAMPLES = 30  # bench/fuzz_cards.py runs more


def test_hostile_weights_are_refused_and_valid_ones_load(tmp_path: Path) -> None:
    tally = Tally()

    @settings(
        max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        check(data.draw(hostile_models()), tmp_path / "models", tally)

    run()
    assert tally.wrongly == 0 and tally.tracebacks == 0, tally.failures
    assert tally.clear > EXAMPLES // 2 and tally.accepted > 0
