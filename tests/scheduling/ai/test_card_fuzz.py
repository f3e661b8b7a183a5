"""Malformed model cards (Hypothesis, a bounded budget): clear errors, no other model hidden."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scheduling.ai.card_fuzzing import Tally, check, corrupt_cards, registry_with_victim

EXAMPLES = 36  # bench/fuzz_cards.py runs more


def test_malformed_cards_are_refused_by_file_or_read_well_typed(tmp_path: Path) -> None:
    _, _, card = registry_with_victim(tmp_path / "template")
    tally = Tally()
    root = Path(tempfile.mkdtemp(dir=tmp_path))

    @settings(
        max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        check(data.draw(corrupt_cards(card)), root / "models", tally)

    run()
    assert tally.wrongly == 0 and tally.tracebacks == 0, tally.failures
    assert tally.clear > EXAMPLES // 2  # most rewrites are bad cards, refused by name


def test_a_deeply_nested_card_is_a_clear_error(tmp_path: Path) -> None:
    tally = Tally()
    check(('{"spec": ' + "[" * 100_000 + "]" * 100_000 + "}").encode(), tmp_path, tally)
    assert tally.clear == 1, tally.failures


def test_unknown_fields_are_ignored(tmp_path: Path) -> None:
    _, _, card = registry_with_victim(tmp_path / "template")
    tally = Tally()
    check(json.dumps(card | {"comment": "by hand"}).encode(), tmp_path / "models", tally)
    assert tally.accepted == 1, tally.failures
