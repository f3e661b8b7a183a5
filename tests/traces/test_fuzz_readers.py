"""Hypothesis-made malformed input for every importer and payload reader (issue 16).

Each target gets a small budget here (``bench/fuzz_importers.py`` runs the same code longer):
every input must end in a clear error naming its file or field, or in a result whose values
all keep the accepted ranges; never another exception, never a value out of range.
"""

from __future__ import annotations

import pytest

from tests.traces.fuzz_targets import targets
from tests.traces.fuzzing import fuzz

EXAMPLES = 80
TARGETS = targets()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_malformed_input_gives_a_clear_error_or_a_valid_result(name: str) -> None:
    strategy, make = TARGETS[name]
    tally = fuzz(name, strategy, make, EXAMPLES)
    assert tally.tracebacks == 0, "\n\n".join(tally.failures)
    assert tally.wrongly == 0, "\n\n".join(tally.failures)
    assert tally.tried >= EXAMPLES // 2
